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
use super::{BotLink, LinkState, LinkStats, Outbox, set_state, stop_safely};
use crate::robot::{Battery, BumpSensor, Gripper, Robot, RobotOrder, pose};
use crate::scene::schema::{ControllerSpec, SceneFile};
use crate::sim::SimTime;
use crate::skills::{EmergencyStop, Executor};

/// A robot's own UDP port.
#[derive(Component, Debug)]
pub struct UdpEndpoint {
    socket: UdpSocket,
    /// The address actually bound (port 0 in the scene picks a free one).
    pub local: SocketAddr,
    /// The controller that last sent a packet.
    pub peer: Option<SocketAddr>,
}

/// The scene's "update all" port.
#[derive(Resource, Debug, Default)]
pub struct UpdateAllSocket {
    socket: Option<UdpSocket>,
    pub local: Option<SocketAddr>,
}

fn bind(address: &str, port: u16) -> Result<(UdpSocket, SocketAddr), String> {
    let socket = UdpSocket::bind((address, port)).map_err(|e| format!("cannot bind UDP {address}:{port}: {e}"))?;
    socket.set_nonblocking(true).map_err(|e| format!("UDP {address}:{port}: {e}"))?;
    let local = socket.local_addr().map_err(|e| format!("UDP {address}:{port}: {e}"))?;
    Ok((socket, local))
}

/// Opens the sockets of a freshly spawned scene. A port that cannot be bound is reported; its
/// robot stays connecting.
pub fn open_endpoints(world: &mut World, scene: &SceneFile) {
    let mut problems = Vec::new();
    let address = scene.botlink.address.as_str();
    let mut update_all = UpdateAllSocket::default();
    if let Some(port) = scene.botlink.update_all_port {
        match bind(address, port) {
            Ok((socket, local)) => {
                info!("update-all UDP port {local}");
                update_all = UpdateAllSocket { socket: Some(socket), local: Some(local) };
            }
            Err(e) => problems.push(e),
        }
    }
    world.insert_resource(update_all);
    let order = world.resource::<RobotOrder>().0.clone();
    for (spec, entity) in scene.robots.iter().zip(order) {
        if let ControllerSpec::External { port } = spec.controller {
            match bind(address, port) {
                Ok((socket, local)) => {
                    info!("robot {} listens on UDP {local}", spec.name);
                    world.entity_mut(entity).insert(UdpEndpoint { socket, local, peer: None });
                }
                Err(e) => problems.push(format!("robot \"{}\": {e}", spec.name)),
            }
        }
    }
    let mut stats = LinkStats::default();
    if !problems.is_empty() {
        for p in &problems {
            warn!("{p}");
        }
        stats.last_error = Some(problems.join("; "));
    }
    world.insert_resource(stats);
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
    &'a mut Executor,
);

fn status_of(
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
    for (bot, robot, t, battery, bump, gripper, endpoint, mut link, mut outbox, mut executor) in &mut robots {
        let Some(mut endpoint) = endpoint else { continue };
        loop {
            let (n, from) = match endpoint.socket.recv_from(&mut buf) {
                Ok(x) => x,
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) => {
                    stats.last_error = Some(format!("UDP {}: {e}", endpoint.local));
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
                    stop_safely(&mut commands, bot, &mut executor, &mut outbox);
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
            send(&endpoint.socket, from, &reply, &mut stats);
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
            let Some((bot, robot, t, battery, bump, gripper, _, mut link, mut outbox, _)) = item else {
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
