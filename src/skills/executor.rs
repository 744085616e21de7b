//! The skill facade and the skill executor (seed 004), as plain types.
//!
//! A [`SkillFacade`] carries at most one skill per group. The [`SkillExecutor`] keeps one slot
//! per group: a skill equal to the running one is ignored; a different one replaces it at once
//! (the old one's exit actions, then the new one's entry actions — also when the slot was
//! empty). Every period the executor ticks each running skill; a skill that reports done runs
//! its exit actions and leaves its slot empty.

use std::any::Any;
use std::fmt;

use super::skill::{Skill, SkillContext, SkillGroup, SkillStatus, Velocity};
use crate::botlink::packet::Command;

/// Setting a group twice in one facade.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupTaken {
    pub group: SkillGroup,
    pub existing: &'static str,
    pub new: &'static str,
}

impl fmt::Display for GroupTaken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the {} slot of this facade already holds {}; {} cannot be added",
            self.group.name(),
            self.existing,
            self.new
        )
    }
}

impl std::error::Error for GroupTaken {}

/// A skill in a facade's or the executor's slot: a [`Velocity`] (what wanderers and collectors
/// ask for, often a new one every step) kept in the slot itself, any other skill boxed. A boxed
/// velocity cost an allocation and a free for every change, and a cache miss each step the
/// executor ticked it or a controller compared it.
#[derive(Debug)]
enum Held {
    Velocity(Velocity),
    Boxed(Box<dyn Skill>),
}

impl Held {
    fn new<S: Skill>(skill: S) -> Self {
        match (&skill as &dyn Any).downcast_ref::<Velocity>() {
            Some(v) => Held::Velocity(*v),
            None => Held::Boxed(Box::new(skill)),
        }
    }

    fn from_box(skill: Box<dyn Skill>) -> Self {
        match skill.as_any().downcast_ref::<Velocity>() {
            Some(v) => Held::Velocity(*v),
            None => Held::Boxed(skill),
        }
    }

    fn skill(&self) -> &dyn Skill {
        match self {
            Held::Velocity(v) => v,
            Held::Boxed(b) => b.as_ref(),
        }
    }

    fn skill_mut(&mut self) -> &mut dyn Skill {
        match self {
            Held::Velocity(v) => v,
            Held::Boxed(b) => b.as_mut(),
        }
    }
}

/// Up to one skill per group, handed to the executor together.
#[derive(Debug, Default)]
pub struct SkillFacade {
    slots: [Option<Held>; 3],
}

impl SkillFacade {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a skill; an error if its group is already set in this facade.
    pub fn set(&mut self, skill: impl Skill) -> Result<&mut Self, GroupTaken> {
        self.set_held(Held::new(skill))
    }

    pub fn set_boxed(&mut self, skill: Box<dyn Skill>) -> Result<&mut Self, GroupTaken> {
        self.set_held(Held::from_box(skill))
    }

    fn set_held(&mut self, held: Held) -> Result<&mut Self, GroupTaken> {
        let skill = held.skill();
        let slot = &mut self.slots[skill.group().index()];
        if let Some(existing) = slot {
            return Err(GroupTaken { group: skill.group(), existing: existing.skill().name(), new: skill.name() });
        }
        *slot = Some(held);
        Ok(self)
    }

    /// A facade with one skill.
    pub fn with(skill: impl Skill) -> Self {
        let mut f = Self::new();
        let group = skill.group();
        f.slots[group.index()] = Some(Held::new(skill));
        f
    }

    pub fn is_empty(&self) -> bool {
        self.slots.iter().all(Option::is_none)
    }

    pub fn get(&self, group: SkillGroup) -> Option<&dyn Skill> {
        self.slots[group.index()].as_ref().map(Held::skill)
    }

    fn into_skills(self) -> impl Iterator<Item = Held> {
        self.slots.into_iter().flatten()
    }
}

