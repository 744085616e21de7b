//! The bot manager (seed 004). Two sides live here:
//!
//! - **The manager's side** ([`manager`], `exchange`, [`transmitter`], [`transport`]): the
//!   commands of crsim's own controllers leave the skill system as packets — update-all rounds
//!   every 20 ms for the moving commands of connected bots, buffered unicast for the rest — and
//!   reach crsim's simulated bots inside the process or over UDP, and bots outside crsim (a
//!   scene's `outside` address, for example `crsim bot`) over UDP. Every managed bot has a link
//!   in one of three states, watched by the manager's watchdog; the panel connects and
//!   disconnects bots by hand.
//! - **A robot's end for outside controllers** ([`udp`]): robots of controller kind `External`
//!   are driven from outside over UDP, with their own watchdog.
//!
//! Link states: offline → connecting → online (the seed's disconnected, connecting, connected),
//! every change but offline → online. A simulated bot starts online; an outside bot and an
//! external robot start connecting. The bot manager attaches a robot's link (and the ports it
//! needs) when the robot is added.

use std::collections::VecDeque;
use std::net::SocketAddr;

use bevy::prelude::*;

mod exchange;
pub mod manager;
pub mod packet;
pub mod transmitter;
pub mod transport;
pub mod udp;

pub use manager::{BotManager, LinkAction, LinkCounters, LinkRequest};
use packet::{Command, EMPTY_SLOT, Status, UpdateSlot, decode, encode};
use transport::BotSocket;

use crate::robot::{DriveCommand, GripCommand, LampState, Robot};
use crate::scene::schema::{ControllerSpec, Transport};
use crate::scene::{ActiveScene, SceneLoaded, SceneStatus};
use crate::sim::{ActSystems, LoadSystems, PerEnv, RobotOrder, SimSystems, SimTime, ThinkSystems, add_report_section};

/// Emergency stop: while engaged every robot is stopped with its gripper open, and no skill or
/// command from any controller reaches the actuators.
#[derive(Resource, Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct EmergencyStop {
    pub engaged: bool,
}

/// Commands waiting to be transmitted to the robot this step.
#[derive(Component, Debug, Default)]
pub struct Outbox {
    pub commands: Vec<Command>,
}

/// A robot's connection state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LinkState {
    Offline,
    Connecting,
    Online,
}

impl LinkState {
    pub fn name(self) -> &'static str {
        match self {
            LinkState::Offline => "offline",
            LinkState::Connecting => "connecting",
            LinkState::Online => "online",
        }
    }

    /// The state machine of the original: every change but offline → online.
    pub fn can_become(self, next: LinkState) -> bool {
        self != next && !(self == LinkState::Offline && next == LinkState::Online)
    }
}

/// A command as it went out, for the inspector. Every bot keeps its last
/// [`RECENT_COMMANDS`], so it is kept in 32 bytes rather than a [`Command`]'s 64 plus: the
/// commands a manager sends a bot in place, the rare large ones boxed.
#[derive(Debug, Clone, PartialEq)]
pub struct SentCommand {
    pub step: u64,
    /// The packet's length.
    pub bytes: u32,
    command: KeptCommand,
}

impl SentCommand {
    pub fn new(step: u64, command: Command, bytes: usize) -> Self {
        Self { step, bytes: u32::try_from(bytes).unwrap_or(u32::MAX), command: KeptCommand::from(command) }
    }

    /// The command, as it was sent.
    pub fn command(&self) -> Command {
        match &self.command {
            KeptCommand::Ping => Command::Ping,
            KeptCommand::StatusRequest => Command::StatusRequest,
            KeptCommand::Disconnect => Command::Disconnect,
            KeptCommand::Lamp(on) => Command::Lamp { on: *on },
            KeptCommand::Grip(close) => Command::Grip { close: *close },
            KeptCommand::MotorParams(max_speed, max_turn) => {
                Command::MotorParams { max_speed: *max_speed, max_turn: *max_turn }
            }
            KeptCommand::Move(linear, angular) => Command::Move { linear: *linear, angular: *angular },
            KeptCommand::Other(command) => (**command).clone(),
        }
    }
}

/// A [`Command`] in 16 bytes: the small ones in place, the others boxed.
#[derive(Debug, Clone, PartialEq)]
enum KeptCommand {
    Ping,
    StatusRequest,
    Disconnect,
    Lamp(bool),
    Grip(bool),
    MotorParams(f32, f32),
    Move(f32, f32),
    Other(Box<Command>),
}

