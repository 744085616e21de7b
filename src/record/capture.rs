//! Taking the record stream from the running world: after every step, the poses and state of
//! robots and pens, what happened (bumps, skills, sonars, grips, boxes, radio), the networks'
//! degrees and the explorers' maps where they changed, the inputs from outside, and every
//! [`KEYFRAME_EVERY`] steps the full state a reader starts from. The records go to every sink:
//! a file writer, the viewer server.

use std::collections::HashMap;
use std::sync::Arc;

use bevy::ecs::world::EntityRefExcept;
use bevy::prelude::*;

use super::format::Event;
use super::format::*;
use super::inputs::InputLog;
use crate::comms::{RadioIn, RadioLog};
use crate::control::explore::{CellState, Explorer};
use crate::control::network::NetworkController;
use crate::robot::registry::{Around, Carried, SensorFaults, SensorRegistry};
use crate::robot::{
    AppliedDrive, Battery, BumpEvent, BumpSensor, DriveCommand, GripCommand, LampState, RangeScan, Robot, pose,
};
use crate::sim::{PerEnv, RobotOrder, SimTime, TrajectoryHash};
use crate::skills::{SkillCompleted, SkillStarted};
use crate::world::{Arena, Boxed, Held, Pen, Sonar};

/// Where records go: a file, a viewer connection.
pub trait Sink: Send + Sync {
    /// Takes one record; an error ends this sink (the run goes on).
    fn write(&mut self, record: &Arc<Record>) -> Result<(), String>;
    /// Whether it takes messages of foreign channels (the ROS 2 topics): a ROS 2 bag does;
    /// crsim's recordings and viewers (crsim's own records) do not.
    fn wants_foreign(&self) -> bool {
        false
    }
    /// Takes a message of a foreign channel, if it [wants them](Sink::wants_foreign).
    fn write_foreign(&mut self, _message: &Arc<ForeignMessage>) -> Result<(), String> {
        Ok(())
    }
    /// The run ended after `end`; finish the output.
    fn finish(&mut self, end: &EndMeta) -> Result<(), String>;
    fn name(&self) -> String;
}

/// The recorder: its sinks and what it remembers between steps to write only changes.
#[derive(Resource, Default)]
pub struct Recorder {
    pub sinks: Vec<Box<dyn Sink>>,
    /// Errors of sinks that stopped, for the panel and the command line.
    pub errors: Vec<String>,
    /// Recordings started so far: a sink added to none starts one, written afresh.
    pub started: u64,
    /// Steps recorded so far.
    pub steps: u64,
    pub last_step: Option<u64>,
    /// The trajectory hash after the last recorded step.
    pub last_hash: String,
    /// Skill events of the step being run.
    pending: Vec<Event>,
    last_holder: Vec<i32>,
    last_inside: Vec<Vec<Entity>>,
    last_degrees: HashMap<u32, Vec<i8>>,
    last_explorer: HashMap<u32, ExplorerRecord>,
    /// Each range sensor's latest scan, for the keyframes.
    last_ranges: std::collections::BTreeMap<u32, Vec<i32>>,
    /// Each robot's latest record of each sensor with records of its own, for the keyframes.
    last_sensors: std::collections::BTreeMap<u32, std::collections::BTreeMap<String, serde_json::Value>>,
}

impl Recorder {
    pub fn active(&self) -> bool {
        !self.sinks.is_empty()
    }

    /// Starts recording into `sink` (the first sink resets what the recorder remembers, so the
    /// first step recorded is written in full).
    pub fn add_sink(&mut self, sink: Box<dyn Sink>) {
        if self.sinks.is_empty() {
            let errors = std::mem::take(&mut self.errors);
            *self = Recorder { errors, started: self.started + 1, ..default() };
        }
        self.sinks.push(sink);
    }

