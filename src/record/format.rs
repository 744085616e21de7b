//! The record stream as plain types: what one step of a run leaves on each channel, the
//! metadata of a recording, and the JSON schemas other MCAP readers (Foxglove, `mcap cat`) use.
//! The same records go into MCAP files and over the viewer's TCP stream.
//!
//! Numbers are integers in fixed units (millimetres, milliradians, per mille) so that the
//! per-step arrays compress well and every reader sees the same values; crsim's own replay
//! converts them back with [`from_mm`] and friends.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::comms::model::{PairParams, RobotParams, SystemParams};

/// Version of the channel layout; a reader refuses other versions by name.
pub const FORMAT_VERSION: u32 = 1;
/// The MCAP profile of crsim recordings.
pub const PROFILE: &str = "crsim";
/// Every this many steps a keyframe holds the full state of explorers and networks, so that a
/// reader reaches any step from the keyframe before it.
pub const KEYFRAME_EVERY: u64 = 250;

/// Metadata record names.
pub const META_RUN: &str = "crsim.run";
pub const META_END: &str = "crsim.end";

/// The channels, in the order they are registered.
pub const CHANNELS: [Channel; 11] = [
    Channel::Step,
    Channel::Robots,
    Channel::Pens,
    Channel::Events,
    Channel::Radio,
    Channel::Network,
    Channel::Explorer,
    Channel::Inputs,
    Channel::Keyframe,
    Channel::Range,
    Channel::Sensors,
];

/// A channel of the record stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Channel {
    Step,
    Robots,
    Pens,
    Events,
    Radio,
    Network,
    Explorer,
    Inputs,
    Keyframe,
    Range,
    Sensors,
}

