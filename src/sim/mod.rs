//! The environment loop (seed 003), as the ground floor every subsystem builds on: the stages of
//! one step and their sub-stages as nested system sets (declared here and only here), simulated
//! time, the clock that decides how many steps run per frame, seeded random streams, the
//! trajectory hash, the stable robot order and the registry of report sections.
//!
//! Every simulation system runs in the fixed loop, one step of the scene's `dt`, in six chained
//! stages: the sense stage in [`FixedSense`], the five others in `FixedUpdate` right after it.
//! Rapier steps inside [`SimSystems::Physics`] with exactly `dt`; in a large world its work
//! starts before the radio's ([`PhysicsStart`]) and runs on a thread of its own meanwhile. The
//! step itself never looks at the wall clock.

use bevy::ecs::batching::BatchingStrategy;
use bevy::ecs::intern::Interned;
use bevy::ecs::query::{IterQueryData, QueryFilter, QueryItem};
use bevy::ecs::schedule::{ScheduleLabel, SingleThreadedExecutor};
use bevy::prelude::*;
use bevy_rapier2d::prelude::PhysicsSet;

pub mod clock;
pub mod env;
pub mod hash;
pub mod optional;
pub mod order;
pub mod output;
pub mod report;
pub mod rng;
pub mod stages;
pub mod stop;

pub use clock::{ClockMode, SimClock, Speed, StepGate};
pub use env::{Env, EnvStart, PerEnv};
pub use hash::TrajectoryHash;
pub use optional::{add_optional_systems, any_with, drop_unused_systems};
pub use order::RobotOrder;
pub use report::{ReportSections, SectionFn, add_report_section};

/// The fixed schedule of the sense stage ([`SimSystems::Sense`]), run in every step between
/// `FixedPreUpdate` and `FixedUpdate`. A schedule of its own lets a caller run a step in two
/// parts — the sense stage, then, once the actions are in, the rest — each running only its own
/// systems ([`StepSchedules`]).
#[derive(ScheduleLabel, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FixedSense;

/// The stages of one step, in order: the first in [`FixedSense`], the others in `FixedUpdate`.
#[derive(SystemSet, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SimSystems {
    /// Sensors read the world (bump, camera, grip, power, sonar).
    Sense,
    /// Controllers decide.
    Think,
    /// Decisions become actuator commands (wheel speeds, gripper).
    Act,
    /// The communication model delivers messages whose receive step has come; a send's range is
    /// measured from where the robots were when it was sent, before the physics step moves them.
    /// Rapier's world may be out being stepped meanwhile ([`PhysicsStart`]): systems here must
    /// not read it.
    Communicate,
    /// Rapier steps once with exactly `dt` (the bodies took the act stage's commands in
    /// [`PhysicsStart`], before the radio), and the world takes the bodies' new poses.
    Physics,
    /// Metrics, trajectory hash, the watchdog.
    Record,
}

/// Inside [`SimSystems::Sense`].
#[derive(SystemSet, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SenseSystems {
    /// Bodies that ride along are moved with their carrier (held pens).
    Bodies,
    /// The spatial index catches up with what changed outside the physics step.
    Index,
    /// Every sensor reads the world as it now stands.
    Sensors,
}

/// Inside [`SimSystems::Think`].
#[derive(SystemSet, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ThinkSystems {
    /// What came from outside the process this step (UDP packets, program actions).
    Receive,
    /// Controllers decide, one kind after another in a fixed order.
    Control,
}

/// Inside [`SimSystems::Act`].
#[derive(SystemSet, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ActSystems {
    /// Skill executors turn skills into commands.
    Skills,
    /// The bot manager transmits the commands as packets to the robots.
    Transmit,
    /// The actuators take their commands: gripper, drive, battery.
    Actuate,
}

/// Between [`SimSystems::Act`] and [`SimSystems::Communicate`]: the bodies take the act stage's
/// commands (bevy_rapier's `PhysicsSet::SyncBackend`), then rapier's step starts. In a large world
/// it runs on a thread of its own while the radio delivers (the radio moves no body and rapier
/// reads nothing the radio writes), and [`SimSystems::Physics`] waits for it; otherwise it runs
/// there.
#[derive(SystemSet, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PhysicsStart {
    /// Bevy → rapier: the bodies' commands, poses and changes.
    Sync,
    /// Rapier's step is handed to its thread.
    Launch,
}