    /// Sends a record to every sink, dropping the sinks that fail.
    pub fn emit(&mut self, record: Record) {
        // Shared by the sinks: a file's writing thread takes it without a copy.
        let record = Arc::new(record);
        self.write_every_sink(|s| s.write(&record));
    }

    /// Whether a sink takes crsim's own records (a recording, a viewer): a ROS 2 bag alone does
    /// not, and then no step's records are made.
    pub fn wants_records(&self) -> bool {
        self.sinks.iter().any(|s| !s.wants_foreign())
    }

    /// Whether a sink takes messages of foreign channels (a ROS 2 bag being written).
    pub fn wants_foreign(&self) -> bool {
        self.sinks.iter().any(|s| s.wants_foreign())
    }

    /// Sends a message of a foreign channel (see [`ForeignChannel`]) to every sink that takes
    /// them.
    pub fn emit_foreign(&mut self, message: ForeignMessage) {
        let message = Arc::new(message);
        self.write_every_sink(|s| if s.wants_foreign() { s.write_foreign(&message) } else { Ok(()) });
    }

    /// Runs `write` on every sink, dropping the sinks that fail.
    fn write_every_sink(&mut self, mut write: impl FnMut(&mut Box<dyn Sink>) -> Result<(), String>) {
        let errors = &mut self.errors;
        self.sinks.retain_mut(|s| match write(s) {
            Ok(()) => true,
            Err(e) => {
                let e = format!("{}: {e}", s.name());
                warn!("recording: {e}");
                errors.push(e);
                false
            }
        });
    }

    /// Finishes every sink (the run is over or recording stops).
    pub fn finish(&mut self, interrupted: bool) {
        let end = EndMeta {
            steps: self.steps,
            last_step: self.last_step.unwrap_or(0),
            hash: self.last_hash.clone(),
            interrupted,
        };
        for mut s in std::mem::take(&mut self.sinks) {
            if let Err(e) = s.finish(&end) {
                let e = format!("{}: {e}", s.name());
                warn!("recording: {e}");
                self.errors.push(e);
            }
        }
    }
}

pub(super) fn skill_started(e: On<SkillStarted>, names: Query<&Name>, mut rec: ResMut<Recorder>) {
    if rec.active() {
        let robot = names.get(e.bot).map(|n| n.to_string()).unwrap_or_default();
        rec.pending.push(Event::SkillStarted { robot, group: e.group.name().into(), skill: e.skill.into() });
    }
}

pub(super) fn skill_completed(e: On<SkillCompleted>, names: Query<&Name>, mut rec: ResMut<Recorder>) {
    if rec.active() {
        let robot = names.get(e.bot).map(|n| n.to_string()).unwrap_or_default();
        rec.pending.push(Event::SkillCompleted {
            robot,
            group: e.group.name().into(),
            skill: e.skill.into(),
            replaced: e.replaced,
        });
    }
}

