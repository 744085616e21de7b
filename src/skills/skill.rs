//! Skills (seed 004): high-level actions that the executor turns into low-level commands. Each
//! skill belongs to one group — one independent actuator of the robot — and has entry actions,
//! per-tick actions and exit actions, and reports when it is done.

use std::any::Any;
use std::fmt::Debug;

use bevy::prelude::*;

use crate::botlink::packet::Command;
use crate::robot::{angle_of, wrap_angle};

/// The independent actuator groups: one skill of each may run at a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SkillGroup {
    /// The differential drive (the original's move skills).
    Move = 0,
    /// The gripper (the original's kick skills).
    Grip = 1,
    /// The lamp, crsim's third independent actuator (the original's dribbler).
    Lamp = 2,
}

impl SkillGroup {
    pub const ALL: [SkillGroup; 3] = [SkillGroup::Move, SkillGroup::Grip, SkillGroup::Lamp];

    pub fn index(self) -> usize {
        self as usize
    }

    pub fn name(self) -> &'static str {
        match self {
            SkillGroup::Move => "move",
            SkillGroup::Grip => "grip",
            SkillGroup::Lamp => "lamp",
        }
    }
}

/// What a skill may know about its robot when it computes commands.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SkillContext {
    pub position: Vec2,
    /// Radians.
    pub heading: f32,
    /// m/s.
    pub max_speed: f32,
    /// rad/s.
    pub max_turn: f32,
    /// Seconds between executor ticks.
    pub period: f32,
    /// Where the subject of a follow skill is, if it still exists.
    pub target: Option<Vec2>,
    /// The robot is touching something.
    pub bumped: bool,
}

impl SkillContext {
    /// A context with no robot state, for ending skills (their exit actions need none).
    pub fn at_rest(period: f32) -> Self {
        Self { position: Vec2::ZERO, heading: 0.0, max_speed: 0.0, max_turn: 0.0, period, target: None, bumped: false }
    }
}

/// Whether a skill goes on after this tick.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SkillStatus {
    Running,
    Done,
}

/// A skill. `tick` is the seed's `calcActions`, `same_as` its `compareContent`.
pub trait Skill: Debug + Send + Sync + 'static {
    fn name(&self) -> &'static str;
    fn group(&self) -> SkillGroup;
    /// Commands to send when the skill starts, added to `out`.
    fn entry(&mut self, _ctx: &SkillContext, _out: &mut Vec<Command>) {}
    /// Commands for this tick, added to `out`, and whether the skill is done.
    fn tick(&mut self, ctx: &SkillContext, out: &mut Vec<Command>) -> SkillStatus;
    /// Commands to send when the skill ends, completed or replaced, added to `out`.
    fn exit(&mut self, _ctx: &SkillContext, _out: &mut Vec<Command>) {}
    /// True when `other` is the same skill with the same parameters (running state aside).
    fn same_as(&self, other: &dyn Skill) -> bool;
    fn as_any(&self) -> &dyn Any;
    /// The entity this skill follows, if any.
    fn target(&self) -> Option<Entity> {
        None
    }
}

/// The name, group and `Any` access every skill has.
macro_rules! skill_meta {
    ($name:literal, $group:ident) => {
        fn name(&self) -> &'static str {
            $name
        }
        fn group(&self) -> SkillGroup {
            SkillGroup::$group
        }
        fn as_any(&self) -> &dyn Any {
            self
        }
    };
}

/// `same_as` for skills whose parameters are their `PartialEq` fields.
fn same<T: Skill + PartialEq>(a: &T, other: &dyn Skill) -> bool {
    other.as_any().downcast_ref::<T>() == Some(a)
}

fn halt(out: &mut Vec<Command>) {
    out.push(Command::Move { linear: 0.0, angular: 0.0 });
}

/// Proportional heading control: a turn rate towards `err`, limited to the robot's maximum.
fn turn_rate(err: f32, ctx: &SkillContext) -> f32 {
    // Reach the heading in about two ticks' time without overshooting the last tick.
    (err / (2.0 * ctx.period).max(1e-3)).clamp(-ctx.max_turn, ctx.max_turn)
}

/// Headings within this are reached.
pub const HEADING_TOLERANCE: f32 = 0.5 * std::f32::consts::PI / 180.0;
/// Distances within this are reached, metres.
pub const DISTANCE_TOLERANCE: f32 = 0.002;

/// Stop the drive.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Stop;

