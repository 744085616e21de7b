//! The running network of seed 001 as a plain type, run as the seed's process: nodes with a
//! degree of execution in [0, 1] and a signal; a [`Manager`] per collection that creates,
//! injects and removes its nodes; [`ConnectionRequest`]s, each a link of the structure asked for
//! by one end and sent to the manager of the other, which forwards it to that node or creates the
//! (dynamic) node and attaches it; and each node's [`Ports`], filled when the node checks its
//! pending requests.
//!
//! How the seed's problems are avoided (seed-notes): structural changes (creating a subject and
//! the control and actuator nodes behind it, removing one and whatever is left with no input) are
//! queued and applied only between ticks, every removal finished before any creation, in a
//! deterministic order; then every node checks its requests before any node reads, so none reads
//! a port whose other end is not connected; requests naming a removed node are withdrawn, never
//! waited on; and every tick reads the degrees and signals of the previous tick (double
//! buffering) and then writes them all, with no locks to deadlock on.
//!
//! Nodes are addressed by their index in the structure ([`NodeId`]) so a tick of a robot's
//! network touches no strings and allocates nothing.

use std::sync::Arc;

use crate::scene::network::{COLLECTIONS, Lifetime, LinkKind, NetworkStructure};

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

    /// The index in [`Catalog::links`] of the link from `from` to `to` (a checked structure has
    /// at most one).
    pub fn link_index(&self, from: NodeId, to: NodeId) -> Option<usize> {
        self.links.iter().position(|l| l.from == from && l.to == to)
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
    /// A motion of its own (the search's cruise, the back-off from an obstacle): speed and turn
    /// rate as fractions of the robot's maxima.
    Steer { speed: f32, turn: f32 },
}

/// A node of the running network.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Node {
    /// Degree of execution, as of the last tick.
    pub degree: f32,
    /// Signal, as of the last tick.
    pub signal: Signal,
}

/// A link of the running network: a connected port pair. Its ends are kept in 16 bits (a
/// checked structure has at most [`crate::scene::network::MAX_NODES`] nodes), so that a robot's
/// links take 12 bytes each.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Link {
    from: u16,
    to: u16,
    pub kind: LinkKind,
    pub weight: f32,
}

impl Link {
    pub fn new(from: NodeId, to: NodeId, kind: LinkKind, weight: f32) -> Self {
        let id = |n: NodeId| u16::try_from(n).unwrap_or(u16::MAX);
        Self { from: id(from), to: id(to), kind, weight }
    }

    /// The node it leaves.
    pub fn from(&self) -> NodeId {
        usize::from(self.from)
    }

    /// The node it enters.
    pub fn to(&self) -> NodeId {
        usize::from(self.to)
    }
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
    /// The link list being rebuilt when nodes connect their requests.
    links: Vec<Link>,
}

thread_local! {
    static TICK_ROOM: std::cell::Cell<TickRoom> = const {
        std::cell::Cell::new(TickRoom { next: Vec::new(), inputs: Vec::new(), links: Vec::new() })
    };
}

/// A connection request (seed 001): a link of the structure, by its index in
/// [`Catalog::links`], that one node asks for. It goes to the manager of the other end, which
/// forwards it to that node if it exists, or creates the node (a dynamic one) and attaches it.
/// Each end then connects it at the start of its next process, into its input or output ports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionRequest {
    pub link: usize,
}

/// The manager of one collection: it creates and injects its collection's nodes, removes them,
/// and takes the connection requests addressed to them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Manager {
    /// Nodes it created and removed so far.
    pub created: u32,
    pub removed: u32,
    /// Connection requests it forwarded to a node of its collection that existed, and those it
    /// created a node for.
    pub forwarded: u32,
    pub created_for: u32,
}

/// A node's ports as it sees them: the structure links (indices in [`Catalog::links`]) it has
/// connected as inputs, in the order it connected them, and as outputs; and the requests naming
/// it that it has not checked yet.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Ports {
    pub inputs: Vec<usize>,
    pub outputs: Vec<usize>,
    pub pending: Vec<ConnectionRequest>,
}

