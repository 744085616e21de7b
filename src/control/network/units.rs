//! The functional units of seed 001 and the [`Brain`] that runs a robot's network with them.
//!
//! A node's unit turns its input (the weighted mean of its input links, as of the last tick) and,
//! for task and perception nodes, the robot's readings into its new degree of execution and
//! signal:
//!
//! - task: `Charging` is 1 from the moment the battery falls to `low_power` (or to what the way to
//!   the nearest station needs) until it is back at `full_power` (hysteresis, so the robot charges
//!   fully instead of dithering); `Collecting` is its complement, so Charging wins over Collecting;
//! - perception: `Camera` is 1 while the camera sees a box, pen or station, `GripSensor` 1 while
//!   the gripper holds a pen, `Power` is 1 − battery level, `Bumper` 1 while the robot backs off
//!   a bump, `Radio` 1 in the tick the robot gives its pen up to a closer robot's claim;
//! - subject (`Box`, `Pen`, `Station`): its input while its object is tracked, and the object's
//!   distance and bearing, and whether the robot is at it (pen in reach, load over a box, on the
//!   charging station); `Search` and `Obstacle`: their input, and the search's command (the
//!   wanderer's cruise, or its back-off turn after a bump);
//! - control: the leading input (largest weight × degree: a subject with a track from
//!   [`BrainParams::lead`] on, a search or obstacle from above zero) gives `Move` a forward speed
//!   (slowing near the object, zero while facing away or when there), `Turn` a turn rate towards
//!   its bearing, `Grip` close at a pen and open over a box; a search or obstacle gives its own
//!   command;
//! - actuator (`Speed`, `Angle`, `Gripper`): pass their control node's command on, as the
//!   robot's speed, turn rate and gripper command for the act stage.
//!
//! Static nodes also send the creating-node and removal requests of the dynamic subjects (seed
//! 001: "if the Camera node sees a pen, a creating-node request will be sent to the manager"):
//! the Camera for the box, pen and station it tracks, GripSensor for the box last seen while it
//! holds a pen, Power for the station while the battery needs charging, Bumper for the obstacle
//! while backing off, and the task nodes for the search. A subject exists while a node asks for
//! it ([`wanted`]); its removal is requested when none does.
//!
//! Nodes a user adds to the structure with other names get the plain unit: degree = input.

use std::sync::Arc;

use super::graph::{Catalog, Input, Network, NodeId, Signal};
use crate::scene::network::NetworkStructure;

/// The subjects the world offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SubjectKind {
    Box = 0,
    Pen = 1,
    Station = 2,
}

/// How many subject nodes of the shipped kinds a structure may have: the first of each kind
/// ("Box", "Pen", "Station", slots 0–2) and further ones named after their kind and a number
/// ("Pen 2", "Pen 3": slots 3 on, in node order).
pub const MAX_SUBJECTS: usize = 8;

impl SubjectKind {
    pub const ALL: [SubjectKind; 3] = [SubjectKind::Box, SubjectKind::Pen, SubjectKind::Station];

    /// The kind of a subject node's name: its own ("Pen"), or a further node of it ("Pen 2"),
    /// with the node's number (1 for the first).
    pub fn of_name(name: &str) -> Option<(SubjectKind, u32)> {
        let (base, number) = match name.rsplit_once(' ') {
            Some((base, n)) => (base, n.parse::<u32>().ok().filter(|n| *n >= 2)?),
            None => (name, 1),
        };
        SubjectKind::ALL.into_iter().find(|k| k.node_name() == base).map(|k| (k, number))
    }

    /// The node name in the shipped structure.
    pub fn node_name(self) -> &'static str {
        match self {
            SubjectKind::Box => "Box",
            SubjectKind::Pen => "Pen",
            SubjectKind::Station => "Station",
        }
    }
}

/// What a node's functional unit does, decided by its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Charging,
    Collecting,
    Camera,
    GripSensor,
    Power,
    Bumper,
    Radio,
    /// A subject node of a kind, with its slot in [`Percepts`]' per-subject readings.
    Subject(SubjectKind, u8),
    Search,
    Obstacle,
    Move,
    Turn,
    Grip,
    Speed,
    Angle,
    Gripper,
    /// A node crsim has no unit for: degree = input.
    Plain,
}

impl Role {
    pub fn of(name: &str) -> Role {
        match name {
            "Charging" => Role::Charging,
            "Collecting" => Role::Collecting,
            "Camera" => Role::Camera,
            "GripSensor" => Role::GripSensor,
            "Power" => Role::Power,
            "Bumper" => Role::Bumper,
            "Radio" => Role::Radio,
            "Search" => Role::Search,
            "Obstacle" => Role::Obstacle,
            "Move" => Role::Move,
            "Turn" => Role::Turn,
            "Grip" => Role::Grip,
            "Speed" => Role::Speed,
            "Angle" => Role::Angle,
            "Gripper" => Role::Gripper,
            _ => match SubjectKind::of_name(name) {
                // The first node of a kind has the kind's slot; the Blueprint numbers the others.
                Some((k, 1)) => Role::Subject(k, k as u8),
                Some((k, _)) => Role::Subject(k, u8::MAX),
                None => Role::Plain,
            },
        }
    }
}