/// What a step's capture reads of robots.
type RobotItem<'a> =
    (&'a Transform, &'a DriveCommand, &'a AppliedDrive, &'a Battery, &'a BumpSensor, &'a GripCommand, &'a LampState);

/// The letter of a map cell's state in records.
pub fn cell_letter(s: CellState) -> char {
    match s {
        CellState::Unexplored => '?',
        CellState::Free => '.',
        CellState::Obstacle => '#',
        CellState::Danger => '!',
    }
}

pub fn cell_state(c: char) -> Option<CellState> {
    Some(match c {
        '?' => CellState::Unexplored,
        '.' => CellState::Free,
        '#' => CellState::Obstacle,
        '!' => CellState::Danger,
        _ => return None,
    })
}

fn moves(m: impl Iterator<Item = crate::control::explore::Move>) -> String {
    m.map(|m| m.letter()).collect()
}

/// An explorer's state as recorded, without the map changes.
fn explorer_state(step: u64, robot: &str, ex: &Explorer) -> ExplorerRecord {
    ExplorerRecord {
        step,
        robot: robot.to_string(),
        cell: [ex.cell.x, ex.cell.y],
        dir: format!("{:?}", ex.dir),
        phase: format!("{:?}", ex.phase),
        changed: Vec::new(),
        outbound: moves(ex.outbound.iter().copied()),
        plan: moves(ex.plan.iter().copied()),
        map: None,
    }
}

/// The map as rows of letters, top row first.
pub fn map_rows(ex: &Explorer) -> Vec<String> {
    let m = &ex.map;
    (-1..=m.rows)
        .rev()
        .map(|y| (-1..=m.cols).map(|x| cell_letter(m.get(crate::control::explore::Cell::new(x, y)))).collect())
        .collect()
}

/// After every step: the records of the step just run, channel by channel.
pub(super) fn capture(
    time: Res<SimTime>,
    hash: Res<PerEnv<TrajectoryHash>>,
    order: Res<RobotOrder>,
    mut rec: ResMut<Recorder>,
    mut inputs: ResMut<InputLog>,
    mut radio_log: ResMut<RadioLog>,
    mut bumps: MessageReader<BumpEvent>,
    robots: Query<RobotItem, With<Robot>>,
    robot_info: Query<(&Name, &Robot)>,
    names: Query<&Name>,
    pens: Query<(Entity, &Transform, &Pen, Option<&Held>, Option<&Boxed>)>,
    sonars: Query<(&Name, &Sonar)>,
    inboxes: Query<(&Name, &RadioIn)>,
    minds: (Query<(&Robot, &Name, &NetworkController)>, Query<(&Robot, &Name, &Explorer)>),
    scans: Query<(&Robot, &RangeScan)>,
    pen_order: Res<PenOrder>,
) {
    let step = time.step;
    let rec = &mut *rec;
    if rec.active() {
        rec.steps += 1;
    }
    if !rec.wants_records() {
        bumps.clear();
        radio_log.enabled = false;
        return;
    }
    radio_log.enabled = true;
    let first = rec.last_step.is_none();
    rec.last_step = Some(step);
    let name = |e: Entity| names.get(e).map(|n| n.to_string()).unwrap_or_default();
    let mut events = std::mem::take(&mut rec.pending);
    record_step(rec, &time, hash.only(), &sonars, &name, &mut events);
    record_robots(rec, step, &order, &robots);
    record_pens(rec, step, first, &order, &robot_info, &pens, &pen_order, &name, &mut events);
    events.extend(
        bumps.read().filter(|b| b.step == step).map(|b| Event::Bump { robot: name(b.robot), other: name(b.other) }),
    );
    if !events.is_empty() {
        rec.emit(Record::new(step, Body::Events(EventsRecord { step, events })));
    }
    record_radio(rec, step, &order, &mut radio_log, &inboxes);
    record_range(rec, step, &order, &scans);
    record_thinking(rec, step, first, &minds.0, &minds.1);
    let taken = std::mem::take(&mut inputs.current);
    if !taken.is_empty() {
        rec.emit(Record::new(step, Body::Inputs(InputsRecord { step, ..taken })));
    }
}

/// `/step`: the clock, the hash, and how many robots are in each sonar's beam (sonars by name);
/// a robot entering a beam is an event.
fn record_step(
    rec: &mut Recorder,
    time: &SimTime,
    hash: &TrajectoryHash,
    sonars: &Query<(&Name, &Sonar)>,
    name: &dyn Fn(Entity) -> String,
    events: &mut Vec<Event>,
) {
    let mut sonar_order: Vec<(&Name, &Sonar)> = sonars.iter().collect();
    sonar_order.sort_by(|a, b| a.0.as_str().cmp(b.0.as_str()));
    let inside: Vec<Vec<Entity>> =
        sonar_order.iter().map(|(_, s)| s.inside.iter().map(|(e, _)| *e).collect()).collect();
    for (i, e) in entered(&rec.last_inside, &inside) {
        events.push(Event::Sonar { sonar: sonar_order[i].0.to_string(), robot: name(e) });
    }
    let sonars_inside = inside.iter().map(|v| v.len() as u32).collect();
    rec.last_inside = inside;
    rec.last_hash = hash.hex();
    let step = time.step;
    let record = StepRecord { step, time: time.seconds() + time.dt_exact, hash: hash.hex(), sonars: sonars_inside };
    rec.emit(Record::new(step, Body::Step(record)));
}

/// Who is in each beam now and was not before: (beam, who), beam by beam in order.
fn entered<T: PartialEq + Copy>(before: &[Vec<T>], now: &[Vec<T>]) -> Vec<(usize, T)> {
    let mut out = Vec::new();
    for (i, inside) in now.iter().enumerate() {
        for e in inside {
            if !before.get(i).is_some_and(|prev| prev.contains(e)) {
                out.push((i, *e));
            }
        }
    }
    out
}

/// `/robots`: every robot's pose, commands, battery and flags, in robot order.
fn record_robots(rec: &mut Recorder, step: u64, order: &RobotOrder, robots: &Query<RobotItem, With<Robot>>) {
    let mut r = RobotsRecord { step, ..default() };
    r.reserve(order.0.len());
    for &e in &order.0 {
        let Ok((t, cmd, applied, battery, bump, grip, lamp)) = robots.get(e) else { continue };
        let (p, heading) = pose(t);
        r.x.push(mm(p.x));
        r.y.push(mm(p.y));
        r.heading.push(mm(heading));
        r.cmd_linear.push(mm(cmd.linear));
        r.cmd_angular.push(mm(cmd.angular));
        r.linear.push(mm(applied.linear));
        r.angular.push(mm(applied.angular));
        r.battery.push((battery.level() * 1000.0).round() as i32);
        r.flags.push(robot_flags(bump.is_touching(), grip.close, lamp.on, battery.charging));
        r.cmd_lateral.push(mm(cmd.lateral));
        r.lateral.push(mm(applied.lateral));
    }
    // Sideways columns only in a step where a robot has one.
    if r.cmd_lateral.iter().chain(&r.lateral).all(|&v| v == 0) {
        r.cmd_lateral.clear();
        r.lateral.clear();
    }
    rec.emit(Record::new(step, Body::Robots(r)));
}

/// `/sensors`: the records of the sensors registered with records of their own (an extension's,
/// `Sensor::record`), for each robot that has any, in robot order; a sensor that panics is a
/// fault of the run. It runs after `capture`, so a keyframe holds the records up to the step
/// before its own, and readers read `/sensors` from the keyframe's step on.
pub fn capture_sensors(
    mut rec: ResMut<Recorder>,
    mut faults: ResMut<SensorFaults>,
    time: Res<SimTime>,
    sensors: Option<Res<SensorRegistry>>,
    order: Res<RobotOrder>,
    arena: Res<Arena>,
    robots: Query<EntityRefExcept<(Recorder, SensorFaults)>, With<Robot>>,
    names: Query<&Name>,
) {
    let Some(sensors) = sensors.filter(|s| s.any_recorded()) else { return };
    if !rec.wants_records() {
        return;
    }
    let step = time.step;
    let name_of = |e: Entity| names.get(e).map_or_else(|_| e.to_string(), |n| n.to_string());
    let around = Around { arena: *arena, name_of: &name_of };
    let mut r = SensorsRecord { step, ..default() };
    for &e in &order.0 {
        let Ok(robot) = robots.get(e) else { continue };
        let (Some(carried), Some(index)) = (robot.get::<Carried>(), robot.get::<Robot>().map(|r| r.index)) else {
            continue;
        };
        match sensors.record(carried, &(&robot).into(), &around) {
            Ok(records) if records.is_empty() => {}
            Ok(records) => {
                rec.last_sensors.entry(index).or_default().extend(records.clone());
                r.robot.push(index);
                r.records.push(records);
            }
            Err(fault) => {
                faults.note(&fault, &name_of(e));
            }
        }
    }
    if !r.robot.is_empty() {
        rec.emit(Record::new(step, Body::Sensors(r)));
    }
}

/// `/range`: the scans taken this step, in robot order (nothing when no robot scanned).
fn record_range(rec: &mut Recorder, step: u64, order: &RobotOrder, scans: &Query<(&Robot, &RangeScan)>) {
    if scans.is_empty() {
        return;
    }
    let mut r = RangeRecord { step, ..default() };
    for &e in &order.0 {
        if let Ok((robot, scan)) = scans.get(e)
            && scan.step == step
            && !scan.distances.is_empty()
        {
            let distances: Vec<i32> = scan.distances.iter().map(|&d| mm(d)).collect();
            rec.last_ranges.insert(robot.index, distances.clone());
            r.robot.push(robot.index);
            r.distances.push(distances);
        }
    }
    if !r.robot.is_empty() {
        rec.emit(Record::new(step, Body::Range(r)));
    }
}

/// A robot's flags in `/robots`.
fn robot_flags(touching: bool, grip_closed: bool, lamp: bool, charging: bool) -> u8 {
    [(touching, flags::TOUCHING), (grip_closed, flags::GRIP_CLOSED), (lamp, flags::LAMP), (charging, flags::CHARGING)]
        .iter()
        .filter(|(on, _)| *on)
        .fold(0, |f, (_, bit)| f | bit)
}

/// `/pens`, and the grips, releases and boxes that the pens' holders' changes mean.
fn record_pens(
    rec: &mut Recorder,
    step: u64,
    first: bool,
    order: &RobotOrder,
    robot_info: &Query<(&Name, &Robot)>,
    pens: &Query<(Entity, &Transform, &Pen, Option<&Held>, Option<&Boxed>)>,
    pen_order: &PenOrder,
    name: &dyn Fn(Entity) -> String,
    events: &mut Vec<Event>,
) {
    let index_of = |e: Entity| robot_info.get(e).map(|(_, r)| r.index as i32).unwrap_or(PEN_FREE);
    let mut p = PensRecord { step, ..default() };
    for &e in &pen_order.0 {
        let Ok((_, t, _, held, boxed)) = pens.get(e) else { continue };
        p.x.push(mm(t.translation.x));
        p.y.push(mm(t.translation.y));
        p.holder.push(match (held, boxed) {
            (_, Some(_)) => PEN_BOXED,
            (Some(h), None) => index_of(h.by),
            (None, None) => PEN_FREE,
        });
    }
    if !first {
        let pen_name = |i: usize| pen_order.0.get(i).map(|&e| name(e)).unwrap_or_default();
        let robot_name = |idx: i32| order.0.get(idx as usize).map(|&e| name(e)).unwrap_or_default();
        for change in holder_changes(&rec.last_holder, &p.holder) {
            match change {
                HolderChange::Released { pen, by } => {
                    events.push(Event::Released { robot: robot_name(by), pen: pen_name(pen) })
                }
                HolderChange::Gripped { pen, by } => {
                    events.push(Event::Gripped { robot: robot_name(by), pen: pen_name(pen) })
                }
                HolderChange::Boxed { pen } => {
                    let container = pen_order
                        .0
                        .get(pen)
                        .and_then(|&e| pens.get(e).ok())
                        .and_then(|(.., b)| b.map(|b| name(b.container)))
                        .unwrap_or_default();
                    events.push(Event::Boxed { pen: pen_name(pen), container });
                }
            }
        }
    }
    rec.last_holder = p.holder.clone();
    rec.emit(Record::new(step, Body::Pens(p)));
}

/// What a change of a pen's holder means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum HolderChange {
    /// Robot number `by` let go of pen number `pen`.
    Released { pen: usize, by: i32 },
    /// Robot number `by` took it.
    Gripped { pen: usize, by: i32 },
    /// It went into a box.
    Boxed { pen: usize },
}

