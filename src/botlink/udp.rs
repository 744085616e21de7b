//! The UDP interface: an outside controller drives robots of controller kind `External` the way
//! the original central software drove its bots — unicast packets to one robot's port, and
//! "update all" packets to the scene's multicast port with move, grip and lamp commands for up
//! to five robots in fixed slots. Robots answer every valid packet with a status packet (pose,
//! battery, bump, held pen); invalid datagrams are counted and answered with an error packet,
//! and the simulation goes on.
//!
//! Sockets are non-blocking and polled once per step in the think stage: no threads, and a
//! scene reload closes them with the robots. In a headless run the robots step in lock-step
//! with their controllers ([`UdpLockstep`]).

use std::io::ErrorKind;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsFd;
use std::time::{Duration, Instant};

use bevy::prelude::*;

use super::packet::{Command, EMPTY_SLOT, ErrorCode, Status, decode, encode};
use super::transport::bind;
use super::{BotLink, EmergencyStop, LinkState, LinkStats, Outbox, set_state, stop_drive};
use crate::robot::{Battery, BumpSensor, Gripper, Robot, pose};
use crate::scene::ActiveScene;
use crate::scene::schema::LatePolicy;
use crate::sim::{RobotOrder, SimTime, StepGate};

/// A robot's own UDP port.
#[derive(Component, Debug)]
pub struct UdpEndpoint {
    socket: Option<UdpSocket>,
    /// The address actually bound (port 0 in the scene picks a free one).
    pub local: Option<SocketAddr>,
    /// Why the port could not be bound, naming the robot and the port.
    pub error: Option<String>,
    /// The controller that last sent a packet.
    pub peer: Option<SocketAddr>,
}

impl UdpEndpoint {
    /// Binds `address`:`port` for `robot`; a port that cannot be bound leaves the endpoint
    /// closed with the reason (its robot stays connecting).
    pub fn open(address: &str, port: u16, robot: &str) -> Self {
        match bind(address, port) {
            Ok((socket, local)) => {
                info!("robot {robot} listens on UDP {local}");
                Self { socket: Some(socket), local: Some(local), error: None, peer: None }
            }
            Err(e) => {
                let error = format!("robot \"{robot}\": {e}");
                warn!("{error}");
                Self { socket: None, local: None, error: Some(error), peer: None }
            }
        }
    }
}

/// The scene's "update all" port.
#[derive(Resource, Debug, Default)]
pub struct UpdateAllSocket {
    socket: Option<UdpSocket>,
    pub local: Option<SocketAddr>,
    /// Why the port could not be bound.
    pub error: Option<String>,
}

/// Opens the scene's update-all port (robots' own ports are opened as they are added) and starts
/// the counters afresh, with any port that could not be bound as the last problem.
pub(super) fn open_update_all(
    mut commands: Commands,
    active: Res<ActiveScene>,
    endpoints: Query<&UdpEndpoint>,
    mut stats: ResMut<LinkStats>,
) {
    let mut problems: Vec<String> = endpoints.iter().filter_map(|e| e.error.clone()).collect();
    let mut update_all = UpdateAllSocket::default();
    if let Some(port) = active.scene.botlink.update_all_port {
        let address = active.scene.botlink.address.as_str();
        match bind(address, port) {
            Ok((socket, local)) => {
                info!("update-all UDP port {local}");
                update_all = UpdateAllSocket { socket: Some(socket), local: Some(local), error: None };
            }
            Err(e) => {
                warn!("{e}");
                update_all.error = Some(e.clone());
                problems.push(e);
            }
        }
    }
    commands.insert_resource(update_all);
    *stats = LinkStats::default();
    if !problems.is_empty() {
        stats.last_error = Some(problems.join("; "));
    }
}

type RobotItem<'a> = (
    Entity,
    &'a Robot,
    &'a Transform,
    &'a Battery,
    &'a BumpSensor,
    &'a Gripper,
    Option<&'a mut UdpEndpoint>,
    &'a mut BotLink,
    &'a mut Outbox,
);

pub(super) fn status_of(
    robot: &Robot,
    t: &Transform,
    battery: &Battery,
    bump: &BumpSensor,
    gripper: &Gripper,
    names: &Query<&Name>,
) -> Command {
    let (p, heading) = pose(t);
    Command::Status(Status {
        bot: robot.index as u16,
        x: p.x,
        y: p.y,
        heading,
        battery: battery.level(),
        bump: bump.is_touching(),
        held: gripper.holding.and_then(|e| names.get(e).ok()).map(|n| n.to_string()),
    })
}

