//! The communication model of seed 000 as plain types: registration with a communication type,
//! send (point to point or broadcast) and get, parameters at system, robot and pair level, a
//! priority queue per robot ordered by receive step (ties in sending order) with a bounded
//! capacity, seeded loss draws, and accounting: every message sent is delivered, in flight or
//! dropped with a cause.
//!
//! The rules where the seed is silent are those of `shared/notes/seed-notes.md`:
//! - link: the system link, the sender's outgoing link, the receiver's incoming link and the
//!   pair's link (when set) must all be on;
//! - range: the smallest of the system range, the sender's range and the pair's range (unset is
//!   unlimited);
//! - delay: the pair's delay when set, otherwise the system delay plus the sender's delay;
//! - probability: the product of the system's, the sender's and the pair's (when set);
//! - delay and loss are decided at send time; `received_step = sent_step + delay`;
//! - `get_messages(robot, step)` returns every queued message with `received_step <= step`.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;

use rand::RngExt;

use crate::sim::rng::SimRng;

/// What a robot may send.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CommType {
    pub broadcast: bool,
    pub point_to_point: bool,
}

/// System-level parameters.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SystemParams {
    pub link: bool,
    /// Metres; `None` is unlimited.
    pub range: Option<f32>,
    /// Steps.
    pub delay: u32,
    pub probability: f32,
}

impl Default for SystemParams {
    fn default() -> Self {
        Self { link: true, range: None, delay: 0, probability: 1.0 }
    }
}

/// A robot's parameters.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RobotParams {
    pub incoming: bool,
    pub outgoing: bool,
    /// Maximum sending range, metres; `None` is unlimited.
    pub range: Option<f32>,
    pub delay: u32,
    pub probability: f32,
    pub kind: CommType,
}

impl RobotParams {
    pub fn new(kind: CommType) -> Self {
        Self { incoming: true, outgoing: true, range: None, delay: 0, probability: 1.0, kind }
    }
}

/// Parameters for one sender → receiver pair, combined with the other two levels; `None` leaves
/// them in charge. The pair's link must be on too, its range and probability narrow the others'
/// (smallest range, product), and its delay replaces the system's plus the sender's.
#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Serialize, serde::Deserialize)]
pub struct PairParams {
    pub link: Option<bool>,
    pub range: Option<f32>,
    pub delay: Option<u32>,
    pub probability: Option<f32>,
}

/// The link a message from a sender to a receiver actually gets.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EffectiveLink {
    pub up: bool,
    pub range: Option<f32>,
    pub delay: u32,
    pub probability: f32,
}

/// The one place the three levels combine, so the panel and the delivery agree.
pub fn effective_link(
    system: &SystemParams,
    sender: &RobotParams,
    receiver: &RobotParams,
    pair: Option<&PairParams>,
) -> EffectiveLink {
    let pair = pair.copied().unwrap_or_default();
    let range = [system.range, sender.range, pair.range].into_iter().flatten().reduce(f32::min);
    EffectiveLink {
        up: system.link && sender.outgoing && receiver.incoming && pair.link.unwrap_or(true),
        range,
        delay: pair.delay.unwrap_or(system.delay + sender.delay),
        probability: system.probability * sender.probability * pair.probability.unwrap_or(1.0),
    }
}

/// Why a message was not delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DropCause {
    LinkOff,
    OutOfRange,
    Lost,
    NoAbility,
    UnknownRobot,
    InboxFull,
}

impl DropCause {
    pub const ALL: [DropCause; 6] = [
        DropCause::LinkOff,
        DropCause::OutOfRange,
        DropCause::Lost,
        DropCause::NoAbility,
        DropCause::UnknownRobot,
        DropCause::InboxFull,
    ];

    pub fn name(self) -> &'static str {
        match self {
            DropCause::LinkOff => "link_off",
            DropCause::OutOfRange => "out_of_range",
            DropCause::Lost => "lost",
            DropCause::NoAbility => "no_ability",
            DropCause::UnknownRobot => "unknown_robot",
            DropCause::InboxFull => "inbox_full",
        }
    }
}

/// A message on its way, or delivered.
#[derive(Debug, Clone, PartialEq)]
pub struct Message<T> {
    pub sender: String,
    /// `None` for a broadcast.
    pub receiver: Option<String>,
    pub content: T,
    pub sent_step: u64,
    pub received_step: u64,
    /// Sending order, for ties.
    pub seq: u64,
}