/// The network.
#[derive(Debug, Clone)]
pub struct Network {
    catalog: Arc<Catalog>,
    /// Indexed by [`NodeId`]; `None` where the node does not exist.
    nodes: Vec<Option<Node>>,
    /// One manager per collection, by collection index (0 Task … 4 Actuator; a checked
    /// structure has the seed's five).
    pub managers: [Manager; COLLECTIONS.len()],
    /// The connected ports: links both of whose ends have connected them, by target in node
    /// order and, for each target, in the order its input ports connected them — a tick reads
    /// each node's inputs as one run of this list. A node's ports are its runs here.
    pub links: Vec<Link>,
    /// Connection requests submitted and not yet checked by their ends, in the order submitted.
    requests: Vec<ConnectionRequest>,
    /// The queued changes, sorted (removals before creations, each in node order), each once. A
    /// short list rather than a set: it holds no memory between changes.
    pending: Vec<Change>,
    pub ticks: u64,
    /// Nodes created and removed so far.
    pub created: u64,
    pub removed: u64,
}

/// The weighted mean of input degrees: Σ wᵢ·dᵢ / Σ |wᵢ|, clamped to [0, 1] (negative weights
/// inhibit). No inputs give 0.
#[inline]
pub fn weighted_mean(inputs: impl IntoIterator<Item = (f32, f32)>) -> f32 {
    let (sum, norm) = inputs.into_iter().fold((0.0, 0.0), |(s, n), (w, d)| (s + w * d, n + w.abs()));
    if norm > 0.0 { (sum / norm).clamp(0.0, 1.0) } else { 0.0 }
}

impl Network {
    /// The network at the start (seed 001's process): the managers of the Task and Perception
    /// collections create and inject every static node; each submits a connection request for
    /// every output port whose destination is a static node — none in the seed's structure, so
    /// the network starts incomplete.
    pub fn new(catalog: Arc<Catalog>) -> Self {
        let n = catalog.names.len();
        let mut net = Self {
            nodes: vec![None; n],
            managers: [Manager::default(); COLLECTIONS.len()],
            links: Vec::new(),
            requests: Vec::new(),
            pending: Vec::new(),
            ticks: 0,
            created: 0,
            removed: 0,
            catalog,
        };
        for id in 0..n {
            if !net.catalog.dynamic[id] {
                net.inject(id);
            }
        }
        let catalog = Arc::clone(&net.catalog);
        for id in 0..n {
            for (k, l) in catalog.links.iter().enumerate() {
                if l.from == id && !catalog.dynamic[l.to] {
                    net.submit(k, id);
                }
            }
        }
        net.connect_pending();
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

    /// A node's ports (empty where it does not exist).
    pub fn ports(&self, id: NodeId) -> Ports {
        let ports = |end: fn(&Link) -> NodeId| -> Vec<usize> {
            let mine = self.links.iter().filter(|l| end(l) == id);
            mine.filter_map(|l| self.catalog.link_index(l.from(), l.to())).collect()
        };
        let names = |r: &&ConnectionRequest| {
            let l = self.catalog.links[r.link];
            l.from == id || l.to == id
        };
        Ports {
            inputs: ports(|l| l.to()),
            outputs: ports(|l| l.from()),
            pending: self.requests.iter().filter(names).copied().collect(),
        }
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
        self.queue(Change::CreateSubject(subject));
    }

    /// Queues the removal of a subject node (applied before the next tick).
    pub fn forget(&mut self, subject: NodeId) {
        self.queue(Change::RemoveSubject(subject));
    }

    fn queue(&mut self, change: Change) {
        if let Err(at) = self.pending.binary_search(&change) {
            self.pending.insert(at, change);
        }
    }

    /// Whether changes wait for the next tick.
    pub fn has_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    /// Connection requests submitted and not yet connected by their ends.
    pub fn pending_requests(&self) -> usize {
        self.requests.len()
    }

    /// Every node's degree by [`NodeId`], `None` where the node does not exist (recordings).
    pub fn degrees(&self) -> impl Iterator<Item = Option<f32>> + '_ {
        self.nodes.iter().map(|n| n.map(|n| n.degree))
    }

