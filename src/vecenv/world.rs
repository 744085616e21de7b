//! One environment world: a headless crsim world whose program robots take their actions from
//! the caller, stepped in two parts ([`crate::sim::StepSchedules`]) so that what it observes
//! after a step is what a program in lock-step reads at the next one.

use std::collections::HashSet;

use bevy::prelude::*;

use super::observe::{self, RobotView};
use crate::comms::RadioIn;
use crate::control::programs::protocol::{GripAction, OutMessage, RobotAction};
use crate::control::programs::{InProcess, Program};
use crate::robot::registry::{Around, Observers};
use crate::robot::{Battery, Gripper, Odometry, Robot, pose};
use crate::run::headless::headless_app_with;
use crate::run::load::load_env;
use crate::run::standard_sensors;
use crate::run::until::Until;
use crate::scene::SceneSource;
use crate::scene::schema::{ControllerSpec, RobotSpec, SceneFile};
use crate::sim::{
    Env, EnvStart, Passes, PerEnv, RobotOrder, SimTime, StepSchedules, TrajectoryHash, drop_unused_systems,
};
use crate::world::Arena;

/// Values of one robot's action: linear and angular speed as fractions of its maxima (clamped
/// to [-1, 1]), and the gripper: above 0.5 close, below -0.5 open, between them leave it.
pub const ACTION_SIZE: usize = 3;

/// crsim's own counts for one robot in an episode, which rewards weigh: each step's reward is
/// the change of each count since the last step, weighted.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Counts {
    /// Pens it dropped into a box.
    pub boxed: u32,
    /// Pens it picked up.
    pub picked: u32,
    /// Cells of its diameter it has entered.
    pub visited: usize,
    /// Collisions.
    pub collisions: u32,
    /// Radio messages delivered to it.
    pub heard: u64,
    /// Battery level, 0..1.
    pub battery: f32,
}

impl Counts {
    /// The counts' names, in the order of [`Counts::values`] and [`RewardWeights::values`].
    pub const NAMES: [&'static str; 6] = ["boxed", "picked", "visited", "collisions", "heard", "battery"];

    /// The counts as numbers, in the order of [`Counts::NAMES`].
    pub fn values(&self) -> [f32; 6] {
        [
            self.boxed as f32,
            self.picked as f32,
            self.visited as f32,
            self.collisions as f32,
            self.heard as f32,
            self.battery,
        ]
    }
}

/// How rewards weigh crsim's own counts for a robot ([`Counts`]), between one step and the next.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RewardWeights {
    /// Per pen the robot dropped into a box.
    pub boxed: f32,
    /// Per pen it picked up.
    pub picked: f32,
    /// Per cell of the robot's diameter it entered for the first time this episode.
    pub visited: f32,
    /// Per collision.
    pub collisions: f32,
    /// Per radio message delivered to it.
    pub heard: f32,
    /// Per unit of battery level gained (a full charge is 1; draining gives its negative).
    pub battery: f32,
}

impl Default for RewardWeights {
    /// The weights of the Python environments: 1 a pen boxed, 0.01 a new cell, -0.1 a collision.
    fn default() -> Self {
        Self { boxed: 1.0, picked: 0.0, visited: 0.01, collisions: -0.1, heard: 0.0, battery: 0.0 }
    }
}

impl RewardWeights {
    /// Weights named as [`Counts::NAMES`] names them; a name that is not a count is an error.
    pub fn from_named<'a>(named: impl IntoIterator<Item = (&'a str, f32)>) -> Result<Self, String> {
        let mut w = Self::default();
        for (name, value) in named {
            let slot = match name {
                "boxed" => &mut w.boxed,
                "picked" => &mut w.picked,
                "visited" => &mut w.visited,
                "collisions" => &mut w.collisions,
                "heard" => &mut w.heard,
                "battery" => &mut w.battery,
                other => {
                    return Err(format!("reward weight \"{other}\" is not one of {}", Counts::NAMES.join(", ")));
                }
            };
            if !value.is_finite() {
                return Err(format!("reward weight \"{name}\" is {value}; it must be a finite number"));
            }
            *slot = value;
        }
        Ok(w)
    }

    /// The weights in the order of [`Counts::NAMES`].
    pub fn values(&self) -> [f32; 6] {
        [self.boxed, self.picked, self.visited, self.collisions, self.heard, self.battery]
    }

    /// The reward for going from `before` to `now`.
    pub fn reward(&self, before: &Counts, now: &Counts) -> f32 {
        let (b, n) = (before.values(), now.values());
        self.values().iter().zip(n.iter().zip(b.iter())).map(|(w, (n, b))| w * (n - b)).sum()
    }
}