/// Scene loading and the servers outside the step, in `PreUpdate`, every frame.
#[derive(SystemSet, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LoadSystems {
    /// A pending scene replaces the running one.
    Load,
    /// Subsystems set up their scene-wide state for the scene just loaded.
    React,
    /// Outside programs rejoin a freshly loaded scene (their registrations carry over).
    Rejoin,
    /// Servers take new connections and requests that are not a step's exchange.
    Serve,
}

/// Robots per chunk of a parallel pass.
pub const PASS_CHUNK: usize = 256;

/// How the per-robot passes of a step (bump and camera sensing, the radio's link and range
/// decisions, the network robots' thinking) run: with `threads` 1 on the simulation's
/// thread, with more in fixed chunks of [`PASS_CHUNK`] robots on Bevy's compute pool. Each robot
/// writes only its own outputs and whatever is shared (events, radio queues) is written
/// afterwards in robot order, so the results are the same for any thread count.
#[derive(Resource, Debug, Clone, Copy, PartialEq, Eq)]
pub struct Passes {
    pub threads: usize,
}

impl Default for Passes {
    fn default() -> Self {
        let chosen = THREADS.load(std::sync::atomic::Ordering::Relaxed);
        let threads = if chosen > 0 { chosen } else { cores() };
        Passes { threads }
    }
}

static THREADS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// The machine's cores (1 where it cannot tell).
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The threads a run of `robots` robots uses unless told: one per core when the per-robot
/// passes have more than one chunk to share out, else one (a second pool thread then only costs
/// wake-ups: Bevy's own parallel systems hand it work every frame).
pub fn default_threads(robots: usize) -> usize {
    if robots > PASS_CHUNK { cores() } else { 1 }
}

/// The most threads a run takes: four a core. The per-robot passes are work for the CPU, so more
/// threads than that only wait, and each costs the OS a stack (`--threads 65535` under an
/// address-space cap was a panic deep inside Bevy's task pool).
pub fn max_threads() -> usize {
    cores().saturating_mul(4).max(4)
}

/// Sets the threads every run of this process uses (`--threads N`, [`default_threads`] by
/// default): the passes' thread count and the size of Bevy's compute pool, which Bevy itself
/// would make a quarter of the cores or one thread. Call it before the first app is built (the
/// pool is made once per process); 0 counts as 1. An error when `n` is more than
/// [`max_threads`], or when the OS refuses a thread.
pub fn set_threads(n: usize) -> Result<(), String> {
    let n = n.max(1);
    if n > max_threads() {
        return Err(format!(
            "--threads {n}: this machine has {} cores, and a run takes at most {} threads (four a core)",
            cores(),
            max_threads()
        ));
    }
    THREADS.store(n, std::sync::atomic::Ordering::Relaxed);
    if bevy::tasks::ComputeTaskPool::try_get().is_none() {
        let pool = task_pool(n, "Compute Task Pool")?;
        bevy::tasks::ComputeTaskPool::get_or_init(|| pool);
    }
    Ok(())
}

/// A task pool of `n` threads named `name`, or why the OS would not start them: Bevy's builder
/// panics on a thread it cannot spawn, and the panic becomes this error (its message kept out
/// of stderr while the pool is built).
pub fn task_pool(n: usize, name: &str) -> Result<bevy::tasks::TaskPool, String> {
    let quiet = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let built = std::panic::catch_unwind(|| {
        bevy::tasks::TaskPoolBuilder::new().num_threads(n).thread_name(name.to_string()).build()
    });
    std::panic::set_hook(quiet);
    built.map_err(|panic| {
        let why = panic.downcast_ref::<&str>().copied().or_else(|| panic.downcast_ref::<String>().map(String::as_str));
        format!("cannot start {n} threads: the system refused one ({})", why.unwrap_or("no reason given"))
    })
}

impl Passes {
    /// Everything on the calling thread.
    pub const ONE: Passes = Passes { threads: 1 };

    /// Whether a pass over `robots` robots runs in parallel (a single chunk never does).
    pub fn parallel(&self, robots: usize) -> bool {
        self.threads > 1 && robots > PASS_CHUNK
    }

    /// Runs `f` on every item of `query`: in fixed chunks of [`PASS_CHUNK`] on the compute pool
    /// when a scene of `robots` robots makes it worth it, else in turn. Each item must be all `f`
    /// writes, so the result is the same either way.
    pub fn each_mut<'q, 's, D: IterQueryData, F: QueryFilter>(
        &self,
        robots: usize,
        query: &'q mut Query<'_, 's, D, F>,
        f: impl Fn(QueryItem<'q, 's, D>) + Send + Sync + Clone,
    ) {
        self.each_mut_with(robots, query, || (), move |_, item| f(item));
    }

