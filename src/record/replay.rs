//! Showing a recording (or a live stream from `crsim view`) in the world without running a step:
//! the scene as it ran is loaded, and every frame the recorded state of the shown step is put
//! into the components the drawing and the panel read — poses, speeds, batteries, contacts,
//! gripper and lamp, held and boxed pens, sonar beams, network degrees, explorer maps, the
//! step and the trajectory hash.

use std::path::PathBuf;

use bevy::prelude::*;

use super::capture::{PenOrder, cell_state};
use super::format::*;
use super::reader::{Frame, Recording};
use super::viewer::{ViewerClient, ViewerCommand};
use crate::control::explore::{Cell, Dir, Explorer, Move, Phase};
use crate::control::network::NetworkController;
use crate::robot::registry::SensorRegistry;
use crate::robot::{AppliedDrive, Battery, BumpSensor, DriveCommand, GripCommand, LampState, RangeScan, Robot};
use crate::sim::hash::Fnv;
use crate::sim::{PerEnv, RobotOrder, SimClock, SimTime, TrajectoryHash};
use crate::world::{Boxed, Held, Pen, Sonar};

/// Where the shown state comes from.
pub enum ReplaySource {
    /// A recording, with its timeline.
    File(Box<Timeline>),
    /// A running simulation (`crsim view`).
    Live(Box<ViewerClient>),
}

/// A recording and where the replay stands in it.
pub struct Timeline {
    pub recording: Recording,
    pub first: u64,
    pub last: u64,
    /// The step shown (or to be shown).
    pub step: u64,
    pub playing: bool,
    /// Replay speed, times real time.
    pub speed: f64,
    /// Fractional steps carried between frames.
    carry: f64,
    /// The step of the frame last read.
    loaded: Option<u64>,
    pub error: Option<String>,
}

impl Timeline {
    pub fn new(recording: Recording) -> Timeline {
        let (first, last) = recording.steps();
        Timeline {
            recording,
            first,
            last,
            step: first,
            playing: false,
            speed: 1.0,
            carry: 0.0,
            loaded: None,
            error: None,
        }
    }

    /// Moves to `step` (clamped).
    pub fn seek(&mut self, step: i64) {
        self.step = (step.max(0) as u64).clamp(self.first, self.last);
        self.carry = 0.0;
    }
}

/// The replay of the app: its source and the frame shown.
#[derive(Resource)]
pub struct Replay {
    pub source: ReplaySource,
    pub frame: Frame,
    /// Frames written by `--frames` (the exporter sets the step itself).
    pub exporting: bool,
}

impl Replay {
    pub fn file(recording: Recording) -> Replay {
        Replay {
            source: ReplaySource::File(Box::new(Timeline::new(recording))),
            frame: Frame::default(),
            exporting: false,
        }
    }

    pub fn live(client: ViewerClient) -> Replay {
        Replay { source: ReplaySource::Live(Box::new(client)), frame: Frame::default(), exporting: false }
    }

    /// The recording's path, or the address shown for a live stream.
    pub fn label(&self) -> String {
        match &self.source {
            ReplaySource::File(t) => t.recording.path.display().to_string(),
            ReplaySource::Live(_) => "a running simulation".into(),
        }
    }

    /// Sends a command to a live simulation (nothing for a file).
    pub fn send(&mut self, cmd: &ViewerCommand) {
        if let ReplaySource::Live(c) = &mut self.source {
            c.send(cmd);
        }
    }
}

/// A recording to open in the app (from the panel): the path, read on the next frame.
#[derive(Resource, Debug, Default)]
pub struct OpenRecording(pub Option<PathBuf>);

/// The replay's systems (the app adds them; they do nothing without a [`Replay`]).
pub fn plugin(app: &mut App) {
    app.init_resource::<OpenRecording>().add_systems(
        PostUpdate,
        (advance, show, show_sensors).chain().run_if(resource_exists::<Replay>).before(TransformSystems::Propagate),
    );
}

