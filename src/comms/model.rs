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
//!
//! This file is the seed's model: its records, queues, parameter levels and the checks in the
//! seed's order ([`CommsModel::decide`] for a send, [`arrival`] for each of its messages).
//! How a step's sends are applied together fast, on several threads, is the delivery planner's,
//! in [`super::delivery`]; it decides nothing the model does not.
//!
//! Robots are kept by [`RobotId`], a slot given at registration, so the hot path (a broadcast
//! decided for a dozen neighbours, thousands of times a step) does no name lookups and no
//! per-message allocation: the content is shared by every receiver of a send and names are
//! shared strings. A loss draw depends only on the scene seed, the step, the sender, which of
//! the sender's sends of that step it is, and the receiver ([`loss_draw`]), never on the thread
//! or the order the receivers were served in.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::sim::rng::mix64;

/// A registered robot's slot in the model. Slots are not reused after unregistration.
pub type RobotId = u32;

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
    SenderLink::new(system, sender).to(receiver.incoming, pair)
}

/// The system's and a sender's part of [`effective_link`], worked out once for all the
/// receivers of a send: of a receiver's own parameters only its incoming link counts.
#[derive(Debug, Clone, Copy, PartialEq)]
struct SenderLink {
    up: bool,
    range: Option<f32>,
    delay: u32,
    probability: f32,
}

/// The narrower of two ranges (`None` is unlimited).
fn narrower(a: Option<f32>, b: Option<f32>) -> Option<f32> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

impl SenderLink {
    fn new(system: &SystemParams, sender: &RobotParams) -> Self {
        Self {
            up: system.link && sender.outgoing,
            range: narrower(system.range, sender.range),
            delay: system.delay + sender.delay,
            probability: system.probability * sender.probability,
        }
    }

    /// The link to a receiver whose incoming link is `incoming`, with this pair's parameters.
    #[inline]
    fn to(&self, incoming: bool, pair: Option<&PairParams>) -> EffectiveLink {
        let pair = pair.copied().unwrap_or_default();
        EffectiveLink {
            up: self.up && incoming && pair.link.unwrap_or(true),
            range: narrower(self.range, pair.range),
            delay: pair.delay.unwrap_or(self.delay),
            probability: self.probability * pair.probability.unwrap_or(1.0),
        }
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

/// Messages dropped, by cause.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Drops([u64; 6]);

impl Drops {
    pub fn get(&self, cause: DropCause) -> u64 {
        self.0[cause as usize]
    }

    pub fn add(&mut self, cause: DropCause, n: u64) {
        self.0[cause as usize] += n;
    }

    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }

    /// The causes with at least one drop, in [`DropCause::ALL`] order.
    pub fn iter(&self) -> impl Iterator<Item = (DropCause, u64)> + '_ {
        DropCause::ALL.into_iter().map(|c| (c, self.get(c))).filter(|(_, n)| *n > 0)
    }

    /// How many causes have at least one drop.
    pub fn causes(&self) -> usize {
        self.iter().count()
    }
}

/// A message on its way, or delivered. Its sender and content are one letter shared by every
/// receiver of one send (one reference count to change per receiver, not two).
#[derive(Debug, Clone, PartialEq)]
pub struct Message<T> {
    pub(super) letter: Arc<Letter<T>>,
    pub sent_step: u64,
    pub received_step: u64,
    /// Sending order, for ties: the send's place among all sends (every receiver of a send
    /// gets the same number).
    pub seq: u64,
}

/// What every receiver of one send gets: who sent it and what it says.
#[derive(Debug, PartialEq)]
pub(super) struct Letter<T> {
    pub(super) sender: Arc<str>,
    /// `None` for a broadcast (a point-to-point send has one receiver).
    pub(super) receiver: Option<Arc<str>>,
    pub(super) content: T,
}

impl<T> Message<T> {
    /// The sender's name.
    pub fn sender(&self) -> &Arc<str> {
        &self.letter.sender
    }

    /// The receiver's name, or `None` for a broadcast.
    pub fn receiver(&self) -> Option<&Arc<str>> {
        self.letter.receiver.as_ref()
    }

    /// What the message says.
    pub fn content(&self) -> &T {
        &self.letter.content
    }

    /// Whether `other` came from the same send (its receivers share one letter).
    pub fn same_send(&self, other: &Message<T>) -> bool {
        Arc::ptr_eq(&self.letter, &other.letter)
    }
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
    pub dropped: Drops,
    /// Sum and maximum of delivered messages' latency, in steps.
    pub latency_sum: u64,
    pub latency_max: u64,
    /// Interface errors (double registration, unknown robots).
    pub errors: u64,
}

impl CommsStats {
    pub fn dropped_total(&self) -> u64 {
        self.dropped.total()
    }

    pub fn delivery_ratio(&self) -> f64 {
        let settled = self.delivered + self.dropped_total();
        if settled == 0 { 1.0 } else { self.delivered as f64 / settled as f64 }
    }

    pub fn mean_latency(&self) -> f64 {
        if self.delivered == 0 { 0.0 } else { self.latency_sum as f64 / self.delivered as f64 }
    }
}

