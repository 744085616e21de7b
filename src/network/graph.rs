//! The running network of seed 001 as a plain type: nodes with a degree of execution in [0, 1],
//! typed weighted links, and the managers that create and remove dynamic nodes.
//!
//! How the seed's problems are avoided (seed-notes): every tick reads the degrees of the previous
//! tick (double buffering) and then writes them all; structural changes (creating a subject and
//! the control and actuator nodes behind it, removing one and whatever is left with no input)
//! are queued and applied only between ticks, removals first, in a deterministic order. So a
//! node never reads a link whose other end is missing, creation never overlaps an unfinished
//! deletion, and there are no locks to deadlock on.

use std::collections::{BTreeMap, BTreeSet};

use super::structure::{Lifetime, LinkKind, NetworkStructure};

/// A node of the running network.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// The collection's index in the structure (0 Task … 4 Actuator).
    pub collection: usize,
    pub dynamic: bool,
    /// Degree of execution, as of the last tick.
    pub degree: f32,
}

/// A link of the running network.
#[derive(Debug, Clone, PartialEq)]
pub struct Link {
    pub from: String,
    pub to: String,
    pub kind: LinkKind,
    pub weight: f32,
}

/// A structural change, applied between ticks.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Change {
    /// The subject manager removes a subject node (no longer perceived).
    RemoveSubject(String),
    /// The subject manager creates a subject node (newly perceived).
    CreateSubject(String),
}

/// The network.
#[derive(Debug, Clone)]
pub struct Network {
    structure: NetworkStructure,
    pub nodes: BTreeMap<String, Node>,
    pub links: Vec<Link>,
    pending: BTreeSet<Change>,
    pub ticks: u64,
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
    pub fn new(structure: NetworkStructure) -> Self {
        let mut nodes = BTreeMap::new();
        for (i, c) in structure.collections.iter().enumerate() {
            if c.lifetime == Lifetime::Static {
                for n in &c.nodes {
                    nodes.insert(n.clone(), Node { collection: i, dynamic: false, degree: 0.0 });
                }
            }
        }
        let mut net = Self { structure, nodes, links: Vec::new(), pending: BTreeSet::new(), ticks: 0 };
        let statics: Vec<String> = net.nodes.keys().cloned().collect();
        for n in statics {
            net.connect_outputs_to_existing(&n);
        }
        net
    }

    pub fn structure(&self) -> &NetworkStructure {
        &self.structure
    }

    /// Queues the creation of a subject node (applied before the next tick).
    pub fn perceive(&mut self, subject: &str) {
        self.pending.insert(Change::CreateSubject(subject.to_string()));
    }

    /// Queues the removal of a subject node (applied before the next tick).
    pub fn forget(&mut self, subject: &str) {
        self.pending.insert(Change::RemoveSubject(subject.to_string()));
    }

    /// Links a node's outputs to the nodes of its structure links that already exist.
    fn connect_outputs_to_existing(&mut self, node: &str) {
        let specs: Vec<_> = self.structure.links_from(node).cloned().collect();
        for l in specs {
            if self.nodes.contains_key(&l.to) && !self.has_link(&l.from, &l.to) {
                self.links.push(Link { from: l.from, to: l.to, kind: l.kind, weight: l.weight });
            }
        }
    }

    fn has_link(&self, from: &str, to: &str) -> bool {
        self.links.iter().any(|l| l.from == from && l.to == to)
    }

    /// Creates a dynamic node (if absent) through its collection's manager: its input requests
    /// go to existing nodes, its output requests create the missing dynamic nodes behind it.
    fn create(&mut self, name: &str) {
        let Some(ci) = self.structure.collections.iter().position(|c| c.nodes.iter().any(|n| n == name)) else {
            return;
        };
        if !self.nodes.contains_key(name) {
            self.nodes.insert(name.to_string(), Node { collection: ci, dynamic: true, degree: 0.0 });
        }
        let inputs: Vec<_> = self.structure.links_to(name).cloned().collect();
        for l in inputs {
            if self.nodes.contains_key(&l.from) && !self.has_link(&l.from, &l.to) {
                self.links.push(Link { from: l.from, to: l.to, kind: l.kind, weight: l.weight });
            }
        }
        let outputs: Vec<_> = self.structure.links_from(name).cloned().collect();
        for l in outputs {
            // Effect links go to targets outside the network.
            if l.kind == LinkKind::Effect {
                continue;
            }
            if !self.nodes.contains_key(&l.to) {
                self.create(&l.to);
            }
            if !self.has_link(&l.from, &l.to) {
                self.links.push(Link { from: l.from, to: l.to, kind: l.kind, weight: l.weight });
            }
        }
    }

    /// Removes a node and its links, then every dynamic node left with no input.
    fn remove(&mut self, name: &str) {
        if self.nodes.get(name).is_none_or(|n| !n.dynamic) {
            return;
        }
        self.nodes.remove(name);
        self.links.retain(|l| l.from != name && l.to != name);
        loop {
            let orphan = self
                .nodes
                .iter()
                .find(|(n, node)| node.dynamic && !self.links.iter().any(|l| &l.to == *n))
                .map(|(n, _)| n.clone());
            let Some(o) = orphan else { break };
            self.nodes.remove(&o);
            self.links.retain(|l| l.from != o && l.to != o);
        }
    }

    /// Applies the queued changes: all removals first, then all creations, each in name order.
    pub fn apply_changes(&mut self) {
        for change in std::mem::take(&mut self.pending) {
            match change {
                Change::RemoveSubject(s) => self.remove(&s),
                Change::CreateSubject(s) => self.create(&s),
            }
        }
    }

