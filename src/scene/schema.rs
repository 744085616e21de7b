//! The scene file format: plain serde types that mirror `scenes/*.ron` one to one.
//!
//! Units: metres, seconds, degrees in the file (radians inside the simulation). The arena's
//! origin is its bottom-left corner; x grows to the right, y grows up; a heading of 0° faces +x
//! and angles grow counter-clockwise. Every struct rejects unknown fields so a typo in a hand
//! edited scene is an error, not a silently ignored line.

use serde::{Deserialize, Serialize};

/// A 2D point or size in metres, written `(x, y)` in RON.
pub type Vec2f = (f32, f32);

/// A whole scene: the arena, everything in it, and how the loop steps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SceneFile {
    /// A human-readable name shown in the panel and the run summary.
    pub name: String,
    /// The one seed every random stream is derived from.
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// Seconds of simulated time per step of the environment loop.
    #[serde(default = "default_dt")]
    pub dt: f64,
    /// Physics substeps per step (rapier still advances exactly `dt` per step).
    #[serde(default = "default_substeps")]
    pub substeps: u32,
    /// How robots and pens move: rapier's rigid bodies (the default) or the kinematic model for
    /// very large swarms.
    #[serde(default)]
    pub physics: PhysicsMode,
    /// The floor: its size, and whether walls enclose it.
    pub arena: ArenaSpec,
    #[serde(default)]
    /// Straight solid walls inside the arena.
    pub walls: Vec<WallSpec>,
    #[serde(default)]
    /// Solid rectangles robots bump into; a pen released over a box drops into it.
    pub boxes: Vec<BoxSpec>,
    #[serde(default)]
    /// Small bodies robots push, grip, carry and drop into boxes.
    pub pens: Vec<PenSpec>,
    #[serde(default)]
    /// Robots' refuges on the floor, each near a wall; an explorer starts in its den.
    pub dens: Vec<DenSpec>,
    #[serde(default)]
    /// Charging pads.
    pub stations: Vec<StationSpec>,
    #[serde(default)]
    /// Fixed sonar beams that report robots crossing them.
    pub sonars: Vec<SonarSpec>,
    #[serde(default)]
    /// Robot kinds by name: a kind gives the robots that name it their body, drive, sensors,
    /// controller and radio, every field a robot does not set itself (`kinds: { "scout": (radius:
    /// 0.06, range_sensor: (rays: 8)) }`, then `(name: "s1", kind: "scout", pose: (1, 1, 0))`).
    pub kinds: std::collections::BTreeMap<String, KindSpec>,
    #[serde(default)]
    /// The robots, in the order that gives each its index (its bot id in packets).
    pub robots: Vec<RobotSpec>,
    /// System-level parameters of the communication model.
    #[serde(default)]
    pub comms: CommsSpec,
    /// The bot manager: UDP address and ports for outside controllers, and the watchdog.
    #[serde(default)]
    pub botlink: BotlinkSpec,
    /// The server for robot programs outside crsim (robots of controller kind `Program`).
    #[serde(default)]
    pub programs: ProgramsSpec,
    /// The ROS 2 bridge: every robot's topics under its own namespace, simulated time on
    /// `/clock` (`crsim run --ros2` turns it on too).
    #[serde(default)]
    pub ros2: Ros2Spec,
    /// The basic network structure for `Network` robots: a RON file, relative to the scene
    /// file. The structure shipped in `assets/network.ron` when absent.
    #[serde(default)]
    pub network: Option<String>,
    /// The structure `network` names, read when the scene file is loaded.
    #[serde(skip)]
    pub network_structure: Option<super::network::NetworkStructure>,
}

/// The bot manager's settings (seed 004).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BotlinkSpec {
    /// Address the UDP ports listen on.
    #[serde(default = "default_address")]
    pub address: String,
    /// The "update all" port for packets carrying commands for up to five robots; none when
    /// absent. Port 0 picks a free port.
    #[serde(default)]
    pub update_all_port: Option<u16>,
    /// Seconds of simulated time without a packet before an online link drops back to
    /// connecting and stops: an external robot not hearing its controller, or the bot manager
    /// not hearing a bot.
    #[serde(default = "default_watchdog")]
    pub watchdog: f32,
    /// Seconds of simulated time a bot has to answer when the manager starts connecting to it
    /// (an outside bot at the start, any bot connected by hand); without an answer its link falls
    /// back to offline and the manager stops sending to it, as seed 004's state machine does. A
    /// link the watchdog dropped from online stays connecting until the bot answers.
    #[serde(default = "default_connect_timeout")]
    pub connect_timeout: f32,
    /// How the bot manager's packets reach crsim's own simulated bots. Outside bots are always
    /// reached over UDP.
    #[serde(default)]
    pub transport: Transport,
    /// With the UDP transport: the IP multicast group (`"239.255.42.42:10050"`) update-all
    /// packets go to. Without one, or where the host does not allow multicast, each packet goes
    /// by unicast to every bot it carries.
    #[serde(default)]
    pub multicast: Option<String>,
    /// Seconds of simulated time between two status requests to a connected bot (a ping to a
    /// connecting one); its answer feeds the manager's watchdog.
    #[serde(default = "default_status_period")]
    pub status_period: f32,
    /// Wall-clock seconds the manager waits after each update-all round for the answers of the
    /// connected outside bots it addressed (0: do not wait). Waiting keeps an outside bot in
    /// lock-step with the simulation.
    #[serde(default = "default_reply_timeout")]
    pub reply_timeout: f32,
    /// Set by `crsim bot`: the scene's robot is played as an outside bot, driven by the packets
    /// the emulator takes, not by this process's bot manager.
    #[serde(skip)]
    pub emulated: bool,
}

