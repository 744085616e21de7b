//! The bot manager's own side (seed 004): what crsim's controllers command leaves the skill
//! system through here, for crsim's simulated bots and for bots outside the process alike.
//!
//! - The moving commands (move, grip, lamp — the original's move, kick and dribble) of every bot
//!   are kept by the multicast delegate, the latest of each kind. Every 20 ms of simulated time
//!   an update-all round groups them, five bots per packet in robot order, for every connected
//!   bot; each connecting bot gets the stop commands instead (move 0, lamp off) by unicast.
//! - Everything for one bot — pings, status requests, motor parameters, stops, a disconnect —
//!   goes by unicast through the [`BufferedTransmitter`] and its duplicate rule.
//! - Bots answer status requests (and, outside bots, every packet) with a status packet; a
//!   status makes a connecting bot connected (its motor parameters then go out) and feeds the
//!   watchdog, which drops a silent connected bot back to connecting.
//! - The panel connects, disconnects and reconnects bots and sets their motor parameters through
//!   [`LinkRequest`] messages.
//!
//! The robots take their commands from these packets only; [`super::transport`] carries them.

use std::collections::BTreeMap;

use bevy::prelude::*;
use serde::Serialize;

use super::packet::{Command, Status, UPDATE_ALL_SLOTS, UpdateSlot, decode, encode};
use super::transmitter::BufferedTransmitter;
use super::{BotLink, LinkChanged, LinkState};

/// The update-all period of the original: 20 ms.
pub const UPDATE_ALL_PERIOD: f32 = 0.02;

/// Packets and bytes.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Traffic {
    pub packets: u64,
    pub bytes: u64,
}

impl Traffic {
    pub fn add(&mut self, bytes: usize) {
        self.packets += 1;
        self.bytes += bytes as u64;
    }
}

/// Packets sent, by delivery method.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Sent {
    /// One bot's packets through the buffered transmitter.
    pub unicast: Traffic,
    /// Update-all packets handed over inside the process.
    pub update_all: Traffic,
    /// Update-all packets sent to the multicast group.
    pub multicast: Traffic,
    /// Update-all packets sent by unicast to each bot they carry (UDP without multicast).
    pub update_all_unicast: Traffic,
}

/// The counters of one bot's link, or of all links together. For one bot, `sent.update_all`
/// and `sent.multicast` count the packets that carried its slot; in total, the packets.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize)]
pub struct LinkCounters {
    pub sent: Sent,
    /// Packets from the bot.
    pub received: Traffic,
    /// Of those, status packets taken.
    pub statuses: u64,
    /// Received datagrams that were not valid packets.
    pub malformed: u64,
    /// Valid packets refused, by reason.
    pub refused: BTreeMap<&'static str, u64>,
    /// Unicast packets held back by the duplicate rule.
    pub duplicates_held: u64,
    /// Held packets deleted by a third copy.
    pub duplicates_dropped: u64,
    pub state_changes: u64,
    /// Times the watchdog dropped the bot to connecting.
    pub watchdog_stops: u64,
    /// Times the bot did not answer within the connect timeout and its link fell back to offline.
    pub connect_failures: u64,
    /// Packets the host would not send (UDP errors).
    pub send_errors: u64,
    /// Rounds after which an outside bot's answers did not come within the reply timeout.
    pub replies_missed: u64,
}

impl LinkCounters {
    pub fn refuse(&mut self, reason: &'static str) {
        *self.refused.entry(reason).or_default() += 1;
    }
}

/// Why a packet from a bot was refused.
pub mod refusal {
    /// From an address that is no bot's.
    pub const UNKNOWN_SENDER: &str = "unknown_sender";
    /// A status naming another bot than the one that sent it.
    pub const WRONG_BOT: &str = "wrong_bot";
    /// A valid packet a bot does not send to the manager (a move, an update-all...).
    pub const UNEXPECTED: &str = "unexpected";
    /// An error packet: the bot refused something the manager sent.
    pub const ERROR_REPLY: &str = "error_reply";
    /// From a bot disconnected by hand.
    pub const OFFLINE: &str = "offline";
}

/// Turns steps of `dt` into update-all rounds every `period` of simulated time, in phase with
/// the skill executors (the same accumulation and tolerance).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RoundClock {
    pub period: f32,
    since: f32,
}

