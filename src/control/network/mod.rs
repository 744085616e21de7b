//! The behaviour network of seed 001: task, perception, subject, control and actuator nodes that
//! grow and shrink with what the robot sees.
//!
//! - [`crate::scene::network`]: the basic network structure as data (`assets/network.ron`, or
//!   the file a scene names), checked, and printed in the seed's table format;
//! - [`graph`]: the running network's mechanics (static and dynamic nodes, managers and
//!   connection requests, structural changes between ticks, double-buffered degrees and signals);
//! - [`units`]: the functional units and the [`Brain`] that runs a robot's network on its
//!   readings;
//! - [`navigation`]: the way to the nearest charging station around walls and boxes;
//! - [`controller`]: the think-stage system that feeds the brain from the sensors and drives the
//!   robot through skills, and the `collect` run metrics.

use bevy::prelude::*;
use serde_json::json;

pub mod controller;
pub mod graph;
pub mod navigation;
pub mod units;

pub use crate::scene::network::{NetworkStructure, default_network, parse_network, seed_network};
pub use controller::{CollectStats, NetworkAttach, NetworkController, Pursuing, SceneBlueprint};
pub use graph::{Catalog, Network, Node, NodeId, Signal, weighted_mean};
pub use navigation::StationMap;
pub use units::{Blueprint, Brain, BrainParams, Lead, Outputs, Percepts, SubjectKind, SubjectRequest};

use crate::robot::Battery;
use crate::scene::SceneLoaded;
use crate::sim::{Env, EnvStart, LoadSystems, PerEnv, RobotOrder, SimSystems, SimTime, add_report_section};
use crate::world::{Boxed, Pen};

/// When the last pen of an environment went into a box, if it has (one for each environment, in
/// a [`PerEnv`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CollectProgress {
    pub pens_total: u32,
    pub pens_boxed: u32,
    /// The step at whose end every pen was boxed.
    pub all_boxed_step: Option<u64>,
    /// Robot-steps spent going for a pen another robot was also going for (duplicated effort):
    /// each step, a pen pursued by k robots adds k − 1.
    pub duplicate_steps: u64,
    targets: Vec<Entity>,
}

pub(super) fn plugin(app: &mut App) {
    app.insert_resource(PerEnv::<CollectProgress>::one())
        .add_systems(PreUpdate, reset_progress.run_if(on_message::<SceneLoaded>).in_set(LoadSystems::React))
        .add_systems(FixedUpdate, record_progress.in_set(SimSystems::Record));
    crate::sim::add_optional_systems(app, FixedUpdate, record_progress, crate::sim::any_with::<NetworkController>);
    add_report_section(app, report_section);
}

fn reset_progress(mut progress: ResMut<PerEnv<CollectProgress>>, mut loaded: MessageReader<SceneLoaded>) {
    for loaded in loaded.read() {
        *progress.reach(loaded.env) = CollectProgress::default();
    }
}

fn record_progress(
    time: Res<SimTime>,
    starts: Res<PerEnv<EnvStart>>,
    pens: Query<(Has<Boxed>, &Env), With<Pen>>,
    collectors: Query<(&Pursuing, &Env), With<NetworkController>>,
    mut progress: ResMut<PerEnv<CollectProgress>>,
) {
    for (_, p) in progress.iter_mut() {
        p.targets.clear();
        (p.pens_total, p.pens_boxed) = (0, 0);
    }
    for (pursuing, env) in &collectors {
        if let (Some(pen), Some(p)) = (pursuing.0, progress.0.get_mut(env.index())) {
            p.targets.push(pen);
        }
    }
    for (is_boxed, env) in &pens {
        if let Some(p) = progress.0.get_mut(env.index()) {
            p.pens_total += 1;
            p.pens_boxed += u32::from(is_boxed);
        }
    }
    for (env, p) in progress.iter_mut() {
        p.targets.sort_unstable();
        let distinct = p.targets.chunk_by(|a, b| a == b).count();
        p.duplicate_steps += (p.targets.len() - distinct) as u64;
        if p.all_boxed_step.is_none() && p.pens_total > 0 && p.pens_boxed == p.pens_total {
            p.all_boxed_step = Some(starts.step_of(env, time.step));
        }
    }
}

/// A robot's network in the seed's table format (`NT:DE`, `LT:LW`), with its live links.
pub fn dump_network(world: &mut World, robot: &str) -> Option<String> {
    let mut q = world.query::<(&Name, &NetworkController)>();
    let (_, nc) = q.iter(world).find(|(n, _)| n.as_str() == robot)?;
    let net = &nc.brain.net;
    let mut out = format!("network of {robot} after {} ticks\n\n", net.ticks);
    out.push_str(&net.dump());
    let leading = nc.brain.leading_node.map_or("nothing", |id| net.name(id));
    out.push_str(&format!("Leading Move: {leading}\n"));
    if !nc.brain.sent.is_empty() {
        out.push_str(&format!("Subject requests sent at tick {}\n", nc.brain.sent_at));
        for r in &nc.brain.sent {
            match r.by() {
                Some(by) => out.push_str(&format!("  {} asks for {}\n", net.name(by), net.name(r.node()))),
                None => out.push_str(&format!("  {} removed: nobody asks for it\n", net.name(r.node()))),
            }
        }
    }
    out.push_str("Live links\n");
    for l in &net.links {
        out.push_str(&format!(
            "  {} -> {}  {}:{:.2}\n",
            net.name(l.from()),
            net.name(l.to()),
            l.kind.short(),
            l.weight
        ));
    }
    Some(out)
}

/// The `collect` section of the run metrics.
fn report_section(world: &mut World) -> Option<(String, serde_json::Value)> {
    let progress = world.get_resource::<PerEnv<CollectProgress>>()?.0.first()?.clone();
    let dt = world.get_resource::<SimTime>().map_or(0.0, |t| t.dt_exact);
    let order = world.get_resource::<RobotOrder>()?.0.clone();
    let mut q = world.query::<(&Name, &Battery, Option<&NetworkController>)>();
    let mut totals = CollectStats::default();
    let mut depleted = 0;
    let mut robots = Vec::new();
    let mut networked = 0;
    for e in order {
        let Ok((name, battery, nc)) = q.get(world, e) else { continue };
        depleted += battery.depletions;
        let Some(nc) = nc else { continue };
        networked += 1;
        let s = nc.stats;
        totals.boxed += s.boxed;
        totals.charging_visits += s.charging_visits;
        totals.contested += s.contested;
        totals.claims_sent += s.claims_sent;
        totals.yielded += s.yielded;
        robots.push(json!({
            "name": name.as_str(),
            "boxed": s.boxed,
            "charging_visits": s.charging_visits,
            "contested": s.contested,
            "claims_sent": s.claims_sent,
            "yielded": s.yielded,
            "battery_depletions": battery.depletions,
            "network_nodes": nc.brain.net.nodes().count(),
            "network_links": nc.brain.net.links.len(),
        }));
    }
    if networked == 0 && progress.pens_total == 0 {
        return None;
    }
    Some((
        "collect".into(),
        json!({
            "pens_total": progress.pens_total,
            "pens_boxed": progress.pens_boxed,
            "all_boxed_step": progress.all_boxed_step,
            "all_boxed_s": progress.all_boxed_step.map(|s| (s + 1) as f64 * dt),
            "duplicate_pursuit_s": progress.duplicate_steps as f64 * dt,
            "charging_visits": totals.charging_visits,
            "batteries_depleted": depleted,
            "contested": totals.contested,
            "claims_sent": totals.claims_sent,
            "yielded": totals.yielded,
            "robots": robots,
        }),
    ))
}