impl Skill for Stop {
    skill_meta!("Stop", Move);
    fn tick(&mut self, _: &SkillContext, out: &mut Vec<Command>) -> SkillStatus {
        halt(out);
        SkillStatus::Done
    }
    fn same_as(&self, other: &dyn Skill) -> bool {
        same(self, other)
    }
}

/// Drive with a constant linear (m/s) and angular (rad/s) speed until replaced, and sideways
/// (m/s, to the left) on a holonomic drive.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Velocity {
    pub linear: f32,
    pub angular: f32,
    pub lateral: f32,
}

impl Skill for Velocity {
    skill_meta!("Velocity", Move);
    fn entry(&mut self, _: &SkillContext, out: &mut Vec<Command>) {
        let (linear, angular, lateral) = (self.linear, self.angular, self.lateral);
        // A move without a sideways part is the differential drive's command, as it always was.
        out.push(if lateral == 0.0 {
            Command::Move { linear, angular }
        } else {
            Command::MoveOmni { linear, lateral, angular }
        });
    }
    fn tick(&mut self, _: &SkillContext, _: &mut Vec<Command>) -> SkillStatus {
        SkillStatus::Running
    }
    fn exit(&mut self, _: &SkillContext, out: &mut Vec<Command>) {
        halt(out);
    }
    fn same_as(&self, other: &dyn Skill) -> bool {
        same(self, other)
    }
}

/// Drive with a constant command for a time, then stop.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MoveFor {
    pub linear: f32,
    pub angular: f32,
    pub seconds: f32,
    elapsed: f32,
}

impl MoveFor {
    pub fn new(linear: f32, angular: f32, seconds: f32) -> Self {
        Self { linear, angular, seconds, elapsed: 0.0 }
    }
}

impl Skill for MoveFor {
    skill_meta!("MoveFor", Move);
    fn entry(&mut self, _: &SkillContext, out: &mut Vec<Command>) {
        self.elapsed = 0.0;
        out.push(Command::Move { linear: self.linear, angular: self.angular });
    }
    fn tick(&mut self, ctx: &SkillContext, _: &mut Vec<Command>) -> SkillStatus {
        self.elapsed += ctx.period;
        if self.elapsed + 1e-6 >= self.seconds { SkillStatus::Done } else { SkillStatus::Running }
    }
    fn exit(&mut self, _: &SkillContext, out: &mut Vec<Command>) {
        halt(out);
    }
    fn same_as(&self, other: &dyn Skill) -> bool {
        other
            .as_any()
            .downcast_ref::<MoveFor>()
            .is_some_and(|o| (o.linear, o.angular, o.seconds) == (self.linear, self.angular, self.seconds))
    }
}

/// Drive straight ahead (backwards when negative) a distance along the starting heading.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MoveAhead {
    pub distance: f32,
    /// m/s; clamped to the robot's maximum.
    pub speed: f32,
    start: Option<(Vec2, f32)>,
}

impl MoveAhead {
    pub fn new(distance: f32, speed: f32) -> Self {
        Self { distance, speed, start: None }
    }
}

impl Skill for MoveAhead {
    skill_meta!("MoveAhead", Move);
    fn entry(&mut self, ctx: &SkillContext, _: &mut Vec<Command>) {
        self.start = Some((ctx.position, ctx.heading));
    }
    fn tick(&mut self, ctx: &SkillContext, out: &mut Vec<Command>) -> SkillStatus {
        let (start, heading) = *self.start.get_or_insert((ctx.position, ctx.heading));
        let along = (ctx.position - start).dot(Vec2::from_angle(heading));
        let remaining = self.distance - along;
        if remaining.abs() <= DISTANCE_TOLERANCE {
            halt(out);
            return SkillStatus::Done;
        }
        let speed = self.speed.abs().min(ctx.max_speed);
        // Slow down so the last tick lands on the distance instead of overshooting it.
        let linear = (remaining / ctx.period).clamp(-speed, speed);
        out.push(Command::Move { linear, angular: 0.0 });
        SkillStatus::Running
    }
    fn exit(&mut self, _: &SkillContext, out: &mut Vec<Command>) {
        halt(out);
    }
    fn same_as(&self, other: &dyn Skill) -> bool {
        other.as_any().downcast_ref::<MoveAhead>().is_some_and(|o| (o.distance, o.speed) == (self.distance, self.speed))
    }
}

/// Turn on the spot to an absolute heading (radians).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TurnTo {
    pub heading: f32,
}

