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
#[derive(Debug, Clone, Copy)]
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
    let scene = bench_arena(robots, seed, options);
    let mut app = headless_app(scene.clone(), SceneSource::Generated);
    setup(&mut app, &scene);
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
    BenchResult {
        robots,
        steps,
        wall_time_s: wall,
        robot_steps_per_s: robots as f64 * steps as f64 / wall,
        deliveries,
        deliveries_per_s: deliveries as f64 / wall,
        botlink,
        stages: *app.world().resource::<StageTimes>(),
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