impl Channel {
    pub fn topic(self) -> &'static str {
        match self {
            Channel::Step => "/step",
            Channel::Robots => "/robots",
            Channel::Pens => "/pens",
            Channel::Events => "/events",
            Channel::Radio => "/radio",
            Channel::Network => "/network",
            Channel::Explorer => "/explorer",
            Channel::Inputs => "/inputs",
            Channel::Keyframe => "/keyframe",
            Channel::Range => "/range",
            Channel::Sensors => "/sensors",
        }
    }

    pub fn from_topic(topic: &str) -> Option<Channel> {
        CHANNELS.into_iter().find(|c| c.topic() == topic)
    }

    /// The schema's name (as MCAP readers show it).
    pub fn schema_name(self) -> &'static str {
        match self {
            Channel::Step => "crsim.Step",
            Channel::Robots => "crsim.Robots",
            Channel::Pens => "crsim.Pens",
            Channel::Events => "crsim.Events",
            Channel::Radio => "crsim.Radio",
            Channel::Network => "crsim.Network",
            Channel::Explorer => "crsim.Explorer",
            Channel::Inputs => "crsim.Inputs",
            Channel::Keyframe => "crsim.Keyframe",
            Channel::Range => "crsim.Range",
            Channel::Sensors => "crsim.Sensors",
        }
    }

    /// The JSON schema of the channel's messages.
    pub fn schema(self) -> String {
        let ints = |d: &str| format!(r#"{{"type":"array","items":{{"type":"integer"}},"description":"{d}"}}"#);
        let obj = |props: &[(&str, String)], required: &[&str]| {
            let props: Vec<String> = props.iter().map(|(k, v)| format!(r#""{k}":{v}"#)).collect();
            let req: Vec<String> = required.iter().map(|r| format!(r#""{r}""#)).collect();
            format!(r#"{{"type":"object","properties":{{{}}},"required":[{}]}}"#, props.join(","), req.join(","))
        };
        let step = r#"{"type":"integer","description":"simulation step"}"#.to_string();
        let text = |d: &str| format!(r#"{{"type":"string","description":"{d}"}}"#);
        let any_list = |d: &str| format!(r#"{{"type":"array","items":{{"type":"object"}},"description":"{d}"}}"#);
        match self {
            Channel::Step => obj(
                &[
                    ("step", step),
                    ("time", r#"{"type":"number","description":"simulated seconds"}"#.into()),
                    ("hash", text("trajectory hash after this step, 16 hex digits")),
                    ("sonars", ints("robots inside each sonar's beam, in scene order")),
                ],
                &["step", "time", "hash"],
            ),
            Channel::Robots => obj(
                &[
                    ("step", step),
                    ("x", ints("position, mm, in robot order")),
                    ("y", ints("position, mm")),
                    ("heading", ints("heading, mrad, counter-clockwise from +x")),
                    ("cmd_linear", ints("commanded linear speed, mm/s")),
                    ("cmd_angular", ints("commanded turn rate, mrad/s")),
                    ("linear", ints("applied linear speed, mm/s")),
                    ("angular", ints("applied turn rate, mrad/s")),
                    ("cmd_lateral", ints("commanded sideways speed, mm/s, to the left (only in steps where a holonomic robot moves sideways)")),
                    ("lateral", ints("applied sideways speed, mm/s (as cmd_lateral)")),
                    ("battery", ints("charge, per mille of capacity")),
                    ("flags", ints("1 touching, 2 gripper closed, 4 lamp on, 8 charging")),
                ],
                &["step", "x", "y", "heading"],
            ),
            Channel::Pens => obj(
                &[
                    ("step", step),
                    ("x", ints("position, mm, in scene order")),
                    ("y", ints("position, mm")),
                    ("holder", ints("robot index holding the pen; -1 free, -2 boxed")),
                ],
                &["step", "x", "y", "holder"],
            ),
            Channel::Events => obj(
                &[
                    ("step", step),
                    ("events", any_list("bump, skill_started, skill_completed, gripped, released, boxed")),
                ],
                &["step", "events"],
            ),
            Channel::Radio => obj(
                &[
                    ("step", step),
                    ("sent", any_list("one per send: from, to, queued, dropped by cause")),
                    ("delivered", any_list("one per delivered message: to, from, sent_step")),
                ],
                &["step", "sent", "delivered"],
            ),
            Channel::Network => obj(
                &[
                    ("step", step),
                    ("robot", text("robot name")),
                    ("degrees", ints("degree of execution of each node, per cent; -1 where the node does not exist")),
                ],
                &["step", "robot", "degrees"],
            ),
            Channel::Explorer => obj(
                &[
                    ("step", step),
                    ("robot", text("robot name")),
                    ("cell", ints("believed cell x, y")),
                    ("dir", text("believed heading")),
                    ("phase", text("Outbound, Recovering, Returning or Done")),
                    ("changed", any_list("map cells that changed: [x, y, state letter]")),
                    ("outbound", text("moves since leaving the den (w s l r)")),
                    ("plan", text("moves still planned")),
                ],
                &["step", "robot"],
            ),
            Channel::Inputs => obj(
                &[
                    ("step", step),
                    (
                        "params",
                        r#"{"type":"object","description":"live parameters as changed before this step"}"#.into(),
                    ),
                    ("commands", any_list("actuator commands of robots driven from outside")),
                    ("sends", any_list("radio sends of robots driven from outside")),
                ],
                &["step"],
            ),
            Channel::Keyframe => obj(
                &[
                    ("step", step),
                    ("explorers", any_list("every explorer's full state")),
                    ("networks", any_list("every network robot's degrees")),
                    (
                        "ranges",
                        r#"{"type":"object","description":"every range sensor's latest scan, as in /range"}"#.into(),
                    ),
                    (
                        "sensors",
                        r#"{"type":"object","description":"every robot's latest records of registered sensors, as in /sensors"}"#.into(),
                    ),
                ],
                &["step"],
            ),
            Channel::Range => obj(
                &[
                    ("step", step),
                    ("robot", ints("index of the robot of each scan taken this step, in robot order")),
                    (
                        "distances",
                        r#"{"type":"array","items":{"type":"array","items":{"type":"integer"}},"description":"each scan's beams, mm, in the order of the sensor's angles"}"#.into(),
                    ),
                ],
                &["step", "robot", "distances"],
            ),
            Channel::Sensors => obj(
                &[
                    ("step", step),
                    ("robot", ints("index of each robot with records this step, in robot order")),
                    (
                        "records",
                        r#"{"type":"array","items":{"type":"object"},"description":"each robot's records, by sensor name: what each sensor registered with records of its own read this step"}"#.into(),
                    ),
                ],
                &["step", "robot", "records"],
            ),
        }
    }
}

/// Metres to the recorded millimetres.
pub fn mm(x: f32) -> i32 {
    (x * 1000.0).round() as i32
}

pub fn from_mm(x: i32) -> f32 {
    x as f32 / 1000.0
}

/// What the run was: everything `crsim verify` needs to run it again.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RunMeta {
    pub format_version: u32,
    pub crsim_version: String,
    /// The scene file's text as it was read.
    pub scene_text: String,
    /// Where it was read from.
    pub scene_path: String,
    /// The scene as it ran (overrides, seed and switches applied), in RON: what replay and
    /// verify load.
    pub scene_resolved: String,
    /// The text of the network structure file the scene names, if any.
    pub network: Option<String>,
    pub seed: u64,
    /// Seconds per step.
    pub dt: f64,
    /// `--set` and `--programs` as given (JSON of [`crate::scene::SceneOverrides`]).
    pub overrides: serde_json::Value,
    /// The radio was switched off with `--no-radio`.
    pub no_radio: bool,
    /// Step of the first recorded step (0 unless recording started in the middle of a run).
    pub first_step: u64,
    pub robots: Vec<String>,
    pub pens: Vec<String>,
}

impl RunMeta {
    /// As MCAP metadata (a map of strings).
    pub fn to_map(&self) -> BTreeMap<String, String> {
        let mut m = BTreeMap::new();
        m.insert("format_version".into(), self.format_version.to_string());
        m.insert("crsim_version".into(), self.crsim_version.clone());
        m.insert("scene".into(), self.scene_text.clone());
        m.insert("scene_path".into(), self.scene_path.clone());
        m.insert("scene_resolved".into(), self.scene_resolved.clone());
        if let Some(n) = &self.network {
            m.insert("network".into(), n.clone());
        }
        m.insert("seed".into(), self.seed.to_string());
        m.insert("dt".into(), format!("{}", self.dt));
        m.insert("overrides".into(), self.overrides.to_string());
        m.insert("no_radio".into(), self.no_radio.to_string());
        m.insert("first_step".into(), self.first_step.to_string());
        m.insert("robots".into(), self.robots.join(","));
        m.insert("pens".into(), self.pens.join(","));
        m
    }

    /// From MCAP metadata; the error names the missing or bad entry.
    pub fn from_map(m: &BTreeMap<String, String>) -> Result<RunMeta, String> {
        let get = |k: &str| m.get(k).ok_or_else(|| format!("the run metadata has no {k:?}"));
        let num = |k: &str| -> Result<u64, String> {
            get(k)?.parse::<u64>().map_err(|e| format!("the run metadata's {k:?} is not a number: {e}"))
        };
        let version = num("format_version")? as u32;
        if version != FORMAT_VERSION {
            return Err(format!(
                "it is a recording of format version {version}, written by crsim {}; this crsim ({}) reads version {FORMAT_VERSION}",
                m.get("crsim_version").map_or("?", |s| s.as_str()),
                env!("CARGO_PKG_VERSION")
            ));
        }
        let scene_text = get("scene")?.clone();
        if scene_text.trim().is_empty() {
            return Err("the recording's scene text is empty".into());
        }
        let list = |k: &str| -> Result<Vec<String>, String> {
            let s = get(k)?;
            Ok(if s.is_empty() { Vec::new() } else { s.split(',').map(str::to_string).collect() })
        };
        Ok(RunMeta {
            format_version: version,
            crsim_version: get("crsim_version")?.clone(),
            scene_text,
            scene_path: get("scene_path")?.clone(),
            scene_resolved: get("scene_resolved")?.clone(),
            network: m.get("network").cloned(),
            seed: num("seed")?,
            dt: get("dt")?.parse().map_err(|e| format!("the run metadata's \"dt\" is not a number: {e}"))?,
            overrides: serde_json::from_str(get("overrides")?)
                .map_err(|e| format!("the run metadata's \"overrides\" is not JSON: {e}"))?,
            no_radio: get("no_radio")? == "true",
            first_step: num("first_step")?,
            robots: list("robots")?,
            pens: list("pens")?,
        })
    }

    /// Nanoseconds of simulated time per step: MCAP log times are `step × dt_ns`.
    pub fn dt_ns(&self) -> u64 {
        dt_ns(self.dt)
    }
}

/// Nanoseconds per step for a step of `dt` seconds (at least 1).
pub fn dt_ns(dt: f64) -> u64 {
    ((dt * 1e9).round() as u64).max(1)
}

/// `/range`: the range scans taken this step (a robot's sensor may scan every few steps), each
/// with its robot's index, distances in mm.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct RangeRecord {
    pub step: u64,
    pub robot: Vec<u32>,
    pub distances: Vec<Vec<i32>>,
}

impl RangeRecord {
    pub fn is_empty(&self) -> bool {
        self.robot.is_empty()
    }
}

/// `/sensors`: the records of the sensors that have records of their own (registered ones, an
/// extension's: `Sensor::record`), by robot index and sensor name.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct SensorsRecord {
    pub step: u64,
    pub robot: Vec<u32>,
    pub records: Vec<BTreeMap<String, serde_json::Value>>,
}

impl SensorsRecord {
    pub fn is_empty(&self) -> bool {
        self.robot.is_empty()
    }
}

/// `/step`: the clock, the trajectory hash and the sonars.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct StepRecord {
    pub step: u64,
    pub time: f64,
    pub hash: String,
    #[serde(default)]
    pub sonars: Vec<u32>,
}

/// Robot flag bits of [`RobotsRecord::flags`].
pub mod flags {
    pub const TOUCHING: u8 = 1;
    pub const GRIP_CLOSED: u8 = 2;
    pub const LAMP: u8 = 4;
    pub const CHARGING: u8 = 8;
}

/// `/robots`: every robot, in robot order, as columns.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct RobotsRecord {
    pub step: u64,
    pub x: Vec<i32>,
    pub y: Vec<i32>,
    pub heading: Vec<i32>,
    pub cmd_linear: Vec<i32>,
    pub cmd_angular: Vec<i32>,
    pub linear: Vec<i32>,
    pub angular: Vec<i32>,
    /// Sideways speeds, commanded and applied: only in a step where some robot's is not 0 (a
    /// holonomic drive's), so a recording without one is as it was before holonomic drives.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cmd_lateral: Vec<i32>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lateral: Vec<i32>,
    pub battery: Vec<i32>,
    pub flags: Vec<u8>,
}

impl RobotsRecord {
    /// Room in every column for `n` more robots.
    pub fn reserve(&mut self, n: usize) {
        for v in [
            &mut self.x,
            &mut self.y,
            &mut self.heading,
            &mut self.cmd_linear,
            &mut self.cmd_angular,
            &mut self.linear,
            &mut self.angular,
            &mut self.battery,
        ] {
            v.reserve(n);
        }
        self.flags.reserve(n);
    }

    pub fn len(&self) -> usize {
        self.x.len()
    }

    pub fn is_empty(&self) -> bool {
        self.x.is_empty()
    }
}

/// Holder values of [`PensRecord::holder`] besides a robot index.
pub const PEN_FREE: i32 = -1;
pub const PEN_BOXED: i32 = -2;

/// `/pens`: every pen, in scene order.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct PensRecord {
    pub step: u64,
    pub x: Vec<i32>,
    pub y: Vec<i32>,
    pub holder: Vec<i32>,
}

/// One thing that happened during a step.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Event {
    /// A robot's body started touching another body.
    Bump {
        robot: String,
        other: String,
    },
    SkillStarted {
        robot: String,
        group: String,
        skill: String,
    },
    SkillCompleted {
        robot: String,
        group: String,
        skill: String,
        replaced: bool,
    },
    /// A robot entered a sonar's beam.
    Sonar {
        sonar: String,
        robot: String,
    },
    Gripped {
        robot: String,
        pen: String,
    },
    Released {
        robot: String,
        pen: String,
    },
    Boxed {
        pen: String,
        #[serde(rename = "box")]
        container: String,
    },
}

impl std::fmt::Display for Event {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Event::Bump { robot, other } => write!(f, "{robot} bumped into {other}"),
            Event::SkillStarted { robot, group, skill } => write!(f, "{robot} started {skill} ({group})"),
            Event::SkillCompleted { robot, group, skill, replaced } => {
                let how = if *replaced { "replaced" } else { "completed" };
                write!(f, "{robot}: {skill} ({group}) {how}")
            }
            Event::Sonar { sonar, robot } => write!(f, "{robot} entered sonar {sonar}"),
            Event::Gripped { robot, pen } => write!(f, "{robot} gripped {pen}"),
            Event::Released { robot, pen } => write!(f, "{robot} released {pen}"),
            Event::Boxed { pen, container } => write!(f, "{pen} boxed in {container}"),
        }
    }
}

