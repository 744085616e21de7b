//! The basic network structure of seed 001 as data: five collections of nodes (Task and
//! Perception static, Subject, Control and Actuator dynamic) and the typed, weighted links of the
//! seed's tables. Loaded from RON (`assets/network.ron`) and checked like a scene, with every
//! error naming the bad entry; printed in the seed's own table format (`NT:DE`, `LT:LW`).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::error::SceneError;

/// The structure shipped with crsim: the seed's tables and the nodes that make the network the
/// whole controller (search, bumper, radio).
pub const DEFAULT_NETWORK: &str = include_str!("../../assets/network.ron");

/// Seed 001's basic structure exactly as its tables give it.
pub const SEED_NETWORK: &str = include_str!("../../assets/seed001-network.ron");

/// When a collection's nodes exist.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Lifetime {
    /// Created at the start and kept.
    Static,
    /// Created by their collection's manager on a connection request, removed when unused.
    Dynamic,
}

/// The most nodes a structure may have (a running network keeps its links' ends in 16 bits).
pub const MAX_NODES: usize = 1000;

/// The five collections of the seed, in the order activity flows through them.
pub const COLLECTIONS: [&str; 5] = ["Task", "Perception", "Subject", "Control", "Actuator"];

/// A collection and its nodes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CollectionSpec {
    pub name: String,
    pub lifetime: Lifetime,
    pub nodes: Vec<String>,
}

/// The link types, one per pair of layers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum LinkKind {
    /// Task → Subject.
    Motivation,
    /// Perception → Subject.
    Evidence,
    /// Subject → Control.
    Command,
    /// Control → Actuator.
    Drive,
    /// Actuator → a target outside the network (Box, Pen, Robot).
    Effect,
}

impl LinkKind {
    /// The collection a link of this kind leaves from and the one it enters (`None`: a target).
    pub fn layers(self) -> (&'static str, Option<&'static str>) {
        match self {
            LinkKind::Motivation => ("Task", Some("Subject")),
            LinkKind::Evidence => ("Perception", Some("Subject")),
            LinkKind::Command => ("Subject", Some("Control")),
            LinkKind::Drive => ("Control", Some("Actuator")),
            LinkKind::Effect => ("Actuator", None),
        }
    }

    /// The short form used in the seed's tables (`LT`).
    pub fn short(self) -> &'static str {
        match self {
            LinkKind::Motivation => "M",
            LinkKind::Evidence => "E",
            LinkKind::Command => "C",
            LinkKind::Drive => "D",
            LinkKind::Effect => "F",
        }
    }
}

/// A link of the structure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkSpec {
    pub from: String,
    pub to: String,
    pub kind: LinkKind,
    pub weight: f32,
}

/// The whole structure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkStructure {
    pub collections: Vec<CollectionSpec>,
    /// What actuators act on, outside the network.
    pub targets: Vec<String>,
    pub links: Vec<LinkSpec>,
}

impl NetworkStructure {
    /// The collection a node belongs to.
    pub fn collection_of(&self, node: &str) -> Option<&CollectionSpec> {
        self.collections.iter().find(|c| c.nodes.iter().any(|n| n == node))
    }