/// What happened to a skill handed to the executor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Assignment {
    /// Equal to the running skill: ignored, the running one goes on.
    Ignored,
    /// Put into an empty slot.
    Started,
    /// Replaced a different running skill.
    Replaced { old: &'static str },
}

/// Something the executor reports for the observers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SkillNote {
    Started {
        group: SkillGroup,
        skill: &'static str,
    },
    /// Ended by itself (`replaced: false`) or by a different skill (`replaced: true`).
    Completed {
        group: SkillGroup,
        skill: &'static str,
        replaced: bool,
    },
}

/// One robot's executor: a slot per group, ticked every `period` seconds of simulated time.
#[derive(Debug)]
pub struct SkillExecutor {
    slots: [Option<Held>; 3],
    /// Seconds of simulated time between ticks (20 ms in the original).
    pub period: f32,
    since_tick: f32,
}

impl SkillExecutor {
    pub fn new(period: f32) -> Self {
        Self { slots: [None, None, None], period, since_tick: 0.0 }
    }

    /// Whether the move slot runs `velocity` (what `running(Move).same_as(velocity)` tells),
    /// read from the slot itself.
    pub fn runs_velocity(&self, velocity: &Velocity) -> bool {
        matches!(&self.slots[SkillGroup::Move.index()], Some(Held::Velocity(v)) if v == velocity)
    }

    /// The skill running in a group.
    pub fn running(&self, group: SkillGroup) -> Option<&dyn Skill> {
        self.slots[group.index()].as_ref().map(Held::skill)
    }

    /// Hands one skill to its slot, appending the commands and notes this causes.
    pub fn assign(
        &mut self,
        skill: Box<dyn Skill>,
        ctx: &SkillContext,
        out: &mut Vec<Command>,
        notes: &mut Vec<SkillNote>,
    ) -> Assignment {
        self.assign_held(Held::from_box(skill), ctx, out, notes)
    }

    fn assign_held(
        &mut self,
        mut held: Held,
        ctx: &SkillContext,
        out: &mut Vec<Command>,
        notes: &mut Vec<SkillNote>,
    ) -> Assignment {
        let skill = held.skill_mut();
        let group = skill.group();
        let slot = &mut self.slots[group.index()];
        let assignment = match slot.as_mut().map(Held::skill_mut) {
            Some(current) if current.same_as(skill) => return Assignment::Ignored,
            Some(current) => {
                current.exit(ctx, out);
                notes.push(SkillNote::Completed { group, skill: current.name(), replaced: true });
                Assignment::Replaced { old: current.name() }
            }
            None => Assignment::Started,
        };
        skill.entry(ctx, out);
        notes.push(SkillNote::Started { group, skill: skill.name() });
        *slot = Some(held);
        assignment
    }

    /// Hands over a facade, skill by skill.
    pub fn assign_facade(
        &mut self,
        facade: SkillFacade,
        ctx: &SkillContext,
        out: &mut Vec<Command>,
        notes: &mut Vec<SkillNote>,
    ) -> Vec<Assignment> {
        facade.into_skills().map(|s| self.assign_held(s, ctx, out, notes)).collect()
    }

    /// Advances simulated time by `dt`; ticks the slots once a period has passed since the last
    /// tick. The skills see the time that really passed since then (`ctx.period`): the period
    /// itself when steps are shorter, a whole step when steps are longer (the world only changes
    /// once a step, so ticking several times on the same state would add nothing). Returns
    /// whether a tick happened.
    pub fn advance(&mut self, dt: f32, ctx: &SkillContext, out: &mut Vec<Command>, notes: &mut Vec<SkillNote>) -> bool {
        self.since_tick += dt;
        // A small tolerance: 0.02 s steps must tick every step at a 20 ms period.
        if self.since_tick + 1e-6 < self.period {
            return false;
        }
        let elapsed = self.since_tick;
        self.since_tick = 0.0;
        let ctx = SkillContext { period: elapsed, ..*ctx };
        for slot in &mut self.slots {
            let Some(skill) = slot.as_mut().map(Held::skill_mut) else { continue };
            if skill.tick(&ctx, out) == SkillStatus::Done {
                skill.exit(&ctx, out);
                notes.push(SkillNote::Completed { group: skill.group(), skill: skill.name(), replaced: false });
                *slot = None;
            }
        }
        true
    }