/// Plays the timeline on, or reads what the live stream sent; then loads the frame to show.
fn advance(real: Res<Time<Real>>, time: Res<SimTime>, mut replay: ResMut<Replay>, mut clock: ResMut<SimClock>) {
    // No step may run while a recording is shown.
    clock.paused = true;
    let replay = &mut *replay;
    match &mut replay.source {
        ReplaySource::File(t) => {
            if t.playing && !replay.exporting {
                t.carry += real.delta_secs_f64() * t.speed / time.dt_exact.max(1e-9);
                let whole = t.carry.floor();
                t.carry -= whole;
                t.step = (t.step + whole as u64).min(t.last);
                if t.step == t.last {
                    t.playing = false;
                }
            }
            if t.loaded != Some(t.step) {
                match t.recording.frame(t.step) {
                    Ok(f) => {
                        replay.frame = f;
                        t.error = None;
                    }
                    Err(e) => t.error = Some(e),
                }
                t.loaded = Some(t.step);
            }
        }
        ReplaySource::Live(c) => {
            c.poll();
            replay.frame = c.frame.clone();
        }
    }
}

fn parse_dir(s: &str) -> Option<Dir> {
    Dir::ALL.into_iter().find(|d| format!("{d:?}") == s)
}

fn parse_phase(s: &str) -> Option<Phase> {
    [Phase::Outbound, Phase::Recovering, Phase::Returning, Phase::Done].into_iter().find(|p| format!("{p:?}") == s)
}

fn parse_moves(s: &str) -> impl Iterator<Item = Move> + '_ {
    s.chars().filter_map(|c| match c {
        'w' => Some(Move::Forward),
        's' => Some(Move::Backward),
        'l' => Some(Move::Left),
        'r' => Some(Move::Right),
        _ => None,
    })
}

/// Puts an explorer's recorded state into its component.
pub fn show_explorer(ex: &mut Explorer, r: &ExplorerRecord) {
    if let Some(rows) = &r.map {
        let top = rows.len() as i32 - 2;
        for (i, row) in rows.iter().enumerate() {
            for (j, c) in row.chars().enumerate() {
                if let Some(s) = cell_state(c) {
                    ex.map.set(Cell::new(j as i32 - 1, top - i as i32), s);
                }
            }
        }
    }
    ex.cell = Cell::new(r.cell[0], r.cell[1]);
    if let Some(d) = parse_dir(&r.dir) {
        ex.dir = d;
    }
    if let Some(p) = parse_phase(&r.phase) {
        ex.phase = p;
    }
    ex.outbound = parse_moves(&r.outbound).collect();
    ex.plan = parse_moves(&r.plan).collect();
}

type Shown<'a> = (
    &'a mut Transform,
    &'a mut DriveCommand,
    &'a mut AppliedDrive,
    &'a mut Battery,
    &'a mut BumpSensor,
    &'a mut GripCommand,
    &'a mut LampState,
);

/// Puts each robot's recorded records of the sensors with records of their own back through the
/// registry (an extension's sensors), so the app draws and inspects what they read in the run;
/// once for each step shown (again while a robot it has records of is not there yet).
fn show_sensors(world: &mut World, mut shown: Local<Option<u64>>) {
    let Some(replay) = world.get_resource::<Replay>() else { return };
    let step = replay.frame.step.step;
    if replay.frame.sensors.is_empty() || !world.contains_resource::<SensorRegistry>() || *shown == Some(step) {
        return;
    }
    let records = replay.frame.sensors.clone();
    let robots: std::collections::HashMap<u32, Entity> =
        world.query::<(Entity, &Robot)>().iter(world).map(|(e, r)| (r.index, e)).collect();
    let all_there = world.resource_scope(|world, sensors: Mut<SensorRegistry>| {
        let mut all_there = true;
        for (index, records) in &records {
            let Some(mut robot) = robots.get(index).and_then(|&e| world.get_entity_mut(e).ok()) else {
                all_there = false;
                continue;
            };
            if let Err(e) = sensors.replay(records, &mut robot) {
                warn_once!("the replay cannot show what a sensor read: {e}");
            }
        }
        all_there
    });
    if all_there {
        *shown = Some(step);
    }
}