impl From<Command> for KeptCommand {
    fn from(command: Command) -> Self {
        match command {
            Command::Ping => KeptCommand::Ping,
            Command::StatusRequest => KeptCommand::StatusRequest,
            Command::Disconnect => KeptCommand::Disconnect,
            Command::Lamp { on } => KeptCommand::Lamp(on),
            Command::Grip { close } => KeptCommand::Grip(close),
            Command::MotorParams { max_speed, max_turn } => KeptCommand::MotorParams(max_speed, max_turn),
            Command::Move { linear, angular } => KeptCommand::Move(linear, angular),
            other @ (Command::Status(_) | Command::Error { .. } | Command::UpdateAll(_) | Command::MoveOmni { .. }) => {
                KeptCommand::Other(Box::new(other))
            }
        }
    }
}

/// How many sent commands each robot remembers.
pub const RECENT_COMMANDS: usize = 8;

/// A robot's connection: as the bot manager sees a bot it drives, or as an external robot sees
/// its outside controller.
///
/// Laid out in the order written (`repr(C)`): what the exchange's pass reads and writes for every
/// bot every step comes first, so that pass touches the first two cache lines of a link; aligned
/// to a cache line, so those are two lines of every link whatever the fields after them add up
/// to (a link 24 bytes longer once made the exchange a quarter slower at 10,000 robots: most
/// links then started mid-line, and the pass touched three).
#[derive(Component, Debug, Clone)]
#[repr(C, align(64))]
pub struct BotLink {
    pub state: LinkState,
    /// Driven by a crsim controller through the bot manager (every robot but external ones,
    /// and those beyond the 65,535 bot ids the packets address).
    pub managed: bool,
    /// Driven from outside crsim (over UDP) rather than by an internal controller.
    pub external: bool,
    /// An outside bot whose answers did not come within the reply timeout, until it answers.
    pub lagging: bool,
    /// A status arrived that the pose of an outside bot has not taken yet.
    pub fresh_status: bool,
    /// The robot's index in the scene: its bot id in packets.
    pub index: u32,
    /// Seconds of simulated time without a packet before an online link drops to connecting.
    pub watchdog: f32,
    /// Simulated time of the last packet from the other end.
    pub last_packet_s: f64,
    pub packets_sent: u64,
    /// The latest moving commands the controller gave (the multicast delegate's entry).
    pub command: UpdateSlot,
    /// An outside bot's address.
    pub outside: Option<SocketAddr>,
    /// The manager's counters for this bot (`sent.update_all` counts every round).
    pub counters: LinkCounters,
    /// The last commands transmitted to the robot, newest last.
    pub recent: VecDeque<SentCommand>,
    /// The robot's name as last announced, to notice renames.
    pub announced_name: String,
    /// Motor parameters saved for the bot, sent by unicast when it connects: m/s, rad/s.
    pub motor: (f32, f32),
    /// The bot's last status.
    pub last_status: Option<Status>,
    /// The last problem with this bot (a send that failed, a malformed answer).
    pub last_error: Option<String>,
    /// While the manager connects to the bot: the simulated time by which it must answer, or its
    /// link falls back to offline.
    pub connect_by_s: Option<f64>,
}

impl BotLink {
    /// Lists a command transmitted to the robot among its recent ones, for the inspector.
    pub fn remember(&mut self, step: u64, command: Command, bytes: usize) {
        self.packets_sent += 1;
        if self.recent.len() == RECENT_COMMANDS {
            self.recent.pop_front();
        }
        self.recent.push_back(SentCommand::new(step, command, bytes));
    }

    pub fn new(external: bool, watchdog: f32, name: &str) -> Self {
        Self {
            state: if external { LinkState::Connecting } else { LinkState::Online },
            index: 0,
            external,
            managed: false,
            outside: None,
            watchdog,
            last_packet_s: 0.0,
            recent: VecDeque::with_capacity(RECENT_COMMANDS),
            packets_sent: 0,
            announced_name: name.to_string(),
            command: UpdateSlot { bot: EMPTY_SLOT, linear: 0.0, angular: 0.0, lateral: 0.0, grip: false, lamp: false },
            motor: (0.0, 0.0),
            counters: LinkCounters::default(),
            last_status: None,
            fresh_status: false,
            last_error: None,
            lagging: false,
            connect_by_s: None,
        }
    }
}