/// Errors of the interface (each is also counted).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommsError {
    AlreadyRegistered(String),
    UnknownRobot(String),
}

impl fmt::Display for CommsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CommsError::AlreadyRegistered(n) => write!(f, "robot \"{n}\" is already registered"),
            CommsError::UnknownRobot(n) => write!(f, "robot \"{n}\" is not registered"),
        }
    }
}

impl std::error::Error for CommsError {}

/// Counters: `sent = delivered + in_flight + dropped`, always.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CommsStats {
    pub sent: u64,
    pub delivered: u64,
    pub in_flight: u64,
    pub dropped: BTreeMap<DropCause, u64>,
    /// Sum and maximum of delivered messages' latency, in steps.
    pub latency_sum: u64,
    pub latency_max: u64,
    /// Interface errors (double registration, unknown robots).
    pub errors: u64,
}

impl CommsStats {
    pub fn dropped_total(&self) -> u64 {
        self.dropped.values().sum()
    }

    pub fn delivery_ratio(&self) -> f64 {
        let settled = self.delivered + self.dropped_total();
        if settled == 0 { 1.0 } else { self.delivered as f64 / settled as f64 }
    }

    pub fn mean_latency(&self) -> f64 {
        if self.delivered == 0 { 0.0 } else { self.latency_sum as f64 / self.delivered as f64 }
    }

    fn drop(&mut self, cause: DropCause) {
        *self.dropped.entry(cause).or_default() += 1;
    }
}

/// A registered robot: its parameters and its priority queue.
#[derive(Debug, Clone)]
pub struct RobotRecord<T> {
    pub params: RobotParams,
    /// Ordered by (received step, sending order).
    inbox: BTreeMap<(u64, u64), Message<T>>,
    pub stats: CommsStats,
}

impl<T> RobotRecord<T> {
    /// Pending messages, soonest first.
    pub fn pending(&self) -> impl Iterator<Item = &Message<T>> {
        self.inbox.values()
    }
}

/// Where a message goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    Robot(String),
    Broadcast,
}

/// The communication model.
#[derive(Debug, Clone)]
pub struct CommsModel<T> {
    pub system: SystemParams,
    robots: HashMap<String, RobotRecord<T>>,
    pairs: HashMap<(String, String), PairParams>,
    /// Messages a robot's queue may hold.
    pub capacity: usize,
    rng: SimRng,
    seq: u64,
    pub stats: CommsStats,
    /// Registered robots whose incoming link is off, valid unless `params_dirty`.
    incoming_off: usize,
    params_dirty: bool,
}

/// What became of one send: the messages queued (with the receive step of the last one) and
/// those dropped, by cause. A point-to-point send is one message; a broadcast one per other
/// registered robot.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sent {
    pub queued: u64,
    pub received_step: Option<u64>,
    pub dropped: BTreeMap<DropCause, u64>,
}

impl Sent {
    fn record(&mut self, outcome: Result<u64, DropCause>) {
        match outcome {
            Ok(step) => {
                self.queued += 1;
                self.received_step = Some(step);
            }
            Err(cause) => *self.dropped.entry(cause).or_default() += 1,
        }
    }

    /// Messages dropped for `cause`.
    pub fn dropped(&self, cause: DropCause) -> u64 {
        self.dropped.get(&cause).copied().unwrap_or(0)
    }

    /// All messages of this send.
    pub fn total(&self) -> u64 {
        self.queued + self.dropped.values().sum::<u64>()
    }
}

impl<T: Clone> CommsModel<T> {
    pub fn new(system: SystemParams, capacity: usize, rng: SimRng) -> Self {
        Self {
            system,
            robots: HashMap::new(),
            pairs: HashMap::new(),
            capacity,
            rng,
            seq: 0,
            stats: CommsStats::default(),
            incoming_off: 0,
            params_dirty: false,
        }
    }

    /// Registers a robot with its communication type.
    pub fn register(&mut self, name: &str, kind: CommType) -> Result<(), CommsError> {
        if self.robots.contains_key(name) {
            self.stats.errors += 1;
            return Err(CommsError::AlreadyRegistered(name.to_string()));
        }
        let record =
            RobotRecord { params: RobotParams::new(kind), inbox: BTreeMap::new(), stats: CommsStats::default() };
        self.robots.insert(name.to_string(), record);
        self.params_dirty = true;
        Ok(())
    }