/// Writes the frame into the world.
fn show(
    mut commands: Commands,
    replay: Res<Replay>,
    order: Res<RobotOrder>,
    pen_order: Res<PenOrder>,
    mut time: ResMut<SimTime>,
    mut hash: ResMut<PerEnv<TrajectoryHash>>,
    mut robots: Query<Shown, (With<Robot>, Without<Pen>)>,
    mut pens: Query<(&mut Transform, Option<&Held>, Has<Boxed>), (With<Pen>, Without<Robot>)>,
    mut sonars: Query<(&Name, &mut Sonar)>,
    mut networks: Query<(&Name, &mut NetworkController)>,
    mut explorers: Query<(&Name, &mut Explorer)>,
    mut scans: Query<(&Robot, &mut RangeScan)>,
) {
    let f = &replay.frame;
    if f.robots.is_empty() && f.step.hash.is_empty() {
        return;
    }
    time.step = f.step.step;
    if let Ok(h) = u64::from_str_radix(&f.step.hash, 16) {
        *hash.only_mut() = TrajectoryHash(Fnv(h));
    }
    let r = &f.robots;
    for (i, &e) in order.0.iter().enumerate() {
        let Ok((mut t, mut cmd, mut applied, mut battery, mut bump, mut grip, mut lamp)) = robots.get_mut(e) else {
            continue;
        };
        let (Some(&x), Some(&y), Some(&h)) = (r.x.get(i), r.y.get(i), r.heading.get(i)) else { continue };
        t.translation = Vec3::new(from_mm(x), from_mm(y), t.translation.z);
        t.rotation = Quat::from_rotation_z(from_mm(h));
        let at = |v: &Vec<i32>| v.get(i).copied().map_or(0.0, from_mm);
        *cmd = DriveCommand { linear: at(&r.cmd_linear), angular: at(&r.cmd_angular), lateral: at(&r.cmd_lateral) };
        *applied = AppliedDrive { linear: at(&r.linear), angular: at(&r.angular), lateral: at(&r.lateral) };
        if let Some(&b) = r.battery.get(i) {
            battery.charge = b as f32 / 1000.0 * battery.capacity;
        }
        let fl = r.flags.get(i).copied().unwrap_or(0);
        battery.charging = fl & flags::CHARGING != 0;
        let touching = fl & flags::TOUCHING != 0;
        if touching != bump.is_touching() {
            // The drawing only asks whether it touches; the recording keeps what in /events.
            bump.touching = if touching { vec![Entity::PLACEHOLDER] } else { Vec::new() };
            bump.bearings = if touching { vec![0.0] } else { Vec::new() };
        }
        grip.close = fl & flags::GRIP_CLOSED != 0;
        lamp.on = fl & flags::LAMP != 0;
    }
    let p = &f.pens;
    for (i, &e) in pen_order.0.iter().enumerate() {
        let (Some(&x), Some(&y), Some(&holder)) = (p.x.get(i), p.y.get(i), p.holder.get(i)) else { continue };
        let Ok((mut t, held, boxed)) = pens.get_mut(e) else { continue };
        t.translation = Vec3::new(from_mm(x), from_mm(y), t.translation.z);
        let now = match (held, boxed) {
            (_, true) => PEN_BOXED,
            (Some(h), false) => order.0.iter().position(|&r| r == h.by).map_or(PEN_FREE, |i| i as i32),
            (None, false) => PEN_FREE,
        };
        if now == holder {
            continue;
        }
        let mut ec = commands.entity(e);
        match holder {
            PEN_BOXED => {
                ec.remove::<Held>().insert(Boxed { container: Entity::PLACEHOLDER });
            }
            PEN_FREE => {
                ec.remove::<(Held, Boxed)>();
            }
            robot => {
                if let Some(&by) = order.0.get(robot as usize) {
                    ec.remove::<Boxed>().insert(Held { by });
                }
            }
        }
    }
    for (robot, mut scan) in &mut scans {
        if let Some(d) = f.ranges.get(&robot.index) {
            scan.distances.clear();
            scan.distances.extend(d.iter().map(|&x| from_mm(x)));
        }
    }
    let mut by_name: Vec<(&Name, Mut<Sonar>)> = sonars.iter_mut().collect();
    by_name.sort_by(|a, b| a.0.as_str().cmp(b.0.as_str()));
    for (i, (_, s)) in by_name.iter_mut().enumerate() {
        let n = f.step.sonars.get(i).copied().unwrap_or(0) as usize;
        if s.inside.len() != n {
            s.inside = vec![(Entity::PLACEHOLDER, 0.0); n];
        }
    }
    for (name, mut nc) in &mut networks {
        if let Some(d) = f.networks.get(name.as_str()) {
            let degrees: Vec<Option<f32>> = d.iter().map(|&p| degree_from_percent(p)).collect();
            nc.brain.net.show_degrees(&degrees);
        }
    }
    for (name, mut ex) in &mut explorers {
        if let Some(r) = f.explorers.get(name.as_str()) {
            show_explorer(&mut ex, r);
        }
    }
}
