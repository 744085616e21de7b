//! Where a step's wall time goes: a clock read between the sub-stages of the step, summed over
//! the run. `crsim bench` adds it and prints the milliseconds per step of each stage; nothing
//! else runs it (a clock read per stage costs about a microsecond a step).

use std::time::{Duration, Instant};

use bevy::prelude::*;
use bevy_rapier2d::prelude::PhysicsSet;

use super::{ActSystems, FixedSense, PhysicsStart, SenseSystems, SimSystems, ThinkSystems};

/// The timed parts of a step, in the order they run.
pub const STAGES: [&str; 13] = [
    "sense_bodies",
    "sense_index",
    "sensors",
    "receive",
    "control",
    "skills",
    "transmit",
    "actuate",
    "physics_sync",
    "communicate",
    "physics_step",
    "physics_writeback",
    "record",
];

/// Wall time spent in each of [`STAGES`] over the steps timed.
#[derive(Resource, Debug, Clone, Copy, Default)]
pub struct StageTimes {
    pub totals: [Duration; STAGES.len()],
    pub steps: u64,
    last: Option<Instant>,
}

impl StageTimes {
    /// Milliseconds per step of each stage, by name.
    pub fn per_step_ms(&self) -> impl Iterator<Item = (&'static str, f64)> + '_ {
        let steps = self.steps.max(1) as f64;
        STAGES.iter().zip(&self.totals).map(move |(name, d)| (*name, d.as_secs_f64() * 1e3 / steps))
    }

    /// The time since the last mark goes to stage `i - 1`; mark 0 starts a step.
    fn mark(&mut self, i: usize) {
        let now = Instant::now();
        if i > 0
            && let Some(last) = self.last
        {
            self.totals[i - 1] += now - last;
        }
        if i == STAGES.len() {
            self.steps += 1;
        }
        self.last = Some(now);
    }
}

fn mark<const I: usize>(mut times: ResMut<StageTimes>) {
    times.mark(I);
}

/// Times the stages of every step from now on.
pub fn plugin(app: &mut App) {
    app.init_resource::<StageTimes>()
        .add_systems(
            FixedSense,
            (
                mark::<0>.before(SenseSystems::Bodies),
                mark::<1>.after(SenseSystems::Bodies).before(SenseSystems::Index),
                mark::<2>.after(SenseSystems::Index).before(SenseSystems::Sensors),
            ),
        )
        .add_systems(
            FixedUpdate,
            (
                // The sense stage's schedule has just run.
                mark::<3>.before(SimSystems::Think),
                mark::<4>.after(ThinkSystems::Receive).before(ThinkSystems::Control),
                mark::<5>.after(SimSystems::Think).before(ActSystems::Skills),
                mark::<6>.after(ActSystems::Skills).before(ActSystems::Transmit),
                mark::<7>.after(ActSystems::Transmit).before(ActSystems::Actuate),
                mark::<8>.after(SimSystems::Act).before(PhysicsStart::Sync),
                // Rapier's step has started (on its own thread in a large world) when the radio's
                // stage begins; `physics_step` is then what is left of it.
                mark::<9>.after(PhysicsStart::Launch).before(SimSystems::Communicate),
                mark::<10>.after(SimSystems::Communicate).before(PhysicsSet::StepSimulation),
                mark::<11>.after(PhysicsSet::StepSimulation).before(PhysicsSet::Writeback),
                mark::<12>.after(SimSystems::Physics).before(SimSystems::Record),
                mark::<13>.after(SimSystems::Record),
            ),
        );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_mark_closes_the_stage_before_it_and_the_last_counts_a_step() {
        let mut times = StageTimes::default();
        for step in 0..3 {
            for i in 0..=STAGES.len() {
                // A stage's work.
                if i == 4 {
                    std::thread::sleep(Duration::from_millis(2));
                }
                times.mark(i);
            }
            assert_eq!(times.steps, step + 1);
        }
        let ms: Vec<(&str, f64)> = times.per_step_ms().collect();
        assert_eq!(ms.len(), STAGES.len());
        // The sleep falls between marks 3 and 4: the fourth stage, "receive".
        assert_eq!(ms[3].0, "receive");
        assert!(ms[3].1 >= 2.0, "{ms:?}");
        assert!(ms.iter().enumerate().all(|(i, (_, t))| i == 3 || *t < 2.0), "{ms:?}");
    }
}
