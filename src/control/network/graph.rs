//! The running network of seed 001 as a plain type: nodes with a degree of execution in [0, 1]
//! and a signal, typed weighted links, and the managers that create and remove dynamic nodes.
//!
//! How the seed's problems are avoided (seed-notes): every tick reads the degrees and signals of
//! the previous tick (double buffering) and then writes them all; structural changes (creating a
//! subject and the control and actuator nodes behind it, removing one and whatever is left with
//! no input) are queued and applied only between ticks, removals first, in a deterministic
//! order. So a node never reads a link whose other end is missing, creation never overlaps an
//! unfinished deletion, and there are no locks to deadlock on.
//!
//! Nodes are addressed by their index in the structure ([`NodeId`]) so a tick of a robot's
//! network touches no strings and allocates nothing.

use std::collections::BTreeSet;
use std::sync::Arc;

use crate::scene::network::{Lifetime, LinkKind, NetworkStructure};

/// A node's index in its [`Catalog`].
pub type NodeId = usize;

/// The structure indexed for running: node names, collections and links by node index. Shared by
/// every robot's network.
#[derive(Debug, Clone, PartialEq)]
pub struct Catalog {
    pub structure: NetworkStructure,
    /// Node names, collection by collection, in the structure's order.
    pub names: Vec<String>,
    /// Each node's collection index (0 Task … 4 Actuator).
    pub collection: Vec<usize>,
    pub dynamic: Vec<bool>,
    /// Links between nodes (links to targets outside the network are not in here).
    pub links: Vec<CatalogLink>,
}

/// A link of the structure between two nodes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CatalogLink {
    pub from: NodeId,
    pub to: NodeId,
    pub kind: LinkKind,
    pub weight: f32,
}

impl Catalog {
    /// Indexes a checked structure (see [`crate::scene::network::validate`]).
    pub fn new(structure: NetworkStructure) -> Self {
        let mut names = Vec::new();
        let mut collection = Vec::new();
        let mut dynamic = Vec::new();
        for (i, c) in structure.collections.iter().enumerate() {
            for n in &c.nodes {
                names.push(n.clone());
                collection.push(i);
                dynamic.push(c.lifetime == Lifetime::Dynamic);
            }
        }
        let id = |n: &str| names.iter().position(|x| x == n);
        // Effect links go to targets outside the network (which may share a subject's name).
        let links = structure
            .links
            .iter()
            .filter(|l| l.kind != LinkKind::Effect)
            .filter_map(|l| Some(CatalogLink { from: id(&l.from)?, to: id(&l.to)?, kind: l.kind, weight: l.weight }))
            .collect();
        Self { structure, names, collection, dynamic, links }
    }

    /// A node's index by name.
    pub fn id(&self, name: &str) -> Option<NodeId> {
        self.names.iter().position(|n| n == name)
    }

    /// The nodes of a collection, by its index.
    pub fn collection_nodes(&self, collection: usize) -> impl Iterator<Item = NodeId> + '_ {
        (0..self.names.len()).filter(move |&i| self.collection[i] == collection)
    }
}

/// What a node passes on besides its degree.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub enum Signal {
    #[default]
    None,
    /// A subject's object as the robot sees it: distance (m), bearing (rad, positive to the
    /// left), and whether the robot is at it (a pen in reach, the load over a box, on a
    /// charging station).
    Track { distance: f32, bearing: f32, at: bool },
    /// An intention or command in [-1, 1]: speed or turn rate as a fraction of the robot's
    /// maximum, or the gripper (+1 close, -1 open, 0 leave as is).
    Level(f32),
}

/// A node of the running network.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Node {
    /// Degree of execution, as of the last tick.
    pub degree: f32,
    /// Signal, as of the last tick.
    pub signal: Signal,
}

/// A link of the running network.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Link {
    pub from: NodeId,
    pub to: NodeId,
    pub kind: LinkKind,
    pub weight: f32,
}

/// One input port as a functional unit reads it: the link and the other end's output of the
/// last tick.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Input {
    pub from: NodeId,
    pub kind: LinkKind,
    pub weight: f32,
    pub degree: f32,
    pub signal: Signal,
}