impl Default for BotlinkSpec {
    fn default() -> Self {
        Self {
            address: default_address(),
            update_all_port: None,
            watchdog: default_watchdog(),
            connect_timeout: default_connect_timeout(),
            transport: Transport::default(),
            multicast: None,
            status_period: default_status_period(),
            reply_timeout: default_reply_timeout(),
            emulated: false,
        }
    }
}

/// How robots and pens move.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub enum PhysicsMode {
    /// Rigid bodies in rapier: mass, momentum, friction and contacts solved by its solver; a
    /// pushed pen slides on and slows down.
    #[default]
    Rigid,
    /// Discs without a rigid-body solver: a robot goes where its wheels take it, overlaps
    /// between discs are separated geometrically (robots share a push, a pen gives way to a
    /// robot entirely) and walls and boxes push discs out. No mass, no momentum: a pushed pen
    /// stops when the push stops. For very large swarms.
    Kinematic,
}

/// How the bot manager's packets travel to simulated bots.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub enum Transport {
    /// Handed over inside the process: no sockets, the same bytes.
    #[default]
    InProcess,
    /// Real UDP datagrams on the loopback (or `address`): every simulated bot gets a port.
    Udp,
}

/// What happens to the robots of a program that has not answered a step in time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub enum LatePolicy {
    /// They go on with their running skills (seed 003's notes: a late controller keeps its last
    /// command).
    #[default]
    Keep,
    /// They stop.
    Stop,
    /// The program is disconnected and its robots stop.
    Drop,
}

/// The ROS 2 bridge (DDS-RTPS, no ROS install needed): per robot `/<prefix>/<robot>/cmd_vel` in,
/// `odom`, `scan`, `battery`, `bump` and `gripper` out, `/tf` and `/clock`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Ros2Spec {
    /// Serve ROS 2 whenever the scene runs (`crsim run --ros2` turns it on for one run).
    #[serde(default)]
    pub enabled: bool,
    /// The DDS domain, 0..=232; absent: the `ROS_DOMAIN_ID` environment variable, else 0, as
    /// every ROS 2 node chooses.
    #[serde(default)]
    pub domain_id: Option<u16>,
    /// A namespace above every robot's: `sim` gives `/sim/<robot>/odom`; empty gives
    /// `/<robot>/odom`. Slash-separated ROS name tokens (letters, digits, `_`).
    #[serde(default)]
    pub prefix: String,
    /// The robots that get topics, by name; empty: every robot.
    #[serde(default)]
    pub robots: Vec<String>,
    /// Simulated hertz of `odom` and `/tf`; 0 publishes every step (`bump` and `gripper` go out
    /// when they change).
    #[serde(default = "default_ros2_rate")]
    pub rate: f32,
    /// Simulated hertz of `scan` (at most the range sensor's own rate); 0: every scan.
    #[serde(default = "default_ros2_scan_rate")]
    pub scan_rate: f32,
    /// Simulated hertz of `battery`; 0 publishes every step.
    #[serde(default = "default_ros2_battery_rate")]
    pub battery_rate: f32,
    /// Lock-step: each step takes exactly one `cmd_vel` per driven robot, waiting for it up to
    /// `programs.step_timeout` (the first up to `programs.wait_for_robots`), and `programs.late`
    /// says what a late robot does — so a run is deterministic, its hash that of the same commands
    /// sent by a program over TCP. Off: commands apply as they come, the newest each step.
    #[serde(default)]
    pub lockstep: bool,
    /// The ROS 2 release the peers run, whose wire layout the bridge speaks (Humble's discovery
    /// information differs from Iron's and later ones', and Jazzy and later announce type
    /// hashes); absent: the `ROS_DISTRO` environment variable, else the current LTS (Lyrical).
    #[serde(default)]
    pub distro: Option<RosDistro>,
    /// The fixed frame above every robot's `odom` on `/tf_static` (each robot's odometry is in
    /// the scene's frame, so `frame → <robot>/odom` is the identity); empty: none, when a
    /// localiser (Nav2's AMCL) publishes `map → odom` itself.
    #[serde(default = "default_ros2_frame")]
    pub frame: String,
    /// Where transforms go and how frames are named: `Global` puts every robot's frames on one
    /// `/tf` and `/tf_static`, named under its namespace (`alpha/odom`, `alpha/base_link`), for
    /// rviz2 showing all robots; `Namespaced` gives each robot its own `/<ns>/tf` and
    /// `/<ns>/tf_static` with unprefixed frame names, as Nav2's multi-robot bringup expects.
    #[serde(default)]
    pub tf: TfLayout,
    /// Seconds of simulated time after which a robot whose newest `cmd_vel` is older stops, as
    /// ros2_control's diff drive controller stops on its `cmd_vel_timeout` (a peer that died
    /// no longer drives its robot on); 0: never. Free-running only (lock-step waits per step).
    #[serde(default = "default_cmd_vel_timeout")]
    pub cmd_vel_timeout: f32,
    /// Offer `scan` reliable (rviz2's default QoS for a LaserScan display, which does not match
    /// a best-effort topic) instead of best effort (ROS's `SensorDataQoS`, as lidar drivers).
    #[serde(default)]
    pub scan_reliable: bool,
}