/// What every world of an environment shares: the scene (its program robots are the ones the
/// environment drives), and how episodes end and are rewarded.
#[derive(Debug, Clone, PartialEq)]
pub struct EnvSpec {
    pub scene: SceneFile,
    pub source: SceneSource,
    /// Steps after which an episode is truncated.
    pub max_steps: u64,
    /// A task whose end terminates the episode (`--until`'s conditions).
    pub until: Option<Until>,
    pub rewards: RewardWeights,
    /// Values of the message vector each driven robot broadcasts with its action and hears, as
    /// the mean of those delivered to it, in its observation (0: none).
    pub message_size: usize,
    /// The parts of the layout each robot observes, by name ([`observe::parse_parts`]; `None`:
    /// all of them).
    pub parts: Option<Vec<String>>,
}

impl EnvSpec {
    /// The driven robots' specs, in the order of [`EnvSpec::robots`].
    fn driven(&self) -> Vec<&RobotSpec> {
        let programs: Vec<&RobotSpec> =
            self.scene.robots.iter().filter(|r| matches!(r.controller, ControllerSpec::Program {})).collect();
        let mut groups: Vec<String> = Vec::new();
        for r in &programs {
            let g = self.group_of(r);
            if !groups.contains(&g) {
                groups.push(g);
            }
        }
        let rank = |r: &RobotSpec| groups.iter().position(|g| *g == self.group_of(r));
        let mut ordered = programs;
        ordered.sort_by_key(|r| rank(r));
        ordered
    }

    /// The robots the environment drives: the scene's program robots, group by group (robots
    /// of one kind, or of no kind with the same range beams ([`group_name`]), in the order each
    /// group first appears in the scene), each group in scene order.
    pub fn robots(&self) -> Vec<String> {
        self.driven().into_iter().map(|r| r.name.clone()).collect()
    }

    /// Each driven robot's group (its kind, or [`group_name`]), in the order of
    /// [`EnvSpec::robots`].
    pub fn groups(&self) -> Vec<String> {
        self.driven().into_iter().map(|r| self.group_of(r)).collect()
    }

    /// A driven robot's group: its kind, or for a robot of no kind the range beams it observes.
    fn group_of(&self, robot: &RobotSpec) -> String {
        match &robot.kind {
            Some(kind) => kind.clone(),
            None => group_name(self.view(robot).part_size("range")),
        }
    }

    /// Checks that the robots of each group observe alike (a robot may override its kind's
    /// sensors); the error names two that do not.
    pub fn groups_alike(&self) -> Result<(), String> {
        let (robots, groups, views) = (self.robots(), self.groups(), self.views());
        for i in 0..robots.len() {
            let parts = views[i].observed_parts();
            if let Some(j) = (0..i).find(|&j| groups[j] == groups[i] && views[j].observed_parts() != parts) {
                return Err(format!(
                    "robots {} and {} are of one group ({}) but observe different parts ({:?} and {:?}): give one \
                     a kind of its own, or the same sensors",
                    robots[j],
                    robots[i],
                    groups[i],
                    views[j].observed_parts(),
                    parts
                ));
            }
        }
        Ok(())
    }

    /// How a robot of the scene is observed, from the standard sensors.
    fn view(&self, robot: &RobotSpec) -> RobotView {
        RobotView::new(standard_sensors(), robot, self.parts.as_deref(), self.message_size)
    }

    /// How each driven robot is observed, in the order of [`EnvSpec::robots`].
    pub fn views(&self) -> Vec<RobotView> {
        self.driven().into_iter().map(|r| self.view(r)).collect()
    }

    /// Values of each driven robot's observation, in the order of [`EnvSpec::robots`].
    pub fn observation_sizes(&self) -> Vec<usize> {
        self.views().iter().map(RobotView::size).collect()
    }

