//! One environment world: a headless crsim world whose program robots take their actions from
//! the caller, stepped in the two parts of [`crate::sim::StepPart`] so that what it observes after a step is
//! what a program in lock-step reads at the next one.

use std::collections::HashSet;

use bevy::prelude::*;

use super::observe::{self, ObservedItem};
use crate::control::programs::protocol::{GripAction, RobotAction};
use crate::control::programs::{InProcess, Program};
use crate::robot::{Battery, Gripper, Odometry, RangeSensor, Robot, pose};
use crate::run::headless::headless_app_with;
use crate::run::until::Until;
use crate::scene::schema::{ControllerSpec, SceneFile};
use crate::scene::{PendingScene, SceneSource};
use crate::sim::{Passes, SimTime, TrajectoryHash, run_rest_part, run_sense_part};
use crate::world::Arena;

/// Values of one robot's action: linear and angular speed as fractions of its maxima (clamped
/// to [-1, 1]), and the gripper: above 0.5 close, below -0.5 open, between them leave it.
pub const ACTION_SIZE: usize = 3;

/// How rewards weigh crsim's own counts for a robot, between one step and the next.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RewardWeights {
    /// Per pen the robot dropped into a box.
    pub boxed: f32,
    /// Per cell of the robot's diameter it entered for the first time this episode.
    pub visited: f32,
    /// Per collision.
    pub collisions: f32,
}

impl Default for RewardWeights {
    /// The weights of the Python environments: 1 a pen boxed, 0.01 a new cell, -0.1 a collision.
    fn default() -> Self {
        Self { boxed: 1.0, visited: 0.01, collisions: -0.1 }
    }
}

/// What every world of an environment shares: the scene (its program robots are the ones the
/// environment drives), and how episodes end and are rewarded.
#[derive(Debug, Clone)]
pub struct EnvSpec {
    pub scene: SceneFile,
    pub source: SceneSource,
    /// Steps after which an episode is truncated.
    pub max_steps: u64,
    /// A task whose end terminates the episode (`--until`'s conditions).
    pub until: Option<Until>,
    pub rewards: RewardWeights,
}

impl EnvSpec {
    /// The robots the environment drives: the scene's program robots, in scene order.
    pub fn robots(&self) -> Vec<String> {
        self.scene
            .robots
            .iter()
            .filter(|r| matches!(r.controller, ControllerSpec::Program {}))
            .map(|r| r.name.clone())
            .collect()
    }

    /// Values of each driven robot's observation, in the order of [`EnvSpec::robots`].
    pub fn observation_sizes(&self) -> Vec<usize> {
        let programs = self.scene.robots.iter().filter(|r| matches!(r.controller, ControllerSpec::Program {}));
        programs.map(|r| observe::size(r.range_sensor.as_ref().map(RangeSensor::from).as_ref())).collect()
    }
}

/// What one step did to one robot: its reward, and whether its episode ended for it
/// (terminated: its battery is empty or the task is done; truncated: the step limit).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RobotOutcome {
    pub reward: f32,
    pub terminated: bool,
    pub truncated: bool,
}

/// crsim's counts for a robot that rewards weigh.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Counts {
    boxed: u32,
    visited: usize,
    collisions: u32,
}

/// A driven robot of a world: its entity in the current episode, its limits, its counts.
#[derive(Debug, Clone)]
struct Driven {
    name: String,
    entity: Entity,
    max_speed: f32,
    max_turn: f32,
    cell: f32,
    visited: HashSet<(i32, i32)>,
    counts: Counts,
}

/// One world of an environment.
pub struct EnvWorld {
    world: World,
    /// What observations read, kept: a query made anew scans every archetype.
    observed: Option<QueryState<ObservedItem<'static>>>,
    spec: EnvSpec,
    robots: Vec<Driven>,
    /// Steps of this episode.
    pub episode_steps: u64,
}

impl EnvWorld {
    /// A world of `spec`'s scene with `seed`, reset: its first step's sense part has run.
    pub fn new(spec: &EnvSpec, seed: u64) -> Result<EnvWorld, String> {
        let mut scene = spec.scene.clone();
        scene.seed = seed;
        let mut app = headless_app_with(scene, spec.source.clone(), |app| {
            app.insert_resource(InProcess);
        });
        let mut world = std::mem::take(app.world_mut());
        // Each world steps on the thread it is given: the environment spreads worlds over the
        // cores, not a world's robots.
        world.insert_resource(Passes::ONE);
        let mut env = EnvWorld { world, observed: None, spec: spec.clone(), robots: Vec::new(), episode_steps: 0 };
        env.start_episode()?;
        Ok(env)
    }

    /// The scene's world again, with `seed`.
    pub fn reset(&mut self, seed: u64) -> Result<(), String> {
        let mut scene = self.spec.scene.clone();
        scene.seed = seed;
        self.world.resource_mut::<PendingScene>().request(scene, self.spec.source.clone());
        // The main schedule loads the scene (no step runs: the clock has none queued).
        self.world.run_schedule(Main);
        self.start_episode()
    }

