//! The DDS side of the bridge: the participant, the node, each robot's publishers and
//! subscription, and the two systems of a step — commands in (think stage), the robots' state out
//! (record stage, after physics).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{SyncSender, sync_channel};
use std::time::{Duration, Instant};

use bevy::prelude::*;
use ros2_client::qos::{Durability, History, QosProfile, Reliability, WhenFull};
use ros2_client::{
    Context, ContextOptions, MessageTypeName, Name as RosName, Node, NodeName, NodeOptions, Publisher, Subscription,
};
use serde::Serialize;
use serde_json::json;

use super::feed::{Bridged, COMMANDS, Feed, LATCHED, Offered, Published, RADIO, SENSOR, STATE, Sample, feeds, gather};
use super::msgs;
use crate::control::programs::protocol::{OutMessage, RobotAction};
use crate::control::programs::{InProcess, Program};
use crate::robot::Robot;
use crate::scene::ActiveScene;
use crate::scene::schema::{LatePolicy, ProgramsSpec, Ros2Spec};
use crate::sim::{RobotOrder, SimTime};

/// The most `cmd_vel` samples read for one robot in one step: a flood beyond it waits in DDS's
/// history (which keeps the newest) and never stalls the step.
const MAX_COMMANDS_PER_STEP: usize = 64;

/// What the bridge counted, for the run's metrics and the panel.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Ros2Stats {
    /// Samples written (every topic).
    pub published: u64,
    /// Samples DDS refused to write.
    pub publish_errors: u64,
    /// `cmd_vel` commands applied.
    pub commands: u64,
    /// `cmd_vel` samples that did not decode, or carried values that are not finite numbers.
    pub malformed: u64,
    /// `cmd_vel` samples superseded within a step by a newer one.
    pub superseded: u64,
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
    cmd_vel: Option<Subscription<msgs::Twist>>,
    /// Program robots only: messages to send over crsim's radio.
    radio_send: Option<Subscription<msgs::Text>>,
    /// Lock-step: a command came from this robot's node, and (late policy `Drop`) it is awaited.
    heard: bool,
    awaited: bool,
}

/// One robot's publishers, owned by the writer thread.
struct RobotPublishers {
    odom: Publisher<msgs::Odometry>,
    scan: Option<Publisher<msgs::LaserScan>>,
    battery: Publisher<msgs::BatteryState>,
    bump: Publisher<msgs::Bool>,
    gripper: Publisher<msgs::Bool>,
    /// Messages the radio delivered to it.
    radio_received: Publisher<msgs::Text>,
}

/// Every publisher, and what they wrote.
struct Outbox {
    robots: Vec<RobotPublishers>,
    clock: Publisher<msgs::Clock>,
    tf: Publisher<msgs::TfMessage>,
}

impl Outbox {
    /// Writes one sample; whether DDS took it.
    fn write(&self, sample: Sample) -> bool {
        let robot = |i: usize| &self.robots[i];
        match sample {
            Sample::Odom(i, m) => robot(i).odom.publish(*m).is_ok(),
            Sample::Scan(i, m) => robot(i).scan.as_ref().is_some_and(|p| p.publish(m).is_ok()),
            Sample::Battery(i, m) => robot(i).battery.publish(m).is_ok(),
            Sample::Bump(i, data) => robot(i).bump.publish(msgs::Bool { data }).is_ok(),
            Sample::Gripper(i, data) => robot(i).gripper.publish(msgs::Bool { data }).is_ok(),
            Sample::Received(i, data) => robot(i).radio_received.publish(msgs::Text { data }).is_ok(),
            Sample::Tf(m) => self.tf.publish(m).is_ok(),
            Sample::Clock(m) => self.clock.publish(m).is_ok(),
        }
    }
}

/// Samples written and refused, counted by the writer thread.
#[derive(Default)]
struct WriteCounts {
    published: AtomicU64,
    errors: AtomicU64,
}

