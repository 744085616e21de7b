//! How the bot manager's packets travel: inside the process (no sockets, the same bytes) or as
//! UDP datagrams — the manager's one socket, a port per simulated bot, an IP multicast group for
//! update-all packets where the host allows it — and what a bot's end does with a packet.

use std::collections::HashMap;
use std::io::ErrorKind;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use bevy::prelude::*;
use socket2::{Domain, Protocol, Socket, Type};

use super::packet::{Command, EMPTY_SLOT};
use crate::robot::{DriveCommand, GripCommand, LampState, Robot};

/// A bot's end, on any transport: takes one command addressed to bot `index` and drives the
/// actuators; true when the bot answers with its status (a ping or a status request).
pub fn obey(
    index: u32,
    command: &Command,
    robot: &mut Robot,
    drive: &mut DriveCommand,
    grip: &mut GripCommand,
    lamp: &mut LampState,
) -> bool {
    let mut set = |(linear, lateral, angular): (f32, f32, f32), close: Option<bool>, on: Option<bool>| {
        let d = DriveCommand { linear, angular, lateral };
        if *drive != d {
            *drive = d;
        }
        if let Some(close) = close
            && grip.close != close
        {
            grip.close = close;
        }
        if let Some(on) = on
            && lamp.on != on
        {
            lamp.on = on;
        }
    };
    match command {
        Command::Move { linear, angular } => set((*linear, 0.0, *angular), None, None),
        Command::MoveOmni { linear, lateral, angular } => set((*linear, *lateral, *angular), None, None),
        Command::Grip { close } => {
            if grip.close != *close {
                grip.close = *close;
            }
        }
        Command::Lamp { on } => {
            if lamp.on != *on {
                lamp.on = *on;
            }
        }
        Command::UpdateAll(slots) => {
            if let Some(s) = slots.iter().find(|s| s.bot != EMPTY_SLOT && u32::from(s.bot) == index) {
                set((s.linear, s.lateral, s.angular), Some(s.grip), Some(s.lamp));
            }
        }
        Command::MotorParams { max_speed, max_turn } => {
            robot.max_speed = *max_speed;
            robot.max_turn = *max_turn;
        }
        Command::Disconnect => set((0.0, 0.0, 0.0), None, None),
        Command::Ping | Command::StatusRequest => return true,
        Command::Status(_) | Command::Error { .. } => {}
    }
    false
}

/// Datagrams the manager reads from its socket in one poll.
pub const MAX_DATAGRAMS_PER_POLL: usize = 4096;

/// A simulated bot's own UDP port (the UDP transport).
#[derive(Component, Debug)]
pub struct BotSocket {
    pub socket: Option<UdpSocket>,
    pub local: Option<SocketAddr>,
    /// Why the port could not be bound, naming the bot.
    pub error: Option<String>,
}

impl BotSocket {
    pub fn open(address: &str, bot: &str) -> Self {
        match bind(address, 0) {
            Ok((socket, local)) => Self { socket: Some(socket), local: Some(local), error: None },
            Err(e) => Self { socket: None, local: None, error: Some(format!("bot \"{bot}\": {e}")) },
        }
    }
}

/// The manager's UDP side: one socket for every bot, and the multicast group.
#[derive(Resource, Debug, Default)]
pub struct CentralSocket {
    pub socket: Option<UdpSocket>,
    pub local: Option<SocketAddr>,
    /// Why the socket could not be opened.
    pub error: Option<String>,
    /// The group update-all packets go to, while the host allows it.
    pub group: Option<SocketAddr>,
    /// Why update-all packets go by unicast although the scene names a group.
    pub fallback: Option<String>,
    /// The simulated bots' shared receiver of the group (with the UDP transport).
    pub group_receiver: Option<UdpSocket>,
    /// Robot index by address, for outside bots and simulated bots over UDP.
    pub by_address: HashMap<SocketAddr, u32>,
    /// Address by robot index.
    pub addresses: HashMap<u32, SocketAddr>,
}