    /// As [`Passes::each_mut`], with scratch space from `init` for each chunk.
    pub fn each_mut_with<'q, 's, D: IterQueryData, F: QueryFilter, T>(
        &self,
        robots: usize,
        query: &'q mut Query<'_, 's, D, F>,
        init: impl Fn() -> T + Send + Sync + Clone,
        f: impl Fn(&mut T, QueryItem<'q, 's, D>) + Send + Sync + Clone,
    ) {
        if self.parallel(robots) {
            query.par_iter_mut().batching_strategy(BatchingStrategy::fixed(PASS_CHUNK)).for_each_init(init, f);
        } else {
            let mut scratch = init();
            query.iter_mut().for_each(|item| f(&mut scratch, item));
        }
    }

    /// `f` on `items` in fixed chunks of [`PASS_CHUNK`] (on the compute pool when `items` has
    /// more than one chunk and there is more than one thread), each call given the index of its
    /// chunk's first item; the results in chunk order, the same either way.
    pub fn map_chunks<T: Sync, R: Send + 'static>(
        &self,
        items: &[T],
        f: impl Fn(usize, &[T]) -> R + Send + Sync,
    ) -> Vec<R> {
        use bevy::tasks::{ComputeTaskPool, ParallelSlice};
        if self.parallel(items.len()) {
            items.par_chunk_map(ComputeTaskPool::get(), PASS_CHUNK, |chunk, slice| f(chunk * PASS_CHUNK, slice))
        } else {
            items.chunks(PASS_CHUNK).enumerate().map(|(chunk, slice)| f(chunk * PASS_CHUNK, slice)).collect()
        }
    }

    /// As [`Passes::map_chunks`], with each chunk of `items` lent mutably to `f`.
    pub fn map_chunks_mut<T: Send, R: Send + 'static>(
        &self,
        mut items: &mut [T],
        f: impl Fn(usize, &mut [T]) -> R + Send + Sync,
    ) -> Vec<R> {
        use bevy::tasks::{ComputeTaskPool, ParallelSliceMut};
        if self.parallel(items.len()) {
            items.par_chunk_map_mut(ComputeTaskPool::get(), PASS_CHUNK, |chunk, slice| f(chunk * PASS_CHUNK, slice))
        } else {
            items.chunks_mut(PASS_CHUNK).enumerate().map(|(chunk, slice)| f(chunk * PASS_CHUNK, slice)).collect()
        }
    }
}

/// Simulated time: the number of completed steps and the step length.
#[derive(Resource, Debug, Clone, Copy, PartialEq)]
pub struct SimTime {
    /// Steps completed; during a step, the index of the step being run.
    pub step: u64,
    /// Seconds per step, as the physics uses it.
    pub dt: f32,
    /// Seconds per step exactly as the scene wrote it, for reporting time.
    pub dt_exact: f64,
}

impl Default for SimTime {
    fn default() -> Self {
        Self { step: 0, dt: 0.02, dt_exact: 0.02 }
    }
}

impl SimTime {
    /// Simulated seconds elapsed.
    pub fn seconds(&self) -> f64 {
        self.step as f64 * self.dt_exact
    }
}

pub(super) fn plugin(app: &mut App) {
    app.init_schedule(FixedSense);
    app.world_mut().resource_mut::<bevy::app::FixedMainScheduleOrder>().insert_after(FixedPreUpdate, FixedSense);
    // A step is many small systems: handing each to the thread pool costs more in wake-ups than
    // it gains on two cores (measured: 362,529 futex calls for 5,000 steps of the explorer room).
    for schedule in [
        FixedFirst.intern(),
        FixedPreUpdate.intern(),
        FixedSense.intern(),
        FixedUpdate.intern(),
        FixedPostUpdate.intern(),
        FixedLast.intern(),
    ] {
        app.edit_schedule(schedule, |s| {
            s.set_executor(SingleThreadedExecutor::new());
        });
    }
    app.init_resource::<SimTime>()
        .init_resource::<Passes>()
        .init_resource::<PerEnv<TrajectoryHash>>()
        .init_resource::<PerEnv<EnvStart>>()
        .init_resource::<RobotOrder>()
        .init_resource::<StepGate>()
        .init_resource::<ReportSections>()
        .insert_resource(PerEnv::<rng::SimSeed>::one())
        .configure_sets(
            FixedUpdate,
            (SimSystems::Think, SimSystems::Act, SimSystems::Communicate, SimSystems::Physics, SimSystems::Record)
                .chain(),
        )
        .configure_sets(
            FixedSense,
            (SenseSystems::Bodies, SenseSystems::Index, SenseSystems::Sensors).chain().in_set(SimSystems::Sense),
        )
        .configure_sets(FixedUpdate, (ThinkSystems::Receive, ThinkSystems::Control).chain().in_set(SimSystems::Think))
        .configure_sets(
            FixedUpdate,
            (ActSystems::Skills, ActSystems::Transmit, ActSystems::Actuate).chain().in_set(SimSystems::Act),
        )
        .configure_sets(
            FixedUpdate,
            (PhysicsStart::Sync, PhysicsStart::Launch).chain().after(SimSystems::Act).before(SimSystems::Communicate),
        )
        .configure_sets(FixedUpdate, PhysicsSet::SyncBackend.in_set(PhysicsStart::Sync))
        .configure_sets(FixedUpdate, (PhysicsSet::StepSimulation, PhysicsSet::Writeback).in_set(SimSystems::Physics))
        .configure_sets(
            PreUpdate,
            (LoadSystems::Load, LoadSystems::React, LoadSystems::Rejoin, LoadSystems::Serve).chain(),
        )
        .add_systems(FixedUpdate, hash_poses.in_set(SimSystems::Record))
        // After every stage of the step, so all of them saw the same step number.
        .add_systems(FixedLast, advance_step);
    clock::plugin(app);
}

