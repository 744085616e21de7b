//! The UDP interface: an outside controller drives robots of controller kind `External` the way
//! the original central software drove its bots — unicast packets to one robot's port, and
//! "update all" packets to the scene's multicast port with move, grip and lamp commands for up
//! to five robots in fixed slots. Robots answer every valid packet with a status packet (pose,
//! battery, bump, held pen); invalid datagrams are counted and answered with an error packet,
//! and the simulation goes on.
//!
//! Sockets are non-blocking and polled once per step in the think stage: no threads, and a
//! scene reload closes them with the robots.

use std::io::ErrorKind;
use std::net::{SocketAddr, UdpSocket};

use bevy::prelude::*;

use super::packet::{Command, EMPTY_SLOT, ErrorCode, Status, decode, encode};
use super::transport::bind;
use super::{BotLink, EmergencyStop, LinkState, LinkStats, Outbox, set_state, stop_drive};
use crate::robot::{Battery, BumpSensor, Gripper, Robot, pose};
use crate::scene::ActiveScene;
use crate::sim::{RobotOrder, SimTime};

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

/// Polls every socket once per step.
pub(super) fn receive(
    mut commands: Commands,
    time: Res<SimTime>,
    estop: Res<EmergencyStop>,
    mut stats: ResMut<LinkStats>,
    update_all: Res<UpdateAllSocket>,
    order: Res<RobotOrder>,
    mut robots: Query<RobotItem>,
    names: Query<&Name>,
) {
    let now = time.seconds();
    let mut buf = [0u8; 2048];
    for (bot, robot, t, battery, bump, gripper, endpoint, mut link, mut outbox) in &mut robots {
        let Some(mut endpoint) = endpoint else { continue };
        let endpoint = &mut *endpoint;
        let Some(socket) = endpoint.socket.as_ref() else { continue };
        loop {
            let (n, from) = match socket.recv_from(&mut buf) {
                Ok(x) => x,
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) => {
                    stats.last_error = Some(format!("UDP {}: {e}", link.announced_name));
                    break;
                }
            };
            stats.packets_received += 1;
            endpoint.peer = Some(from);
            let reply = match decode(&buf[..n]) {
                Err(e) => {
                    stats.malformed += 1;
                    stats.last_error = Some(format!("{from} -> {}: {e}", link.announced_name));
                    error(e.code(), e.to_string())
                }
                Ok(Command::Disconnect) => {
                    link.last_packet_s = now;
                    set_state(&mut commands, bot, &mut link, LinkState::Offline);
                    stop_drive(&mut outbox);
                    status_of(robot, t, battery, bump, gripper, &names)
                }
                Ok(cmd @ (Command::Move { .. } | Command::Grip { .. } | Command::Lamp { .. })) => {
                    arrived(&mut commands, bot, &mut link, now);
                    if estop.engaged {
                        stats.refused += 1;
                        error(ErrorCode::NotAllowed, "emergency stop engaged")
                    } else {
                        outbox.commands.push(cmd);
                        status_of(robot, t, battery, bump, gripper, &names)
                    }
                }
                Ok(Command::Ping | Command::StatusRequest) => {
                    arrived(&mut commands, bot, &mut link, now);
                    status_of(robot, t, battery, bump, gripper, &names)
                }
                Ok(other) => {
                    stats.refused += 1;
                    error(ErrorCode::NotAllowed, format!("{} is not accepted on a robot's port", other.name()))
                }
            };
            send(socket, from, &reply, &mut stats);
        }
    }
    let Some(socket) = update_all.socket.as_ref() else { return };
    loop {
        let (n, from) = match socket.recv_from(&mut buf) {
            Ok(x) => x,
            Err(e) if e.kind() == ErrorKind::WouldBlock => break,
            Err(e) => {
                stats.last_error = Some(format!("update-all UDP: {e}"));
                break;
            }
        };
        stats.packets_received += 1;
        let slots = match decode(&buf[..n]) {
            Ok(Command::UpdateAll(slots)) => slots,
            Ok(other) => {
                stats.refused += 1;
                let reply =
                    error(ErrorCode::NotAllowed, format!("{} is not accepted on the update-all port", other.name()));
                send(socket, from, &reply, &mut stats);
                continue;
            }
            Err(e) => {
                stats.malformed += 1;
                stats.last_error = Some(format!("{from} -> update-all: {e}"));
                send(socket, from, &error(e.code(), e.to_string()), &mut stats);
                continue;
            }
        };
        for (i, slot) in slots.iter().enumerate().filter(|(_, s)| s.bot != EMPTY_SLOT) {
            let target = order.0.get(usize::from(slot.bot)).copied();
            let item = target.and_then(|e| robots.get_mut(e).ok()).filter(|item| item.7.external);
            let Some((bot, robot, t, battery, bump, gripper, _, mut link, mut outbox)) = item else {
                stats.refused += 1;
                let reply =
                    error(ErrorCode::UnknownBot, format!("slot {i}: no external robot with index {}", slot.bot));
                send(socket, from, &reply, &mut stats);
                continue;
            };
            arrived(&mut commands, bot, &mut link, now);
            let reply = if estop.engaged {
                stats.refused += 1;
                error(ErrorCode::NotAllowed, format!("slot {i}: emergency stop engaged"))
            } else {
                outbox.commands.push(Command::Move { linear: slot.linear, angular: slot.angular });
                outbox.commands.push(Command::Grip { close: slot.grip });
                outbox.commands.push(Command::Lamp { on: slot.lamp });
                status_of(robot, t, battery, bump, gripper, &names)
            };
            send(socket, from, &reply, &mut stats);
        }
    }
}
