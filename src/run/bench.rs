//! `crsim bench`: an arena of N wandering robots (sensing, driving, colliding) among pens, at a
//! constant density of one robot per square metre, stepped headless.

use std::time::Instant;

use rand::RngExt;

use bevy::prelude::*;

use super::headless::{headless_app, run_in_chunks};
use crate::botlink::BotManager;
use crate::botlink::manager::RoundTiming;
use crate::comms::{Payload, Radio, RadioOut, Target};
use crate::scene::SceneSource;
use crate::scene::schema::{
    BoxSpec, ControllerSpec, PenSpec, PhysicsMode, RangeSensorSpec, RobotSpec, SceneFile, StationSpec,
};
use crate::sim::ThinkSystems;
use crate::sim::stages::StageTimes;

/// The benchmark arena for `robots` robots: a square grid, one robot per cell of 1 m, a pen at
/// every fourth cell corner, random headings from `seed`. With `network`, the robots are
/// network collectors, with pens at every other corner, a box at one corner in sixteen and a
/// charging station at another.
pub fn bench_scene(robots: usize, seed: u64, network: bool) -> SceneFile {
    let side = (robots as f32).sqrt().ceil().max(1.0) as usize;
    let size = side as f32 + 1.0;
    let mut scene = SceneFile::empty(format!("bench-{robots}"), size, size);
    scene.seed = seed;
    let mut rng = crate::sim::rng::stream(seed, "bench", 0);
    for i in 0..robots {
        let (x, y) = ((i % side) as f32 + 0.5, (i / side) as f32 + 0.5);
        let mut r = RobotSpec::new(format!("r{i}"), x, y, rng.random_range(-180.0..180.0));
        r.controller = if network { ControllerSpec::network() } else { ControllerSpec::Wander { speed: 0.8 } };
        scene.robots.push(r);
        let corner = (x + 0.5, y + 0.5);
        if network && i % 16 == 2 {
            scene.boxes.push(BoxSpec { name: format!("b{i}"), center: corner, size: (0.3, 0.3), angle: 0.0 });
        } else if network && i % 16 == 10 {
            scene.stations.push(StationSpec { name: format!("s{i}"), pos: corner, radius: 0.2, rate: 5.0 });
        } else if i % if network { 2 } else { 4 } == 0 {
            scene.pens.push(PenSpec { name: format!("p{i}"), pos: corner, radius: 0.03 });
        }
    }
    scene
}

/// What a benchmark run measured.
#[derive(Debug, Clone)]
pub struct BenchResult {
    pub robots: usize,
    pub steps: u64,
    pub wall_time_s: f64,
    pub robot_steps_per_s: f64,
    /// Messages delivered (with `--comms`).
    pub deliveries: u64,
    pub deliveries_per_s: f64,
    /// The bot manager's exchanges in round steps (wall clock, on one core).
    pub botlink: RoundTiming,
    /// Wall time of each stage of the step.
    pub stages: StageTimes,
    /// Seconds from the start to the first step: the arena built and loaded, and what `setup`
    /// added (the ROS 2 bridge's endpoints).
    pub setup_s: f64,
    /// The run report's `ros2` section, when the bridge served (what it published and coalesced).
    pub ros2: Option<serde_json::Value>,
}

/// Radio range of the benchmark robots with `--comms`, metres: about a dozen neighbours each.
pub const BENCH_RADIO_RANGE: f32 = 2.0;

/// What to benchmark besides wandering robots.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BenchOptions {
    /// Every robot also broadcasts a message every step, within [`BENCH_RADIO_RANGE`].
    pub comms: bool,
    /// The robots are behaviour-network collectors (see [`bench_scene`]).
    pub network: bool,
    /// Robots and pens move by the kinematic model instead of rapier's rigid bodies.
    pub kinematic: bool,
    /// Every robot also has a range sensor of this many beams (180°, 3 m, every step).
    pub range: Option<u32>,
}