/// A structural change, applied between ticks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Change {
    /// The subject manager removes a subject node (no longer perceived).
    RemoveSubject(NodeId),
    /// The subject manager creates a subject node (newly perceived).
    CreateSubject(NodeId),
}

/// Room for a tick's new outputs and for one node's inputs. Each thread keeps one between
/// ticks, rather than each network: 10,000 robots' networks kept 4.5 MB of it (and its cache
/// misses) for one tick's use at a time.
#[derive(Default)]
struct TickRoom {
    next: Vec<(NodeId, Node)>,
    inputs: Vec<Input>,
}

thread_local! {
    static TICK_ROOM: std::cell::Cell<TickRoom> = const { std::cell::Cell::new(TickRoom { next: Vec::new(), inputs: Vec::new() }) };
}

/// The network.
#[derive(Debug, Clone)]
pub struct Network {
    catalog: Arc<Catalog>,
    /// Indexed by [`NodeId`]; `None` where the node does not exist.
    nodes: Vec<Option<Node>>,
    pub links: Vec<Link>,
    pending: BTreeSet<Change>,
    pub ticks: u64,
    /// Nodes created and removed so far.
    pub created: u64,
    pub removed: u64,
}

/// The weighted mean of input degrees: Σ wᵢ·dᵢ / Σ |wᵢ|, clamped to [0, 1] (negative weights
/// inhibit). No inputs give 0.
pub fn weighted_mean(inputs: impl IntoIterator<Item = (f32, f32)>) -> f32 {
    let (sum, norm) = inputs.into_iter().fold((0.0, 0.0), |(s, n), (w, d)| (s + w * d, n + w.abs()));
    if norm > 0.0 { (sum / norm).clamp(0.0, 1.0) } else { 0.0 }
}

impl Network {
    /// The network at the start: every static node (Task and Perception), connected to the
    /// static targets of its connection requests — none, as in the seed, so the network starts
    /// incomplete.
    pub fn new(catalog: Arc<Catalog>) -> Self {
        let n = catalog.names.len();
        let mut net = Self {
            nodes: vec![None; n],
            links: Vec::new(),
            pending: BTreeSet::new(),
            ticks: 0,
            created: 0,
            removed: 0,
            catalog,
        };
        for id in 0..n {
            if !net.catalog.dynamic[id] {
                net.nodes[id] = Some(Node { degree: 0.0, signal: Signal::None });
            }
        }
        for id in 0..n {
            if net.nodes[id].is_some() {
                net.connect_outputs_to_existing(id);
            }
        }
        net
    }

    /// A network on a structure of its own (tests, tools).
    pub fn from_structure(structure: NetworkStructure) -> Self {
        Self::new(Arc::new(Catalog::new(structure)))
    }

    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    pub fn structure(&self) -> &NetworkStructure {
        &self.catalog.structure
    }

    /// A node by index, if it exists.
    pub fn node(&self, id: NodeId) -> Option<&Node> {
        self.nodes.get(id).and_then(Option::as_ref)
    }

    /// A node by name, if it exists.
    pub fn get(&self, name: &str) -> Option<&Node> {
        self.catalog.id(name).and_then(|id| self.node(id))
    }

    /// Existing nodes with their index.
    pub fn nodes(&self) -> impl Iterator<Item = (NodeId, &Node)> {
        self.nodes.iter().enumerate().filter_map(|(i, n)| n.as_ref().map(|n| (i, n)))
    }

    /// Names of the existing nodes, sorted.
    pub fn names(&self) -> Vec<&str> {
        let mut v: Vec<&str> = self.nodes().map(|(i, _)| self.catalog.names[i].as_str()).collect();
        v.sort_unstable();
        v
    }

    pub fn name(&self, id: NodeId) -> &str {
        &self.catalog.names[id]
    }

    /// Queues the creation of a subject node (applied before the next tick).
    pub fn perceive(&mut self, subject: NodeId) {
        self.pending.insert(Change::CreateSubject(subject));
    }