    /// Values of each driven robot's action: [`ACTION_SIZE`] and its message vector's.
    pub fn action_size(&self) -> usize {
        ACTION_SIZE + self.message_size
    }
}

/// The group of robots that observe `beams` range beams: robots of one group observe the same
/// layout. `camera` for none (no range sensor, or the range part not observed), `range16` for 16.
pub fn group_name(beams: usize) -> String {
    match beams {
        0 => "camera".to_string(),
        k => format!("range{k}"),
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

/// A driven robot of a world: its entity in the current episode, its limits, its counts.
#[derive(Debug, Clone)]
struct Driven {
    name: String,
    entity: Entity,
    max_speed: f32,
    max_turn: f32,
    cell: f32,
    visited: HashSet<(i32, i32)>,
    /// The cell it was in at the last count: a robot stays in one for dozens of steps.
    last_cell: Option<(i32, i32)>,
    counts: Counts,
}

/// What a driven robot's counts are read from.
type CountedItem<'a> = (&'a Gripper, &'a Odometry, &'a Transform, &'a Battery, Option<&'a RadioIn>);

/// One environment of a batch: the robots it drives and its episode.
#[derive(Debug, Clone, Default)]
struct Slot {
    robots: Vec<Driven>,
    /// Steps of this episode.
    episode_steps: u64,
}

/// What happens to each environment of a batch in one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Turn {
    /// It steps with its actions.
    Step,
    /// It is loaded again with this seed (its actions are not used).
    Reset(u64),
    /// Nothing: it keeps its state and observation.
    Keep,
}

/// Environments of one scene in one world: each its own copy of the scene (its own seed,
/// physics context, radio, random streams, step count), stepped together by one schedule, as
/// each would step alone in a world of its own. Bevy's schedule and its systems' state are
/// kept once for all of them, which is what makes a small environment cheap
/// ([`crate::sim::Env`]).
pub struct EnvBatch {
    world: World,
    /// The world's fixed schedules, held out of it.
    schedules: Option<StepSchedules>,
    /// How each driven robot is observed, in the order of [`EnvSpec::robots`].
    views: Vec<RobotView>,
    /// The sensors' observers of this world.
    observers: Observers,
    /// What counts read, kept likewise: one lookup of a robot for all of them.
    counted: Option<QueryState<CountedItem<'static>>>,
    /// A robot's whole observation, before the parts the environment observes are taken.
    full: Vec<f32>,
    spec: EnvSpec,
    envs: Vec<Slot>,
}

impl EnvBatch {
    /// `seeds.len()` environments of `spec`'s scene (at least one), environment `i` with
    /// `seeds[i]`, each reset: their first step's sense part has run.
    pub fn new(spec: &EnvSpec, seeds: &[u64]) -> Result<EnvBatch, String> {
        Self::new_until(spec, seeds, &mut || None)
    }

    /// [`EnvBatch::new`], asking `stop` after each environment it loads (thousands take
    /// seconds): when it gives a reason, building stops with it as the error.
    pub fn new_until(
        spec: &EnvSpec,
        seeds: &[u64],
        stop: &mut dyn FnMut() -> Option<String>,
    ) -> Result<EnvBatch, String> {
        let Some(&first) = seeds.first() else { return Err("a batch of no environments".into()) };
        if seeds.len() > 1 {
            batchable(&spec.scene)?;
        }
        let mut app = headless_app_with(seeded(&spec.scene, first), spec.source.clone(), |app| {
            app.insert_resource(InProcess);
        });
        let mut world = std::mem::take(app.world_mut());
        // Each world steps on the thread it is given: the environment spreads worlds over the
        // cores, not a world's robots.
        world.insert_resource(Passes::ONE);
        for (i, &seed) in seeds.iter().enumerate().skip(1) {
            load_env(&mut world, Env(i as u32), &seeded(&spec.scene, seed));
            if let Some(reason) = stop() {
                return Err(reason);
            }
        }
        // The subsystems take up the environments just loaded.
        world.run_schedule(PreUpdate);
        // One scene, reset again and again, never recorded: what it does not use now it never will.
        drop_unused_systems(&mut world);
        let observers = standard_sensors().observers(&mut world);
        let mut batch = EnvBatch {
            observers,
            world,
            schedules: None,
            views: spec.views(),
            counted: None,
            full: Vec::new(),
            spec: spec.clone(),
            envs: vec![Slot::default(); seeds.len()],
        };
        batch.run_sense();
        for i in 0..seeds.len() {
            batch.start_episode(i)?;
        }
        Ok(batch)
    }

