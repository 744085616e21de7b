//! What goes out of crsim as ROS 2 messages each step: every bridged robot's `odom`, `scan`,
//! `battery`, `bump`, `gripper` and `radio/received`, `/tf` and `/clock`, at the `ros2` section's
//! rates. One gathering serves both ways out: the bridge's DDS writers and recordings' ROS 2
//! channels, so a recording holds what a `ros2 bag record` of the bridge would.

use bevy::prelude::*;

use super::dds::Offered;
use super::msgs::{self, RobotState, Time};
use crate::comms::RadioIn;
use crate::control::programs::Program;
use crate::control::programs::protocol::InMessage;
use crate::robot::{AppliedDrive, Battery, BumpSensor, Gripper, RangeScan, RangeSensor, Robot, pose};
use crate::scene::schema::{Ros2Spec, TfLayout};
use crate::sim::SimTime;

/// A robot's frame ids: under its namespace on the one `/tf` (`alpha/odom`), or unprefixed on
/// its own `/<ns>/tf` (`odom`), as the `ros2.tf` layout says.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Frames {
    pub odom: String,
    pub base_link: String,
    /// The range sensor's mounting frame, which its scans are in.
    pub range: String,
}

impl Frames {
    pub fn of(namespace: &str, layout: TfLayout) -> Frames {
        let frame = |name: &str| match layout {
            TfLayout::Global => msgs::frame(namespace, name),
            TfLayout::Namespaced => name.to_string(),
        };
        Frames { odom: frame("odom"), base_link: frame("base_link"), range: frame("range") }
    }
}

/// One bridged robot's outgoing side: where its topics are and what was last sent.
pub(super) struct Feed {
    pub entity: Entity,
    pub namespace: String,
    pub frames: Frames,
    /// Whether it has a range sensor (a `scan` topic).
    pub ranged: bool,
    /// Whether a program drives it (`cmd_vel` and `radio/send` come in).
    pub program: bool,
    /// Its body's radius: nothing outside it is nearer its range sensor (`range_min`).
    pub radius: f32,
    /// The step of the last scan passed on.
    last_scan: Option<u64>,
    /// The bump and gripper states last sent: they go out when they change.
    last_bump: Option<bool>,
    last_gripper: Option<bool>,
}

/// What [`feeds`] reads of a robot.
pub(super) type Bridged<'a> = (&'a Name, &'a Robot, Has<RangeSensor>, Has<Program>);