/// A structure ready to run: the catalog and each node's role. Shared by all robots of a scene.
#[derive(Debug, Clone, PartialEq)]
pub struct Blueprint {
    pub catalog: Arc<Catalog>,
    pub roles: Vec<Role>,
    /// Each subject slot's kind and node (slots 0–2 the first of each kind, absent where the
    /// structure has none; then the further nodes of a kind, in node order).
    pub slots: Vec<(SubjectKind, Option<NodeId>)>,
    /// The control node whose leading subject is the robot's (Move).
    pub mover: Option<NodeId>,
    pub speed: Option<NodeId>,
    pub angle: Option<NodeId>,
    pub gripper: Option<NodeId>,
    /// The dynamic nodes a static node's unit may ask for, in node order, each with the static
    /// nodes linked to it (those that may ask).
    pub requested: Vec<(NodeId, Vec<NodeId>)>,
}

impl Blueprint {
    pub fn new(structure: NetworkStructure) -> Self {
        let catalog = Catalog::new(structure);
        let mut roles: Vec<Role> = catalog.names.iter().map(|n| Role::of(n)).collect();
        let find = |roles: &[Role], r: Role| roles.iter().position(|x| *x == r);
        let mut slots: Vec<(SubjectKind, Option<NodeId>)> =
            SubjectKind::ALL.iter().map(|&k| (k, find(&roles, Role::Subject(k, k as u8)))).collect();
        for role in roles.iter_mut() {
            if let Role::Subject(k, u8::MAX) = *role {
                // A further node of a kind: the next slot, while there is room (else a plain node).
                *role = if slots.len() < MAX_SUBJECTS { Role::Subject(k, slots.len() as u8) } else { Role::Plain };
            }
            if let Role::Subject(k, slot) = *role
                && usize::from(slot) >= SubjectKind::ALL.len()
            {
                slots.push((k, None));
            }
        }
        for (id, role) in roles.iter().enumerate() {
            if let Role::Subject(_, slot) = *role {
                slots[usize::from(slot)].1 = Some(id);
            }
        }
        let requested = (0..roles.len())
            .filter(|&id| catalog.dynamic[id] && matches!(roles[id], Role::Subject(..) | Role::Search | Role::Obstacle))
            .map(|id| {
                let askers = catalog.links.iter().filter(|l| l.to == id && !catalog.dynamic[l.from]).map(|l| l.from);
                (id, askers.collect())
            })
            .collect();
        Self {
            mover: find(&roles, Role::Move),
            speed: find(&roles, Role::Speed),
            angle: find(&roles, Role::Angle),
            gripper: find(&roles, Role::Gripper),
            requested,
            slots,
            roles,
            catalog: Arc::new(catalog),
        }
    }

    /// The first node of a subject kind (its slot is the kind's), if the structure has one.
    pub fn subject(&self, kind: SubjectKind) -> Option<NodeId> {
        self.slots[kind as usize].1
    }

    /// The slots of a kind's subject nodes, the first node's first.
    pub fn instances(&self, kind: SubjectKind) -> impl Iterator<Item = usize> + '_ {
        (0..self.slots.len()).filter(move |&s| self.slots[s].0 == kind && self.slots[s].1.is_some())
    }
}

/// Tunable parts of the units.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BrainParams {
    /// Battery level at which Charging switches on.
    pub low_power: f32,
    /// Battery level at which Charging switches off again.
    pub full_power: f32,
    /// Least weight × degree for a subject to lead the control nodes.
    pub lead: f32,
    /// Turn rate (fraction of the maximum) per radian of bearing.
    pub turn_gain: f32,
    /// Beyond this bearing (radians) the robot turns on the spot before driving.
    pub face: f32,
    /// Within this distance (m) of its object the robot slows down.
    pub slow_radius: f32,
    /// The slowest approach, as a fraction of the maximum speed.
    pub min_speed: f32,
}

impl Default for BrainParams {
    fn default() -> Self {
        Self {
            low_power: 0.3,
            full_power: 0.95,
            lead: 0.55,
            turn_gain: 1.5,
            face: 0.6,
            slow_radius: 0.5,
            min_speed: 0.2,
        }
    }
}

/// Where a subject's object is, relative to the robot.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct View {
    pub distance: f32,
    pub bearing: f32,
}

