//! The DDS side of the bridge: the participant and its node ([`super::dds`]), each robot's
//! writers and readers, and the two systems of a step — commands in (think stage), the robots'
//! state out (record stage, after physics). Writing leaves the step's thread: a writer thread
//! takes the samples a step hands over, and when it falls behind (a reliable reader on every
//! topic, a slow network) the step does not wait for it — newer state replaces the state not yet
//! written, events (bump and gripper changes, radio messages, the fixed transforms) are kept.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use bevy::prelude::*;
use serde::Serialize;
use serde_json::json;

use super::dds::{Participant, Reader, Writer};
use super::feed::{Bridged, COMMANDS, Feed, Published, RADIO, Sample, feeds, gather};
use super::msgs;
use crate::control::programs::protocol::{OutMessage, RobotAction};
use crate::control::programs::{InProcess, Program};
use crate::robot::Robot;
use crate::scene::ActiveScene;
use crate::scene::schema::{LatePolicy, ProgramsSpec, Ros2Spec, RosDistro, TfLayout};
use crate::sim::{RobotOrder, SimTime};

/// The most `cmd_vel` samples read for one robot in one step: a flood beyond it waits in DDS's
/// history (which keeps the newest) and never stalls the step.
const MAX_COMMANDS_PER_STEP: usize = 64;

/// The most samples waiting for the writer thread: events beyond it (the writer has stopped
/// keeping up for a long while) are counted and dropped rather than held without bound.
const MAX_PENDING: usize = 1 << 18;

/// What the bridge counted, for the run's metrics and the panel.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Ros2Stats {
    /// Samples written (every topic).
    pub published: u64,
    /// Samples DDS refused to write.
    pub publish_errors: u64,
    /// State samples (odometry, scans, transforms, the clock) a newer one replaced before the
    /// writer thread got to them: it fell behind the simulation.
    pub coalesced: u64,
    /// Event samples dropped because the writer thread was far behind.
    pub publish_dropped: u64,
    /// `cmd_vel` commands applied.
    pub commands: u64,
    /// `cmd_vel` samples that did not decode (a truncated `Twist` among them), or carried values
    /// that are not finite numbers.
    pub malformed: u64,
    /// `cmd_vel` samples superseded within a step by a newer one.
    pub superseded: u64,
    /// Robots stopped because their newest command was older than `ros2.cmd_vel_timeout`.
    pub timeouts: u64,
    /// Lock-step: robot-steps whose command did not come in time.
    pub late: u64,
    /// Radio messages taken from `radio/send` and handed to the radio.
    pub radio_sent: u64,
    /// `radio/send` samples that were not a message (`{"to": ROBOT, "content": ...}`), or
    /// longer than the scene's `programs.max_message_bytes`.
    pub radio_malformed: u64,
}

/// A driven robot's incoming side on the simulation's thread: what it reads and remembers.
struct RobotInputs {
    entity: Entity,
    /// Program robots only: the others are not driven from outside.
    cmd_vel: Option<Reader<msgs::Twist>>,
    /// Program robots only: messages to send over crsim's radio.
    radio_send: Option<Reader<msgs::Text>>,
    /// Lock-step: a command came from this robot's node, and (late policy `Drop`) it is awaited.
    heard: bool,
    awaited: bool,
    /// Free-running: the step of the newest command, and whether the robot was stopped since
    /// for want of a newer one.
    last_command: Option<u64>,
    timed_out: bool,
}

/// One robot's writers, owned by the writer thread.
struct RobotWriters {
    odom: Writer<msgs::Odometry>,
    scan: Option<Writer<msgs::LaserScan>>,
    battery: Writer<msgs::BatteryState>,
    bump: Writer<msgs::Bool>,
    gripper: Writer<msgs::Bool>,
    /// Messages the radio delivered to it.
    radio_received: Writer<msgs::Text>,
    /// Its own `/<ns>/tf` and `/<ns>/tf_static` (the `Namespaced` layout).
    tf: Option<(Writer<msgs::TfMessage>, Writer<msgs::TfMessage>)>,
}

/// Every writer.
struct Outbox {
    robots: Vec<RobotWriters>,
    clock: Writer<msgs::Clock>,
    /// The one `/tf` and `/tf_static` (the `Global` layout).
    tf: Option<(Writer<msgs::TfMessage>, Writer<msgs::TfMessage>)>,
}