/// Counters of the bot manager, never reset silently (a scene load starts them afresh).
#[derive(Resource, Debug, Default, Clone, PartialEq, Eq)]
pub struct LinkStats {
    /// Packets transmitted to robots.
    pub packets_sent: u64,
    /// Packets received from outside controllers.
    pub packets_received: u64,
    /// Received datagrams that were not valid packets, by reason.
    pub malformed: u64,
    /// Valid packets refused (wrong port, unknown bot, too many slots, emergency stop).
    pub refused: u64,
    /// Error packets sent back.
    pub errors_sent: u64,
    /// Lock-steps an external robot's controller did not answer in time.
    pub late: u64,
    /// The last problem, for the panel.
    pub last_error: Option<String>,
}

/// A robot's link changed state.
#[derive(Event, Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinkChanged {
    pub bot: Entity,
    pub from: LinkState,
    pub to: LinkState,
}

/// The bot manager has a new bot.
#[derive(Event, Debug, Clone, PartialEq, Eq)]
pub struct BotAdded {
    pub bot: Entity,
    pub name: String,
}

/// A bot left the bot manager.
#[derive(Event, Debug, Clone, PartialEq, Eq)]
pub struct BotRemoved {
    pub bot: Entity,
    pub name: String,
}

/// A bot's name changed.
#[derive(Event, Debug, Clone, PartialEq, Eq)]
pub struct BotRenamed {
    pub bot: Entity,
    pub old: String,
    pub new: String,
}

pub(super) fn plugin(app: &mut App) {
    add_report_section(app, report_section);
    app.init_resource::<LinkStats>()
        .init_resource::<EmergencyStop>()
        .init_resource::<udp::UpdateAllSocket>()
        .init_resource::<udp::UdpLockstep>()
        .add_observer(attach_link)
        .add_observer(announce_added)
        .add_observer(announce_removed)
        .insert_resource(PerEnv::<BotManager>::one())
        .init_resource::<transport::CentralSocket>()
        .add_message::<LinkRequest>()
        .add_systems(
            PreUpdate,
            (
                (udp::open_update_all, exchange::open).run_if(on_message::<SceneLoaded>).in_set(LoadSystems::React),
                // Before the program server's own word on the gate (both hold step 0).
                udp::await_controllers.in_set(LoadSystems::Rejoin),
            ),
        )
        .add_systems(
            FixedUpdate,
            (
                udp::receive.in_set(ThinkSystems::Receive),
                (exchange::exchange, exchange::apply_reports, transmit).chain().in_set(ActSystems::Transmit),
                (watchdog, announce_renamed).chain().in_set(SimSystems::Record),
            ),
        );
    // Polling UDP and its watchdog are for robots driven from outside over UDP: a world whose
    // robots are all driven inside the process (an environment's) drops them.
    crate::sim::add_optional_systems(app, FixedUpdate, udp::receive, udp::in_use);
    crate::sim::add_optional_systems(app, FixedUpdate, watchdog, crate::sim::any_with::<udp::UdpEndpoint>);
}

/// Every robot gets its link when it is added; an external robot also its UDP port.
fn attach_link(add: On<Add, Robot>, active: Res<ActiveScene>, robots: Query<(&Robot, &Name)>, mut commands: Commands) {
    let Ok((robot, name)) = robots.get(add.entity) else { return };
    let Some(spec) = active.scene.robots.get(robot.index as usize) else { return };
    let botlink = &active.scene.botlink;
    let external = matches!(spec.controller, ControllerSpec::External { .. });
    let mut link = BotLink::new(external, botlink.watchdog, name.as_str());
    link.index = robot.index;
    // Bot ids are 16 bits with one kept for "empty slot": robots beyond are driven directly.
    // A scene played by `crsim bot` has its robot driven by the emulator's own end instead.
    link.managed = !external && !botlink.emulated && robot.index < u32::from(EMPTY_SLOT);
    link.outside = spec.outside.as_deref().and_then(|a| a.parse().ok());
    link.motor = (robot.max_speed, robot.max_turn);
    if link.outside.is_some() {
        link.state = LinkState::Connecting;
        link.connect_by_s = Some(f64::from(botlink.connect_timeout));
    }
    let udp_bot = link.managed && link.outside.is_none() && botlink.transport == Transport::Udp;
    let mut entity = commands.entity(add.entity);
    entity.insert((Outbox::default(), link));
    if let ControllerSpec::External { port } = spec.controller {
        entity.insert(udp::UdpEndpoint::open(&botlink.address, port, name.as_str()));
    }
    if udp_bot {
        entity.insert(BotSocket::open(&botlink.address, name.as_str()));
    }
}