/// The benchmark's scene: [`bench_scene`], with the radio's range limited to
/// [`BENCH_RADIO_RANGE`] when robots talk (collectors' claims and the chatter reach the robots
/// around, as a real radio's would; unlimited range would make every broadcast reach all N).
pub fn bench_arena(robots: usize, seed: u64, options: BenchOptions) -> SceneFile {
    let mut scene = bench_scene(robots, seed, options.network);
    if options.kinematic {
        scene.physics = PhysicsMode::Kinematic;
    }
    if options.comms || options.network {
        scene.comms.range = Some(BENCH_RADIO_RANGE);
    }
    if let Some(rays) = options.range {
        for r in &mut scene.robots {
            r.range_sensor = Some(RangeSensorSpec { rays, ..Default::default() });
        }
    }
    scene
}

/// Builds the arena, then times `steps` steps (scene building excluded).
pub fn run_bench(
    robots: usize,
    steps: u64,
    seed: u64,
    options: BenchOptions,
    progress: impl FnMut(u64),
) -> BenchResult {
    run_bench_with(robots, steps, seed, options, |_, _| {}, progress)
}

/// As [`run_bench`], with `setup` given the app and its scene before the timing starts (to
/// record the run, for example).
pub fn run_bench_with(
    robots: usize,
    steps: u64,
    seed: u64,
    options: BenchOptions,
    setup: impl FnOnce(&mut App, &SceneFile),
    mut progress: impl FnMut(u64),
) -> BenchResult {
    let comms = options.comms;
    let started = Instant::now();
    let scene = bench_arena(robots, seed, options);
    let mut app = headless_app(scene.clone(), SceneSource::Generated);
    setup(&mut app, &scene);
    let setup_s = started.elapsed().as_secs_f64();
    // The running scene keeps its own copy (1.8 MB at 10,000 robots): not this one too.
    drop(scene);
    if comms {
        app.add_systems(FixedUpdate, chatter.in_set(ThinkSystems::Receive));
    }
    crate::sim::stages::plugin(&mut app);
    let start = Instant::now();
    run_in_chunks(&mut app, steps, 10, &mut progress);
    // A recording is part of the run: its last chunk is written within the time.
    app.world_mut().resource_mut::<crate::record::Recorder>().finish(false);
    let wall = start.elapsed().as_secs_f64().max(1e-9);
    let deliveries = app.world().resource::<crate::sim::PerEnv<Radio>>().only().0.stats.delivered;
    let botlink = app.world().resource::<crate::sim::PerEnv<BotManager>>().only().timing;
    let sections = app.world().get_resource::<crate::sim::ReportSections>().map(|s| s.0.clone()).unwrap_or_default();
    let ros2 = sections.iter().filter_map(|f| f(app.world_mut())).find(|(k, _)| k == "ros2").map(|(_, v)| v);
    BenchResult {
        robots,
        steps,
        wall_time_s: wall,
        robot_steps_per_s: robots as f64 * steps as f64 / wall,
        deliveries,
        deliveries_per_s: deliveries as f64 / wall,
        botlink,
        stages: *app.world().resource::<StageTimes>(),
        setup_s,
        ros2,
    }
}

/// The most robots `crsim bench` builds an arena for.
pub const MAX_BENCH_ROBOTS: usize = 1_000_000;

/// What `crsim bench` was asked for.
pub struct BenchCommand<'a> {
    pub robots: usize,
    pub steps: u64,
    pub seed: u64,
    pub options: BenchOptions,
    /// Record the run here (what recording costs).
    pub record: Option<&'a std::path::Path>,
    pub threads: Option<u16>,
    /// Serve the arena over ROS 2 (added by the floor that knows it, as `crsim run`'s setup).
    pub serve: Option<&'a dyn Fn(&mut App) -> Result<(), String>>,
}