    /// Links leaving `node`.
    pub fn links_from<'a>(&'a self, node: &'a str) -> impl Iterator<Item = &'a LinkSpec> + 'a {
        self.links.iter().filter(move |l| l.from == node)
    }

    /// Links entering `node`.
    pub fn links_to<'a>(&'a self, node: &'a str) -> impl Iterator<Item = &'a LinkSpec> + 'a {
        self.links.iter().filter(move |l| l.to == node)
    }

    /// The seed's tables, one per collection: a row per node (`name (NT:DE)`), a column per
    /// node or target it links to, `LT:LW` where a link is and `-` where none is. `degree` gives
    /// a node's degree of execution, if it exists in a running network.
    pub fn tables(&self, degree: impl Fn(&str) -> Option<f32>) -> String {
        let mut out = String::new();
        for c in &self.collections {
            let mut columns: Vec<&str> = Vec::new();
            for n in &c.nodes {
                for l in self.links_from(n) {
                    if !columns.contains(&l.to.as_str()) {
                        columns.push(&l.to);
                    }
                }
            }
            // In the seed's order: the next collection's nodes, then the targets.
            let order: Vec<&str> = self
                .collections
                .iter()
                .flat_map(|c| c.nodes.iter())
                .chain(self.targets.iter())
                .map(String::as_str)
                .collect();
            columns.sort_by_key(|col| order.iter().position(|o| o == col).unwrap_or(usize::MAX));
            let _ = writeln!(out, "The {} Collection", c.name);
            let width = 24;
            let _ = write!(out, "{:width$}", "");
            for col in &columns {
                let _ = write!(out, "{col:>10}");
            }
            let _ = writeln!(out);
            for n in &c.nodes {
                let nt = match c.lifetime {
                    Lifetime::Static => "S",
                    Lifetime::Dynamic => "D",
                };
                let de = degree(n).map_or("-".to_string(), |d| format!("{d:.2}"));
                let _ = write!(out, "{:width$}", format!("{n} ({nt}:{de})"));
                for col in &columns {
                    let cell = self
                        .links_from(n)
                        .find(|l| l.to == *col)
                        .map_or("-".to_string(), |l| format!("{}:{:.2}", l.kind.short(), l.weight));
                    let _ = write!(out, "{cell:>10}");
                }
                let _ = writeln!(out);
            }
            let _ = writeln!(out);
        }
        out
    }
}

/// Parses and checks a structure; `path` is only used in messages.
pub fn parse_network(text: &str, path: &str) -> Result<NetworkStructure, String> {
    let s: NetworkStructure = ron::Options::default()
        .from_str(text)
        .map_err(|e| format!("{path}:{}:{}: {}", e.span.start.line, e.span.start.col, e.code))?;
    let errors = validate(&s);
    if errors.is_empty() {
        Ok(s)
    } else {
        Err(errors.iter().map(|e| format!("{path}: {e}")).collect::<Vec<_>>().join("\n"))
    }
}

/// Whether a RON text is a network structure (its first item, after comments, is
/// `NetworkStructure(`) rather than a scene.
pub fn is_structure_text(text: &str) -> bool {
    text.lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with("//"))
        .is_some_and(|l| l.starts_with("NetworkStructure"))
}

/// The shipped structure.
pub fn default_network() -> NetworkStructure {
    parse_network(DEFAULT_NETWORK, "assets/network.ron").expect("the shipped structure is checked by tests")
}

/// `structure` with a further subject node `name` ("Pen 2") of the kind of node `like` ("Pen"):
/// in the same collection, with a copy of each of its links.
pub fn with_copy_of(mut structure: NetworkStructure, like: &str, name: &str) -> NetworkStructure {
    if let Some(c) = structure.collections.iter_mut().find(|c| c.nodes.iter().any(|n| n == like)) {
        c.nodes.push(name.to_string());
    }
    let copies: Vec<LinkSpec> = structure
        .links
        .iter()
        .filter(|l| l.kind != LinkKind::Effect && (l.from == like || l.to == like))
        .map(|l| {
            let rename = |n: &String| if n == like { name.to_string() } else { n.clone() };
            LinkSpec { from: rename(&l.from), to: rename(&l.to), ..l.clone() }
        })
        .collect();
    structure.links.extend(copies);
    structure
}

/// Seed 001's own structure (its tables alone).
pub fn seed_network() -> NetworkStructure {
    parse_network(SEED_NETWORK, "assets/seed001-network.ron").expect("the shipped structure is checked by tests")
}

/// The most errors [`validate`] lists; a last one says how many more there were.
pub const MAX_ERRORS: usize = 100;

/// The most targets an error lists by name.
const TARGETS_SHOWN: usize = 10;

