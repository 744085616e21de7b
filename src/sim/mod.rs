//! The environment loop (seed 003): every simulation system runs in `FixedUpdate`, one step of
//! the scene's `dt`, in six chained sets. Rapier steps inside [`SimSet::Physics`] with exactly
//! `dt`. The clock decides how many steps run per frame; the step itself never looks at the
//! wall clock.

use bevy::ecs::schedule::{ScheduleLabel, SingleThreadedExecutor};
use bevy::prelude::*;
use bevy_rapier2d::prelude::*;

pub mod bench;
pub mod clock;
pub mod hash;
pub mod headless;
pub mod report;
pub mod rng;

pub use clock::{ClockMode, SimClock, Speed};
pub use hash::TrajectoryHash;

use crate::robot::RobotOrder;

/// The stages of one step, in order.
#[derive(SystemSet, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SimSet {
    /// Sensors read the world (bump, camera, grip, power, sonar).
    Sense,
    /// Controllers decide.
    Think,
    /// Decisions become actuator commands (wheel speeds, gripper).
    Act,
    /// Rapier steps once with exactly `dt`.
    Physics,
    /// The communication model delivers messages whose receive step has come.
    Communicate,
    /// Metrics, trajectory hash, the step counter.
    Record,
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
    // A step is many small systems: handing each to the thread pool costs more in wake-ups than
    // it gains on two cores (measured: 362,529 futex calls for 5,000 steps of the explorer room).
    for schedule in [
        FixedFirst.intern(),
        FixedPreUpdate.intern(),
        FixedUpdate.intern(),
        FixedPostUpdate.intern(),
        FixedLast.intern(),
    ] {
        app.edit_schedule(schedule, |s| {
            s.set_executor(SingleThreadedExecutor::new());
        });
    }
    app.insert_resource(TimestepMode::Fixed { dt: 0.02, substeps: 1 })
        .add_plugins(
            RapierPhysicsPlugin::<NoUserData>::default()
                // The scene loader creates a fresh physics context for every scene it loads.
                .with_custom_initialization(RapierContextInitialization::NoAutomaticRapierContext)
                .in_fixed_schedule(),
        )
        .init_resource::<SimTime>()
        .init_resource::<TrajectoryHash>()
        .insert_resource(rng::SimSeed(0))
        .configure_sets(
            FixedUpdate,
            (SimSet::Sense, SimSet::Think, SimSet::Act, SimSet::Physics, SimSet::Communicate, SimSet::Record).chain(),
        )
        .configure_sets(
            FixedUpdate,
            (PhysicsSet::SyncBackend, PhysicsSet::StepSimulation, PhysicsSet::Writeback).in_set(SimSet::Physics),
        )
        .add_systems(FixedUpdate, hash_poses.in_set(SimSet::Record))
        // After every stage of the step, so all of them saw the same step number.
        .add_systems(FixedLast, advance_step);
    clock::plugin(app);
}

/// Folds every robot's pose into the trajectory hash, in robot order.
fn hash_poses(time: Res<SimTime>, order: Res<RobotOrder>, robots: Query<&Transform>, mut hash: ResMut<TrajectoryHash>) {
    let h = &mut hash.0;
    h.write_u64(time.step);
    for &e in &order.0 {
        if let Ok(t) = robots.get(e) {
            h.write_f32(t.translation.x);
            h.write_f32(t.translation.y);
            h.write_f32(t.rotation.z);
            h.write_f32(t.rotation.w);
        }
    }
}

fn advance_step(mut time: ResMut<SimTime>) {
    time.step += 1;
}