    /// Shows recorded degrees (replay): the nodes that existed with their degrees, the links
    /// between them connected, and no change pending. Never used while the network runs.
    pub fn show_degrees(&mut self, degrees: &[Option<f32>]) {
        for (id, slot) in self.nodes.iter_mut().enumerate() {
            *slot = degrees.get(id).copied().flatten().map(|degree| Node { degree, signal: Signal::None });
        }
        self.pending.clear();
        self.requests.clear();
        self.links.clear();
        let catalog = Arc::clone(&self.catalog);
        for to in 0..self.nodes.len() {
            for l in catalog.links.iter() {
                if l.to == to && self.nodes[l.from].is_some() && self.nodes[to].is_some() {
                    self.links.push(Link::new(l.from, to, l.kind, l.weight));
                }
            }
        }
    }

    /// A node's manager creates it and injects it into the network (no ports yet).
    fn inject(&mut self, id: NodeId) {
        self.nodes[id] = Some(Node { degree: 0.0, signal: Signal::None });
        self.count(id, |m| m.created += 1);
        if self.catalog.dynamic[id] {
            self.created += 1;
        }
    }

    /// Counts on the manager of node `id`'s collection.
    fn count(&mut self, id: NodeId, add: impl FnOnce(&mut Manager)) {
        if let Some(m) = self.managers.get_mut(self.catalog.collection[id]) {
            add(m);
        }
    }

    /// Whether link `k` is connected or asked for.
    fn requested(&self, k: usize) -> bool {
        let c = self.catalog.links[k];
        self.links.iter().any(|l| l.from() == c.from && l.to() == c.to) || self.requests.iter().any(|r| r.link == k)
    }

    /// Node `asker` submits the request for link `k` (once) to the manager of the link's other
    /// end: a node that exists gets it forwarded; a dynamic node that does not (an output port's
    /// destination) is created, with the request attached to it. Both ends check it when the
    /// nodes next check their requests.
    fn submit(&mut self, k: usize, asker: NodeId) {
        if self.requested(k) {
            return;
        }
        let l = self.catalog.links[k];
        let other = if asker == l.from { l.to } else { l.from };
        if self.nodes[other].is_some() {
            self.count(other, |m| m.forwarded += 1);
            self.requests.push(ConnectionRequest { link: k });
        } else if self.catalog.dynamic[other] && other == l.to {
            self.count(other, |m| m.created_for += 1);
            self.requests.push(ConnectionRequest { link: k });
            self.create(other);
        }
    }

    /// Creates a dynamic node (if absent) through its collection's manager: it asks for the
    /// input ports whose source exists, then for every output port (creating the dynamic nodes
    /// behind them).
    fn create(&mut self, id: NodeId) {
        if id >= self.nodes.len() {
            return;
        }
        if self.nodes[id].is_none() {
            self.inject(id);
        }
        let catalog = Arc::clone(&self.catalog);
        for (k, l) in catalog.links.iter().enumerate() {
            if l.to == id && self.nodes[l.from].is_some() {
                self.submit(k, id);
            }
        }
        for (k, l) in catalog.links.iter().enumerate() {
            if l.from == id {
                self.submit(k, id);
            }
        }
    }

    /// Removes a node with its ports (its links go from the other ends' ports too), then every
    /// dynamic node left with no input, each through its manager.
    fn remove(&mut self, id: NodeId) {
        if id >= self.nodes.len() || !self.catalog.dynamic[id] || self.nodes[id].is_none() {
            return;
        }
        self.drop_node(id);
        loop {
            let catalog = &self.catalog;
            let fed = |n: NodeId| {
                self.links.iter().any(|l| l.to() == n) || self.requests.iter().any(|r| catalog.links[r.link].to == n)
            };
            let orphan = (0..self.nodes.len()).find(|&n| self.nodes[n].is_some() && catalog.dynamic[n] && !fed(n));
            let Some(o) = orphan else { break };
            self.drop_node(o);
        }
    }