impl Default for RoundClock {
    fn default() -> Self {
        Self { period: UPDATE_ALL_PERIOD, since: 0.0 }
    }
}

impl RoundClock {
    /// Advances by a step of `dt`; true when a round is due this step.
    pub fn step(&mut self, dt: f32) -> bool {
        self.since += dt;
        if self.since + 1e-6 < self.period {
            return false;
        }
        self.since = 0.0;
        true
    }
}

/// Groups slots (in the order given) into update-all packets of five, the last one padded with
/// empty slots, handing each packet to `packet`.
pub fn group_slots(
    slots: impl IntoIterator<Item = UpdateSlot>,
    mut packet: impl FnMut([UpdateSlot; UPDATE_ALL_SLOTS]),
) {
    let mut next = [UpdateSlot::EMPTY; UPDATE_ALL_SLOTS];
    let mut filled = 0;
    for slot in slots {
        next[filled] = slot;
        filled += 1;
        if filled == UPDATE_ALL_SLOTS {
            packet(next);
            (next, filled) = ([UpdateSlot::EMPTY; UPDATE_ALL_SLOTS], 0);
        }
    }
    if filled > 0 {
        packet(next);
    }
}

/// Whether bot `index` is due a status request (or, connecting, a ping) at `step`, every
/// `every` steps, the bots spread over the steps.
pub fn status_due(step: u64, index: u32, every: u64) -> bool {
    (step + u64::from(index)).is_multiple_of(every.max(1))
}

/// A panel's (or a test's) request for one bot's link.
#[derive(Message, Debug, Clone, Copy, PartialEq)]
pub struct LinkRequest {
    pub bot: Entity,
    pub action: LinkAction,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LinkAction {
    /// A disconnected bot starts connecting.
    Connect,
    /// The manager sends a disconnect and stops talking to the bot.
    Disconnect,
    /// Disconnect, then connect again.
    Reconnect,
    /// New motor parameters (m/s, rad/s): saved, and sent by unicast when connected.
    Motor { max_speed: f32, max_turn: f32 },
}

/// An update-all packet of this step.
#[derive(Debug, Clone, PartialEq)]
pub struct RoundPacket {
    pub bytes: Vec<u8>,
}

impl RoundPacket {
    /// The bots of its slots (robot indices), read from the packet.
    pub fn bots(&self) -> Vec<u32> {
        match decode(&self.bytes) {
            Ok(Command::UpdateAll(slots)) => {
                slots.iter().filter(|s| s.bot != super::packet::EMPTY_SLOT).map(|s| u32::from(s.bot)).collect()
            }
            _ => Vec::new(),
        }
    }
}

/// Where crsim's bots are reached: the manager's state between steps and its outgoing packets
/// of the current step (one for each environment, in a [`crate::sim::PerEnv`]).
#[derive(Debug, Default)]
pub struct BotManager {
    pub clock: RoundClock,
    pub rounds: u64,
    pub transmitter: BufferedTransmitter,
    /// All links together.
    pub totals: LinkCounters,
    /// Steps between two status requests to one bot.
    pub status_every: u64,
    /// This step's unicast packets: (robot index, bytes).
    pub unicast: Vec<(u32, Vec<u8>)>,
    /// This step's update-all packets.
    pub round: Vec<RoundPacket>,
    /// Wall-clock time the update-all rounds took, for the benchmark.
    pub timing: RoundTiming,
}

/// How long the manager's rounds took (wall clock, the whole exchange of a round step).
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct RoundTiming {
    pub rounds: u64,
    pub total_s: f64,
    pub max_s: f64,
    pub packets: u64,
}

impl RoundTiming {
    pub fn add(&mut self, seconds: f64, packets: u64) {
        self.rounds += 1;
        self.total_s += seconds;
        self.max_s = self.max_s.max(seconds);
        self.packets += packets;
    }
}

impl BotManager {
    pub fn new(dt: f64, status_period: f32) -> Self {
        Self { status_every: ((f64::from(status_period) / dt).round() as u64).max(1), ..default() }
    }

