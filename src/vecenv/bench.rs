//! `crsim envbench`: how fast the in-process worlds step, in environment steps and robot steps
//! per second, on a pens room of R program robots with cameras and range sensors.

use std::time::Instant;

use super::{ACTION_SIZE, EnvSpec, RewardWeights, VecWorlds};
use crate::scene::SceneSource;
use crate::scene::schema::{BoxSpec, ControllerSpec, PenSpec, RangeSensorSpec, RobotSpec, SceneFile};

/// A pens room for `robots` program robots (each with a 16-beam range sensor over 180°): 2 m of
/// floor per robot on a side of at least 3 m, a pen per robot and two boxes.
pub fn bench_room(robots: usize) -> SceneFile {
    let side = (2.0 * (robots as f32).sqrt() + 1.0).max(3.0);
    let mut scene = SceneFile::empty("envbench", side, side);
    let per_row = (robots as f32).sqrt().ceil() as usize;
    let gap = side / (per_row as f32 + 1.0);
    for i in 0..robots {
        let (x, y) = ((i % per_row + 1) as f32 * gap, (i / per_row + 1) as f32 * gap);
        let mut r = RobotSpec::new(format!("r{i}"), x, y - 0.3 * gap, (i * 37 % 360) as f32);
        r.controller = ControllerSpec::Program {};
        r.range_sensor = Some(RangeSensorSpec { rays: 16, ..Default::default() });
        scene.robots.push(r);
        scene.pens.push(PenSpec { name: format!("p{i}"), pos: (x, y + 0.3 * gap), radius: 0.03 });
    }
    for (k, x) in [0.4, side - 0.4].into_iter().enumerate() {
        scene.boxes.push(BoxSpec { name: format!("box{k}"), center: (x, side - 0.4), size: (0.4, 0.4), angle: 0.0 });
    }
    scene
}

/// What a run of the bench measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EnvBench {
    pub worlds: usize,
    pub robots: usize,
    pub steps: u64,
    pub wall_s: f64,
    /// Building the worlds and their first reset.
    pub build_s: f64,
}

impl EnvBench {
    pub fn env_steps_per_s(&self) -> f64 {
        (self.worlds as u64 * self.steps) as f64 / self.wall_s.max(1e-9)
    }

    pub fn robot_steps_per_s(&self) -> f64 {
        self.env_steps_per_s() * self.robots as f64
    }
}

/// Steps `worlds` worlds of `scene` (its program robots driven, turning in circles, the gripper
/// closing now and then) `steps` times on `threads` threads; episodes never end.
pub fn run_env_bench(scene: SceneFile, worlds: usize, steps: u64, threads: usize) -> Result<EnvBench, String> {
    let spec = EnvSpec {
        scene,
        source: SceneSource::Generated,
        max_steps: u64::MAX,
        until: None,
        rewards: RewardWeights::default(),
        message_size: 0,
        parts: None,
    };
    let started = Instant::now();
    let seeds: Vec<u64> = (0..worlds as u64).collect();
    let mut v = VecWorlds::new(spec, &seeds, threads)?;
    let build_s = started.elapsed().as_secs_f64();
    let robots = v.robots();
    let mut actions = vec![0.0f32; worlds * robots * ACTION_SIZE];
    let started = Instant::now();
    for step in 0..steps {
        for (i, a) in actions.chunks_exact_mut(ACTION_SIZE).enumerate() {
            a[0] = 0.8;
            a[1] = if (step / 50 + i as u64).is_multiple_of(2) { 0.6 } else { -0.6 };
            a[2] = if step % 100 == 60 { 1.0 } else { 0.0 };
        }
        v.step(&actions)?;
    }
    Ok(EnvBench { worlds, robots, steps, wall_s: started.elapsed().as_secs_f64(), build_s })
}

/// The most robots `crsim envbench` builds, over all its worlds.
pub const MAX_ENVBENCH_ROBOTS: usize = 1_000_000;

/// `crsim envbench`: `worlds` worlds of [`bench_room`] with `robots` program robots each, stepped
/// `steps` times on `threads` threads; prints env-steps and robot-steps per second. The exit code.
pub fn envbench_command(worlds: usize, robots: usize, steps: u64, threads: usize) -> std::process::ExitCode {
    use crate::say;
    use std::process::ExitCode;
    if worlds.saturating_mul(robots) > MAX_ENVBENCH_ROBOTS {
        eprintln!("envbench: {worlds} worlds of {robots} robots is more than {MAX_ENVBENCH_ROBOTS} robots");
        return ExitCode::from(2);
    }
    match run_env_bench(bench_room(robots), worlds, steps, threads) {
        Ok(r) => {
            say!("worlds: {}", r.worlds);
            say!("robots: {}", r.robots);
            say!("steps: {}", r.steps);
            say!("threads: {threads}");
            say!("build_s: {:.3}", r.build_s);
            say!("wall_time_s: {:.3}", r.wall_s);
            say!("env_steps_per_s: {:.0}", r.env_steps_per_s());
            say!("robot_steps_per_s: {:.0}", r.robot_steps_per_s());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("envbench: {e}");
            ExitCode::from(2)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bench_room_holds_its_robots_and_steps() {
        for n in [1, 4, 16] {
            let scene = bench_room(n);
            let errors = crate::scene::validate::validate(&scene);
            assert!(errors.is_empty(), "{n} robots: {errors:?}");
        }
        let r = run_env_bench(bench_room(4), 3, 20, 2).unwrap();
        assert_eq!((r.worlds, r.robots, r.steps), (3, 4, 20));
        assert!(r.env_steps_per_s() > 0.0 && r.robot_steps_per_s() == 4.0 * r.env_steps_per_s());
    }
}
