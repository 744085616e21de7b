//! The run metrics: what `crsim run` prints and writes as JSON. Subsystems add their own
//! sections (for example `comms`, `collect`, `explore`) through the registry in
//! [`crate::sim::report`].

use std::collections::BTreeMap;
use std::fmt::Write as _;

use bevy::prelude::*;
use serde::{Deserialize, Serialize};

use super::until::RunUntil;
use crate::robot::{Battery, Odometry, Robot, pose};
use crate::scene::{ActiveScene, SceneOverrides};
use crate::sim::rng::SimSeed;
use crate::sim::{PerEnv, ReportSections, RobotOrder, SimTime, TrajectoryHash};
use crate::world::{Boxed, Held, Pen};

/// Per-robot results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RobotReport {
    pub name: String,
    pub x: f32,
    pub y: f32,
    pub heading_deg: f32,
    pub distance_m: f32,
    pub collisions: u32,
    /// Remaining charge, in the battery's units.
    pub battery: f32,
    /// Remaining charge as a fraction of capacity.
    pub battery_fraction: f32,
    pub battery_depletions: u32,
}

/// Pens on the floor, held and boxed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PenReport {
    pub total: u32,
    pub held: u32,
    pub boxed: u32,
}

/// A run's stop condition and when it was met.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UntilReport {
    pub condition: super::until::Until,
    pub reached_step: Option<u64>,
}

/// Everything a run reports.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunReport {
    pub scene: String,
    pub seed: u64,
    pub steps: u64,
    pub dt: f32,
    pub sim_time_s: f64,
    pub wall_time_s: f64,
    /// Trajectory hash, 16 hex digits.
    pub hash: String,
    /// The run was stopped (Ctrl-C, SIGTERM, SIGHUP) before all its steps: this is what was done.
    #[serde(default)]
    pub interrupted: bool,
    /// The command line's changes to the scene (`--set` paths with their values, `programs`).
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub overrides: serde_json::Map<String, serde_json::Value>,
    /// The stop condition (`--until`) and the step that met it (none: the steps ran out first).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<UntilReport>,
    pub robots: Vec<RobotReport>,
    pub pens: PenReport,
    /// Sections added by subsystems, keyed by name.
    #[serde(flatten)]
    pub sections: BTreeMap<String, serde_json::Value>,
}

/// Gathers the report of the loaded scene as it stands.
pub fn build_report(world: &mut World, wall_time_s: f64) -> RunReport {
    let time = *world.resource::<SimTime>();
    let hash = world.resource::<PerEnv<TrajectoryHash>>().only().hex();
    let seed = world.resource::<PerEnv<SimSeed>>().only().0;
    let scene = world.get_resource::<ActiveScene>().map_or_else(String::new, |s| s.scene.name.clone());
    let order = world.resource::<RobotOrder>().0.clone();
    let mut robots_q = world.query::<(&Name, &Transform, &Odometry, &Battery)>();
    let robots = order
        .iter()
        .filter_map(|&e| robots_q.get(world, e).ok())
        .map(|(name, t, odo, battery)| {
            let (p, heading) = pose(t);
            RobotReport {
                name: name.to_string(),
                x: p.x,
                y: p.y,
                heading_deg: heading.to_degrees(),
                distance_m: odo.distance,
                collisions: odo.collisions,
                battery: battery.charge,
                battery_fraction: battery.level(),
                battery_depletions: battery.depletions,
            }
        })
        .collect();
    let mut pens_q = world.query_filtered::<(Has<Held>, Has<Boxed>), (With<Pen>, Without<Robot>)>();
    let mut pens = PenReport { total: 0, held: 0, boxed: 0 };
    for (held, boxed) in pens_q.iter(world) {
        pens.total += 1;
        pens.held += u32::from(held);
        pens.boxed += u32::from(boxed);
    }
    let overrides = match world.get_resource::<SceneOverrides>().map(SceneOverrides::to_json) {
        Some(serde_json::Value::Object(map)) => map,
        _ => serde_json::Map::new(),
    };
    let until = world
        .get_resource::<RunUntil>()
        .and_then(|u| u.until.map(|condition| UntilReport { condition, reached_step: u.reached_at }));
    let fns = world.get_resource::<ReportSections>().map(|s| s.0.clone()).unwrap_or_default();
    let sections = fns.into_iter().filter_map(|f| f(world)).collect();
    RunReport {
        scene,
        seed,
        steps: time.step,
        dt: time.dt,
        sim_time_s: time.seconds(),
        wall_time_s,
        hash,
        interrupted: false,
        overrides,
        until,
        robots,
        pens,
        sections,
    }
}

impl RunReport {
    /// The human summary `crsim run` prints.
    pub fn summary(&self) -> String {
        let mut s = String::new();
        let rate = if self.wall_time_s > 0.0 { self.steps as f64 / self.wall_time_s } else { 0.0 };
        let _ = writeln!(s, "scene: {}  seed: {}", self.scene, self.seed);
        let _ = writeln!(
            s,
            "steps: {}  sim_time_s: {:.3}  wall_time_s: {:.3}  steps_per_s: {:.0}",
            self.steps, self.sim_time_s, self.wall_time_s, rate
        );
        let _ = writeln!(s, "pens: {} total, {} held, {} boxed", self.pens.total, self.pens.held, self.pens.boxed);
        let shown = self.robots.len().min(20);
        for r in &self.robots[..shown] {
            let _ = writeln!(
                s,
                "  {:<12} at ({:6.2}, {:6.2})  distance {:7.2} m  collisions {:4}  battery {:5.1}%",
                r.name,
                r.x,
                r.y,
                r.distance_m,
                r.collisions,
                r.battery_fraction * 100.0
            );
        }
        if self.robots.len() > shown {
            let _ = writeln!(s, "  ... and {} more robots", self.robots.len() - shown);
        }
        if let Some(u) = &self.until {
            let _ = match u.reached_step {
                Some(step) => writeln!(s, "until {}: reached at step {step}", u.condition.name()),
                None => writeln!(s, "until {}: not reached in {} steps", u.condition.name(), self.steps),
            };
        }
        if let Some(b) = self.sections.get("botlink")
            && b.get("rounds").is_some()
        {
            let n = |v: &serde_json::Value| v.as_u64().unwrap_or(0);
            let t = &b["total"];
            let sent = &t["sent"];
            let update_all =
                ["update_all", "multicast", "update_all_unicast"].iter().map(|m| n(&sent[m]["packets"])).sum::<u64>();
            let _ = writeln!(
                s,
                "botlink: {} rounds; sent {update_all} update-all and {} unicast packets; received {} statuses, {} malformed; {} held back; {} watchdog stops",
                n(&b["rounds"]),
                n(&sent["unicast"]["packets"]),
                n(&t["statuses"]),
                n(&t["malformed"]),
                n(&t["duplicates_held"]),
                n(&t["watchdog_stops"]),
            );
            for (name, bot) in b["bots"].as_object().into_iter().flatten() {
                if let Some(addr) = bot["outside"].as_str() {
                    let _ = writeln!(s, "  outside bot {name} at {addr}: {}", bot["state"].as_str().unwrap_or("?"));
                }
            }
        }
        if self.interrupted {
            let _ = writeln!(s, "interrupted: these are the metrics of the {} steps done", self.steps);
        }
        let _ = write!(s, "hash: {}", self.hash);
        s
    }
}