    /// Queues a unicast packet for bot `index`.
    pub fn send(&mut self, index: u32, command: &Command) {
        self.transmitter.enqueue(index, encode(command));
    }
}

/// Moves a link to `to` if the state machine allows it, counting and announcing the change.
pub fn change_state(
    commands: &mut Commands,
    bot: Entity,
    link: &mut BotLink,
    to: LinkState,
    totals: &mut LinkCounters,
) {
    if link.state.can_become(to) {
        commands.trigger(LinkChanged { bot, from: link.state, to });
        link.state = to;
        link.counters.state_changes += 1;
        totals.state_changes += 1;
    }
}

/// What one packet from a bot means to the manager.
#[derive(Debug, Clone, PartialEq)]
pub enum Heard {
    /// A status of this bot: it is there.
    Status(Status),
    /// Not a valid packet.
    Malformed(String),
    /// A valid packet refused for this reason.
    Refused(&'static str),
}

/// Reads a packet bot `index` sent.
pub fn hear(index: u32, bytes: &[u8]) -> Heard {
    match decode(bytes) {
        Ok(Command::Status(s)) if u32::from(s.bot) == index => Heard::Status(s),
        Ok(Command::Status(_)) => Heard::Refused(refusal::WRONG_BOT),
        Ok(Command::Error { .. }) => Heard::Refused(refusal::ERROR_REPLY),
        Ok(_) => Heard::Refused(refusal::UNEXPECTED),
        Err(e) => Heard::Malformed(e.to_string()),
    }
}

/// What the watchdog did to a link this step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stop {
    /// The state the link was in.
    pub from: LinkState,
    /// Whether the state machine let it drop to connecting (else only the stop is counted).
    pub changed: bool,
}

/// The watchdog (seed 004): a connected bot silent for more than `watchdog` seconds of
/// simulated time drops back to connecting, counted in its own counters.
#[inline]
pub fn watch(link: &mut BotLink, now: f64, watchdog: f64) -> Option<Stop> {
    if link.state != LinkState::Online || now - link.last_packet_s <= watchdog {
        return None;
    }
    let from = link.state;
    let changed = from.can_become(LinkState::Connecting);
    if changed {
        link.state = LinkState::Connecting;
        link.counters.state_changes += 1;
    }
    link.counters.watchdog_stops += 1;
    Some(Stop { from, changed })
}

/// A connection that fails falls back to disconnected (seed 004): a connecting bot that has not
/// answered by its deadline goes offline, counted in its own counters. Whether it did.
#[inline]
pub fn give_up(link: &mut BotLink, now: f64, connect_timeout: f32) -> bool {
    if link.state != LinkState::Connecting || !link.connect_by_s.is_some_and(|by| now > by) {
        return false;
    }
    link.state = LinkState::Offline;
    link.connect_by_s = None;
    link.counters.state_changes += 1;
    link.counters.connect_failures += 1;
    link.last_error = Some(format!("no answer within the connect timeout of {connect_timeout} s"));
    true
}

/// The multicast delegate: the moving commands a controller gave (move, grip, lamp) become the
/// latest of their kind in the link's slot for the next round; everything else goes to
/// `unicast`, in the order given.
#[inline]
pub fn delegate(link: &mut BotLink, commands: impl IntoIterator<Item = Command>, mut unicast: impl FnMut(Command)) {
    for command in commands {
        match command {
            Command::Move { linear, angular } => {
                (link.command.linear, link.command.lateral, link.command.angular) = (linear, 0.0, angular)
            }
            Command::MoveOmni { linear, lateral, angular } => {
                (link.command.linear, link.command.lateral, link.command.angular) = (linear, lateral, angular)
            }
            Command::Grip { close } => link.command.grip = close,
            Command::Lamp { on } => link.command.lamp = on,
            other => unicast(other),
        }
    }
}

/// What a bot is sent when its status is due: a status request once connected, a ping while
/// connecting, nothing offline.
#[inline]
pub fn status_command(state: LinkState) -> Option<Command> {
    match state {
        LinkState::Online => Some(Command::StatusRequest),
        LinkState::Connecting => Some(Command::Ping),
        LinkState::Offline => None,
    }
}

/// A bot's part in an update-all round.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RoundPart {
    /// A connected bot's slot: its latest moving commands.
    Slot(UpdateSlot),
    /// A connecting bot gets the stop commands by unicast instead ([`STOP_COMMANDS`]).
    Stop,
    /// An offline bot gets nothing.
    Nothing,
}

