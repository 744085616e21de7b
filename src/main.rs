//! The `crsim` command line: open the app, run a scene headless, check scenes, benchmark.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use bevy::prelude::*;
use clap::{Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};

use crsim::control::remote::Remote;
use crsim::run::bench::{BenchOptions, run_bench};
use crsim::run::headless::{headless_app, run_in_chunks, run_steps};
use crsim::run::report::build_report;
use crsim::scene::schema::{ControllerSpec, Dialect};
use crsim::scene::{SceneFile, SceneSource, default_scene, load_scene_file};
use crsim::sim::SimTime;

/// crsim: a cooperative multi-robot simulator.
///
/// With no command, opens the app on SCENE (or the built-in scene).
#[derive(Parser, Debug)]
#[command(version, args_conflicts_with_subcommands = true)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// Scene file to open in the app.
    scene: Option<PathBuf>,
    /// Save a screenshot of the app here after some frames, then exit.
    #[arg(long, value_name = "PNG")]
    screenshot: Option<PathBuf>,
    /// Frames to render before the screenshot.
    #[arg(long, default_value_t = 60, requires = "screenshot")]
    frames: u32,
    /// Select this robot when the scene loads (its inspector, network and radio view open).
    #[arg(long, value_name = "ROBOT")]
    select: Option<String>,
    /// Remote robots speak the VirtualRobot protocol of this year (2021, 2022 or 2023) instead
    /// of their scene's, for old clients.
    #[arg(long, value_name = "YEAR")]
    protocol: Option<Dialect>,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run a scene headless and print a summary with the trajectory hash.
    Run {
        scene: PathBuf,
        /// Number of steps to run.
        #[arg(long)]
        steps: u64,
        /// Override the scene's seed.
        #[arg(long)]
        seed: Option<u64>,
        /// Write the run metrics as JSON here.
        #[arg(long, value_name = "FILE.json")]
        out: Option<PathBuf>,
        /// Switch the radio off (the communication model's system link), to compare.
        #[arg(long)]
        no_radio: bool,
        /// Print this robot's behaviour network at the end, in the seed's table format.
        #[arg(long, value_name = "ROBOT")]
        dump_network: Option<String>,
        /// Step at real-time speed instead of as fast as possible (for remote clients).
        #[arg(long)]
        realtime: bool,
        /// Remote robots speak the VirtualRobot protocol of this year (2021, 2022 or 2023).
        #[arg(long, value_name = "YEAR")]
        protocol: Option<Dialect>,
    },
    /// Validate scene files and network structure files; prints `ok` or the errors for each.
    Check {
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Benchmark N robots (wanderers, or network collectors with --network); prints robot_steps_per_s.
    Bench {
        #[arg(long, default_value_t = 1000)]
        robots: usize,
        #[arg(long, default_value_t = 200)]
        steps: u64,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Every robot also broadcasts a message each step; prints deliveries_per_s.
        #[arg(long)]
        comms: bool,
        /// Behaviour-network collectors instead of wanderers, with pens, boxes and stations.
        #[arg(long)]
        network: bool,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        None => open_app(cli.scene, cli.screenshot.map(|p| (p, cli.frames)), cli.select, cli.protocol),
        Some(Command::Run { scene, steps, seed, out, no_radio, dump_network, realtime, protocol }) => {
            let dump_network = dump_network.as_deref();
            let options = RunOptions { seed, out: out.as_deref(), no_radio, dump_network, realtime, protocol };
            run(&scene, steps, options)
        }
        Some(Command::Check { files }) => check(&files),
        Some(Command::Bench { robots, steps, seed, comms, network }) => {
            bench(robots, steps, seed, BenchOptions { comms, network })
        }
    }
}

fn load(path: &Path) -> Result<SceneFile, ExitCode> {
    load_scene_file(path).map(|(s, _)| s).map_err(|e| {
        eprintln!("{e}");
        ExitCode::from(2)
    })
}

fn open_app(
    scene: Option<PathBuf>,
    screenshot: Option<(PathBuf, u32)>,
    select: Option<String>,
    protocol: Option<Dialect>,
) -> ExitCode {
    let (scene, source) = match scene {
        Some(path) => match load(&path) {
            Ok(s) => (s, SceneSource::File(path)),
            Err(code) => return code,
        },
        None => (default_scene(), SceneSource::BuiltIn),
    };
    let exit = App::new().add_plugins(crsim::AppPlugin { scene, source, screenshot, select, protocol }).run();
    if exit.is_success() { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}

fn progress_bar(len: u64) -> ProgressBar {
    // Hidden automatically when stderr is not a terminal.
    let bar = ProgressBar::new(len);
    if let Ok(style) = ProgressStyle::with_template("{bar:40} {pos}/{len} steps  {per_sec}  eta {eta}") {
        bar.set_style(style);
    }
    bar
}

/// `crsim run`'s options.
struct RunOptions<'a> {
    seed: Option<u64>,
    out: Option<&'a Path>,
    no_radio: bool,
    dump_network: Option<&'a str>,
    realtime: bool,
    protocol: Option<Dialect>,
}