    /// Environments in the batch.
    pub fn len(&self) -> usize {
        self.envs.len()
    }

    /// Whether it has none (it never has).
    pub fn is_empty(&self) -> bool {
        self.envs.is_empty()
    }

    /// One call for the whole batch: each environment steps, is reset or is kept as `turns`
    /// says (one each). A stepping environment takes [`EnvSpec::action_size`] values a driven
    /// robot from `actions` (all the batch's, environment after environment; their values are
    /// checked by the caller, their number here) and writes what the step did to each of its
    /// robots into `out` (all the batch's robots); a reset or kept one writes nothing there. A
    /// call of the wrong shape is an error and changes nothing.
    pub fn advance(&mut self, turns: &[Turn], actions: &[f32], out: &mut [RobotOutcome]) -> Result<(), String> {
        let stepping = turns.contains(&Turn::Step);
        self.check_shape(turns, actions, out, stepping)?;
        if stepping {
            self.set_actions(turns, actions);
            self.run_rest();
        }
        let resets: Vec<(usize, u64)> = turns
            .iter()
            .enumerate()
            .filter_map(|(i, t)| if let Turn::Reset(s) = t { Some((i, *s)) } else { None })
            .collect();
        for &(i, seed) in &resets {
            load_env(&mut self.world, Env(i as u32), &seeded(&self.spec.scene, seed));
        }
        if !resets.is_empty() {
            self.world.run_schedule(PreUpdate);
        }
        if stepping || !resets.is_empty() {
            // Every environment's sense part: a kept one, sensed already in this step, is left
            // as it was.
            self.run_sense();
        }
        for &(i, _) in &resets {
            self.start_episode(i)?;
        }
        if stepping {
            self.outcomes(turns, out);
        }
        // Messages older than a step are dropped, as the app's frame does.
        let _ = self.world.run_system_cached(bevy::ecs::message::message_update_system);
        Ok(())
    }

    /// The numbers of turns, action values and outcomes a call needs (actions and outcomes only
    /// when some environment steps).
    fn check_shape(&self, turns: &[Turn], actions: &[f32], out: &[RobotOutcome], stepping: bool) -> Result<(), String> {
        let (envs, robots) = (self.envs.len(), self.robots_per_env());
        if turns.len() != envs {
            return Err(format!("{} turns for a batch of {envs} environments", turns.len()));
        }
        let values = envs * robots * self.spec.action_size();
        if stepping && actions.len() != values {
            return Err(format!(
                "{} action values for {envs} environments of {robots} robots; expected {values}",
                actions.len()
            ));
        }
        if stepping && out.len() < envs * robots {
            return Err(format!("room for {} outcomes for {} robots", out.len(), envs * robots));
        }
        Ok(())
    }

    /// Hands each stepping environment's actions to its driven robots.
    fn set_actions(&mut self, turns: &[Turn], actions: &[f32]) {
        let per_env = self.robots_per_env() * self.spec.action_size();
        for ((slot, turn), actions) in self.envs.iter().zip(turns).zip(actions.chunks_exact(per_env.max(1))) {
            if *turn != Turn::Step {
                continue;
            }
            for (r, a) in slot.robots.iter().zip(actions.chunks_exact(self.spec.action_size())) {
                let action = robot_action(&r.name, r.max_speed, r.max_turn, a);
                if let Some(mut program) = self.world.get_mut::<Program>(r.entity) {
                    program.set_action(action);
                }
            }
        }
    }

    /// What the step did to each robot of each stepping environment.
    fn outcomes(&mut self, turns: &[Turn], out: &mut [RobotOutcome]) {
        let done = match self.spec.until {
            Some(until) => until.reached_each(&mut self.world, self.envs.len()),
            None => vec![false; self.envs.len()],
        };
        let per_env = self.robots_per_env();
        for i in 0..self.envs.len() {
            if turns[i] != Turn::Step {
                continue;
            }
            self.envs[i].episode_steps += 1;
            let truncated = self.envs[i].episode_steps >= self.spec.max_steps;
            for k in 0..self.envs[i].robots.len() {
                let (now, empty) = self.counts(i, k);
                let before = std::mem::replace(&mut self.envs[i].robots[k].counts, now);
                let reward = self.spec.rewards.reward(&before, &now);
                out[i * per_env + k] = RobotOutcome { reward, terminated: done[i] || empty, truncated };
            }
        }
    }