/// Moves a link to `to` if the state machine allows it, announcing the change.
pub fn set_state(commands: &mut Commands, bot: Entity, link: &mut BotLink, to: LinkState) {
    if link.state.can_become(to) {
        commands.trigger(LinkChanged { bot, from: link.state, to });
        link.state = to;
    }
}

fn announce_added(add: On<Add, BotLink>, names: Query<&Name>, mut commands: Commands) {
    let name = names.get(add.entity).map(|n| n.to_string()).unwrap_or_default();
    commands.trigger(BotAdded { bot: add.entity, name });
}

fn announce_removed(remove: On<Remove, BotLink>, links: Query<&BotLink>, mut commands: Commands) {
    let name = links.get(remove.entity).map(|l| l.announced_name.clone()).unwrap_or_default();
    commands.trigger(BotRemoved { bot: remove.entity, name });
}

fn announce_renamed(mut commands: Commands, mut bots: Query<(Entity, &Name, &mut BotLink), Changed<Name>>) {
    for (bot, name, mut link) in &mut bots {
        if link.announced_name != name.as_str() {
            let old = std::mem::replace(&mut link.announced_name, name.to_string());
            commands.trigger(BotRenamed { bot, old, new: name.to_string() });
        }
    }
}

/// Transmits the outbox of each robot the manager does not drive (external robots, whose
/// commands came from outside, and robots beyond the bot ids): the encoder writes a packet, the
/// command factory on the robot's side rebuilds the command, and the robot's actuators take it.
fn transmit(
    time: Res<SimTime>,
    mut stats: ResMut<LinkStats>,
    mut robots: Query<(&mut Robot, &mut Outbox, &mut BotLink, &mut DriveCommand, &mut GripCommand, &mut LampState)>,
) {
    for (mut robot, mut outbox, mut link, mut drive, mut grip, mut lamp) in &mut robots {
        if outbox.commands.is_empty() || link.managed {
            continue;
        }
        for command in outbox.commands.drain(..) {
            let bytes = encode(&command);
            stats.packets_sent += 1;
            match decode(&bytes) {
                Ok(c) => {
                    transport::obey(link.index, &c, &mut robot, &mut drive, &mut grip, &mut lamp);
                }
                Err(e) => {
                    stats.malformed += 1;
                    stats.last_error = Some(format!("internal packet rejected: {e}"));
                }
            }
            link.remember(time.step, command, bytes.len());
        }
    }
}

/// Drops silent external robots back to connecting and stops them.
fn watchdog(
    mut commands: Commands,
    time: Res<SimTime>,
    // External robots only: each has its UDP endpoint (reading every link's flag would cost a
    // cache miss per robot per step in a large swarm).
    mut robots: Query<(Entity, &mut BotLink, &mut Outbox), With<udp::UdpEndpoint>>,
    mut status: ResMut<SceneStatus>,
) {
    let now = time.seconds() + f64::from(time.dt);
    for (bot, mut link, mut outbox) in &mut robots {
        if link.external && link.state == LinkState::Online && now - link.last_packet_s > f64::from(link.watchdog) {
            set_state(&mut commands, bot, &mut link, LinkState::Connecting);
            stop_drive(&mut outbox);
            status.note =
                Some(format!("{}: no packet for {} s, link dropped to connecting", link.announced_name, link.watchdog));
        }
    }
}

/// Stops the robot's drive (the gripper keeps what it holds). The skill system ends the robot's
/// skills when it sees the link leave online.
pub fn stop_drive(outbox: &mut Outbox) {
    outbox.commands.push(Command::Move { linear: 0.0, angular: 0.0 });
}

