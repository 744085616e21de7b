//! The `crsim` command line: open the app, run a scene headless, check scenes, benchmark.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use bevy::prelude::*;
use clap::{Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};

use crsim::record::replay::{Replay, ReplaySource};
use crsim::record::viewer::ViewerClient;
use crsim::record::writer::FileSink;
use crsim::record::{Recorder, Recording};
use crsim::run::bench::{BenchOptions, run_bench_with};
use crsim::run::signals;
use crsim::run::until::Until;
use crsim::run::verify::Verdict;
use crsim::scene::load::{DEFAULT_SCENE, DEFAULT_SCENE_NAME, parse_scene_with};
use crsim::scene::overrides::SetValue;
use crsim::scene::schema::Dialect;
use crsim::scene::{SceneFile, SceneOverrides, SceneSource, load_scene_file, load_scene_file_with};

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
    /// Open the app in edit mode (with --select, that item is selected in the editor).
    #[arg(long, conflicts_with = "bench")]
    edit: bool,
    /// Open the plots window at start.
    #[arg(long)]
    plots: bool,
    /// The view's theme at start: light or dark.
    #[arg(long, value_name = "THEME", value_parser = ["light", "dark"])]
    theme: Option<String>,
    /// Open the benchmark arena of N robots (as `crsim bench --robots N`) instead of a scene.
    #[arg(long, value_name = "N", conflicts_with = "scene", value_parser = clap::value_parser!(u32).range(1..))]
    bench: Option<u32>,
    /// With --bench: the robots are network collectors (as `crsim bench --network`).
    #[arg(long, requires = "bench")]
    bench_network: bool,
    /// With --bench: the kinematic model instead of rigid bodies (as `crsim bench --kinematic`).
    #[arg(long, requires = "bench")]
    bench_kinematic: bool,
    /// Time N frames after a warm-up with Bevy's frame-time diagnostics, print the statistics
    /// and exit.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    frame_stats: Option<u32>,
    #[command(flatten)]
    outside: OutsideArgs,
}

/// What the app and `crsim run` take about the scene from outside it: old protocol dialects,
/// program robots and their port, and changed values.
#[derive(clap::Args, Debug)]
struct OutsideArgs {
    /// Remote robots speak the VirtualRobot protocol of this year (2021, 2022 or 2023) instead
    /// of their scene's, for old clients.
    #[arg(long, value_name = "YEAR")]
    protocol: Option<Dialect>,
    /// Serve robot programs on this port instead of the scene's (0 picks a free one); `crsim run`
    /// prints where first.
    #[arg(long, value_name = "PORT")]
    program_port: Option<u16>,
    /// Drive these robots by programs outside crsim, whatever their controller in the scene:
    /// names separated by commas, or `all`.
    #[arg(long, value_name = "ROBOTS", value_delimiter = ',')]
    programs: Vec<String>,
    /// Change a scene value: a path as in `comms.probability`, `robots[alpha].battery.initial`
    /// or `robots[*].controller.Network.low_power`, and a RON value (`0.5`, `true`, `Random`,
    /// `(1.0, 2.0, 90.0)`). Repeatable; a run's metrics record them.
    #[arg(long = "set", value_name = "PATH=VALUE")]
    sets: Vec<SetValue>,
}