    /// Unregisters a robot; what was still queued for it is dropped as sent to an unknown robot.
    pub fn unregister(&mut self, name: &str) -> Result<(), CommsError> {
        let Some(record) = self.robots.remove(name) else {
            self.stats.errors += 1;
            return Err(CommsError::UnknownRobot(name.to_string()));
        };
        for _ in record.inbox.values() {
            self.stats.in_flight -= 1;
            self.stats.drop(DropCause::UnknownRobot);
        }
        self.pairs.retain(|(a, b), _| a != name && b != name);
        self.params_dirty = true;
        Ok(())
    }

    pub fn robot(&self, name: &str) -> Option<&RobotRecord<T>> {
        self.robots.get(name)
    }

    pub fn robot_params_mut(&mut self, name: &str) -> Option<&mut RobotParams> {
        self.params_dirty = true;
        self.robots.get_mut(name).map(|r| &mut r.params)
    }

    pub fn set_pair(&mut self, sender: &str, receiver: &str, params: PairParams) {
        self.pairs.insert((sender.to_string(), receiver.to_string()), params);
    }

    /// Every pair's parameters, sorted by sender and receiver.
    pub fn pairs(&self) -> Vec<(String, String, PairParams)> {
        let mut v: Vec<_> = self.pairs.iter().map(|((a, b), p)| (a.clone(), b.clone(), *p)).collect();
        v.sort_by(|x, y| (&x.0, &x.1).cmp(&(&y.0, &y.1)));
        v
    }

    /// Whether the pair parameters are exactly `list` (as [`CommsModel::pairs`] gives them).
    pub fn pairs_are(&self, list: &[(String, String, PairParams)]) -> bool {
        self.pairs.len() == list.len()
            && list.iter().all(|(a, b, p)| self.pairs.get(&(a.clone(), b.clone())) == Some(p))
    }

    /// Replaces every pair's parameters (a recorded change made from outside).
    pub fn replace_pairs(&mut self, pairs: &[(String, String, PairParams)]) {
        self.pairs = pairs.iter().map(|(a, b, p)| ((a.clone(), b.clone()), *p)).collect();
    }

    pub fn pair(&self, sender: &str, receiver: &str) -> Option<&PairParams> {
        self.pairs.get(&(sender.to_string(), receiver.to_string()))
    }

    /// The effective link from `sender` to `receiver`, if both are registered.
    pub fn link(&self, sender: &str, receiver: &str) -> Option<EffectiveLink> {
        let (s, r) = (self.robots.get(sender)?, self.robots.get(receiver)?);
        Some(effective_link(&self.system, &s.params, &r.params, self.pair(sender, receiver)))
    }