fn run(path: &Path, steps: u64, options: RunOptions) -> ExitCode {
    let RunOptions { seed, out, no_radio, dump_network, realtime, protocol } = options;
    let mut scene = match load(path) {
        Ok(s) => s,
        Err(code) => return code,
    };
    if let Some(robot) = dump_network {
        let networked = |r: &&crsim::scene::schema::RobotSpec| {
            matches!(r.controller, crsim::scene::schema::ControllerSpec::Network { .. })
        };
        if !scene.robots.iter().filter(networked).any(|r| r.name == robot) {
            let names: Vec<&str> = scene.robots.iter().filter(networked).map(|r| r.name.as_str()).collect();
            eprintln!(
                "--dump-network: {} has no robot {robot:?} of controller kind Network (those it has: {})",
                path.display(),
                if names.is_empty() { "none".to_string() } else { names.join(", ") }
            );
            return ExitCode::from(2);
        }
    }
    if let Some(seed) = seed {
        scene.seed = seed;
    }
    if no_radio {
        scene.comms.link = false;
    }
    if let Some(dialect) = protocol {
        for r in &mut scene.robots {
            if let ControllerSpec::Remote { protocol, .. } = &mut r.controller {
                *protocol = dialect;
            }
        }
    }
    let mut app = headless_app(scene, SceneSource::File(path.to_path_buf()));
    let mut remotes = app.world_mut().query::<(&Name, &Remote)>();
    for (name, remote) in remotes.iter(app.world()) {
        match (&remote.error, remote.http, remote.ws) {
            (Some(e), _, _) => eprintln!("{e}"),
            (None, Some(http), Some(ws)) => println!("remote robot {name}: http://{http}/api/move  ws://{ws}"),
            _ => {}
        }
    }
    let bar = progress_bar(steps);
    let start = Instant::now();
    if realtime {
        // Keep simulated time level with the wall clock: run the steps that are due, then wait.
        let dt = app.world().resource::<SimTime>().dt_exact;
        let mut done = 0;
        while done < steps {
            let due = ((start.elapsed().as_secs_f64() / dt) as u64).min(steps);
            if due > done {
                run_steps(&mut app, due - done);
                done = due;
                bar.set_position(done);
            } else {
                // Updates without steps keep the servers' replies flowing.
                app.update();
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
        }
    } else {
        run_in_chunks(&mut app, steps, 100, |done| bar.set_position(done));
    }
    bar.finish_and_clear();
    let report = build_report(app.world_mut(), start.elapsed().as_secs_f64());
    println!("{}", report.summary());
    if let Some(robot) = dump_network
        && let Some(dump) = crsim::control::network::dump_network(app.world_mut(), robot)
    {
        println!("\n{dump}");
    }
    if let Some(out) = out {
        let json = match serde_json::to_string_pretty(&report) {
            Ok(j) => j,
            Err(e) => {
                eprintln!("cannot encode the metrics: {e}");
                return ExitCode::FAILURE;
            }
        };
        if let Err(e) = std::fs::write(out, json + "\n") {
            eprintln!("{}: cannot write: {e}", out.display());
            return ExitCode::FAILURE;
        }
        println!("metrics: {}", out.display());
    }
    ExitCode::SUCCESS
}

fn check(files: &[PathBuf]) -> ExitCode {
    let mut bad = 0;
    for f in files {
        let text = crsim::scene::load::read_text(f).unwrap_or_default();
        let result = if crsim::scene::network::is_structure_text(&text) {
            crsim::scene::network::parse_network(&text, &f.display().to_string()).map(|_| ())
        } else {
            load_scene_file(f).map(|_| ()).map_err(|e| e.to_string())
        };
        match result {
            Ok(()) => println!("{}: ok", f.display()),
            Err(e) => {
                bad += 1;
                println!("{e}");
            }
        }
    }
    if bad == 0 {
        ExitCode::SUCCESS
    } else {
        eprintln!("{bad} of {} files have errors", files.len());
        ExitCode::FAILURE
    }
}

fn bench(robots: usize, steps: u64, seed: u64, options: BenchOptions) -> ExitCode {
    if robots == 0 || steps == 0 {
        eprintln!("--robots and --steps must be at least 1");
        return ExitCode::from(2);
    }
    let bar = progress_bar(steps);
    let r = run_bench(robots, steps, seed, options, |done| bar.set_position(done));
    bar.finish_and_clear();
    println!("robots: {}", r.robots);
    println!("steps: {}", r.steps);
    println!("wall_time_s: {:.3}", r.wall_time_s);
    println!("robot_steps_per_s: {:.0}", r.robot_steps_per_s);
    if options.comms {
        println!("deliveries: {}", r.deliveries);
        println!("deliveries_per_s: {:.0}", r.deliveries_per_s);
    }
    ExitCode::SUCCESS
}