    /// Queues the removal of a subject node (applied before the next tick).
    pub fn forget(&mut self, subject: NodeId) {
        self.pending.insert(Change::RemoveSubject(subject));
    }

    /// Whether changes wait for the next tick.
    pub fn has_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    fn has_link(&self, from: NodeId, to: NodeId) -> bool {
        self.links.iter().any(|l| l.from == from && l.to == to)
    }

    fn link(&mut self, l: CatalogLink) {
        if !self.has_link(l.from, l.to) {
            self.links.push(Link { from: l.from, to: l.to, kind: l.kind, weight: l.weight });
        }
    }

    /// Every node's degree by [`NodeId`], `None` where the node does not exist (recordings).
    pub fn degrees(&self) -> impl Iterator<Item = Option<f32>> + '_ {
        self.nodes.iter().map(|n| n.map(|n| n.degree))
    }

    /// Shows recorded degrees (replay): the nodes that existed with their degrees, the links
    /// between them, and no change pending. Never used while the network runs.
    pub fn show_degrees(&mut self, degrees: &[Option<f32>]) {
        for (id, slot) in self.nodes.iter_mut().enumerate() {
            *slot = degrees.get(id).copied().flatten().map(|degree| Node { degree, signal: Signal::None });
        }
        self.links.clear();
        self.pending.clear();
        let catalog = Arc::clone(&self.catalog);
        for l in catalog.links.iter() {
            if self.nodes[l.from].is_some() && self.nodes[l.to].is_some() {
                self.link(*l);
            }
        }
    }

    /// Links a node's outputs to the nodes of its structure links that already exist.
    fn connect_outputs_to_existing(&mut self, node: NodeId) {
        let catalog = Arc::clone(&self.catalog);
        for l in catalog.links.iter().filter(|l| l.from == node) {
            if self.nodes[l.to].is_some() {
                self.link(*l);
            }
        }
    }

    /// Creates a dynamic node (if absent) through its collection's manager: its input requests
    /// go to existing nodes, its output requests create the missing dynamic nodes behind it.
    fn create(&mut self, id: NodeId) {
        if id >= self.nodes.len() {
            return;
        }
        if self.nodes[id].is_none() {
            self.nodes[id] = Some(Node { degree: 0.0, signal: Signal::None });
            self.created += 1;
        }
        let catalog = Arc::clone(&self.catalog);
        for l in catalog.links.iter().filter(|l| l.to == id) {
            if self.nodes[l.from].is_some() {
                self.link(*l);
            }
        }
        for l in catalog.links.iter().filter(|l| l.from == id) {
            if self.nodes[l.to].is_none() {
                self.create(l.to);
            }
            self.link(*l);
        }
    }

    /// Removes a node and its links, then every dynamic node left with no input.
    fn remove(&mut self, id: NodeId) {
        if id >= self.nodes.len() || !self.catalog.dynamic[id] || self.nodes[id].is_none() {
            return;
        }
        self.drop_node(id);
        loop {
            let orphan = (0..self.nodes.len())
                .find(|&n| self.nodes[n].is_some() && self.catalog.dynamic[n] && !self.links.iter().any(|l| l.to == n));
            let Some(o) = orphan else { break };
            self.drop_node(o);
        }
    }

    fn drop_node(&mut self, id: NodeId) {
        self.nodes[id] = None;
        self.links.retain(|l| l.from != id && l.to != id);
        self.removed += 1;
    }

    /// Applies the queued changes: all removals first, then all creations, each in node order.
    pub fn apply_changes(&mut self) {
        while let Some(change) = self.pending.pop_first() {
            match change {
                Change::RemoveSubject(s) => self.remove(s),
                Change::CreateSubject(s) => self.create(s),
            }
        }
    }

    /// Weighted mean of a node's inputs, from the degrees of the last tick.
    pub fn input(&self, id: NodeId) -> f32 {
        weighted_mean(
            self.links.iter().filter(|l| l.to == id).filter_map(|l| self.node(l.from).map(|n| (l.weight, n.degree))),
        )
    }

    /// One tick: apply queued changes, then every node reads its input ports as of the last
    /// tick, and its functional unit `unit(node, weighted mean, inputs)` gives its new degree
    /// (clamped to [0, 1]) and signal; all write together.
    pub fn tick(&mut self, mut unit: impl FnMut(NodeId, f32, &[Input]) -> (f32, Signal)) {
        self.apply_changes();
        let TickRoom { mut next, mut inputs } = TICK_ROOM.take();
        next.clear();
        for id in 0..self.nodes.len() {
            if self.nodes[id].is_none() {
                continue;
            }
            inputs.clear();
            for l in self.links.iter().filter(|l| l.to == id) {
                if let Some(from) = &self.nodes[l.from] {
                    inputs.push(Input {
                        from: l.from,
                        kind: l.kind,
                        weight: l.weight,
                        degree: from.degree,
                        signal: from.signal,
                    });
                }
            }
            let mean = weighted_mean(inputs.iter().map(|i| (i.weight, i.degree)));
            let (degree, signal) = unit(id, mean, &inputs);
            let degree = if degree.is_finite() { degree.clamp(0.0, 1.0) } else { 0.0 };
            next.push((id, Node { degree, signal }));
        }
        for (id, node) in next.drain(..) {
            self.nodes[id] = Some(node);
        }
        TICK_ROOM.set(TickRoom { next, inputs });
        self.ticks += 1;
    }

    /// Every link joins two existing nodes, and every dynamic node has an input.
    pub fn check(&self) -> Result<(), String> {
        for l in &self.links {
            if self.node(l.from).is_none() || self.node(l.to).is_none() {
                return Err(format!("link {} -> {} has a missing end", self.name(l.from), self.name(l.to)));
            }
        }
        for (id, _) in self.nodes() {
            if self.catalog.dynamic[id] && !self.links.iter().any(|l| l.to == id) {
                return Err(format!("dynamic node {} has no input", self.name(id)));
            }
        }
        Ok(())
    }

    /// The network in the seed's table format, with each existing node's degree.
    pub fn dump(&self) -> String {
        self.catalog.structure.tables(|n| self.get(n).map(|node| node.degree))
    }

    /// Links as `from -> to`, sorted, for comparisons.
    pub fn link_set(&self) -> Vec<String> {
        let mut v: Vec<String> =
            self.links.iter().map(|l| format!("{} -> {}", self.name(l.from), self.name(l.to))).collect();
        v.sort();
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scene::network::default_network;

    fn names(net: &Network) -> Vec<&str> {
        net.names()
    }

    fn id(net: &Network, name: &str) -> NodeId {
        net.catalog().id(name).unwrap()
    }

    #[test]
    fn the_initial_network_is_static_and_incomplete() {
        let net = Network::from_structure(default_network());
        assert_eq!(names(&net), vec!["Camera", "Charging", "Collecting", "GripSensor", "Power"]);
        assert!(net.links.is_empty(), "task and perception nodes link only to dynamic nodes");
        net.check().unwrap();
    }

    #[test]
    fn seeing_a_pen_builds_the_seeds_network() {
        let mut net = Network::from_structure(default_network());
        net.perceive(id(&net, "Pen"));
        // Nothing changes until the next tick.
        assert_eq!(net.names().len(), 5);
        net.tick(|_, x, _| (x, Signal::None));
        assert_eq!(
            names(&net),
            vec![
                "Angle",
                "Camera",
                "Charging",
                "Collecting",
                "Grip",
                "GripSensor",
                "Gripper",
                "Move",
                "Pen",
                "Power",
                "Speed",
                "Turn"
            ]
        );
        assert_eq!(
            net.link_set(),
            vec![
                "Camera -> Pen",
                "Collecting -> Pen",
                "Grip -> Gripper",
                "GripSensor -> Pen",
                "Move -> Speed",
                "Pen -> Grip",
                "Pen -> Move",
                "Pen -> Turn",
                "Turn -> Angle",
            ]
        );
        net.check().unwrap();
    }

    #[test]
    fn a_pen_and_a_station_then_the_pen_leaves_view() {
        let mut net = Network::from_structure(default_network());
        net.perceive(id(&net, "Pen"));
        net.perceive(id(&net, "Station"));
        net.tick(|_, x, _| (x, Signal::None));
        let links = net.link_set();
        for l in ["Charging -> Station", "Camera -> Station", "Power -> Station", "Station -> Move", "Station -> Turn"]
        {
            assert!(links.contains(&l.to_string()), "{l} in {links:?}");
        }
        assert_eq!(links.len(), 9 + 5);
        net.forget(id(&net, "Pen"));
        net.tick(|_, x, _| (x, Signal::None));
        // Pen goes with its links; Grip and Gripper are left with no input and go too; Move and
        // Turn stay, fed by Station.
        assert_eq!(
            names(&net),
            vec![
                "Angle",
                "Camera",
                "Charging",
                "Collecting",
                "GripSensor",
                "Move",
                "Power",
                "Speed",
                "Station",
                "Turn"
            ]
        );
        assert_eq!(
            net.link_set(),
            vec![
                "Camera -> Station",
                "Charging -> Station",
                "Move -> Speed",
                "Power -> Station",
                "Station -> Move",
                "Station -> Turn",
                "Turn -> Angle",
            ]
        );
        net.check().unwrap();
    }

    #[test]
    fn creating_and_removing_in_the_same_tick_stays_consistent() {
        let mut net = Network::from_structure(default_network());
        net.perceive(id(&net, "Box"));
        net.tick(|_, x, _| (x, Signal::None));
        // Remove Box and create Pen and Box again in one tick: removals first, then creations.
        net.forget(id(&net, "Box"));
        net.perceive(id(&net, "Pen"));
        net.perceive(id(&net, "Box"));
        net.forget(id(&net, "Station"));
        net.tick(|_, x, _| (x, Signal::None));
        net.check().unwrap();
        assert!(net.get("Box").is_some() && net.get("Pen").is_some());
        assert!(net.get("Station").is_none());
        assert!(net.link_set().contains(&"Box -> Grip".to_string()));
    }

    #[test]
    fn weighted_mean_and_double_buffered_ticks() {
        assert_eq!(weighted_mean([(1.0, 1.0), (1.0, 0.0)]), 0.5);
        assert_eq!(weighted_mean([(2.0, 1.0), (1.0, 0.0)]), 2.0 / 3.0);
        // A negative weight inhibits: the mean is clamped at 0.
        assert_eq!(weighted_mean([(1.0, 0.2), (-1.0, 1.0)]), 0.0);
        assert_eq!(weighted_mean([]), 0.0);
        let mut net = Network::from_structure(default_network());
        net.perceive(id(&net, "Pen"));
        net.tick(|_, x, _| (x, Signal::None));
        // Perception drives the camera to 1; each tick reads the last tick's degrees, so the
        // activity needs one tick per layer to reach the actuators.
        let (camera, collecting) = (id(&net, "Camera"), id(&net, "Collecting"));
        let unit =
            |n: NodeId, x: f32, _: &[Input]| (if n == camera || n == collecting { 1.0 } else { x }, Signal::None);
        net.tick(unit);
        assert_eq!(net.get("Camera").unwrap().degree, 1.0);
        assert_eq!(net.get("Pen").unwrap().degree, 0.0, "read before the camera wrote");
        net.tick(unit);
        // Pen's inputs: Collecting 1 (weight 2), Camera 1 (weight 1), GripSensor 0 (weight -2):
        // (2 + 1 - 0) / 5.
        assert!((net.get("Pen").unwrap().degree - 0.6).abs() < 1e-6);
        assert_eq!(net.get("Move").unwrap().degree, 0.0);
        net.tick(unit);
        assert!((net.get("Move").unwrap().degree - 0.6).abs() < 1e-6);
        net.tick(unit);
        assert!((net.get("Speed").unwrap().degree - 0.6).abs() < 1e-6);
        let dump = net.dump();
        assert!(dump.lines().any(|l| l.starts_with("Speed (D:0.60)")), "{dump}");
    }
}