/// A world's fixed schedules held outside its [`Schedules`], for a caller that runs a step in two
/// parts again and again — the sense stage ([`FixedSense`]), then the rest once the caller's
/// actions are in — as the program server splits it for a program in lock-step: run one after
/// the other, the parts are the whole step, system for system. Measured with cachegrind on
/// `crsim envbench --worlds 64 --robots 1 --threads 1` (release), instructions per world-step:
/// `World::run_schedule` takes a schedule out of the map and puts it back on every run, copying
/// it both ways, and holding them took 94,375 to 84,051; the sense stage in a schedule of its
/// own, instead of both parts running all of `FixedUpdate` under run conditions, 84,043 to
/// 74,853. While they are out, the world's `Main` schedule must not run:
/// [`StepSchedules::put_back`] first.
pub struct StepSchedules {
    first: Schedule,
    pre: Schedule,
    sense: Schedule,
    update: Schedule,
    post: Schedule,
    last: Schedule,
}

impl StepSchedules {
    /// Takes the fixed schedules out of `world` (an empty one for any it lacks).
    pub fn take(world: &mut World) -> StepSchedules {
        let mut schedules = world.resource_mut::<Schedules>();
        let mut out =
            |label: Interned<dyn ScheduleLabel>| schedules.remove(label).unwrap_or_else(|| Schedule::new(label));
        StepSchedules {
            first: out(FixedFirst.intern()),
            pre: out(FixedPreUpdate.intern()),
            sense: out(FixedSense.intern()),
            update: out(FixedUpdate.intern()),
            post: out(FixedPostUpdate.intern()),
            last: out(FixedLast.intern()),
        }
    }

    /// Puts the schedules back into `world`.
    pub fn put_back(self, world: &mut World) {
        let mut schedules = world.resource_mut::<Schedules>();
        for schedule in [self.first, self.pre, self.sense, self.update, self.post, self.last] {
            schedules.insert(schedule);
        }
    }

    /// Runs the first part of a step on `world`: its fixed schedules up to and including the
    /// sense stage.
    pub fn run_sense(&mut self, world: &mut World) {
        self.first.run(world);
        self.pre.run(world);
        self.sense.run(world);
    }

    /// Runs the rest of a step whose sense part ran.
    pub fn run_rest(&mut self, world: &mut World) {
        self.update.run(world);
        self.post.run(world);
        self.last.run(world);
    }
}

/// Folds every robot's pose into its environment's trajectory hash, with the environment's own
/// step, robot by robot in order.
fn hash_poses(
    time: Res<SimTime>,
    starts: Res<PerEnv<EnvStart>>,
    order: Res<RobotOrder>,
    robots: Query<&Transform>,
    mut hashes: ResMut<PerEnv<TrajectoryHash>>,
) {
    for (env, of_env) in order.envs() {
        let h = &mut hashes.reach(env).0;
        h.write_u64(starts.step_of(env, time.step));
        for &e in of_env {
            if let Ok(t) = robots.get(e) {
                h.write_f32(t.translation.x);
                h.write_f32(t.translation.y);
                h.write_f32(t.rotation.z);
                h.write_f32(t.rotation.w);
            }
        }
    }
}

fn advance_step(mut time: ResMut<SimTime>) {
    time.step += 1;
}