/// Checks a structure: the seed's five collections, unique node names, links between the right
/// layers with the right type, known ends, no duplicates, finite weights. One pass over the
/// nodes and one over the links (a node's collection is looked up, not searched for), and at
/// most [`MAX_ERRORS`] errors listed, so a hostile file of many bad links costs time and memory
/// in proportion to its size.
pub fn validate(s: &NetworkStructure) -> Vec<SceneError> {
    let mut errors = Errors::default();
    let names: Vec<&str> = s.collections.iter().map(|c| c.name.as_str()).collect();
    if names != COLLECTIONS {
        errors.add(
            "collections".into(),
            format!("must be {} in this order, got {}", COLLECTIONS.join(", "), names.join(", ")),
        );
    }
    for c in &s.collections {
        let expected =
            if matches!(c.name.as_str(), "Task" | "Perception") { Lifetime::Static } else { Lifetime::Dynamic };
        if c.lifetime != expected {
            errors.add(format!("collection \"{}\"", c.name), format!("must be {expected:?}"));
        }
    }
    let nodes: usize = s.collections.iter().map(|c| c.nodes.len()).sum();
    if nodes > MAX_NODES {
        errors.add("collections".into(), format!("have {nodes} nodes; a structure may have at most {MAX_NODES}"));
    }
    // Each node's collection (the first, where a node is in two).
    let mut collection_of: BTreeMap<&str, &str> = BTreeMap::new();
    for c in &s.collections {
        for n in &c.nodes {
            if let Some(other) = collection_of.get(n.as_str()) {
                errors.add(format!("node \"{n}\""), format!("is in both \"{other}\" and \"{}\"", c.name));
            } else {
                collection_of.insert(n, &c.name);
            }
        }
    }
    let targets: BTreeSet<&str> = s.targets.iter().map(String::as_str).collect();
    let mut pairs: BTreeSet<(&str, &str)> = BTreeSet::new();
    for l in &s.links {
        let item = || format!("link \"{}\" -> \"{}\"", l.from, l.to);
        if !l.weight.is_finite() {
            errors.add_with(item, || format!("weight must be a finite number, got {}", l.weight));
        }
        if !pairs.insert((&l.from, &l.to)) {
            errors.add_with(item, || "appears twice".into());
        }
        let (from_layer, to_layer) = l.kind.layers();
        match collection_of.get(l.from.as_str()) {
            None => errors.add_with(item, || format!("\"{}\" is not a node", l.from)),
            Some(&c) if c != from_layer => errors.add_with(item, || {
                format!("a {:?} link leaves a {from_layer} node, but \"{}\" is in {c}", l.kind, l.from)
            }),
            Some(_) => {}
        }
        match to_layer {
            Some(layer) => match collection_of.get(l.to.as_str()) {
                None => errors.add_with(item, || format!("\"{}\" is not a node", l.to)),
                Some(&c) if c != layer => errors.add_with(item, || {
                    format!("a {:?} link enters a {layer} node, but \"{}\" is in {c}", l.kind, l.to)
                }),
                Some(_) => {}
            },
            None if !targets.contains(l.to.as_str()) => {
                errors.add_with(item, || format!("\"{}\" is not a target (targets: {})", l.to, listed(&s.targets)))
            }
            None => {}
        }
    }
    errors.finish()
}

/// Names for a message: the first [`TARGETS_SHOWN`], and how many more.
fn listed(names: &[String]) -> String {
    let shown: Vec<&str> = names.iter().take(TARGETS_SHOWN).map(String::as_str).collect();
    match names.len().saturating_sub(TARGETS_SHOWN) {
        0 => shown.join(", "),
        more => format!("{} and {more} more", shown.join(", ")),
    }
}

/// The errors of a check, the first [`MAX_ERRORS`] of them written out and the rest counted.
#[derive(Default)]
struct Errors {
    listed: Vec<SceneError>,
    more: usize,
}

impl Errors {
    fn add(&mut self, item: String, message: String) {
        self.add_with(|| item, || message);
    }

