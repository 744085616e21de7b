//! Command packets in the format of seed 004: a 4-byte header — the command id as a
//! little-endian u16 whose high byte is the section, then the payload length as a little-endian
//! u16 — followed by the payload. Numbers in payloads are little-endian both ways.
//!
//! [`encode`] is the transmitter's side; [`decode`] is the command factory on the robot's side.
//! Decoding never panics: every malformed packet is a [`PacketError`] with a reason.

use std::fmt;

/// Sections: the high byte of a command id.
pub mod section {
    pub const SYSTEM: u8 = 0x00;
    pub const MOTOR: u8 = 0x02;
    pub const KICKER: u8 = 0x04;
    pub const MOVEMENT: u8 = 0x05;
    pub const MULTICAST: u8 = 0x06;
}

/// Command ids (section in the high byte).
pub mod id {
    pub const PING: u16 = 0x0001;
    pub const STATUS_REQUEST: u16 = 0x0002;
    pub const STATUS: u16 = 0x0003;
    pub const ERROR: u16 = 0x0004;
    pub const DISCONNECT: u16 = 0x0005;
    /// The third actuator group's command (the original's dribbler): the robot's lamp.
    pub const LAMP: u16 = 0x0201;
    /// The bot's motor parameters (the original set them by unicast once a bot connected).
    pub const MOTOR_PARAMS: u16 = 0x0202;
    /// The original's kicker section carries crsim's gripper.
    pub const GRIP: u16 = 0x0401;
    pub const MOVE: u16 = 0x0501;
    /// A holonomic drive's move: forward, sideways and turning.
    pub const MOVE_OMNI: u16 = 0x0502;
    pub const UPDATE_ALL: u16 = 0x0601;
    /// An update-all packet whose slots carry a sideways speed too (sent when any slot has one).
    pub const UPDATE_ALL_OMNI: u16 = 0x0602;
}

/// Header length in bytes.
pub const HEADER_LEN: usize = 4;
/// Largest payload crsim accepts (a UDP datagram of a status with a long pen name fits easily).
pub const MAX_PAYLOAD: usize = 1024;
/// Slots in an "update all" packet, as in the original.
pub const UPDATE_ALL_SLOTS: usize = 5;
/// Bytes per "update all" slot: bot u16, linear f32, angular f32, flags u8.
pub const SLOT_LEN: usize = 11;
/// Bytes per slot of [`id::UPDATE_ALL_OMNI`]: bot u16, linear f32, lateral f32, angular f32,
/// flags u8.
pub const OMNI_SLOT_LEN: usize = 15;
/// A slot's bot id meaning "empty slot".
pub const EMPTY_SLOT: u16 = 0xFFFF;

/// One robot's share of an "update all" packet.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct UpdateSlot {
    /// The robot's index in the scene, or [`EMPTY_SLOT`].
    pub bot: u16,
    /// m/s.
    pub linear: f32,
    /// rad/s.
    pub angular: f32,
    /// m/s sideways, to the left (a holonomic drive's).
    pub lateral: f32,
    pub grip: bool,
    pub lamp: bool,
}

impl UpdateSlot {
    pub const EMPTY: UpdateSlot =
        UpdateSlot { bot: EMPTY_SLOT, linear: 0.0, angular: 0.0, lateral: 0.0, grip: false, lamp: false };
}

/// Whether an update-all packet of these slots needs [`id::UPDATE_ALL_OMNI`]'s sideways speeds.
fn any_sideways(slots: &[UpdateSlot]) -> bool {
    slots.iter().any(|s| s.lateral != 0.0)
}

/// A robot's report to its controller.
#[derive(Debug, Clone, PartialEq)]
pub struct Status {
    pub bot: u16,
    pub x: f32,
    pub y: f32,
    /// Radians.
    pub heading: f32,
    /// Charge as a fraction of capacity.
    pub battery: f32,
    pub bump: bool,
    /// Name of the held pen.
    pub held: Option<String>,
}

