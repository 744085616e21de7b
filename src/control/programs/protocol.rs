//! The environment protocol for robot programs outside crsim (seeds 003 and 000), as plain
//! types: one JSON object per line over TCP, version [`VERSION`]. Every frame has a `type`.
//!
//! From crsim: `hello` (on connecting), `registered` (the answer to `register`), `step` (the
//! readings of every robot the connection drives, for one step), `reset` (the scene restarted),
//! `end` (the run is over) and `error` (naming what was wrong). From a program: `register` (registerRobot of seed 000:
//! robots by name, each with its communication type), `act` (the actions for one step: a drive
//! command or a skill, the gripper, the lamp, and messages to send) and `reset`.
//!
//! Newline-delimited JSON because every language reads lines and JSON with its standard library,
//! a person can follow and type it with `nc`, and one frame per line needs no length arithmetic.

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use crate::robot::registry::{Detection, GripReading, InMessage, SensorInfo, SensorReading, Touch};

/// The protocol's name in `hello`.
pub const PROTOCOL: &str = "crsim-programs";
/// The protocol's version in `hello`; a new version changes or removes fields.
pub const VERSION: u32 = 1;

/// How a connection's step frames come: one JSON line, or a JSON line announcing a binary block
/// of fixed-size records (for programs driving many robots; see [`binary_step`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Encoding {
    #[default]
    Json,
    Binary,
}

/// What a robot may send (seed 000's communication type).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Comm {
    Broadcast,
    PointToPoint,
    #[default]
    Both,
}

impl Comm {
    /// (broadcast, point to point)
    pub fn abilities(self) -> (bool, bool) {
        match self {
            Comm::Broadcast => (true, false),
            Comm::PointToPoint => (false, true),
            Comm::Both => (true, true),
        }
    }
}

/// One robot a program registers.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Registration {
    pub name: String,
    #[serde(default)]
    pub comm: Comm,
    /// Each of its readings carries its observation vector too (`observation`, laid out as
    /// `hello`'s `sensors` list their parts): what `crsim.VecEnv` observes, made by the same code.
    #[serde(default)]
    pub observation: bool,
}

/// A skill for a robot's move or lamp group, as crsim's own controllers use them.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum SkillAction {
    Stop,
    /// m/s and rad/s until replaced (and m/s sideways, to the left, for a holonomic robot).
    Velocity {
        linear: f32,
        angular: f32,
        #[serde(default)]
        lateral: f32,
    },
    /// A constant command for a time.
    MoveFor {
        linear: f32,
        angular: f32,
        seconds: f32,
    },
    /// Straight along the heading by `distance` metres (negative: backwards).
    MoveAhead {
        distance: f32,
        #[serde(default)]
        speed: Option<f32>,
    },
    /// Drive onto a point.
    MoveTo {
        x: f32,
        y: f32,
        #[serde(default)]
        speed: Option<f32>,
        #[serde(default)]
        tolerance: Option<f32>,
    },
    /// Turn on the spot to an absolute heading, radians.
    TurnTo {
        heading: f32,
    },
    /// Turn on the spot by an angle, radians, positive to the left.
    TurnBy {
        angle: f32,
    },
    /// Turn by an angle over a time.
    TurnFor {
        angle: f32,
        seconds: f32,
    },
    /// Follow another robot (by name), keeping a distance.
    Follow {
        target: String,
        distance: f32,
        #[serde(default)]
        speed: Option<f32>,
    },
    /// Blink the lamp with a period, seconds.
    Blink {
        period: f32,
    },
}

/// The gripper's command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GripAction {
    Close,
    Open,
}

/// A message to send: to one robot by name, or to every robot in range (`to` absent or null).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutMessage {
    #[serde(default)]
    pub to: Option<String>,
    pub content: Value,
}

