//! Rapier's step, and in a large world on a thread of its own: rapier's step runs on one thread
//! (its own `parallel` feature made crsim no faster, see docs/performance.md), so with two cores the
//! other one would wait while it runs. The step starts as soon as the bodies have taken the act
//! stage's commands ([`PhysicsStart::Launch`]); the radio delivers meanwhile
//! ([`crate::sim::SimSystems::Communicate`]: it moves no body, and rapier reads nothing it
//! writes); the physics stage then takes rapier's parts back (`finish_step`) and writes the
//! bodies back. Rapier's parts move to the thread and back whole, so nothing can read them half
//! stepped, and a step is the same wherever it ran: the trajectory hash does not depend on the
//! thread count.

use std::panic::AssertUnwindSafe;
use std::sync::{Mutex, mpsc};
use std::time::{Duration, Instant};

use bevy::prelude::*;
use bevy_rapier2d::plugin::context::{RapierContextColliders, RapierContextJoints, RapierRigidBodySet};
use bevy_rapier2d::prelude::*;

use crate::sim::{Passes, PhysicsStart};

/// A world with at least this many bodies may step on the physics thread; a smaller one steps on
/// the simulation's thread (handing a step over and back costs tens of microseconds, about what
/// rapier takes for a few hundred bodies).
pub const OFF_THREAD_FROM: usize = 1024;

/// The physics thread pays only when the systems that run beside it take about this long or
/// more: rapier then reads and writes its bodies on one core while the simulation's thread synced
/// them on the other and will write them back, and the radio's passes share the cores with it.
/// Measured with `crsim bench` at 10,000 robots: the plain bench (its radio idle) was 1–17%
/// slower with the step always on the thread; `--network` (its radio 0.8 ms a step) level within
/// the noise (−16% to +5%, four pairs); `--comms` (its radio 6–7 ms) 2–16% faster.
pub const OFF_THREAD_FOR: Duration = Duration::from_micros(1000);

/// Where rapier's step runs. Every choice gives the same step, bit for bit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OffThread {
    /// On the physics thread when the passes have more than one thread, the world has at least
    /// [`OFF_THREAD_FROM`] bodies, and the systems beside the step (the radio's delivery) took
    /// [`OFF_THREAD_FOR`] or more the step before.
    #[default]
    Auto,
    /// On the physics thread whenever it can (no collider asks for collision events).
    Always,
    /// Always on the simulation's thread.
    Never,
}

impl OffThread {
    /// Whether a step of a world of `bodies` goes to the physics thread, with `threads` for the
    /// passes and the systems beside the step having taken `beside` the step before.
    pub fn goes_off(self, threads: usize, bodies: usize, beside: Duration) -> bool {
        match self {
            OffThread::Auto => threads > 1 && bodies >= OFF_THREAD_FROM && beside >= OFF_THREAD_FOR,
            OffThread::Always => true,
            OffThread::Never => false,
        }
    }
}

pub(super) fn plugin(app: &mut App) {
    app.init_resource::<StepThread>().add_systems(
        FixedUpdate,
        (launch_step.in_set(PhysicsStart::Launch), finish_step.in_set(PhysicsSet::StepSimulation)),
    );
}

/// Rapier's parts of a physics context: what its step reads and writes.
type Parts = (RapierContextSimulation, RapierContextColliders, RapierContextJoints, RapierRigidBodySet);

/// One context's step, to be run: its parts, moved out of the context entity, and how to step.
struct Job {
    context: Entity,
    parts: Parts,
    gravity: Vec2,
    mode: TimestepMode,
}

/// The physics thread, started the first time a step goes to it, and the steps it has been
/// handed and not yet given back.
#[derive(Resource, Default)]
pub struct StepThread {
    /// Where rapier's step runs ([`OffThread::Auto`] unless a test or a caller says otherwise).
    pub policy: OffThread,
    worker: Option<Worker>,
    /// When the step was launched, and how long the systems between its launch and its finish
    /// took the last step.
    launched: Option<Instant>,
    beside: Duration,
    /// Steps handed to the worker this step, to be taken back by [`finish_step`].
    out: usize,
    /// Steps run on the physics thread so far.
    pub off_thread: u64,
    /// Contexts waiting for [`finish_step`] to step them on the simulation's thread.
    inline: Vec<Entity>,
}

struct Worker {
    jobs: mpsc::Sender<Job>,
    /// In a mutex only for `Sync` (a resource must be); only [`finish_step`] locks it.
    done: Mutex<mpsc::Receiver<std::thread::Result<Job>>>,
}

impl Worker {
    fn start() -> std::io::Result<Worker> {
        let (jobs, inbox) = mpsc::channel::<Job>();
        let (outbox, done) = mpsc::channel();
        std::thread::Builder::new().name("crsim physics".into()).spawn(move || {
            // The thread ends when the app (and so the sender) is dropped.
            for mut job in inbox {
                let stepped = std::panic::catch_unwind(AssertUnwindSafe(move || {
                    let (simulation, colliders, joints, bodies) = &mut job.parts;
                    step(simulation, colliders, joints, bodies, job.gravity, job.mode, None);
                    job
                }));
                if outbox.send(stepped).is_err() {
                    break;
                }
            }
        })?;
        Ok(Worker { jobs, done: Mutex::new(done) })
    }
}

/// Collision and contact-force messages, for a step that may have some to write.
type Writers<'a, 'w> = (&'a MessageWriter<'w, CollisionEvent>, &'a MessageWriter<'w, ContactForceEvent>);