/// The robot's readings for one tick.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Percepts {
    /// Battery level, 0..1.
    pub power: f32,
    /// The battery level the way to the nearest station needs (with a margin), 0..; Charging
    /// takes over at this level when it is above `low_power`.
    pub reserve: f32,
    /// The robot is charging on a station.
    pub on_station: bool,
    /// The gripper holds a pen.
    pub holding: bool,
    /// A free pen is within the gripper's reach.
    pub pen_in_reach: bool,
    /// What the gripper holds would drop into a box.
    pub over_box: bool,
    /// The camera sees at least one box, pen or station.
    pub sees: bool,
    /// Whether the camera tracks an object (seen lately) for each subject slot (see
    /// [`Blueprint::slots`]).
    pub seen: [bool; MAX_SUBJECTS],
    /// A box seen before is remembered, farther than the search's reach: where to bring a pen.
    pub box_known: bool,
    /// The way to a charging station is known (the scene has one the robot can reach).
    pub station_known: bool,
    /// The object of each subject slot, if any: the camera's, else (the first of a kind) the
    /// remembered box (holding a pen) or the way to the nearest station (charging).
    pub tracks: [Option<View>; MAX_SUBJECTS],
    /// The search's command this tick (linear, angular, fractions of the maxima): cruising, or
    /// the back-off turn after a bump.
    pub steer: (f32, f32),
    /// The search is backing off a bump.
    pub backing_off: bool,
    /// The robot gave the pen it went for up to a closer robot's claim this tick.
    pub yielded: bool,
}

impl Percepts {
    fn at(&self, kind: SubjectKind) -> bool {
        match kind {
            SubjectKind::Pen => self.pen_in_reach,
            SubjectKind::Box => self.over_box,
            SubjectKind::Station => self.on_station,
        }
    }
}

/// What the actuator nodes command after a tick.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Outputs {
    /// Forward speed as a fraction of the maximum; `None` without a Speed node or a leader.
    pub speed: Option<f32>,
    /// Turn rate as a fraction of the maximum (positive to the left).
    pub turn: Option<f32>,
    /// +1 close, -1 open, 0 leave as is.
    pub grip: f32,
}

/// A creating-node or removal request a static node sent to the manager of a dynamic node
/// (node indices in 16 bits, as a [`super::graph::Link`]'s: robots keep their latest).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SubjectRequest {
    by: Option<u16>,
    node: u16,
}

impl SubjectRequest {
    /// A request for `node`, to create it (sent by `by`) or, with `by` `None`, to remove it.
    pub fn new(by: Option<NodeId>, node: NodeId) -> Self {
        let id = |n: NodeId| u16::try_from(n).unwrap_or(u16::MAX);
        Self { by: by.map(id), node: id(node) }
    }

    /// A creating request (sent by a node), or a removal.
    pub fn create(&self) -> bool {
        self.by.is_some()
    }

    /// The node that sent a creating request (the first in node order that asks); `None` for a
    /// removal, requested because no node asks for the node any more.
    pub fn by(&self) -> Option<NodeId> {
        self.by.map(usize::from)
    }

    /// The dynamic node it is about.
    pub fn node(&self) -> NodeId {
        usize::from(self.node)
    }
}

/// What a robot's network leads with: the input of Move that commands the motion.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Lead {
    /// A subject with a track: go to its object (the subject's kind, where the object is,
    /// whether the robot is at it).
    Subject(SubjectKind, View, bool),
    /// A search or obstacle node: its own command (linear, angular).
    Steer(f32, f32),
}

/// A robot's network with its units and task state.
#[derive(Debug, Clone)]
pub struct Brain {
    pub net: Network,
    pub blueprint: Arc<Blueprint>,
    pub params: BrainParams,
    /// The charging task is on.
    pub charging: bool,
    /// The node that led Move in the last tick (a subject, the search or an obstacle).
    pub leading_node: Option<NodeId>,
    /// The latest creating-node and removal requests the static nodes sent (applied at the tick
    /// after), kept for the panel and the dump, and the tick that sent them ([`Network::ticks`]
    /// after it).
    pub sent: Vec<SubjectRequest>,
    pub sent_at: u64,
    /// The readings the requests depend on ([`wish_flags`]) in the last tick that sent none:
    /// while they stay the same, every dynamic node that should exist does, and the static nodes
    /// have nothing to ask.
    settled: Option<u32>,
}

/// The readings the static nodes' requests depend on, as bits: the camera's tracking of each
/// subject slot, a remembered box while holding a pen, the way to a station while charging, the
/// back-off, and the charging task.
fn wish_flags(p: &Percepts, charging: bool) -> u32 {
    let seen = p.seen.iter().enumerate().fold(0u32, |bits, (i, &s)| bits | (u32::from(s) << i));
    let flag = |b: bool, at: usize| u32::from(b) << (MAX_SUBJECTS + at);
    seen | flag(p.holding && p.box_known, 0)
        | flag(charging && p.station_known, 1)
        | flag(p.backing_off, 2)
        | flag(charging, 3)
}

/// Whether the unit of a static node of role `role` asks for a dynamic node of role `wanted`
/// given this tick's readings (and the charging task's state): the Camera for the subjects it
/// tracks, GripSensor for a remembered box while holding a pen, Power for the station while
/// charging, Bumper for the obstacle while backing off, the task nodes for the search.
#[inline]
pub fn asks_for(role: Role, wanted: Role, p: &Percepts, charging: bool) -> bool {
    match (role, wanted) {
        (Role::Camera, Role::Subject(_, slot)) => p.seen[usize::from(slot)],
        // The remembered box and the way to a station are the first node of their kind's.
        (Role::GripSensor, Role::Subject(SubjectKind::Box, 0)) => p.holding && p.box_known,
        (Role::Power, Role::Subject(SubjectKind::Station, 2)) => charging && p.station_known,
        (Role::Bumper, Role::Obstacle) => p.backing_off,
        (Role::Charging, Role::Search) => charging,
        (Role::Collecting, Role::Search) => !charging,
        _ => false,
    }
}

