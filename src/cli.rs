//! The `crsim` command line: its arguments (clap) and which library function each command calls.
//! Every command's work, output and exit code are the library's (`crsim::run`, `experiment`,
//! `record`, `vecenv`, `window`), where tests call them without a binary.
//!
//! The `crsim` binary is [`main`]. A crate that extends crsim (sensors, effectors, controllers
//! registered by its own plugin) makes its own binary with [`main_with`], the same command line
//! with its plugin added to every app the commands build: its scenes then run, check and open in
//! the app as crsim's own do.

use std::path::PathBuf;
use std::process::ExitCode;

use bevy::prelude::App;
use clap::{Parser, Subcommand};

use crate::experiment::command::{SweepCommand, collect_command, sweep_command};
use crate::run::bench::{BenchCommand, BenchOptions, bench_command};
use crate::run::runner::RunRequest;
use crate::run::until::Until;
use crate::scene::SceneOverrides;
use crate::scene::overrides::SetValue;
use crate::scene::schema::Dialect;
use crate::window::{Opened, Outside, View};

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
    Run(RunArgs),
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
        #[arg(long, value_name = "K", value_parser = clap::value_parser!(u32).range(1..=i64::from(crate::scene::schema::MAX_RAYS)))]
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

/// `crsim run`'s arguments.
#[derive(clap::Args, Debug)]
struct RunArgs {
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
}

/// Headless commands print warnings (ports that cannot be served, refused connections) to
/// stderr; `RUST_LOG` chooses another level. The app logs through Bevy's own log plugin. The DDS
/// stack's own warnings (a peer's IPv6 locator this IPv4 participant cannot reach, on every
/// send) stay out unless `RUST_LOG` asks for them; the bridge counts and reports what matters.
fn log_to_stderr() {
    use bevy::log::tracing_subscriber::{EnvFilter, fmt};
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn,rustdds=error"));
    let _ = fmt().with_env_filter(filter).with_writer(std::io::stderr).without_time().try_init();
}

/// What an extension adds to every app the command line builds (its plugins, its sensors), as
/// [`main_with`] takes it.
pub type Setup<'a> = &'a dyn Fn(&mut App);

/// The `crsim` command line.
pub fn main() -> ExitCode {
    main_with(&|_| {})
}

/// The `crsim` command line with `setup` run on every app it builds, after crsim's own plugins:
/// the app of `crsim [SCENE]`, `replay` and `view`, the runs of `crsim run` and `verify`, and
/// the sensors `crsim check` knows. The binary of a crate that extends crsim:
///
/// ```no_run
/// use bevy::prelude::*;
///
/// struct MyPlugin;
/// impl Plugin for MyPlugin {
///     fn build(&self, _app: &mut App) { /* app.register_sensor(...) */ }
/// }
///
/// fn main() -> std::process::ExitCode {
///     crsim::cli::main_with(&|app| {
///         app.add_plugins(MyPlugin);
///     })
/// }
/// ```
pub fn main_with(setup: Setup) -> ExitCode {
    let cli = Cli::parse();
    let Some(command) = cli.command else { return open_app(cli, setup) };
    log_to_stderr();
    match command {
        Command::Run(a) => {
            let Outside { protocol, program_port, overrides } = a.outside.into();
            let request = crate::ros2::Ros2Request { enabled: a.ros2, domain_id: a.ros2_domain, settings: None };
            let ros_and_setup = move |app: &mut App| {
                app.insert_resource(request.clone());
                crate::ros2::plugin(app);
                setup(app);
            };
            crate::run::runner::run(RunRequest {
                scene: &a.scene,
                steps: a.steps,
                seed: a.seed,
                out: a.out.as_deref(),
                no_radio: a.no_radio,
                dump_network: a.dump_network.as_deref(),
                realtime: a.realtime,
                until: a.until,
                protocol,
                program_port,
                overrides,
                record: a.record.as_deref(),
                record_ros2: a.record_ros2.as_deref(),
                serve_viewer: a.serve_viewer,
                threads: a.threads,
                keep_serving: a.keep_serving,
                setup: Some(&ros_and_setup),
            })
        }
        Command::Replay { recording, frames, every, step } => {
            crate::window::replay_command(&recording, frames, every, step, setup)
        }
        Command::Verify { recording, scene } => crate::run::verify::verify_command(&recording, scene.as_deref(), setup),
        Command::View { addr } => crate::window::view_command(&addr, setup),
        Command::Inspect { recording, step } => crate::record::inspect::inspect_command(&recording, step),
        Command::Check { files } => crate::run::check::check_files(&files, &crate::run::sensors_with(setup)),
        Command::Sweep { sweep, dir, plan, jobs, bin } => {
            sweep_command(SweepCommand { file: sweep, dir, plan, jobs, bin })
        }
        Command::Collect { dir, plot, by, out, partial } => collect_command(&dir, plot.zip(by), out, partial),
        Command::Bot { scene, robot, port, address, out } => {
            crate::run::bot::bot_command(&scene, &robot, &address, port, out.as_deref())
        }
        Command::Envbench { worlds, robots, steps, threads } => {
            let threads = threads.map_or_else(crate::sim::cores, usize::from);
            crate::vecenv::bench::envbench_command(worlds as usize, robots as usize, steps, threads)
        }
        Command::Bench { robots, steps, seed, comms, network, kinematic, range, record, threads, ros2 } => {
            // Every step's state on every topic: odom, /tf and scan at every step.
            let settings = crate::scene::schema::Ros2Spec { rate: 0.0, scan_rate: 0.0, ..Default::default() };
            let serve = move |app: &mut App| crate::ros2::serve(app, &settings, ros2.unwrap_or(0));
            bench_command(BenchCommand {
                robots,
                steps,
                seed,
                options: BenchOptions { comms, network, kinematic, range },
                record: record.as_deref(),
                threads,
                serve: ros2.is_some().then_some(&serve as _),
            })
        }
    }
}

/// `crsim [SCENE]`: the app.
fn open_app(cli: Cli, setup: Setup) -> ExitCode {
    let what = match cli.bench {
        Some(n) => Opened::Bench {
            robots: n as usize,
            options: BenchOptions { network: cli.bench_network, kinematic: cli.bench_kinematic, ..Default::default() },
        },
        None => Opened::Scene(cli.scene),
    };
    let view = View {
        screenshot: cli.screenshot.map(|p| (p, cli.frames)),
        frame_stats: cli.frame_stats,
        select: cli.select,
        start: crate::window::StartView {
            edit: cli.edit,
            plots: cli.plots,
            dark: cli.theme.as_deref() == Some("dark"),
        },
    };
    crate::window::open_app(what, view, cli.outside.into(), setup)
}
