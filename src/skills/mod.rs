//! The skill system (seed 004): controllers hand a [`SkillFacade`] to their robot's
//! [`SkillRequest`] in the think stage; in the act stage each robot's executor turns its skills
//! into commands for the bot link. Every 20 ms of simulated time (the executor period) the
//! running skills tick. Skill starts and completions are announced as observer events.
//!
//! The skill system attaches its own parts to every robot as it is added, and ends a robot's
//! skills when its link drops (the watchdog, a disconnect).

use bevy::prelude::*;

pub mod executor;
pub mod skill;

pub use executor::{Assignment, GroupTaken, SkillExecutor, SkillFacade, SkillNote};
pub use skill::{
    Blink, Follow, Grip, Lamp, MoveAhead, MoveFor, MoveTo, Release, Skill, SkillContext, SkillGroup, SkillStatus, Stop,
    TurnBy, TurnFor, TurnTo, Velocity,
};

pub use crate::botlink::EmergencyStop;
use crate::botlink::packet::Command;
use crate::botlink::{LinkChanged, LinkState, Outbox};
use crate::robot::{BumpSensor, PoseCache, Robot};
use crate::sim::{ActSystems, Passes, RobotOrder, SimTime};

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

pub(super) fn plugin(app: &mut App) {
    app.add_observer(attach_skills)
        .add_observer(stop_on_link_drop)
        .add_systems(FixedUpdate, run_executors.in_set(ActSystems::Skills));
}

/// Every robot gets its skill slots when it is added.
fn attach_skills(add: On<Add, Robot>, mut commands: Commands) {
    commands.entity(add.entity).insert((SkillRequest::default(), Executor::default(), SkillNotes::default()));
}

/// What a robot's executor reported this step, announced after the pass.
#[derive(Component, Debug, Default)]
struct SkillNotes(Vec<SkillNote>);

/// A link that leaves online (the watchdog, a disconnect) ends the robot's skills, so nothing
/// drives it until its controller is back.
fn stop_on_link_drop(
    changed: On<LinkChanged>,
    mut commands: Commands,
    mut robots: Query<(&mut Executor, &mut SkillRequest, &mut Outbox)>,
) {
    if changed.to == LinkState::Online {
        return;
    }
    let Ok((mut executor, mut request, mut outbox)) = robots.get_mut(changed.bot) else { return };
    request.0 = None;
    let ctx = SkillContext::at_rest(executor.0.period);
    let mut notes = Vec::new();
    executor.0.clear(&ctx, &mut outbox.commands, &mut notes);
    announce(&mut commands, notes.into_iter().map(|note| (changed.bot, note)).collect());
}

/// Triggers the observer events for what the executors reported, in order, as one command
/// applied where the commands of the system that reported them are. Nothing is triggered when
/// nothing observes skills (the recorder observes them only while it records): a robot's skill
/// starts and ends thousands of times a step in a large swarm, and triggering each costs a
/// command and an observer lookup.
fn announce(commands: &mut Commands, notes: Vec<(Entity, SkillNote)>) {
    if notes.is_empty() {
        return;
    }
    commands.queue(move |world: &mut World| {
        if !observed::<SkillStarted>(world) && !observed::<SkillCompleted>(world) {
            return;
        }
        for (bot, note) in notes {
            match note {
                SkillNote::Started { group, skill } => world.trigger(SkillStarted { bot, group, skill }),
                SkillNote::Completed { group, skill, replaced } => {
                    world.trigger(SkillCompleted { bot, group, skill, replaced })
                }
            }
        }
    });
}

/// Whether an observer watches `E` (skill events are global: no entity observes them).
fn observed<E: Event>(world: &World) -> bool {
    world
        .event_key::<E>()
        .and_then(|key| world.observers().try_get_observers(key))
        .is_some_and(|o| !o.global_observers().is_empty())
}

fn run_executors(
    mut commands: Commands,
    time: Res<SimTime>,
    estop: Res<EmergencyStop>,
    passes: Res<Passes>,
    order: Res<RobotOrder>,
    mut was_engaged: Local<bool>,
    mut robots: Query<(
        Entity,
        &Robot,
        (&Transform, &PoseCache),
        &BumpSensor,
        (&mut SkillRequest, &mut Executor, &mut Outbox, &mut SkillNotes),
    )>,
    positions: Query<&Transform>,
) {
    let (engaged, was_engaged_before) = (estop.engaged, *was_engaged);
    // Each robot writes only its own request, executor, outbox and notes: the same on any thread.
    passes.each_mut(order.0.len(), &mut robots, |item| {
        let (_, robot, (transform, cache), bump, (mut request, mut executor, mut outbox, mut notes)) = item;
        let (position, heading) = cache.pose(transform);
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
        let notes = &mut notes.0;
        if engaged {
            request.0 = None;
            if !was_engaged_before {
                executor.0.clear(&ctx, out, notes);
                out.push(Command::Move { linear: 0.0, angular: 0.0 });
                out.push(Command::Grip { close: false });
            }
        } else {
            if let Some(facade) = request.0.take() {
                ctx.target = target(facade.get(SkillGroup::Move));
                executor.0.assign_facade(facade, &ctx, out, notes);
            }
            ctx.target = target(executor.0.running(SkillGroup::Move));
            executor.0.advance(time.dt, &ctx, out, notes);
        }
    });
    // Announced in the query's order, as when the robots ran in turn.
    let mut all = Vec::new();
    for (entity, _, _, _, (_, _, _, mut notes)) in &mut robots {
        // Looked at before drained, so a robot with no notes is not marked changed.
        if !notes.0.is_empty() {
            all.extend(notes.0.drain(..).map(|note| (entity, note)));
        }
    }
    announce(&mut commands, all);
    *was_engaged = engaged;
}