    fn drop_node(&mut self, id: NodeId) {
        self.nodes[id] = None;
        // Its links leave the other ends' ports, and requests that name it are withdrawn.
        self.links.retain(|l| l.from() != id && l.to() != id);
        let catalog = &self.catalog;
        self.requests.retain(|r| catalog.links[r.link].from != id && catalog.links[r.link].to != id);
        self.count(id, |m| m.removed += 1);
        self.removed += 1;
    }

    /// Applies the queued changes: all removals first, then all creations, each in node order;
    /// then every node checks its connection requests.
    pub fn apply_changes(&mut self) {
        self.restructure();
        self.connect_pending();
    }

    /// The managers' part of applying the queued changes: every removal finished (the node, its
    /// links at both ends, the requests naming it, the nodes left with no input) before any
    /// creation starts; creations inject nodes and submit their connection requests.
    pub fn restructure(&mut self) {
        // Creating and removing queue nothing, so the list is taken whole (and its memory freed).
        for change in std::mem::take(&mut self.pending) {
            match change {
                Change::RemoveSubject(s) => self.remove(s),
                Change::CreateSubject(s) => self.create(s),
            }
        }
    }

    /// The nodes' part: every node checks its pending connection requests and connects each
    /// into its input or output ports; a link is complete when both ends have. All nodes check
    /// before any node reads, so none reads a port whose other end is not connected yet.
    pub fn connect_pending(&mut self) {
        if self.requests.is_empty() {
            return;
        }
        // Each target's new input ports follow those it had, in the order they were asked for;
        // the list is rebuilt in the thread's scratch and copied back into its own allocation.
        let requests = std::mem::take(&mut self.requests);
        let mut room = TICK_ROOM.take();
        let merged = &mut room.links;
        merged.clear();
        let mut at = 0;
        for id in 0..self.nodes.len() {
            while self.links.get(at).is_some_and(|l| l.to() == id) {
                merged.push(self.links[at]);
                at += 1;
            }
            for r in &requests {
                let l = self.catalog.links[r.link];
                if l.to == id && self.nodes[l.from].is_some() && self.nodes[id].is_some() {
                    merged.push(Link::new(l.from, id, l.kind, l.weight));
                }
            }
        }
        if merged.len() > self.links.capacity() {
            // Room for exactly these: a robot keeps its largest network's links, not a power of two.
            self.links = merged.to_vec();
        } else {
            self.links.clear();
            self.links.extend_from_slice(merged);
        }
        TICK_ROOM.set(room);
    }

    /// Weighted mean of a node's input ports, from the degrees of the last tick.
    pub fn input(&self, id: NodeId) -> f32 {
        weighted_mean(
            self.links
                .iter()
                .filter(|l| l.to() == id)
                .filter_map(|l| self.node(l.from()).map(|n| (l.weight, n.degree))),
        )
    }