pub(crate) fn bind(address: &str, port: u16) -> Result<(UdpSocket, SocketAddr), String> {
    let socket = UdpSocket::bind((address, port)).map_err(|e| format!("cannot bind UDP {address}:{port}: {e}"))?;
    socket.set_nonblocking(true).map_err(|e| format!("UDP {address}:{port}: {e}"))?;
    let local = socket.local_addr().map_err(|e| format!("UDP {address}:{port}: {e}"))?;
    Ok((socket, local))
}

/// The interface multicast goes out of and is received on: the scene's address (the loopback
/// by default), or any.
fn interface(address: &str) -> Ipv4Addr {
    match address.parse::<IpAddr>() {
        Ok(IpAddr::V4(v4)) => v4,
        _ => Ipv4Addr::UNSPECIFIED,
    }
}

/// The manager's socket, sending to `group` by multicast out of `address`'s interface.
pub fn open_central(address: &str, group: Option<SocketAddr>) -> CentralSocket {
    let mut central = CentralSocket::default();
    match bind(address, 0) {
        Ok((socket, local)) => {
            central.local = Some(local);
            if let Some(group) = group {
                match enable_multicast(&socket, address) {
                    Ok(()) => central.group = Some(group),
                    Err(e) => central.fall_back(group, &e),
                }
            }
            central.socket = Some(socket);
        }
        Err(e) => central.error = Some(format!("the bot manager: {e}")),
    }
    central
}

fn enable_multicast(socket: &UdpSocket, address: &str) -> Result<(), String> {
    let s = socket2::SockRef::from(socket);
    s.set_multicast_if_v4(&interface(address)).map_err(|e| e.to_string())?;
    s.set_multicast_loop_v4(true).map_err(|e| e.to_string())?;
    s.set_multicast_ttl_v4(1).map_err(|e| e.to_string())
}

/// A socket that receives `group` on `address`'s interface, sharing the group's port with
/// other receivers on the host (every bot emulator joins the same group).
pub fn join_group(address: &str, group: SocketAddr) -> Result<UdpSocket, String> {
    let IpAddr::V4(ip) = group.ip() else { return Err(format!("multicast group {group} is not IPv4")) };
    let fail = |e: std::io::Error| format!("cannot join multicast group {group}: {e}");
    let socket = Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::UDP)).map_err(fail)?;
    socket.set_reuse_address(true).map_err(fail)?;
    socket.bind(&SocketAddr::from((Ipv4Addr::UNSPECIFIED, group.port())).into()).map_err(fail)?;
    socket.join_multicast_v4(&ip, &interface(address)).map_err(fail)?;
    socket.set_nonblocking(true).map_err(fail)?;
    Ok(socket.into())
}

impl CentralSocket {
    /// Stops using the group, saying why once.
    pub fn fall_back(&mut self, group: SocketAddr, why: &str) {
        let line =
            format!("multicast to {group} is not available here ({why}); update-all packets go by unicast to each bot");
        warn!("{line}");
        self.group = None;
        self.fallback = Some(line);
    }

    /// Sends a datagram; an error is returned for the counters, never a panic.
    pub fn send(&self, bytes: &[u8], to: SocketAddr) -> Result<(), String> {
        let Some(socket) = &self.socket else { return Err("the bot manager has no UDP socket".into()) };
        socket.send_to(bytes, to).map(|_| ()).map_err(|e| format!("UDP to {to}: {e}"))
    }

    /// The datagrams waiting on the manager's socket, at most [`MAX_DATAGRAMS_PER_POLL`] (a
    /// flood waits for the next poll instead of holding up the step).
    pub fn receive(&self, out: &mut Vec<(SocketAddr, Vec<u8>)>) {
        let Some(socket) = &self.socket else { return };
        let mut buf = [0u8; 2048];
        for _ in 0..MAX_DATAGRAMS_PER_POLL {
            match socket.recv_from(&mut buf) {
                Ok((n, from)) => out.push((from, buf[..n].to_vec())),
                Err(e) if e.kind() == ErrorKind::ConnectionRefused || e.kind() == ErrorKind::ConnectionReset => {}
                Err(_) => break,
            }
        }
    }
}