impl Default for Ros2Spec {
    fn default() -> Self {
        Self {
            enabled: false,
            domain_id: None,
            prefix: String::new(),
            robots: Vec::new(),
            rate: default_ros2_rate(),
            scan_rate: default_ros2_scan_rate(),
            battery_rate: default_ros2_battery_rate(),
            lockstep: false,
            distro: None,
            frame: default_ros2_frame(),
            tf: TfLayout::default(),
            cmd_vel_timeout: default_cmd_vel_timeout(),
            scan_reliable: false,
        }
    }
}

/// Where the bridge's transforms go (`ros2.tf`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub enum TfLayout {
    /// One `/tf` and `/tf_static` for every robot, frames under its namespace (`alpha/odom`).
    #[default]
    Global,
    /// Each robot's own `/<ns>/tf` and `/<ns>/tf_static`, frames unprefixed (`odom`), as Nav2's
    /// multi-robot bringup remaps `/tf` to `tf`.
    Namespaced,
}

/// A ROS 2 release, for the parts of the wire that differ between them (`ros2.distro`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub enum RosDistro {
    /// Humble Hawksbill (LTS, 2022): 24-byte GIDs in `ros_discovery_info`, no type hashes.
    Humble,
    /// Iron Irwini (2023): 16-byte GIDs.
    Iron,
    /// Jazzy Jalisco (LTS, 2024): 16-byte GIDs, type hashes in USER_DATA.
    Jazzy,
    /// Kilted Kaiju (2025): as Jazzy.
    Kilted,
    /// Lyrical Luth (LTS, 2026): as Jazzy.
    Lyrical,
    /// Rolling: as Jazzy.
    Rolling,
}

impl RosDistro {
    /// The release crsim speaks to when neither the scene nor `ROS_DISTRO` says: the current LTS.
    pub const DEFAULT: RosDistro = RosDistro::Lyrical;

    /// The release `ROS_DISTRO` names (`humble`, `jazzy`, ...); Foxy and Galactic speak Humble's
    /// layout. An error lists the names it knows.
    pub fn from_env_name(name: &str) -> Result<RosDistro, String> {
        Ok(match name.trim().to_ascii_lowercase().as_str() {
            "foxy" | "galactic" | "humble" => RosDistro::Humble,
            "iron" => RosDistro::Iron,
            "jazzy" => RosDistro::Jazzy,
            "kilted" => RosDistro::Kilted,
            "lyrical" => RosDistro::Lyrical,
            "rolling" => RosDistro::Rolling,
            other => {
                return Err(format!(
                    "ROS_DISTRO \"{other}\" is not a ROS 2 release crsim knows (humble, iron, jazzy, kilted, \
                     lyrical, rolling); set ros2.distro in the scene"
                ));
            }
        })
    }

    /// The scene's choice, else `ROS_DISTRO`'s (`env`), else [`RosDistro::DEFAULT`].
    pub fn choose(scene: Option<RosDistro>, env: Option<&str>) -> Result<RosDistro, String> {
        match (scene, env.map(str::trim).filter(|e| !e.is_empty())) {
            (Some(d), _) => Ok(d),
            (None, Some(e)) => Self::from_env_name(e),
            (None, None) => Ok(Self::DEFAULT),
        }
    }

    /// Bytes of an entity's GID in `ros_discovery_info`.
    pub fn gid_len(self) -> usize {
        if self == RosDistro::Humble { 24 } else { 16 }
    }

    /// Whether endpoints announce their type's hash (and bags record it).
    pub fn has_type_hash(self) -> bool {
        !matches!(self, RosDistro::Humble | RosDistro::Iron)
    }
}

impl Ros2Spec {
    /// The highest DDS domain id: RTPS's port arithmetic leaves no ports above it.
    pub const MAX_DOMAIN_ID: u16 = 232;

    /// The ROS namespace of robot `name`: `/<prefix>/<token>`, the name made a ROS name token
    /// ([`ros_token`]).
    pub fn namespace_of(&self, name: &str) -> String {
        let prefix = self.prefix.trim_matches('/');
        if prefix.is_empty() { format!("/{}", ros_token(name)) } else { format!("/{prefix}/{}", ros_token(name)) }
    }

    /// Whether robot `name` gets topics.
    pub fn bridges(&self, name: &str) -> bool {
        self.robots.is_empty() || self.robots.iter().any(|r| r == name)
    }
}