/// Why a command was refused or a packet could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u16)]
pub enum ErrorCode {
    Malformed = 1,
    UnknownCommand = 2,
    TooManySlots = 3,
    UnknownBot = 4,
    NotAllowed = 5,
}

impl ErrorCode {
    fn from_u16(x: u16) -> Option<Self> {
        Some(match x {
            1 => Self::Malformed,
            2 => Self::UnknownCommand,
            3 => Self::TooManySlots,
            4 => Self::UnknownBot,
            5 => Self::NotAllowed,
            _ => return None,
        })
    }
}

/// Every command a robot or its controller can send.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    Ping,
    StatusRequest,
    Status(Status),
    Error {
        code: ErrorCode,
        reason: String,
    },
    Disconnect,
    Lamp {
        on: bool,
    },
    Grip {
        close: bool,
    },
    /// The drive's limits: top linear speed (m/s) and top turn rate (rad/s).
    MotorParams {
        max_speed: f32,
        max_turn: f32,
    },
    /// Linear (m/s) and angular (rad/s) speed for the differential drive.
    Move {
        linear: f32,
        angular: f32,
    },
    /// A holonomic drive's move: forward (m/s), sideways to the left (m/s) and angular (rad/s).
    MoveOmni {
        linear: f32,
        lateral: f32,
        angular: f32,
    },
    /// Move, grip and lamp for up to [`UPDATE_ALL_SLOTS`] robots at once, in fixed slots.
    UpdateAll([UpdateSlot; UPDATE_ALL_SLOTS]),
}

impl Command {
    /// The command id (section in the high byte).
    pub fn id(&self) -> u16 {
        match self {
            Command::Ping => id::PING,
            Command::StatusRequest => id::STATUS_REQUEST,
            Command::Status(_) => id::STATUS,
            Command::Error { .. } => id::ERROR,
            Command::Disconnect => id::DISCONNECT,
            Command::Lamp { .. } => id::LAMP,
            Command::MotorParams { .. } => id::MOTOR_PARAMS,
            Command::Grip { .. } => id::GRIP,
            Command::Move { .. } => id::MOVE,
            Command::MoveOmni { .. } => id::MOVE_OMNI,
            Command::UpdateAll(slots) if any_sideways(slots) => id::UPDATE_ALL_OMNI,
            Command::UpdateAll(_) => id::UPDATE_ALL,
        }
    }

    /// A short name for logs and the inspector.
    pub fn name(&self) -> &'static str {
        match self {
            Command::Ping => "ping",
            Command::StatusRequest => "status?",
            Command::Status(_) => "status",
            Command::Error { .. } => "error",
            Command::Disconnect => "disconnect",
            Command::Lamp { .. } => "lamp",
            Command::MotorParams { .. } => "motor",
            Command::Grip { .. } => "grip",
            Command::Move { .. } => "move",
            Command::MoveOmni { .. } => "move-omni",
            Command::UpdateAll(_) => "update-all",
        }
    }
}

impl fmt::Display for Command {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Command::Move { linear, angular } => {
                write!(f, "move {linear:.2} m/s {:.0}°/s", angular.to_degrees())
            }
            Command::MoveOmni { linear, lateral, angular } => {
                write!(f, "move {linear:.2} m/s, {lateral:.2} m/s left, {:.0}°/s", angular.to_degrees())
            }
            Command::Grip { close } => write!(f, "grip {}", if *close { "close" } else { "open" }),
            Command::Lamp { on } => write!(f, "lamp {}", if *on { "on" } else { "off" }),
            Command::MotorParams { max_speed, max_turn } => {
                write!(f, "motor {max_speed:.2} m/s {:.0}°/s", max_turn.to_degrees())
            }
            Command::Error { code, reason } => write!(f, "error {code:?}: {reason}"),
            Command::Status(s) => write!(f, "status bot {} ({:.2}, {:.2})", s.bot, s.x, s.y),
            other => f.write_str(other.name()),
        }
    }
}