/// One robot's actions for a step. Everything is optional: a robot with no action goes on with
/// its running skills.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RobotAction {
    pub name: String,
    /// `[linear m/s, angular rad/s]`, a `velocity` skill; a holonomic robot also takes
    /// `[linear, angular, lateral m/s]` (sideways, to the left). Held as all three, lateral 0
    /// when two are given.
    #[serde(default, deserialize_with = "drive_values")]
    pub drive: Option<[f32; 3]>,
    #[serde(default)]
    pub skill: Option<SkillAction>,
    #[serde(default)]
    pub grip: Option<GripAction>,
    #[serde(default)]
    pub lamp: Option<bool>,
    #[serde(default)]
    pub send: Vec<OutMessage>,
}

/// `drive`'s two or three numbers.
fn drive_values<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<[f32; 3]>, D::Error> {
    let Some(values) = Option::<Vec<f32>>::deserialize(d)? else { return Ok(None) };
    match values[..] {
        [linear, angular] => Ok(Some([linear, angular, 0.0])),
        [linear, angular, lateral] => Ok(Some([linear, angular, lateral])),
        _ => Err(serde::de::Error::custom(format!(
            "drive takes [linear, angular] or, for a holonomic robot, [linear, angular, lateral]; got {} numbers",
            values.len()
        ))),
    }
}

/// A frame from a program.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum ClientFrame {
    Register {
        robots: Vec<Registration>,
        /// How this connection's step frames are to come from now on.
        #[serde(default)]
        encoding: Option<Encoding>,
    },
    Act {
        step: u64,
        #[serde(default)]
        robots: Vec<RobotAction>,
        /// The number of binary drive records ([`DRIVE_RECORD`] bytes each) that follow the
        /// line; a robot with a JSON action as well gets the JSON one.
        #[serde(default)]
        drives: Option<usize>,
    },
    /// Restart the scene (with another seed when given) without reconnecting.
    Reset {
        #[serde(default)]
        seed: Option<u64>,
    },
}

/// Parses one line from a program. The error says what is wrong, and where in the line.
pub fn parse_frame(line: &str) -> Result<ClientFrame, String> {
    let value: Value =
        serde_json::from_str(line.trim()).map_err(|e| format!("bad frame at column {}: {e}", e.column()))?;
    ClientFrame::deserialize(&value).map_err(|e| {
        // An action that does not decode is named by its robot.
        let robots = value.get("robots").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
        let bad = (value.get("type").and_then(Value::as_str) == Some("act"))
            .then(|| robots.iter().enumerate().find_map(|(i, r)| RobotAction::deserialize(r).err().map(|e| (i, r, e))))
            .flatten();
        match bad {
            Some((i, r, e)) => {
                let who = r
                    .get("name")
                    .and_then(Value::as_str)
                    .map_or_else(|| format!("robots[{i}]"), |n| format!("robot \"{n}\""));
                format!("bad frame: {who}: {e}")
            }
            None => format!("bad frame: {e}"),
        }
    })
}

impl RobotAction {
    /// Checks what JSON cannot: one command for the move group, finite numbers, messages
    /// within `max_message` bytes. The error names the robot.
    pub fn check(&self, max_message: usize) -> Result<(), String> {
        let who = &self.name;
        if self.drive.is_some() && matches!(self.skill, Some(ref s) if !matches!(s, SkillAction::Blink { .. })) {
            return Err(format!("robot \"{who}\": drive and a move skill in one action; send one of them"));
        }
        let finite = |xs: &[f32]| xs.iter().all(|x| x.is_finite());
        let numbers: Vec<f32> = match (&self.drive, &self.skill) {
            (Some(d), _) => d.to_vec(),
            (_, Some(SkillAction::Velocity { linear, angular, lateral })) => vec![*linear, *angular, *lateral],
            (_, Some(SkillAction::MoveFor { linear, angular, seconds })) => vec![*linear, *angular, *seconds],
            (_, Some(SkillAction::MoveAhead { distance, speed })) => vec![*distance, speed.unwrap_or(0.0)],
            (_, Some(SkillAction::MoveTo { x, y, speed, tolerance })) => {
                vec![*x, *y, speed.unwrap_or(0.0), tolerance.unwrap_or(0.0)]
            }
            (_, Some(SkillAction::TurnTo { heading })) => vec![*heading],
            (_, Some(SkillAction::TurnBy { angle })) => vec![*angle],
            (_, Some(SkillAction::TurnFor { angle, seconds })) => vec![*angle, *seconds],
            (_, Some(SkillAction::Follow { distance, speed, .. })) => vec![*distance, speed.unwrap_or(0.0)],
            (_, Some(SkillAction::Blink { period })) => vec![*period],
            _ => vec![],
        };
        if !finite(&numbers) {
            return Err(format!("robot \"{who}\": numbers must be finite"));
        }
        for m in &self.send {
            let size = m.content.to_string().len();
            if size > max_message {
                return Err(format!(
                    "robot \"{who}\": a message of {size} bytes is longer than the scene's limit of {max_message}"
                ));
            }
        }
        Ok(())
    }
}