/// The run metrics' `botlink` section: the manager's counters in total and per bot, the rounds,
/// the transport; and, when the scene has external robots, their end's counters.
fn report_section(world: &mut World) -> Option<(String, serde_json::Value)> {
    use serde_json::{Value, json};
    let order = world.resource::<RobotOrder>().0.clone();
    let mut bots = serde_json::Map::new();
    let mut external = false;
    for e in order {
        let Some(link) = world.get::<BotLink>(e) else { continue };
        external |= link.external;
        if !link.managed {
            continue;
        }
        let mut bot = serde_json::to_value(&link.counters).unwrap_or(Value::Null);
        if let Value::Object(fields) = &mut bot {
            fields.insert("state".into(), json!(link.state.name()));
            if let Some(a) = link.outside {
                fields.insert("outside".into(), json!(a.to_string()));
            }
        }
        bots.insert(link.announced_name.clone(), bot);
    }
    if bots.is_empty() && !external {
        return None;
    }
    let manager = world.resource::<PerEnv<BotManager>>().only();
    let central = world.resource::<transport::CentralSocket>();
    let spec = &world.resource::<ActiveScene>().scene.botlink;
    let mut section = json!({
        "transport": match spec.transport { Transport::InProcess => "in_process", Transport::Udp => "udp" },
        "multicast": central.group.map(|g| g.to_string()),
        "multicast_fallback": central.fallback,
        "rounds": manager.rounds,
        "total": manager.totals,
        "bots": bots,
    });
    if external {
        let s = world.resource::<LinkStats>();
        section["external"] = json!({
            "packets_sent": s.packets_sent,
            "packets_received": s.packets_received,
            "malformed": s.malformed,
            "refused": s.refused,
            "errors_sent": s.errors_sent,
            "late": s.late,
        });
    }
    Some(("botlink".into(), section))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};

    #[test]
    fn what_the_exchange_touches_every_step_is_in_a_links_first_two_cache_lines() {
        let end = |offset: usize, size: usize| offset + size;
        let touched = [
            end(offset_of!(BotLink, state), size_of::<LinkState>()),
            end(offset_of!(BotLink, managed), 1),
            end(offset_of!(BotLink, index), 4),
            end(offset_of!(BotLink, last_packet_s), 8),
            end(offset_of!(BotLink, packets_sent), 8),
            end(offset_of!(BotLink, command), size_of::<UpdateSlot>()),
            end(offset_of!(BotLink, outside), size_of::<Option<SocketAddr>>()),
            end(offset_of!(BotLink, counters.sent.update_all), size_of::<manager::Traffic>()),
        ];
        assert!(touched.iter().all(|&e| e <= 128), "{touched:?}");
        assert_eq!(std::mem::align_of::<BotLink>(), 64, "every link starts a cache line");
    }

    #[test]
    fn offline_never_becomes_online_directly() {
        use LinkState::*;
        assert!(!Offline.can_become(Online));
        assert!(Offline.can_become(Connecting));
        assert!(Connecting.can_become(Online));
        assert!(Online.can_become(Connecting));
        assert!(Online.can_become(Offline));
        assert!(Connecting.can_become(Offline));
        assert!(!Online.can_become(Online));
    }

    /// A bot's recent commands give back exactly what was sent, every kind of command, and
    /// each takes 32 bytes (eight of them per bot: 2.6 MB at 10,000 bots, not 6.4).
    #[test]
    fn a_remembered_command_is_the_command_sent_in_32_bytes() {
        use packet::{ErrorCode, Status, UPDATE_ALL_SLOTS, UpdateSlot};
        let mut slots = [UpdateSlot::EMPTY; UPDATE_ALL_SLOTS];
        slots[2] = UpdateSlot { bot: 7, linear: 0.25, angular: -1.5, lateral: 0.0, grip: true, lamp: false };
        let status =
            Status { bot: 3, x: 1.0, y: 2.0, heading: 0.5, battery: 0.75, bump: true, held: Some("p1".into()) };
        let sent = [
            Command::Ping,
            Command::StatusRequest,
            Command::Status(status),
            Command::Error { code: ErrorCode::UnknownBot, reason: "no bot 9".into() },
            Command::Disconnect,
            Command::Lamp { on: true },
            Command::Lamp { on: false },
            Command::Grip { close: true },
            Command::Grip { close: false },
            Command::MotorParams { max_speed: 0.4, max_turn: 2.0 },
            Command::Move { linear: -0.1, angular: f32::MIN_POSITIVE },
            Command::UpdateAll(slots),
        ];
        let mut link = BotLink::new(false, 1.0, "r0");
        for (i, command) in sent.iter().enumerate() {
            link.remember(100 + i as u64, command.clone(), 4 + i);
        }
        // The last eight, oldest first.
        let kept: Vec<(u64, Command, u32)> = link.recent.iter().map(|c| (c.step, c.command(), c.bytes)).collect();
        let expected: Vec<(u64, Command, u32)> =
            sent.iter().enumerate().skip(4).map(|(i, c)| (100 + i as u64, c.clone(), 4 + i as u32)).collect();
        assert_eq!(kept, expected);
        assert_eq!(link.packets_sent, 12);
        for command in &sent {
            assert_eq!(&SentCommand::new(0, command.clone(), 0).command(), command);
        }
        assert_eq!(std::mem::size_of::<SentCommand>(), 32);
    }
}