/// A registered robot: its name, parameters and priority queue.
#[derive(Debug, Clone)]
pub struct RobotRecord<T> {
    pub name: Arc<str>,
    pub params: RobotParams,
    /// Ordered by (received step, sending order).
    pub(super) inbox: Vec<Message<T>>,
    /// What [`CommsModel::hand_out_all`] found due, until [`CommsModel::swap_ready`] takes it.
    pub(super) ready: Vec<Message<T>>,
    pub stats: CommsStats,
}

impl<T> RobotRecord<T> {
    /// Pending messages, soonest first.
    pub fn pending(&self) -> impl Iterator<Item = &Message<T>> {
        self.inbox.iter()
    }

    /// Queues `message`, after every message due by its receive step (later sends usually
    /// arrive last: then it is appended).
    pub(super) fn enqueue(&mut self, message: Message<T>) {
        let at = message.received_step;
        if self.inbox.last().is_none_or(|m| m.received_step <= at) {
            self.inbox.push(message);
        } else {
            let i = self.inbox.partition_point(|m| m.received_step <= at);
            self.inbox.insert(i, message);
        }
    }
}

/// Where a message goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    Robot(String),
    Broadcast,
}

/// Where a message goes, by slot: `Robot(None)` names a robot that is not registered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum To {
    Robot(Option<RobotId>),
    Broadcast,
}

/// What became of one send: the messages queued (with the latest receive step among them) and
/// those dropped, by cause. A point-to-point send is one message; a broadcast one per other
/// registered robot.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sent {
    pub queued: u64,
    pub received_step: Option<u64>,
    pub dropped: Drops,
}

impl Sent {
    /// Messages dropped for `cause`.
    pub fn dropped(&self, cause: DropCause) -> u64 {
        self.dropped.get(cause)
    }

    /// All messages of this send.
    pub fn total(&self) -> u64 {
        self.queued + self.dropped.total()
    }
}

/// A receiver in reach of a send: when its message would arrive, and the probability that it
/// does.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reach {
    pub receiver: RobotId,
    pub at: u64,
    pub probability: f32,
}

/// What [`CommsModel::decide`] made of a send, besides its receivers in reach: its sender's
/// record (when registered), the messages dropped by cause, and the errors (unknown robots).
pub struct Decision<'a, T> {
    pub from: Option<&'a RobotRecord<T>>,
    pub drops: Drops,
    pub errors: u64,
}

/// A robot a broadcast may reach, as the caller's spatial index found it: with its distance
/// from the sender when the index measured it (exactly as `distance` would give it), else
/// `None` and [`CommsModel::plan`] asks `distance`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Nearby {
    pub id: RobotId,
    pub distance: Option<f32>,
}

impl Nearby {
    /// A candidate whose distance is asked of `distance` when it matters.
    pub fn unmeasured(id: RobotId) -> Self {
        Self { id, distance: None }
    }
}

/// Every change to a model's robots or pairs takes a new number from here, so a cache built
/// for one model (a map from the world's robots to slots) knows when it is stale.
static GENERATIONS: AtomicU64 = AtomicU64::new(1);

/// The communication model.
#[derive(Debug, Clone)]
pub struct CommsModel<T> {
    pub system: SystemParams,
    pub(super) slots: Vec<Option<RobotRecord<T>>>,
    ids: HashMap<Arc<str>, RobotId>,
    pairs: HashMap<(String, String), PairParams>,
    /// `pairs` by slot, and each sender's pair receivers in name order; valid unless
    /// `pairs_dirty`.
    pair_ids: HashMap<(RobotId, RobotId), PairParams>,
    pair_receivers: HashMap<RobotId, Vec<RobotId>>,
    pairs_dirty: bool,
    /// Messages a robot's queue may hold.
    pub capacity: usize,
    /// Seeds the loss draws ([`loss_draw`]).
    pub(super) draw_seed: u64,
    /// Each slot's last sending step and how many sends it made in it (which send of its step a
    /// send is picks its loss draws).
    pub(super) sends_at: Vec<(u64, u32)>,
    pub(super) seq: u64,
    /// Room kept between steps for [`CommsModel::apply_all`] (the delivery planner's): which of a step's messages
    /// failed, one bit each in sending order.
    pub(super) failed_bits: Vec<u64>,
    pub stats: CommsStats,
    /// Registered robots whose incoming link is off, valid unless `params_dirty`.
    incoming_off: usize,
    /// Each slot's incoming link (`None`: no robot registered in it), valid unless
    /// `params_dirty`: a broadcast's candidates are decided from this list rather than from
    /// their records (a cache miss each).
    listening: Vec<Option<bool>>,
    params_dirty: bool,
    generation: u64,
}