/// A robot a connection may register, in `hello`, with what a program needs to know of its body.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Offered {
    pub name: String,
    /// Another connection drives it now.
    pub taken: bool,
    /// Metres.
    pub radius: f32,
    /// m/s and rad/s.
    pub max_speed: f32,
    pub max_turn: f32,
    /// The camera's range (m) and field of view (rad).
    pub camera_range: f32,
    pub camera_fov: f32,
    /// Its range sensor, if it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub range_sensor: Option<RangeBeams>,
    /// Every sensor it carries, in the order of its observation vector: each one's name, its
    /// parts of the vector (name, size, bounds) and its settings, from the sensor registry.
    pub sensors: Vec<SensorInfo>,
}

/// A range sensor's beams as ROS's `LaserScan` describes them: beam `k` looks `angle_min + k *
/// angle_increment` radians from the heading (counter-clockwise positive) and reads at most
/// `range_max` metres.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RangeBeams {
    pub rays: u32,
    pub angle_min: f32,
    pub angle_increment: f32,
    pub range_max: f32,
    /// Steps between two scans.
    pub period: u32,
}

/// Something wrong with one robot of a request.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RobotError {
    pub robot: String,
    pub error: String,
}

/// A sonar that saw the robot enter its beam this step.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SonarReading {
    pub sonar: String,
    /// Metres along the beam from the sonar.
    pub distance: f32,
}

/// One robot's readings for one step: what each of its sensors read ([`SensorReading`], the
/// registry's readers), the world's sonars that saw it, and the cells it has visited.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Reading {
    pub name: String,
    #[serde(flatten)]
    pub sensors: SensorReading,
    pub sonar: Vec<SonarReading>,
    /// Cells of the robot's diameter it has been in so far.
    pub visited: u32,
    /// Its observation vector, for a robot registered with `observation: true`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub observation: Option<Vec<f32>>,
}

/// A frame from crsim.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ServerFrame {
    Hello {
        protocol: &'static str,
        version: u32,
        scene: String,
        seed: u64,
        dt: f64,
        /// The floor, `[width, height]` metres, origin at the bottom-left corner.
        arena: [f32; 2],
        /// The program robots of the scene.
        robots: Vec<Offered>,
    },
    Registered {
        robots: Vec<String>,
        errors: Vec<RobotError>,
    },
    Step {
        step: u64,
        /// Simulated seconds.
        time: f64,
        robots: Vec<Reading>,
    },
    Reset {
        seed: u64,
    },
    /// The run is over (its steps are done, it was stopped, or the scene was replaced by one
    /// without program robots); the connection closes after it.
    End {
        step: u64,
        reason: String,
    },
    Error {
        error: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        step: Option<u64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        robot: Option<String>,
    },
}

impl ServerFrame {
    /// An error frame about a whole request.
    pub fn error(error: impl Into<String>) -> Self {
        ServerFrame::Error { error: error.into(), step: None, robot: None }
    }

