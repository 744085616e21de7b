//! What goes out of crsim as ROS 2 messages each step: every bridged robot's `odom`, `scan`,
//! `battery`, `bump`, `gripper` and `radio/received`, `/tf` and `/clock`, at the `ros2` section's
//! rates. One gathering serves both ways out: the bridge's DDS writers and recordings' ROS 2
//! channels, so a recording holds what a `ros2 bag record` of the bridge would.

use bevy::prelude::*;

use super::msgs::{self, RobotState, Time};
use crate::comms::RadioIn;
use crate::control::programs::Program;
use crate::control::programs::protocol::InMessage;
use crate::robot::{AppliedDrive, Battery, BumpSensor, Gripper, RangeScan, RangeSensor, pose};
use crate::scene::schema::Ros2Spec;
use crate::sim::SimTime;

/// One bridged robot's outgoing side: where its topics are and what was last sent.
pub(super) struct Feed {
    pub entity: Entity,
    pub namespace: String,
    /// Its `odom` and `base_link` frame ids.
    pub frames: (String, String),
    /// Whether it has a range sensor (a `scan` topic).
    pub ranged: bool,
    /// Whether a program drives it (`cmd_vel` and `radio/send` come in).
    pub program: bool,
    /// The step of the last scan passed on.
    last_scan: Option<u64>,
    /// The bump and gripper states last sent: they go out when they change.
    last_bump: Option<bool>,
    last_gripper: Option<bool>,
}

/// What [`feeds`] reads of a robot.
pub(super) type Bridged<'a> = (&'a Name, Has<RangeSensor>, Has<Program>);

/// The feeds of the robots `settings` bridges, in robot `order`.
pub(super) fn feeds(order: &[Entity], robots: &Query<Bridged>, settings: &Ros2Spec) -> Vec<Feed> {
    let mut feeds = Vec::new();
    for &e in order {
        let Ok((name, ranged, program)) = robots.get(e) else { continue };
        if !settings.bridges(name) {
            continue;
        }
        let namespace = settings.namespace_of(name);
        feeds.push(Feed {
            entity: e,
            frames: msgs::frames(&namespace),
            namespace,
            ranged,
            program,
            last_scan: None,
            last_bump: None,
            last_gripper: None,
        });
    }
    feeds
}

/// A message of a step: the robot's index in the feeds, and the message.
pub(super) enum Sample {
    Odom(usize, Box<msgs::Odometry>),
    Scan(usize, msgs::LaserScan),
    Battery(usize, msgs::BatteryState),
    Bump(usize, bool),
    Gripper(usize, bool),
    Received(usize, String),
    Tf(msgs::TfMessage),
    Clock(msgs::Clock),
}

impl Sample {
    /// Where it goes: the robot's index (none for `/tf` and `/clock`), the topic under the
    /// robot's namespace (or from the root), and its ROS 2 type.
    pub fn route(&self) -> (Option<usize>, &'static str, &'static str) {
        match self {
            Sample::Odom(i, _) => (Some(*i), "odom", "nav_msgs/msg/Odometry"),
            Sample::Scan(i, _) => (Some(*i), "scan", "sensor_msgs/msg/LaserScan"),
            Sample::Battery(i, _) => (Some(*i), "battery", "sensor_msgs/msg/BatteryState"),
            Sample::Bump(i, _) => (Some(*i), "bump", "std_msgs/msg/Bool"),
            Sample::Gripper(i, _) => (Some(*i), "gripper", "std_msgs/msg/Bool"),
            Sample::Received(i, _) => (Some(*i), "radio/received", "std_msgs/msg/String"),
            Sample::Tf(_) => (None, "tf", "tf2_msgs/msg/TFMessage"),
            Sample::Clock(_) => (None, "clock", "rosgraph_msgs/msg/Clock"),
        }
    }

    /// The QoS its topic is offered with.
    pub fn offered(&self) -> Offered {
        match self {
            Sample::Scan(..) => SENSOR,
            Sample::Bump(..) | Sample::Gripper(..) => LATCHED,
            Sample::Received(..) => RADIO,
            Sample::Odom(..) | Sample::Battery(..) | Sample::Tf(_) | Sample::Clock(_) => STATE,
        }
    }

    /// Its CDR encoding as a DDS sample carries it (little-endian, after the 4-byte
    /// encapsulation header), which is what ROS 2 recordings hold.
    pub fn cdr(&self) -> Result<Vec<u8>, String> {
        fn encode<T: serde::Serialize>(value: &T) -> Result<Vec<u8>, String> {
            let mut out = vec![0x00, 0x01, 0x00, 0x00];
            out.extend(cdr_encoding::to_vec::<T, byteorder::LittleEndian>(value).map_err(|e| e.to_string())?);
            Ok(out)
        }
        match self {
            Sample::Odom(_, m) => encode(m.as_ref()),
            Sample::Scan(_, m) => encode(m),
            Sample::Battery(_, m) => encode(m),
            // `std_msgs/Bool` and `String` are one field each: their CDR is the field's.
            Sample::Bump(_, data) | Sample::Gripper(_, data) => encode(data),
            Sample::Received(_, data) => encode(data),
            Sample::Tf(m) => encode(m),
            Sample::Clock(m) => encode(m),
        }
    }
}