impl From<OutsideArgs> for Outside {
    fn from(a: OutsideArgs) -> Outside {
        Outside {
            protocol: a.protocol,
            program_port: a.program_port,
            overrides: SceneOverrides { programs: a.programs, sets: a.sets },
        }
    }
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
        #[command(flatten)]
        outside: OutsideArgs,
        /// End the run after the step that finishes its task: all pens boxed, or every explorer
        /// done. --steps is then the most it runs.
        #[arg(long, value_name = "CONDITION")]
        until: Option<Until>,
        /// Record the run to this MCAP file (replay it with `crsim replay`, check it with
        /// `crsim verify`, open it in Foxglove).
        #[arg(long, value_name = "FILE.mcap")]
        record: Option<PathBuf>,
        /// Stream the run to viewers on this TCP port (`crsim view ADDR`); 0 picks a free one.
        #[arg(long, value_name = "PORT")]
        serve_viewer: Option<u16>,
        /// Threads for the per-robot passes (default: one per core for scenes of more than 256
        /// robots, else one); results do not depend on it.
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
        threads: Option<u16>,
        /// Keep running when the last robot program has gone (by default a run whose programs
        /// all disconnected ends there, saying so, so nothing keeps it running unseen).
        #[arg(long)]
        keep_serving: bool,
        /// Serve ROS 2 (no ROS install needed): every robot's topics under /<robot>/, /tf and
        /// /clock; the program robots take `cmd_vel`. The scene's `ros2` section sets the rest.
        #[arg(long)]
        ros2: bool,
        /// Write a ROS 2 bag of the run to this MCAP file: every robot's topics as the bridge
        /// serves them (the scene's `ros2` section: robots, prefix, rates), CDR with ros2msg
        /// schemas, for `ros2 bag play`, Foxglove and rosbags. The bridge need not serve.
        #[arg(long, value_name = "BAG.mcap")]
        record_ros2: Option<PathBuf>,
        /// The DDS domain the ROS 2 bridge serves, over the scene's `ros2.domain_id` and ROS_DOMAIN_ID
        /// (0..=232).
        #[arg(long, value_name = "ID", value_parser = clap::value_parser!(u16).range(0..=232))]
        ros2_domain: Option<u16>,
    },
    /// Replay a recording in the app with a timeline; --frames renders it to PNG frames instead.
    Replay {
        recording: PathBuf,
        /// Write every shown step as DIR/frame-NNNNNN.png and exit (under Xvfb without a screen).
        #[arg(long, value_name = "DIR")]
        frames: Option<PathBuf>,
        /// With --frames: one frame every N steps.
        #[arg(long, default_value_t = 1, requires = "frames")]
        every: u64,
        /// Start at this step.
        #[arg(long)]
        step: Option<u64>,
    },
    /// Run a recording's scene and seed again and report "identical" or the first step and
    /// robot where the trajectory differs.
    Verify {
        recording: PathBuf,
        /// Run this scene file instead of the recorded one (with the recording's seed).
        #[arg(long, value_name = "SCENE")]
        scene: Option<PathBuf>,
    },
    /// Describe a recording: its run, steps, size per robot-step; --step reads the state at a
    /// step and says how long that took.
    Inspect {
        recording: PathBuf,
        #[arg(long)]
        step: Option<u64>,
    },
    /// Watch a run started with `crsim run --serve-viewer PORT`: the app attaches as a viewer.
    View {
        /// Where the run serves viewers, as HOST:PORT.
        addr: String,
    },
    /// Validate scene files and network structure files; prints `ok` or the errors for each.
    Check {
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Plan or run a parameter sweep: --plan DIR writes the plan for GNU parallel or SLURM;
    /// otherwise runs it here with --jobs worker processes, resuming what is done.
    Sweep {
        /// The sweep file (RON).
        sweep: PathBuf,
        /// The plan's folder: manifest.jsonl, commands.txt, slurm.sh, runs/.
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
        /// Only write the plan into this folder (for GNU parallel, SLURM or ssh hosts).
        #[arg(long, value_name = "DIR", conflicts_with_all = ["dir", "jobs"])]
        plan: Option<PathBuf>,
        /// Worker processes (default: the number of cores).
        #[arg(long, value_name = "N")]
        jobs: Option<usize>,
        /// The crsim the plan's commands run, as the machines that run them see it (default: the
        /// path this crsim was started by, made absolute; a bare name is looked up on their PATH).
        #[arg(long, value_name = "PATH")]
        bin: Option<PathBuf>,
    },
    /// Merge a sweep's results into results.csv and summary.csv (mean, sd, 95% CI per
    /// condition) and print the summary; --plot draws a PNG.
    Collect {
        /// The plan's folder.
        dir: PathBuf,
        /// Plot this metric (mean and 95% confidence band per condition).
        #[arg(long, value_name = "METRIC", requires = "by")]
        plot: Option<String>,
        /// The parameter along x; one line per combination of the others.
        #[arg(long, value_name = "PARAM", requires = "plot")]
        by: Option<String>,
        /// The PNG to write (default: DIR/plot-METRIC.png).
        #[arg(long, value_name = "PNG", requires = "plot")]
        out: Option<PathBuf>,
        /// Exit 0 even when some runs are missing, failed, interrupted or corrupt (by default
        /// collect writes what there is and exits 3, so a script or a job chain notices).
        #[arg(long)]
        partial: bool,
    },
    /// Play one robot of a scene as a bot outside crsim, for a bot manager to drive over UDP (a
    /// scene robot with `outside: Some("ADDR:PORT")`); prints its counters when stopped (Ctrl-C).
    Bot {
        scene: PathBuf,
        /// The robot of the scene to play.
        #[arg(long)]
        robot: String,
        /// The UDP port to take packets on.
        #[arg(long)]
        port: u16,
        #[arg(long, default_value = "127.0.0.1")]
        address: String,
        /// Write the counters as JSON here when stopped.
        #[arg(long, value_name = "FILE.json")]
        out: Option<PathBuf>,
    },
    /// Benchmark the in-process environment: E worlds of a pens room of R program robots (camera
    /// and 16-beam range sensor each), stepped together; prints env_steps_per_s and
    /// robot_steps_per_s.
    Envbench {
        /// Worlds stepped together.
        #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..=100_000))]
        worlds: u32,
        /// Program robots in each world.
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=10_000))]
        robots: u32,
        #[arg(long, default_value_t = 1000)]
        steps: u64,
        /// Threads the worlds are spread over (default: one per core).
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
        threads: Option<u16>,
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
        /// The kinematic model (discs separated geometrically) instead of rapier's rigid bodies.
        #[arg(long)]
        kinematic: bool,
        /// Every robot also has a range sensor of K beams (180°, 3 m, every step); prints
        /// range_beams_per_s.
        #[arg(long, value_name = "K", value_parser = clap::value_parser!(u32).range(1..=i64::from(crsim::scene::schema::MAX_RAYS)))]
        range: Option<u32>,
        /// Record the benchmark's run to this MCAP file (to measure what recording costs).
        #[arg(long, value_name = "FILE.mcap")]
        record: Option<PathBuf>,
        /// Threads for the per-robot passes (default: one per core above 256 robots, else one).
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
        threads: Option<u16>,
        /// Also serve every robot over ROS 2 on this DDS domain, odom, /tf and (with --range) scan
        /// every step, to measure what the bridge costs.
        #[arg(long, value_name = "DOMAIN", value_parser = clap::value_parser!(u16).range(0..=232))]
        ros2: Option<u16>,
    },
}