    /// The frame as one line of JSON, newline included.
    pub fn line(&self) -> Vec<u8> {
        let mut bytes = serde_json::to_vec(self).unwrap_or_else(|e| {
            format!("{{\"type\":\"error\",\"error\":\"cannot encode a frame: {e}\"}}").into_bytes()
        });
        bytes.push(b'\n');
        bytes
    }
}

/// Bytes of one robot's record in a binary step frame: name (u32, into the frame's names), x, y,
/// heading, linear, angular, battery (f32), charging (u32), holding, in reach (i32, -1 for
/// none), distance travelled (f32), collisions, boxed, visited, contacts, range beams (u32: its
/// values in the frame's range block, 0 without a range sensor); little-endian.
pub const ROBOT_RECORD: usize = 64;
/// A contact: robot (u32, index into the frame's robots), with (i32, a name), bearing (f32).
pub const CONTACT_RECORD: usize = 12;
/// A camera detection: robot (u32), kind (u32: 0 pen, 1 box, 2 station, 3 robot), name (i32),
/// distance, bearing (f32).
pub const DETECTION_RECORD: usize = 20;
/// A sonar event: robot (u32), sonar (i32, a name), distance (f32).
pub const SONAR_RECORD: usize = 12;
/// A range reading: one beam's distance (f32, metres); a robot's beams follow each other in the
/// range block, the robots in frame order.
pub const RANGE_RECORD: usize = 4;
/// A drive command from a program: robot (u32, index into the robots the connection registered,
/// in the order it registered them), linear (f32, m/s), angular (f32, rad/s), grip (i32: 0 leave,
/// 1 close, 2 open).
pub const DRIVE_RECORD: usize = 16;

fn kind_code(kind: &str) -> u32 {
    match kind {
        "pen" => 0,
        "box" => 1,
        "station" => 2,
        _ => 3,
    }
}