/// `/events`, written only for steps where something happened.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct EventsRecord {
    pub step: u64,
    pub events: Vec<Event>,
}

/// One radio send and what became of it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RadioSend {
    pub from: String,
    /// A robot's name, or `*` for a broadcast.
    pub to: String,
    pub queued: u64,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub dropped: BTreeMap<String, u64>,
}

/// One delivered message.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RadioDelivery {
    pub to: String,
    pub from: String,
    pub sent_step: u64,
}

/// `/radio`, written only for steps with sends or deliveries.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct RadioRecord {
    pub step: u64,
    pub sent: Vec<RadioSend>,
    pub delivered: Vec<RadioDelivery>,
}

/// `/network`: a network robot's node degrees, whenever one of them changed by a per cent.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct NetworkRecord {
    pub step: u64,
    pub robot: String,
    pub degrees: Vec<i8>,
}

/// Degrees as recorded: per cent, -1 for a node that does not exist.
pub fn degree_percent(d: Option<f32>) -> i8 {
    d.map_or(-1, |d| (d.clamp(0.0, 1.0) * 100.0).round() as i8)
}

pub fn degree_from_percent(p: i8) -> Option<f32> {
    (p >= 0).then(|| f32::from(p) / 100.0)
}

/// `/explorer`: an explorer's state whenever it changed.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct ExplorerRecord {
    pub step: u64,
    pub robot: String,
    pub cell: [i32; 2],
    pub dir: String,
    pub phase: String,
    /// Cells whose state changed: x, y and the state's letter (`?` unexplored, `.` free, `#`
    /// obstacle, `!` danger).
    #[serde(default)]
    pub changed: Vec<(i32, i32, char)>,
    #[serde(default)]
    pub outbound: String,
    #[serde(default)]
    pub plan: String,
    /// The whole map, row by row from the top, in keyframes only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub map: Option<Vec<String>>,
}