/// A packet that could not be turned into a command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PacketError {
    /// Fewer than the 4 header bytes.
    Short {
        len: usize,
    },
    /// The header declares more payload than crsim accepts.
    TooLong {
        declared: usize,
    },
    /// The declared payload length differs from the bytes that follow the header.
    LengthMismatch {
        declared: usize,
        actual: usize,
    },
    UnknownId {
        id: u16,
    },
    /// An "update all" packet with more slots than the fixed number.
    TooManySlots {
        slots: usize,
    },
    /// The id is known but the payload does not fit it.
    BadPayload {
        id: u16,
        reason: String,
    },
}

impl fmt::Display for PacketError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PacketError::Short { len } => write!(f, "short packet: {len} bytes, a header needs {HEADER_LEN}"),
            PacketError::TooLong { declared } => {
                write!(f, "payload length {declared} exceeds the maximum of {MAX_PAYLOAD}")
            }
            PacketError::LengthMismatch { declared, actual } => {
                write!(f, "header declares {declared} payload bytes but {actual} follow")
            }
            PacketError::UnknownId { id } => write!(f, "unknown command id 0x{id:04x}"),
            PacketError::TooManySlots { slots } => {
                write!(f, "update-all packet with {slots} slots; at most {UPDATE_ALL_SLOTS} robots per packet")
            }
            PacketError::BadPayload { id, reason } => write!(f, "command 0x{id:04x}: {reason}"),
        }
    }
}

impl std::error::Error for PacketError {}

impl PacketError {
    /// The error code sent back in an error packet.
    pub fn code(&self) -> ErrorCode {
        match self {
            PacketError::UnknownId { .. } => ErrorCode::UnknownCommand,
            PacketError::TooManySlots { .. } => ErrorCode::TooManySlots,
            _ => ErrorCode::Malformed,
        }
    }
}

/// Encodes a command as a packet.
pub fn encode(cmd: &Command) -> Vec<u8> {
    let mut packet = Vec::with_capacity(HEADER_LEN + payload_len(cmd));
    encode_into(cmd, &mut packet);
    packet
}

/// Encodes a command into `packet` (emptied first; its room is reused).
pub fn encode_into(cmd: &Command, packet: &mut Vec<u8>) {
    packet.clear();
    packet.reserve(HEADER_LEN + payload_len(cmd));
    packet.extend(cmd.id().to_le_bytes());
    packet.extend([0, 0]);
    match cmd {
        Command::Ping | Command::StatusRequest | Command::Disconnect => {}
        Command::Status(s) => {
            packet.extend(s.bot.to_le_bytes());
            for x in [s.x, s.y, s.heading, s.battery] {
                packet.extend(x.to_le_bytes());
            }
            packet.push(u8::from(s.bump));
            match &s.held {
                None => packet.push(0),
                Some(name) => {
                    let bytes = truncate_utf8(name, 254);
                    packet.push(bytes.len() as u8 + 1);
                    packet.extend(bytes);
                }
            }
        }
        Command::Error { code, reason } => {
            packet.extend((*code as u16).to_le_bytes());
            packet.extend(truncate_utf8(reason, MAX_PAYLOAD - 2));
        }
        Command::Lamp { on } => packet.push(u8::from(*on)),
        Command::Grip { close } => packet.push(u8::from(*close)),
        Command::Move { linear, angular } => {
            packet.extend(linear.to_le_bytes());
            packet.extend(angular.to_le_bytes());
        }
        Command::MoveOmni { linear, lateral, angular } => {
            for x in [linear, lateral, angular] {
                packet.extend(x.to_le_bytes());
            }
        }
        Command::MotorParams { max_speed, max_turn } => {
            packet.extend(max_speed.to_le_bytes());
            packet.extend(max_turn.to_le_bytes());
        }
        Command::UpdateAll(slots) => {
            let sideways = any_sideways(slots);
            for s in slots {
                packet.extend(s.bot.to_le_bytes());
                packet.extend(s.linear.to_le_bytes());
                if sideways {
                    packet.extend(s.lateral.to_le_bytes());
                }
                packet.extend(s.angular.to_le_bytes());
                packet.push(u8::from(s.grip) | (u8::from(s.lamp) << 1));
            }
        }
    }
    let len = (packet.len() - HEADER_LEN) as u16;
    packet[2..4].copy_from_slice(&len.to_le_bytes());
}

