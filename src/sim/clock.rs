//! How many fixed steps run per frame. Pause, single step and speed only change that number;
//! the steps themselves are identical, so a run's result depends on the scene and seed alone.
//!
//! Bevy's virtual clock is kept paused and the fixed loop is fed exactly `n × dt` of overstep per
//! frame, where `n` comes from [`SimClock::steps_this_frame`].

use std::time::{Duration, Instant};

use bevy::app::RunFixedMainLoopSystems;
use bevy::prelude::*;

/// Simulation speed relative to real time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Speed {
    /// Simulated seconds per real second (0.1 up to 100).
    Factor(f64),
    /// As many steps as fit in the frame budget.
    Max,
}

/// Holds the loop before its next step while something outside the simulation is not ready
/// (robot programs still to register before step 0). Queued steps wait; nothing is lost.
#[derive(Resource, Debug, Clone, Default, PartialEq, Eq)]
pub struct StepGate {
    /// The program robots the loop waits for, for the panel; empty when they are all there.
    pub waiting_for: Vec<String>,
    /// The external robots whose UDP controllers have not spoken yet (in lock-step runs).
    pub outside: Vec<String>,
}

impl StepGate {
    pub fn held(&self) -> bool {
        !self.waiting_for.is_empty() || !self.outside.is_empty()
    }

    /// What the loop waits for, in words.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if !self.waiting_for.is_empty() {
            parts.push(self.waiting_for.join(", "));
        }
        if !self.outside.is_empty() {
            parts.push(format!("the UDP controllers of {}", self.outside.join(", ")));
        }
        parts.join("; ")
    }
}

/// Whether steps follow the wall clock (the app, `run --realtime`) or only explicit requests
/// (headless runs and tests).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClockMode {
    RealTime,
    Manual,
}

/// The loop's pacing state. Systems never read it to decide behaviour.
#[derive(Resource, Debug, Clone)]
pub struct SimClock {
    pub mode: ClockMode,
    pub paused: bool,
    pub speed: Speed,
    /// Wall-clock seconds per frame the fixed loop may use when running as fast as it goes.
    pub frame_budget_s: f64,
    /// Wall-clock seconds per frame the loop may use to keep up with a speed factor; beyond
    /// it the backlog is dropped and the run falls behind real time.
    pub catch_up_budget_s: f64,
    queued: u64,
    accumulator: f64,
    /// Moving average of wall seconds per step.
    step_cost_s: f64,
    frame_start: Option<Instant>,
    frame_steps: u64,
    /// Steps the loop could run per wall second (from the measured cost of a step).
    pub capacity_steps_per_s: f64,
    /// Steps actually run per wall second, over the last half second.
    pub actual_steps_per_s: f64,
    window_steps: u64,
    window_time: f64,
}

impl Default for SimClock {
    fn default() -> Self {
        Self {
            mode: ClockMode::Manual,
            paused: false,
            speed: Speed::Factor(1.0),
            frame_budget_s: 0.04,
            catch_up_budget_s: 0.2,
            queued: 0,
            accumulator: 0.0,
            step_cost_s: 1e-4,
            frame_start: None,
            frame_steps: 0,
            capacity_steps_per_s: 0.0,
            actual_steps_per_s: 0.0,
            window_steps: 0,
            window_time: 0.0,
        }
    }
}

impl SimClock {
    /// A clock that follows the wall clock at normal speed.
    pub fn real_time() -> Self {
        Self { mode: ClockMode::RealTime, ..default() }
    }

    /// Runs `n` more steps: in manual mode on the next update, in real-time mode as single
    /// steps while paused.
    pub fn queue_steps(&mut self, n: u64) {
        self.queued = self.queued.saturating_add(n);
    }

    /// Steps still queued.
    pub fn queued(&self) -> u64 {
        self.queued
    }

    /// Forgets queued steps and accumulated time (used on reset).
    pub fn clear(&mut self) {
        self.queued = 0;
        self.accumulator = 0.0;
    }

    /// How many steps of `dt` seconds to run in a frame that took `real_dt` seconds.
    pub fn steps_this_frame(&mut self, real_dt: f64, dt: f64) -> u64 {
        let cost = self.step_cost_s.max(1e-7);
        let budget_steps = ((self.frame_budget_s / cost) as u64).max(1);
        let catch_up_steps = ((self.catch_up_budget_s / cost) as u64).max(1);
        match self.mode {
            ClockMode::Manual => std::mem::take(&mut self.queued),
            ClockMode::RealTime if self.paused => {
                self.accumulator = 0.0;
                let n = self.queued.min(budget_steps);
                self.queued -= n;
                n
            }
            ClockMode::RealTime => {
                // Queued single steps are meaningless while running.
                self.queued = 0;
                match self.speed {
                    Speed::Max => budget_steps,
                    Speed::Factor(f) => {
                        // A long frame (window dragged, machine busy) must not cause a burst.
                        self.accumulator += real_dt.min(0.25) * f;
                        let wanted = (self.accumulator / dt).floor() as u64;
                        let n = wanted.min(catch_up_steps);
                        if n < wanted {
                            // Too slow to keep up: drop the backlog instead of spiralling.
                            self.accumulator = 0.0;
                        } else {
                            self.accumulator -= n as f64 * dt;
                        }
                        n
                    }
                }
            }
        }
    }