/// What a topic is offered with (its QoS): reliable or best effort, transient local ("latched")
/// or volatile, and the samples kept.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Offered {
    pub reliable: bool,
    pub latched: bool,
    pub depth: usize,
}

/// Commands in: reliable, as `teleop` and Nav2 publish them.
pub(super) const COMMANDS: Offered = Offered { reliable: true, latched: false, depth: 10 };
/// State (odometry, tf, battery, clock): reliable with the newest kept, which both reliable and
/// best-effort subscriptions match (Nav2 reads `odom` reliably).
pub(super) const STATE: Offered = Offered { reliable: true, latched: false, depth: 1 };
/// Events (`bump`, `gripper`): sent when they change, the last one kept for subscribers that join
/// later (transient local, as ROS 2 latches a topic).
pub(super) const LATCHED: Offered = Offered { reliable: true, latched: true, depth: 1 };
/// The radio's messages: reliable, every one kept until taken (up to 100).
pub(super) const RADIO: Offered = Offered { reliable: true, latched: false, depth: 100 };
/// Sensor data (`scan`): best effort, as ROS 2's `SensorDataQoS` and real lidar drivers.
pub(super) const SENSOR: Offered = Offered { reliable: false, latched: false, depth: 5 };

/// What [`gather`] reads of a robot.
pub(super) type Published<'a> = (
    Option<&'a RadioIn>,
    &'a Transform,
    &'a AppliedDrive,
    &'a Battery,
    &'a BumpSensor,
    &'a Gripper,
    Option<(&'a RangeSensor, &'a RangeScan)>,
);

/// The simulated time a step ends at, which every message of the step is stamped with.
pub(super) fn stamp(time: &SimTime) -> Time {
    Time::from_seconds((time.step + 1) as f64 * time.dt_exact)
}

/// Record stage, after physics: the step's messages — each robot's state at its rates, radio
/// deliveries, `/tf`, and `/clock` last (a node that acts on a tick has the step's state) —
/// stamped with the simulated time the step ends at.
pub(super) fn gather(
    feeds: &mut [Feed],
    settings: &Ros2Spec,
    time: &SimTime,
    robots: &Query<Published>,
) -> Vec<Sample> {
    let step = time.step + 1;
    let stamp = stamp(time);
    let due = |hz: f32| step.is_multiple_of(every(hz, time.dt_exact));
    let (state_due, battery_due) = (due(settings.rate), due(settings.battery_rate));
    let scan_every = every(settings.scan_rate, time.dt_exact);
    let mut batch = Vec::with_capacity(2 * feeds.len() + 2);
    let mut transforms = Vec::new();
    for (i, r) in feeds.iter_mut().enumerate() {
        let Ok((inbox, t, drive, battery, bump, gripper, range)) = robots.get(r.entity) else { continue };
        let frames = (r.frames.0.as_str(), r.frames.1.as_str());
        for m in inbox.map_or(&[][..], |i| &i.0[..]) {
            let json = serde_json::to_string(&InMessage::delivered(m)).unwrap_or_default();
            batch.push(Sample::Received(i, json));
        }
        if state_due {
            let (p, heading) = pose(t);
            let state = RobotState { x: p.x, y: p.y, heading, linear: drive.linear, angular: drive.angular };
            batch.push(Sample::Odom(i, Box::new(msgs::odometry(&state, stamp, frames))));
            transforms.push(msgs::transform(&state, stamp, frames));
        }
        let (touching, holding) = (bump.is_touching(), gripper.holding.is_some());
        if r.last_bump.replace(touching) != Some(touching) {
            batch.push(Sample::Bump(i, touching));
        }
        if r.last_gripper.replace(holding) != Some(holding) {
            batch.push(Sample::Gripper(i, holding));
        }
        if battery_due {
            let b = msgs::battery_state(battery.charge, battery.capacity, battery.charging, stamp, frames.1);
            batch.push(Sample::Battery(i, b));
        }
        // A scan the sensor took this step, at most one every `scan_every` steps.
        if let Some((sensor, scan)) = range
            && scan.step == time.step
            && !scan.distances.is_empty()
            && r.last_scan.is_none_or(|last| time.step >= last + scan_every)
        {
            r.last_scan = Some(time.step);
            let (first, step_angle) = sensor.angles();
            let period = sensor.period.max(1) as f32 * time.dt;
            let msg = msgs::laser_scan(&scan.distances, first, step_angle, sensor.range, period, stamp, frames.1);
            batch.push(Sample::Scan(i, msg));
        }
    }
    if !transforms.is_empty() {
        batch.push(Sample::Tf(msgs::TfMessage { transforms }));
    }
    batch.push(Sample::Clock(msgs::Clock { clock: stamp }));
    batch
}

/// Steps between two samples of a topic published at `hz` simulated hertz with steps of `dt`
/// seconds: at least 1 (every step), which `hz` 0 asks for.
pub fn every(hz: f32, dt: f64) -> u64 {
    if hz <= 0.0 || dt <= 0.0 { 1 } else { ((1.0 / (hz as f64 * dt)).round() as u64).max(1) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_become_whole_steps_and_zero_means_every_step() {
        assert_eq!(every(50.0, 0.02), 1);
        assert_eq!(every(10.0, 0.02), 5);
        assert_eq!(every(0.0, 0.02), 1);
        assert_eq!(every(1000.0, 0.02), 1);
        assert_eq!(every(1.0, 0.05), 20);
    }
}