/// The stop commands of an inactive bot: the motors and the lamp (the original's dribbler).
pub const STOP_COMMANDS: [Command; 2] = [Command::Move { linear: 0.0, angular: 0.0 }, Command::Lamp { on: false }];

/// What bot `index` gets in an update-all round.
#[inline]
pub fn round_part(link: &BotLink, index: u32) -> RoundPart {
    match link.state {
        LinkState::Online => RoundPart::Slot(UpdateSlot { bot: index as u16, ..link.command }),
        LinkState::Connecting => RoundPart::Stop,
        LinkState::Offline => RoundPart::Nothing,
    }
}

/// The order to send a pass's unicast commands in, `(robot index, command)` as the threads
/// gathered them: by robot index, each bot's in the order it gave them, so the queue is the
/// same on any number of threads. Fills `order` with (robot index, place in `queue`).
pub fn send_order(queue: &[(u32, Command)], order: &mut Vec<(u32, u32)>) {
    // A sort of distinct keys in place: a stable sort of the commands themselves took room for
    // half of them from the allocator every step, which then tidied its free lists.
    order.clear();
    order.extend(queue.iter().enumerate().map(|(place, (index, _))| (*index, place as u32)));
    order.sort_unstable();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slot(bot: u16) -> UpdateSlot {
        UpdateSlot { bot, linear: 0.1, angular: 0.0, lateral: 0.0, grip: false, lamp: true }
    }

    #[test]
    fn slots_are_grouped_five_to_a_packet_in_order() {
        let group = |n: u16| {
            let mut packets = Vec::new();
            group_slots((0..n).map(slot), |p| packets.push(p));
            packets
        };
        let packets = group(12);
        assert_eq!(packets.len(), 3);
        assert_eq!(packets[0].map(|s| s.bot), [0, 1, 2, 3, 4]);
        assert_eq!(packets[1].map(|s| s.bot), [5, 6, 7, 8, 9]);
        assert_eq!(packets[2][..2].iter().map(|s| s.bot).collect::<Vec<_>>(), vec![10, 11]);
        assert_eq!(packets[2][2..], [UpdateSlot::EMPTY; 3]);
        assert!(group(0).is_empty());
        assert_eq!(group(10).len(), 2);
    }

    #[test]
    fn rounds_come_every_20_ms_whatever_the_step() {
        let rounds = |dt: f32, steps: usize| {
            let mut c = RoundClock::default();
            (0..steps).filter(|_| c.step(dt)).count()
        };
        assert_eq!(rounds(0.02, 50), 50);
        assert_eq!(rounds(0.01, 50), 25);
        assert_eq!(rounds(0.005, 100), 25);
        // Longer steps: one round per step.
        assert_eq!(rounds(0.05, 10), 10);
    }

    #[test]
    fn status_requests_are_spread_over_the_steps() {
        let due: Vec<u32> = (0..10).filter(|&i| status_due(3, i, 5)).collect();
        assert_eq!(due, vec![2, 7]);
        // Every bot once in every `every` steps.
        for i in 0..10 {
            assert_eq!((0..5).filter(|&s| status_due(s, i, 5)).count(), 1);
        }
        assert!(status_due(7, 3, 0), "every step when the period is shorter than a step");
    }

    #[test]
    fn a_bot_is_heard_by_its_status_and_refused_otherwise() {
        let status = Status { bot: 4, x: 1.0, y: 2.0, heading: 0.5, battery: 0.9, bump: false, held: None };
        assert_eq!(hear(4, &encode(&Command::Status(status.clone()))), Heard::Status(status.clone()));
        assert_eq!(hear(5, &encode(&Command::Status(status))), Heard::Refused(refusal::WRONG_BOT));
        assert_eq!(hear(4, &encode(&Command::Ping)), Heard::Refused(refusal::UNEXPECTED));
        let err = Command::Error { code: super::super::packet::ErrorCode::Malformed, reason: "x".into() };
        assert_eq!(hear(4, &encode(&err)), Heard::Refused(refusal::ERROR_REPLY));
        assert!(matches!(hear(4, &[1, 2, 3]), Heard::Malformed(m) if m.contains("short packet")));
    }

    fn online(now: f64) -> BotLink {
        let mut link = BotLink::new(false, 0.5, "r");
        link.last_packet_s = now;
        link
    }

    #[test]
    fn the_watchdog_stops_a_silent_connected_bot_once() {
        let mut link = online(1.0);
        assert_eq!(watch(&mut link, 1.5, 0.5), None, "silent for exactly the watchdog: still on");
        assert_eq!(watch(&mut link, 1.6, 0.5), Some(Stop { from: LinkState::Online, changed: true }));
        assert_eq!(
            (link.state, link.counters.watchdog_stops, link.counters.state_changes),
            (LinkState::Connecting, 1, 1)
        );
        // Connecting (or offline) links are the connect timeout's, not the watchdog's.
        assert_eq!(watch(&mut link, 9.0, 0.5), None);
        link.state = LinkState::Offline;
        assert_eq!(watch(&mut link, 9.0, 0.5), None);
    }

    #[test]
    fn a_connecting_bot_that_never_answers_goes_offline_after_its_deadline() {
        let mut link = online(0.0);
        link.state = LinkState::Connecting;
        assert!(!give_up(&mut link, 100.0, 5.0), "no deadline set: waits");
        link.connect_by_s = Some(5.0);
        assert!(!give_up(&mut link, 5.0, 5.0));
        assert!(give_up(&mut link, 5.02, 5.0));
        assert_eq!((link.state, link.connect_by_s, link.counters.connect_failures), (LinkState::Offline, None, 1));
        assert!(link.last_error.as_deref().is_some_and(|e| e.contains("5 s")));
        assert!(!give_up(&mut link, 6.0, 5.0), "once");
    }

    #[test]
    fn the_delegate_keeps_the_latest_moving_commands_and_passes_the_rest_in_order() {
        let mut link = online(0.0);
        let mut unicast = Vec::new();
        let given = [
            Command::Move { linear: 0.1, angular: 0.2 },
            Command::Ping,
            Command::Grip { close: true },
            Command::Move { linear: 0.3, angular: -0.1 },
            Command::MotorParams { max_speed: 1.0, max_turn: 2.0 },
            Command::Lamp { on: true },
        ];
        delegate(&mut link, given, |c| unicast.push(c));
        assert_eq!(
            (link.command.linear, link.command.angular, link.command.grip, link.command.lamp),
            (0.3, -0.1, true, true)
        );
        assert_eq!(unicast, vec![Command::Ping, Command::MotorParams { max_speed: 1.0, max_turn: 2.0 }]);
    }

    #[test]
    fn a_round_gives_connected_bots_their_slot_connecting_ones_the_stops_offline_ones_nothing() {
        let mut link = online(0.0);
        link.command.linear = 0.25;
        let RoundPart::Slot(slot) = round_part(&link, 7) else { panic!("a slot") };
        assert_eq!((slot.bot, slot.linear), (7, 0.25));
        link.state = LinkState::Connecting;
        assert_eq!(round_part(&link, 7), RoundPart::Stop);
        assert_eq!(status_command(LinkState::Connecting), Some(Command::Ping));
        link.state = LinkState::Offline;
        assert_eq!((round_part(&link, 7), status_command(LinkState::Offline)), (RoundPart::Nothing, None));
        assert_eq!(status_command(LinkState::Online), Some(Command::StatusRequest));
    }

    #[test]
    fn commands_gathered_by_threads_are_sent_by_robot_each_bots_in_its_order() {
        // Two threads' lists appended: bot 3's commands came before bot 1's.
        let queue = [(3, Command::Ping), (3, Command::StatusRequest), (1, Command::Disconnect), (1, Command::Ping)];
        let mut order = Vec::new();
        send_order(&queue, &mut order);
        let sent: Vec<&(u32, Command)> = order.iter().map(|&(_, p)| &queue[p as usize]).collect();
        assert_eq!(
            sent,
            [&(1, Command::Disconnect), &(1, Command::Ping), &(3, Command::Ping), &(3, Command::StatusRequest)]
        );
    }
}