    fn record_frame(&mut self, elapsed: Duration) {
        if self.frame_steps > 0 {
            let per_step = elapsed.as_secs_f64() / self.frame_steps as f64;
            self.step_cost_s = 0.8 * self.step_cost_s + 0.2 * per_step;
            self.capacity_steps_per_s = 1.0 / self.step_cost_s.max(1e-9);
        }
    }

    fn record_rate(&mut self, real_dt: f64, steps: u64) {
        self.window_steps += steps;
        self.window_time += real_dt;
        if self.window_time >= 0.5 {
            self.actual_steps_per_s = self.window_steps as f64 / self.window_time;
            self.window_steps = 0;
            self.window_time = 0.0;
        }
    }
}

pub(super) fn plugin(app: &mut App) {
    app.init_resource::<SimClock>().add_systems(Startup, pause_virtual_time).add_systems(
        RunFixedMainLoop,
        (
            feed_fixed_loop.in_set(RunFixedMainLoopSystems::BeforeFixedMainLoop),
            measure_fixed_loop.in_set(RunFixedMainLoopSystems::AfterFixedMainLoop),
        ),
    );
}

/// Only [`feed_fixed_loop`] may add time to the fixed loop.
fn pause_virtual_time(mut virt: ResMut<Time<Virtual>>) {
    virt.pause();
}

fn feed_fixed_loop(
    mut clock: ResMut<SimClock>,
    gate: Res<StepGate>,
    real: Res<Time<Real>>,
    mut fixed: ResMut<Time<Fixed>>,
) {
    let step = fixed.timestep();
    let n = if gate.held() {
        // Steps asked for meanwhile wait in the queue; real time does not pile up.
        clock.accumulator = 0.0;
        0
    } else {
        clock.steps_this_frame(real.delta_secs_f64(), step.as_secs_f64())
    };
    clock.record_rate(real.delta_secs_f64(), n);
    // Whole steps only: the loop then runs exactly n times.
    for _ in 0..n {
        fixed.accumulate_overstep(step);
    }
    clock.frame_steps = n;
    clock.frame_start = Some(Instant::now());
}

fn measure_fixed_loop(mut clock: ResMut<SimClock>) {
    if let Some(start) = clock.frame_start.take() {
        clock.record_frame(start.elapsed());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_mode_runs_exactly_the_queued_steps() {
        let mut c = SimClock::default();
        assert_eq!(c.steps_this_frame(1.0, 0.02), 0);
        c.queue_steps(7);
        assert_eq!(c.steps_this_frame(0.0, 0.02), 7);
        assert_eq!(c.steps_this_frame(0.0, 0.02), 0);
    }

    #[test]
    fn real_time_follows_speed() {
        let mut c = SimClock::real_time();
        c.step_cost_s = 1e-6;
        // 0.1 s of real time at 1x with dt = 0.02 s: five steps.
        assert_eq!(c.steps_this_frame(0.1, 0.02), 5);
        c.speed = Speed::Factor(0.5);
        assert_eq!(c.steps_this_frame(0.1, 0.02), 2);
        assert_eq!(c.steps_this_frame(0.1, 0.02), 3);
    }

    #[test]
    fn paused_runs_only_single_steps() {
        let mut c = SimClock::real_time();
        c.paused = true;
        assert_eq!(c.steps_this_frame(0.1, 0.02), 0);
        c.queue_steps(1);
        assert_eq!(c.steps_this_frame(0.1, 0.02), 1);
        assert_eq!(c.steps_this_frame(0.1, 0.02), 0);
    }

    #[test]
    fn slow_steps_are_capped_by_the_budget() {
        let mut c = SimClock::real_time();
        c.step_cost_s = 0.01;
        c.speed = Speed::Factor(100.0);
        // 500 steps wanted, 0.2 s of catch-up budget at 10 ms a step: 20.
        assert_eq!(c.steps_this_frame(0.1, 0.02), 20);
        c.speed = Speed::Max;
        assert_eq!(c.steps_this_frame(0.1, 0.02), 4);
    }
}