/// The changes from the holders `before` to those `now` (a robot's index, [`PEN_FREE`] or
/// [`PEN_BOXED`] per pen), pen by pen: a release before a grip of the same pen.
fn holder_changes(before: &[i32], now: &[i32]) -> Vec<HolderChange> {
    let mut out = Vec::new();
    for (pen, (&now, &before)) in now.iter().zip(before).enumerate() {
        if now == before {
            continue;
        }
        if before >= 0 {
            out.push(HolderChange::Released { pen, by: before });
        }
        if now >= 0 {
            out.push(HolderChange::Gripped { pen, by: now });
        }
        if now == PEN_BOXED {
            out.push(HolderChange::Boxed { pen });
        }
    }
    out
}

/// `/radio`: what was sent this step (queued and dropped by cause) and what was delivered.
fn record_radio(
    rec: &mut Recorder,
    step: u64,
    order: &RobotOrder,
    radio_log: &mut RadioLog,
    inboxes: &Query<(&Name, &RadioIn)>,
) {
    let mut radio = RadioRecord { step, ..default() };
    for (from, to, sent) in radio_log.sends.drain(..) {
        radio.sent.push(RadioSend {
            from,
            to: to.unwrap_or_else(|| "*".into()),
            queued: sent.queued,
            dropped: sent.dropped.iter().map(|(c, n)| (c.name().to_string(), n)).collect(),
        });
    }
    for &e in &order.0 {
        let Ok((to, inbox)) = inboxes.get(e) else { continue };
        for m in &inbox.0 {
            radio.delivered.push(RadioDelivery {
                to: to.to_string(),
                from: m.sender().to_string(),
                sent_step: m.sent_step,
            });
        }
    }
    if !(radio.sent.is_empty() && radio.delivered.is_empty()) {
        rec.emit(Record::new(step, Body::Radio(radio)));
    }
}