impl<T> CommsModel<T> {
    /// An empty model; `draw_seed` seeds the loss draws (a scene's is
    /// `stream_seed(seed, "comms", 0)`).
    pub fn new(system: SystemParams, capacity: usize, draw_seed: u64) -> Self {
        Self {
            system,
            slots: Vec::new(),
            ids: HashMap::new(),
            pairs: HashMap::new(),
            pair_ids: HashMap::new(),
            pair_receivers: HashMap::new(),
            pairs_dirty: false,
            capacity,
            draw_seed,
            sends_at: Vec::new(),
            seq: 0,
            failed_bits: Vec::new(),
            stats: CommsStats::default(),
            incoming_off: 0,
            listening: Vec::new(),
            params_dirty: false,
            generation: GENERATIONS.fetch_add(1, Ordering::Relaxed),
        }
    }

    /// Changes whenever robots register or unregister (unique across models).
    pub fn generation(&self) -> u64 {
        self.generation
    }

    fn changed(&mut self) {
        self.generation = GENERATIONS.fetch_add(1, Ordering::Relaxed);
        self.params_dirty = true;
        self.pairs_dirty = true;
    }

    /// Registers a robot with its communication type.
    pub fn register(&mut self, name: &str, kind: CommType) -> Result<RobotId, CommsError> {
        if self.ids.contains_key(name) {
            self.stats.errors += 1;
            return Err(CommsError::AlreadyRegistered(name.to_string()));
        }
        let id = self.slots.len() as RobotId;
        let name: Arc<str> = Arc::from(name);
        self.slots.push(Some(RobotRecord {
            name: name.clone(),
            params: RobotParams::new(kind),
            inbox: Vec::new(),
            ready: Vec::new(),
            stats: CommsStats::default(),
        }));
        self.sends_at.push((u64::MAX, 0));
        self.ids.insert(name, id);
        self.changed();
        Ok(id)
    }

    /// Unregisters a robot; what was still queued for it is dropped as sent to an unknown robot.
    pub fn unregister(&mut self, name: &str) -> Result<(), CommsError> {
        let Some(id) = self.ids.remove(name) else {
            self.stats.errors += 1;
            return Err(CommsError::UnknownRobot(name.to_string()));
        };
        let record = self.slots[id as usize].take().expect("a registered robot has a slot");
        // Messages handed out but not yet taken were delivered; those queued were not.
        let queued = record.inbox.len() as u64;
        self.stats.in_flight -= queued;
        self.stats.dropped.add(DropCause::UnknownRobot, queued);
        self.pairs.retain(|(a, b), _| a != name && b != name);
        self.changed();
        Ok(())
    }

    /// The slot of a registered robot.
    pub fn id(&self, name: &str) -> Option<RobotId> {
        self.ids.get(name).copied()
    }