    /// An error whose text is made only when it will be listed.
    fn add_with(&mut self, item: impl FnOnce() -> String, message: impl FnOnce() -> String) {
        if self.listed.len() < MAX_ERRORS {
            self.listed.push(SceneError { item: item(), message: message() });
        } else {
            self.more += 1;
        }
    }

    fn finish(mut self) -> Vec<SceneError> {
        if self.more > 0 {
            let message = format!("and {} more errors like those above (the first {MAX_ERRORS} are listed)", self.more);
            self.listed.push(SceneError { item: "structure".into(), message });
        }
        self.listed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(text: &str) -> String {
        parse_network(text, "n.ron").unwrap_err()
    }

    #[test]
    fn the_seeds_structure_is_its_tables() {
        let s = seed_network();
        let nodes: Vec<Vec<&str>> =
            s.collections.iter().map(|c| c.nodes.iter().map(String::as_str).collect()).collect();
        assert_eq!(
            nodes,
            vec![
                vec!["Charging", "Collecting"],
                vec!["Camera", "GripSensor", "Power"],
                vec!["Box", "Pen", "Station"],
                vec!["Move", "Turn", "Grip"],
                vec!["Speed", "Angle", "Gripper"],
            ]
        );
        let targets = |n: &str| s.links.iter().filter(|l| l.from == n).map(|l| l.to.clone()).collect::<Vec<_>>();
        // The seed's tables, row by row.
        assert_eq!(targets("Charging"), vec!["Station"]);
        assert_eq!(targets("Collecting"), vec!["Box", "Pen"]);
        assert_eq!(targets("Camera"), vec!["Box", "Pen", "Station"]);
        assert_eq!(targets("GripSensor"), vec!["Box", "Pen"]);
        assert_eq!(targets("Power"), vec!["Station"]);
        assert_eq!(targets("Box"), vec!["Move", "Turn", "Grip"]);
        assert_eq!(targets("Pen"), vec!["Move", "Turn", "Grip"]);
        assert_eq!(targets("Station"), vec!["Move", "Turn"]);
        assert_eq!(targets("Move"), vec!["Speed"]);
        assert_eq!(targets("Turn"), vec!["Angle"]);
        assert_eq!(targets("Grip"), vec!["Gripper"]);
        assert_eq!(targets("Speed"), vec!["Robot"]);
        assert_eq!(targets("Angle"), vec!["Robot"]);
        assert_eq!(targets("Gripper"), vec!["Box", "Pen", "Robot"]);
        assert_eq!(s.links.len(), 25);
    }

    /// crsim's structure is the seed's with nodes added: every node and link of the seed's
    /// tables is in it with the same type (weights differ where the added inputs rebalance them).
    #[test]
    fn the_shipped_structure_holds_the_seeds() {
        let (seed, ours) = (seed_network(), default_network());
        for (a, b) in seed.collections.iter().zip(&ours.collections) {
            assert_eq!((&a.name, a.lifetime), (&b.name, b.lifetime));
            assert!(a.nodes.iter().all(|n| b.nodes.contains(n)), "{} lacks some of {:?}", b.name, a.nodes);
        }
        for l in &seed.links {
            let found = ours.links.iter().find(|o| o.from == l.from && o.to == l.to);
            assert_eq!(found.map(|o| o.kind), Some(l.kind), "{} -> {}", l.from, l.to);
        }
        let added: Vec<&str> = ours.collections.iter().flat_map(|c| &c.nodes).map(String::as_str).collect();
        for n in ["Bumper", "Radio", "Search", "Obstacle"] {
            assert!(added.contains(&n), "{n}");
        }
    }

    #[test]
    fn tables_in_the_seeds_format() {
        let s = seed_network();
        let t = s.tables(|n| (n == "Camera").then_some(0.5));
        assert!(t.contains("The Task Collection"), "{t}");
        let charging = t.lines().find(|l| l.starts_with("Charging")).unwrap();
        assert!(charging.starts_with("Charging (S:-)"), "{charging}");
        assert_eq!(charging.split_whitespace().skip(2).collect::<Vec<_>>(), vec!["-", "-", "M:2.00"]);
        let camera = t.lines().find(|l| l.starts_with("Camera")).unwrap();
        assert!(camera.starts_with("Camera (S:0.50)"), "{camera}");
        let station = t.lines().find(|l| l.starts_with("Station (D")).unwrap();
        assert_eq!(station.split_whitespace().skip(2).collect::<Vec<_>>(), vec!["C:1.00", "C:1.00", "-"]);
    }

    #[test]
    fn too_many_nodes_is_an_error() {
        let mut s = default_network();
        s.collections[1].nodes.extend((0..MAX_NODES).map(|i| format!("Sensor{i}")));
        let m: Vec<String> = validate(&s).iter().map(|e| e.to_string()).collect();
        assert!(m.iter().any(|e| e.contains("a structure may have at most 1000")), "{m:?}");
    }

    #[test]
    fn bad_entries_are_named() {
        let mut s = default_network();
        s.links.push(LinkSpec { from: "Camera".into(), to: "Speed".into(), kind: LinkKind::Evidence, weight: 1.0 });
        s.links.push(LinkSpec { from: "Ghost".into(), to: "Pen".into(), kind: LinkKind::Evidence, weight: f32::NAN });
        s.links.push(LinkSpec { from: "Gripper".into(), to: "Table".into(), kind: LinkKind::Effect, weight: 1.0 });
        s.links.push(s.links[0].clone());
        s.collections[2].nodes.push("Move".into());
        let m: Vec<String> = validate(&s).iter().map(|e| e.to_string()).collect();
        for expected in [
            "link \"Camera\" -> \"Speed\": a Evidence link enters a Subject node, but \"Speed\" is in Actuator",
            "link \"Ghost\" -> \"Pen\": \"Ghost\" is not a node",
            "link \"Ghost\" -> \"Pen\": weight must be a finite number, got NaN",
            "link \"Gripper\" -> \"Table\": \"Table\" is not a target (targets: Box, Pen, Robot)",
            "link \"Charging\" -> \"Station\": appears twice",
            "node \"Move\": is in both \"Subject\" and \"Control\"",
        ] {
            assert!(m.contains(&expected.to_string()), "{expected} not in {m:#?}");
        }
    }

    /// A hostile structure: 20,000 links to unknown nodes and effects on unknown targets among
    /// 20,000 targets. The check lists the first errors and counts the rest (it used to list them
    /// all, each naming every target, and allocated until it aborted).
    #[test]
    fn many_bad_links_give_the_first_errors_and_a_count() {
        let mut s = default_network();
        s.targets = (0..20_000).map(|i| format!("T{i}")).collect();
        let bad = |i: usize, kind| LinkSpec { from: format!("N{i}"), to: format!("U{i}"), kind, weight: 1.0 };
        s.links = (0..20_000).map(|i| bad(i, if i % 2 == 0 { LinkKind::Effect } else { LinkKind::Drive })).collect();
        let errors = validate(&s);
        assert_eq!(errors.len(), MAX_ERRORS + 1);
        // Each link has two errors (an unknown node at each end): 40,000 in all.
        assert_eq!(
            errors[MAX_ERRORS].to_string(),
            "structure: and 39900 more errors like those above (the first 100 are listed)"
        );
        let target = errors.iter().find(|e| e.message.contains("is not a target")).unwrap();
        assert!(
            target.message.ends_with("(targets: T0, T1, T2, T3, T4, T5, T6, T7, T8, T9 and 19990 more)"),
            "{target}"
        );
    }

    #[test]
    fn syntax_and_unknown_fields_give_the_place() {
        let e = messages("NetworkStructure(collections: [], targets: [], links: [], colour: 1)");
        assert!(e.starts_with("n.ron:1:"), "{e}");
        assert!(e.contains("colour"), "{e}");
        let e = messages("NetworkStructure(collections: [], targets: [], links: [])");
        assert!(e.contains("collections: must be Task, Perception, Subject, Control, Actuator"), "{e}");
    }
}