    /// Weighted mean of a node's inputs, from the degrees of the last tick.
    pub fn input(&self, name: &str) -> f32 {
        weighted_mean(
            self.links
                .iter()
                .filter(|l| l.to == name)
                .filter_map(|l| self.nodes.get(&l.from).map(|n| (l.weight, n.degree))),
        )
    }

    /// One tick: apply queued changes, then every node reads its inputs as of the last tick and
    /// its functional unit `unit(name, node, input)` gives its new degree; all write together.
    pub fn tick(&mut self, mut unit: impl FnMut(&str, &Node, f32) -> f32) {
        self.apply_changes();
        let next: Vec<(String, f32)> = self
            .nodes
            .iter()
            .map(|(name, node)| (name.clone(), unit(name, node, self.input(name)).clamp(0.0, 1.0)))
            .collect();
        for (name, degree) in next {
            if let Some(n) = self.nodes.get_mut(&name) {
                n.degree = degree;
            }
        }
        self.ticks += 1;
    }

    /// Every link joins two existing nodes, and every dynamic node has an input.
    pub fn check(&self) -> Result<(), String> {
        for l in &self.links {
            if !self.nodes.contains_key(&l.from) || !self.nodes.contains_key(&l.to) {
                return Err(format!("link {} -> {} has a missing end", l.from, l.to));
            }
        }
        for (n, node) in &self.nodes {
            if node.dynamic && !self.links.iter().any(|l| &l.to == n) {
                return Err(format!("dynamic node {n} has no input"));
            }
        }
        Ok(())
    }

    /// The network in the seed's table format, with each existing node's degree.
    pub fn dump(&self) -> String {
        self.structure.tables(|n| self.nodes.get(n).map(|node| node.degree))
    }

    /// Links as `from -> to`, sorted, for comparisons.
    pub fn link_set(&self) -> Vec<String> {
        let mut v: Vec<String> = self.links.iter().map(|l| format!("{} -> {}", l.from, l.to)).collect();
        v.sort();
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::network::structure::default_network;

    fn names(net: &Network) -> Vec<&str> {
        net.nodes.keys().map(String::as_str).collect()
    }

    #[test]
    fn the_initial_network_is_static_and_incomplete() {
        let net = Network::new(default_network());
        assert_eq!(names(&net), vec!["Camera", "Charging", "Collecting", "GripSensor", "Power"]);
        assert!(net.links.is_empty(), "task and perception nodes link only to dynamic nodes");
        net.check().unwrap();
    }

    #[test]
    fn seeing_a_pen_builds_the_seeds_network() {
        let mut net = Network::new(default_network());
        net.perceive("Pen");
        // Nothing changes until the next tick.
        assert_eq!(net.nodes.len(), 5);
        net.tick(|_, _, x| x);
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
        let mut net = Network::new(default_network());
        net.perceive("Pen");
        net.perceive("Station");
        net.tick(|_, _, x| x);
        let links = net.link_set();
        for l in ["Charging -> Station", "Camera -> Station", "Power -> Station", "Station -> Move", "Station -> Turn"]
        {
            assert!(links.contains(&l.to_string()), "{l} in {links:?}");
        }
        assert_eq!(links.len(), 9 + 5);
        net.forget("Pen");
        net.tick(|_, _, x| x);
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
        let mut net = Network::new(default_network());
        net.perceive("Box");
        net.tick(|_, _, x| x);
        // Remove Box and create Pen and Box again in one tick: removals first, then creations.
        net.forget("Box");
        net.perceive("Pen");
        net.perceive("Box");
        net.forget("Station");
        net.tick(|_, _, x| x);
        net.check().unwrap();
        assert!(net.nodes.contains_key("Box") && net.nodes.contains_key("Pen"));
        assert!(!net.nodes.contains_key("Station"));
        assert!(net.link_set().contains(&"Box -> Grip".to_string()));
    }

    #[test]
    fn weighted_mean_and_double_buffered_ticks() {
        assert_eq!(weighted_mean([(1.0, 1.0), (1.0, 0.0)]), 0.5);
        assert_eq!(weighted_mean([(2.0, 1.0), (1.0, 0.0)]), 2.0 / 3.0);
        // A negative weight inhibits: the mean is clamped at 0.
        assert_eq!(weighted_mean([(1.0, 0.2), (-1.0, 1.0)]), 0.0);
        assert_eq!(weighted_mean([]), 0.0);
        let mut net = Network::new(default_network());
        net.perceive("Pen");
        net.tick(|_, _, x| x);
        // Perception drives the camera to 1; each tick reads the last tick's degrees, so the
        // activity needs one tick per layer to reach the actuators.
        let unit = |name: &str, _: &Node, x: f32| if name == "Camera" || name == "Collecting" { 1.0 } else { x };
        net.tick(unit);
        assert_eq!(net.nodes["Camera"].degree, 1.0);
        assert_eq!(net.nodes["Pen"].degree, 0.0, "read before the camera wrote");
        net.tick(unit);
        // Pen's inputs: Collecting 1, Camera 1, GripSensor 0 with weight -1: (1 + 1 - 0) / 3.
        assert!((net.nodes["Pen"].degree - 2.0 / 3.0).abs() < 1e-6);
        assert_eq!(net.nodes["Move"].degree, 0.0);
        net.tick(unit);
        assert!((net.nodes["Move"].degree - 2.0 / 3.0).abs() < 1e-6);
        net.tick(unit);
        assert!((net.nodes["Speed"].degree - 2.0 / 3.0).abs() < 1e-6);
        let dump = net.dump();
        assert!(dump.lines().any(|l| l.starts_with("Speed (D:0.67)")), "{dump}");
    }
}
