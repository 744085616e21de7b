//! The ROS 2 messages the bridge speaks, as plain serde types laid out field for field as their
//! `.msg` definitions (ROS 2 Humble and later), so DDS's CDR encoding of them is what `rclcpp`
//! writes; and the pure functions that fill them from a robot's state.

use serde::de::{self, SeqAccess, Visitor};
use serde::ser::SerializeTuple;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// `builtin_interfaces/msg/Time`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Time {
    pub sec: i32,
    pub nanosec: u32,
}

impl Time {
    /// Simulated seconds as ROS time (whole seconds and the nanoseconds after them).
    pub fn from_seconds(s: f64) -> Self {
        let s = s.max(0.0);
        let mut sec = s.floor();
        let mut nanosec = ((s - sec) * 1e9).round();
        if nanosec >= 1e9 {
            sec += 1.0;
            nanosec = 0.0;
        }
        Self { sec: sec.min(i32::MAX as f64) as i32, nanosec: nanosec as u32 }
    }

    pub fn seconds(&self) -> f64 {
        self.sec as f64 + self.nanosec as f64 * 1e-9
    }
}

/// `std_msgs/msg/Header`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Header {
    pub stamp: Time,
    pub frame_id: String,
}

/// `geometry_msgs/msg/Vector3`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Vector3 {
    pub x: f64,
    pub y: f64,
    pub z: f64,
}

/// `geometry_msgs/msg/Point`.
pub type Point = Vector3;

/// `geometry_msgs/msg/Quaternion`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Quaternion {
    pub x: f64,
    pub y: f64,
    pub z: f64,
    pub w: f64,
}

impl Quaternion {
    /// A rotation by `yaw` radians about +z (counter-clockwise seen from above).
    pub fn from_yaw(yaw: f64) -> Self {
        let h = yaw / 2.0;
        Self { x: 0.0, y: 0.0, z: h.sin(), w: h.cos() }
    }

    /// The rotation's angle about +z, radians in [-π, π].
    pub fn yaw(&self) -> f64 {
        (2.0 * (self.w * self.z + self.x * self.y)).atan2(1.0 - 2.0 * (self.y * self.y + self.z * self.z))
    }
}

impl Default for Quaternion {
    fn default() -> Self {
        Self::from_yaw(0.0)
    }
}

/// `geometry_msgs/msg/Twist`: what `cmd_vel` carries.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Twist {
    pub linear: Vector3,
    pub angular: Vector3,
}

impl Twist {
    /// Whether every value is a finite number.
    pub fn is_finite(&self) -> bool {
        [self.linear.x, self.linear.y, self.linear.z, self.angular.x, self.angular.y, self.angular.z]
            .iter()
            .all(|v| v.is_finite())
    }
}

/// `geometry_msgs/msg/Pose`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Pose {
    pub position: Point,
    pub orientation: Quaternion,
}

/// A `float64[36]` row-major 6×6 covariance (x, y, z, rotation about x, y, z). serde derives
/// arrays up to 32 only, and CDR writes a fixed array as its elements without a length, as a
/// tuple is written.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Covariance(pub [f64; 36]);

impl Covariance {
    /// A diagonal covariance: the six variances.
    pub fn diagonal(v: [f64; 6]) -> Self {
        let mut c = [0.0; 36];
        for (i, v) in v.into_iter().enumerate() {
            c[i * 7] = v;
        }
        Self(c)
    }
}

impl Default for Covariance {
    fn default() -> Self {
        Self([0.0; 36])
    }
}

impl Serialize for Covariance {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut t = s.serialize_tuple(36)?;
        for v in &self.0 {
            t.serialize_element(v)?;
        }
        t.end()
    }
}

impl<'de> Deserialize<'de> for Covariance {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Elements;
        impl<'de> Visitor<'de> for Elements {
            type Value = Covariance;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("36 float64 values")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Covariance, A::Error> {
                let mut c = [0.0; 36];
                for (i, v) in c.iter_mut().enumerate() {
                    *v = seq.next_element()?.ok_or_else(|| de::Error::invalid_length(i, &self))?;
                }
                Ok(Covariance(c))
            }
        }
        d.deserialize_tuple(36, Elements)
    }
}