/// A name from a scene as a token for a file name or a thread name: ASCII letters, digits, `-`,
/// `_` and `.` as they are, every other character `_` (no `/`, no NUL, nothing a shell or a
/// path would read), at most 64 characters, and never `.` or `..` alone. A name reaches a path
/// (the app's recordings) or the OS (thread names) only through it.
pub fn file_token(name: &str) -> String {
    let mut out: String = name
        .chars()
        .take(64)
        .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') { c } else { '_' })
        .collect();
    if out.is_empty() || out.chars().all(|c| c == '.') {
        out = out.replace('.', "_") + "_";
    }
    out
}

/// A robot's name as a ROS name token: letters, digits and single underscores, not starting
/// with a digit. Other characters become `_` (`robot-1` → `robot_1`), runs of `_` one, and a
/// leading digit gets `r` before it (`7` → `r7`).
pub fn ros_token(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        let c = if c.is_ascii_alphanumeric() { c } else { '_' };
        if !(c == '_' && out.ends_with('_')) {
            out.push(c);
        }
    }
    if out.is_empty() || out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, 'r');
    }
    out
}

/// Whether `s` is a ROS name token: letters, digits and `_`, no `__`, not starting with a digit.
pub fn is_ros_token(s: &str) -> bool {
    !s.is_empty()
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !s.starts_with(|c: char| c.is_ascii_digit())
        && !s.contains("__")
}

/// The server robot programs connect to (seeds 003 and 000): TCP, newline-delimited JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProgramsSpec {
    #[serde(default = "default_address")]
    /// Where the server listens; another address serves other machines.
    pub address: String,
    /// 0 picks a free port.
    #[serde(default = "default_program_port")]
    pub port: u16,
    /// Real seconds a headless run waits for every program robot to be registered before step 0.
    #[serde(default = "default_wait_for_robots")]
    pub wait_for_robots: f32,
    /// Real seconds one step waits for a program's actions.
    #[serde(default = "default_step_timeout")]
    pub step_timeout: f32,
    #[serde(default)]
    /// What happens to a late program's robots this step.
    pub late: LatePolicy,
    /// The longest message content a program may send, bytes of JSON.
    #[serde(default = "default_max_message_bytes")]
    pub max_message_bytes: usize,
    /// The longest frame a program may send, bytes.
    #[serde(default = "default_max_frame_bytes")]
    pub max_frame_bytes: usize,
    /// Programs connected at once.
    #[serde(default = "default_max_connections")]
    pub max_connections: usize,
}

impl Default for ProgramsSpec {
    fn default() -> Self {
        Self {
            address: default_address(),
            port: default_program_port(),
            wait_for_robots: default_wait_for_robots(),
            step_timeout: default_step_timeout(),
            late: LatePolicy::Keep,
            max_message_bytes: default_max_message_bytes(),
            max_frame_bytes: default_max_frame_bytes(),
            max_connections: default_max_connections(),
        }
    }
}

/// The floor. With `boundary: true` four walls enclose it, named `wallDown` (y = 0), `wallUp`,
/// `wallLeft` (x = 0) and `wallRight`, as in the VirtualRobot room.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ArenaSpec {
    /// Metres along x, 0.001 to 100,000.
    pub width: f32,
    /// Metres along y, 0.001 to 100,000.
    pub height: f32,
    #[serde(default = "default_true")]
    /// Four walls enclose the floor.
    pub boundary: bool,
    #[serde(default = "default_wall_thickness")]
    /// Metres, of the boundary walls (outside the floor).
    pub wall_thickness: f32,
}

/// A straight wall from `from` to `to` (centre line), `thickness` wide.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WallSpec {
    /// Unique among all the scene's items.
    pub name: String,
    /// Metres (x, y): one end of its centre line.
    pub from: Vec2f,
    /// Metres (x, y): the other end.
    pub to: Vec2f,
    #[serde(default = "default_wall_thickness")]
    /// Metres.
    pub thickness: f32,
}

/// A box: a solid rectangle robots bump into; a pen released over it drops inside.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BoxSpec {
    /// Unique among all the scene's items.
    pub name: String,
    /// Metres (x, y).
    pub center: Vec2f,
    /// Metres (along its own x, along its own y).
    pub size: Vec2f,
    #[serde(default)]
    /// Degrees, counter-clockwise.
    pub angle: f32,
}

/// A pen lying on the floor: a small dynamic body robots can push or grip.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PenSpec {
    /// Unique among all the scene's items.
    pub name: String,
    /// Metres (x, y).
    pub pos: Vec2f,
    #[serde(default = "default_pen_radius")]
    /// Metres.
    pub radius: f32,
}

/// A den: a robot's refuge on the floor. It must lie near a wall: its centre within two den
/// radii of a wall surface.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DenSpec {
    /// Unique among all the scene's items.
    pub name: String,
    /// Metres (x, y); within two radii of a wall surface.
    pub pos: Vec2f,
    #[serde(default = "default_den_radius")]
    /// Metres.
    pub radius: f32,
}

/// A charging pad on the floor; a robot overlapping it charges at `rate` units per second.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StationSpec {
    /// Unique among all the scene's items.
    pub name: String,
    /// Metres (x, y).
    pub pos: Vec2f,
    #[serde(default = "default_station_radius")]
    /// Metres.
    pub radius: f32,
    #[serde(default = "default_station_rate")]
    /// Charge units per second to a robot on it.
    pub rate: f32,
}