/// Reads every datagram waiting on a non-blocking socket.
pub fn receive_all(socket: &UdpSocket, mut f: impl FnMut(SocketAddr, &[u8])) {
    let mut buf = [0u8; 2048];
    loop {
        match socket.recv_from(&mut buf) {
            Ok((n, from)) => f(from, &buf[..n]),
            Err(e) if e.kind() == ErrorKind::WouldBlock => break,
            // An ICMP error of an earlier send, reported here on some hosts: go on reading.
            Err(e) if e.kind() == ErrorKind::ConnectionRefused || e.kind() == ErrorKind::ConnectionReset => {}
            Err(_) => break,
        }
    }
}

/// Calls `poll` (which reads what is there and says whether enough has arrived) every 50 µs
/// until it says so or `timeout` has passed. True when enough arrived.
pub fn wait_for(timeout: Duration, mut poll: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if poll() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_micros(50));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::botlink::packet::UpdateSlot;

    fn parts() -> (Robot, DriveCommand, GripCommand, LampState) {
        (
            Robot { index: 2, radius: 0.1, max_speed: 0.5, max_turn: 2.0, max_lateral: 0.0 },
            DriveCommand::default(),
            GripCommand::default(),
            LampState::default(),
        )
    }

    #[test]
    fn a_bot_takes_its_own_slot_of_an_update_all_packet() {
        let (mut r, mut d, mut g, mut l) = parts();
        let mut slots = [UpdateSlot::EMPTY; 5];
        slots[0] = UpdateSlot { bot: 1, linear: 9.0, angular: 9.0, lateral: 0.0, grip: false, lamp: false };
        slots[3] = UpdateSlot { bot: 2, linear: 0.3, angular: -0.5, lateral: 0.0, grip: true, lamp: true };
        assert!(!obey(2, &Command::UpdateAll(slots), &mut r, &mut d, &mut g, &mut l));
        assert_eq!(d, DriveCommand::new(0.3, -0.5));
        assert!(g.close && l.on);
        // A packet without its slot changes nothing.
        slots[3].bot = 4;
        obey(2, &Command::UpdateAll(slots), &mut r, &mut d, &mut g, &mut l);
        assert_eq!(d, DriveCommand::new(0.3, -0.5));
    }

    #[test]
    fn motor_parameters_set_the_limits_and_requests_are_answered() {
        let (mut r, mut d, mut g, mut l) = parts();
        obey(2, &Command::MotorParams { max_speed: 0.2, max_turn: 1.0 }, &mut r, &mut d, &mut g, &mut l);
        assert_eq!((r.max_speed, r.max_turn), (0.2, 1.0));
        assert!(obey(2, &Command::StatusRequest, &mut r, &mut d, &mut g, &mut l));
        assert!(obey(2, &Command::Ping, &mut r, &mut d, &mut g, &mut l));
        obey(2, &Command::Move { linear: 0.1, angular: 0.0 }, &mut r, &mut d, &mut g, &mut l);
        obey(2, &Command::Disconnect, &mut r, &mut d, &mut g, &mut l);
        assert_eq!(d, DriveCommand::default(), "a disconnect stops the drive");
    }

    #[test]
    fn multicast_reaches_a_member_of_the_group_on_the_loopback_or_falls_back() {
        let group: SocketAddr = "239.255.42.97:10097".parse().unwrap();
        let central = open_central("127.0.0.1", Some(group));
        assert!(central.socket.is_some(), "{:?}", central.error);
        let Ok(member) = join_group("127.0.0.1", group) else {
            // A host without multicast on the loopback: the fallback is said.
            return;
        };
        if central.group.is_none() {
            assert!(central.fallback.as_deref().unwrap_or("").contains("unicast"));
            return;
        }
        central.send(b"\x01\x00\x00\x00", group).unwrap();
        let mut got = Vec::new();
        wait_for(Duration::from_secs(1), || {
            receive_all(&member, |_, b| got.push(b.to_vec()));
            !got.is_empty()
        });
        assert_eq!(got, vec![b"\x01\x00\x00\x00".to_vec()]);
    }
}