/// The payload's length, at most (for the packet's one allocation).
fn payload_len(cmd: &Command) -> usize {
    match cmd {
        Command::Ping | Command::StatusRequest | Command::Disconnect => 0,
        Command::Status(s) => 19 + s.held.as_ref().map_or(0, |h| h.len().min(254)),
        Command::Error { reason, .. } => 2 + reason.len().min(MAX_PAYLOAD - 2),
        Command::Lamp { .. } | Command::Grip { .. } => 1,
        Command::Move { .. } | Command::MotorParams { .. } => 8,
        Command::MoveOmni { .. } => 12,
        Command::UpdateAll(_) => UPDATE_ALL_SLOTS * OMNI_SLOT_LEN,
    }
}

fn truncate_utf8(s: &str, max: usize) -> &[u8] {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s.as_bytes()[..end]
}

/// Reads little-endian values from a payload, failing with a reason instead of panicking.
struct Reader<'a> {
    id: u16,
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], PacketError> {
        if self.bytes.len() < n {
            return Err(PacketError::BadPayload { id: self.id, reason: format!("payload ends before {what}") });
        }
        let (head, rest) = self.bytes.split_at(n);
        self.bytes = rest;
        Ok(head)
    }
    fn u8(&mut self, what: &str) -> Result<u8, PacketError> {
        Ok(self.take(1, what)?[0])
    }
    fn bool(&mut self, what: &str) -> Result<bool, PacketError> {
        match self.u8(what)? {
            0 => Ok(false),
            1 => Ok(true),
            x => Err(PacketError::BadPayload { id: self.id, reason: format!("{what} must be 0 or 1, got {x}") }),
        }
    }
    fn u16(&mut self, what: &str) -> Result<u16, PacketError> {
        let b = self.take(2, what)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }
    fn f32(&mut self, what: &str) -> Result<f32, PacketError> {
        let b = self.take(4, what)?;
        Ok(f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn finite(&mut self, what: &str) -> Result<f32, PacketError> {
        let x = self.f32(what)?;
        if x.is_finite() {
            Ok(x)
        } else {
            Err(PacketError::BadPayload { id: self.id, reason: format!("{what} is not a finite number") })
        }
    }
    /// One update-all slot: bot, linear, the sideways speed when `sideways` (the omni layout),
    /// angular, flags.
    fn slot(&mut self, sideways: bool) -> Result<UpdateSlot, PacketError> {
        let bot = self.u16("slot bot")?;
        let linear = self.finite("slot linear")?;
        let lateral = if sideways { self.finite("slot lateral")? } else { 0.0 };
        let angular = self.finite("slot angular")?;
        let flags = self.u8("slot flags")?;
        if flags > 3 {
            let reason = format!("slot flags 0x{flags:02x} has unknown bits");
            return Err(PacketError::BadPayload { id: self.id, reason });
        }
        Ok(UpdateSlot { bot, linear, angular, lateral, grip: flags & 1 != 0, lamp: flags & 2 != 0 })
    }
    fn end(self) -> Result<(), PacketError> {
        if self.bytes.is_empty() {
            Ok(())
        } else {
            Err(PacketError::BadPayload {
                id: self.id,
                reason: format!("{} unexpected trailing bytes", self.bytes.len()),
            })
        }
    }
}

/// The command factory: rebuilds a command from a packet.
pub fn decode(packet: &[u8]) -> Result<Command, PacketError> {
    if packet.len() < HEADER_LEN {
        return Err(PacketError::Short { len: packet.len() });
    }
    let id = u16::from_le_bytes([packet[0], packet[1]]);
    let declared = usize::from(u16::from_le_bytes([packet[2], packet[3]]));
    if declared > MAX_PAYLOAD {
        return Err(PacketError::TooLong { declared });
    }
    let payload = &packet[HEADER_LEN..];
    if payload.len() != declared {
        return Err(PacketError::LengthMismatch { declared, actual: payload.len() });
    }
    let mut r = Reader { id, bytes: payload };
    let cmd = match id {
        id::PING => Command::Ping,
        id::STATUS_REQUEST => Command::StatusRequest,
        id::DISCONNECT => Command::Disconnect,
        id::STATUS => {
            let bot = r.u16("bot")?;
            let x = r.finite("x")?;
            let y = r.finite("y")?;
            let heading = r.finite("heading")?;
            let battery = r.finite("battery")?;
            let bump = r.bool("bump")?;
            let n = r.u8("held length")?;
            let held = if n == 0 {
                None
            } else {
                let bytes = r.take(usize::from(n - 1), "held name")?;
                Some(
                    String::from_utf8(bytes.to_vec())
                        .map_err(|_| PacketError::BadPayload { id, reason: "held name is not UTF-8".into() })?,
                )
            };
            Command::Status(Status { bot, x, y, heading, battery, bump, held })
        }
        id::ERROR => {
            let code = r.u16("error code")?;
            let code = ErrorCode::from_u16(code)
                .ok_or_else(|| PacketError::BadPayload { id, reason: format!("unknown error code {code}") })?;
            let rest = r.take(r.bytes.len(), "reason")?;
            let reason = String::from_utf8(rest.to_vec())
                .map_err(|_| PacketError::BadPayload { id, reason: "reason is not UTF-8".into() })?;
            Command::Error { code, reason }
        }
        id::LAMP => Command::Lamp { on: r.bool("lamp")? },
        id::GRIP => Command::Grip { close: r.bool("grip")? },
        id::MOVE => Command::Move { linear: r.finite("linear")?, angular: r.finite("angular")? },
        id::MOVE_OMNI => Command::MoveOmni {
            linear: r.finite("linear")?,
            lateral: r.finite("lateral")?,
            angular: r.finite("angular")?,
        },
        id::MOTOR_PARAMS => {
            let max_speed = r.finite("max speed")?;
            let max_turn = r.finite("max turn")?;
            if max_speed < 0.0 || max_turn < 0.0 {
                return Err(PacketError::BadPayload { id, reason: "motor limits must not be negative".into() });
            }
            Command::MotorParams { max_speed, max_turn }
        }
        id::UPDATE_ALL => {
            let slots = payload.len() / SLOT_LEN;
            if payload.len().is_multiple_of(SLOT_LEN) && slots > UPDATE_ALL_SLOTS {
                return Err(PacketError::TooManySlots { slots });
            }
            let mut slots = [UpdateSlot::EMPTY; UPDATE_ALL_SLOTS];
            // The usual case, read in one go: five slots of finite numbers and known flags.
            if payload.len() == UPDATE_ALL_SLOTS * SLOT_LEN {
                let mut fast = true;
                for (slot, b) in slots.iter_mut().zip(payload.chunks_exact(SLOT_LEN)) {
                    let f = |i: usize| f32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
                    let (linear, angular, flags) = (f(2), f(6), b[10]);
                    if !(linear.is_finite() && angular.is_finite() && flags <= 3) {
                        fast = false;
                        break;
                    }
                    let bot = u16::from_le_bytes([b[0], b[1]]);
                    *slot =
                        UpdateSlot { bot, linear, angular, lateral: 0.0, grip: flags & 1 != 0, lamp: flags & 2 != 0 };
                }
                if fast {
                    return Ok(Command::UpdateAll(slots));
                }
            }
            for slot in &mut slots {
                *slot = r.slot(false)?;
            }
            Command::UpdateAll(slots)
        }
        id::UPDATE_ALL_OMNI => {
            if payload.len() != UPDATE_ALL_SLOTS * OMNI_SLOT_LEN {
                return Err(PacketError::BadPayload {
                    id,
                    reason: format!(
                        "{} payload bytes: {UPDATE_ALL_SLOTS} slots of {OMNI_SLOT_LEN} bytes make {}",
                        payload.len(),
                        UPDATE_ALL_SLOTS * OMNI_SLOT_LEN
                    ),
                });
            }
            let mut slots = [UpdateSlot::EMPTY; UPDATE_ALL_SLOTS];
            for slot in &mut slots {
                *slot = r.slot(true)?;
            }
            Command::UpdateAll(slots)
        }
        other => return Err(PacketError::UnknownId { id: other }),
    };
    r.end()?;
    Ok(cmd)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn header_is_little_endian_with_the_section_in_the_high_byte() {
        let p = encode(&Command::Move { linear: 1.0, angular: 0.0 });
        assert_eq!(&p[..4], &[0x01, section::MOVEMENT, 8, 0]);
        assert_eq!(&p[4..8], &1.0f32.to_le_bytes());
        assert_eq!(encode(&Command::Ping), vec![0x01, 0x00, 0, 0]);
        assert_eq!(encode(&Command::Grip { close: true }), vec![0x01, section::KICKER, 1, 0, 1]);
    }

    #[test]
    fn sideways_speeds_travel_in_their_own_packets_and_leave_the_others_as_they_were() {
        let p = encode(&Command::MoveOmni { linear: 0.1, lateral: -0.2, angular: 0.5 });
        assert_eq!(&p[..4], &[0x02, section::MOVEMENT, 12, 0]);
        assert_eq!(&p[8..12], &(-0.2f32).to_le_bytes());
        let mut slots = [UpdateSlot::EMPTY; UPDATE_ALL_SLOTS];
        slots[0] = UpdateSlot { bot: 3, linear: 0.1, angular: 0.5, ..UpdateSlot::EMPTY };
        let plain = encode(&Command::UpdateAll(slots));
        assert_eq!((&plain[..2], plain.len()), (&[0x01, section::MULTICAST][..], 4 + UPDATE_ALL_SLOTS * SLOT_LEN));
        slots[1] = UpdateSlot { bot: 4, lateral: 0.25, ..UpdateSlot::EMPTY };
        let omni = encode(&Command::UpdateAll(slots));
        assert_eq!((&omni[..2], omni.len()), (&[0x02, section::MULTICAST][..], 4 + UPDATE_ALL_SLOTS * OMNI_SLOT_LEN));
        assert_eq!(decode(&omni), Ok(Command::UpdateAll(slots)));
        // Short by a byte, or with a slot's sideways speed not a number: refused, with why.
        let e = decode(&[&omni[..2], &[74, 0], &omni[4..78]].concat()).unwrap_err();
        assert!(e.to_string().contains("5 slots of 15 bytes make 75"), "{e}");
        let mut nan = omni.clone();
        nan[4 + OMNI_SLOT_LEN + 6..4 + OMNI_SLOT_LEN + 10].copy_from_slice(&f32::NAN.to_le_bytes());
        assert!(decode(&nan).unwrap_err().to_string().contains("slot lateral is not a finite number"));
    }

    #[test]
    fn malformed_packets_are_errors_with_reasons() {
        assert_eq!(decode(&[]), Err(PacketError::Short { len: 0 }));
        assert_eq!(decode(&[1, 5, 8]), Err(PacketError::Short { len: 3 }));
        assert_eq!(decode(&[0x99, 0x09, 0, 0]), Err(PacketError::UnknownId { id: 0x0999 }));
        assert_eq!(decode(&[0x01, 0x05, 0xff, 0xff]), Err(PacketError::TooLong { declared: 65535 }));
        assert_eq!(decode(&[0x01, 0x05, 8, 0, 1, 2]), Err(PacketError::LengthMismatch { declared: 8, actual: 2 }));
        let mut long = encode(&Command::Ping);
        long.push(0);
        assert_eq!(decode(&long), Err(PacketError::LengthMismatch { declared: 0, actual: 1 }));
        // A grip of 1 byte declared as 2, with 2 bytes: trailing data.
        let e = decode(&[0x01, 0x04, 2, 0, 1, 0]).unwrap_err();
        assert!(e.to_string().contains("trailing"), "{e}");
        let e = decode(&[0x01, 0x04, 1, 0, 7]).unwrap_err();
        assert!(e.to_string().contains("must be 0 or 1"), "{e}");
        let mut nan = vec![0x01, 0x05, 8, 0];
        nan.extend(f32::NAN.to_le_bytes());
        nan.extend(0f32.to_le_bytes());
        assert!(decode(&nan).unwrap_err().to_string().contains("not a finite number"));
        let mut six = encode(&Command::UpdateAll([UpdateSlot::EMPTY; UPDATE_ALL_SLOTS]));
        six.extend(&six[4..4 + SLOT_LEN].to_vec());
        six[2] = (6 * SLOT_LEN) as u8;
        assert_eq!(decode(&six), Err(PacketError::TooManySlots { slots: 6 }));
        assert_eq!(PacketError::TooManySlots { slots: 6 }.code(), ErrorCode::TooManySlots);
        let short_move = [0x01, 0x05, 4, 0, 0, 0, 0, 0];
        assert!(decode(&short_move).unwrap_err().to_string().contains("payload ends before angular"));
    }

    fn finite() -> impl Strategy<Value = f32> {
        -1.0e6f32..1.0e6f32
    }

    fn slot() -> impl Strategy<Value = UpdateSlot> {
        // Mostly without a sideways speed, so that both packet layouts are made.
        let lateral = prop_oneof![3 => Just(0.0f32), 1 => finite()];
        (any::<u16>(), finite(), finite(), lateral, any::<bool>(), any::<bool>()).prop_map(
            |(bot, linear, angular, lateral, grip, lamp)| UpdateSlot { bot, linear, angular, lateral, grip, lamp },
        )
    }

    fn command() -> impl Strategy<Value = Command> {
        let code = prop_oneof![
            Just(ErrorCode::Malformed),
            Just(ErrorCode::UnknownCommand),
            Just(ErrorCode::TooManySlots),
            Just(ErrorCode::UnknownBot),
            Just(ErrorCode::NotAllowed),
        ];
        prop_oneof![
            Just(Command::Ping),
            Just(Command::StatusRequest),
            Just(Command::Disconnect),
            (
                any::<u16>(),
                finite(),
                finite(),
                finite(),
                finite(),
                any::<bool>(),
                proptest::option::of("[a-zA-Z0-9 é]{0,40}")
            )
                .prop_map(|(bot, x, y, heading, battery, bump, held)| Command::Status(Status {
                    bot,
                    x,
                    y,
                    heading,
                    battery,
                    bump,
                    held
                })),
            (code, "[ -~]{0,80}").prop_map(|(code, reason)| Command::Error { code, reason }),
            any::<bool>().prop_map(|on| Command::Lamp { on }),
            any::<bool>().prop_map(|close| Command::Grip { close }),
            (finite(), finite()).prop_map(|(linear, angular)| Command::Move { linear, angular }),
            (finite(), finite(), finite()).prop_map(|(linear, lateral, angular)| Command::MoveOmni {
                linear,
                lateral,
                angular
            }),
            (0.0f32..1e6, 0.0f32..1e6).prop_map(|(max_speed, max_turn)| Command::MotorParams { max_speed, max_turn }),
            proptest::array::uniform5(slot()).prop_map(Command::UpdateAll),
        ]
    }

    proptest! {
        #[test]
        fn encode_then_decode_gives_the_command_back(cmd in command()) {
            prop_assert_eq!(decode(&encode(&cmd)), Ok(cmd));
        }

        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = decode(&bytes);
        }

        #[test]
        fn any_truncation_of_a_valid_packet_is_an_error(cmd in command(), cut in 1usize..8) {
            let p = encode(&cmd);
            let cut = cut.min(p.len());
            prop_assert!(decode(&p[..p.len() - cut]).is_err());
        }
    }
}