/// The writer thread: a step's samples go to it in one batch, and DDS's serialising and
/// hand-over to its own event loop (a few microseconds a sample) run beside the next step
/// instead of inside this one. At most two batches wait; a third waits for room, so a bridge
/// slower than the simulation slows it rather than piling up memory.
struct Writer {
    batches: Option<SyncSender<Vec<Sample>>>,
    thread: Option<std::thread::JoinHandle<()>>,
    counts: Arc<WriteCounts>,
}

impl Writer {
    fn start(outbox: Outbox) -> Result<Self, String> {
        let (batches, inbox) = sync_channel::<Vec<Sample>>(2);
        let counts = Arc::new(WriteCounts::default());
        let thread_counts = Arc::clone(&counts);
        let thread = std::thread::Builder::new()
            .name("crsim ROS 2 writer".into())
            .spawn(move || {
                for batch in inbox {
                    for sample in batch {
                        let counter =
                            if outbox.write(sample) { &thread_counts.published } else { &thread_counts.errors };
                        counter.fetch_add(1, Ordering::Relaxed);
                    }
                }
            })
            .map_err(|e| format!("cannot start the ROS 2 writer thread: {e}"))?;
        Ok(Self { batches: Some(batches), thread: Some(thread), counts })
    }

    fn send(&self, batch: Vec<Sample>) {
        if let Some(b) = &self.batches {
            let _ = b.send(batch);
        }
    }
}