/// A sonar at `pos` whose beam leaves along `axis` (degrees), `width` wide, up to `range`
/// metres or the first wall or box (with `through_walls`, through them to its range or the
/// arena's edge). It reports every robot whose centre enters the beam.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SonarSpec {
    /// Unique among all the scene's items.
    pub name: String,
    /// Metres (x, y); usually on a wall.
    pub pos: Vec2f,
    /// Direction of the beam, degrees.
    pub axis: f32,
    /// Metres across the beam.
    pub width: f32,
    #[serde(default)]
    /// Metres; up to the first wall or box (or the arena's edge) when absent.
    pub range: Option<f32>,
    /// The beam passes walls and boxes, as the VirtualRobot's sonars do.
    #[serde(default)]
    pub through_walls: bool,
}

/// A robot: a disc with a drive, a gripper, a battery and its sensors.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RobotSpec {
    /// Unique among all the scene's items.
    pub name: String,
    /// `(x, y, heading in degrees)`.
    pub pose: (f32, f32, f32),
    #[serde(default)]
    /// The name of its den (an explorer needs one).
    pub den: Option<String>,
    #[serde(default)]
    /// Its kind, a name in the scene's `kinds`: each field below that the robot does not set
    /// comes from the kind.
    pub kind: Option<String>,
    #[serde(default = "default_robot_radius")]
    /// Metres, of its disc.
    pub radius: f32,
    /// Maximum linear speed, m/s.
    #[serde(default = "default_max_speed")]
    pub max_speed: f32,
    /// Maximum turn rate, degrees per second.
    #[serde(default = "default_max_turn")]
    pub max_turn: f32,
    /// Its wheels: `Differential` (forward and turning) or `Holonomic` (sideways too).
    #[serde(default)]
    pub drive: DriveSpec,
    /// The registered sensors it carries, by name, in the order of its observation: `["pose",
    /// "range"]`. When absent, every built-in sensor (`range` when it has a `range_sensor`) and
    /// those a plugin registered for it.
    #[serde(default)]
    pub sensors: Option<Vec<String>>,
    #[serde(default)]
    /// Its battery.
    pub battery: BatterySpec,
    #[serde(default)]
    /// Its camera.
    pub camera: CameraSpec,
    #[serde(default)]
    /// Its range sensor (a 2D lidar), if it has one: `range_sensor: (rays: 16)`.
    pub range_sensor: Option<RangeSensorSpec>,
    /// How far in front of the body the gripper reaches for a pen, metres.
    #[serde(default = "default_grip_reach")]
    pub grip_reach: f32,
    #[serde(default)]
    /// What drives it.
    pub controller: ControllerSpec,
    #[serde(default)]
    /// Its radio's abilities and parameters.
    pub comms: RobotCommsSpec,
    /// A bot outside crsim at this UDP address (`"127.0.0.1:7001"`, for example `crsim bot`):
    /// the bot manager sends it the commands of its controller and takes its status packets as
    /// its pose and battery.
    #[serde(default)]
    pub outside: Option<String>,
}

/// How a robot's wheels move it.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub enum DriveSpec {
    /// Two driven wheels: forward and back up to `max_speed`, turning up to `max_turn`.
    #[default]
    Differential,
    /// Omni wheels, as seed 004's bots have: forward and back up to `max_speed`, sideways (to the
    /// left when positive) up to `max_lateral` m/s, and turning up to `max_turn`, each limited on
    /// its own.
    Holonomic {
        /// The sideways speed limit, m/s.
        max_lateral: f32,
    },
}

impl DriveSpec {
    /// The sideways speed limit, m/s: 0 for a differential drive.
    pub fn max_lateral(&self) -> f32 {
        match self {
            DriveSpec::Differential => 0.0,
            DriveSpec::Holonomic { max_lateral } => *max_lateral,
        }
    }
}

/// A kind of robot: what every robot of the kind is unless it says otherwise. The fields are a
/// robot's (see there), with the same defaults.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct KindSpec {
    #[serde(default = "default_robot_radius")]
    /// Metres, of its disc.
    pub radius: f32,
    /// Maximum linear speed, m/s.
    #[serde(default = "default_max_speed")]
    pub max_speed: f32,
    /// Maximum turn rate, degrees per second.
    #[serde(default = "default_max_turn")]
    pub max_turn: f32,
    /// Its wheels.
    #[serde(default)]
    pub drive: DriveSpec,
    /// The registered sensors it carries, by name, in the order of its observation.
    #[serde(default)]
    pub sensors: Option<Vec<String>>,
    #[serde(default)]
    /// Its battery.
    pub battery: BatterySpec,
    #[serde(default)]
    /// Its camera.
    pub camera: CameraSpec,
    #[serde(default)]
    /// Its range sensor, if it has one.
    pub range_sensor: Option<RangeSensorSpec>,
    /// How far in front of the body the gripper reaches for a pen, metres.
    #[serde(default = "default_grip_reach")]
    pub grip_reach: f32,
    #[serde(default)]
    /// What drives it.
    pub controller: ControllerSpec,
    #[serde(default)]
    /// Its radio's abilities and parameters.
    pub comms: RobotCommsSpec,
}