fn send(socket: &UdpSocket, to: SocketAddr, command: &Command, stats: &mut LinkStats) {
    if let Command::Error { .. } = command {
        stats.errors_sent += 1;
    }
    if let Err(e) = socket.send_to(&encode(command), to) {
        stats.last_error = Some(format!("cannot answer {to}: {e}"));
    }
}

fn error(code: ErrorCode, reason: impl Into<String>) -> Command {
    Command::Error { code, reason: reason.into() }
}

/// A packet arrived from the robot's controller: connecting becomes online, offline becomes
/// connecting then online (never directly), and the watchdog restarts.
fn arrived(commands: &mut Commands, bot: Entity, link: &mut BotLink, now: f64) {
    link.last_packet_s = now;
    if link.state == LinkState::Offline {
        set_state(commands, bot, link, LinkState::Connecting);
    }
    set_state(commands, bot, link, LinkState::Online);
}

/// Whether robots driven over UDP step in lock-step with their controllers, as program robots
/// do (seed 003's waitForRobots and double-stepped get): `crsim run` without `--realtime` sets
/// it, so a headless run of them is reproducible. Step 0 waits (up to the scene's
/// `programs.wait_for_robots`) until every external robot's controller has sent a packet; then
/// every step takes exactly one packet of each robot whose controller is online, waiting up to
/// `programs.step_timeout` for it, and a late controller's robot is treated as `programs.late`
/// says (keep its last command, stop, or drop the link to offline and stop). Packets beyond one
/// a step wait in the socket for the steps after. In the app and with `--realtime`, every
/// packet that has come is taken each step.
#[derive(Resource, Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct UdpLockstep(pub bool);

/// What one datagram did.
enum Taken {
    /// A valid packet from the controller: the robot's answer for this step.
    Answer,
    /// Malformed or refused: answered with an error, not an answer.
    Refused,
}

/// Takes one datagram from a robot's own port and answers it.
fn take_on_port(
    commands: &mut Commands,
    item: &mut RobotItemMut,
    bytes: &[u8],
    from: SocketAddr,
    now: f64,
    estop: bool,
    stats: &mut LinkStats,
    names: &Query<&Name>,
) -> (Taken, Command) {
    let (bot, robot, t, battery, bump, gripper, endpoint, link, outbox) = item;
    if let Some(e) = endpoint.as_deref_mut() {
        e.peer = Some(from);
    }
    let status = |robot: &Robot| status_of(robot, t, battery, bump, gripper, names);
    match decode(bytes) {
        Err(e) => {
            stats.malformed += 1;
            stats.last_error = Some(format!("{from} -> {}: {e}", link.announced_name));
            (Taken::Refused, error(e.code(), e.to_string()))
        }
        Ok(Command::Disconnect) => {
            link.last_packet_s = now;
            set_state(commands, *bot, link, LinkState::Offline);
            stop_drive(outbox);
            (Taken::Answer, status(robot))
        }
        Ok(cmd @ (Command::Move { .. } | Command::Grip { .. } | Command::Lamp { .. })) => {
            arrived(commands, *bot, link, now);
            if estop {
                stats.refused += 1;
                (Taken::Answer, error(ErrorCode::NotAllowed, "emergency stop engaged"))
            } else {
                outbox.commands.push(cmd);
                (Taken::Answer, status(robot))
            }
        }
        Ok(Command::Ping | Command::StatusRequest) => {
            arrived(commands, *bot, link, now);
            (Taken::Answer, status(robot))
        }
        Ok(other) => {
            stats.refused += 1;
            (
                Taken::Refused,
                error(ErrorCode::NotAllowed, format!("{} is not accepted on a robot's port", other.name())),
            )
        }
    }
}

/// One robot as the query hands it out for changing.
type RobotItemMut<'w> = bevy::ecs::query::QueryItem<'w, 'w, RobotItem<'static>>;

/// Reads a robot's own port: every datagram waiting, or in lock-step up to the first valid
/// packet. True when it took a valid packet.
fn read_port(
    commands: &mut Commands,
    item: &mut RobotItemMut,
    one: bool,
    now: f64,
    estop: bool,
    stats: &mut LinkStats,
    names: &Query<&Name>,
    buf: &mut [u8],
) -> bool {
    let mut answered = false;
    loop {
        let Some(socket) = item.6.as_ref().and_then(|e| e.socket.as_ref()) else { return answered };
        let (n, from) = match socket.recv_from(buf) {
            Ok(x) => x,
            Err(e) if e.kind() == ErrorKind::WouldBlock => return answered,
            Err(e) => {
                stats.last_error = Some(format!("UDP {}: {e}", item.7.announced_name));
                return answered;
            }
        };
        stats.packets_received += 1;
        let (taken, reply) = take_on_port(commands, item, &buf[..n], from, now, estop, stats, names);
        if let Some(socket) = item.6.as_ref().and_then(|e| e.socket.as_ref()) {
            send(socket, from, &reply, stats);
        }
        if matches!(taken, Taken::Answer) {
            answered = true;
            if one {
                return true;
            }
        }
    }
}

