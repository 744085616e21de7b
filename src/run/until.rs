//! Stop conditions for a headless run (`crsim run --until`): a run of at most `--steps` steps
//! that ends at the first step after which its task is done.

use bevy::prelude::*;

use crate::sim::{Env, SimClock, SimSystems, SimTime};

use crate::control::explore::{Explorer, Phase};
use crate::robot::Robot;
use crate::robot::registry::SensorFaults;
use crate::world::{Boxed, Pen};

/// What ends a run before its last step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize)]
pub enum Until {
    /// Every pen of the scene lies in a box (a scene without pens never stops for this).
    PensBoxed,
    /// Every explorer is home with its room explored (a scene without explorers never stops).
    Explored,
}

impl Until {
    /// The task is done in the world as it stands (a world of one environment).
    pub fn reached(self, world: &mut World) -> bool {
        self.reached_each(world, 1)[0]
    }

    /// Whether the task is done in each of the world's `envs` environments as they stand.
    pub fn reached_each(self, world: &mut World, envs: usize) -> Vec<bool> {
        // (any of it there, none of it left undone) for each environment.
        let mut seen = vec![(false, false); envs];
        let mut note = |env: &Env, done: bool| {
            if let Some(s) = seen.get_mut(env.index()) {
                *s = (true, s.1 || !done);
            }
        };
        match self {
            Until::PensBoxed => {
                let mut pens = world.query_filtered::<(Has<Boxed>, &Env), (With<Pen>, Without<Robot>)>();
                pens.iter(world).for_each(|(boxed, env)| note(env, boxed));
            }
            Until::Explored => {
                let mut explorers = world.query::<(&Explorer, &Env)>();
                explorers.iter(world).for_each(|(ex, env)| note(env, ex.phase == Phase::Done));
            }
        }
        seen.into_iter().map(|(any, undone)| any && !undone).collect()
    }

    /// The name used on the command line and in sweep files.
    pub fn name(self) -> &'static str {
        match self {
            Until::PensBoxed => "pens-boxed",
            Until::Explored => "explored",
        }
    }
}

/// The stop condition of this run and the step at which it was reached.
#[derive(Resource, Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RunUntil {
    pub until: Option<Until>,
    /// The step after which the condition first held; no step runs after it.
    pub reached_at: Option<u64>,
}

pub(super) fn plugin(app: &mut App) {
    // Only runs that asked for a condition pay for the check (an exclusive system each step).
    let asked = |u: Res<RunUntil>| u.until.is_some() && u.reached_at.is_none();
    app.init_resource::<RunUntil>().add_systems(FixedUpdate, check_until.after(SimSystems::Record).run_if(asked));
    app.add_systems(FixedUpdate, pause_on_a_fault.after(check_until).run_if(resource_changed::<SensorFaults>));
}

/// After a step in which a sensor failed for the first time: no step runs after it, and the
/// clock pauses (a headless run then stops, keeping what it has done; the app shows the error in
/// its log and may go on when unpaused).
fn pause_on_a_fault(faults: Res<SensorFaults>, mut clock: ResMut<SimClock>, mut fixed: ResMut<Time<Fixed>>) {
    if faults.0.is_empty() {
        return;
    }
    clock.paused = true;
    let left = fixed.overstep();
    fixed.discard_overstep(left);
}

/// After each step: when the condition holds, note the step and end the frame's fixed loop, so
/// no step runs after the one that finished the task.
fn check_until(world: &mut World) {
    let Some(until) = world.resource::<RunUntil>().until else { return };
    if !until.reached(world) {
        return;
    }
    let step = world.resource::<SimTime>().step;
    world.resource_mut::<RunUntil>().reached_at = Some(step);
    let mut fixed = world.resource_mut::<Time<Fixed>>();
    let left = fixed.overstep();
    fixed.discard_overstep(left);
}