    /// Registered robots.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    pub fn robot(&self, name: &str) -> Option<&RobotRecord<T>> {
        self.record(self.id(name)?)
    }

    pub fn record(&self, id: RobotId) -> Option<&RobotRecord<T>> {
        self.slots.get(id as usize)?.as_ref()
    }

    pub fn robot_params_mut(&mut self, name: &str) -> Option<&mut RobotParams> {
        self.params_dirty = true;
        let id = self.id(name)?;
        self.slots[id as usize].as_mut().map(|r| &mut r.params)
    }

    pub fn set_pair(&mut self, sender: &str, receiver: &str, params: PairParams) {
        self.pairs.insert((sender.to_string(), receiver.to_string()), params);
        self.pairs_dirty = true;
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
        self.pairs_dirty = true;
    }

    pub fn pair(&self, sender: &str, receiver: &str) -> Option<&PairParams> {
        self.pairs.get(&(sender.to_string(), receiver.to_string()))
    }

    /// The effective link from `sender` to `receiver`, if both are registered.
    pub fn link(&self, sender: &str, receiver: &str) -> Option<EffectiveLink> {
        let (s, r) = (self.robot(sender)?, self.robot(receiver)?);
        Some(effective_link(&self.system, &s.params, &r.params, self.pair(sender, receiver)))
    }

    /// Brings the derived tables up to date after parameters, pairs or robots changed; call
    /// before [`CommsModel::plan`] ([`CommsModel::send`] does).
    pub fn prepare(&mut self) {
        if self.params_dirty {
            self.listening.clear();
            self.listening.extend(self.slots.iter().map(|r| r.as_ref().map(|r| r.params.incoming)));
            self.incoming_off = self.listening.iter().filter(|&&l| l == Some(false)).count();
            self.params_dirty = false;
        }
        if self.pairs_dirty {
            self.pair_ids.clear();
            self.pair_receivers.clear();
            let mut pairs: Vec<(&(String, String), &PairParams)> = self.pairs.iter().collect();
            pairs.sort_by(|a, b| a.0.cmp(b.0));
            for ((a, b), p) in pairs {
                if let (Some(s), Some(r)) = (self.id(a), self.id(b)) {
                    self.pair_ids.insert((s, r), *p);
                    if s != r {
                        self.pair_receivers.entry(s).or_default().push(r);
                    }
                }
            }
            self.pairs_dirty = false;
        }
    }

    /// Decides a send at `step`, checking in the order of seed 000: the system link, then the
    /// sender (its ability for this kind of message, its outgoing link), then each receiver
    /// (links, range). Every receiver in reach goes onto `reaches` with its receive step and
    /// delivery probability (the loss draw and room in its queue come when the send is
    /// applied); the rest are counted in the decision's drops.
    ///
    /// A broadcast goes to every other registered robot. `candidates` (distinct) are the robots
    /// the caller's spatial index found within the sender's widest range (any others are out of
    /// range, or have their link off), each with its distance from the sender when the index
    /// measured it: each is decided on its own, and so is every robot with pair parameters from
    /// this sender; the rest are counted in bulk. `distance` gives the distance between two
    /// robots at send time where a candidate does not bring its own.
    pub fn decide(
        &self,
        sender: Option<RobotId>,
        to: To,
        step: u64,
        candidates: &[Nearby],
        distance: impl Fn(RobotId, RobotId) -> Option<f32>,
        reaches: &mut Vec<Reach>,
    ) -> Decision<'_, T> {
        debug_assert!(!self.params_dirty && !self.pairs_dirty, "prepare() before decide()");
        let mut decision = Decision { from: None, drops: Drops::default(), errors: 0 };
        let Some((s, from)) = sender.and_then(|s| Some((s, self.record(s)?))) else {
            decision.errors += 1;
            decision.drops.add(DropCause::UnknownRobot, 1);
            return decision;
        };
        decision.from = Some(from);
        let params = from.params;
        let broadcast = to == To::Broadcast;
        // How many messages this send is: one, or one per other registered robot.
        let count = if broadcast { self.len() as u64 - 1 } else { 1 };
        if let Some(cause) = self.sender_check(&params, broadcast) {
            decision.drops.add(cause, count);
            return decision;
        }
        let from_sender = SenderLink::new(&self.system, &params);
        let mut decide = |r: RobotId, known: Option<f32>, incoming: bool, drops: &mut Drops| {
            let link = from_sender.to(incoming, self.pair_ids.get(&(s, r)));
            let outcome = if !link.up {
                Err(DropCause::LinkOff)
            } else if link.range.is_some_and(|range| known.or_else(|| distance(s, r)).is_none_or(|d| d > range)) {
                Err(DropCause::OutOfRange)
            } else {
                Ok(Reach { receiver: r, at: step + u64::from(link.delay), probability: link.probability })
            };
            match outcome {
                Ok(reach) => reaches.push(reach),
                Err(cause) => drops.add(cause, 1),
            }
        };
        match to {
            To::Robot(receiver) => match receiver.and_then(|r| Some((r, self.record(r)?))) {
                Some((r, record)) => decide(r, None, record.params.incoming, &mut decision.drops),
                None => {
                    decision.errors += 1;
                    decision.drops.add(DropCause::UnknownRobot, 1);
                }
            },
            To::Broadcast => {
                // The candidates (in the caller's order) and the receivers with pair parameters
                // (in name order) one by one, the rest in bulk.
                let extra = self.pair_receivers.get(&s).map_or(&[][..], |v| v.as_slice());
                let (mut decided, mut off_decided) = (0u64, 0usize);
                let paired = extra.iter().filter(|&&r| !candidates.iter().any(|c| c.id == r));
                let others = candidates.iter().map(|c| (c.id, c.distance)).chain(paired.map(|&r| (r, None)));
                for (r, known) in others {
                    let Some(incoming) = self.listening.get(r as usize).copied().flatten().filter(|_| r != s) else {
                        continue;
                    };
                    decided += 1;
                    off_decided += usize::from(!incoming);
                    decide(r, known, incoming, &mut decision.drops);
                }
                let rest = count - decided;
                if rest > 0 {
                    let off = (self.incoming_off - usize::from(!params.incoming) - off_decided) as u64;
                    decision.drops.add(DropCause::LinkOff, off.min(rest));
                    decision.drops.add(DropCause::OutOfRange, rest - off.min(rest));
                }
            }
        }
        decision
    }

    /// Why a registered sender's send is dropped whole, if it is: the system link first, then
    /// the sender's ability for this kind of message, then its outgoing link.
    fn sender_check(&self, params: &RobotParams, broadcast: bool) -> Option<DropCause> {
        let able = if broadcast { params.kind.broadcast } else { params.kind.point_to_point };
        if !self.system.link {
            Some(DropCause::LinkOff)
        } else if !able {
            Some(DropCause::NoAbility)
        } else if !params.outgoing {
            Some(DropCause::LinkOff)
        } else {
            None
        }
    }

    /// Moves every message for `id` whose receive step has come into `out` (emptied first), in
    /// (receive step, sending order) order.
    pub fn take_due(&mut self, id: RobotId, step: u64, out: &mut Vec<Message<T>>) {
        let Some(record) = self.slots.get_mut(id as usize).and_then(|r| r.as_mut()) else {
            out.clear();
            return;
        };
        let handed = take_due(&mut record.inbox, &mut record.stats, step, out);
        self.delivered(handed);
    }

    pub(super) fn delivered(&mut self, handed: Handed) {
        self.stats.delivered += handed.delivered;
        self.stats.in_flight -= handed.delivered;
        self.stats.latency_sum += handed.latency_sum;
        self.stats.latency_max = self.stats.latency_max.max(handed.latency_max);
    }

    /// Takes every message for `robot` whose receive step has come, in (receive step, sending
    /// order) order.
    pub fn get_messages(&mut self, robot: &str, step: u64) -> Result<Vec<Message<T>>, CommsError> {
        let Some(id) = self.id(robot) else {
            self.stats.errors += 1;
            return Err(CommsError::UnknownRobot(robot.to_string()));
        };
        let mut out = Vec::new();
        self.take_due(id, step, &mut out);
        Ok(out)
    }
}