    /// Sends `content` at `step`, checking in the order of seed 000: the system link, then the
    /// sender (its ability for this kind of message, its outgoing link), then each receiver
    /// (links, range, delivery probability, room in its queue).
    ///
    /// A broadcast goes to every other registered robot. `candidates` are the robots the caller's
    /// spatial index found within the sender's widest range (any others are out of range, or
    /// have their link off): each is decided on its own, with its own loss draw, and so is every
    /// robot with pair parameters from this sender; the rest are counted in bulk. `distance`
    /// gives the distance between two robots at send time.
    pub fn send(
        &mut self,
        sender: &str,
        target: Target,
        content: T,
        step: u64,
        candidates: &[String],
        distance: impl Fn(&str, &str) -> Option<f32>,
    ) -> Sent {
        let mut sent = Sent::default();
        let Some(from) = self.robots.get(sender) else {
            self.stats.errors += 1;
            self.settle_drops(sender, DropCause::UnknownRobot, 1, &mut sent);
            return sent;
        };
        let params = from.params;
        let broadcast = target == Target::Broadcast;
        // How many messages this send is: one, or one per other registered robot.
        let count = if broadcast { self.robots.len() as u64 - 1 } else { 1 };
        let able = if broadcast { params.kind.broadcast } else { params.kind.point_to_point };
        // The system link first, then the sender's ability, then its outgoing link.
        let sender_cause = if !self.system.link {
            Some(DropCause::LinkOff)
        } else if !able {
            Some(DropCause::NoAbility)
        } else if !params.outgoing {
            Some(DropCause::LinkOff)
        } else {
            None
        };
        if let Some(cause) = sender_cause {
            self.settle_drops(sender, cause, count, &mut sent);
            return sent;
        }
        let Target::Robot(receiver) = target else {
            // Broadcast: the candidates (in the caller's order) and the receivers with pair
            // parameters (in name order) one by one, the rest in bulk.
            let mut pair_receivers: Vec<&String> =
                self.pairs.keys().filter(|(a, b)| a == sender && b != sender).map(|(_, b)| b).collect();
            pair_receivers.sort_unstable();
            let mut order: Vec<String> = Vec::with_capacity(candidates.len() + pair_receivers.len());
            let mut taken: HashSet<&str> = HashSet::with_capacity(candidates.len() + pair_receivers.len());
            for r in candidates.iter().chain(pair_receivers) {
                if r != sender && self.robots.contains_key(r) && taken.insert(r.as_str()) {
                    order.push(r.clone());
                }
            }
            for r in &order {
                let outcome = self.send_one(sender, r, true, content.clone(), step, &distance);
                sent.record(outcome);
            }
            let rest = count - order.len() as u64;
            if rest > 0 {
                self.refresh_incoming_off();
                let off_decided =
                    order.iter().filter(|r| self.robots.get(r.as_str()).is_some_and(|r| !r.params.incoming)).count();
                let off = (self.incoming_off - usize::from(!params.incoming) - off_decided) as u64;
                self.settle_drops(sender, DropCause::LinkOff, off.min(rest), &mut sent);
                self.settle_drops(sender, DropCause::OutOfRange, rest - off.min(rest), &mut sent);
            }
            return sent;
        };
        let outcome = self.send_one(sender, &receiver, false, content, step, &distance);
        sent.record(outcome);
        sent
    }

    /// Recounts the robots whose incoming link is off after their parameters may have changed.
    fn refresh_incoming_off(&mut self) {
        if self.params_dirty {
            self.incoming_off = self.robots.values().filter(|r| !r.params.incoming).count();
            self.params_dirty = false;
        }
    }

    fn settle_drops(&mut self, sender: &str, cause: DropCause, n: u64, sent: &mut Sent) {
        if n == 0 {
            return;
        }
        self.stats.sent += n;
        *self.stats.dropped.entry(cause).or_default() += n;
        if let Some(s) = self.robots.get_mut(sender) {
            s.stats.sent += n;
            *s.stats.dropped.entry(cause).or_default() += n;
        }
        *sent.dropped.entry(cause).or_default() += n;
    }

    fn settle_drop(&mut self, sender: &str, cause: DropCause) -> Result<u64, DropCause> {
        let mut sent = Sent::default();
        self.settle_drops(sender, cause, 1, &mut sent);
        Err(cause)
    }

    fn send_one(
        &mut self,
        sender: &str,
        receiver: &str,
        broadcast: bool,
        content: T,
        step: u64,
        distance: &impl Fn(&str, &str) -> Option<f32>,
    ) -> Result<u64, DropCause> {
        let Some(link) = self.link(sender, receiver) else {
            self.stats.errors += 1;
            return self.settle_drop(sender, DropCause::UnknownRobot);
        };
        if !link.up {
            return self.settle_drop(sender, DropCause::LinkOff);
        }
        if let Some(range) = link.range
            && distance(sender, receiver).is_none_or(|d| d > range)
        {
            return self.settle_drop(sender, DropCause::OutOfRange);
        }
        // One draw per message, always, so the stream does not depend on the probability.
        let draw: f32 = self.rng.random();
        if draw >= link.probability {
            return self.settle_drop(sender, DropCause::Lost);
        }
        let capacity = self.capacity;
        let record = self.robots.get_mut(receiver).expect("checked by link()");
        if record.inbox.len() >= capacity {
            return self.settle_drop(sender, DropCause::InboxFull);
        }
        self.seq += 1;
        let received_step = step + u64::from(link.delay);
        let message = Message {
            sender: sender.to_string(),
            receiver: (!broadcast).then(|| receiver.to_string()),
            content,
            sent_step: step,
            received_step,
            seq: self.seq,
        };
        record.inbox.insert((received_step, self.seq), message);
        self.stats.sent += 1;
        self.stats.in_flight += 1;
        if let Some(s) = self.robots.get_mut(sender) {
            s.stats.sent += 1;
        }
        Ok(received_step)
    }