    /// Robots each environment drives.
    fn robots_per_env(&self) -> usize {
        self.envs.first().map_or(0, |s| s.robots.len())
    }

    fn run_sense(&mut self) {
        let world = &mut self.world;
        self.schedules.get_or_insert_with(|| StepSchedules::take(world)).run_sense(world);
    }

    fn run_rest(&mut self) {
        let world = &mut self.world;
        self.schedules.get_or_insert_with(|| StepSchedules::take(world)).run_rest(world);
    }

    /// Finds environment `i`'s driven robots in its freshly loaded scene (its sense part has
    /// run) and starts their counts.
    fn start_episode(&mut self, i: usize) -> Result<(), String> {
        let env = Env(i as u32);
        let names = self.spec.robots();
        let order = self.world.resource::<RobotOrder>().of(env).to_vec();
        let mut found = Vec::with_capacity(names.len());
        for name in &names {
            let robot = order.iter().find_map(|&e| {
                let named = self.world.get::<Name>(e).is_some_and(|n| n.as_str() == name);
                named.then(|| (e, self.world.get::<Robot>(e).cloned(), self.world.get::<Program>(e).is_some()))
            });
            let Some((entity, Some(robot), program)) = robot else {
                return Err(format!("robot \"{name}\" is not in the scene's world"));
            };
            if !program {
                return Err(format!("robot \"{name}\" is not a program robot"));
            }
            found.push(Driven {
                name: name.clone(),
                entity,
                max_speed: robot.max_speed,
                max_turn: robot.max_turn,
                cell: 2.0 * robot.radius,
                visited: HashSet::new(),
                last_cell: None,
                counts: Counts::default(),
            });
        }
        self.envs[i] = Slot { robots: found, episode_steps: 0 };
        for k in 0..self.envs[i].robots.len() {
            self.envs[i].robots[k].counts = self.counts(i, k).0;
        }
        Ok(())
    }

    /// Robot `k` of environment `i`: its counts now, its visited cells and messages heard
    /// brought up to date (called once a step), and whether its battery is empty (without one,
    /// it counts as empty); a robot that lacks a part its counts read keeps its counts.
    fn counts(&mut self, i: usize, k: usize) -> (Counts, bool) {
        let q = self.counted.get_or_insert_with(|| self.world.query::<CountedItem>());
        let (world, r) = (&self.world, &mut self.envs[i].robots[k]);
        let Ok((g, o, t, b, inbox)) = q.get(world, r.entity) else {
            return (r.counts, world.get::<Battery>(r.entity).is_none_or(Battery::is_empty));
        };
        let heard = inbox.map_or(0, |inbox| inbox.0.len() as u64);
        let at = pose(t).0;
        let cell = ((at.x / r.cell).floor() as i32, (at.y / r.cell).floor() as i32);
        if r.last_cell != Some(cell) {
            r.visited.insert(cell);
            r.last_cell = Some(cell);
        }
        let counts = Counts {
            boxed: g.boxed,
            picked: g.picked,
            visited: r.visited.len(),
            collisions: o.collisions,
            heard: r.counts.heard + heard,
            battery: b.level(),
        };
        (counts, b.is_empty())
    }

    /// Writes environment `i`'s driven robots' counts ([`Counts::values`]) into `out`, one
    /// after the other.
    pub fn write_counts(&self, i: usize, out: &mut [f32]) {
        for (r, out) in self.envs[i].robots.iter().zip(out.chunks_exact_mut(Counts::NAMES.len())) {
            out.copy_from_slice(&r.counts.values());
        }
    }