/// `/keyframe`: the full state of every explorer and network robot.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct KeyframeRecord {
    pub step: u64,
    pub explorers: Vec<ExplorerRecord>,
    pub networks: Vec<NetworkRecord>,
    /// Every range sensor's latest scan (recordings without range sensors leave it out).
    #[serde(default, skip_serializing_if = "RangeRecord::is_empty")]
    pub ranges: RangeRecord,
    /// Every robot's latest records of the sensors with records of their own (none: left out).
    #[serde(default, skip_serializing_if = "SensorsRecord::is_empty")]
    pub sensors: SensorsRecord,
}

/// An actuator command of a robot driven from outside, as the bot manager transmitted it.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
pub struct CommandInput {
    pub robot: u32,
    pub linear: f32,
    pub angular: f32,
    /// Sideways, m/s (a holonomic drive's; not written when 0).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub lateral: f32,
    pub grip: bool,
    pub lamp: bool,
}

fn is_zero(x: &f32) -> bool {
    *x == 0.0
}

/// A radio send of a robot driven from outside.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SendInput {
    pub robot: u32,
    /// A robot's name, or `None` for a broadcast.
    pub to: Option<String>,
    pub payload: serde_json::Value,
}

/// Everything a person (or a viewer) can change while a run goes on, as one comparable value
/// (recorded in `/inputs` when it changes).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LiveParams {
    pub radio: SystemParams,
    /// Each robot's radio parameters in robot order; `None` while it is not registered.
    pub robots: Vec<Option<RobotParams>>,
    pub pairs: Vec<(String, String, PairParams)>,
    pub estop: bool,
    /// The sonar option of each explorer, by robot index.
    pub sonar: BTreeMap<u32, bool>,
}