    /// Takes every message for `robot` whose receive step has come, in (receive step, sending
    /// order) order.
    pub fn get_messages(&mut self, robot: &str, step: u64) -> Result<Vec<Message<T>>, CommsError> {
        let Some(record) = self.robots.get_mut(robot) else {
            self.stats.errors += 1;
            return Err(CommsError::UnknownRobot(robot.to_string()));
        };
        let later = record.inbox.split_off(&(step + 1, 0));
        let due = std::mem::replace(&mut record.inbox, later);
        let messages: Vec<Message<T>> = due.into_values().collect();
        for m in &messages {
            let latency = m.received_step - m.sent_step;
            record.stats.delivered += 1;
            self.stats.delivered += 1;
            self.stats.in_flight -= 1;
            self.stats.latency_sum += latency;
            self.stats.latency_max = self.stats.latency_max.max(latency);
        }
        Ok(messages)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::rng::stream;

    const BOTH: CommType = CommType { broadcast: true, point_to_point: true };

    fn model(names: &[&str]) -> CommsModel<&'static str> {
        let mut m = CommsModel::new(SystemParams::default(), 8, stream(1, "comms", 0));
        for n in names {
            m.register(n, BOTH).unwrap();
        }
        m
    }

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    fn near(_: &str, _: &str) -> Option<f32> {
        Some(1.0)
    }

    fn identity_holds<T: Clone>(m: &CommsModel<T>) -> bool {
        m.stats.sent == m.stats.delivered + m.stats.in_flight + m.stats.dropped_total()
    }

    #[test]
    fn each_combination_rule() {
        let sys = SystemParams { link: true, range: Some(10.0), delay: 2, probability: 0.9 };
        let mut s = RobotParams::new(BOTH);
        s.range = Some(4.0);
        s.delay = 3;
        s.probability = 0.5;
        let r = RobotParams::new(BOTH);
        let l = effective_link(&sys, &s, &r, None);
        assert_eq!(l, EffectiveLink { up: true, range: Some(4.0), delay: 5, probability: 0.45 });
        let pair = PairParams { link: None, range: Some(2.0), delay: Some(1), probability: Some(0.5) };
        let l = effective_link(&sys, &s, &r, Some(&pair));
        assert_eq!(l, EffectiveLink { up: true, range: Some(2.0), delay: 1, probability: 0.225 });
        let mut off = r;
        off.incoming = false;
        assert!(!effective_link(&sys, &s, &off, None).up);
        assert!(!effective_link(&sys, &s, &r, Some(&PairParams { link: Some(false), ..default_pair() })).up);
        let unlimited = effective_link(&SystemParams::default(), &RobotParams::new(BOTH), &r, None);
        assert_eq!(unlimited.range, None);
    }

    fn default_pair() -> PairParams {
        PairParams::default()
    }

    #[test]
    fn queue_order_by_receive_step_ties_in_sending_order() {
        let mut m = model(&["a", "b", "c"]);
        m.set_pair("a", "c", PairParams { delay: Some(3), ..default_pair() });
        for (from, what, step) in [("a", "late", 0), ("b", "first", 2), ("a", "tie-a", 0)] {
            assert_eq!(m.send(from, Target::Robot("c".into()), what, step, &[], near).queued, 1);
        }
        let got: Vec<&str> = m.get_messages("c", 10).unwrap().into_iter().map(|m| m.content).collect();
        // "first" arrives at step 2; "late" and "tie-a" both at 3, in sending order.
        assert_eq!(got, vec!["first", "late", "tie-a"]);
        assert!(m.get_messages("c", 10).unwrap().is_empty(), "removed once delivered");
    }

    #[test]
    fn delay_holds_messages_until_their_step() {
        let mut m = model(&["a", "b"]);
        m.system.delay = 4;
        assert_eq!(m.send("a", Target::Robot("b".into()), "x", 10, &[], near).received_step, Some(14));
        assert!(m.get_messages("b", 13).unwrap().is_empty());
        let got = m.get_messages("b", 20).unwrap();
        assert_eq!((got.len(), got[0].received_step), (1, 14));
        assert_eq!((m.stats.latency_max, m.stats.mean_latency()), (4, 4.0));
    }

