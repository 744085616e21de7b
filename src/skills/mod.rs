//! The skill system (seed 004): controllers hand a [`SkillFacade`] to their robot's
//! [`SkillRequest`] in the think stage; in the act stage each robot's executor turns its skills
//! into commands for the bot link. Every 20 ms of simulated time (the executor period) the
//! running skills tick. Skill starts and completions are announced as observer events.

use bevy::prelude::*;

pub mod executor;
pub mod skill;

pub use executor::{Assignment, GroupTaken, SkillExecutor, SkillFacade, SkillNote};
pub use skill::{
    Blink, Follow, Grip, Lamp, MoveAhead, MoveFor, MoveTo, Release, Skill, SkillContext, SkillGroup, SkillStatus, Stop,
    TurnBy, TurnFor, TurnTo, Velocity,
};

use crate::botlink::Outbox;
use crate::botlink::packet::Command;
use crate::robot::{BumpSensor, Robot, pose};
use crate::sim::{SimSet, SimTime};

/// The executor period of the original: 20 ms.
pub const EXECUTOR_PERIOD: f32 = 0.02;

/// Skills a controller wants its robot to run, taken by the executor in the act stage.
#[derive(Component, Debug, Default)]
pub struct SkillRequest(pub Option<SkillFacade>);

impl SkillRequest {
    /// Replaces the pending request with a facade holding one skill.
    pub fn set(&mut self, skill: impl Skill) {
        self.0 = Some(SkillFacade::with(skill));
    }
}

/// A robot's skill executor.
#[derive(Component, Debug)]
pub struct Executor(pub SkillExecutor);

impl Default for Executor {
    fn default() -> Self {
        Self(SkillExecutor::new(EXECUTOR_PERIOD))
    }
}

/// Emergency stop: while engaged every robot is stopped with its gripper open, and no skill or
/// command from any controller reaches the actuators.
#[derive(Resource, Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct EmergencyStop {
    pub engaged: bool,
}

/// A skill started on a robot.
#[derive(Event, Debug, Clone, Copy, PartialEq, Eq)]
pub struct SkillStarted {
    pub bot: Entity,
    pub group: SkillGroup,
    pub skill: &'static str,
}

/// A skill ended on a robot: completed by itself, or replaced (also by an emergency stop).
#[derive(Event, Debug, Clone, Copy, PartialEq, Eq)]
pub struct SkillCompleted {
    pub bot: Entity,
    pub group: SkillGroup,
    pub skill: &'static str,
    pub replaced: bool,
}

/// Runs in the act stage before the bot link transmits.
#[derive(SystemSet, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ExecuteSkills;

pub(super) fn plugin(app: &mut App) {
    app.init_resource::<EmergencyStop>()
        .add_systems(FixedUpdate, run_executors.in_set(ExecuteSkills).in_set(SimSet::Act));
}

fn run_executors(
    mut commands: Commands,
    time: Res<SimTime>,
    estop: Res<EmergencyStop>,
    mut was_engaged: Local<bool>,
    mut robots: Query<(Entity, &Robot, &Transform, &BumpSensor, &mut SkillRequest, &mut Executor, &mut Outbox)>,
    positions: Query<&Transform>,
) {
    let mut notes = Vec::new();
    for (entity, robot, transform, bump, mut request, mut executor, mut outbox) in &mut robots {
        let (position, heading) = pose(transform);
        let target = |skill: Option<&dyn Skill>| {
            skill.and_then(|s| s.target()).and_then(|t| positions.get(t).ok()).map(|t| t.translation.truncate())
        };
        let mut ctx = SkillContext {
            position,
            heading,
            max_speed: robot.max_speed,
            max_turn: robot.max_turn,
            period: executor.0.period,
            target: None,
            bumped: bump.bumped,
        };
        let out = &mut outbox.commands;
        if estop.engaged {
            request.0 = None;
            if !*was_engaged {
                executor.0.clear(&ctx, out, &mut notes);
                out.push(Command::Move { linear: 0.0, angular: 0.0 });
                out.push(Command::Grip { close: false });
            }
        } else {
            if let Some(facade) = request.0.take() {
                ctx.target = target(facade.get(SkillGroup::Move));
                executor.0.assign_facade(facade, &ctx, out, &mut notes);
            }
            ctx.target = target(executor.0.running(SkillGroup::Move));
            executor.0.advance(time.dt, &ctx, out, &mut notes);
        }
        for note in notes.drain(..) {
            match note {
                SkillNote::Started { group, skill } => commands.trigger(SkillStarted { bot: entity, group, skill }),
                SkillNote::Completed { group, skill, replaced } => {
                    commands.trigger(SkillCompleted { bot: entity, group, skill, replaced })
                }
            }
        }
    }
    *was_engaged = estop.engaged;
}