/// `/inputs`: what came from outside the process before or during this step.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct InputsRecord {
    pub step: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<LiveParams>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub commands: Vec<CommandInput>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sends: Vec<SendInput>,
}

impl InputsRecord {
    pub fn is_empty(&self) -> bool {
        self.params.is_none() && self.commands.is_empty() && self.sends.is_empty()
    }
}

/// What is known at the end of a run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct EndMeta {
    pub steps: u64,
    pub last_step: u64,
    pub hash: String,
    pub interrupted: bool,
}

impl EndMeta {
    pub fn to_map(&self) -> BTreeMap<String, String> {
        let mut m = BTreeMap::new();
        m.insert("steps".into(), self.steps.to_string());
        m.insert("last_step".into(), self.last_step.to_string());
        m.insert("hash".into(), self.hash.clone());
        m.insert("interrupted".into(), self.interrupted.to_string());
        m
    }

    pub fn from_map(m: &BTreeMap<String, String>) -> Option<EndMeta> {
        Some(EndMeta {
            steps: m.get("steps")?.parse().ok()?,
            last_step: m.get("last_step")?.parse().ok()?,
            hash: m.get("hash")?.clone(),
            interrupted: m.get("interrupted")? == "true",
        })
    }
}

/// The value of a record, typed. It is encoded to JSON where it is written (a file's writing
/// thread, a viewer's connection), not on the simulation's thread.
#[derive(Debug, Clone, PartialEq)]
pub enum Body {
    Step(StepRecord),
    Robots(RobotsRecord),
    Pens(PensRecord),
    Events(EventsRecord),
    Radio(RadioRecord),
    Network(NetworkRecord),
    Explorer(ExplorerRecord),
    Inputs(InputsRecord),
    Keyframe(KeyframeRecord),
    Range(RangeRecord),
    Sensors(SensorsRecord),
}