/// `/network` and `/explorer` where a robot's thinking changed, and every
/// [`KEYFRAME_EVERY`] steps (and the first) `/keyframe` with all of it.
fn record_thinking(
    rec: &mut Recorder,
    step: u64,
    first: bool,
    networks: &Query<(&Robot, &Name, &NetworkController)>,
    explorers: &Query<(&Robot, &Name, &Explorer)>,
) {
    let keyframe = first || step.is_multiple_of(KEYFRAME_EVERY);
    let mut key = KeyframeRecord { step, ..default() };
    if keyframe {
        key.ranges = RangeRecord {
            step,
            robot: rec.last_ranges.keys().copied().collect(),
            distances: rec.last_ranges.values().cloned().collect(),
        };
        key.sensors = SensorsRecord {
            step,
            robot: rec.last_sensors.keys().copied().collect(),
            records: rec.last_sensors.values().cloned().collect(),
        };
    }
    let mut nets: Vec<_> = networks.iter().collect();
    nets.sort_by_key(|(r, ..)| r.index);
    for (robot, rname, nc) in nets {
        let degrees: Vec<i8> = nc.brain.net.degrees().map(degree_percent).collect();
        let record = NetworkRecord { step, robot: rname.to_string(), degrees };
        if rec.last_degrees.get(&robot.index) != Some(&record.degrees) {
            rec.last_degrees.insert(robot.index, record.degrees.clone());
            rec.emit(Record::new(step, Body::Network(record.clone())));
        }
        if keyframe {
            key.networks.push(record);
        }
    }
    let mut exs: Vec<_> = explorers.iter().collect();
    exs.sort_by_key(|(r, ..)| r.index);
    for (robot, rname, ex) in exs {
        let mut state = explorer_state(step, rname.as_str(), ex);
        let rows = map_rows(ex);
        let before = rec.last_explorer.get(&robot.index);
        if let Some(before) = before {
            state.changed = map_changes(before.map.as_deref().unwrap_or_default(), &rows, ex.map.rows);
        }
        let same = before.is_some_and(|b| {
            state.changed.is_empty()
                && b.cell == state.cell
                && b.dir == state.dir
                && b.phase == state.phase
                && b.outbound == state.outbound
                && b.plan == state.plan
        });
        if !same {
            rec.emit(Record::new(step, Body::Explorer(state.clone())));
        }
        if keyframe {
            key.explorers.push(ExplorerRecord { changed: Vec::new(), map: Some(rows.clone()), ..state.clone() });
        }
        rec.last_explorer.insert(robot.index, ExplorerRecord { map: Some(rows), changed: Vec::new(), ..state });
    }
    if keyframe {
        rec.emit(Record::new(step, Body::Keyframe(key)));
    }
}