/// Headless commands print warnings (ports that cannot be served, refused connections) to
/// stderr; `RUST_LOG` chooses another level. The app logs through Bevy's own log plugin. The DDS
/// stack's own warnings (a peer's IPv6 locator this IPv4 participant cannot reach, on every
/// send) stay out unless `RUST_LOG` asks for them; the bridge counts and reports what matters.
fn log_to_stderr() {
    use bevy::log::tracing_subscriber::{EnvFilter, fmt};
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new("warn,rustdds=error,ros2_client=error,mio_extras=error"));
    let _ = fmt().with_env_filter(filter).with_writer(std::io::stderr).without_time().try_init();
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if cli.command.is_some() {
        log_to_stderr();
    }
    match cli.command {
        None => {
            let outside = cli.outside.into();
            let what = match cli.bench {
                Some(n) => Opened::Bench {
                    robots: n as usize,
                    options: BenchOptions {
                        comms: false,
                        network: cli.bench_network,
                        kinematic: cli.bench_kinematic,
                        range: None,
                    },
                },
                None => Opened::Scene(cli.scene),
            };
            let view = View {
                screenshot: cli.screenshot.map(|p| (p, cli.frames)),
                frame_stats: cli.frame_stats,
                start: crsim::window::StartView {
                    edit: cli.edit,
                    plots: cli.plots,
                    dark: cli.theme.as_deref() == Some("dark"),
                },
            };
            open_app(what, view, cli.select, outside)
        }
        Some(Command::Run {
            scene,
            steps,
            seed,
            out,
            no_radio,
            dump_network,
            realtime,
            outside,
            until,
            record,
            serve_viewer,
            threads,
            keep_serving,
            ros2,
            record_ros2,
            ros2_domain,
        }) => {
            let Outside { protocol, program_port, overrides } = outside.into();
            let request = crsim::ros2::Ros2Request { enabled: ros2, domain_id: ros2_domain, settings: None };
            let ros = move |app: &mut bevy::prelude::App| {
                app.insert_resource(request.clone());
                crsim::ros2::plugin(app);
            };
            crsim::run::runner::run(crsim::run::runner::RunRequest {
                scene: &scene,
                steps,
                seed,
                out: out.as_deref(),
                no_radio,
                dump_network: dump_network.as_deref(),
                realtime,
                until,
                protocol,
                program_port,
                overrides,
                record: record.as_deref(),
                record_ros2: record_ros2.as_deref(),
                serve_viewer,
                threads,
                keep_serving,
                setup: Some(&ros),
            })
        }
        Some(Command::Replay { recording, frames, every, step }) => replay_command(&recording, frames, every, step),
        Some(Command::Verify { recording, scene }) => verify_command(&recording, scene.as_deref()),
        Some(Command::View { addr }) => view_command(&addr),
        Some(Command::Inspect { recording, step }) => inspect_command(&recording, step),
        Some(Command::Check { files }) => check(&files),
        Some(Command::Sweep { sweep, dir, plan, jobs, bin }) => sweep_command(&sweep, dir, plan, jobs, bin),
        Some(Command::Collect { dir, plot, by, out, partial }) => collect_command(&dir, plot.zip(by), out, partial),
        Some(Command::Bot { scene, robot, port, address, out }) => {
            bot_command(&scene, &robot, &address, port, out.as_deref())
        }
        Some(Command::Envbench { worlds, robots, steps, threads }) => {
            let threads = threads.map_or_else(crsim::sim::cores, usize::from);
            envbench(worlds as usize, robots as usize, steps, threads)
        }
        Some(Command::Bench { robots, steps, seed, comms, network, kinematic, range, record, threads, ros2 }) => {
            crsim::sim::set_threads(threads.map_or_else(|| crsim::sim::default_threads(robots), usize::from));
            bench(robots, steps, seed, BenchOptions { comms, network, kinematic, range }, record.as_deref(), ros2)
        }
    }
}