impl Body {
    pub fn channel(&self) -> Channel {
        match self {
            Body::Step(_) => Channel::Step,
            Body::Robots(_) => Channel::Robots,
            Body::Pens(_) => Channel::Pens,
            Body::Events(_) => Channel::Events,
            Body::Radio(_) => Channel::Radio,
            Body::Network(_) => Channel::Network,
            Body::Explorer(_) => Channel::Explorer,
            Body::Inputs(_) => Channel::Inputs,
            Body::Keyframe(_) => Channel::Keyframe,
            Body::Range(_) => Channel::Range,
            Body::Sensors(_) => Channel::Sensors,
        }
    }

    /// The record's JSON, as it goes into files and to viewers.
    pub fn encode(&self) -> Vec<u8> {
        // Room for a typical record up front: growing the buffer copies it again and again.
        let mut out = Vec::with_capacity(self.size_hint());
        let w = &mut out;
        let _ = match self {
            Body::Step(r) => serde_json::to_writer(w, r),
            Body::Robots(r) => serde_json::to_writer(w, r),
            Body::Pens(r) => serde_json::to_writer(w, r),
            Body::Events(r) => serde_json::to_writer(w, r),
            Body::Radio(r) => serde_json::to_writer(w, r),
            Body::Network(r) => serde_json::to_writer(w, r),
            Body::Explorer(r) => serde_json::to_writer(w, r),
            Body::Inputs(r) => serde_json::to_writer(w, r),
            Body::Keyframe(r) => serde_json::to_writer(w, r),
            Body::Range(r) => serde_json::to_writer(w, r),
            Body::Sensors(r) => serde_json::to_writer(w, r),
        };
        out
    }

    /// A record of `channel` from its JSON.
    pub fn decode(channel: Channel, data: serde_json::Value) -> Result<Body, String> {
        let bad = |e: serde_json::Error| format!("a {} record that does not parse: {e}", channel.topic());
        let v = data;
        Ok(match channel {
            Channel::Step => Body::Step(serde_json::from_value(v).map_err(bad)?),
            Channel::Robots => Body::Robots(serde_json::from_value(v).map_err(bad)?),
            Channel::Pens => Body::Pens(serde_json::from_value(v).map_err(bad)?),
            Channel::Events => Body::Events(serde_json::from_value(v).map_err(bad)?),
            Channel::Radio => Body::Radio(serde_json::from_value(v).map_err(bad)?),
            Channel::Network => Body::Network(serde_json::from_value(v).map_err(bad)?),
            Channel::Explorer => Body::Explorer(serde_json::from_value(v).map_err(bad)?),
            Channel::Inputs => Body::Inputs(serde_json::from_value(v).map_err(bad)?),
            Channel::Keyframe => Body::Keyframe(serde_json::from_value(v).map_err(bad)?),
            Channel::Range => Body::Range(serde_json::from_value(v).map_err(bad)?),
            Channel::Sensors => Body::Sensors(serde_json::from_value(v).map_err(bad)?),
        })
    }

    /// About how many bytes the JSON takes.
    pub fn size_hint(&self) -> usize {
        match self {
            Body::Robots(r) => 64 + r.x.len() * 64,
            Body::Pens(p) => 48 + p.x.len() * 20,
            Body::Keyframe(_) => 16 * 1024,
            _ => 256,
        }
    }
}