/// Bytes a benchmark robot takes at its peak, measured: the peak RSS of `crsim bench --robots
/// 100000 --steps 10` less that of 1,000 robots, per robot — 5,627 bytes with rigid bodies,
/// 8,745 as network collectors, 160 more with `--range 16` — rounded up. 300,000 robots then
/// need 1.74 GB by this estimate, and took 1.72 GiB.
const BYTES_PER_ROBOT: u64 = 5_700;
const BYTES_PER_NETWORK_ROBOT: u64 = 8_800;
const BYTES_PER_BEAM: u64 = 10;
/// What the process takes besides its robots (36 MiB at 1,000 robots).
const BASE_BYTES: u64 = 32 << 20;

/// About the memory a benchmark arena of `robots` robots needs at its peak.
pub fn bench_memory(robots: usize, options: BenchOptions) -> u64 {
    let per = if options.network { BYTES_PER_NETWORK_ROBOT } else { BYTES_PER_ROBOT }
        + BYTES_PER_BEAM * u64::from(options.range.unwrap_or(0));
    BASE_BYTES + per * robots as u64
}

/// The memory this process may take: what the system has available, and at most its
/// address-space limit. None where it cannot tell.
pub fn memory_available() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok();
    let available = meminfo.as_deref().and_then(|m| {
        let line = m.lines().find(|l| l.starts_with("MemAvailable:"))?;
        line.split_whitespace().nth(1)?.parse::<u64>().ok().map(|kb| kb * 1024)
    });
    // "Max address space   SOFT   HARD   bytes", SOFT a number or "unlimited".
    let limits = std::fs::read_to_string("/proc/self/limits").ok();
    let limit = limits.as_deref().and_then(|l| {
        let line = l.lines().find(|l| l.starts_with("Max address space"))?;
        line["Max address space".len()..].split_whitespace().next()?.parse::<u64>().ok()
    });
    match (available, limit) {
        (Some(a), Some(l)) => Some(a.min(l)),
        (a, l) => a.or(l),
    }
}

/// Whether an arena needing `need` bytes fits in `available`; the error gives both figures.
pub fn check_memory(robots: usize, need: u64, available: Option<u64>) -> Result<(), String> {
    let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
    match available {
        Some(a) if need > a => Err(format!(
            "--robots {robots}: the arena needs about {:.1} GiB, and this process may take {:.1} GiB; \
             ask for fewer robots",
            gib(need),
            gib(a)
        )),
        _ => Ok(()),
    }
}

/// `crsim bench`: builds the arena, runs it and prints robot-steps per second and where a step's
/// time went; the exit code.
pub fn bench_command(b: BenchCommand) -> std::process::ExitCode {
    use std::process::ExitCode;
    let bad = |e: String| {
        eprintln!("{e}");
        ExitCode::from(super::runner::BAD_INPUT)
    };
    if b.robots == 0 || b.steps == 0 {
        return bad("--robots and --steps must be at least 1".into());
    }
    if b.robots > MAX_BENCH_ROBOTS {
        return bad(format!("--robots {}: at most {MAX_BENCH_ROBOTS} robots", b.robots));
    }
    if let Err(e) = check_memory(b.robots, bench_memory(b.robots, b.options), memory_available()) {
        return bad(e);
    }
    if let Some(Err(e)) = b.record.map(crate::record::writer::check_target) {
        return bad(e);
    }
    let threads = b.threads.map_or_else(|| crate::sim::default_threads(b.robots), usize::from);
    if let Err(e) = crate::sim::set_threads(threads) {
        return bad(e);
    }
    let bar = super::runner::progress_bar(b.steps);
    let mut failed = None;
    let setup = |app: &mut App, scene: &SceneFile| {
        if let Some(serve) = b.serve
            && let Err(e) = serve(app)
        {
            failed = Some(format!("--ros2: {e}"));
        }
        let Some(file) = b.record else { return };
        let text = crate::scene::load::to_ron(scene);
        let overrides = crate::scene::SceneOverrides::default();
        let meta = crate::record::run_meta(scene, &text, "bench", std::path::Path::new("."), &overrides, false, 0);
        match crate::record::writer::FileSink::create(file, &meta) {
            Ok(sink) => app.world_mut().resource_mut::<crate::record::Recorder>().add_sink(Box::new(sink)),
            Err(e) => failed = Some(e),
        }
    };
    let r = run_bench_with(b.robots, b.steps, b.seed, b.options, setup, |done| bar.set_position(done));
    bar.finish_and_clear();
    if let Some(e) = failed {
        return bad(e);
    }
    print_result(&r, b.options);
    ExitCode::SUCCESS
}