/// The first of `askers` (static nodes linked to dynamic node `wanted`) whose unit asks for it.
#[inline]
pub fn wanted(
    net: &Network,
    roles: &[Role],
    wanted: NodeId,
    askers: &[NodeId],
    p: &Percepts,
    charging: bool,
) -> Option<NodeId> {
    askers.iter().copied().find(|&from| net.node(from).is_some() && asks_for(roles[from], roles[wanted], p, charging))
}

impl Brain {
    pub fn new(blueprint: Arc<Blueprint>, params: BrainParams) -> Self {
        Self {
            net: Network::new(Arc::clone(&blueprint.catalog)),
            blueprint,
            params,
            charging: false,
            leading_node: None,
            sent: Vec::new(),
            sent_at: 0,
            settled: None,
        }
    }

    /// Whether the subject node of a kind exists.
    pub fn has_subject(&self, kind: SubjectKind) -> bool {
        self.blueprint.subject(kind).is_some_and(|id| self.net.node(id).is_some())
    }

    /// One tick of the network on this tick's readings: the queued creations and removals are
    /// applied and every node reads, averages, runs its unit and writes; then the static nodes
    /// send the creating-node and removal requests their units ask for (applied at the next
    /// tick).
    pub fn tick(&mut self, p: &Percepts) -> Outputs {
        self.charging = if self.charging {
            p.power < self.params.full_power
        } else {
            p.power <= self.params.low_power.max(p.reserve)
        };
        let (bp, params, charging) = (&*self.blueprint, self.params, self.charging);
        let mut lead = None;
        self.net.tick(|id, mean, inputs| {
            let role = bp.roles[id];
            if Some(id) == bp.mover {
                // Move's unit with its leading input worked out once.
                lead = leading(inputs, &bp.roles, params.lead);
                return control_unit(role, mean, lead.map(|(_, l)| l), &params);
            }
            unit(role, mean, inputs, p, &params, charging, &bp.roles)
        });
        self.leading_node = lead.map(|(id, _)| id);
        let level = |id: Option<NodeId>| match id.and_then(|i| self.net.node(i)).map(|n| n.signal) {
            Some(Signal::Level(x)) => Some(x),
            _ => None,
        };
        let outputs = Outputs { speed: level(bp.speed), turn: level(bp.angle), grip: level(bp.gripper).unwrap_or(0.0) };
        self.send_requests(p);
        outputs
    }

    /// The static nodes' part of the tick: for each dynamic node they may ask for, a creating
    /// request when one asks and it does not exist, a removal request when none asks and it does.
    fn send_requests(&mut self, p: &Percepts) {
        let flags = wish_flags(p, self.charging);
        if self.settled == Some(flags) {
            return;
        }
        self.settled = Some(flags);
        for i in 0..self.blueprint.requested.len() {
            let (node, ref askers) = self.blueprint.requested[i];
            let by = wanted(&self.net, &self.blueprint.roles, node, askers, p, self.charging);
            let request = match (by, self.net.node(node).is_some()) {
                (Some(by), false) => SubjectRequest::new(Some(by), node),
                (None, true) => SubjectRequest::new(None, node),
                _ => continue,
            };
            if request.create() {
                self.net.perceive(node);
            } else {
                self.net.forget(node);
            }
            if self.sent_at != self.net.ticks {
                self.sent.clear();
                self.sent_at = self.net.ticks;
            }
            self.sent.push(request);
            self.settled = None;
        }
    }

    /// The subject that led the control nodes (Move) in the last tick, if one did: its kind and
    /// slot.
    fn leading_subject(&self) -> Option<(SubjectKind, usize)> {
        match self.blueprint.roles[self.leading_node?] {
            Role::Subject(kind, slot) => Some((kind, usize::from(slot))),
            _ => None,
        }
    }

    /// The kind of subject that led the control nodes (Move) in the last tick, if any.
    pub fn leader(&self) -> Option<SubjectKind> {
        self.leading_subject().map(|(k, _)| k)
    }

    /// The slot of the subject that led Move in the last tick, if any.
    pub fn leading_slot(&self) -> Option<usize> {
        self.leading_subject().map(|(_, slot)| slot)
    }
}

