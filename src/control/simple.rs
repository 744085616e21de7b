//! The two controllers that need no planning: a constant command, and a seeded random wanderer
//! (the swarm and benchmark robots, and the behaviour network's search).

use bevy::prelude::*;
use rand::RngExt;

use crate::robot::{BumpSensor, Robot};
use crate::sim::rng::SimRng;
use crate::sim::{Passes, RobotOrder, SimTime};
use crate::skills::{Executor, SkillRequest, Velocity};

/// Drives with a fixed linear (m/s), angular (rad/s) and sideways (m/s, a holonomic drive's)
/// command.
#[derive(Component, Debug, Clone, Copy, PartialEq)]
pub struct ConstantDrive {
    pub linear: f32,
    pub angular: f32,
    pub lateral: f32,
}

/// Random wandering: cruise with a gentle random curve, and after a bump back off while turning
/// for a random time. Each robot has its own seeded stream.
#[derive(Component, Debug, Clone)]
pub struct Wander {
    /// Cruise speed as a fraction of the robot's maximum.
    pub speed: f32,
    rng: SimRng,
    turning: bool,
    steps_left: u32,
    /// Curve while cruising, or turn direction while turning, as a fraction of max turn rate.
    turn: f32,
}

impl Wander {
    pub fn new(speed: f32, rng: SimRng) -> Self {
        Self { speed, rng, turning: false, steps_left: 0, turn: 0.0 }
    }

    /// Whether the robot is turning away from an obstacle.
    pub fn is_turning(&self) -> bool {
        self.turning
    }

    /// One decision: returns (linear, angular) as fractions of the robot's maxima.
    pub fn decide(&mut self, bumped: bool, dt: f32) -> (f32, f32) {
        let steps = |s: f32| ((s / dt).round() as u32).max(1);
        if bumped && !self.turning {
            self.turning = true;
            self.turn = if self.rng.random_bool(0.5) { 1.0 } else { -1.0 };
            self.steps_left = steps(self.rng.random_range(0.4..1.2));
        } else if self.steps_left == 0 {
            self.turning = false;
            self.turn = self.rng.random_range(-0.3..0.3);
            self.steps_left = steps(self.rng.random_range(1.0..3.0));
        }
        self.steps_left = self.steps_left.saturating_sub(1);
        if self.turning { (-0.1, self.turn) } else { (self.speed, self.turn) }
    }
}

/// Asks for a velocity skill unless the same one is already running.
fn request_velocity(executor: &Executor, request: &mut SkillRequest, skill: Velocity) {
    if !executor.0.runs_velocity(&skill) {
        request.set(skill);
    }
}

pub(super) fn constant_drive(mut robots: Query<(&ConstantDrive, &Executor, &mut SkillRequest)>) {
    for (c, executor, mut request) in &mut robots {
        request_velocity(executor, &mut request, Velocity { linear: c.linear, angular: c.angular, lateral: c.lateral });
    }
}

pub(super) fn wander(
    time: Res<SimTime>,
    passes: Res<Passes>,
    order: Res<RobotOrder>,
    mut robots: Query<(&Robot, &BumpSensor, &mut Wander, &Executor, &mut SkillRequest)>,
) {
    // Each robot draws from its own stream and writes only its own request.
    passes.each_mut(order.0.len(), &mut robots, |(robot, bump, mut wander, executor, mut request)| {
        let (lin, ang) = wander.decide(bump.bumped, time.dt);
        let skill = Velocity { linear: lin * robot.max_speed, angular: ang * robot.max_turn, lateral: 0.0 };
        request_velocity(executor, &mut request, skill);
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::rng::stream;

    #[test]
    fn a_bump_starts_a_turn_and_cruising_resumes() {
        let mut w = Wander::new(0.8, stream(1, "wander", 0));
        let (lin, _) = w.decide(false, 0.02);
        assert_eq!(lin, 0.8);
        let (lin, ang) = w.decide(true, 0.02);
        assert!(lin < 0.0 && ang.abs() == 1.0);
        assert!(w.is_turning());
        let mut steps = 0;
        while w.is_turning() {
            w.decide(false, 0.02);
            steps += 1;
            assert!(steps <= 61, "turn lasts at most 1.2 s");
        }
        assert!(steps >= 19, "turn lasts at least 0.4 s, got {steps} steps");
    }

    #[test]
    fn same_seed_same_decisions() {
        let run = |seed| {
            let mut w = Wander::new(0.5, stream(seed, "wander", 3));
            (0..500).map(|i| w.decide(i % 97 == 0, 0.02)).collect::<Vec<_>>()
        };
        assert_eq!(run(9), run(9));
        assert_ne!(run(9), run(10));
    }
}