/// `geometry_msgs/msg/PoseWithCovariance`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct PoseWithCovariance {
    pub pose: Pose,
    pub covariance: Covariance,
}

/// `geometry_msgs/msg/TwistWithCovariance`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct TwistWithCovariance {
    pub twist: Twist,
    pub covariance: Covariance,
}

/// `nav_msgs/msg/Odometry`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Odometry {
    pub header: Header,
    pub child_frame_id: String,
    pub pose: PoseWithCovariance,
    pub twist: TwistWithCovariance,
}

/// `geometry_msgs/msg/Transform`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Transform {
    pub translation: Vector3,
    pub rotation: Quaternion,
}

/// `geometry_msgs/msg/TransformStamped`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TransformStamped {
    pub header: Header,
    pub child_frame_id: String,
    pub transform: Transform,
}

/// `tf2_msgs/msg/TFMessage`: what `/tf` carries.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TfMessage {
    pub transforms: Vec<TransformStamped>,
}

/// `sensor_msgs/msg/LaserScan`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LaserScan {
    pub header: Header,
    pub angle_min: f32,
    pub angle_max: f32,
    pub angle_increment: f32,
    pub time_increment: f32,
    pub scan_time: f32,
    pub range_min: f32,
    pub range_max: f32,
    pub ranges: Vec<f32>,
    pub intensities: Vec<f32>,
}

/// `sensor_msgs/msg/BatteryState`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BatteryState {
    pub header: Header,
    pub voltage: f32,
    pub temperature: f32,
    pub current: f32,
    pub charge: f32,
    pub capacity: f32,
    pub design_capacity: f32,
    pub percentage: f32,
    pub power_supply_status: u8,
    pub power_supply_health: u8,
    pub power_supply_technology: u8,
    pub present: bool,
    pub cell_voltage: Vec<f32>,
    pub cell_temperature: Vec<f32>,
    pub location: String,
    pub serial_number: String,
}

/// `BatteryState`'s `POWER_SUPPLY_STATUS_CHARGING`.
pub const POWER_SUPPLY_STATUS_CHARGING: u8 = 1;
/// `BatteryState`'s `POWER_SUPPLY_STATUS_DISCHARGING`.
pub const POWER_SUPPLY_STATUS_DISCHARGING: u8 = 2;
/// `BatteryState`'s `POWER_SUPPLY_HEALTH_GOOD`.
pub const POWER_SUPPLY_HEALTH_GOOD: u8 = 1;
/// `BatteryState`'s `POWER_SUPPLY_HEALTH_DEAD`.
pub const POWER_SUPPLY_HEALTH_DEAD: u8 = 3;

/// `std_msgs/msg/Bool`: the bump and gripper states.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Bool {
    pub data: bool,
}

/// `std_msgs/msg/String`: radio messages, as JSON text.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Text {
    pub data: String,
}

/// `rosgraph_msgs/msg/Clock`: what `/clock` carries.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Clock {
    pub clock: Time,
}

/// What the bridge reads of a robot to fill its messages.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RobotState {
    /// Position (m) and heading (rad, counter-clockwise from +x) in the scene's frame.
    pub x: f32,
    pub y: f32,
    pub heading: f32,
    /// Speeds the drive applies: m/s forward, m/s to the left (a holonomic drive's), rad/s
    /// counter-clockwise.
    pub linear: f32,
    pub lateral: f32,
    pub angular: f32,
}

/// A robot's frame `name` under its namespace: `<ns>/<name>` (tf2 frame ids carry no leading
/// slash).
pub fn frame(namespace: &str, name: &str) -> String {
    let ns = namespace.trim_matches('/');
    if ns.is_empty() { name.to_string() } else { format!("{ns}/{name}") }
}

/// A robot's frames under its namespace: `<ns>/odom` and `<ns>/base_link`.
pub fn frames(namespace: &str) -> (String, String) {
    (frame(namespace, "odom"), frame(namespace, "base_link"))
}

/// The identity transform `parent → child`, for `/tf_static`.
pub fn fixed(parent: &str, child: &str, stamp: Time) -> TransformStamped {
    TransformStamped {
        header: Header { stamp, frame_id: parent.to_string() },
        child_frame_id: child.to_string(),
        transform: Transform::default(),
    }
}