/// The lines `crsim bench` prints, `name: value` each.
fn print_result(r: &BenchResult, options: BenchOptions) {
    use crate::say;
    say!("robots: {}", r.robots);
    say!("steps: {}", r.steps);
    say!("wall_time_s: {:.3}", r.wall_time_s);
    say!("robot_steps_per_s: {:.0}", r.robot_steps_per_s);
    say!("setup_s: {:.3}", r.setup_s);
    say!("physics: {}", if options.kinematic { "kinematic" } else { "rigid" });
    if options.comms {
        say!("deliveries: {}", r.deliveries);
        say!("deliveries_per_s: {:.0}", r.deliveries_per_s);
    }
    if let Some(rays) = options.range {
        // Beams read in the timed steps: every robot's, every step.
        say!("range_beams_per_s: {:.0}", r.robot_steps_per_s * f64::from(rays));
    }
    // Where a step's wall time went (all threads' work inside each stage).
    for (stage, ms) in r.stages.per_step_ms() {
        say!("stage_ms_{stage}: {ms:.3}");
    }
    if let Some(ros2) = &r.ros2 {
        for key in ["published", "coalesced", "publish_errors", "publish_dropped"] {
            say!("ros2_{key}: {}", ros2[key]);
        }
    }
    let b = r.botlink;
    if b.rounds > 0 {
        // The bot manager's exchange of each update-all round step, on one core.
        say!("botlink_rounds: {}", b.rounds);
        say!("botlink_round_ms_mean: {:.3}", b.total_s / b.rounds as f64 * 1e3);
        say!("botlink_round_ms_max: {:.3}", b.max_s * 1e3);
        say!("botlink_packets_per_round: {:.0}", b.packets as f64 / b.rounds as f64);
        say!("botlink_packets_per_s: {:.0}", b.packets as f64 / b.total_s.max(1e-9));
    }
}

/// Every robot broadcasts each step.
fn chatter(mut robots: Query<&mut RadioOut>) {
    for mut out in &mut robots {
        out.0.push((Target::Broadcast, Payload::Text(String::new())));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scene::validate::validate;

    /// `bench --robots 1000000` needed more than 4 GiB and died by allocation failure on a
    /// smaller machine: the estimate refuses it first, with both figures.
    #[test]
    fn an_arena_larger_than_the_memory_is_refused_with_the_figures() {
        let need = bench_memory(1_000_000, BenchOptions::default());
        assert!(need > 4 << 30, "{need}");
        let e = check_memory(1_000_000, need, Some(2 << 30)).unwrap_err();
        assert!(e.starts_with("--robots 1000000: the arena needs about "), "{e}");
        assert!(e.contains("GiB, and this process may take 2.0 GiB"), "{e}");
        assert_eq!(check_memory(1_000, bench_memory(1_000, BenchOptions::default()), Some(2 << 30)), Ok(()));
        assert_eq!(check_memory(1_000_000, need, None), Ok(()), "unknown: not refused");
        let network = BenchOptions { network: true, range: Some(16), ..Default::default() };
        assert!(bench_memory(10_000, network) > bench_memory(10_000, BenchOptions::default()));
    }

    #[test]
    fn bench_scenes_are_valid() {
        for n in [1, 7, 100, 1000] {
            for network in [false, true] {
                let s = bench_scene(n, 3, network);
                assert_eq!(s.robots.len(), n);
                assert_eq!(validate(&s), vec![], "{n} robots");
            }
        }
        let s = bench_scene(1000, 3, true);
        assert_eq!((s.boxes.len(), s.stations.len()), (63, 62));
    }
}