/// One step of rapier, as bevy_rapier's own `step_simulation` system runs it for crsim's fixed
/// step (the `()` hooks are what its `NoUserData` hooks do). Collision and contact-force events
/// are gathered only with `events` (a collider asks for them with `ActiveEvents`).
fn step(
    simulation: &mut RapierContextSimulation,
    colliders: &mut RapierContextColliders,
    joints: &mut RapierContextJoints,
    bodies: &mut RapierRigidBodySet,
    gravity: Vec2,
    mode: TimestepMode,
    events: Option<Writers>,
) {
    simulation.step_simulation(
        colliders,
        joints,
        bodies,
        gravity,
        mode,
        events,
        &(),
        &Time::default(),
        &mut SimulationToRenderTime::default(),
        None::<&mut Query<(&RapierRigidBodyHandle, &mut TransformInterpolation)>>,
    );
}

type Contexts<'w, 's> = Query<
    'w,
    's,
    (
        Entity,
        &'static mut RapierContextSimulation,
        &'static mut RapierContextColliders,
        &'static mut RapierContextJoints,
        &'static mut RapierRigidBodySet,
        &'static RapierConfiguration,
    ),
>;

/// Hands each context's step to the physics thread when the world is large, the passes have
/// more than one thread and no collider asks for collision events (those are written as
/// messages, on the simulation's thread); every other context waits for [`finish_step`].
fn launch_step(
    mut contexts: Contexts,
    mode: Res<TimestepMode>,
    passes: Res<Passes>,
    events: Query<(), With<ActiveEvents>>,
    mut thread: ResMut<StepThread>,
) {
    let thread = &mut *thread;
    for (context, mut simulation, mut colliders, mut joints, mut bodies, config) in &mut contexts {
        let off = config.physics_pipeline_active
            && events.is_empty()
            && thread.policy.goes_off(passes.threads, bodies.bodies.len(), thread.beside);
        if off && thread.worker.is_none() {
            match Worker::start() {
                Ok(worker) => thread.worker = Some(worker),
                Err(err) => warn_once!("physics: no thread of its own ({err}); rapier steps on the simulation's"),
            }
        }
        let Some(worker) = thread.worker.as_ref().filter(|_| off) else {
            thread.inline.push(context);
            continue;
        };
        let parts = (
            std::mem::take(&mut *simulation),
            std::mem::take(&mut *colliders),
            std::mem::take(&mut *joints),
            std::mem::take(&mut *bodies),
        );
        let job = Job { context, parts, gravity: config.gravity, mode: *mode };
        match worker.jobs.send(job) {
            Ok(()) => {
                thread.out += 1;
                thread.off_thread += 1;
            }
            // The thread is gone (it ends only with the app): the parts come back with the error.
            Err(mpsc::SendError(job)) => {
                (*simulation, *colliders, *joints, *bodies) = job.parts;
                thread.inline.push(context);
            }
        }
    }
    thread.launched = Some(Instant::now());
}

/// Takes back the steps the physics thread ran (a panic in rapier's step goes on here, as it
/// would have on this thread) and runs the others, as bevy_rapier's `step_simulation` would.
fn finish_step(
    mut contexts: Contexts,
    mode: Res<TimestepMode>,
    mut thread: ResMut<StepThread>,
    mut collisions: MessageWriter<CollisionEvent>,
    mut forces: MessageWriter<ContactForceEvent>,
) {
    let thread = &mut *thread;
    if let Some(launched) = thread.launched.take() {
        thread.beside = launched.elapsed();
    }
    for _ in 0..std::mem::take(&mut thread.out) {
        let Some(worker) = &thread.worker else { break };
        let done = worker.done.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).recv();
        let job = match done {
            Ok(Ok(job)) => job,
            Ok(Err(panic)) => std::panic::resume_unwind(panic),
            Err(mpsc::RecvError) => panic!("physics: the physics thread ended with a step on it"),
        };
        if let Ok((_, mut simulation, mut colliders, mut joints, mut bodies, _)) = contexts.get_mut(job.context) {
            (*simulation, *colliders, *joints, *bodies) = job.parts;
        }
    }
    for context in thread.inline.drain(..) {
        let Ok((_, mut simulation, mut colliders, mut joints, mut bodies, config)) = contexts.get_mut(context) else {
            continue;
        };
        if !config.physics_pipeline_active {
            bodies.propagate_modified_body_positions_to_colliders(&mut colliders);
            continue;
        }
        let events = Some((&collisions, &forces));
        step(&mut simulation, &mut colliders, &mut joints, &mut bodies, config.gravity, *mode, events);
        simulation.send_bevy_events(&mut collisions, &mut forces);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_step_goes_off_the_simulations_thread_only_when_it_can_hide_there() {
        let (long, short) = (OFF_THREAD_FOR, OFF_THREAD_FOR - Duration::from_micros(1));
        let auto = |threads, bodies, beside| OffThread::Auto.goes_off(threads, bodies, beside);
        assert!(auto(2, OFF_THREAD_FROM, long));
        assert!(auto(8, 100_000, Duration::from_millis(50)));
        // One thread, a small world, or too little beside it: on the simulation's thread.
        assert!(!auto(1, 100_000, long));
        assert!(!auto(2, OFF_THREAD_FROM - 1, long));
        assert!(!auto(2, 100_000, short));
        assert!(!auto(2, 100_000, Duration::ZERO));
        assert!(OffThread::Always.goes_off(1, 0, Duration::ZERO));
        assert!(!OffThread::Never.goes_off(8, 100_000, Duration::from_secs(1)));
    }
}