fn envbench(worlds: usize, robots: usize, steps: u64, threads: usize) -> ExitCode {
    use crsim::vecenv::bench::{bench_room, run_env_bench};
    if (worlds * robots) as u64 > 1_000_000 {
        eprintln!("envbench: {worlds} worlds of {robots} robots is more than 1,000,000 robots");
        return ExitCode::from(2);
    }
    match run_env_bench(bench_room(robots), worlds, steps, threads) {
        Ok(r) => {
            crsim::say!("worlds: {}", r.worlds);
            crsim::say!("robots: {}", r.robots);
            crsim::say!("steps: {}", r.steps);
            crsim::say!("threads: {threads}");
            crsim::say!("build_s: {:.3}", r.build_s);
            crsim::say!("wall_time_s: {:.3}", r.wall_s);
            crsim::say!("env_steps_per_s: {:.0}", r.env_steps_per_s());
            crsim::say!("robot_steps_per_s: {:.0}", r.robot_steps_per_s());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("envbench: {e}");
            ExitCode::from(2)
        }
    }
}

fn bot_command(scene: &Path, robot: &str, address: &str, port: u16, out: Option<&Path>) -> ExitCode {
    let mut bot = match crsim::run::bot::BotEmulator::from_file(scene, robot, address, port) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    if let Err(e) = signals::install() {
        eprintln!("{e}");
    }
    crsim::say!("bot {} (id {}) of {}: listening on UDP {}", bot.name, bot.id, scene.display(), bot.local);
    if let Some(e) = &bot.group_error {
        crsim::say!("{e}; update-all packets are taken on the port only");
    }
    bot.serve(signals::requested);
    let s = &bot.stats;
    crsim::say!(
        "bot {}: received {} packets ({} bytes), {} rounds, {} for other bots, {} malformed, {} refused; \
         sent {} statuses, {} errors; {} watchdog stops",
        bot.name,
        s.received.packets,
        s.received.bytes,
        s.rounds,
        s.not_mine,
        s.malformed,
        s.refused,
        s.statuses.packets,
        s.errors.packets,
        s.watchdog_stops
    );
    if let Some(out) = out {
        let json = serde_json::to_vec_pretty(s).unwrap_or_default();
        if let Err(e) = crsim::run::files::write_atomic(out, &json) {
            eprintln!("{e}");
            return ExitCode::from(1);
        }
    }
    ExitCode::SUCCESS
}