impl Skill for TurnTo {
    skill_meta!("TurnTo", Move);
    fn tick(&mut self, ctx: &SkillContext, out: &mut Vec<Command>) -> SkillStatus {
        let err = wrap_angle(self.heading - ctx.heading);
        if err.abs() <= HEADING_TOLERANCE {
            halt(out);
            return SkillStatus::Done;
        }
        out.push(Command::Move { linear: 0.0, angular: turn_rate(err, ctx) });
        SkillStatus::Running
    }
    fn exit(&mut self, _: &SkillContext, out: &mut Vec<Command>) {
        halt(out);
    }
    fn same_as(&self, other: &dyn Skill) -> bool {
        same(self, other)
    }
}

/// Turn on the spot by an angle (radians, positive to the left) over a given time, landing on
/// the heading when the time is up (the VirtualRobot's timed quarter turns).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TurnFor {
    pub angle: f32,
    pub seconds: f32,
    target: Option<f32>,
    elapsed: f32,
}

impl TurnFor {
    pub fn new(angle: f32, seconds: f32) -> Self {
        Self { angle, seconds, target: None, elapsed: 0.0 }
    }
}

impl Skill for TurnFor {
    skill_meta!("TurnFor", Move);
    fn entry(&mut self, ctx: &SkillContext, out: &mut Vec<Command>) {
        self.target = Some(ctx.heading + self.angle);
        self.elapsed = 0.0;
        let rate = (self.angle / self.seconds.max(ctx.period)).clamp(-ctx.max_turn, ctx.max_turn);
        out.push(Command::Move { linear: 0.0, angular: rate });
    }
    fn tick(&mut self, ctx: &SkillContext, out: &mut Vec<Command>) -> SkillStatus {
        let target = *self.target.get_or_insert(ctx.heading + self.angle);
        self.elapsed += ctx.period;
        let err = wrap_angle(target - ctx.heading);
        let time_up = self.elapsed + 1e-6 >= self.seconds;
        if err.abs() <= HEADING_TOLERANCE {
            halt(out);
            return if time_up { SkillStatus::Done } else { SkillStatus::Running };
        }
        // What is left of the angle over what is left of the time, so the last tick lands.
        let left = (self.seconds - self.elapsed).max(ctx.period);
        let rate = (err / left).clamp(-ctx.max_turn, ctx.max_turn);
        out.push(Command::Move { linear: 0.0, angular: rate });
        SkillStatus::Running
    }
    fn exit(&mut self, _: &SkillContext, out: &mut Vec<Command>) {
        halt(out);
    }
    fn same_as(&self, other: &dyn Skill) -> bool {
        other.as_any().downcast_ref::<TurnFor>().is_some_and(|o| (o.angle, o.seconds) == (self.angle, self.seconds))
    }
}

/// Turn on the spot by an angle (radians, positive to the left) from the heading at entry.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TurnBy {
    pub angle: f32,
    target: Option<f32>,
}

impl TurnBy {
    pub fn new(angle: f32) -> Self {
        Self { angle, target: None }
    }
}

impl Skill for TurnBy {
    skill_meta!("TurnBy", Move);
    fn entry(&mut self, ctx: &SkillContext, _: &mut Vec<Command>) {
        self.target = Some(ctx.heading + self.angle);
    }
    fn tick(&mut self, ctx: &SkillContext, out: &mut Vec<Command>) -> SkillStatus {
        let target = *self.target.get_or_insert(ctx.heading + self.angle);
        TurnTo { heading: target }.tick(ctx, out)
    }
    fn exit(&mut self, _: &SkillContext, out: &mut Vec<Command>) {
        halt(out);
    }
    fn same_as(&self, other: &dyn Skill) -> bool {
        other.as_any().downcast_ref::<TurnBy>().is_some_and(|o| o.angle == self.angle)
    }
}

/// Drive to a point: turn towards it, then drive while steering, stop on it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MoveTo {
    pub point: Vec2,
    pub speed: f32,
    /// Done within this distance, metres.
    pub tolerance: f32,
}

impl Skill for MoveTo {
    skill_meta!("MoveTo", Move);
    fn tick(&mut self, ctx: &SkillContext, out: &mut Vec<Command>) -> SkillStatus {
        let to = self.point - ctx.position;
        let dist = to.length();
        if dist <= self.tolerance.max(DISTANCE_TOLERANCE) {
            halt(out);
            return SkillStatus::Done;
        }
        out.push(approach(to, dist, self.speed, ctx));
        SkillStatus::Running
    }
    fn exit(&mut self, _: &SkillContext, out: &mut Vec<Command>) {
        halt(out);
    }
    fn same_as(&self, other: &dyn Skill) -> bool {
        same(self, other)
    }
}