    #[test]
    fn ten_thousand_sends_at_probability_0_7_deliver_70_percent() {
        let mut m = model(&["a", "b"]);
        m.capacity = 20_000;
        m.system.probability = 0.7;
        for step in 0..10_000 {
            m.send("a", Target::Robot("b".into()), "x", step, &[], near);
        }
        let n = m.get_messages("b", 10_000).unwrap().len() as f64;
        assert!((n / 10_000.0 - 0.7).abs() <= 0.02, "{n}");
        assert_eq!(m.stats.dropped[&DropCause::Lost] as f64 + n, 10_000.0);
    }

    #[test]
    fn broadcast_excludes_the_sender_and_respects_range() {
        let mut m = model(&["a", "b", "c", "d"]);
        m.system.range = Some(5.0);
        let dist = |_: &str, r: &str| Some(if r == "d" { 9.0 } else { 2.0 });
        let out = m.send("a", Target::Broadcast, "hello", 0, &names(&["a", "b", "c", "d"]), dist);
        assert_eq!((out.queued, out.dropped(DropCause::OutOfRange), out.total()), (2, 1, 3));
        assert!(m.get_messages("a", 0).unwrap().is_empty());
        let got = m.get_messages("b", 0).unwrap();
        assert_eq!((got[0].receiver.clone(), got[0].sender.as_str()), (None, "a"));
        assert_eq!(m.get_messages("c", 0).unwrap().len(), 1);
        assert!(m.get_messages("d", 0).unwrap().is_empty());
    }

    #[test]
    fn abilities_are_enforced() {
        let mut m = model(&["b"]);
        m.register("shy", CommType { broadcast: false, point_to_point: true }).unwrap();
        m.register("loud", CommType { broadcast: true, point_to_point: false }).unwrap();
        // A broadcast is one message for every other registered robot: b and the other robot.
        assert_eq!(m.send("shy", Target::Broadcast, "x", 0, &names(&["b"]), near).dropped(DropCause::NoAbility), 2);
        assert_eq!(m.send("loud", Target::Robot("b".into()), "x", 0, &[], near).dropped(DropCause::NoAbility), 1);
        assert_eq!(m.send("shy", Target::Robot("b".into()), "x", 0, &[], near).queued, 1);
        // Everyone but b is beyond the spatial index's reach: out of range, counted all the same.
        let out = m.send("loud", Target::Broadcast, "x", 0, &names(&["b"]), near);
        assert_eq!((out.queued, out.dropped(DropCause::OutOfRange)), (1, 1));
    }

    #[test]
    fn unknown_robots_and_double_registration_are_errors_and_counted() {
        let mut m = model(&["a"]);
        assert_eq!(m.register("a", BOTH), Err(CommsError::AlreadyRegistered("a".into())));
        assert_eq!(m.send("ghost", Target::Robot("a".into()), "x", 0, &[], near).dropped(DropCause::UnknownRobot), 1);
        assert_eq!(m.send("a", Target::Robot("ghost".into()), "x", 0, &[], near).dropped(DropCause::UnknownRobot), 1);
        assert!(m.get_messages("ghost", 0).is_err());
        assert_eq!(m.stats.errors, 4);
        assert!(identity_holds(&m));
    }

    #[test]
    fn overflow_is_counted() {
        let mut m = model(&["a", "b"]);
        m.capacity = 2;
        let out: Vec<_> = (0..3).map(|i| m.send("a", Target::Robot("b".into()), "x", i, &[], near).queued).collect();
        assert_eq!(out, vec![1, 1, 0]);
        assert_eq!(m.stats.dropped[&DropCause::InboxFull], 1);
    }