impl Default for KindSpec {
    fn default() -> Self {
        let r = RobotSpec::new("", 0.0, 0.0, 0.0);
        KindSpec {
            radius: r.radius,
            max_speed: r.max_speed,
            max_turn: r.max_turn,
            drive: r.drive,
            sensors: r.sensors,
            battery: r.battery,
            camera: r.camera,
            range_sensor: r.range_sensor,
            grip_reach: r.grip_reach,
            controller: r.controller,
            comms: r.comms,
        }
    }
}

impl KindSpec {
    /// The names of the fields a kind gives its robots (a robot's fields of the same names).
    pub const FIELDS: [&'static str; 11] = [
        "radius",
        "max_speed",
        "max_turn",
        "drive",
        "sensors",
        "battery",
        "camera",
        "range_sensor",
        "grip_reach",
        "controller",
        "comms",
    ];

    /// Gives `robot` every field of the kind but those `own(field)` says the robot set itself.
    pub fn apply(&self, robot: &mut RobotSpec, own: impl Fn(&str) -> bool) {
        let take = |field: &str| !own(field);
        if take("radius") {
            robot.radius = self.radius;
        }
        if take("max_speed") {
            robot.max_speed = self.max_speed;
        }
        if take("max_turn") {
            robot.max_turn = self.max_turn;
        }
        if take("drive") {
            robot.drive = self.drive;
        }
        if take("sensors") {
            robot.sensors.clone_from(&self.sensors);
        }
        if take("battery") {
            robot.battery = self.battery.clone();
        }
        if take("camera") {
            robot.camera = self.camera.clone();
        }
        if take("range_sensor") {
            robot.range_sensor.clone_from(&self.range_sensor);
        }
        if take("grip_reach") {
            robot.grip_reach = self.grip_reach;
        }
        if take("controller") {
            robot.controller = self.controller.clone();
        }
        if take("comms") {
            robot.comms = self.comms.clone();
        }
    }

    /// A robot of this kind and every field from it, for the checks a robot's fields get.
    pub fn robot(&self, name: &str) -> RobotSpec {
        let mut r = RobotSpec::new(name, 0.0, 0.0, 0.0);
        self.apply(&mut r, |_| false);
        r
    }
}

/// Battery: charge in abstract units; drain per second idle, per metre driven and per radian
/// turned.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BatterySpec {
    #[serde(default = "default_capacity")]
    /// Full charge, units.
    pub capacity: f32,
    /// Initial charge; the full capacity when absent.
    #[serde(default)]
    pub initial: Option<f32>,
    #[serde(default = "default_idle_drain")]
    /// Units per second, always.
    pub idle_drain: f32,
    #[serde(default = "default_move_drain")]
    /// Units per metre driven.
    pub move_drain: f32,
    #[serde(default = "default_turn_drain")]
    /// Units per radian turned.
    pub turn_drain: f32,
}

/// Camera: a cone of `fov` degrees and `range` metres, refreshed every `period` steps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CameraSpec {
    #[serde(default = "default_fov")]
    /// Field of view, degrees (up to 360).
    pub fov: f32,
    #[serde(default = "default_camera_range")]
    /// Metres it sees.
    pub range: f32,
    #[serde(default = "default_period")]
    /// Steps between two pictures.
    pub period: u32,
}

/// Range sensor (a 2D lidar): `rays` beams spread evenly over `fov` degrees centred on the
/// robot's heading, counter-clockwise from its right edge as ROS's `LaserScan` orders them (a
/// full 360° starts straight behind the robot). Each beam reads the distance to the first wall,
/// box, pen or robot it meets, or `range` when it meets none within `range` metres. Refreshed
/// every `period` steps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RangeSensorSpec {
    #[serde(default = "default_rays")]
    /// Beams, 1 to 1,024.
    pub rays: u32,
    #[serde(default = "default_range_fov")]
    /// Field of view, degrees (up to 360).
    pub fov: f32,
    #[serde(default = "default_range_range")]
    /// Metres a beam reaches.
    pub range: f32,
    #[serde(default = "default_period")]
    /// Steps between two scans.
    pub period: u32,
}

/// The most beams a range sensor may have.
pub const MAX_RAYS: u32 = 1024;

impl Default for RangeSensorSpec {
    fn default() -> Self {
        Self { rays: default_rays(), fov: default_range_fov(), range: default_range_range(), period: default_period() }
    }
}

fn default_rays() -> u32 {
    16
}
fn default_range_fov() -> f32 {
    180.0
}
fn default_range_range() -> f32 {
    3.0
}