    /// Writes environment `i`'s driven robots' observations into `out`, one after the other
    /// (each of the size [`EnvSpec::observation_sizes`] gives); a sensor that panics is an error
    /// naming it and the robot.
    pub fn observe(&mut self, i: usize, out: &mut [f32]) -> Result<(), String> {
        let name_of = |e: Entity| e.to_string();
        let around = Around { arena: *self.world.resource::<Arena>(), name_of: &name_of };
        let sensors = standard_sensors();
        let mut at = 0;
        for (r, view) in self.envs[i].robots.iter().zip(&self.views) {
            let n = view.size();
            let out = &mut out[at..at + n];
            view.observe(sensors, &mut self.observers, &self.world, r.entity, &around, &mut self.full, out).map_err(
                |fault| {
                    fault.describe(
                        &self.world.get::<Name>(r.entity).map_or_else(|| r.entity.to_string(), |n| n.to_string()),
                    )
                },
            )?;
            at += n;
        }
        Ok(())
    }

    /// Environment `i`'s trajectory hash so far, as `crsim run` prints it.
    pub fn hash(&self, i: usize) -> String {
        let hashes = self.world.resource::<PerEnv<TrajectoryHash>>();
        hashes.0.get(i).map_or_else(|| TrajectoryHash::default().hex(), TrajectoryHash::hex)
    }

    /// Steps environment `i` has run in its current episode.
    pub fn episode_steps(&self, i: usize) -> u64 {
        self.envs[i].episode_steps
    }

    /// Steps environment `i` has run since its scene was loaded.
    pub fn step_count(&self, i: usize) -> u64 {
        let starts = self.world.resource::<PerEnv<EnvStart>>();
        starts.step_of(Env(i as u32), self.world.resource::<SimTime>().step)
    }
}

/// `scene` with `seed`.
fn seeded(scene: &SceneFile, seed: u64) -> SceneFile {
    let mut scene = scene.clone();
    scene.seed = seed;
    scene
}

/// Whether copies of `scene` can share a world: everything they touch is their own but for
/// what the process has once — sockets (the bot link over UDP, outside bots, servers) — and
/// the kinematic model, which moves every free body of a world at once.
pub fn batchable(scene: &SceneFile) -> Result<(), String> {
    if scene.physics == crate::scene::schema::PhysicsMode::Kinematic {
        return Err("a kinematic scene steps alone in its world (physics: Rigid shares one)".into());
    }
    if scene.botlink.transport != crate::scene::schema::Transport::InProcess {
        return Err("a scene whose bot link goes over UDP steps alone in its world".into());
    }
    if scene.robots.iter().any(|r| r.outside.is_some() || matches!(r.controller, ControllerSpec::Remote { .. })) {
        return Err("a scene with outside or remote robots steps alone in its world".into());
    }
    Ok(())
}