    #[test]
    fn the_accounting_identity_holds_through_a_random_run() {
        let robots = ["a", "b", "c", "d", "e"];
        let mut m = model(&robots);
        m.capacity = 5;
        m.system.probability = 0.8;
        m.system.range = Some(6.0);
        let mut rng = stream(9, "test", 0);
        for step in 0..2_000u64 {
            let s = robots[rng.random_range(0..5)];
            m.system.delay = rng.random_range(0..4);
            if rng.random_bool(0.3) {
                m.send(s, Target::Broadcast, "b", step, &names(&robots), |_, _| Some(5.0));
            } else {
                let r = robots[rng.random_range(0..5)];
                m.send(s, Target::Robot(r.into()), "p", step, &[], |_, _| Some(if r == "e" { 7.0 } else { 1.0 }));
            }
            if rng.random_bool(0.5) {
                let _ = m.get_messages(robots[rng.random_range(0..5)], step);
            }
            if step == 1500 {
                m.unregister("d").unwrap();
            }
            assert!(identity_holds(&m), "step {step}: {:?}", m.stats);
        }
        assert!(m.stats.dropped.len() >= 4, "{:?}", m.stats.dropped);
    }

    #[test]
    fn every_registered_receiver_of_a_broadcast_is_queued_or_counted_with_its_cause() {
        let robots = ["a", "b", "c", "d", "e", "f"];
        let mut m = model(&robots);
        m.system.range = Some(3.0);
        m.robot_params_mut("e").unwrap().incoming = false;
        m.set_pair("a", "f", PairParams { link: Some(false), ..default_pair() });
        let dist = |_: &str, r: &str| Some(if r == "b" { 1.0 } else { 10.0 });
        // The spatial index found b only; c and d are far, e hears nothing, f not from a.
        let out = m.send("a", Target::Broadcast, "x", 0, &names(&["b"]), dist);
        assert_eq!(out.queued, 1);
        assert_eq!(out.dropped(DropCause::OutOfRange), 2);
        assert_eq!(out.dropped(DropCause::LinkOff), 2);
        assert_eq!(out.total(), 5);
        assert_eq!(m.robot("a").unwrap().stats.sent, 5);
        assert!(identity_holds(&m));
    }

    #[test]
    fn checks_follow_seed_000_system_link_then_sender_then_receivers() {
        // With the system link off, a robot without the ability is counted as link off.
        let mut m = model(&["b", "c"]);
        m.register("mute", CommType { broadcast: false, point_to_point: false }).unwrap();
        m.system.link = false;
        let out = m.send("mute", Target::Broadcast, "x", 0, &names(&["b", "c"]), near);
        assert_eq!((out.dropped(DropCause::LinkOff), out.dropped(DropCause::NoAbility)), (2, 0));
        // With it on, the ability comes before the sender's outgoing link.
        m.system.link = true;
        m.robot_params_mut("mute").unwrap().outgoing = false;
        let out = m.send("mute", Target::Robot("b".into()), "x", 0, &[], near);
        assert_eq!(out.dropped(DropCause::NoAbility), 1);
        // A receiver out of range whose link is off is counted as link off: links come first.
        m.robot_params_mut("c").unwrap().incoming = false;
        m.system.range = Some(1.0);
        let out = m.send("b", Target::Robot("c".into()), "x", 0, &[], |_, _| Some(5.0));
        assert_eq!(out.dropped(DropCause::LinkOff), 1);
    }

    #[test]
    fn a_pair_combines_with_the_other_levels_and_its_delay_replaces_theirs() {
        let mut m = model(&["a", "b"]);
        m.system = SystemParams { link: true, range: Some(5.0), delay: 2, probability: 1.0 };
        // A wider pair range does not reach further than the system's.
        m.set_pair("a", "b", PairParams { range: Some(50.0), delay: Some(7), ..default_pair() });
        let out = m.send("a", Target::Robot("b".into()), "x", 0, &[], |_, _| Some(8.0));
        assert_eq!(out.dropped(DropCause::OutOfRange), 1);
        let out = m.send("a", Target::Robot("b".into()), "x", 0, &[], |_, _| Some(4.0));
        assert_eq!(out.received_step, Some(7));
    }

    #[test]
    fn same_seed_same_deliveries() {
        let run = |seed| {
            let mut m: CommsModel<u32> =
                CommsModel::new(SystemParams { probability: 0.5, ..Default::default() }, 100, stream(seed, "comms", 0));
            for n in ["a", "b"] {
                m.register(n, BOTH).unwrap();
            }
            (0..200)
                .map(|i| m.send("a", Target::Robot("b".into()), i, i as u64, &[], near).queued == 1)
                .collect::<Vec<_>>()
        };
        assert_eq!(run(3), run(3));
        assert_ne!(run(3), run(4));
    }
}