    /// Ends every running skill (exit actions), as for an emergency stop.
    pub fn clear(&mut self, ctx: &SkillContext, out: &mut Vec<Command>, notes: &mut Vec<SkillNote>) {
        for slot in &mut self.slots {
            if let Some(mut held) = slot.take() {
                let skill = held.skill_mut();
                skill.exit(ctx, out);
                notes.push(SkillNote::Completed { group: skill.group(), skill: skill.name(), replaced: true });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::skills::skill::*;
    use bevy::prelude::Vec2;
    use std::f32::consts::FRAC_PI_2;

    fn ctx() -> SkillContext {
        SkillContext {
            position: Vec2::ZERO,
            heading: 0.0,
            max_speed: 0.5,
            max_turn: 3.0,
            period: 0.02,
            target: None,
            bumped: false,
        }
    }

    #[test]
    fn a_facade_takes_one_skill_per_group() {
        let mut f = SkillFacade::new();
        f.set(Velocity { linear: 0.1, angular: 0.0, lateral: 0.0 })
            .unwrap()
            .set(Grip)
            .unwrap()
            .set(Lamp { on: true })
            .unwrap();
        let err = f.set(Stop).unwrap_err();
        assert_eq!(err, GroupTaken { group: SkillGroup::Move, existing: "Velocity", new: "Stop" });
        assert!(err.to_string().contains("move slot"));
        assert!(f.set(Release).is_err());
        assert_eq!(f.get(SkillGroup::Grip).map(|s| s.name()), Some("Grip"));
    }

    #[test]
    fn equal_skill_is_ignored_and_a_different_one_replaces_at_once() {
        let mut ex = SkillExecutor::new(0.02);
        let (mut out, mut notes) = (vec![], vec![]);
        let a = ex.assign(Box::new(Velocity { linear: 0.2, angular: 0.0, lateral: 0.0 }), &ctx(), &mut out, &mut notes);
        assert_eq!(a, Assignment::Started);
        // Entry actions also when the slot was empty.
        assert_eq!(out, vec![Command::Move { linear: 0.2, angular: 0.0 }]);
        out.clear();
        let a = ex.assign(Box::new(Velocity { linear: 0.2, angular: 0.0, lateral: 0.0 }), &ctx(), &mut out, &mut notes);
        assert_eq!(a, Assignment::Ignored);
        assert!(out.is_empty());
        let a =
            ex.assign(Box::new(Velocity { linear: -0.1, angular: 0.0, lateral: 0.0 }), &ctx(), &mut out, &mut notes);
        assert_eq!(a, Assignment::Replaced { old: "Velocity" });
        // Exit of the old (halt), then entry of the new, in that order.
        assert_eq!(
            out,
            vec![Command::Move { linear: 0.0, angular: 0.0 }, Command::Move { linear: -0.1, angular: 0.0 }]
        );
        assert_eq!(
            notes,
            vec![
                SkillNote::Started { group: SkillGroup::Move, skill: "Velocity" },
                SkillNote::Completed { group: SkillGroup::Move, skill: "Velocity", replaced: true },
                SkillNote::Started { group: SkillGroup::Move, skill: "Velocity" },
            ]
        );
    }

    /// A velocity held in the executor's slot answers as the running skill would, through
    /// starts, replacements by a velocity or another skill, a skill ending and a clear.
    #[test]
    fn the_running_velocity_is_told_without_the_skill_and_agrees_with_it() {
        let mut ex = SkillExecutor::new(0.02);
        let (mut out, mut notes) = (vec![], vec![]);
        let (slow, fast) = (
            Velocity { linear: 0.1, angular: 0.0, lateral: 0.0 },
            Velocity { linear: 0.3, angular: 0.5, lateral: 0.0 },
        );
        let agrees = |ex: &SkillExecutor| {
            for v in [slow, fast] {
                let by_skill = ex.running(SkillGroup::Move).is_some_and(|s| s.same_as(&v));
                assert_eq!(ex.runs_velocity(&v), by_skill, "{v:?}");
            }
        };
        agrees(&ex);
        assert!(!ex.runs_velocity(&slow));
        ex.assign(Box::new(slow), &ctx(), &mut out, &mut notes);
        agrees(&ex);
        assert!(ex.runs_velocity(&slow) && !ex.runs_velocity(&fast));
        ex.assign(Box::new(fast), &ctx(), &mut out, &mut notes);
        agrees(&ex);
        assert!(ex.runs_velocity(&fast));
        // Another grip or lamp skill leaves the move slot as it is.
        ex.assign(Box::new(Blink::new(0.08)), &ctx(), &mut out, &mut notes);
        assert!(ex.runs_velocity(&fast));
        // A move skill of another kind with the same speeds is not a velocity; once it ends the
        // slot is empty.
        ex.assign(Box::new(MoveFor::new(0.3, 0.5, 0.02)), &ctx(), &mut out, &mut notes);
        agrees(&ex);
        assert!(!ex.runs_velocity(&fast));
        ex.assign(Box::new(slow), &ctx(), &mut out, &mut notes);
        assert!(ex.runs_velocity(&slow));
        ex.clear(&ctx(), &mut out, &mut notes);
        agrees(&ex);
        assert!(!ex.runs_velocity(&slow) && ex.running(SkillGroup::Move).is_none());
        ex.assign(Box::new(MoveFor::new(0.3, 0.5, 0.02)), &ctx(), &mut out, &mut notes);
        assert!(ex.advance(0.02, &ctx(), &mut out, &mut notes));
        assert!(ex.running(SkillGroup::Move).is_none());
        agrees(&ex);
        // Through facades, set as a value or boxed: the same, and an equal one is ignored.
        let mut f = SkillFacade::new();
        f.set(fast).unwrap();
        assert_eq!(ex.assign_facade(f, &ctx(), &mut out, &mut notes), vec![Assignment::Started]);
        assert!(ex.runs_velocity(&fast));
        agrees(&ex);
        let mut f = SkillFacade::new();
        f.set_boxed(Box::new(fast)).unwrap();
        assert_eq!(ex.assign_facade(f, &ctx(), &mut out, &mut notes), vec![Assignment::Ignored]);
        out.clear();
        assert!(ex.advance(0.02, &ctx(), &mut out, &mut notes));
        assert!(out.is_empty() && ex.runs_velocity(&fast), "a velocity runs on, sending nothing: {out:?}");
    }

    #[test]
    fn skills_in_different_groups_run_side_by_side() {
        let mut ex = SkillExecutor::new(0.02);
        let (mut out, mut notes) = (vec![], vec![]);
        let mut f = SkillFacade::new();
        f.set(Velocity { linear: 0.2, angular: 0.0, lateral: 0.0 }).unwrap().set(Blink::new(0.08)).unwrap();
        ex.assign_facade(f, &ctx(), &mut out, &mut notes);
        assert_eq!(out, vec![Command::Move { linear: 0.2, angular: 0.0 }, Command::Lamp { on: true }]);
        assert!(ex.running(SkillGroup::Move).is_some() && ex.running(SkillGroup::Lamp).is_some());
        assert!(ex.running(SkillGroup::Grip).is_none());
    }

    #[test]
    fn the_executor_ticks_once_per_period() {
        let mut ex = SkillExecutor::new(0.02);
        let (mut out, mut notes) = (vec![], vec![]);
        ex.assign(Box::new(Blink::new(0.08)), &ctx(), &mut out, &mut notes);
        out.clear();
        // With 5 ms steps the executor ticks every fourth step.
        let ticks: Vec<bool> = (0..12).map(|_| ex.advance(0.005, &ctx(), &mut out, &mut notes)).collect();
        assert_eq!(ticks.iter().filter(|t| **t).count(), 3);
        assert!(ticks[3]);
        assert!(!ticks[2]);
        // Blink toggles every half period (two ticks).
        assert_eq!(out, vec![Command::Lamp { on: false }]);
        let ticks = (0..10).filter(|_| ex.advance(0.02, &ctx(), &mut out, &mut notes)).count();
        assert_eq!(ticks, 10);
    }

    #[test]
    fn with_steps_longer_than_the_period_skills_see_the_time_that_passed() {
        let mut ex = SkillExecutor::new(0.02);
        let (mut out, mut notes) = (vec![], vec![]);
        // 60 ms of motion with 50 ms steps: done at the first tick at or after 60 ms, 100 ms.
        ex.assign(Box::new(MoveFor::new(0.3, 0.0, 0.06)), &ctx(), &mut out, &mut notes);
        assert!(ex.advance(0.05, &ctx(), &mut out, &mut notes));
        assert!(ex.running(SkillGroup::Move).is_some());
        assert!(ex.advance(0.05, &ctx(), &mut out, &mut notes));
        assert!(ex.running(SkillGroup::Move).is_none());
        // A quarter turn with 50 ms steps lands on its heading without overshooting.
        let mut skill = TurnTo { heading: FRAC_PI_2 };
        let mut c = SkillContext { period: 0.05, ..ctx() };
        let mut settled = false;
        for _ in 0..100 {
            let mut cmds = Vec::new();
            let status = skill.tick(&c, &mut cmds);
            if status == SkillStatus::Done {
                settled = true;
                break;
            }
            let Command::Move { angular, .. } = cmds[0] else { panic!() };
            c.heading += angular * 0.05;
            assert!(c.heading <= FRAC_PI_2 + 1e-4, "overshoot to {}", c.heading);
        }
        assert!(settled);
    }

    #[test]
    fn a_completed_skill_runs_its_exit_actions_and_frees_its_slot() {
        let mut ex = SkillExecutor::new(0.02);
        let (mut out, mut notes) = (vec![], vec![]);
        ex.assign(Box::new(MoveFor::new(0.3, 0.0, 0.06)), &ctx(), &mut out, &mut notes);
        out.clear();
        notes.clear();
        for _ in 0..2 {
            ex.advance(0.02, &ctx(), &mut out, &mut notes);
        }
        assert!(ex.running(SkillGroup::Move).is_some());
        ex.advance(0.02, &ctx(), &mut out, &mut notes);
        assert!(ex.running(SkillGroup::Move).is_none());
        assert_eq!(out, vec![Command::Move { linear: 0.0, angular: 0.0 }]);
        assert_eq!(notes, vec![SkillNote::Completed { group: SkillGroup::Move, skill: "MoveFor", replaced: false }]);
    }

    #[test]
    fn turn_by_reaches_its_heading_without_overshoot() {
        let mut skill = TurnBy::new(FRAC_PI_2);
        let mut c = ctx();
        skill.entry(&c, &mut Vec::new());
        for _ in 0..100 {
            let mut cmds = Vec::new();
            let status = skill.tick(&c, &mut cmds);
            if status == SkillStatus::Done {
                break;
            }
            let Command::Move { angular, .. } = cmds[0] else { panic!() };
            c.heading += angular * c.period;
            assert!(c.heading <= FRAC_PI_2 + 1e-4);
        }
        assert!((c.heading - FRAC_PI_2).abs() <= HEADING_TOLERANCE);
    }

    #[test]
    fn move_ahead_stops_on_the_distance() {
        let mut skill = MoveAhead::new(0.3, 0.4);
        let mut c = ctx();
        skill.entry(&c, &mut Vec::new());
        let mut steps = 0;
        loop {
            let mut cmds = Vec::new();
            let status = skill.tick(&c, &mut cmds);
            if status == SkillStatus::Done {
                break;
            }
            let Command::Move { linear, .. } = cmds[0] else { panic!() };
            c.position.x += linear * c.period;
            steps += 1;
        }
        assert!((c.position.x - 0.3).abs() <= DISTANCE_TOLERANCE);
        // 0.3 m at 0.4 m/s: 0.75 s, 38 ticks of 20 ms.
        assert!((37..=39).contains(&steps), "{steps}");
    }

    /// Integrates a skill's move commands for a robot at `c` until done or `max` ticks.
    fn drive(skill: &mut dyn Skill, c: &mut SkillContext, max: usize) -> (usize, SkillStatus) {
        skill.entry(c, &mut Vec::new());
        for tick in 0..max {
            let mut cmds = Vec::new();
            let status = skill.tick(c, &mut cmds);
            if status == SkillStatus::Done {
                return (tick, status);
            }
            if let Some(Command::Move { linear, angular }) = cmds.last() {
                c.heading += angular * c.period;
                c.position += Vec2::from_angle(c.heading) * *linear * c.period;
            }
        }
        (max, SkillStatus::Running)
    }

    #[test]
    fn move_to_turns_towards_the_point_and_stops_on_it() {
        let mut c = ctx();
        let mut skill = MoveTo { point: Vec2::new(0.0, 1.0), speed: 0.4, tolerance: 0.005 };
        let (ticks, status) = drive(&mut skill, &mut c, 500);
        assert_eq!(status, SkillStatus::Done);
        assert!(c.position.distance(Vec2::new(0.0, 1.0)) <= 0.005, "{:?}", c.position);
        // 1 m at 0.4 m/s plus a quarter turn: about 2.5 s of 20 ms ticks, and not much more.
        assert!((125..=160).contains(&ticks), "{ticks}");
    }

    #[test]
    fn follow_keeps_its_distance_and_ends_when_the_subject_is_gone() {
        let mut c = ctx();
        c.target = Some(Vec2::new(1.0, 0.0));
        let mut skill = Follow { target: bevy::prelude::Entity::PLACEHOLDER, distance: 0.3, speed: 0.5 };
        let (_, status) = drive(&mut skill, &mut c, 200);
        assert_eq!(status, SkillStatus::Running, "following never completes by itself");
        assert!((c.position.x - 0.7).abs() < 0.01, "{:?}", c.position);
        // The subject moves on: the follower closes up again.
        c.target = Some(Vec2::new(2.0, 0.0));
        drive(&mut skill, &mut c, 200);
        assert!((c.position.x - 1.7).abs() < 0.01, "{:?}", c.position);
        c.target = None;
        assert_eq!(skill.tick(&c, &mut Vec::new()), SkillStatus::Done);
    }

    #[test]
    fn clear_runs_every_exit() {
        let mut ex = SkillExecutor::new(0.02);
        let (mut out, mut notes) = (vec![], vec![]);
        ex.assign(Box::new(Velocity { linear: 0.2, angular: 0.0, lateral: 0.0 }), &ctx(), &mut out, &mut notes);
        ex.assign(Box::new(Blink::new(0.1)), &ctx(), &mut out, &mut notes);
        out.clear();
        ex.clear(&ctx(), &mut out, &mut notes);
        assert_eq!(out, vec![Command::Move { linear: 0.0, angular: 0.0 }, Command::Lamp { on: false }]);
        assert!(SkillGroup::ALL.iter().all(|g| ex.running(*g).is_none()));
    }
}