/// A range sensor's beams as a scan describes them: the first beam's angle and the angle between
/// beams (rad, counter-clockwise), and the nearest and farthest a beam reads (m).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fan {
    pub first: f32,
    pub step: f32,
    pub min: f32,
    pub max: f32,
}

/// A robot's odometry: the simulated pose in its odom frame (the scene's frame: a simulated
/// robot's odometry does not drift) and its twist in `base_link`, with small fixed variances so
/// that filters fusing it stay well-posed; `frames` are its `odom` and `base_link` ([`frames`]).
pub fn odometry(state: &RobotState, stamp: Time, (odom, base): (&str, &str)) -> Odometry {
    Odometry {
        header: Header { stamp, frame_id: odom.to_string() },
        child_frame_id: base.to_string(),
        pose: PoseWithCovariance {
            pose: Pose {
                position: Vector3 { x: state.x as f64, y: state.y as f64, z: 0.0 },
                orientation: Quaternion::from_yaw(state.heading as f64),
            },
            covariance: Covariance::diagonal([1e-6, 1e-6, 1e-9, 1e-9, 1e-9, 1e-6]),
        },
        twist: TwistWithCovariance {
            twist: Twist {
                linear: Vector3 { x: state.linear as f64, y: state.lateral as f64, z: 0.0 },
                angular: Vector3 { z: state.angular as f64, ..Default::default() },
            },
            covariance: Covariance::diagonal([1e-6, 1e-6, 1e-9, 1e-9, 1e-9, 1e-6]),
        },
    }
}

/// The `odom → base_link` transform of a robot, for `/tf`, in its frames ([`frames`]).
pub fn transform(state: &RobotState, stamp: Time, (odom, base): (&str, &str)) -> TransformStamped {
    TransformStamped {
        header: Header { stamp, frame_id: odom.to_string() },
        child_frame_id: base.to_string(),
        transform: Transform {
            translation: Vector3 { x: state.x as f64, y: state.y as f64, z: 0.0 },
            rotation: Quaternion::from_yaw(state.heading as f64),
        },
    }
}

/// A range sensor's beams as a `LaserScan` in the sensor's frame `frame`: beams
/// counter-clockwise from `fan.first` `fan.step` apart, as crsim's sensor spreads them; a beam
/// that met nothing (it reads the sensor's range, `fan.max`) is `+inf`, as REP 117 asks. `period`
/// is the simulated seconds between two scans on the topic.
pub fn laser_scan(distances: &[f32], fan: Fan, period: f32, stamp: Time, frame: &str) -> LaserScan {
    let last = fan.first + fan.step * distances.len().saturating_sub(1) as f32;
    LaserScan {
        header: Header { stamp, frame_id: frame.to_string() },
        angle_min: fan.first,
        angle_max: last,
        angle_increment: fan.step,
        time_increment: 0.0,
        scan_time: period,
        range_min: fan.min,
        range_max: fan.max,
        ranges: distances.iter().map(|&d| if d >= fan.max { f32::INFINITY } else { d }).collect(),
        intensities: Vec::new(),
    }
}

/// A battery's state: `charge` and `capacity` as crsim counts them (its own units, written to
/// `charge`/`capacity`; voltage, current and temperature are not simulated: NaN, as the message
/// says for unmeasured values), in the robot's `base_link` frame `base`.
pub fn battery_state(charge: f32, capacity: f32, charging: bool, stamp: Time, base: &str) -> BatteryState {
    let level = if capacity > 0.0 { (charge / capacity).clamp(0.0, 1.0) } else { 0.0 };
    BatteryState {
        header: Header { stamp, frame_id: base.to_string() },
        voltage: f32::NAN,
        temperature: f32::NAN,
        current: f32::NAN,
        charge,
        capacity,
        design_capacity: capacity,
        percentage: level,
        power_supply_status: if charging { POWER_SUPPLY_STATUS_CHARGING } else { POWER_SUPPLY_STATUS_DISCHARGING },
        power_supply_health: if level > 0.0 { POWER_SUPPLY_HEALTH_GOOD } else { POWER_SUPPLY_HEALTH_DEAD },
        power_supply_technology: 0,
        present: true,
        ..Default::default()
    }
}