/// Reads one datagram from the update-all port and carries out its slots; the robots it gave
/// commands to, or `None` when nothing was waiting.
fn read_update_all(
    commands: &mut Commands,
    socket: &UdpSocket,
    robots: &mut Query<RobotItem>,
    order: &RobotOrder,
    now: f64,
    estop: bool,
    stats: &mut LinkStats,
    names: &Query<&Name>,
    buf: &mut [u8],
) -> Option<Vec<Entity>> {
    let (n, from) = match socket.recv_from(buf) {
        Ok(x) => x,
        Err(e) if e.kind() == ErrorKind::WouldBlock => return None,
        Err(e) => {
            stats.last_error = Some(format!("update-all UDP: {e}"));
            return None;
        }
    };
    stats.packets_received += 1;
    let slots = match decode(&buf[..n]) {
        Ok(Command::UpdateAll(slots)) => slots,
        Ok(other) => {
            stats.refused += 1;
            let reply =
                error(ErrorCode::NotAllowed, format!("{} is not accepted on the update-all port", other.name()));
            send(socket, from, &reply, stats);
            return Some(Vec::new());
        }
        Err(e) => {
            stats.malformed += 1;
            stats.last_error = Some(format!("{from} -> update-all: {e}"));
            send(socket, from, &error(e.code(), e.to_string()), stats);
            return Some(Vec::new());
        }
    };
    let mut driven = Vec::new();
    for (i, slot) in slots.iter().enumerate().filter(|(_, s)| s.bot != EMPTY_SLOT) {
        let target = order.0.get(usize::from(slot.bot)).copied();
        let item = target.and_then(|e| robots.get_mut(e).ok()).filter(|item| item.7.external);
        let Some((bot, robot, t, battery, bump, gripper, _, mut link, mut outbox)) = item else {
            stats.refused += 1;
            let reply = error(ErrorCode::UnknownBot, format!("slot {i}: no external robot with index {}", slot.bot));
            send(socket, from, &reply, stats);
            continue;
        };
        arrived(commands, bot, &mut link, now);
        let reply = if estop {
            stats.refused += 1;
            error(ErrorCode::NotAllowed, format!("slot {i}: emergency stop engaged"))
        } else {
            outbox.commands.push(Command::Move { linear: slot.linear, angular: slot.angular });
            outbox.commands.push(Command::Grip { close: slot.grip });
            outbox.commands.push(Command::Lamp { on: slot.lamp });
            status_of(robot, t, battery, bump, gripper, names)
        };
        driven.push(bot);
        send(socket, from, &reply, stats);
    }
    Some(driven)
}

/// Whether a world has anything to poll: a robot's UDP endpoint or the update-all socket.
pub(super) fn in_use(world: &mut World) -> bool {
    world.resource::<UpdateAllSocket>().socket.is_some() || crate::sim::any_with::<UdpEndpoint>(world)
}