/// A channel of another format that a floor above writes through the recorder into a file of
/// its own — the ROS 2 bridge's topics as CDR with `ros2msg` schemas, into a ROS 2 bag that
/// `ros2 bag play`, Foxglove and `rosbags` open (see [`crate::record::writer::FileSink::foreign`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForeignChannel {
    pub topic: String,
    /// How messages are encoded (`cdr`).
    pub message_encoding: String,
    /// The schema's name (`nav_msgs/msg/Odometry`), encoding (`ros2msg`) and text.
    pub schema_name: String,
    pub schema_encoding: String,
    pub schema: String,
    /// The channel's metadata (a ROS 2 topic's `offered_qos_profiles`).
    pub metadata: std::collections::BTreeMap<String, String>,
}

/// A message of a foreign channel: its bytes, logged at `log_time` (nanoseconds of simulated
/// time, as crsim's own records are).
#[derive(Debug, Clone, PartialEq)]
pub struct ForeignMessage {
    pub channel: std::sync::Arc<ForeignChannel>,
    pub log_time: u64,
    pub data: Vec<u8>,
}

/// A message of the stream: its step and its value.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    pub channel: Channel,
    pub step: u64,
    pub body: Body,
}

impl Record {
    pub fn new(step: u64, body: Body) -> Record {
        Record { channel: body.channel(), step, body }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_schema_is_json() {
        for c in CHANNELS {
            let v: serde_json::Value = serde_json::from_str(&c.schema()).unwrap_or_else(|e| panic!("{c:?}: {e}"));
            assert_eq!(v["type"], "object", "{c:?}");
            assert_eq!(Channel::from_topic(c.topic()), Some(c));
        }
    }

    #[test]
    fn bodies_encode_to_their_channel_and_decode_back() {
        let mut robots = RobotsRecord { step: 4, ..Default::default() };
        robots.reserve(2);
        robots.x.extend([1, -2]);
        robots.flags.extend([1, 8]);
        let bodies = [
            Body::Step(StepRecord { step: 4, time: 0.1, hash: "ab".into(), sonars: vec![2] }),
            Body::Robots(robots),
            Body::Events(EventsRecord {
                step: 4,
                events: vec![Event::Boxed { pen: "p1".into(), container: "b".into() }],
            }),
        ];
        for b in bodies {
            let json: serde_json::Value = serde_json::from_slice(&b.encode()).unwrap();
            assert_eq!(json["step"], 4);
            assert_eq!(Body::decode(b.channel(), json), Ok(b.clone()));
        }
        let e = Body::decode(Channel::Pens, serde_json::json!({"step": "x"})).unwrap_err();
        assert!(e.contains("a /pens record that does not parse"), "{e}");
    }

    #[test]
    fn run_metadata_round_trips_and_refuses_other_versions() {
        let meta = RunMeta {
            format_version: FORMAT_VERSION,
            crsim_version: "0.1.0".into(),
            scene_text: "SceneFile(name: \"x\")".into(),
            scene_path: "x.ron".into(),
            scene_resolved: "SceneFile(name: \"x\")".into(),
            network: None,
            seed: 7,
            dt: 0.02,
            overrides: serde_json::json!({"set": []}),
            no_radio: false,
            first_step: 0,
            robots: vec!["a".into(), "b".into()],
            pens: vec![],
        };
        assert_eq!(RunMeta::from_map(&meta.to_map()), Ok(meta.clone()));
        let mut old = meta.to_map();
        old.insert("format_version".into(), "0".into());
        let e = RunMeta::from_map(&old).unwrap_err();
        assert!(e.contains("format version 0"), "{e}");
        let mut blank = meta.to_map();
        blank.insert("scene".into(), " ".into());
        assert!(RunMeta::from_map(&blank).unwrap_err().contains("scene text is empty"));
        assert_eq!(meta.dt_ns(), 20_000_000);
    }

    #[test]
    fn degrees_and_events_have_stable_json() {
        assert_eq!(degree_percent(None), -1);
        assert_eq!(degree_percent(Some(0.456)), 46);
        assert_eq!(degree_from_percent(46), Some(0.46));
        let e = Event::Boxed { pen: "pen1".into(), container: "boxA".into() };
        assert_eq!(serde_json::to_string(&e).unwrap(), r#"{"kind":"boxed","pen":"pen1","box":"boxA"}"#);
    }
}