    /// One tick (seed 001's process): apply the queued changes and let every node check its
    /// connection requests; then every node reads its input ports as of the last tick, averages
    /// them, and its functional unit `unit(node, weighted mean, inputs)` gives its new degree
    /// (clamped to [0, 1]) and signal, which it writes to all its output ports — all together,
    /// after every node has read.
    pub fn tick(&mut self, mut unit: impl FnMut(NodeId, f32, &[Input]) -> (f32, Signal)) {
        self.apply_changes();
        let TickRoom { mut next, mut inputs, links } = TICK_ROOM.take();
        next.clear();
        // Each node's input ports are one run of the link list (see `links`).
        let mut at = 0;
        for id in 0..self.nodes.len() {
            if self.nodes[id].is_none() {
                continue;
            }
            inputs.clear();
            while self.links.get(at).is_some_and(|l| l.to() < id) {
                at += 1;
            }
            let start = at;
            while self.links.get(at).is_some_and(|l| l.to() == id) {
                at += 1;
            }
            for l in &self.links[start..at] {
                if let Some(from) = &self.nodes[l.from()] {
                    inputs.push(Input {
                        from: l.from(),
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
        TICK_ROOM.set(TickRoom { next, inputs, links });
        self.ticks += 1;
    }

    /// Every link joins two existing nodes, no request waits, and every dynamic node has an
    /// input.
    pub fn check(&self) -> Result<(), String> {
        for l in &self.links {
            if self.node(l.from()).is_none() || self.node(l.to()).is_none() {
                return Err(format!("link {} -> {} has a missing end", self.name(l.from()), self.name(l.to())));
            }
        }
        if let Some(r) = self.requests.first() {
            let l = self.catalog.links[r.link];
            return Err(format!("the request {} -> {} is not checked yet", self.name(l.from), self.name(l.to)));
        }
        for (id, _) in self.nodes() {
            if self.catalog.dynamic[id] && !self.links.iter().any(|l| l.to() == id) {
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
            self.links.iter().map(|l| format!("{} -> {}", self.name(l.from()), self.name(l.to()))).collect();
        v.sort();
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scene::network::seed_network;

    fn names(net: &Network) -> Vec<&str> {
        net.names()
    }

    fn id(net: &Network, name: &str) -> NodeId {
        net.catalog().id(name).unwrap()
    }

    #[test]
    fn the_initial_network_is_static_and_incomplete() {
        let net = Network::from_structure(seed_network());
        assert_eq!(names(&net), vec!["Camera", "Charging", "Collecting", "GripSensor", "Power"]);
        assert!(net.links.is_empty(), "task and perception nodes link only to dynamic nodes");
        net.check().unwrap();
    }

    #[test]
    fn seeing_a_pen_builds_the_seeds_network() {
        let mut net = Network::from_structure(seed_network());
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
        let mut net = Network::from_structure(seed_network());
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
        let mut net = Network::from_structure(seed_network());
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
        let mut net = Network::from_structure(seed_network());
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

    /// The seed's walkthrough, step by step: the managers create the static nodes; the Camera
    /// sees a pen and the subject manager creates Pen, whose requests go to the managers of its
    /// ends — forwarded to Collecting, Camera and GripSensor, which exist; creating Move, Turn
    /// and Grip, which do not, and behind them Speed, Angle and Gripper; every node then checks
    /// its requests and fills its ports.
    #[test]
    fn the_seeds_process_managers_requests_and_ports() {
        let mut net = Network::from_structure(seed_network());
        let created: Vec<u32> = net.managers.iter().map(|m| m.created).collect();
        assert_eq!(created, [2, 3, 0, 0, 0], "Task and Perception create their static nodes");
        assert_eq!(net.pending_requests(), 0);

        net.perceive(id(&net, "Pen"));
        net.restructure();
        let m = |c: usize| net.managers[c];
        assert_eq!((m(2).created, m(3).created, m(4).created), (1, 3, 3));
        assert_eq!((m(0).forwarded, m(1).forwarded), (1, 2), "Collecting; Camera and GripSensor");
        assert_eq!((m(3).created_for, m(4).created_for), (3, 3), "Move, Turn, Grip; Speed, Angle, Gripper");
        // Created and asked for, not yet connected: Pen's ports are empty, its requests wait.
        let pen = id(&net, "Pen");
        let ports = net.ports(pen);
        assert!(ports.inputs.is_empty() && ports.outputs.is_empty());
        assert_eq!(ports.pending.len(), 6);
        assert_eq!(net.pending_requests(), 9, "nine links asked for");
        assert!(net.check().is_err(), "half-connected until every node checks its requests");

        net.connect_pending();
        let ends = |ks: &[usize]| -> Vec<String> {
            ks.iter()
                .map(|&k| net.catalog().links[k])
                .map(|l| format!("{}>{}", net.name(l.from), net.name(l.to)))
                .collect()
        };
        let ports = net.ports(pen);
        assert_eq!(ends(&ports.inputs), ["Collecting>Pen", "Camera>Pen", "GripSensor>Pen"]);
        assert_eq!(ends(&ports.outputs), ["Pen>Move", "Pen>Turn", "Pen>Grip"]);
        assert_eq!(ends(&net.ports(id(&net, "Camera")).outputs), ["Camera>Pen"]);
        assert_eq!(net.pending_requests(), 0);
        net.check().unwrap();
    }

    /// Seed problem one: a node reading a buffer whose other end is not connected. Read between
    /// the managers' part and the nodes' check, Pen would miss the Camera's degree; a tick lets
    /// every node check its requests before any node reads, so it never does.
    #[test]
    fn no_node_reads_a_port_whose_other_end_is_not_connected() {
        let mut net = Network::from_structure(seed_network());
        let (camera, pen) = (id(&net, "Camera"), id(&net, "Pen"));
        let sees = move |n: NodeId, x: f32, _: &[Input]| (if n == camera { 1.0 } else { x }, Signal::None);
        net.tick(sees);
        net.perceive(pen);
        net.restructure();
        assert_eq!(net.input(pen), 0.0, "the naive order: Pen reads before the links are connected");
        net.connect_pending();
        assert!(net.input(pen) > 0.0, "connected, Pen hears the Camera");

        // Through ticks: every input a unit reads comes over a link connected at both ends.
        let mut net = Network::from_structure(seed_network());
        net.tick(sees);
        for subject in ["Pen", "Station", "Box"] {
            net.perceive(id(&net, subject));
            let mut read = Vec::new();
            net.tick(|n, x, inputs| {
                read.extend(inputs.iter().map(|i| (i.from, n)));
                sees(n, x, inputs)
            });
            for (from, to) in read {
                let linked = |k: &usize| net.catalog().links[*k].from == from && net.catalog().links[*k].to == to;
                assert!(net.ports(to).inputs.iter().any(linked) && net.ports(from).outputs.iter().any(linked));
            }
            net.check().unwrap();
        }
        assert_eq!(net.get("Pen").map(|n| n.degree), Some(0.2), "Camera 1 of Pen's five weights");
    }

    /// Seed problem two: creating a node while another's deletion is unfinished. Forgetting and
    /// perceiving in one tick, the removal — the node, its links at both ends, the nodes left
    /// without input — ends before the creation starts, and the result is what a fresh
    /// creation gives.
    #[test]
    fn a_creation_never_overlaps_an_unfinished_removal() {
        let fresh = {
            let mut net = Network::from_structure(seed_network());
            net.perceive(id(&net, "Pen"));
            net.tick(|_, x, _| (x, Signal::None));
            net
        };
        let mut net = fresh.clone();
        net.forget(id(&net, "Pen"));
        net.perceive(id(&net, "Pen"));
        net.tick(|_, x, _| (x, Signal::None));
        net.check().unwrap();
        assert_eq!(net.link_set(), fresh.link_set());
        for n in 0..net.catalog().names.len() {
            assert_eq!(net.ports(n), fresh.ports(n), "{}", net.name(n));
        }
        assert_eq!((net.removed, net.created), (7, 14), "Pen and the six behind it, then again");
    }

    /// Seed problem three: deadlock when nodes are removed. Requests that name a node being
    /// removed are withdrawn rather than waited on: a subject forgotten before its requests
    /// were checked takes the nodes created for it along, and nothing waits.
    #[test]
    fn removing_a_node_whose_requests_are_pending_leaves_nothing_waiting() {
        let mut net = Network::from_structure(seed_network());
        net.perceive(id(&net, "Station"));
        net.tick(|_, x, _| (x, Signal::None));
        net.perceive(id(&net, "Pen"));
        net.restructure();
        assert!(net.pending_requests() > 0);
        // Pen goes before it was ever connected: its requests are withdrawn at both ends; Grip
        // and Gripper (created for it alone) go with it; Move and Turn stay, fed by Station.
        net.forget(id(&net, "Pen"));
        net.restructure();
        net.connect_pending();
        assert_eq!(net.pending_requests(), 0);
        net.check().unwrap();
        assert!(net.get("Pen").is_none() && net.get("Grip").is_none() && net.get("Gripper").is_none());
        assert!(net.get("Move").is_some() && net.get("Turn").is_some());
        assert_eq!(
            net.link_set(),
            [
                "Camera -> Station",
                "Charging -> Station",
                "Move -> Speed",
                "Power -> Station",
                "Station -> Move",
                "Station -> Turn",
                "Turn -> Angle"
            ]
        );
    }
}