/// Polls every socket once per step; in lock-step, takes one packet of each robot and waits for
/// those of online controllers (see [`UdpLockstep`]).
pub fn receive(
    mut commands: Commands,
    time: Res<SimTime>,
    estop: Res<EmergencyStop>,
    lockstep: Res<UdpLockstep>,
    active: Res<ActiveScene>,
    mut stats: ResMut<LinkStats>,
    update_all: Res<UpdateAllSocket>,
    order: Res<RobotOrder>,
    mut robots: Query<RobotItem>,
    endpoints: Query<(), With<UdpEndpoint>>,
    names: Query<&Name>,
) {
    // Nothing to poll (every robot driven inside the process): not a pass over every robot.
    if endpoints.is_empty() && update_all.socket.is_none() {
        return;
    }
    let now = time.seconds();
    let (lock, estop) = (lockstep.0, estop.engaged);
    let mut buf = [0u8; 2048];
    // In lock-step: the robots whose controllers are online must each answer this step.
    let awaited: Vec<Entity> = if lock {
        robots
            .iter()
            .filter(|r| r.7.external && r.7.state == LinkState::Online && r.6.is_some_and(|e| e.socket.is_some()))
            .map(|r| r.0)
            .collect()
    } else {
        Vec::new()
    };
    let settings = &active.scene.programs;
    let deadline = Instant::now() + Duration::from_secs_f32(settings.step_timeout);
    // A set: with many external robots a list's lookups would make each pass quadratic.
    let mut answered: std::collections::HashSet<Entity> = std::collections::HashSet::new();
    loop {
        for mut item in &mut robots {
            if item.6.is_none() || (lock && answered.contains(&item.0)) {
                continue;
            }
            if read_port(&mut commands, &mut item, lock, now, estop, &mut stats, &names, &mut buf) && lock {
                answered.insert(item.0);
            }
        }
        if let Some(socket) = update_all.socket.as_ref() {
            // Free-running: all that waits; in lock-step, one datagram a pass while a robot is
            // still to answer.
            while !lock || awaited.iter().any(|e| !answered.contains(e)) {
                let Some(driven) = read_update_all(
                    &mut commands,
                    socket,
                    &mut robots,
                    &order,
                    now,
                    estop,
                    &mut stats,
                    &names,
                    &mut buf,
                ) else {
                    break;
                };
                answered.extend(driven);
                if lock {
                    break;
                }
            }
        }
        let missing: Vec<Entity> = awaited.iter().copied().filter(|e| !answered.contains(e)).collect();
        if !lock || missing.is_empty() || Instant::now() >= deadline || crate::sim::stop::requested() {
            late(&mut commands, &mut robots, &missing, settings.late, &mut stats);
            return;
        }
        let mut fds: Vec<std::os::fd::BorrowedFd> = missing
            .iter()
            .filter_map(|e| robots.get(*e).ok())
            .filter_map(|r| r.6.and_then(|ep| ep.socket.as_ref()).map(|s| s.as_fd()))
            .collect();
        fds.extend(update_all.socket.as_ref().map(|s| s.as_fd()));
        wait_readable(&fds, deadline.min(Instant::now() + Duration::from_millis(50)));
    }
}

/// Robots whose controllers did not answer a lock-step in time, as `programs.late` says.
fn late(
    commands: &mut Commands,
    robots: &mut Query<RobotItem>,
    missing: &[Entity],
    policy: LatePolicy,
    stats: &mut LinkStats,
) {
    for &e in missing {
        let Ok((bot, .., mut link, mut outbox)) = robots.get_mut(e) else { continue };
        stats.late += 1;
        match policy {
            LatePolicy::Keep => {}
            LatePolicy::Stop => stop_drive(&mut outbox),
            LatePolicy::Drop => {
                set_state(commands, bot, &mut link, LinkState::Offline);
                stop_drive(&mut outbox);
            }
        }
    }
}

/// `poll(2)` until one of `fds` is readable or `until`.
fn wait_readable(fds: &[std::os::fd::BorrowedFd], until: Instant) {
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    let left = until.saturating_duration_since(Instant::now());
    let ms = left.as_micros().div_ceil(1000).min(i32::MAX as u128) as i32;
    let mut polled: Vec<PollFd> = fds.iter().map(|fd| PollFd::new(*fd, PollFlags::POLLIN)).collect();
    let _ = poll(&mut polled, PollTimeout::try_from(ms).unwrap_or(PollTimeout::MAX));
}

/// Holds step 0 of a lock-step run until every external robot's controller has sent a packet
/// (one waiting on its own port, or a slot of the first waiting update-all packet).
pub(super) fn await_controllers(
    time: Res<SimTime>,
    lockstep: Res<UdpLockstep>,
    update_all: Res<UpdateAllSocket>,
    order: Res<RobotOrder>,
    robots: Query<(Entity, &Name, &UdpEndpoint, &BotLink)>,
    mut gate: ResMut<StepGate>,
) {
    let waiting: Vec<String> = if lockstep.0 && time.step == 0 {
        let mut buf = [0u8; 2048];
        let in_update_all: Vec<Entity> = match update_all.socket.as_ref().map(|s| s.peek_from(&mut buf)) {
            Some(Ok((n, _))) => match decode(&buf[..n]) {
                Ok(Command::UpdateAll(slots)) => {
                    slots.iter().filter_map(|s| order.0.get(usize::from(s.bot)).copied()).collect()
                }
                _ => Vec::new(),
            },
            _ => Vec::new(),
        };
        robots
            .iter()
            .filter(|(_, _, ep, link)| link.external && link.state != LinkState::Online && ep.socket.is_some())
            .filter(|(e, _, ep, _)| {
                let here = ep.socket.as_ref().is_some_and(|s| s.peek_from(&mut [0u8; 1]).is_ok());
                !here && !in_update_all.contains(e)
            })
            .map(|(_, name, _, _)| name.to_string())
            .collect()
    } else {
        Vec::new()
    };
    if gate.outside != waiting {
        gate.outside = waiting;
    }
}