/// A step frame in the binary encoding: a JSON line `{"type":"step","encoding":"binary",
/// "step":N,"time":T,"robots":R,"contacts":C,"detections":D,"sonar":S,"ranges":G,"tail":B}`
/// followed by R robot records, C contact records, D detection records, S sonar records, G
/// range records, and B bytes of JSON
/// `{"names":[...],"messages":[...]}` (names are what the records' name fields index; a
/// message names its robot by index into the robots), with `"sensors":[{"robot":i,
/// "sensors":{...}}]` for the readings of sensors outside the built-in set,
/// `"observations":[{"robot":i,"values":[...]}]` for robots registered with `observation`, and
/// `"lateral":[{"robot":i,"speed":x}]` for holonomic robots' sideways speeds.
pub fn binary_step(step: u64, time: f64, readings: &[Reading]) -> Vec<u8> {
    let mut names = Names::default();
    let mut robots: Vec<u8> = Vec::with_capacity(readings.len() * ROBOT_RECORD);
    let (mut contacts, mut detections, mut sonar, mut ranges) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut messages = Vec::new();
    let (mut n_contacts, mut n_detections, mut n_sonar) = (0usize, 0usize, 0usize);
    let put_u32 = |v: &mut Vec<u8>, x: u32| v.extend_from_slice(&x.to_le_bytes());
    let put_i32 = |v: &mut Vec<u8>, x: i32| v.extend_from_slice(&x.to_le_bytes());
    let put_f32 = |v: &mut Vec<u8>, x: f32| v.extend_from_slice(&x.to_le_bytes());
    let (mut extra, mut observations, mut lateral) = (Vec::new(), Vec::new(), Vec::new());
    for (i, reading) in readings.iter().enumerate() {
        let (i, r) = (i as u32, &reading.sensors);
        put_i32(&mut robots, names.id(&reading.name));
        for x in [r.pose[0], r.pose[1], r.pose[2], r.speed[0], r.speed[1], r.battery] {
            put_f32(&mut robots, x);
        }
        put_u32(&mut robots, u32::from(r.charging));
        put_i32(&mut robots, r.grip.holding.as_deref().map_or(-1, |n| names.id(n)));
        put_i32(&mut robots, r.grip.in_reach.as_deref().map_or(-1, |n| names.id(n)));
        put_f32(&mut robots, r.odometry[0]);
        let beams = r.range.as_deref().unwrap_or_default();
        for x in [r.odometry[1] as u32, r.boxed, reading.visited, r.bump.len() as u32, beams.len() as u32] {
            put_u32(&mut robots, x);
        }
        for &d in beams {
            put_f32(&mut ranges, d);
        }
        for t in &r.bump {
            put_u32(&mut contacts, i);
            put_i32(&mut contacts, names.id(&t.with));
            put_f32(&mut contacts, t.bearing);
            n_contacts += 1;
        }
        for d in &r.camera {
            put_u32(&mut detections, i);
            put_u32(&mut detections, kind_code(d.kind));
            put_i32(&mut detections, names.id(&d.name));
            put_f32(&mut detections, d.distance);
            put_f32(&mut detections, d.bearing);
            n_detections += 1;
        }
        for e in &reading.sonar {
            put_u32(&mut sonar, i);
            put_i32(&mut sonar, names.id(&e.sonar));
            put_f32(&mut sonar, e.distance);
            n_sonar += 1;
        }
        for m in &r.messages {
            messages.push(serde_json::json!({
                "robot": i, "from": m.from, "sent": m.sent, "broadcast": m.broadcast, "content": m.content
            }));
        }
        if !r.sensors.is_empty() {
            extra.push(serde_json::json!({ "robot": i, "sensors": r.sensors }));
        }
        if let Some(speed) = r.lateral {
            lateral.push(serde_json::json!({ "robot": i, "speed": speed }));
        }
        if let Some(values) = &reading.observation {
            observations.push(serde_json::json!({ "robot": i, "values": values }));
        }
    }
    let mut tail = serde_json::json!({"names": names.list, "messages": messages});
    if !extra.is_empty() {
        tail["sensors"] = serde_json::Value::Array(extra);
    }
    if !observations.is_empty() {
        tail["observations"] = serde_json::Value::Array(observations);
    }
    if !lateral.is_empty() {
        tail["lateral"] = serde_json::Value::Array(lateral);
    }
    let tail = serde_json::to_vec(&tail).unwrap_or_default();
    let head = serde_json::json!({
        "type": "step", "encoding": "binary", "step": step, "time": time, "robots": readings.len(),
        "contacts": n_contacts, "detections": n_detections, "sonar": n_sonar,
        "ranges": ranges.len() / RANGE_RECORD, "tail": tail.len(),
    });
    let mut out = serde_json::to_vec(&head).unwrap_or_default();
    out.push(b'\n');
    for part in [robots, contacts, detections, sonar, ranges, tail] {
        out.extend_from_slice(&part);
    }
    out
}

/// The names a binary frame's records refer to, each once.
#[derive(Default)]
struct Names<'a> {
    list: Vec<&'a str>,
    ids: std::collections::HashMap<&'a str, i32>,
}

impl<'a> Names<'a> {
    fn id(&mut self, name: &'a str) -> i32 {
        if let Some(&id) = self.ids.get(name) {
            return id;
        }
        self.list.push(name);
        let id = self.list.len() as i32 - 1;
        self.ids.insert(name, id);
        id
    }
}

/// A drive command from a binary block (see [`DRIVE_RECORD`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DriveRecord {
    pub robot: u32,
    pub linear: f32,
    pub angular: f32,
    pub grip: i32,
}