impl Outbox {
    /// Writes one sample; whether DDS took it.
    fn write(&self, sample: Sample) -> bool {
        fn put<M>(w: &Writer<M>, m: M) -> bool
        where
            M: Serialize,
        {
            w.write(m, None).is_ok()
        }
        let robot = |i: usize| self.robots.get(i);
        let tf = |i: Option<usize>| match i {
            Some(i) => robot(i).and_then(|r| r.tf.as_ref()),
            None => self.tf.as_ref(),
        };
        match sample {
            Sample::Odom(i, m) => robot(i).is_some_and(|r| put(&r.odom, *m)),
            Sample::Scan(i, m) => robot(i).and_then(|r| r.scan.as_ref()).is_some_and(|w| put(w, m)),
            Sample::Battery(i, m) => robot(i).is_some_and(|r| put(&r.battery, m)),
            Sample::Bump(i, data) => robot(i).is_some_and(|r| put(&r.bump, msgs::Bool { data })),
            Sample::Gripper(i, data) => robot(i).is_some_and(|r| put(&r.gripper, msgs::Bool { data })),
            Sample::Received(i, data) => robot(i).is_some_and(|r| put(&r.radio_received, msgs::Text { data })),
            Sample::Tf(i, m) => tf(i).is_some_and(|(w, _)| put(w, m)),
            Sample::TfStatic(i, m) => tf(i).is_some_and(|(_, w)| put(w, m)),
            Sample::Clock(m) => put(&self.clock, m),
        }
    }
}

/// What the writer thread counted.
#[derive(Default)]
struct WriteCounts {
    published: AtomicU64,
    errors: AtomicU64,
    coalesced: AtomicU64,
    dropped: AtomicU64,
}