/// The feeds of the robots `settings` bridges, in robot `order`.
pub(super) fn feeds(order: &[Entity], robots: &Query<Bridged>, settings: &Ros2Spec) -> Vec<Feed> {
    let mut feeds = Vec::new();
    for &e in order {
        let Ok((name, robot, ranged, program)) = robots.get(e) else { continue };
        if !settings.bridges(name) {
            continue;
        }
        let namespace = settings.namespace_of(name);
        feeds.push(Feed {
            entity: e,
            frames: Frames::of(&namespace, settings.tf),
            namespace,
            ranged,
            program,
            radius: robot.radius,
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
    /// Transforms: on the one `/tf` (no robot), or on a robot's own `/<ns>/tf`.
    Tf(Option<usize>, msgs::TfMessage),
    /// The fixed transforms, once, on `/tf_static` or a robot's `/<ns>/tf_static`.
    TfStatic(Option<usize>, msgs::TfMessage),
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
            Sample::Tf(i, _) => (*i, "tf", "tf2_msgs/msg/TFMessage"),
            Sample::TfStatic(i, _) => (*i, "tf_static", "tf2_msgs/msg/TFMessage"),
            Sample::Clock(_) => (None, "clock", "rosgraph_msgs/msg/Clock"),
        }
    }

    /// The QoS its topic is offered with under `settings` (`scan` reliable or best effort).
    pub fn offered(&self, settings: &Ros2Spec) -> Offered {
        match self {
            Sample::Scan(..) if settings.scan_reliable => SENSOR_RELIABLE,
            Sample::Scan(..) => SENSOR,
            Sample::Bump(..) | Sample::Gripper(..) | Sample::TfStatic(..) => LATCHED,
            Sample::Received(..) => RADIO,
            Sample::Odom(..) | Sample::Battery(..) | Sample::Tf(..) | Sample::Clock(_) => STATE,
        }
    }

    /// Whether a newer sample of its topic makes it worthless (state, sensor data and the
    /// clock), so a writer that falls behind may send the newest alone; events (bump and gripper
    /// changes, radio messages, the fixed transforms) are always sent.
    pub fn superseded_by_newer(&self) -> bool {
        matches!(self, Sample::Odom(..) | Sample::Scan(..) | Sample::Battery(..) | Sample::Tf(..) | Sample::Clock(_))
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
            Sample::Tf(_, m) | Sample::TfStatic(_, m) => encode(m),
            Sample::Clock(m) => encode(m),
        }
    }
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
/// Sensor data offered reliable (`ros2.scan_reliable`), which rviz2's default subscription asks
/// for.
pub(super) const SENSOR_RELIABLE: Offered = Offered { reliable: true, latched: false, depth: 5 };

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

/// The fixed transforms, sent once: `frame → odom` for every robot (its odometry is in the
/// scene's frame: the identity) unless `frame` is empty, and `base_link → range` for every
/// robot with a range sensor (mounted at its centre, looking ahead) — on the one `/tf_static`,
/// or each robot's on its own.
pub(super) fn static_transforms(feeds: &[Feed], settings: &Ros2Spec, stamp: Time) -> Vec<Sample> {
    let per_robot = |r: &Feed| {
        let mut out = Vec::new();
        if !settings.frame.is_empty() {
            out.push(msgs::fixed(&settings.frame, &r.frames.odom, stamp));
        }
        if r.ranged {
            out.push(msgs::fixed(&r.frames.base_link, &r.frames.range, stamp));
        }
        out
    };
    match settings.tf {
        TfLayout::Global => {
            let transforms: Vec<msgs::TransformStamped> = feeds.iter().flat_map(per_robot).collect();
            if transforms.is_empty() { vec![] } else { vec![Sample::TfStatic(None, msgs::TfMessage { transforms })] }
        }
        TfLayout::Namespaced => feeds
            .iter()
            .enumerate()
            .map(|(i, r)| (i, per_robot(r)))
            .filter(|(_, t)| !t.is_empty())
            .map(|(i, transforms)| Sample::TfStatic(Some(i), msgs::TfMessage { transforms }))
            .collect(),
    }
}

/// Steps between two published scans of a sensor that scans every `period` steps, at most one
/// every `scan_every` steps: the first multiple of the period that is not sooner.
pub fn scan_interval(period: u32, scan_every: u64) -> u64 {
    let period = u64::from(period.max(1));
    scan_every.div_ceil(period).max(1) * period
}

/// Record stage, after physics: the step's messages — the fixed transforms at the first, then
/// each robot's state at its rates, radio deliveries, `/tf`, and `/clock` last (a node that acts
/// on a tick has the step's state) — stamped with the simulated time the step ends at.
pub(super) fn gather(
    feeds: &mut [Feed],
    settings: &Ros2Spec,
    time: &SimTime,
    robots: &Query<Published>,
    first: bool,
) -> Vec<Sample> {
    let step = time.step + 1;
    let stamp = stamp(time);
    let due = |hz: f32| step.is_multiple_of(every(hz, time.dt_exact));
    let (state_due, battery_due) = (due(settings.rate), due(settings.battery_rate));
    let scan_every = every(settings.scan_rate, time.dt_exact);
    let mut batch = Vec::with_capacity(2 * feeds.len() + 2);
    if first {
        batch.extend(static_transforms(feeds, settings, stamp));
    }
    let mut transforms = Vec::new();
    for (i, r) in feeds.iter_mut().enumerate() {
        let Ok((inbox, t, drive, battery, bump, gripper, range)) = robots.get(r.entity) else { continue };
        let frames = (r.frames.odom.as_str(), r.frames.base_link.as_str());
        for m in inbox.map_or(&[][..], |i| &i.0[..]) {
            let json = serde_json::to_string(&InMessage::delivered(m)).unwrap_or_default();
            batch.push(Sample::Received(i, json));
        }
        if state_due {
            let (p, heading) = pose(t);
            let state = RobotState {
                x: p.x,
                y: p.y,
                heading,
                linear: drive.linear,
                lateral: drive.lateral,
                angular: drive.angular,
            };
            batch.push(Sample::Odom(i, Box::new(msgs::odometry(&state, stamp, frames))));
            let transform = msgs::transform(&state, stamp, frames);
            match settings.tf {
                TfLayout::Global => transforms.push(transform),
                TfLayout::Namespaced => {
                    batch.push(Sample::Tf(Some(i), msgs::TfMessage { transforms: vec![transform] }))
                }
            }
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
            let (first_angle, step_angle) = sensor.angles();
            // `scan_time`: the time between two scans on the topic, not the sensor's own period.
            let period = (scan_interval(sensor.period, scan_every) as f64 * time.dt_exact) as f32;
            let fan = msgs::Fan { first: first_angle, step: step_angle, min: r.radius, max: sensor.range };
            let msg = msgs::laser_scan(&scan.distances, fan, period, stamp, &r.frames.range);
            batch.push(Sample::Scan(i, msg));
        }
    }
    if !transforms.is_empty() {
        batch.push(Sample::Tf(None, msgs::TfMessage { transforms }));
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

    /// `scan_time` was the sensor's period (0.02 s) when the topic carried a scan every 0.1 s.
    #[test]
    fn scans_go_out_at_the_first_multiple_of_the_sensors_period_not_sooner_than_the_rate() {
        assert_eq!(scan_interval(1, 5), 5, "a sensor of every step at 10 Hz and dt 0.02");
        assert_eq!(scan_interval(2, 5), 6);
        assert_eq!(scan_interval(10, 5), 10, "the sensor is slower than the rate");
        assert_eq!(scan_interval(0, 1), 1);
    }

    #[test]
    fn frames_sit_under_the_namespace_on_the_one_tf_and_bare_on_a_robots_own() {
        let g = Frames::of("/alpha", TfLayout::Global);
        assert_eq!(
            (g.odom.as_str(), g.base_link.as_str(), g.range.as_str()),
            ("alpha/odom", "alpha/base_link", "alpha/range")
        );
        let n = Frames::of("/alpha", TfLayout::Namespaced);
        assert_eq!((n.odom.as_str(), n.base_link.as_str(), n.range.as_str()), ("odom", "base_link", "range"));
    }

    #[test]
    fn rates_become_whole_steps_and_zero_means_every_step() {
        assert_eq!(every(50.0, 0.02), 1);
        assert_eq!(every(10.0, 0.02), 5);
        assert_eq!(every(0.0, 0.02), 1);
        assert_eq!(every(1000.0, 0.02), 1);
        assert_eq!(every(1.0, 0.05), 20);
    }
}