/// The `.msg` text of every type above, as `ros2 bag record` stores it (fields and constants,
/// comments left out), by the name a dependency is given in a schema.
const DEFINITIONS: &[(&str, &str)] = &[
    ("builtin_interfaces/Time", "int32 sec\nuint32 nanosec\n"),
    ("std_msgs/Header", "builtin_interfaces/Time stamp\nstring frame_id\n"),
    ("geometry_msgs/Vector3", "float64 x\nfloat64 y\nfloat64 z\n"),
    ("geometry_msgs/Point", "float64 x\nfloat64 y\nfloat64 z\n"),
    ("geometry_msgs/Quaternion", "float64 x\nfloat64 y\nfloat64 z\nfloat64 w\n"),
    ("geometry_msgs/Pose", "geometry_msgs/Point position\ngeometry_msgs/Quaternion orientation\n"),
    ("geometry_msgs/Twist", "geometry_msgs/Vector3 linear\ngeometry_msgs/Vector3 angular\n"),
    ("geometry_msgs/PoseWithCovariance", "geometry_msgs/Pose pose\nfloat64[36] covariance\n"),
    ("geometry_msgs/TwistWithCovariance", "geometry_msgs/Twist twist\nfloat64[36] covariance\n"),
    ("geometry_msgs/Transform", "geometry_msgs/Vector3 translation\ngeometry_msgs/Quaternion rotation\n"),
    (
        "geometry_msgs/TransformStamped",
        "std_msgs/Header header\nstring child_frame_id\ngeometry_msgs/Transform transform\n",
    ),
    (
        "nav_msgs/Odometry",
        "std_msgs/Header header\nstring child_frame_id\ngeometry_msgs/PoseWithCovariance pose\n\
         geometry_msgs/TwistWithCovariance twist\n",
    ),
    ("tf2_msgs/TFMessage", "geometry_msgs/TransformStamped[] transforms\n"),
    (
        "sensor_msgs/LaserScan",
        "std_msgs/Header header\nfloat32 angle_min\nfloat32 angle_max\nfloat32 angle_increment\n\
         float32 time_increment\nfloat32 scan_time\nfloat32 range_min\nfloat32 range_max\n\
         float32[] ranges\nfloat32[] intensities\n",
    ),
    (
        "sensor_msgs/BatteryState",
        "uint8 POWER_SUPPLY_STATUS_UNKNOWN=0\nuint8 POWER_SUPPLY_STATUS_CHARGING=1\n\
         uint8 POWER_SUPPLY_STATUS_DISCHARGING=2\nuint8 POWER_SUPPLY_STATUS_NOT_CHARGING=3\n\
         uint8 POWER_SUPPLY_STATUS_FULL=4\nuint8 POWER_SUPPLY_HEALTH_UNKNOWN=0\n\
         uint8 POWER_SUPPLY_HEALTH_GOOD=1\nuint8 POWER_SUPPLY_HEALTH_OVERHEAT=2\n\
         uint8 POWER_SUPPLY_HEALTH_DEAD=3\nuint8 POWER_SUPPLY_HEALTH_OVERVOLTAGE=4\n\
         uint8 POWER_SUPPLY_HEALTH_UNSPEC_FAILURE=5\nuint8 POWER_SUPPLY_HEALTH_COLD=6\n\
         uint8 POWER_SUPPLY_HEALTH_WATCHDOG_TIMER_EXPIRE=7\nuint8 POWER_SUPPLY_HEALTH_SAFETY_TIMER_EXPIRE=8\n\
         uint8 POWER_SUPPLY_TECHNOLOGY_UNKNOWN=0\nuint8 POWER_SUPPLY_TECHNOLOGY_NIMH=1\n\
         uint8 POWER_SUPPLY_TECHNOLOGY_LION=2\nuint8 POWER_SUPPLY_TECHNOLOGY_LIPO=3\n\
         uint8 POWER_SUPPLY_TECHNOLOGY_LIFE=4\nuint8 POWER_SUPPLY_TECHNOLOGY_NICD=5\n\
         uint8 POWER_SUPPLY_TECHNOLOGY_LIMN=6\nstd_msgs/Header header\nfloat32 voltage\n\
         float32 temperature\nfloat32 current\nfloat32 charge\nfloat32 capacity\n\
         float32 design_capacity\nfloat32 percentage\nuint8 power_supply_status\n\
         uint8 power_supply_health\nuint8 power_supply_technology\nbool present\n\
         float32[] cell_voltage\nfloat32[] cell_temperature\nstring location\nstring serial_number\n",
    ),
    ("std_msgs/Bool", "bool data\n"),
    ("std_msgs/String", "string data\n"),
    ("rosgraph_msgs/Clock", "builtin_interfaces/Time clock\n"),
];