/// Steer towards `to` (at distance `dist`, > 0): drive only when roughly facing it, slowing on
/// arrival.
fn approach(to: Vec2, dist: f32, speed: f32, ctx: &SkillContext) -> Command {
    let err = wrap_angle(angle_of(to) - ctx.heading);
    let facing = err.cos().max(0.0);
    let speed = speed.abs().min(ctx.max_speed);
    let linear = if err.abs() < std::f32::consts::FRAC_PI_4 { (dist / ctx.period).min(speed) * facing } else { 0.0 };
    Command::Move { linear, angular: turn_rate(err, ctx) }
}

/// Follow a subject (another entity), keeping `distance` metres from it; runs until replaced.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Follow {
    pub target: Entity,
    pub distance: f32,
    pub speed: f32,
}

impl Skill for Follow {
    skill_meta!("Follow", Move);
    fn tick(&mut self, ctx: &SkillContext, out: &mut Vec<Command>) -> SkillStatus {
        let Some(target) = ctx.target else {
            // The subject is gone: nothing left to follow.
            halt(out);
            return SkillStatus::Done;
        };
        let to = target - ctx.position;
        let gap = to.length() - self.distance;
        if gap <= DISTANCE_TOLERANCE {
            let err = wrap_angle(angle_of(to) - ctx.heading);
            out.push(Command::Move { linear: 0.0, angular: turn_rate(err, ctx) });
            return SkillStatus::Running;
        }
        out.push(approach(to, gap, self.speed, ctx));
        SkillStatus::Running
    }
    fn exit(&mut self, _: &SkillContext, out: &mut Vec<Command>) {
        halt(out);
    }
    fn same_as(&self, other: &dyn Skill) -> bool {
        same(self, other)
    }
    fn target(&self) -> Option<Entity> {
        Some(self.target)
    }
}

/// Close the gripper (it takes the nearest pen within reach).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Grip;

impl Skill for Grip {
    skill_meta!("Grip", Grip);
    fn entry(&mut self, _: &SkillContext, out: &mut Vec<Command>) {
        out.push(Command::Grip { close: true });
    }
    fn tick(&mut self, _: &SkillContext, _: &mut Vec<Command>) -> SkillStatus {
        SkillStatus::Done
    }
    fn same_as(&self, other: &dyn Skill) -> bool {
        same(self, other)
    }
}

/// Open the gripper (put down what it holds).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Release;

impl Skill for Release {
    skill_meta!("Release", Grip);
    fn entry(&mut self, _: &SkillContext, out: &mut Vec<Command>) {
        out.push(Command::Grip { close: false });
    }
    fn tick(&mut self, _: &SkillContext, _: &mut Vec<Command>) -> SkillStatus {
        SkillStatus::Done
    }
    fn same_as(&self, other: &dyn Skill) -> bool {
        same(self, other)
    }
}

/// Switch the lamp on or off.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Lamp {
    pub on: bool,
}

impl Skill for Lamp {
    skill_meta!("Lamp", Lamp);
    fn entry(&mut self, _: &SkillContext, out: &mut Vec<Command>) {
        out.push(Command::Lamp { on: self.on });
    }
    fn tick(&mut self, _: &SkillContext, _: &mut Vec<Command>) -> SkillStatus {
        SkillStatus::Done
    }
    fn same_as(&self, other: &dyn Skill) -> bool {
        same(self, other)
    }
}

/// Blink the lamp with a period (seconds) until replaced; the lamp ends off.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Blink {
    pub period: f32,
    on: bool,
    elapsed: f32,
}

impl Blink {
    pub fn new(period: f32) -> Self {
        Self { period, on: false, elapsed: 0.0 }
    }
}

impl Skill for Blink {
    skill_meta!("Blink", Lamp);
    fn entry(&mut self, _: &SkillContext, out: &mut Vec<Command>) {
        self.on = true;
        self.elapsed = 0.0;
        out.push(Command::Lamp { on: true });
    }
    fn tick(&mut self, ctx: &SkillContext, out: &mut Vec<Command>) -> SkillStatus {
        self.elapsed += ctx.period;
        if self.elapsed + 1e-6 >= self.period / 2.0 {
            self.elapsed = 0.0;
            self.on = !self.on;
            out.push(Command::Lamp { on: self.on });
            return SkillStatus::Running;
        }
        SkillStatus::Running
    }
    fn exit(&mut self, _: &SkillContext, out: &mut Vec<Command>) {
        out.push(Command::Lamp { on: false });
    }
    fn same_as(&self, other: &dyn Skill) -> bool {
        other.as_any().downcast_ref::<Blink>().is_some_and(|o| o.period == self.period)
    }
}