/// Messages handed out to their receivers, and their latencies.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Handed {
    delivered: u64,
    latency_sum: u64,
    latency_max: u64,
}

impl Handed {
    pub(super) fn add(&mut self, other: Handed) {
        self.delivered += other.delivered;
        self.latency_sum += other.latency_sum;
        self.latency_max = self.latency_max.max(other.latency_max);
    }
}

/// The key of the `nth` send of `sender` at `step` under a model's `seed`.
pub(super) fn send_key(seed: u64, step: u64, sender: RobotId, nth: u32) -> u64 {
    mix64(mix64(seed ^ mix64(step)) ^ (u64::from(sender) << 32 | u64::from(nth)))
}

/// The loss draw of the message of the send with `key` to `receiver`: uniform in [0, 1), a
/// function of the scene seed, the step, the sender, which of its sends of the step it is and
/// the receiver, so it is the same whichever thread serves the receiver and in whatever order.
pub fn loss_draw(key: u64, receiver: RobotId) -> f32 {
    // The top 24 bits: every value exactly representable, 1.0 never reached.
    (mix64(key ^ u64::from(receiver)) >> 40) as f32 * (1.0 / (1u64 << 24) as f32)
}

/// Whether a message of the send keyed `key`, in reach of `receiver` with delivery probability
/// `probability`, is queued, checked in the seed's order after the send's own: the receiver
/// still registered (`record`), the loss draw, then room in its queue of `capacity`.
pub fn arrival<T>(
    record: Option<&RobotRecord<T>>,
    probability: f32,
    key: u64,
    receiver: RobotId,
    capacity: usize,
) -> Result<(), DropCause> {
    match record {
        None => Err(DropCause::UnknownRobot),
        // Never lost at probability 1 (a draw is below 1): no draw needed, so the draw skipped
        // moves no other.
        Some(_) if probability < 1.0 && loss_draw(key, receiver) >= probability => Err(DropCause::Lost),
        Some(record) if record.inbox.len() >= capacity => Err(DropCause::InboxFull),
        Some(_) => Ok(()),
    }
}