    /// Finds the driven robots of the freshly loaded scene and runs the first step's sense part.
    fn start_episode(&mut self) -> Result<(), String> {
        let names = self.spec.robots();
        let mut found = Vec::with_capacity(names.len());
        let mut q = self.world.query::<(Entity, &Name, &Robot, Has<Program>)>();
        for name in &names {
            let Some((entity, _, robot, program)) = q.iter(&self.world).find(|(_, n, ..)| n.as_str() == name) else {
                return Err(format!("robot \"{name}\" is not in the scene's world"));
            };
            if !program {
                return Err(format!("robot \"{name}\" is not a program robot"));
            }
            let cell = 2.0 * robot.radius;
            found.push(Driven {
                name: name.clone(),
                entity,
                max_speed: robot.max_speed,
                max_turn: robot.max_turn,
                cell,
                visited: HashSet::new(),
                counts: Counts::default(),
            });
        }
        self.robots = found;
        self.episode_steps = 0;
        run_sense_part(&mut self.world);
        for i in 0..self.robots.len() {
            self.robots[i].counts = self.counts(i);
        }
        Ok(())
    }

    /// Runs one step with `actions` ([`ACTION_SIZE`] values a driven robot, in order; checked
    /// by the caller), then the next step's sense part; writes what the step did to each robot
    /// into `out`.
    pub fn step(&mut self, actions: &[f32], out: &mut [RobotOutcome]) {
        for (r, a) in self.robots.iter().zip(actions.chunks_exact(ACTION_SIZE)) {
            let action = robot_action(&r.name, r.max_speed, r.max_turn, a);
            if let Some(mut program) = self.world.get_mut::<Program>(r.entity) {
                program.set_action(action);
            }
        }
        run_rest_part(&mut self.world);
        run_sense_part(&mut self.world);
        self.episode_steps += 1;
        let done = self.spec.until.is_some_and(|u| u.reached(&mut self.world));
        let truncated = self.episode_steps >= self.spec.max_steps;
        for (i, out) in out.iter_mut().enumerate().take(self.robots.len()) {
            let now = self.counts(i);
            let w = self.spec.rewards;
            let before = std::mem::replace(&mut self.robots[i].counts, now);
            let reward = w.boxed * (now.boxed - before.boxed) as f32
                + w.visited * (now.visited - before.visited) as f32
                + w.collisions * (now.collisions - before.collisions) as f32;
            let empty = self.world.get::<Battery>(self.robots[i].entity).is_none_or(Battery::is_empty);
            *out = RobotOutcome { reward, terminated: done || empty, truncated };
        }
    }

    /// A driven robot's counts now, its visited cells brought up to date.
    fn counts(&mut self, i: usize) -> Counts {
        let e = self.robots[i].entity;
        let (boxed, collisions, at) =
            match (self.world.get::<Gripper>(e), self.world.get::<Odometry>(e), self.world.get::<Transform>(e)) {
                (Some(g), Some(o), Some(t)) => (g.boxed, o.collisions, pose(t).0),
                _ => return self.robots[i].counts,
            };
        let r = &mut self.robots[i];
        r.visited.insert(((at.x / r.cell).floor() as i32, (at.y / r.cell).floor() as i32));
        Counts { boxed, visited: r.visited.len(), collisions }
    }

    /// Writes every driven robot's observation into `out`, one after the other (each of the
    /// size [`EnvSpec::observation_sizes`] gives).
    pub fn observe(&mut self, out: &mut [f32]) {
        let arena = *self.world.resource::<Arena>();
        let q = self.observed.get_or_insert_with(|| self.world.query::<ObservedItem>());
        let mut at = 0;
        for r in &self.robots {
            let Ok(item) = q.get(&self.world, r.entity) else { continue };
            let n = observe::size(item.9.map(|(s, _)| s));
            observe::observe(item, &arena, &mut out[at..at + n]);
            at += n;
        }
    }

    /// The trajectory hash so far, as `crsim run` prints it.
    pub fn hash(&self) -> String {
        self.world.resource::<TrajectoryHash>().hex()
    }

    /// Steps the world has run since its scene was loaded.
    pub fn step_count(&self) -> u64 {
        self.world.resource::<SimTime>().step
    }
}

/// The program action of one robot's [`ACTION_SIZE`] values.
pub fn robot_action(name: &str, max_speed: f32, max_turn: f32, a: &[f32]) -> RobotAction {
    let frac = |v: f32| v.clamp(-1.0, 1.0);
    let grip = match a[2] {
        g if g > 0.5 => Some(GripAction::Close),
        g if g < -0.5 => Some(GripAction::Open),
        _ => None,
    };
    RobotAction {
        name: name.to_string(),
        drive: Some([frac(a[0]) * max_speed, frac(a[1]) * max_turn]),
        skill: None,
        grip,
        lamp: None,
        send: Vec::new(),
    }
}