/// The leading input of a control node and the node it comes from: largest weight × degree — a
/// subject with a track from `lead` on, a search or obstacle command from above zero; the first
/// in node order on a tie.
#[inline]
pub fn leading(inputs: &[Input], roles: &[Role], lead: f32) -> Option<(NodeId, Lead)> {
    let mut best: Option<(f32, NodeId, Lead)> = None;
    for i in inputs {
        let strength = i.weight * i.degree;
        let candidate = match (roles[i.from], i.signal) {
            (Role::Subject(k, _), Signal::Track { distance, bearing, at }) if strength >= lead => {
                Lead::Subject(k, View { distance, bearing }, at)
            }
            (Role::Search | Role::Obstacle, Signal::Steer { speed, turn }) if strength > 0.0 => {
                Lead::Steer(speed, turn)
            }
            _ => continue,
        };
        if best.is_none_or(|b| strength > b.0) {
            best = Some((strength, i.from, candidate));
        }
    }
    best.map(|(_, id, l)| (id, l))
}

/// Forward speed towards an object: none when there or facing away, slower when close.
#[inline]
pub fn approach_speed(view: View, at: bool, params: &BrainParams) -> f32 {
    if at || view.bearing.abs() > params.face {
        return 0.0;
    }
    (view.distance / params.slow_radius).clamp(params.min_speed, 1.0) * view.bearing.cos()
}

/// The unit of a control node (Move, Turn, Grip) given its leading input: Move's speed towards
/// a subject's object or the search's or obstacle's own, Turn's turn rate, Grip's command.
#[inline]
pub fn control_unit(role: Role, mean: f32, lead: Option<Lead>, params: &BrainParams) -> (f32, Signal) {
    let Some(lead) = lead else {
        return (mean, Signal::None);
    };
    let level = match (role, lead) {
        (Role::Move, Lead::Subject(_, view, at)) => approach_speed(view, at, params),
        // On the station it stays put; at a pen or box it still faces it.
        (Role::Turn, Lead::Subject(SubjectKind::Station, _, true)) => 0.0,
        (Role::Turn, Lead::Subject(_, view, _)) => (params.turn_gain * view.bearing).clamp(-1.0, 1.0),
        (Role::Move, Lead::Steer(speed, _)) => speed,
        (Role::Turn, Lead::Steer(_, turn)) => turn,
        (_, Lead::Subject(SubjectKind::Pen, _, true)) => 1.0,
        (_, Lead::Subject(SubjectKind::Box, _, true)) => -1.0,
        _ => 0.0,
    };
    (mean, Signal::Level(level))
}