/// Moves the messages of `inbox` due by `step` into `out` (emptied first), counting them in the
/// receiver's `stats`.
pub(super) fn take_due<T>(
    inbox: &mut Vec<Message<T>>,
    stats: &mut CommsStats,
    step: u64,
    out: &mut Vec<Message<T>>,
) -> Handed {
    out.clear();
    let due = inbox.partition_point(|m| m.received_step <= step);
    if due == inbox.len() {
        std::mem::swap(out, inbox);
    } else {
        out.extend(inbox.drain(..due));
    }
    let mut handed = Handed { delivered: out.len() as u64, ..Handed::default() };
    for m in out.iter() {
        let latency = m.received_step - m.sent_step;
        handed.latency_sum += latency;
        handed.latency_max = handed.latency_max.max(latency);
    }
    stats.delivered += handed.delivered;
    handed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::rng::stream;
    use rand::RngExt;

    /// A send by names, as the radio makes it by slots.
    fn send<T: Clone + Send + Sync>(
        m: &mut CommsModel<T>,
        sender: &str,
        target: Target,
        content: T,
        step: u64,
        candidates: &[String],
        distance: impl Fn(&str, &str) -> Option<f32>,
    ) -> Sent {
        let to = match target {
            Target::Robot(r) => To::Robot(m.id(&r)),
            Target::Broadcast => To::Broadcast,
        };
        let candidates: Vec<Nearby> = candidates.iter().filter_map(|c| m.id(c)).map(Nearby::unmeasured).collect();
        let names: Vec<Option<Arc<str>>> =
            (0..m.slots.len() as RobotId).map(|i| m.record(i).map(|r| r.name.clone())).collect();
        let dist = |a: RobotId, b: RobotId| distance(names[a as usize].as_deref()?, names[b as usize].as_deref()?);
        m.send(m.id(sender), to, content, step, &candidates, dist)
    }

    const BOTH: CommType = CommType { broadcast: true, point_to_point: true };

    fn model(names: &[&str]) -> CommsModel<&'static str> {
        let mut m = CommsModel::new(SystemParams::default(), 8, 1);
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
        identity_holds_stats(&m.stats)
    }

    fn identity_holds_stats(s: &CommsStats) -> bool {
        s.sent == s.delivered + s.in_flight + s.dropped_total()
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
            assert_eq!(send(&mut m, from, Target::Robot("c".into()), what, step, &[], near).queued, 1);
        }
        let got: Vec<&str> = m.get_messages("c", 10).unwrap().into_iter().map(|m| *m.content()).collect();
        // "first" arrives at step 2; "late" and "tie-a" both at 3, in sending order.
        assert_eq!(got, vec!["first", "late", "tie-a"]);
        assert!(m.get_messages("c", 10).unwrap().is_empty(), "removed once delivered");
    }

    #[test]
    fn delay_holds_messages_until_their_step() {
        let mut m = model(&["a", "b"]);
        m.system.delay = 4;
        assert_eq!(send(&mut m, "a", Target::Robot("b".into()), "x", 10, &[], near).received_step, Some(14));
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
            send(&mut m, "a", Target::Robot("b".into()), "x", step, &[], near);
        }
        let n = m.get_messages("b", 10_000).unwrap().len() as f64;
        assert!((n / 10_000.0 - 0.7).abs() <= 0.02, "{n}");
        assert_eq!(m.stats.dropped.get(DropCause::Lost) as f64 + n, 10_000.0);
    }

    #[test]
    fn broadcast_excludes_the_sender_and_respects_range() {
        let mut m = model(&["a", "b", "c", "d"]);
        m.system.range = Some(5.0);
        let dist = |_: &str, r: &str| Some(if r == "d" { 9.0 } else { 2.0 });
        let out = send(&mut m, "a", Target::Broadcast, "hello", 0, &names(&["a", "b", "c", "d"]), dist);
        assert_eq!((out.queued, out.dropped(DropCause::OutOfRange), out.total()), (2, 1, 3));
        assert!(m.get_messages("a", 0).unwrap().is_empty());
        let got = m.get_messages("b", 0).unwrap();
        assert_eq!((got[0].receiver().cloned(), &**got[0].sender()), (None, "a"));
        assert_eq!(m.get_messages("c", 0).unwrap().len(), 1);
        assert!(m.get_messages("d", 0).unwrap().is_empty());
    }

    /// A candidate that brings its distance is decided on it; `distance` is asked only for the
    /// others (and for a receiver with pair parameters that was no candidate).
    #[test]
    fn a_candidates_own_distance_decides_its_range() {
        let mut m = model(&["a", "b", "c", "d", "e"]);
        m.system.range = Some(5.0);
        m.set_pair("a", "e", PairParams { delay: Some(1), ..default_pair() });
        let asked = std::cell::RefCell::new(Vec::new());
        let dist = |_: RobotId, r: RobotId| {
            asked.borrow_mut().push(r);
            Some(3.0)
        };
        let (b, c, d, e) = (m.id("b").unwrap(), m.id("c").unwrap(), m.id("d").unwrap(), m.id("e").unwrap());
        // b measured in range, c measured out of range (though `distance` would say 3 m), d not
        // measured; e only by its pair.
        let near =
            [Nearby { id: b, distance: Some(4.9) }, Nearby { id: c, distance: Some(5.1) }, Nearby::unmeasured(d)];
        let out = m.send(m.id("a"), To::Broadcast, "x", 0, &near, dist);
        assert_eq!((out.queued, out.dropped(DropCause::OutOfRange), out.total()), (3, 1, 4));
        assert_eq!(*asked.borrow(), vec![d, e]);
        assert!(m.get_messages("c", 0).unwrap().is_empty());
        assert_eq!(m.get_messages("b", 0).unwrap().len(), 1);
        assert_eq!(m.get_messages("d", 0).unwrap().len(), 1);
        assert_eq!(m.get_messages("e", 1).unwrap().len(), 1);
    }

    /// A receiver's incoming link is read from the model's own list of slots, which follows
    /// every change: a link turned off after sends were made, a robot unregistered, a robot
    /// registered afterwards.
    #[test]
    fn a_broadcast_follows_receivers_turned_off_unregistered_and_registered_later() {
        let mut m = model(&["a", "b", "c"]);
        let all = names(&["a", "b", "c", "d"]);
        let out = send(&mut m, "a", Target::Broadcast, "1", 0, &all, near);
        assert_eq!((out.queued, out.total()), (2, 2));
        m.robot_params_mut("b").unwrap().incoming = false;
        let out = send(&mut m, "a", Target::Broadcast, "2", 1, &all, near);
        assert_eq!((out.queued, out.dropped(DropCause::LinkOff), out.total()), (1, 1, 2));
        m.unregister("c").unwrap();
        m.register("d", BOTH).unwrap();
        let out = send(&mut m, "a", Target::Broadcast, "3", 2, &all, near);
        assert_eq!((out.queued, out.dropped(DropCause::LinkOff), out.total()), (1, 1, 2));
        let got: Vec<&str> = m.get_messages("d", 2).unwrap().iter().map(|g| *g.content()).collect();
        assert_eq!(got, ["3"]);
        m.robot_params_mut("b").unwrap().incoming = true;
        let out = send(&mut m, "d", Target::Broadcast, "4", 3, &all, near);
        assert_eq!((out.queued, out.total()), (2, 2));
        let got: Vec<&str> = m.get_messages("b", 3).unwrap().iter().map(|g| *g.content()).collect();
        assert_eq!(got, ["1", "4"]);
        assert!(identity_holds(&m));
    }

    #[test]
    fn abilities_are_enforced() {
        let mut m = model(&["b"]);
        m.register("shy", CommType { broadcast: false, point_to_point: true }).unwrap();
        m.register("loud", CommType { broadcast: true, point_to_point: false }).unwrap();
        // A broadcast is one message for every other registered robot: b and the other robot.
        assert_eq!(
            send(&mut m, "shy", Target::Broadcast, "x", 0, &names(&["b"]), near).dropped(DropCause::NoAbility),
            2
        );
        assert_eq!(send(&mut m, "loud", Target::Robot("b".into()), "x", 0, &[], near).dropped(DropCause::NoAbility), 1);
        assert_eq!(send(&mut m, "shy", Target::Robot("b".into()), "x", 0, &[], near).queued, 1);
        // Everyone but b is beyond the spatial index's reach: out of range, counted all the same.
        let out = send(&mut m, "loud", Target::Broadcast, "x", 0, &names(&["b"]), near);
        assert_eq!((out.queued, out.dropped(DropCause::OutOfRange)), (1, 1));
    }

    #[test]
    fn unknown_robots_and_double_registration_are_errors_and_counted() {
        let mut m = model(&["a"]);
        assert_eq!(m.register("a", BOTH), Err(CommsError::AlreadyRegistered("a".into())));
        assert_eq!(
            send(&mut m, "ghost", Target::Robot("a".into()), "x", 0, &[], near).dropped(DropCause::UnknownRobot),
            1
        );
        assert_eq!(
            send(&mut m, "a", Target::Robot("ghost".into()), "x", 0, &[], near).dropped(DropCause::UnknownRobot),
            1
        );
        assert!(m.get_messages("ghost", 0).is_err());
        assert_eq!(m.stats.errors, 4);
        assert!(identity_holds(&m));
    }

    #[test]
    fn overflow_is_counted() {
        let mut m = model(&["a", "b"]);
        m.capacity = 2;
        let out: Vec<_> =
            (0..3).map(|i| send(&mut m, "a", Target::Robot("b".into()), "x", i, &[], near).queued).collect();
        assert_eq!(out, vec![1, 1, 0]);
        assert_eq!(m.stats.dropped.get(DropCause::InboxFull), 1);
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
                send(&mut m, s, Target::Broadcast, "b", step, &names(&robots), |_, _| Some(5.0));
            } else {
                let r = robots[rng.random_range(0..5)];
                send(&mut m, s, Target::Robot(r.into()), "p", step, &[], |_, _| Some(if r == "e" { 7.0 } else { 1.0 }));
            }
            if rng.random_bool(0.5) {
                let _ = m.get_messages(robots[rng.random_range(0..5)], step);
            }
            if step == 1500 {
                m.unregister("d").unwrap();
            }
            assert!(identity_holds(&m), "step {step}: {:?}", m.stats);
        }
        assert!(m.stats.dropped.causes() >= 4, "{:?}", m.stats.dropped);
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
        let out = send(&mut m, "a", Target::Broadcast, "x", 0, &names(&["b"]), dist);
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
        let out = send(&mut m, "mute", Target::Broadcast, "x", 0, &names(&["b", "c"]), near);
        assert_eq!((out.dropped(DropCause::LinkOff), out.dropped(DropCause::NoAbility)), (2, 0));
        // With it on, the ability comes before the sender's outgoing link.
        m.system.link = true;
        m.robot_params_mut("mute").unwrap().outgoing = false;
        let out = send(&mut m, "mute", Target::Robot("b".into()), "x", 0, &[], near);
        assert_eq!(out.dropped(DropCause::NoAbility), 1);
        // A receiver out of range whose link is off is counted as link off: links come first.
        m.robot_params_mut("c").unwrap().incoming = false;
        m.system.range = Some(1.0);
        let out = send(&mut m, "b", Target::Robot("c".into()), "x", 0, &[], |_, _| Some(5.0));
        assert_eq!(out.dropped(DropCause::LinkOff), 1);
    }

    #[test]
    fn a_pair_combines_with_the_other_levels_and_its_delay_replaces_theirs() {
        let mut m = model(&["a", "b"]);
        m.system = SystemParams { link: true, range: Some(5.0), delay: 2, probability: 1.0 };
        // A wider pair range does not reach further than the system's.
        m.set_pair("a", "b", PairParams { range: Some(50.0), delay: Some(7), ..default_pair() });
        let out = send(&mut m, "a", Target::Robot("b".into()), "x", 0, &[], |_, _| Some(8.0));
        assert_eq!(out.dropped(DropCause::OutOfRange), 1);
        let out = send(&mut m, "a", Target::Robot("b".into()), "x", 0, &[], |_, _| Some(4.0));
        assert_eq!(out.received_step, Some(7));
    }

    #[test]
    fn loss_draws_are_uniform_and_differ_by_send_and_receiver() {
        let draws: Vec<f32> =
            (0..4u32).flat_map(|n| (0..10_000).map(move |r| loss_draw(send_key(1, 3, 7, n), r))).collect();
        assert!(draws.iter().all(|d| (0.0..1.0).contains(d)));
        for q in 1..10 {
            let below = draws.iter().filter(|&&d| d < q as f32 / 10.0).count() as f32 / draws.len() as f32;
            assert!((below - q as f32 / 10.0).abs() < 0.01, "{q}: {below}");
        }
        let key = send_key(1, 3, 7, 0);
        assert_ne!(loss_draw(key, 1), loss_draw(key, 2));
        for other in [send_key(2, 3, 7, 0), send_key(1, 4, 7, 0), send_key(1, 3, 8, 0), send_key(1, 3, 7, 1)] {
            assert_ne!(loss_draw(key, 1), loss_draw(other, 1));
        }
    }

    #[test]
    fn receivers_of_a_broadcast_share_its_content() {
        let mut m: CommsModel<String> = CommsModel::new(SystemParams::default(), 8, 1);
        for n in ["a", "b", "c"] {
            m.register(n, BOTH).unwrap();
        }
        let all: Vec<Nearby> = (0..3).map(Nearby::unmeasured).collect();
        let out = m.send(m.id("a"), To::Broadcast, "hello".to_string(), 0, &all, |_, _| None);
        assert_eq!(out.queued, 2);
        let (b, c) = (m.get_messages("b", 0).unwrap(), m.get_messages("c", 0).unwrap());
        assert!(b[0].same_send(&c[0]));
        assert_eq!((&**b[0].sender(), b[0].receiver().map(|r| &**r)), ("a", None));
        // One sequence number per send, shared by its receivers; the next send gets the next.
        assert_eq!((b[0].seq, c[0].seq), (1, 1));
        m.send(m.id("b"), To::Robot(m.id("c")), "to c".to_string(), 1, &[], |_, _| None);
        let c = m.get_messages("c", 1).unwrap();
        assert_eq!((c[0].seq, c[0].receiver().map(|r| &**r), c[0].content().as_str()), (2, Some("c"), "to c"));
    }

    /// A send's `received_step` is the latest among the messages it queued, whatever order its
    /// receivers were planned in (pair delays differ by receiver).
    #[test]
    fn a_sends_receive_step_is_its_latest_queued_message() {
        let mut m = model(&["a", "b", "c", "d"]);
        m.set_pair("a", "c", PairParams { delay: Some(5), ..default_pair() });
        m.set_pair("a", "d", PairParams { link: Some(false), delay: Some(9), ..default_pair() });
        for order in [[1, 2, 3], [3, 2, 1], [2, 3, 1]] {
            let order = order.map(Nearby::unmeasured);
            let out = m.send(m.id("a"), To::Broadcast, "x", 0, &order, |_, _| None);
            assert_eq!((out.queued, out.received_step, out.dropped(DropCause::LinkOff)), (2, Some(5), 1), "{order:?}");
        }
    }

    #[test]
    fn same_seed_same_deliveries() {
        let run = |seed| {
            let mut m: CommsModel<u32> =
                CommsModel::new(SystemParams { probability: 0.5, ..Default::default() }, 100, seed);
            for n in ["a", "b"] {
                m.register(n, BOTH).unwrap();
            }
            (0..200)
                .map(|i| send(&mut m, "a", Target::Robot("b".into()), i, i as u64, &[], near).queued == 1)
                .collect::<Vec<_>>()
        };
        assert_eq!(run(3), run(3));
        assert_ne!(run(3), run(4));
    }

    /// Each message of a send is checked in the seed's order once the send's own checks passed:
    /// the receiver still registered, the loss draw, then room in its queue.
    #[test]
    fn a_message_arrives_unless_its_receiver_left_it_is_lost_or_the_queue_is_full() {
        let mut m = model(&["a", "b"]);
        let key = send_key(1, 0, 0, 0);
        let b = m.id("b").unwrap();
        let record = |m: &CommsModel<&'static str>| m.record(b).cloned();
        assert_eq!(arrival::<&str>(None, 1.0, key, b, 8), Err(DropCause::UnknownRobot));
        assert_eq!(arrival(record(&m).as_ref(), 1.0, key, b, 8), Ok(()));
        // Lost exactly when the draw is at or above the probability; at 1 never drawn.
        let draw = loss_draw(key, b);
        assert_eq!(arrival(record(&m).as_ref(), draw, key, b, 8), Err(DropCause::Lost));
        assert_eq!(arrival(record(&m).as_ref(), draw + 1e-6, key, b, 8), Ok(()));
        // A full queue refuses what was not lost, and loss is decided first.
        for i in 0..8 {
            m.send(m.id("a"), To::Robot(Some(b)), "x", i, &[], |_, _| None);
        }
        assert_eq!(arrival(record(&m).as_ref(), 1.0, key, b, 8), Err(DropCause::InboxFull));
        assert_eq!(arrival(record(&m).as_ref(), draw, key, b, 8), Err(DropCause::Lost));
    }
}