/// What drives a robot.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub enum ControllerSpec {
    /// Stands still.
    #[default]
    Idle,
    /// Constant command: linear speed (m/s) and turn rate (deg/s), and for a holonomic robot a
    /// sideways speed (m/s, to the left), clamped to the maxima.
    Drive {
        linear: f32,
        angular: f32,
        #[serde(default)]
        lateral: f32,
    },
    /// Wanders: drives forward at `speed` × max speed, turns away after a bump and changes
    /// heading at random (seeded) every few seconds.
    Wander {
        #[serde(default = "default_wander_speed")]
        speed: f32,
    },
    /// Driven from outside crsim with command packets over UDP on `port` (0 picks a free one).
    External { port: u16 },
    /// The cautious explorer of seed 002: maps the room from its den in robot units and runs
    /// home by the reversed path on every collision (and, with `sonar`, on every sonar alarm).
    Explorer {
        #[serde(default)]
        strategy: StrategySpec,
        #[serde(default)]
        sonar: bool,
    },
    /// Driven by outside clients in the VirtualRobot (WEnv) protocol: HTTP `POST /api/move` on
    /// port `http` and WebSocket on port `ws` (0 picks a free port), in the `protocol` of 2023
    /// (default), 2022 or 2021.
    Remote {
        #[serde(default = "default_http_port")]
        http: u16,
        #[serde(default = "default_ws_port")]
        ws: u16,
        #[serde(default)]
        protocol: Dialect,
    },
    /// Driven by a program outside crsim over the environment protocol, in lock-step with the
    /// simulation (see `programs` in the scene for the server).
    Program {},
    /// The behaviour network of seed 001: collects pens into boxes and recharges when low.
    Network {
        /// Steps a subject stays in the network after its object was last seen.
        #[serde(default = "default_forget_after")]
        forget_after: u32,
        /// Battery level (0..1) at which the Charging task takes over.
        #[serde(default = "default_low_power")]
        low_power: f32,
        /// Battery level at which the robot leaves the station.
        #[serde(default = "default_full_power")]
        full_power: f32,
    },
}

impl ControllerSpec {
    /// A network controller with the default parameters.
    pub fn network() -> Self {
        ControllerSpec::Network {
            forget_after: default_forget_after(),
            low_power: default_low_power(),
            full_power: default_full_power(),
        }
    }
}

/// Which year's server crsim imitates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub enum Dialect {
    /// VR21: `endmove` strings after the full time also on collision (`"false"`), WebSocket moves
    /// run like HTTP moves and report their end, collision events `{"collision":true,…}`.
    Vr2021,
    /// VR22: `endmove` booleans; a collision answers the HTTP request at once with
    /// `{"collision":M,"target":T}`.
    Vr2022,
    /// VR23: `endmove` strings; collisions reported at impact and the failed end after the full
    /// time; `-collision` / `-interrupted` suffixes.
    #[default]
    Vr2023,
}

impl std::str::FromStr for Dialect {
    type Err = String;

    /// `2021`, `2022`, `2023` (or `vr2021`, `Vr2022`, …).
    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().trim_start_matches("vr") {
            "2021" | "21" => Ok(Dialect::Vr2021),
            "2022" | "22" => Ok(Dialect::Vr2022),
            "2023" | "23" => Ok(Dialect::Vr2023),
            _ => Err(format!("unknown protocol {s:?}: use 2021, 2022 or 2023")),
        }
    }
}

/// How an explorer picks where to go next.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub enum StrategySpec {
    /// Rings of growing distance from the den, unexplored cells first.
    #[default]
    Rings,
    /// A seeded random walk, for comparison.
    Random,
}

/// A robot's communication abilities and parameters (seed 000).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RobotCommsSpec {
    #[serde(default = "default_true")]
    /// It may send and receive broadcasts.
    pub broadcast: bool,
    #[serde(default = "default_true")]
    /// It may send and receive messages to one robot.
    pub point_to_point: bool,
    #[serde(default = "default_true")]
    /// It receives at all.
    pub incoming: bool,
    #[serde(default = "default_true")]
    /// It sends at all.
    pub outgoing: bool,
    /// Maximum sending range, metres; unlimited when absent.
    #[serde(default)]
    pub range: Option<f32>,
    /// Steps added to the system delay for this robot's messages.
    #[serde(default)]
    pub delay: u32,
    #[serde(default = "default_probability")]
    /// Chance each of its messages is delivered, 0 to 1.
    pub probability: f32,
}

/// Overrides for messages from one robot to another; absent fields leave the other levels in
/// charge.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PairSpec {
    /// The sending robot.
    pub from: String,
    /// The receiving robot.
    pub to: String,
    #[serde(default)]
    /// The pair's link; off, nothing goes from `from` to `to`.
    pub link: Option<bool>,
    #[serde(default)]
    /// Metres, narrowing the others'.
    pub range: Option<f32>,
    #[serde(default)]
    /// Steps, replacing the system's and the sender's.
    pub delay: Option<u32>,
    #[serde(default)]
    /// Chance of delivery, replacing the others'.
    pub probability: Option<f32>,
}

/// System-level communication parameters (seed 000). `range: None` is unlimited; `delay` is
/// in steps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CommsSpec {
    #[serde(default = "default_true")]
    /// The system link: off, nothing is delivered.
    pub link: bool,
    #[serde(default)]
    /// Metres a message reaches; unlimited when absent.
    pub range: Option<f32>,
    #[serde(default)]
    /// Steps a message takes to arrive.
    pub delay: u32,
    #[serde(default = "default_probability")]
    /// Chance each message is delivered, 0 to 1.
    pub probability: f32,
    /// Messages a robot's queue holds; more are dropped (and counted).
    #[serde(default = "default_inbox_capacity")]
    pub inbox_capacity: usize,
    /// Sender → receiver overrides.
    #[serde(default)]
    pub pairs: Vec<PairSpec>,
}