impl Drop for Writer {
    /// Everything handed over is written before the publishers go.
    fn drop(&mut self) {
        self.batches = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The participant and what it serves.
struct Dds {
    domain: u16,
    // Dropped in this order: the writer thread finishes and drops the publishers, then the
    // subscriptions go, then the node and the participant.
    writer: Writer,
    /// Every bridged robot's outgoing side, and the incoming side of each in the same order.
    feeds: Vec<Feed>,
    robots: Vec<RobotInputs>,
    node: Node,
    context: Context,
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

    /// What it counted, the writer thread's samples written and refused included.
    pub fn stats(&self) -> Ros2Stats {
        let mut stats = self.stats.clone();
        if let Some(d) = &self.dds {
            stats.published = d.writer.counts.published.load(Ordering::Relaxed);
            stats.publish_errors = d.writer.counts.errors.load(Ordering::Relaxed);
        }
        stats
    }

    /// The namespaces it serves, in robot order.
    pub fn namespaces(&self) -> Vec<String> {
        self.dds.as_ref().map_or_else(Vec::new, |d| d.feeds.iter().map(|r| r.namespace.clone()).collect())
    }

    /// Serves the scene's robots on `domain` (keeping the participant when the domain is the
    /// same), or records why it cannot.
    pub(super) fn open(&mut self, world: &mut World, settings: &Ros2Spec, domain: u16) {
        self.settings = settings.clone();
        let kept = self.dds.take().filter(|d| d.domain == domain).map(|d| (d.context, d.node));
        let (context, mut node) = match kept {
            Some(kept) => kept,
            None => match participant(domain) {
                Ok(p) => p,
                Err(e) => return self.fail(e),
            },
        };
        let order = world.resource::<RobotOrder>().0.clone();
        let feeds = world.run_system_cached_with(
            |In((order, settings)): In<(Vec<Entity>, Ros2Spec)>, robots: Query<Bridged>| {
                feeds(&order, &robots, &settings)
            },
            (order, settings.clone()),
        );
        let Ok(feeds) = feeds else { return self.fail("cannot read the scene's robots".into()) };
        match endpoints(&feeds, &mut node).and_then(|(robots, outbox)| Ok((robots, Writer::start(outbox)?))) {
            Ok((robots, writer)) => {
                self.error = None;
                self.dds = Some(Dds { domain, writer, feeds, robots, node, context });
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
        self.dds = None;
        self.error = Some(e);
    }

    /// Stops serving (the scene no longer asks for it).
    pub(super) fn close(&mut self, world: &mut World) {
        self.dds = None;
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

fn participant(domain: u16) -> Result<(Context, Node), String> {
    let context = Context::with_options(ContextOptions::new().domain_id(domain))
        .map_err(|e| format!("cannot join DDS domain {domain}: {e:?}"))?;
    let name = NodeName::new("/", "crsim").map_err(|e| format!("node name: {e}"))?;
    let node = context
        .new_node(name, NodeOptions::new().enable_rosout(false))
        .map_err(|e| format!("cannot create the crsim node in DDS domain {domain}: {e:?}"))?;
    Ok((context, node))
}

/// The DDS profile of what a topic is offered with: volatile or transient local, reliable (a
/// write never waits: a sample DDS cannot take is counted, and the step goes on) or best effort,
/// keeping the newest `depth`.
fn qos(o: Offered) -> QosProfile {
    let reliability =
        if o.reliable { Reliability::Reliable { when_full: WhenFull::Fail } } else { Reliability::BestEffort };
    let durability = if o.latched { Durability::TransientLocal } else { Durability::Volatile };
    QosProfile::publisher_default()
        .durability(durability)
        .reliability(reliability)
        .history(History::KeepLast { depth: o.depth })
}

/// The topic `<namespace>/<topic>` of ROS 2 type `package/msg/kind`, and its full name.
fn topic(
    node: &mut Node,
    namespace: &str,
    topic: &str,
    (package, kind): (&str, &str),
    qos: &QosProfile,
) -> Result<(ros2_client::dds::rustdds::Topic, String), String> {
    let full = format!("{}/{topic}", namespace.trim_end_matches('/'));
    let name = RosName::parse(&full).map_err(|e| format!("topic {full}: {e}"))?;
    let t = node
        .create_topic(&name, MessageTypeName::new(package, kind), qos)
        .map_err(|e| format!("topic {name}: {e:?}"))?;
    Ok((t, full))
}

fn subscription<M: 'static>(
    node: &mut Node,
    namespace: &str,
    name: &str,
    kind: (&str, &str),
    qos: &QosProfile,
) -> Result<Subscription<M>, String> {
    let (t, full) = topic(node, namespace, name, kind, qos)?;
    node.create_subscription(&t, None).map_err(|e| format!("subscription of {full}: {e:?}"))
}

fn publisher<M: Serialize>(
    node: &mut Node,
    namespace: &str,
    name: &str,
    kind: (&str, &str),
    qos: &QosProfile,
) -> Result<Publisher<M>, String> {
    let (t, full) = topic(node, namespace, name, kind, qos)?;
    node.create_publisher(&t, None).map_err(|e| format!("publisher of {full}: {e:?}"))
}

/// Every bridged robot's topics, in the feeds' order, and `/clock` and `/tf`.
fn endpoints(feeds: &[Feed], node: &mut Node) -> Result<(Vec<RobotInputs>, Outbox), String> {
    let (mut robots, mut publishers) = (Vec::new(), Vec::new());
    for f in feeds {
        let ns = &f.namespace;
        let (cmd_vel, radio_send) = if f.program {
            let cmd_vel = subscription(node, ns, "cmd_vel", ("geometry_msgs", "Twist"), &qos(COMMANDS))?;
            let send = subscription(node, ns, "radio/send", ("std_msgs", "String"), &qos(RADIO))?;
            (Some(cmd_vel), Some(send))
        } else {
            (None, None)
        };
        publishers.push(RobotPublishers {
            odom: publisher(node, ns, "odom", ("nav_msgs", "Odometry"), &qos(STATE))?,
            scan: if f.ranged {
                Some(publisher(node, ns, "scan", ("sensor_msgs", "LaserScan"), &qos(SENSOR))?)
            } else {
                None
            },
            battery: publisher(node, ns, "battery", ("sensor_msgs", "BatteryState"), &qos(STATE))?,
            bump: publisher(node, ns, "bump", ("std_msgs", "Bool"), &qos(LATCHED))?,
            gripper: publisher(node, ns, "gripper", ("std_msgs", "Bool"), &qos(LATCHED))?,
            radio_received: publisher(node, ns, "radio/received", ("std_msgs", "String"), &qos(RADIO))?,
        });
        robots.push(RobotInputs { entity: f.entity, cmd_vel, radio_send, heard: false, awaited: true });
    }
    let clock = publisher(node, "/", "clock", ("rosgraph_msgs", "Clock"), &qos(STATE))?;
    let tf = publisher(node, "/", "tf", ("tf2_msgs", "TFMessage"), &qos(STATE))?;
    Ok((robots, Outbox { robots: publishers, clock, tf }))
}

/// The next valid command waiting on a robot's `cmd_vel`, passing over (and counting) samples
/// that do not decode or carry values that are not finite numbers; `budget` bounds the samples
/// read.
fn take_valid(sub: &Subscription<msgs::Twist>, stats: &mut Ros2Stats, budget: &mut usize) -> Option<msgs::Twist> {
    while *budget > 0 {
        *budget -= 1;
        match sub.take() {
            Ok(Some((t, _))) if t.is_finite() => return Some(t),
            Ok(Some(_)) | Err(_) => stats.malformed += 1,
            Ok(None) => return None,
        }
    }
    None
}

/// The newest valid command of a robot's `cmd_vel` this step, the older ones counted as
/// superseded.
fn newest_command(sub: &Subscription<msgs::Twist>, stats: &mut Ros2Stats) -> Option<msgs::Twist> {
    let (mut budget, mut newest) = (MAX_COMMANDS_PER_STEP, None);
    while let Some(t) = take_valid(sub, stats, &mut budget) {
        stats.superseded += u64::from(newest.is_some());
        newest = Some(t);
    }
    newest
}

/// The program action of a `cmd_vel` command: forward speed and turn rate within the robot's
/// maxima (a diff-drive robot ignores the other four values, as ROS 2's diff drive controller
/// does).
pub fn command_action(name: &str, twist: &msgs::Twist, max_speed: f32, max_turn: f32) -> RobotAction {
    let linear = (twist.linear.x as f32).clamp(-max_speed, max_speed);
    let angular = (twist.angular.z as f32).clamp(-max_turn, max_turn);
    RobotAction {
        name: name.to_string(),
        drive: Some([linear, angular]),
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
        let mut commands = Vec::with_capacity(dds.robots.len());
        for r in &dds.robots {
            let command = r.cmd_vel.as_ref().and_then(|sub| newest_command(sub, stats));
            stats.commands += u64::from(command.is_some());
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
                Some(t) => command_action(name, &t, robot.max_speed, robot.max_turn),
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
fn radio_messages(sub: &Subscription<msgs::Text>, max_bytes: usize, stats: &mut Ros2Stats) -> Vec<OutMessage> {
    let mut out = Vec::new();
    for _ in 0..MAX_COMMANDS_PER_STEP {
        match sub.take() {
            Ok(Some((text, _))) => match radio_message(&text.data, max_bytes) {
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
fn next_command(sub: &Subscription<msgs::Twist>, deadline: Instant, stats: &mut Ros2Stats) -> Option<msgs::Twist> {
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
    dds.writer.send(gather(&mut dds.feeds, settings, &time, &robots));
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
            "published": stats.published,
            "publish_errors": stats.publish_errors,
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

    #[test]
    fn a_command_drives_forward_and_turns_within_the_robots_maxima() {
        let mut t = msgs::Twist::default();
        (t.linear.x, t.linear.y, t.angular.z) = (0.2, 5.0, -0.5);
        assert_eq!(command_action("a", &t, 0.3, 2.0).drive, Some([0.2, -0.5]));
        (t.linear.x, t.angular.z) = (9.0, 9.0);
        assert_eq!(command_action("a", &t, 0.3, 2.0).drive, Some([0.3, 2.0]));
        (t.linear.x, t.angular.z) = (-9.0, -9.0);
        assert_eq!(command_action("a", &t, 0.3, 2.0).drive, Some([-0.3, -2.0]));
    }
}