fn load(path: &Path, overrides: &SceneOverrides) -> Result<SceneFile, ExitCode> {
    load_scene_file_with(path, overrides).map(|(s, _)| s).map_err(|e| {
        eprintln!("{e}");
        ExitCode::from(2)
    })
}

/// What the app opens.
enum Opened {
    /// A scene file, or the built-in scene.
    Scene(Option<PathBuf>),
    /// The benchmark arena.
    Bench { robots: usize, options: BenchOptions },
}

/// What the app does besides showing the scene.
struct View {
    screenshot: Option<(PathBuf, u32)>,
    frame_stats: Option<u32>,
    /// Edit mode, the plots window and the theme at start.
    start: crsim::window::StartView,
}

fn open_app(what: Opened, view: View, select: Option<String>, outside: Outside) -> ExitCode {
    let View { screenshot, frame_stats, start } = view;
    let scene = match what {
        Opened::Scene(scene) => scene,
        Opened::Bench { robots, options } => {
            if robots > MAX_BENCH_ROBOTS {
                eprintln!("--bench {robots}: at most {MAX_BENCH_ROBOTS} robots");
                return ExitCode::from(2);
            }
            let scene = crsim::run::bench::bench_arena(robots, 1, options);
            crsim::sim::set_threads(crsim::sim::default_threads(robots));
            let window = AppWindow { scene, source: SceneSource::Generated, screenshot, frame_stats, select, start };
            return open_window(window, outside, |_| {});
        }
    };
    let (scene, source) = match scene {
        Some(path) => match load(&path, &outside.overrides) {
            Ok(s) => (s, SceneSource::File(path)),
            Err(code) => return code,
        },
        None => match parse_scene_with(DEFAULT_SCENE, DEFAULT_SCENE_NAME, &outside.overrides) {
            Ok(s) => (s, SceneSource::BuiltIn),
            Err(e) => {
                eprintln!("{e}");
                return ExitCode::from(2);
            }
        },
    };
    // The pool is made once: a scene opened later with many more robots keeps this size.
    crsim::sim::set_threads(crsim::sim::default_threads(scene.robots.len()));
    open_window(AppWindow { scene, source, screenshot, frame_stats, select, start }, outside, |_| {})
}

use crsim::window::{AppWindow, Outside, open_window};

fn open_recording(path: &Path) -> Result<Recording, ExitCode> {
    Recording::open(path).map_err(|e| {
        eprintln!("{e}");
        ExitCode::from(2)
    })
}

fn replay_command(path: &Path, frames: Option<PathBuf>, every: u64, step: Option<u64>) -> ExitCode {
    let recording = match open_recording(path) {
        Ok(r) => r,
        Err(code) => return code,
    };
    if let Some(note) = recording.describe_end() {
        eprintln!("{note}");
    }
    let scene = match crsim::record::recorded_scene(&recording.meta) {
        Ok(s) => crsim::record::without_outside_drivers(s),
        Err(e) => {
            eprintln!("{}: {e}", path.display());
            return ExitCode::from(2);
        }
    };
    if every == 0 {
        eprintln!("--every must be at least 1");
        return ExitCode::from(2);
    }
    if let Some(dir) = &frames
        && let Err(e) = std::fs::create_dir_all(dir)
    {
        eprintln!("--frames: cannot create {}: {e}", dir.display());
        return ExitCode::from(2);
    }
    let source = SceneSource::Recorded { scene: recording.meta.scene_path.clone(), from: path.display().to_string() };
    let mut replay = Replay::file(recording);
    if let (Some(s), ReplaySource::File(t)) = (step, &mut replay.source) {
        t.seek(s as i64);
    }
    let window =
        AppWindow { scene, source, screenshot: None, frame_stats: None, select: None, start: Default::default() };
    open_window(window, Outside::none(), move |app| {
        app.insert_resource(replay);
        if let Some(dir) = frames {
            crsim::window::export_frames(app, dir, every);
        }
    })
}