/// Where a state sample waits: its robot (none for the world's topics) and its topic.
type Route = (Option<usize>, &'static str);

/// The samples handed over and not yet taken by the writer thread.
#[derive(Default)]
struct Pending {
    samples: Vec<Sample>,
    /// Where each waiting state sample is in `samples`, made when a second step's samples come
    /// before the writer took the first (it is behind) and kept until it takes them.
    waiting: std::collections::HashMap<Route, usize>,
    closed: bool,
}

impl Pending {
    /// Adds a step's samples: a state sample replaces the one of its topic still waiting (the
    /// writer fell behind; only the newest is worth sending), an event is added.
    fn add(&mut self, batch: Vec<Sample>, counts: &WriteCounts) {
        if self.samples.is_empty() {
            self.samples = batch;
            return;
        }
        if self.waiting.is_empty() {
            let state = self.samples.iter().enumerate().filter(|(_, s)| s.superseded_by_newer());
            self.waiting = state.map(|(k, s)| (route(s), k)).collect();
        }
        for sample in batch {
            let state = sample.superseded_by_newer();
            match self.waiting.get(&route(&sample)) {
                Some(&k) if state => {
                    self.samples[k] = sample;
                    counts.coalesced.fetch_add(1, Ordering::Relaxed);
                }
                _ if self.samples.len() >= MAX_PENDING => {
                    counts.dropped.fetch_add(1, Ordering::Relaxed);
                }
                _ => {
                    if state {
                        self.waiting.insert(route(&sample), self.samples.len());
                    }
                    self.samples.push(sample);
                }
            }
        }
    }

    /// Everything waiting, for the writer thread.
    fn take(&mut self) -> Vec<Sample> {
        self.waiting.clear();
        std::mem::take(&mut self.samples)
    }
}

fn route(s: &Sample) -> Route {
    let (robot, topic, _) = s.route();
    (robot, topic)
}

/// The writer thread and what it is handed: a step's samples are handed over without waiting,
/// and DDS's serialising and hand-over to its own event loop (a few microseconds a sample) run
/// beside the next step instead of inside this one.
struct WriterThread {
    pending: Arc<(Mutex<Pending>, Condvar)>,
    thread: Option<std::thread::JoinHandle<()>>,
    counts: Arc<WriteCounts>,
}

impl WriterThread {
    fn start(outbox: Outbox) -> Result<Self, String> {
        let pending: Arc<(Mutex<Pending>, Condvar)> = Arc::default();
        let counts = Arc::new(WriteCounts::default());
        let (thread_pending, thread_counts) = (Arc::clone(&pending), Arc::clone(&counts));
        let thread = std::thread::Builder::new()
            .name("crsim ROS 2 writer".into())
            .spawn(move || {
                let (lock, ready) = &*thread_pending;
                loop {
                    let batch = {
                        let mut p = lock.lock().unwrap_or_else(|e| e.into_inner());
                        while p.samples.is_empty() && !p.closed {
                            p = ready.wait(p).unwrap_or_else(|e| e.into_inner());
                        }
                        if p.samples.is_empty() {
                            return;
                        }
                        p.take()
                    };
                    for sample in batch {
                        let counter =
                            if outbox.write(sample) { &thread_counts.published } else { &thread_counts.errors };
                        counter.fetch_add(1, Ordering::Relaxed);
                    }
                }
            })
            .map_err(|e| format!("cannot start the ROS 2 writer thread: {e}"))?;
        Ok(Self { pending, thread: Some(thread), counts })
    }

    /// Hands a step's samples over; never waits for the writer.
    fn send(&self, batch: Vec<Sample>) {
        let (lock, ready) = &*self.pending;
        lock.lock().unwrap_or_else(|e| e.into_inner()).add(batch, &self.counts);
        ready.notify_one();
    }
}

impl Drop for WriterThread {
    /// Everything handed over is written before the writers go.
    fn drop(&mut self) {
        let (lock, ready) = &*self.pending;
        lock.lock().unwrap_or_else(|e| e.into_inner()).closed = true;
        ready.notify_one();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The participant and what it serves.
struct Dds {
    domain: u16,
    // Dropped in this order: the writer thread finishes and drops the writers, then the readers
    // go, then the participant (which tells the graph its node has gone).
    writer: WriterThread,
    /// Every bridged robot's outgoing side, and the incoming side of each in the same order.
    feeds: Vec<Feed>,
    robots: Vec<RobotInputs>,
    /// Whether the fixed transforms went out (with the first step's samples).
    sent_static: bool,
    participant: Participant,
}

/// The bridge's state: serving or not, where, and what it counted.
#[derive(Resource, Default)]
pub struct Ros2Bridge {
    dds: Option<Dds>,
    /// The settings it serves with.
    pub settings: Ros2Spec,
    /// Why it does not serve, when it was asked to.
    pub error: Option<String>,
    /// Whether it made the program robots in-process (to undo when it closes).
    drives_programs: bool,
    /// The scene generation and request it was last opened for.
    pub(super) opened_for: Option<(u64, super::Ros2Request)>,
    pub stats: Ros2Stats,
}

impl Ros2Bridge {
    /// The DDS domain it serves, if it serves.
    pub fn domain(&self) -> Option<u16> {
        self.dds.as_ref().map(|d| d.domain)
    }

    /// The ROS 2 release whose wire it speaks, if it serves.
    pub fn distro(&self) -> Option<RosDistro> {
        self.dds.as_ref().map(|d| d.participant.distro)
    }

    /// What it counted, the writer thread's samples so far included.
    pub fn stats(&self) -> Ros2Stats {
        let mut stats = self.stats.clone();
        if let Some(d) = &self.dds {
            let c = &d.writer.counts;
            stats.published += c.published.load(Ordering::Relaxed);
            stats.publish_errors += c.errors.load(Ordering::Relaxed);
            stats.coalesced += c.coalesced.load(Ordering::Relaxed);
            stats.publish_dropped += c.dropped.load(Ordering::Relaxed);
        }
        stats
    }

    /// The namespaces it serves, in robot order.
    pub fn namespaces(&self) -> Vec<String> {
        self.dds.as_ref().map_or_else(Vec::new, |d| d.feeds.iter().map(|r| r.namespace.clone()).collect())
    }

    /// Serves the scene's robots on `domain` as release `distro` speaks, or records why it
    /// cannot.
    pub(super) fn open(&mut self, world: &mut World, settings: &Ros2Spec, domain: u16, distro: RosDistro) {
        self.settings = settings.clone();
        // The old participant goes first: its node leaves the graph before the new one joins.
        self.shut_down();
        let order = world.resource::<RobotOrder>().0.clone();
        let feeds = world.run_system_cached_with(
            |In((order, settings)): In<(Vec<Entity>, Ros2Spec)>, robots: Query<Bridged>| {
                feeds(&order, &robots, &settings)
            },
            (order, settings.clone()),
        );
        let Ok(feeds) = feeds else { return self.fail("cannot read the scene's robots".into()) };
        let opened = Participant::join(domain, distro, ("/", "crsim")).and_then(|mut participant| {
            let (robots, outbox) = endpoints(&feeds, settings, &mut participant)?;
            participant.announce()?;
            Ok((participant, robots, WriterThread::start(outbox)?))
        });
        match opened {
            Ok((participant, robots, writer)) => {
                self.error = None;
                self.dds = Some(Dds { domain, writer, feeds, robots, sent_static: false, participant });
            }
            Err(e) => self.fail(e),
        }
    }
    /// While it serves, the program robots are driven in the process (from `cmd_vel`), and no
    /// program server opens for them.
    pub(super) fn drive_programs(&mut self, world: &mut World) {
        world.insert_resource(InProcess);
        self.drives_programs = true;
    }

    pub(super) fn fail(&mut self, e: String) {
        error!("ROS 2: {e}");
        self.shut_down();
        self.error = Some(e);
    }

    /// Stops serving DDS: what the writer thread was handed is written first, and what it
    /// counted is kept in [`Ros2Bridge::stats`].
    pub(super) fn shut_down(&mut self) {
        let Some(dds) = self.dds.take() else { return };
        let counts = Arc::clone(&dds.writer.counts);
        drop(dds);
        let s = &mut self.stats;
        s.published += counts.published.load(Ordering::Relaxed);
        s.publish_errors += counts.errors.load(Ordering::Relaxed);
        s.coalesced += counts.coalesced.load(Ordering::Relaxed);
        s.publish_dropped += counts.dropped.load(Ordering::Relaxed);
    }

    /// Stops serving (the scene no longer asks for it).
    pub(super) fn close(&mut self, world: &mut World) {
        self.shut_down();
        self.error = None;
        if std::mem::take(&mut self.drives_programs) {
            world.remove_resource::<InProcess>();
        }
    }
}

/// The DDS domain: the command line's, else the scene's, else `ROS_DOMAIN_ID` (as every ROS 2
/// node reads it), else 0.
pub fn domain_id(asked: Option<u16>, scene: Option<u16>, env: Option<&str>) -> Result<u16, String> {
    let env = match env.map(str::trim).filter(|s| !s.is_empty()) {
        Some(s) => Some(s.parse::<u16>().map_err(|_| format!("ROS_DOMAIN_ID \"{s}\" is not a domain id (0..=232)"))?),
        None => None,
    };
    let (d, from) = match (asked, scene, env) {
        (Some(d), ..) => (d, "--ros2-domain"),
        (None, Some(d), _) => (d, "the scene's ros2.domain_id"),
        (None, None, Some(d)) => (d, "ROS_DOMAIN_ID"),
        (None, None, None) => (0, "the default"),
    };
    if d > Ros2Spec::MAX_DOMAIN_ID {
        return Err(format!("{from} {d} is not a domain id: DDS domains are 0..={}", Ros2Spec::MAX_DOMAIN_ID));
    }
    Ok(d)
}

/// Every bridged robot's topics, in the feeds' order, and `/clock`, `/tf` and `/tf_static` (one
/// of each, or each robot's own under the `Namespaced` layout).
fn endpoints(feeds: &[Feed], settings: &Ros2Spec, p: &mut Participant) -> Result<(Vec<RobotInputs>, Outbox), String> {
    use super::feed::{LATCHED, SENSOR, SENSOR_RELIABLE, STATE};
    let scan_qos = if settings.scan_reliable { SENSOR_RELIABLE } else { SENSOR };
    let namespaced = settings.tf == TfLayout::Namespaced;
    let (mut robots, mut writers) = (Vec::new(), Vec::new());
    for f in feeds {
        let at = |topic: &str| format!("{}/{topic}", f.namespace.trim_end_matches('/'));
        let (cmd_vel, radio_send) = if f.program {
            let cmd_vel = p.reader(&at("cmd_vel"), "geometry_msgs/msg/Twist", COMMANDS)?;
            let send = p.reader(&at("radio/send"), "std_msgs/msg/String", RADIO)?;
            (Some(cmd_vel), Some(send))
        } else {
            (None, None)
        };
        let tf = if namespaced {
            let tf = p.writer(&at("tf"), "tf2_msgs/msg/TFMessage", STATE)?;
            Some((tf, p.writer(&at("tf_static"), "tf2_msgs/msg/TFMessage", LATCHED)?))
        } else {
            None
        };
        writers.push(RobotWriters {
            odom: p.writer(&at("odom"), "nav_msgs/msg/Odometry", STATE)?,
            scan: if f.ranged { Some(p.writer(&at("scan"), "sensor_msgs/msg/LaserScan", scan_qos)?) } else { None },
            battery: p.writer(&at("battery"), "sensor_msgs/msg/BatteryState", STATE)?,
            bump: p.writer(&at("bump"), "std_msgs/msg/Bool", LATCHED)?,
            gripper: p.writer(&at("gripper"), "std_msgs/msg/Bool", LATCHED)?,
            radio_received: p.writer(&at("radio/received"), "std_msgs/msg/String", RADIO)?,
            tf,
        });
        robots.push(RobotInputs {
            entity: f.entity,
            cmd_vel,
            radio_send,
            heard: false,
            awaited: true,
            last_command: None,
            timed_out: false,
        });
    }
    let clock = p.writer("/clock", "rosgraph_msgs/msg/Clock", STATE)?;
    let tf = if namespaced {
        None
    } else {
        let tf = p.writer("/tf", "tf2_msgs/msg/TFMessage", STATE)?;
        Some((tf, p.writer("/tf_static", "tf2_msgs/msg/TFMessage", LATCHED)?))
    };
    Ok((robots, Outbox { robots: writers, clock, tf }))
}

/// The next valid command waiting on a robot's `cmd_vel`, passing over (and counting) samples
/// that do not decode or carry values that are not finite numbers; `budget` bounds the samples
/// read.
fn take_valid(sub: &Reader<msgs::Twist>, stats: &mut Ros2Stats, budget: &mut usize) -> Option<msgs::Twist> {
    while *budget > 0 {
        *budget -= 1;
        match sub.try_take_one() {
            Ok(Some(c)) if c.sample.is_finite() => return Some(c.sample),
            Ok(Some(_)) | Err(_) => stats.malformed += 1,
            Ok(None) => return None,
        }
    }
    None
}

/// The newest valid command of a robot's `cmd_vel` this step, the older ones counted as
/// superseded.
fn newest_command(sub: &Reader<msgs::Twist>, stats: &mut Ros2Stats) -> Option<msgs::Twist> {
    let (mut budget, mut newest) = (MAX_COMMANDS_PER_STEP, None);
    while let Some(t) = take_valid(sub, stats, &mut budget) {
        stats.superseded += u64::from(newest.is_some());
        newest = Some(t);
    }
    newest
}

/// `ros2.cmd_vel_timeout` in whole steps of simulated time (none: never).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timeout(Option<u64>);

impl Timeout {
    pub fn steps(seconds: f32, dt: f64) -> Timeout {
        Timeout((seconds > 0.0 && dt > 0.0).then(|| (seconds as f64 / dt).ceil().max(1.0) as u64))
    }

    /// The command a free-running robot gets at `step`: the one that came (noting its step), or,
    /// once the newest is older than the timeout, a stop, given once; and whether it was
    /// stopped now. `timed_out` remembers that the stop was given.
    pub fn apply(
        self,
        command: Option<msgs::Twist>,
        step: u64,
        last: &mut Option<u64>,
        timed_out: &mut bool,
    ) -> (Option<msgs::Twist>, bool) {
        if command.is_some() {
            (*last, *timed_out) = (Some(step), false);
            return (command, false);
        }
        match (self.0, *last) {
            (Some(limit), Some(at)) if !*timed_out && step.saturating_sub(at) >= limit => {
                *timed_out = true;
                (Some(msgs::Twist::default()), true)
            }
            _ => (None, false),
        }
    }
}

/// The program action of a `cmd_vel` command: forward speed, sideways speed (`linear.y`, a
/// holonomic robot's; 0 for a differential one) and turn rate within the robot's maxima (a
/// diff-drive robot ignores the other four values, as ROS 2's diff drive controller does; a
/// holonomic one the other three, as its omni-wheel controllers do).
pub fn command_action(name: &str, twist: &msgs::Twist, robot: &Robot) -> RobotAction {
    let linear = (twist.linear.x as f32).clamp(-robot.max_speed, robot.max_speed);
    let angular = (twist.angular.z as f32).clamp(-robot.max_turn, robot.max_turn);
    let lateral = (twist.linear.y as f32).clamp(-robot.max_lateral, robot.max_lateral);
    RobotAction {
        name: name.to_string(),
        drive: Some([linear, angular, lateral]),
        skill: None,
        grip: None,
        lamp: None,
        send: vec![],
    }
}

/// Think stage: each driven robot's `cmd_vel` and `radio/send` become its program's action —
/// the newest command that came, or in lock-step the next one, waited for; and every message.
pub(super) fn receive(
    mut bridge: ResMut<Ros2Bridge>,
    time: Res<SimTime>,
    active: Res<ActiveScene>,
    mut robots: Query<(&Name, &Robot, &mut Program)>,
) {
    let Ros2Bridge { dds, settings, stats, .. } = &mut *bridge;
    let Some(dds) = dds else { return };
    let programs = &active.scene.programs;
    let commands: Vec<Option<msgs::Twist>> = if settings.lockstep {
        lockstep_commands(&mut dds.robots, time.step, programs, stats)
    } else {
        let timeout = Timeout::steps(settings.cmd_vel_timeout, time.dt_exact);
        let mut commands = Vec::with_capacity(dds.robots.len());
        for r in &mut dds.robots {
            let command = r.cmd_vel.as_ref().and_then(|sub| newest_command(sub, stats));
            stats.commands += u64::from(command.is_some());
            let (command, stopped) = timeout.apply(command, time.step, &mut r.last_command, &mut r.timed_out);
            stats.timeouts += u64::from(stopped);
            commands.push(command);
        }
        commands
    };
    for (r, twist) in dds.robots.iter().zip(commands) {
        let sends =
            r.radio_send.as_ref().map_or_else(Vec::new, |sub| radio_messages(sub, programs.max_message_bytes, stats));
        if twist.is_none() && sends.is_empty() {
            continue;
        }
        if let Ok((name, robot, mut program)) = robots.get_mut(r.entity) {
            let mut action = match twist {
                Some(t) => command_action(name, &t, robot),
                None => RobotAction {
                    name: name.to_string(),
                    drive: None,
                    skill: None,
                    grip: None,
                    lamp: None,
                    send: vec![],
                },
            };
            stats.radio_sent += sends.len() as u64;
            action.send = sends;
            program.set_action(action);
        }
    }
}

/// Lock-step: each driven robot's next command, waited for (the first up to
/// `wait_for_robots`, then up to `step_timeout`); a late robot's as `programs.late` says
/// (`Keep`: none, `Stop`: a stop, `Drop`: a stop, and it is awaited no more until it speaks).
fn lockstep_commands(
    robots: &mut [RobotInputs],
    step: u64,
    programs: &ProgramsSpec,
    stats: &mut Ros2Stats,
) -> Vec<Option<msgs::Twist>> {
    let first = step == 0 || robots.iter().any(|r| r.cmd_vel.is_some() && !r.heard);
    let wait = if first { programs.wait_for_robots } else { programs.step_timeout };
    let deadline = Instant::now() + Duration::from_secs_f32(wait);
    let (stop, drop) = (programs.late != LatePolicy::Keep, programs.late == LatePolicy::Drop);
    let mut commands = Vec::with_capacity(robots.len());
    for r in robots {
        let Some(sub) = &r.cmd_vel else {
            commands.push(None);
            continue;
        };
        let limit = if r.awaited { deadline } else { Instant::now() };
        let command = match next_command(sub, limit, stats) {
            Some(twist) => {
                stats.commands += 1;
                (r.heard, r.awaited) = (true, true);
                Some(twist)
            }
            None if r.awaited => {
                stats.late += 1;
                r.awaited = !drop;
                stop.then(msgs::Twist::default)
            }
            None => None,
        };
        commands.push(command);
    }
    commands
}

/// The messages waiting on a robot's `radio/send`: each a JSON `{"to": ROBOT, "content": ...}`
/// (no `to`: a broadcast) as robot programs send them, its content at most `max_bytes` of JSON.
fn radio_messages(sub: &Reader<msgs::Text>, max_bytes: usize, stats: &mut Ros2Stats) -> Vec<OutMessage> {
    let mut out = Vec::new();
    for _ in 0..MAX_COMMANDS_PER_STEP {
        match sub.try_take_one() {
            Ok(Some(c)) => match radio_message(&c.sample.data, max_bytes) {
                Some(m) => out.push(m),
                None => stats.radio_malformed += 1,
            },
            Ok(None) => break,
            Err(_) => stats.radio_malformed += 1,
        }
    }
    out
}

/// One `radio/send` sample as a message, if it is one within `max_bytes` of content.
pub fn radio_message(text: &str, max_bytes: usize) -> Option<OutMessage> {
    if text.len() > max_bytes.saturating_mul(2).saturating_add(256) {
        return None;
    }
    let m: OutMessage = serde_json::from_str(text).ok()?;
    (serde_json::to_string(&m.content).ok()?.len() <= max_bytes).then_some(m)
}

/// Lock-step: the next valid command of a robot's `cmd_vel`, waited for until `deadline`.
fn next_command(sub: &Reader<msgs::Twist>, deadline: Instant, stats: &mut Ros2Stats) -> Option<msgs::Twist> {
    let mut spins = 0u32;
    loop {
        if let Some(t) = take_valid(sub, stats, &mut { MAX_COMMANDS_PER_STEP }) {
            return Some(t);
        }
        if Instant::now() >= deadline {
            return None;
        }
        // A node answering within microseconds is met by spinning; a slow one by short sleeps.
        spins += 1;
        if spins < 200 {
            std::thread::yield_now();
        } else {
            std::thread::sleep(Duration::from_micros(100));
        }
    }
}

/// Record stage, after physics: each robot's state at its rates, then `/clock` (see
/// [`gather`]), handed to the writer thread as one batch.
pub(super) fn publish(mut bridge: ResMut<Ros2Bridge>, time: Res<SimTime>, robots: Query<Published>) {
    let Ros2Bridge { dds, settings, .. } = &mut *bridge;
    let Some(dds) = dds else { return };
    let first = !std::mem::replace(&mut dds.sent_static, true);
    dds.writer.send(gather(&mut dds.feeds, settings, &time, &robots, first));
}

/// The run metrics' `ros2` section, when the bridge was asked for.
pub(super) fn report_section(world: &mut World) -> Option<(String, serde_json::Value)> {
    let bridge = world.get_resource::<Ros2Bridge>()?;
    if bridge.dds.is_none() && bridge.error.is_none() {
        return None;
    }
    let stats = bridge.stats();
    Some((
        "ros2".into(),
        json!({
            "domain_id": bridge.domain(),
            "error": bridge.error,
            "namespaces": bridge.namespaces(),
            "distro": bridge.distro().map(|d| format!("{d:?}")),
            "published": stats.published,
            "publish_errors": stats.publish_errors,
            "coalesced": stats.coalesced,
            "publish_dropped": stats.publish_dropped,
            "timeouts": stats.timeouts,
            "commands": stats.commands,
            "malformed": stats.malformed,
            "superseded": stats.superseded,
            "late": stats.late,
            "radio_sent": stats.radio_sent,
            "radio_malformed": stats.radio_malformed,
            "lockstep": bridge.settings.lockstep,
        }),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_domain_is_the_command_lines_then_the_scenes_then_ros_domain_id() {
        assert_eq!(domain_id(Some(3), Some(4), Some("5")), Ok(3));
        assert_eq!(domain_id(None, Some(4), Some("5")), Ok(4));
        assert_eq!(domain_id(None, None, Some(" 5 ")), Ok(5));
        assert_eq!(domain_id(None, None, Some("")), Ok(0));
        assert_eq!(domain_id(None, None, None), Ok(0));
        assert_eq!(domain_id(None, None, Some("x")).unwrap_err(), "ROS_DOMAIN_ID \"x\" is not a domain id (0..=232)");
        assert_eq!(
            domain_id(Some(300), None, None).unwrap_err(),
            "--ros2-domain 300 is not a domain id: DDS domains are 0..=232"
        );
        assert!(domain_id(None, None, Some("233")).unwrap_err().starts_with("ROS_DOMAIN_ID 233"));
    }

    #[test]
    fn a_radio_sample_is_a_message_with_its_content_within_the_limit() {
        let m = radio_message(r#"{"to": "beta", "content": {"claim": {"pen": "p1", "distance": 1.5}}}"#, 64).unwrap();
        assert_eq!(m.to.as_deref(), Some("beta"));
        assert_eq!(radio_message(r#"{"content": "hello"}"#, 64).unwrap().to, None);
        assert!(radio_message("not json", 64).is_none());
        assert!(radio_message(r#"{"to": "beta"}"#, 64).is_none(), "a message has content");
        assert!(radio_message(r#"{"content": "0123456789"}"#, 8).is_none(), "12 bytes of JSON over 8");
        assert!(radio_message(&format!(r#"{{"content": "{}"}}"#, "x".repeat(10_000)), 64).is_none());
    }

    /// A peer that died left its robot driving on the last command forever: 0.5 s of simulated
    /// time after the newest command the robot gets one stop, and no more until commands return.
    #[test]
    fn a_command_older_than_the_timeout_stops_the_robot_once() {
        let t = Timeout::steps(0.5, 0.02);
        assert_eq!(t, Timeout(Some(25)));
        let mut drive = msgs::Twist::default();
        drive.linear.x = 0.2;
        let (mut last, mut out) = (None, false);
        assert_eq!(t.apply(None, 0, &mut last, &mut out), (None, false), "no command yet: nothing to stop");
        assert_eq!(t.apply(Some(drive), 3, &mut last, &mut out), (Some(drive), false));
        assert_eq!(t.apply(None, 27, &mut last, &mut out), (None, false), "24 steps old");
        assert_eq!(t.apply(None, 28, &mut last, &mut out), (Some(msgs::Twist::default()), true), "25 steps: stop");
        assert_eq!(t.apply(None, 29, &mut last, &mut out), (None, false), "stopped once");
        assert_eq!(t.apply(Some(drive), 40, &mut last, &mut out), (Some(drive), false));
        assert_eq!(t.apply(None, 65, &mut last, &mut out), (Some(msgs::Twist::default()), true));
        assert_eq!(Timeout::steps(0.0, 0.02).apply(None, 10_000, &mut Some(0), &mut false), (None, false), "0: never");
    }

    /// The writer thread behind: newer state replaces the state waiting, events are all kept.
    #[test]
    fn a_writer_behind_gets_the_newest_state_and_every_event() {
        let counts = WriteCounts::default();
        let mut p = Pending::default();
        let clock = |s: u32| Sample::Clock(msgs::Clock { clock: msgs::Time { sec: s as i32, nanosec: 0 } });
        p.add(vec![clock(1), Sample::Bump(0, true), Sample::Received(0, "a".into())], &counts);
        p.add(vec![clock(2), Sample::Bump(0, false), Sample::Received(0, "b".into())], &counts);
        let kinds: Vec<String> = p
            .samples
            .iter()
            .map(|s| match s {
                Sample::Clock(c) => format!("clock {}", c.clock.sec),
                Sample::Bump(_, b) => format!("bump {b}"),
                Sample::Received(_, m) => format!("radio {m}"),
                _ => "other".into(),
            })
            .collect();
        assert_eq!(kinds, ["clock 2", "bump true", "radio a", "bump false", "radio b"]);
        assert_eq!(counts.coalesced.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn a_command_drives_forward_and_turns_within_the_robots_maxima() {
        let robot = Robot { index: 0, radius: 0.1, max_speed: 0.3, max_turn: 2.0, max_lateral: 0.0 };
        let mut t = msgs::Twist::default();
        (t.linear.x, t.linear.y, t.angular.z) = (0.2, 5.0, -0.5);
        assert_eq!(command_action("a", &t, &robot).drive, Some([0.2, -0.5, 0.0]), "no sideways on a diff drive");
        (t.linear.x, t.angular.z) = (9.0, 9.0);
        assert_eq!(command_action("a", &t, &robot).drive, Some([0.3, 2.0, 0.0]));
        (t.linear.x, t.angular.z) = (-9.0, -9.0);
        assert_eq!(command_action("a", &t, &robot).drive, Some([-0.3, -2.0, 0.0]));
        // A holonomic robot takes linear.y as its sideways speed, within its own limit.
        let omni = Robot { max_lateral: 0.25, ..robot };
        (t.linear.x, t.linear.y, t.angular.z) = (0.1, -0.2, 0.0);
        assert_eq!(command_action("a", &t, &omni).drive, Some([0.1, 0.0, -0.2]));
        t.linear.y = 5.0;
        assert_eq!(command_action("a", &t, &omni).drive, Some([0.1, 0.0, 0.25]));
    }
}
