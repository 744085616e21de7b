//! The bot manager (seed 004): every command that reaches a robot travels as a packet — encoded
//! by the transmitter, rebuilt by the command factory on the robot's side — and every robot has
//! a connection in one of three states watched by a watchdog. Robots of controller kind
//! `External` are driven from outside over UDP (see [`udp`]). The bot manager attaches a robot's
//! link (and, for an external robot, its UDP port) when the robot is added.
//!
//! Link states: offline → connecting → online. A robot driven from inside crsim is online while
//! its controller runs. An external robot starts connecting; its controller's first packet
//! makes it online; no packet for the watchdog period drops it back to connecting (never
//! straight to offline) and stops it; an explicit disconnect makes it offline.

use std::collections::VecDeque;

use bevy::prelude::*;

pub mod packet;
pub mod udp;

use packet::{Command, decode, encode};

use crate::robot::{DriveCommand, GripCommand, LampState, Robot};
use crate::scene::schema::ControllerSpec;
use crate::scene::{ActiveScene, SceneLoaded, SceneStatus};
use crate::sim::{ActSystems, LoadSystems, SimSystems, SimTime, ThinkSystems};

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

/// A command as it went out, for the inspector.
#[derive(Debug, Clone, PartialEq)]
pub struct SentCommand {
    pub step: u64,
    pub command: Command,
    pub bytes: usize,
}

/// How many sent commands each robot remembers.
pub const RECENT_COMMANDS: usize = 8;

/// A robot's connection.
#[derive(Component, Debug, Clone)]
pub struct BotLink {
    pub state: LinkState,
    /// Driven from outside crsim (over UDP) rather than by an internal controller.
    pub external: bool,
    /// Seconds of simulated time without a packet before an online external robot is dropped to
    /// connecting.
    pub watchdog: f32,
    /// Simulated time of the last packet from the robot's controller.
    pub last_packet_s: f64,
    /// The last commands transmitted to the robot, newest last.
    pub recent: VecDeque<SentCommand>,
    pub packets_sent: u64,
    /// The robot's name as last announced, to notice renames.
    pub announced_name: String,
}

impl BotLink {
    pub fn new(external: bool, watchdog: f32, name: &str) -> Self {
        Self {
            state: if external { LinkState::Connecting } else { LinkState::Online },
            external,
            watchdog,
            last_packet_s: 0.0,
            recent: VecDeque::with_capacity(RECENT_COMMANDS),
            packets_sent: 0,
            announced_name: name.to_string(),
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
    app.init_resource::<LinkStats>()
        .init_resource::<EmergencyStop>()
        .init_resource::<udp::UpdateAllSocket>()
        .add_observer(attach_link)
        .add_observer(announce_added)
        .add_observer(announce_removed)
        .add_systems(PreUpdate, udp::open_update_all.run_if(on_message::<SceneLoaded>).in_set(LoadSystems::React))
        .add_systems(
            FixedUpdate,
            (
                udp::receive.in_set(ThinkSystems::Receive),
                transmit.in_set(ActSystems::Transmit),
                (watchdog, announce_renamed).chain().in_set(SimSystems::Record),
            ),
        );
}

/// Every robot gets its link when it is added; an external robot also its UDP port.
fn attach_link(add: On<Add, Robot>, active: Res<ActiveScene>, robots: Query<(&Robot, &Name)>, mut commands: Commands) {
    let Ok((robot, name)) = robots.get(add.entity) else { return };
    let Some(spec) = active.scene.robots.get(robot.index as usize) else { return };
    let botlink = &active.scene.botlink;
    let external = matches!(spec.controller, ControllerSpec::External { .. });
    let mut entity = commands.entity(add.entity);
    entity.insert((Outbox::default(), BotLink::new(external, botlink.watchdog, name.as_str())));
    if let ControllerSpec::External { port } = spec.controller {
        entity.insert(udp::UdpEndpoint::open(&botlink.address, port, name.as_str()));
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

/// Transmits each robot's outbox: the encoder writes a packet, the command factory on the
/// robot's side rebuilds the command, and the robot's actuators take it.
fn transmit(
    time: Res<SimTime>,
    mut stats: ResMut<LinkStats>,
    mut robots: Query<(&mut Outbox, &mut BotLink, &mut DriveCommand, &mut GripCommand, &mut LampState)>,
) {
    for (mut outbox, mut link, mut drive, mut grip, mut lamp) in &mut robots {
        if outbox.commands.is_empty() {
            continue;
        }
        for command in outbox.commands.drain(..) {
            let bytes = encode(&command);
            stats.packets_sent += 1;
            link.packets_sent += 1;
            match decode(&bytes) {
                Ok(Command::Move { linear, angular }) => *drive = DriveCommand { linear, angular },
                Ok(Command::Grip { close }) => grip.close = close,
                Ok(Command::Lamp { on }) => lamp.on = on,
                Ok(_) => {}
                Err(e) => {
                    stats.malformed += 1;
                    stats.last_error = Some(format!("internal packet rejected: {e}"));
                }
            }
            if link.recent.len() == RECENT_COMMANDS {
                link.recent.pop_front();
            }
            link.recent.push_back(SentCommand { step: time.step, command, bytes: bytes.len() });
        }
    }
}

/// Drops silent external robots back to connecting and stops them.
fn watchdog(
    mut commands: Commands,
    time: Res<SimTime>,
    mut robots: Query<(Entity, &mut BotLink, &mut Outbox)>,
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