fn view_command(addr: &str) -> ExitCode {
    let client = match ViewerClient::connect(addr) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let scene = match crsim::record::recorded_scene(&client.meta) {
        Ok(s) => crsim::record::without_outside_drivers(s),
        Err(e) => {
            eprintln!("{addr}: {e}");
            return ExitCode::from(2);
        }
    };
    let source = SceneSource::Recorded { scene: client.meta.scene_path.clone(), from: addr.to_string() };
    let window =
        AppWindow { scene, source, screenshot: None, frame_stats: None, select: None, start: Default::default() };
    open_window(window, Outside::none(), move |app| {
        app.insert_resource(Replay::live(client));
    })
}

fn inspect_command(path: &Path, step: Option<u64>) -> ExitCode {
    let opened = Instant::now();
    let mut r = match open_recording(path) {
        Ok(r) => r,
        Err(code) => return code,
    };
    let open_ms = opened.elapsed().as_secs_f64() * 1e3;
    let (first, last) = r.steps();
    let m = r.meta.clone();
    let size = std::fs::metadata(path).map_or(0, |m| m.len());
    let robot_steps = (last - first + 1) * m.robots.len().max(1) as u64;
    crsim::say!("recording: {}", path.display());
    crsim::say!("crsim: {} (format {})", m.crsim_version, m.format_version);
    crsim::say!("scene: {} (seed {}, dt {} s)", m.scene_path, m.seed, m.dt);
    crsim::say!("robots: {}   pens: {}", m.robots.len(), m.pens.len());
    crsim::say!("steps: {first}..={last}");
    match (&r.end, r.describe_end()) {
        (_, Some(note)) => crsim::say!("end: {note}"),
        (Some(e), None) => {
            crsim::say!("end: {} steps, hash {}{}", e.steps, e.hash, if e.interrupted { ", interrupted" } else { "" })
        }
        (None, None) => crsim::say!("end: not recorded"),
    }
    crsim::say!("size: {size} bytes, {:.2} bytes per robot-step", size as f64 / robot_steps as f64);
    crsim::say!("opened in {open_ms:.1} ms");
    if let Some(s) = step {
        let t = Instant::now();
        match r.frame(s) {
            Ok(f) => {
                crsim::say!(
                    "step {}: read in {:.1} ms, hash {}",
                    f.step.step,
                    t.elapsed().as_secs_f64() * 1e3,
                    f.step.hash
                );
                for (i, name) in m.robots.iter().enumerate().take(10) {
                    let (x, y) = (f.robots.x.get(i).copied().unwrap_or(0), f.robots.y.get(i).copied().unwrap_or(0));
                    crsim::say!("  {name}: ({:.3}, {:.3})", x as f64 / 1e3, y as f64 / 1e3);
                }
                if m.robots.len() > 10 {
                    crsim::say!("  ... and {} more robots", m.robots.len() - 10);
                }
                for e in &f.events {
                    crsim::say!("  event: {e}");
                }
            }
            Err(e) => {
                eprintln!("{e}");
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}

fn verify_command(path: &Path, scene: Option<&Path>) -> ExitCode {
    if let Err(e) = signals::install() {
        eprintln!("{e}");
    }
    let mut recording = match open_recording(path) {
        Ok(r) => r,
        Err(code) => return code,
    };
    if let Some(note) = recording.describe_end() {
        eprintln!("{note}");
    }
    let scene = match scene {
        None => None,
        Some(p) => match load(p, &SceneOverrides::default()) {
            Ok(mut s) => {
                s.seed = recording.meta.seed;
                Some(s)
            }
            Err(code) => return code,
        },
    };
    let (_, last) = recording.steps();
    let bar = crsim::run::runner::progress_bar(last + 1);
    let verdict = crsim::run::verify::verify(&mut recording, scene, |done, _| bar.set_position(done));
    bar.finish_and_clear();
    match verdict {
        Ok(v) => {
            crsim::say!("{}", v.describe());
            if matches!(v, Verdict::Identical { .. }) { ExitCode::SUCCESS } else { ExitCode::FAILURE }
        }
        Err(e) => {
            eprintln!("{}: {e}", path.display());
            ExitCode::from(2)
        }
    }
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
            Ok(()) => crsim::say!("{}: ok", f.display()),
            Err(e) => {
                bad += 1;
                crsim::say!("{e}");
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

fn sweep_command(
    file: &Path,
    dir: Option<PathBuf>,
    plan: Option<PathBuf>,
    jobs: Option<usize>,
    bin: Option<PathBuf>,
) -> ExitCode {
    use crsim::experiment::{plan::write_plan, runner, sweep::load_sweep};
    if let Err(e) = signals::install() {
        eprintln!("{e}");
    }
    let sweep = match load_sweep(file) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let crsim = runner::this_binary();
    let only_plan = plan.is_some();
    let dir = plan.or(dir).unwrap_or_else(|| {
        file.with_extension("").with_file_name(format!(
            "{}-results",
            file.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "sweep".into())
        ))
    });
    let started_as = bin.or_else(|| std::env::args_os().next().map(PathBuf::from));
    let planned = crsim::experiment::plan::plan_binary(started_as.as_deref(), &crsim);
    if let Err(e) = write_plan(&sweep, &dir, &planned) {
        eprintln!("{e}");
        return ExitCode::FAILURE;
    }
    let d = dir.display();
    if only_plan {
        crsim::say!("planned {} runs in {d}", sweep.runs.len());
        crsim::say!("  GNU parallel: parallel --joblog {d}/joblog --resume < {d}/commands.txt");
        crsim::say!("  SLURM:        sbatch {d}/slurm.sh");
        crsim::say!("  then:         crsim collect {d}");
        return ExitCode::SUCCESS;
    }
    let jobs = jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, usize::from)).max(1);
    let bar = ProgressBar::new(sweep.runs.len() as u64);
    if let Ok(style) = ProgressStyle::with_template("{bar:40} {pos}/{len} runs  {elapsed} elapsed, {eta} left  {msg}") {
        bar.set_style(style);
    }
    let already =
        sweep.runs.iter().filter(|r| runner::is_complete(&crsim::experiment::plan::result_path(&dir, &r.id))).count();
    bar.set_position(already as u64);
    bar.reset_eta();
    let mut failed = 0;
    let summary = runner::run_sweep(&sweep, &dir, &crsim, jobs, |run, outcome| match outcome {
        runner::Outcome::Done => bar.inc(1),
        runner::Outcome::Failed(e) => {
            failed += 1;
            bar.inc(1);
            bar.set_message(format!("{failed} failed"));
            bar.println(format!("{} failed: {}", run.id, e.lines().next().unwrap_or_default()));
        }
        runner::Outcome::Stopped => {}
    });
    bar.finish_and_clear();
    crsim::say!(
        "{} runs: {} done now, {} done before, {} failed{}",
        summary.total,
        summary.done,
        summary.skipped,
        summary.failed.len(),
        if signals::requested() {
            format!(", stopped with {} not run", summary.total - summary.done - summary.skipped - summary.failed.len())
        } else {
            String::new()
        }
    );
    for (id, e) in &summary.failed {
        crsim::say!("  {id}: {}", e.lines().next().unwrap_or_default());
    }
    crsim::say!("results in {d}/runs; collect them with: crsim collect {d}");
    if signals::requested() {
        crsim::say!("resume with the same command: finished runs are skipped");
        ExitCode::from(crsim::run::runner::INTERRUPTED)
    } else if summary.failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// Exit code of `crsim collect` when some runs are not done (without `--partial`).
const RUNS_NOT_OK: u8 = 3;

/// `crsim collect`: the files (and the plot) are written first, then printed, so a reader that
/// goes away early (`| head -1`) loses nothing.
fn collect_command(dir: &Path, plot: Option<(String, String)>, out: Option<PathBuf>, partial: bool) -> ExitCode {
    use crsim::experiment::{collect::collect, plot};
    let collected = match collect(dir) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    if let Err(e) = collected.write(dir) {
        eprintln!("{e}");
        return ExitCode::FAILURE;
    }
    let mut plotted = None;
    if let Some((metric, by)) = plot {
        let data = match plot::plot_data(&collected, &metric, &by) {
            Ok(d) => d,
            Err(e) => {
                eprintln!("{e}");
                return ExitCode::from(2);
            }
        };
        let out = out.unwrap_or_else(|| dir.join(format!("plot-{}.png", metric.replace(['.', '[', ']', '*'], "_"))));
        let scene =
            Path::new(&collected.info.scene).file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        let title = format!("{scene}: {metric} by {by}");
        if let Err(e) = plot::write_plot(&data, &metric, &by, &title, &out) {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
        plotted = Some(out);
    }
    crsim::say!("{}", collected.status_report());
    crsim::say!();
    crsim::run::output::print_str(&collected.table());
    crsim::say!("\nwrote {0}/results.csv and {0}/summary.csv", dir.display());
    if let Some(out) = plotted {
        crsim::say!("plot: {}", out.display());
    }
    let not_ok = collected.not_ok();
    if not_ok > 0 && !partial {
        eprintln!(
            "collect: {not_ok} of {} runs have no result to count (see above); the tables hold the others. \
             Run the missing ones, or pass --partial to accept them as they are",
            collected.rows.len()
        );
        return ExitCode::from(RUNS_NOT_OK);
    }
    ExitCode::SUCCESS
}

/// The most robots `crsim bench` builds an arena for.
const MAX_BENCH_ROBOTS: usize = 1_000_000;

fn bench(
    robots: usize,
    steps: u64,
    seed: u64,
    options: BenchOptions,
    record: Option<&Path>,
    ros2: Option<u16>,
) -> ExitCode {
    if robots == 0 || steps == 0 {
        eprintln!("--robots and --steps must be at least 1");
        return ExitCode::from(2);
    }
    if robots > MAX_BENCH_ROBOTS {
        eprintln!("--robots {robots}: at most {MAX_BENCH_ROBOTS} robots");
        return ExitCode::from(2);
    }
    if let Some(Err(e)) = record.map(crsim::record::writer::check_target) {
        eprintln!("{e}");
        return ExitCode::from(2);
    }
    let bar = crsim::run::runner::progress_bar(steps);
    let mut failed = None;
    let setup = |app: &mut App, scene: &SceneFile| {
        if let Some(domain) = ros2 {
            // Every step's state on every topic: odom, /tf and scan at every step.
            let settings = crsim::scene::schema::Ros2Spec { rate: 0.0, scan_rate: 0.0, ..Default::default() };
            if let Err(e) = crsim::ros2::serve(app, &settings, domain) {
                failed = Some(format!("--ros2: {e}"));
            }
        }
        let Some(file) = record else { return };
        let meta = crsim::record::run_meta(
            scene,
            &crsim::scene::load::to_ron(scene),
            "bench",
            Path::new("."),
            &SceneOverrides::default(),
            false,
            0,
        );
        match FileSink::create(file, &meta) {
            Ok(sink) => app.world_mut().resource_mut::<Recorder>().add_sink(Box::new(sink)),
            Err(e) => failed = Some(e),
        }
    };
    let r = run_bench_with(robots, steps, seed, options, setup, |done| bar.set_position(done));
    bar.finish_and_clear();
    if let Some(e) = failed {
        eprintln!("{e}");
        return ExitCode::from(2);
    }
    crsim::say!("robots: {}", r.robots);
    crsim::say!("steps: {}", r.steps);
    crsim::say!("wall_time_s: {:.3}", r.wall_time_s);
    crsim::say!("robot_steps_per_s: {:.0}", r.robot_steps_per_s);
    crsim::say!("physics: {}", if options.kinematic { "kinematic" } else { "rigid" });
    if options.comms {
        crsim::say!("deliveries: {}", r.deliveries);
        crsim::say!("deliveries_per_s: {:.0}", r.deliveries_per_s);
    }
    if let Some(rays) = options.range {
        // Beams read in the timed steps: every robot's, every step.
        crsim::say!("range_beams_per_s: {:.0}", r.robot_steps_per_s * f64::from(rays));
    }
    // Where a step's wall time went (all threads' work inside each stage).
    for (stage, ms) in r.stages.per_step_ms() {
        crsim::say!("stage_ms_{stage}: {ms:.3}");
    }
    let b = r.botlink;
    if b.rounds > 0 {
        // The bot manager's exchange of each update-all round step, on one core.
        crsim::say!("botlink_rounds: {}", b.rounds);
        crsim::say!("botlink_round_ms_mean: {:.3}", b.total_s / b.rounds as f64 * 1e3);
        crsim::say!("botlink_round_ms_max: {:.3}", b.max_s * 1e3);
        crsim::say!("botlink_packets_per_round: {:.0}", b.packets as f64 / b.rounds as f64);
        crsim::say!("botlink_packets_per_s: {:.0}", b.packets as f64 / b.total_s.max(1e-9));
    }
    ExitCode::SUCCESS
}