/// The `.msg` text of type `name` (`pkg/msg/Type` or `pkg/Type`), as crsim holds it.
pub fn definition(name: &str) -> Option<&'static str> {
    let short = name.replacen("/msg/", "/", 1);
    DEFINITIONS.iter().find(|(n, _)| *n == short).map(|(_, t)| *t)
}

/// The `ros2msg` schema of type `name` (`nav_msgs/msg/Odometry`) as ROS 2 recordings store it:
/// its definition, then each type it uses, once, in the order its fields first name them,
/// each after a line of 80 `=` and `MSG: package/Type`.
pub fn schema(name: &str) -> Option<String> {
    fn text(name: &str) -> Option<&'static str> {
        definition(name)
    }
    /// The types a definition's fields name (`pkg/Type`, `pkg/Type[]`, `pkg/Type[36]`).
    fn used(definition: &str) -> impl Iterator<Item = &str> {
        definition.lines().filter_map(|l| l.split_whitespace().next()).filter(|t| t.contains('/')).map(|t| {
            let end = t.find('[').unwrap_or(t.len());
            &t[..end]
        })
    }
    fn add(definition: &str, out: &mut String, seen: &mut Vec<String>) {
        for t in used(definition) {
            if seen.iter().any(|s| s == t) {
                continue;
            }
            seen.push(t.to_string());
            let Some(sub) = text(t) else { continue };
            out.push_str(&format!("{}\nMSG: {t}\n{sub}", "=".repeat(80)));
            add(sub, out, seen);
        }
    }
    let short = name.replacen("/msg/", "/", 1);
    let main = text(&short)?;
    let mut out = main.to_string();
    add(main, &mut out, &mut Vec::new());
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_splits_seconds_into_whole_seconds_and_nanoseconds() {
        assert_eq!(Time::from_seconds(0.0), Time { sec: 0, nanosec: 0 });
        assert_eq!(Time::from_seconds(1.25), Time { sec: 1, nanosec: 250_000_000 });
        // 0.05 × 3 is 0.15000000000000002: rounding keeps whole nanoseconds.
        assert_eq!(Time::from_seconds(0.05 * 3.0), Time { sec: 0, nanosec: 150_000_000 });
        assert_eq!(Time::from_seconds(2.9999999999), Time { sec: 3, nanosec: 0 });
        assert_eq!(Time::from_seconds(-1.0), Time { sec: 0, nanosec: 0 });
    }

    #[test]
    fn a_yaw_quaternion_turns_about_z_and_reads_back() {
        for yaw in [0.0, 0.5, -1.0, 3.0, -3.1] {
            let q = Quaternion::from_yaw(yaw);
            assert!((q.x, q.y) == (0.0, 0.0) && (q.z * q.z + q.w * q.w - 1.0).abs() < 1e-12);
            assert!((q.yaw() - yaw).abs() < 1e-12, "{yaw}");
        }
    }

    #[test]
    fn frames_sit_under_the_robots_namespace() {
        assert_eq!(frames("/alpha"), ("alpha/odom".to_string(), "alpha/base_link".to_string()));
        assert_eq!(frames("/crsim/alpha"), ("crsim/alpha/odom".to_string(), "crsim/alpha/base_link".to_string()));
        assert_eq!(frames(""), ("odom".to_string(), "base_link".to_string()));
    }

    #[test]
    fn odometry_carries_the_pose_and_the_twist_in_the_robots_frames() {
        let s = RobotState { x: 1.5, y: -2.0, heading: 0.25, linear: 0.3, lateral: 0.0, angular: -0.1 };
        let f = frames("/alpha");
        let o = odometry(&s, Time::from_seconds(1.5), (&f.0, &f.1));
        assert_eq!((o.header.frame_id.as_str(), o.child_frame_id.as_str()), ("alpha/odom", "alpha/base_link"));
        assert_eq!(o.header.stamp, Time { sec: 1, nanosec: 500_000_000 });
        assert_eq!((o.pose.pose.position.x, o.pose.pose.position.y), (1.5, -2.0));
        assert!((o.pose.pose.orientation.yaw() - 0.25).abs() < 1e-7);
        assert!((o.twist.twist.linear.x - 0.3).abs() < 1e-7 && (o.twist.twist.angular.z + 0.1).abs() < 1e-7);
        assert_eq!(o.pose.covariance.0[0], 1e-6);
        assert_eq!(o.pose.covariance.0[35], 1e-6);
        assert_eq!(o.pose.covariance.0[1], 0.0);
        let t = transform(&s, o.header.stamp, (&f.0, &f.1));
        assert_eq!(t.transform.translation, o.pose.pose.position);
        assert_eq!((t.header.frame_id, t.child_frame_id), (o.header.frame_id, o.child_frame_id));
    }

    #[test]
    fn a_scan_lists_its_beams_counter_clockwise_with_no_return_as_infinity() {
        let step = std::f32::consts::FRAC_PI_4;
        let fan = Fan { first: -std::f32::consts::FRAC_PI_2, step, min: 0.12, max: 3.0 };
        let s = laser_scan(&[1.0, 3.0, 0.5, 2.9, 3.0], fan, 0.1, Time::default(), "b/range");
        assert_eq!(s.header.frame_id, "b/range");
        assert!((s.angle_max - std::f32::consts::FRAC_PI_2).abs() < 1e-6);
        assert_eq!(s.ranges, vec![1.0, f32::INFINITY, 0.5, 2.9, f32::INFINITY]);
        assert_eq!((s.range_min, s.range_max, s.scan_time), (0.12, 3.0, 0.1));
    }

    #[test]
    fn a_battery_reports_its_level_and_whether_it_charges() {
        let b = battery_state(30.0, 120.0, true, Time::default(), "a/base_link");
        assert_eq!((b.percentage, b.power_supply_status, b.power_supply_health), (0.25, 1, 1));
        assert!(b.voltage.is_nan() && b.present);
        let empty = battery_state(0.0, 120.0, false, Time::default(), "a/base_link");
        assert_eq!((empty.percentage, empty.power_supply_status, empty.power_supply_health), (0.0, 2, 3));
    }

    #[test]
    fn a_schema_is_the_definition_then_each_type_it_uses_once_in_field_order() {
        let rule = "=".repeat(80);
        assert_eq!(schema("std_msgs/msg/Bool").as_deref(), Some("bool data\n"));
        assert_eq!(
            schema("rosgraph_msgs/msg/Clock").unwrap(),
            format!("builtin_interfaces/Time clock\n{rule}\nMSG: builtin_interfaces/Time\nint32 sec\nuint32 nanosec\n")
        );
        let odom = schema("nav_msgs/msg/Odometry").unwrap();
        let used: Vec<&str> = odom.lines().filter_map(|l| l.strip_prefix("MSG: ")).collect();
        assert_eq!(
            used,
            [
                "std_msgs/Header",
                "builtin_interfaces/Time",
                "geometry_msgs/PoseWithCovariance",
                "geometry_msgs/Pose",
                "geometry_msgs/Point",
                "geometry_msgs/Quaternion",
                "geometry_msgs/TwistWithCovariance",
                "geometry_msgs/Twist",
                "geometry_msgs/Vector3",
            ]
        );
        for t in ["sensor_msgs/msg/LaserScan", "sensor_msgs/msg/BatteryState", "tf2_msgs/msg/TFMessage"] {
            assert!(schema(t).is_some_and(|s| s.contains("MSG: builtin_interfaces/Time\n")), "{t}");
        }
        assert_eq!(schema("geometry_msgs/msg/Wrench"), None);
    }
}