/// The drive records of a binary block.
pub fn parse_drives(bytes: &[u8]) -> Vec<DriveRecord> {
    bytes
        .chunks_exact(DRIVE_RECORD)
        .map(|r| {
            let word = |i: usize| [r[i], r[i + 1], r[i + 2], r[i + 3]];
            DriveRecord {
                robot: u32::from_le_bytes(word(0)),
                linear: f32::from_le_bytes(word(4)),
                angular: f32::from_le_bytes(word(8)),
                grip: i32::from_le_bytes(word(12)),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_parse_with_defaults() {
        let f = parse_frame(r#"{"type":"register","robots":[{"name":"a"},{"name":"b","comm":"broadcast"}]}"#);
        assert_eq!(
            f,
            Ok(ClientFrame::Register {
                robots: vec![
                    Registration { name: "a".into(), comm: Comm::Both, observation: false },
                    Registration { name: "b".into(), comm: Comm::Broadcast, observation: false },
                ],
                encoding: None,
            })
        );
        let f = parse_frame(
            r#"{"type":"act","step":7,"robots":[{"name":"a","drive":[0.2,0.1],"grip":"close",
                "send":[{"to":"b","content":{"x":1}},{"content":"hi"}]},
               {"name":"b","skill":{"kind":"move_to","x":1,"y":2}}]}"#,
        )
        .unwrap();
        let ClientFrame::Act { step, robots, drives } = f else { panic!() };
        assert_eq!(drives, None);
        assert_eq!(step, 7);
        assert_eq!(robots[0].drive, Some([0.2, 0.1, 0.0]));
        assert_eq!(robots[0].grip, Some(GripAction::Close));
        assert_eq!(robots[0].send[1], OutMessage { to: None, content: Value::from("hi") });
        assert_eq!(robots[1].skill, Some(SkillAction::MoveTo { x: 1.0, y: 2.0, speed: None, tolerance: None }));
        assert_eq!(parse_frame(r#"{"type":"reset"}"#), Ok(ClientFrame::Reset { seed: None }));
        let f = parse_frame(r#"{"type":"register","robots":[],"encoding":"binary"}"#).unwrap();
        assert_eq!(f, ClientFrame::Register { robots: vec![], encoding: Some(Encoding::Binary) });
    }

    #[test]
    fn bad_frames_say_what_is_wrong() {
        let e = parse_frame(r#"{"type":"act","step":1,"robot":[]}"#).unwrap_err();
        assert!(e.contains("unknown field `robot`"), "{e}");
        let e = parse_frame(r#"{"type":"dance"}"#).unwrap_err();
        assert!(e.contains("unknown variant `dance`"), "{e}");
        let e = parse_frame(r#"{"type":"act","step":"one"}"#).unwrap_err();
        assert!(e.contains("invalid type"), "{e}");
        let e = parse_frame("not json").unwrap_err();
        assert_eq!(e, "bad frame at column 2: expected ident at line 1 column 2");
        let e = parse_frame(r#"{"type":"act","step":1,"robots":[{"name":"a","skill":{"kind":"fly"}}]}"#).unwrap_err();
        assert!(e.starts_with("bad frame: robot \"a\": unknown variant `fly`, expected one of `stop`"), "{e}");
        let e = parse_frame(r#"{"type":"act","step":1,"robots":[{"name":"a"},{"drive":[1,2]}]}"#).unwrap_err();
        assert_eq!(e, "bad frame: robots[1]: missing field `name`");
    }

    #[test]
    fn actions_are_checked_and_name_the_robot() {
        let act = |json: &str| serde_json::from_str::<RobotAction>(json).unwrap();
        assert_eq!(act(r#"{"name":"a","drive":[0.1,0]}"#).check(100), Ok(()));
        let e = act(r#"{"name":"a","drive":[0.1,0],"skill":{"kind":"stop"}}"#).check(100).unwrap_err();
        assert_eq!(e, "robot \"a\": drive and a move skill in one action; send one of them");
        assert!(act(r#"{"name":"a","drive":[0.1,0],"skill":{"kind":"blink","period":0.5}}"#).check(100).is_ok());
        let e = act(r#"{"name":"a","send":[{"content":"0123456789"}]}"#).check(8).unwrap_err();
        assert_eq!(e, "robot \"a\": a message of 12 bytes is longer than the scene's limit of 8");
    }

    #[test]
    fn binary_steps_have_fixed_records_and_a_names_table() {
        let mut sensors = SensorReading {
            pose: [1.0, 2.0, 0.5],
            speed: [0.1, 0.2],
            lateral: None,
            battery: 0.75,
            charging: true,
            bump: vec![Touch { with: "wallUp".into(), bearing: 0.25 }],
            camera: vec![
                Detection { kind: "pen", name: "p1".into(), distance: 0.5, bearing: -0.1 },
                Detection { kind: "robot", name: "b".into(), distance: 1.5, bearing: 0.3 },
            ],
            grip: GripReading { holding: None, in_reach: Some("p1".into()) },
            odometry: [3.5, 2.0],
            messages: vec![],
            boxed: 1,
            range: Some(vec![0.5, 2.0, 3.0]),
            sensors: Default::default(),
        };
        sensors.sensors.insert("signal", serde_json::json!({"b": -40.0}));
        let reading = Reading { name: "a".into(), sensors, sonar: vec![], visited: 7, observation: None };
        let json: Value = serde_json::to_value(&reading).unwrap();
        assert_eq!(
            (&json["pose"], &json["visited"], &json["sensors"]["signal"]["b"]),
            (&serde_json::json!([1.0, 2.0, 0.5]), &serde_json::json!(7), &serde_json::json!(-40.0))
        );
        let bytes = binary_step(9, 0.18, &[reading]);
        let nl = bytes.iter().position(|b| *b == b'\n').unwrap();
        let head: Value = serde_json::from_slice(&bytes[..nl]).unwrap();
        assert_eq!(head["encoding"], "binary");
        assert_eq!(
            (head["robots"].as_u64(), head["contacts"].as_u64(), head["detections"].as_u64()),
            (Some(1), Some(1), Some(2))
        );
        let body = &bytes[nl + 1..];
        let tail_len = head["tail"].as_u64().unwrap() as usize;
        assert_eq!(head["ranges"].as_u64(), Some(3));
        assert_eq!(body.len(), ROBOT_RECORD + CONTACT_RECORD + 2 * DETECTION_RECORD + 3 * RANGE_RECORD + tail_len);
        let f = |at: usize| f32::from_le_bytes(body[at..at + 4].try_into().unwrap());
        let u = |at: usize| u32::from_le_bytes(body[at..at + 4].try_into().unwrap());
        assert_eq!((f(4), f(8), f(24)), (1.0, 2.0, 0.75));
        assert_eq!((u(28), u(32) as i32, u(36)), (1, -1, 1), "charging, holding none, in reach p1");
        assert_eq!((u(44), u(48), u(52), u(56), u(60)), (2, 1, 7, 1, 3));
        let ranges = ROBOT_RECORD + CONTACT_RECORD + 2 * DETECTION_RECORD;
        assert_eq!((f(ranges), f(ranges + 4), f(ranges + 8)), (0.5, 2.0, 3.0));
        let tail: Value = serde_json::from_slice(&body[body.len() - tail_len..]).unwrap();
        assert_eq!(tail["names"], serde_json::json!(["a", "p1", "wallUp", "b"]));
        assert_eq!(tail["sensors"], serde_json::json!([{"robot": 0, "sensors": {"signal": {"b": -40.0}}}]));
        let drive = [7u32.to_le_bytes(), 0.5f32.to_le_bytes(), (-1.0f32).to_le_bytes(), 1i32.to_le_bytes()].concat();
        assert_eq!(parse_drives(&drive), vec![DriveRecord { robot: 7, linear: 0.5, angular: -1.0, grip: 1 }]);
    }

    #[test]
    fn server_frames_are_one_line_each() {
        let line = ServerFrame::Registered { robots: vec!["a".into()], errors: vec![] }.line();
        assert_eq!(line, b"{\"type\":\"registered\",\"robots\":[\"a\"],\"errors\":[]}\n");
        let line = ServerFrame::error("oops").line();
        assert_eq!(line, b"{\"type\":\"error\",\"error\":\"oops\"}\n");
    }
}