/// The cells of a map (rows of letters, top row first, a ring of cells around `rows` rows) that
/// differ from `old` to `new`: (x, y, new letter), x and y in map cells.
fn map_changes(old: &[String], new: &[String], rows: i32) -> Vec<(i32, i32, char)> {
    let mut out = Vec::new();
    for (row_i, (new_row, old_row)) in new.iter().zip(old).enumerate() {
        if new_row == old_row {
            continue;
        }
        let y = rows - row_i as i32;
        for (col_i, (a, b)) in new_row.chars().zip(old_row.chars()).enumerate() {
            if a != b {
                out.push((col_i as i32 - 1, y, a));
            }
        }
    }
    out
}

/// Pens in scene order (their entities), kept by the recorder and the replay.
#[derive(Resource, Debug, Default, Clone)]
pub struct PenOrder(pub Vec<Entity>);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_robot_entering_a_beam_is_told_once_beam_by_beam() {
        let before = vec![vec![1, 2], vec![]];
        let now = vec![vec![2, 3], vec![1], vec![4]];
        assert_eq!(entered(&before, &now), vec![(0, 3), (1, 1), (2, 4)]);
        assert_eq!(entered(&now, &now), vec![]);
    }

    #[test]
    fn flags_are_bits() {
        assert_eq!(robot_flags(false, false, false, false), 0);
        assert_eq!(robot_flags(true, false, true, false), flags::TOUCHING | flags::LAMP);
        assert_eq!(robot_flags(false, true, false, true), flags::GRIP_CLOSED | flags::CHARGING);
    }

    #[test]
    fn holder_changes_are_releases_grips_and_boxes_pen_by_pen() {
        use HolderChange::*;
        // Pen 0 passes from robot 2 to robot 5; pen 1 is gripped; pen 2 goes from robot 1 into a
        // box; pen 3 stays; pen 4 is dropped on the floor.
        let before = [2, PEN_FREE, 1, 0, 3];
        let now = [5, 4, PEN_BOXED, 0, PEN_FREE];
        assert_eq!(
            holder_changes(&before, &now),
            vec![
                Released { pen: 0, by: 2 },
                Gripped { pen: 0, by: 5 },
                Gripped { pen: 1, by: 4 },
                Released { pen: 2, by: 1 },
                Boxed { pen: 2 },
                Released { pen: 4, by: 3 },
            ]
        );
    }

    #[test]
    fn map_changes_name_the_cells_that_differ_in_map_coordinates() {
        // A map of 2 rows and 3 columns with its ring: rows y = 2, 1, 0, -1; columns x = -1..=3.
        let old: Vec<String> = ["#####", "#...#", "#???#", "#####"].map(String::from).to_vec();
        let mut new = old.clone();
        new[1] = "#.!.#".into();
        new[2] = "#?#?#".into();
        assert_eq!(map_changes(&old, &new, 2), vec![(1, 1, '!'), (1, 0, '#')]);
    }
}