/// The program action of one robot's values: [`ACTION_SIZE`], then its message vector's (each
/// clamped to [-1, 1]), broadcast as [`observe::message_payload`] when there are any.
pub fn robot_action(name: &str, max_speed: f32, max_turn: f32, a: &[f32]) -> RobotAction {
    let frac = |v: f32| v.clamp(-1.0, 1.0);
    let grip = match a[2] {
        g if g > 0.5 => Some(GripAction::Close),
        g if g < -0.5 => Some(GripAction::Open),
        _ => None,
    };
    RobotAction {
        name: name.to_string(),
        drive: Some([frac(a[0]) * max_speed, frac(a[1]) * max_turn, 0.0]),
        skill: None,
        grip,
        lamp: None,
        send: match &a[ACTION_SIZE..] {
            [] => Vec::new(),
            message => {
                let values: Vec<f32> = message.iter().map(|&v| frac(v)).collect();
                vec![OutMessage { to: None, content: observe::message_payload(&values) }]
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::robot::{BumpEvent, BumpSensor};
    use crate::run::headless::run_steps;
    use crate::scene::load::load_scene_file;
    use bevy::ecs::message::Messages;

    /// A call of the wrong shape is an error naming what is wrong, and the batch steps on.
    #[test]
    fn a_batch_refuses_calls_of_the_wrong_shape() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/reach.ron");
        let scene = load_scene_file(&path).unwrap().0;
        let spec = EnvSpec {
            scene,
            source: SceneSource::Generated,
            max_steps: 100,
            until: None,
            rewards: RewardWeights::default(),
            message_size: 0,
            parts: None,
        };
        let mut batch = EnvBatch::new(&spec, &[1, 2]).unwrap();
        let robots = batch.robots_per_env();
        let mut out = vec![RobotOutcome::default(); 2 * robots];
        let actions = vec![0.0; 2 * robots * ACTION_SIZE];
        let err =
            |b: &mut EnvBatch, turns: &[Turn], a: &[f32], o: &mut [RobotOutcome]| b.advance(turns, a, o).unwrap_err();
        assert_eq!(err(&mut batch, &[Turn::Step], &actions, &mut out), "1 turns for a batch of 2 environments");
        assert!(err(&mut batch, &[Turn::Step; 2], &actions[1..], &mut out).contains("action values"));
        assert!(err(&mut batch, &[Turn::Step; 2], &actions, &mut out[1..]).contains("outcomes"));
        batch.advance(&[Turn::Step; 2], &actions, &mut out).unwrap();
        assert_eq!((batch.episode_steps(0), batch.episode_steps(1)), (1, 1));
    }

    fn bump_of_first_robot(batch: &mut EnvBatch, env: usize) -> BumpSensor {
        let e = batch.envs[env].robots[0].entity;
        batch.world.get::<BumpSensor>(e).cloned().unwrap()
    }

    /// A robot that has just bumped into a wall keeps its bump (and no second event is written)
    /// when its environment is kept while another one is reset: the sense part then runs again
    /// in the same step for every environment.
    #[test]
    fn a_kept_environment_senses_its_bumps_once_in_a_step() {
        let mut scene = SceneFile::empty("bump", 3.0, 3.0);
        let mut r = RobotSpec::new("a", 0.5, 1.5, 180.0);
        r.controller = ControllerSpec::Program {};
        scene.robots = vec![r];
        let spec = EnvSpec {
            scene,
            source: SceneSource::Generated,
            max_steps: 10_000,
            until: None,
            rewards: RewardWeights::default(),
            message_size: 0,
            parts: None,
        };
        let mut batch = EnvBatch::new(&spec, &[1, 2]).unwrap();
        let mut out = vec![RobotOutcome::default(); 2];
        let ahead = [1.0, 0.0, 0.0, 1.0, 0.0, 0.0];
        let mut steps = 0;
        while !bump_of_first_robot(&mut batch, 0).bumped {
            batch.advance(&[Turn::Step, Turn::Step], &ahead, &mut out).unwrap();
            steps += 1;
            assert!(steps < 200, "the robot reaches the wall");
        }
        let bumped = bump_of_first_robot(&mut batch, 0);
        assert!(!bumped.started.is_empty());
        batch.world.resource_mut::<Messages<BumpEvent>>().clear();
        batch.advance(&[Turn::Keep, Turn::Reset(5)], &[], &mut out).unwrap();
        let again = bump_of_first_robot(&mut batch, 0);
        assert_eq!((again.bumped, &again.started, &again.touching), (true, &bumped.started, &bumped.touching));
        assert!(batch.world.resource::<Messages<BumpEvent>>().is_empty(), "no bump written twice");
    }

    /// An environment's world drops the systems it does not use — recording, the controllers
    /// of kinds it has no robot of, sonars, bevy_rapier's for what crsim's scenes do not hold,
    /// UDP polling — and its trajectory is that of the world with all of them: here a
    /// behaviour-network robot collects beside two idle program robots. (Dropped without
    /// bridging the orderings through them, the hash here differs.)
    #[test]
    fn dropping_the_unused_systems_changes_no_trajectory() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/ros2.ron");
        let mut scene = load_scene_file(&path).unwrap().0;
        scene.ros2.enabled = false;
        let build = || {
            headless_app_with(scene.clone(), SceneSource::Generated, |app| {
                app.insert_resource(InProcess);
            })
        };
        let (mut all, mut trimmed) = (build(), build());
        let dropped = drop_unused_systems(trimmed.world_mut());
        // Seven of recording's, the constant, wander, explore and remote controllers, sonars;
        // bevy_rapier's character controller, two for joints, initial impulses, mass read-back,
        // colliding sets and parents; UDP polling and its watchdog.
        assert_eq!(dropped, 21);
        run_steps(&mut all, 400);
        run_steps(&mut trimmed, 400);
        let hash = |app: &App| app.world().resource::<PerEnv<TrajectoryHash>>().only().hex();
        assert_eq!(hash(&trimmed), hash(&all));
        assert_eq!(trimmed.world().resource::<SimTime>().step, 400);
    }
}