impl Default for CommsSpec {
    fn default() -> Self {
        Self {
            link: true,
            range: None,
            delay: 0,
            probability: 1.0,
            inbox_capacity: default_inbox_capacity(),
            pairs: vec![],
        }
    }
}

impl Default for RobotCommsSpec {
    fn default() -> Self {
        Self {
            broadcast: true,
            point_to_point: true,
            incoming: true,
            outgoing: true,
            range: None,
            delay: 0,
            probability: 1.0,
        }
    }
}

impl Default for BatterySpec {
    fn default() -> Self {
        Self {
            capacity: default_capacity(),
            initial: None,
            idle_drain: default_idle_drain(),
            move_drain: default_move_drain(),
            turn_drain: default_turn_drain(),
        }
    }
}

impl Default for CameraSpec {
    fn default() -> Self {
        Self { fov: default_fov(), range: default_camera_range(), period: default_period() }
    }
}

impl RobotSpec {
    /// A robot with every optional field at its default.
    pub fn new(name: impl Into<String>, x: f32, y: f32, heading_deg: f32) -> Self {
        Self {
            name: name.into(),
            pose: (x, y, heading_deg),
            den: None,
            kind: None,
            radius: default_robot_radius(),
            max_speed: default_max_speed(),
            max_turn: default_max_turn(),
            drive: DriveSpec::Differential,
            sensors: None,
            battery: BatterySpec::default(),
            camera: CameraSpec::default(),
            range_sensor: None,
            grip_reach: default_grip_reach(),
            controller: ControllerSpec::Idle,
            comms: RobotCommsSpec::default(),
            outside: None,
        }
    }
}

impl SceneFile {
    /// An empty scene with the given arena and defaults everywhere else.
    pub fn empty(name: impl Into<String>, width: f32, height: f32) -> Self {
        Self {
            name: name.into(),
            seed: default_seed(),
            dt: default_dt(),
            substeps: default_substeps(),
            physics: PhysicsMode::default(),
            arena: ArenaSpec { width, height, boundary: true, wall_thickness: default_wall_thickness() },
            walls: vec![],
            boxes: vec![],
            pens: vec![],
            dens: vec![],
            stations: vec![],
            sonars: vec![],
            kinds: Default::default(),
            robots: vec![],
            comms: CommsSpec::default(),
            botlink: BotlinkSpec::default(),
            programs: ProgramsSpec::default(),
            ros2: Ros2Spec::default(),
            network: None,
            network_structure: None,
        }
    }
}

fn default_seed() -> u64 {
    1
}
fn default_dt() -> f64 {
    0.02
}
fn default_substeps() -> u32 {
    1
}
fn default_true() -> bool {
    true
}
fn default_wall_thickness() -> f32 {
    0.1
}
fn default_pen_radius() -> f32 {
    0.03
}
fn default_den_radius() -> f32 {
    0.2
}
fn default_station_radius() -> f32 {
    0.25
}
fn default_station_rate() -> f32 {
    10.0
}
fn default_robot_radius() -> f32 {
    0.1
}
fn default_max_speed() -> f32 {
    0.4
}
fn default_max_turn() -> f32 {
    180.0
}
fn default_grip_reach() -> f32 {
    0.08
}
fn default_capacity() -> f32 {
    100.0
}
fn default_idle_drain() -> f32 {
    0.02
}
fn default_move_drain() -> f32 {
    0.5
}
fn default_turn_drain() -> f32 {
    0.05
}
fn default_fov() -> f32 {
    90.0
}
fn default_camera_range() -> f32 {
    1.5
}
fn default_period() -> u32 {
    1
}
fn default_http_port() -> u16 {
    8090
}
fn default_ws_port() -> u16 {
    8091
}
fn default_forget_after() -> u32 {
    25
}
fn default_low_power() -> f32 {
    0.3
}
fn default_full_power() -> f32 {
    0.95
}
fn default_wander_speed() -> f32 {
    0.8
}
fn default_inbox_capacity() -> usize {
    64
}
fn default_ros2_rate() -> f32 {
    50.0
}
fn default_ros2_scan_rate() -> f32 {
    10.0
}
fn default_ros2_battery_rate() -> f32 {
    1.0
}
fn default_ros2_frame() -> String {
    "map".into()
}
fn default_cmd_vel_timeout() -> f32 {
    0.5
}
fn default_address() -> String {
    "127.0.0.1".to_string()
}
fn default_program_port() -> u16 {
    9400
}
fn default_wait_for_robots() -> f32 {
    60.0
}
fn default_step_timeout() -> f32 {
    5.0
}
fn default_max_message_bytes() -> usize {
    4096
}
fn default_max_frame_bytes() -> usize {
    8 * 1024 * 1024
}
fn default_max_connections() -> usize {
    64
}
fn default_watchdog() -> f32 {
    2.0
}
fn default_connect_timeout() -> f32 {
    5.0
}
fn default_status_period() -> f32 {
    0.5
}
fn default_reply_timeout() -> f32 {
    0.05
}
fn default_probability() -> f32 {
    1.0
}