/// The functional unit of a node of role `role`.
#[inline]
pub fn unit(
    role: Role,
    mean: f32,
    inputs: &[Input],
    p: &Percepts,
    params: &BrainParams,
    charging: bool,
    roles: &[Role],
) -> (f32, Signal) {
    let flag = |b: bool| if b { 1.0 } else { 0.0 };
    match role {
        Role::Charging => (flag(charging), Signal::None),
        Role::Collecting => (1.0 - flag(charging), Signal::None),
        Role::Camera => (flag(p.sees), Signal::None),
        Role::GripSensor => (flag(p.holding), Signal::None),
        Role::Power => (1.0 - p.power.clamp(0.0, 1.0), Signal::None),
        Role::Bumper => (flag(p.backing_off), Signal::None),
        Role::Radio => (flag(p.yielded), Signal::None),
        Role::Subject(k, slot) => match p.tracks[usize::from(slot)] {
            Some(v) => (mean, Signal::Track { distance: v.distance, bearing: v.bearing, at: p.at(k) }),
            None => (0.0, Signal::None),
        },
        Role::Search | Role::Obstacle => (mean, Signal::Steer { speed: p.steer.0, turn: p.steer.1 }),
        Role::Move | Role::Turn | Role::Grip => {
            control_unit(role, mean, leading(inputs, roles, params.lead).map(|(_, l)| l), params)
        }
        Role::Speed | Role::Angle | Role::Gripper => {
            // The command of the strongest driving input, its sign flipped by a negative weight.
            let command = inputs
                .iter()
                .filter_map(|i| match i.signal {
                    Signal::Level(x) => Some((i.weight.abs() * i.degree, x * i.weight.signum())),
                    _ => None,
                })
                .max_by(|a, b| a.0.total_cmp(&b.0))
                .map(|(_, x)| x.clamp(-1.0, 1.0));
            (mean, command.map_or(Signal::None, Signal::Level))
        }
        Role::Plain => (mean, Signal::None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scene::network::{LinkKind, default_network};

    fn brain() -> Brain {
        Brain::new(Arc::new(Blueprint::new(default_network())), BrainParams::default())
    }

    fn input(from: NodeId, weight: f32, degree: f32, signal: Signal) -> Input {
        Input { from, kind: LinkKind::Command, weight, degree, signal }
    }

    fn full(power: f32) -> Percepts {
        Percepts { power, ..Default::default() }
    }

    #[test]
    fn task_and_perception_units() {
        let p = Percepts { power: 0.8, holding: true, sees: true, ..Default::default() };
        let params = BrainParams::default();
        let u = |role| unit(role, 0.0, &[], &p, &params, false, &[]).0;
        assert_eq!(u(Role::Charging), 0.0);
        assert_eq!(u(Role::Collecting), 1.0);
        assert_eq!(u(Role::Camera), 1.0);
        assert_eq!(u(Role::GripSensor), 1.0);
        assert!((u(Role::Power) - 0.2).abs() < 1e-6);
        assert_eq!(unit(Role::Charging, 0.0, &[], &p, &params, true, &[]).0, 1.0);
        assert_eq!(unit(Role::Collecting, 0.0, &[], &p, &params, true, &[]).0, 0.0);
    }

    #[test]
    fn subject_units_track_their_object() {
        let params = BrainParams::default();
        let mut p = Percepts { pen_in_reach: true, ..Default::default() };
        p.tracks[SubjectKind::Pen as usize] = Some(View { distance: 0.5, bearing: 0.1 });
        let (d, s) = unit(Role::Subject(SubjectKind::Pen, 1), 0.6, &[], &p, &params, false, &[]);
        assert_eq!(d, 0.6);
        assert_eq!(s, Signal::Track { distance: 0.5, bearing: 0.1, at: true });
        // Not tracked: degree 0, no signal.
        assert_eq!(unit(Role::Subject(SubjectKind::Box, 0), 0.9, &[], &p, &params, false, &[]), (0.0, Signal::None));
    }

    #[test]
    fn control_units_follow_the_leading_subject() {
        let params = BrainParams::default();
        let roles = [Role::Subject(SubjectKind::Box, 0), Role::Subject(SubjectKind::Pen, 1)];
        let p = Percepts::default();
        let box_track = Signal::Track { distance: 2.0, bearing: -0.2, at: false };
        let pen_track = Signal::Track { distance: 0.25, bearing: 0.3, at: false };
        // Box at 0.5 is below the lead threshold; Pen at 0.6 leads.
        let inputs = [input(0, 1.0, 0.5, box_track), input(1, 1.0, 0.6, pen_track)];
        let (d, s) = unit(Role::Turn, 0.55, &inputs, &p, &params, false, &roles);
        assert_eq!(d, 0.55);
        let Signal::Level(turn) = s else { panic!("{s:?}") };
        assert!((turn - 0.45).abs() < 1e-6, "{turn}");
        let (_, s) = unit(Role::Move, 0.55, &inputs, &p, &params, false, &roles);
        // Slowed to 0.25 / 0.5 of full speed, times cos(0.3).
        let Signal::Level(v) = s else { panic!("{s:?}") };
        assert!((v - 0.5 * 0.3f32.cos()).abs() < 1e-6, "{v}");
        assert_eq!(unit(Role::Grip, 0.55, &inputs, &p, &params, false, &roles).1, Signal::Level(0.0));
        // At the pen: stop and close the gripper.
        let at_pen = [input(1, 1.0, 0.6, Signal::Track { distance: 0.15, bearing: 0.0, at: true })];
        assert_eq!(unit(Role::Move, 0.6, &at_pen, &p, &params, false, &roles).1, Signal::Level(0.0));
        assert_eq!(unit(Role::Grip, 0.6, &at_pen, &p, &params, false, &roles).1, Signal::Level(1.0));
        // Over a box: open.
        let at_box = [input(0, 1.0, 1.0, Signal::Track { distance: 0.4, bearing: 0.0, at: true })];
        assert_eq!(unit(Role::Grip, 1.0, &at_box, &p, &params, false, &roles).1, Signal::Level(-1.0));
        // Facing away: turn on the spot.
        let behind = [input(1, 1.0, 0.6, Signal::Track { distance: 1.0, bearing: 2.0, at: false })];
        assert_eq!(unit(Role::Move, 0.6, &behind, &p, &params, false, &roles).1, Signal::Level(0.0));
        assert_eq!(unit(Role::Turn, 0.6, &behind, &p, &params, false, &roles).1, Signal::Level(1.0));
        // No leader: no command.
        assert_eq!(unit(Role::Move, 0.5, &inputs[..1], &p, &params, false, &roles).1, Signal::None);
    }

    #[test]
    fn actuator_units_pass_the_command_on() {
        let params = BrainParams::default();
        let roles = [Role::Move];
        let p = Percepts::default();
        let (d, s) = unit(Role::Speed, 0.7, &[input(0, 1.0, 0.7, Signal::Level(0.4))], &p, &params, false, &roles);
        assert_eq!((d, s), (0.7, Signal::Level(0.4)));
        // A negative weight reverses the command.
        let (_, s) = unit(Role::Angle, 0.0, &[input(0, -1.0, 0.7, Signal::Level(0.4))], &p, &params, false, &roles);
        assert_eq!(s, Signal::Level(-0.4));
        assert_eq!(unit(Role::Gripper, 0.0, &[], &p, &params, false, &roles).1, Signal::None);
    }

    /// Full battery, the camera tracking one pen at `view`.
    fn seeing_a_pen(view: View) -> Percepts {
        let mut p = Percepts { power: 1.0, sees: true, ..Default::default() };
        p.seen[SubjectKind::Pen as usize] = true;
        p.tracks[SubjectKind::Pen as usize] = Some(view);
        p
    }

    fn seed_brain() -> Brain {
        Brain::new(Arc::new(Blueprint::new(crate::scene::network::seed_network())), BrainParams::default())
    }

    /// The Camera sees a pen straight ahead: its unit sends the creating request in the tick it
    /// sees it; the Pen node is created at the next tick, and one tick per layer later the
    /// actuators drive towards it and close the gripper at it.
    #[test]
    fn a_seen_pen_drives_the_robot_to_it_and_grips_it() {
        let mut b = seed_brain();
        let mut p = seeing_a_pen(View { distance: 1.0, bearing: 0.2 });
        let camera = b.net.catalog().id("Camera");
        let pen = b.blueprint.subject(SubjectKind::Pen).unwrap();
        b.tick(&p);
        assert_eq!((b.sent_at, &b.sent[..]), (1, &[SubjectRequest::new(camera, pen)][..]));
        assert!(!b.has_subject(SubjectKind::Pen), "applied at the next tick");
        let mut out = Outputs::default();
        for _ in 0..5 {
            out = b.tick(&p);
        }
        assert_eq!(b.sent_at, 1, "asked once");
        assert_eq!(b.leader(), Some(SubjectKind::Pen));
        assert!((out.speed.unwrap() - 0.2f32.cos()).abs() < 1e-6, "{out:?}");
        assert!((out.turn.unwrap() - 0.3).abs() < 1e-6, "{out:?}");
        assert_eq!(out.grip, 0.0);
        p.pen_in_reach = true;
        for _ in 0..3 {
            out = b.tick(&p);
        }
        assert_eq!((out.speed, out.grip), (Some(0.0), 1.0));
        // Holding it: GripSensor inhibits Pen ((2 + 1 - 2) / 5 = 0.2, below the lead), nothing
        // leads.
        p.holding = true;
        p.pen_in_reach = false;
        for _ in 0..4 {
            out = b.tick(&p);
        }
        assert!((b.net.get("Pen").unwrap().degree - 0.2).abs() < 1e-6);
        assert_eq!(b.leader(), None);
        assert_eq!(out.speed, None);
        // The pen leaves the camera's view: the Camera asks for its removal.
        p.seen = [false; MAX_SUBJECTS];
        b.tick(&p);
        assert_eq!(b.sent, vec![SubjectRequest::new(None, pen)]);
        assert_eq!(b.sent_at, b.net.ticks);
        b.tick(&p);
        assert_eq!(b.net.names(), vec!["Camera", "Charging", "Collecting", "GripSensor", "Power"]);
    }

    /// Holding a pen with a box and a pen in view, Box leads; Charging takes over at low power
    /// (Power asks for the Station: the way to it is known) and lets go once the battery is full
    /// again.
    #[test]
    fn charging_takes_over_at_low_power() {
        let mut b = brain();
        let mut p = Percepts { power: 0.8, sees: true, holding: true, station_known: true, ..Default::default() };
        p.tracks[..3].copy_from_slice(&[
            Some(View { distance: 1.0, bearing: 0.5 }),
            Some(View { distance: 0.5, bearing: 0.0 }),
            Some(View { distance: 2.0, bearing: -0.5 }),
        ]);
        p.seen[..2].copy_from_slice(&[true, true]);
        let run = |b: &mut Brain, p: &Percepts| (0..6).map(|_| b.tick(p)).last().unwrap();
        let out = run(&mut b, &p);
        assert_eq!(b.leader(), Some(SubjectKind::Box));
        assert!(out.turn.unwrap() > 0.0);
        assert!(!b.has_subject(SubjectKind::Station), "the camera does not see it and no task needs it");
        p.power = 0.3;
        let out = run(&mut b, &p);
        assert!(b.charging);
        assert!(b.has_subject(SubjectKind::Station), "Power asked for it");
        assert_eq!(b.leader(), Some(SubjectKind::Station));
        assert!(out.turn.unwrap() < 0.0, "{out:?}");
        assert_eq!(b.net.get("Charging").unwrap().degree, 1.0);
        assert_eq!(b.net.get("Collecting").unwrap().degree, 0.0);
        // On the station: wait there while charging, even past the low mark.
        p.on_station = true;
        p.power = 0.6;
        let out = run(&mut b, &p);
        assert!(b.charging);
        assert_eq!((out.speed, out.turn), (Some(0.0), Some(0.0)));
        p.power = 0.95;
        run(&mut b, &p);
        assert!(!b.charging);
        assert!(!b.has_subject(SubjectKind::Station), "nobody asks for it any more");
        assert_eq!(b.leader(), Some(SubjectKind::Box));
    }

    #[test]
    fn the_seeds_network_without_sightings_commands_nothing() {
        let mut b = seed_brain();
        let out = b.tick(&full(1.0));
        assert_eq!(out, Outputs::default());
        assert_eq!(b.net.names().len(), 5);
    }

    /// With nothing in view the tasks ask for the Search, whose command reaches the actuators;
    /// a subject that leads takes over; a bump's back-off (Bumper asks for the Obstacle)
    /// overrides the subject; every command is an actuator node's output.
    #[test]
    fn search_subject_and_obstacle_take_turns_at_the_wheel() {
        let mut b = brain();
        let mut p = Percepts { power: 1.0, steer: (0.7, 0.1), ..Default::default() };
        let actuators = |b: &Brain| {
            let level = |n: &str| match b.net.get(n).map(|n| n.signal) {
                Some(Signal::Level(x)) => Some(x),
                _ => None,
            };
            (level("Speed"), level("Angle"))
        };
        let mut out = Outputs::default();
        for _ in 0..5 {
            out = b.tick(&p);
        }
        assert_eq!((out.speed, out.turn), (Some(0.7), Some(0.1)), "the search cruises");
        assert_eq!((out.speed, out.turn), actuators(&b));
        assert_eq!(b.net.name(b.leading_node.unwrap()), "Search");
        assert_eq!(b.leader(), None);
        // A pen in view leads.
        p = Percepts { steer: p.steer, ..seeing_a_pen(View { distance: 1.0, bearing: 0.0 }) };
        for _ in 0..5 {
            out = b.tick(&p);
        }
        assert_eq!(b.leader(), Some(SubjectKind::Pen));
        assert_eq!((out.speed, out.turn), (Some(1.0), Some(0.0)));
        // A bump: the search backs off, and the Obstacle leads over the pen.
        p.backing_off = true;
        p.steer = (-0.1, 1.0);
        for _ in 0..5 {
            out = b.tick(&p);
        }
        assert_eq!(b.net.name(b.leading_node.unwrap()), "Obstacle");
        assert_eq!((out.speed, out.turn), (Some(-0.1), Some(1.0)));
        assert_eq!((out.speed, out.turn), actuators(&b));
        // Backed off: the Obstacle goes and the pen leads again.
        p.backing_off = false;
        for _ in 0..5 {
            out = b.tick(&p);
        }
        assert!(b.net.get("Obstacle").is_none());
        assert_eq!(b.leader(), Some(SubjectKind::Pen));
        assert_eq!(out.speed, Some(1.0));
    }

    /// Radio, in the tick the robot gives its pen up to a closer robot's claim, holds Pen below
    /// the lead ((3 + 1 - 1) / 7).
    #[test]
    fn a_yielded_pen_stops_leading_through_the_radio_node() {
        let mut b = brain();
        let mut p = seeing_a_pen(View { distance: 1.0, bearing: 0.0 });
        for _ in 0..5 {
            b.tick(&p);
        }
        assert!((b.net.get("Pen").unwrap().degree - 4.0 / 7.0).abs() < 1e-6);
        p.yielded = true;
        b.tick(&p);
        b.tick(&p);
        assert!((b.net.get("Pen").unwrap().degree - 3.0 / 7.0).abs() < 1e-6);
        b.tick(&p);
        assert_eq!(b.leader(), None);
    }

    /// Names that look like further subject nodes: numbered copies past the eight slots become
    /// plain nodes, odd numbers are no copies, a copy without its first node still works; the
    /// network runs on them all.
    #[test]
    fn further_subject_nodes_by_name() {
        use crate::scene::network::with_copy_of;
        assert_eq!(SubjectKind::of_name("Pen 2"), Some((SubjectKind::Pen, 2)));
        for name in ["Pen 1", "Pen 0", "Pen x", "Pen  2", "Pen 99999999999", "Pens 2", "pen 2"] {
            assert_eq!(Role::of(name), Role::Plain, "{name}");
        }
        let mut s = crate::scene::network::default_network();
        for i in 2..=9 {
            s = with_copy_of(s, "Pen", &format!("Pen {i}"));
        }
        let bp = Blueprint::new(s.clone());
        assert_eq!(bp.slots.len(), MAX_SUBJECTS);
        assert_eq!(bp.instances(SubjectKind::Pen).count(), 1 + (MAX_SUBJECTS - 3));
        assert_eq!(bp.roles[bp.catalog.id("Pen 9").unwrap()], Role::Plain, "past the eighth slot");
        let mut b = Brain::new(Arc::new(bp), BrainParams::default());
        let mut p = seeing_a_pen(View { distance: 1.0, bearing: 0.0 });
        p.seen = [true; MAX_SUBJECTS];
        p.tracks = [Some(View { distance: 1.0, bearing: 0.0 }); MAX_SUBJECTS];
        for _ in 0..5 {
            b.tick(&p);
        }
        b.net.check().unwrap();
        assert!(b.net.get("Pen 6").is_some() && b.net.get("Pen 7").is_none());
        // A copy whose first node the structure lacks.
        s.collections[2].nodes.retain(|n| n != "Pen");
        s.links.retain(|l| l.from != "Pen" && l.to != "Pen");
        let bp = Blueprint::new(s);
        assert_eq!(bp.subject(SubjectKind::Pen), None);
        let mut b = Brain::new(Arc::new(bp), BrainParams::default());
        for _ in 0..5 {
            b.tick(&p);
        }
        assert_eq!(b.leader(), Some(SubjectKind::Pen), "Pen 2 leads");
    }
}
