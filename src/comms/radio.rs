//! The communication model in the loop: one [`Radio`] resource holds the model; robots register
//! when a scene loads (in robot order) and unregister when they despawn; in the communicate
//! stage every robot's [`RadioOut`] is sent and every robot's due messages land in its
//! [`RadioIn`] for the next think stage. Broadcast fan-out asks rapier's spatial index for the
//! robots within range instead of scanning all robots.

use std::collections::HashMap;

use bevy::math::bounding::Aabb2d;
use bevy::prelude::*;
use bevy_rapier2d::prelude::*;
use serde_json::json;

use super::model::{CommType, CommsModel, PairParams, RobotParams, SystemParams, Target};
use super::{DropCause, Message};
use crate::robot::Robot;
use crate::scene::{ActiveScene, SceneLoaded};
use crate::sim::rng::stream;
use crate::sim::{LoadSystems, RobotOrder, SimSystems, SimTime, add_report_section};
use crate::world::groups;

/// The robot's communication abilities (seed 000), as written in the scene.
#[derive(Component, Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommAbilities {
    pub broadcast: bool,
    pub point_to_point: bool,
}

/// What robots say to each other.
#[derive(Debug, Clone, PartialEq)]
pub enum Payload {
    /// Centres of obstacle cells the sender found (world coordinates, metres).
    Obstacles(Vec<Vec2>),
    /// A collector is going for this pen, from this distance (metres); others pick another.
    Claim { pen: String, distance: f32 },
    /// Free text, for people and tests.
    Text(String),
}

/// The communication model of the running scene.
#[derive(Resource, Debug)]
pub struct Radio(pub CommsModel<Payload>);

/// What a robot sends this step.
#[derive(Component, Debug, Default)]
pub struct RadioOut(pub Vec<(Target, Payload)>);

/// What a robot received: the messages delivered in the last communicate stage.
#[derive(Component, Debug, Default)]
pub struct RadioIn(pub Vec<Message<Payload>>);

pub(super) fn plugin(app: &mut App) {
    app.insert_resource(Radio(CommsModel::new(SystemParams::default(), 64, stream(0, "comms", 0))))
        .add_observer(give_radio)
        .add_observer(take_radio)
        .add_systems(PreUpdate, rebuild_radio.run_if(on_message::<SceneLoaded>).in_set(LoadSystems::React))
        .add_systems(FixedUpdate, deliver.in_set(SimSystems::Communicate));
    add_report_section(app, report_section);
}

/// Every robot gets a radio when it is added, with the abilities its scene gives it.
fn give_radio(add: On<Add, Robot>, active: Res<ActiveScene>, robots: Query<&Robot>, mut commands: Commands) {
    let Ok(robot) = robots.get(add.entity) else { return };
    let Some(spec) = active.scene.robots.get(robot.index as usize) else { return };
    let abilities = CommAbilities { broadcast: spec.comms.broadcast, point_to_point: spec.comms.point_to_point };
    commands.entity(add.entity).insert((abilities, RadioOut::default(), RadioIn::default()));
}

fn take_radio(remove: On<Remove, CommAbilities>, names: Query<&Name>, mut radio: ResMut<Radio>) {
    if let Ok(name) = names.get(remove.entity) {
        // A robot of a scene being replaced may already be gone from the new model.
        let _ = radio.0.unregister(name.as_str());
    }
}

/// A fresh model for a freshly loaded scene, every robot registered in robot order.
fn rebuild_radio(active: Res<ActiveScene>, order: Res<RobotOrder>, robots: Query<&Name>, mut radio: ResMut<Radio>) {
    let c = &active.scene.comms;
    let system = SystemParams { link: c.link, range: c.range, delay: c.delay, probability: c.probability };
    let mut model = CommsModel::new(system, c.inbox_capacity, stream(active.scene.seed, "comms", 0));
    for (spec, &e) in active.scene.robots.iter().zip(&order.0) {
        let Ok(name) = robots.get(e) else { continue };
        let rc = &spec.comms;
        let kind = CommType { broadcast: rc.broadcast, point_to_point: rc.point_to_point };
        if let Err(err) = model.register(name.as_str(), kind) {
            warn!("comms: {err}");
            continue;
        }
        if let Some(p) = model.robot_params_mut(name.as_str()) {
            *p = RobotParams {
                incoming: rc.incoming,
                outgoing: rc.outgoing,
                range: rc.range,
                delay: rc.delay,
                probability: rc.probability,
                kind,
            };
        }
    }
    for p in &c.pairs {
        let params = PairParams { link: p.link, range: p.range, delay: p.delay, probability: p.probability };
        model.set_pair(&p.from, &p.to, params);
    }
    radio.0 = model;
}

fn deliver(
    time: Res<SimTime>,
    rapier: ReadRapierContext,
    order: Res<RobotOrder>,
    mut radio: ResMut<Radio>,
    mut robots: Query<(&Name, &Transform, &mut RadioOut, &mut RadioIn), With<Robot>>,
    names: Query<(&Name, &Robot)>,
) {
    let Ok(ctx) = rapier.single() else { return };
    let talking = robots.iter().any(|(_, _, out, _)| !out.0.is_empty());
    let positions: HashMap<String, Vec2> = if talking {
        robots.iter().map(|(n, t, _, _)| (n.to_string(), t.translation.truncate())).collect()
    } else {
        HashMap::new()
    };
    let distance = |a: &str, b: &str| Some(positions.get(a)?.distance(*positions.get(b)?));
    let model = &mut radio.0;
    // Robots send in robot order, so loss draws are made in a stable order.
    for &e in &order.0 {
        let Ok((name, transform, mut out, _)) = robots.get_mut(e) else { continue };
        if out.0.is_empty() {
            continue;
        }
        let sender = name.to_string();
        let pos = transform.translation.truncate();
        for (target, payload) in std::mem::take(&mut out.0) {
            let candidates = if target == Target::Broadcast {
                // Only robots within the widest range any link from this sender can have.
                let reach = model
                    .robot(&sender)
                    .and_then(|r| [model.system.range, r.params.range].into_iter().flatten().reduce(f32::min));
                // Sorted by robot index: entity ids differ between the app and a headless run.
                let mut near: Vec<(u32, String)> = Vec::new();
                match reach {
                    Some(range) => {
                        let filter = QueryFilter::default().groups(CollisionGroups::new(Group::ALL, groups::ROBOT));
                        ctx.intersect_aabb_conservative(Aabb2d::new(pos, Vec2::splat(range)), filter, |other| {
                            if let Ok((n, r)) = names.get(other) {
                                near.push((r.index, n.to_string()));
                            }
                            true
                        });
                        near.sort();
                        near.into_iter().map(|(_, n)| n).collect()
                    }
                    None => order.0.iter().filter_map(|&o| names.get(o).ok()).map(|(n, _)| n.to_string()).collect(),
                }
            } else {
                Vec::new()
            };
            model.send(&sender, target, payload, time.step, &candidates, distance);
        }
    }
    if model.stats.in_flight == 0 && !talking {
        // Nothing queued anywhere: only clear what was delivered last step.
        for (_, _, _, mut inbox) in &mut robots {
            if !inbox.0.is_empty() {
                inbox.0.clear();
            }
        }
        return;
    }
    for &e in &order.0 {
        let Ok((name, _, _, mut inbox)) = robots.get_mut(e) else { continue };
        let due = model.get_messages(name.as_str(), time.step).unwrap_or_default();
        if !(due.is_empty() && inbox.0.is_empty()) {
            inbox.0 = due;
        }
    }
}

/// The `comms` section of the run metrics.
fn report_section(world: &mut World) -> Option<(String, serde_json::Value)> {
    let order = world.resource::<RobotOrder>().0.clone();
    let names: Vec<String> = order.iter().filter_map(|&e| world.get::<Name>(e)).map(|n| n.to_string()).collect();
    let radio = world.get_resource::<Radio>()?;
    let robots: Vec<serde_json::Value> = names
        .iter()
        .filter_map(|n| radio.0.robot(n).map(|r| (n, &r.stats)))
        .map(|(n, r)| {
            json!({
                "name": n,
                "sent": r.sent,
                "received": r.delivered,
                "dropped": r.dropped_total(),
                "pending": radio.0.robot(n).map_or(0, |r| r.pending().count()),
            })
        })
        .collect();
    let s = radio.0.stats.clone();
    let dropped: serde_json::Map<String, serde_json::Value> =
        DropCause::ALL.iter().map(|c| (c.name().to_string(), json!(s.dropped.get(c).copied().unwrap_or(0)))).collect();
    Some((
        "comms".to_string(),
        json!({
            "sent": s.sent,
            "delivered": s.delivered,
            "in_flight": s.in_flight,
            "dropped": dropped,
            "dropped_total": s.dropped_total(),
            "delivery_ratio": s.delivery_ratio(),
            "mean_latency_steps": s.mean_latency(),
            "max_latency_steps": s.latency_max,
            "errors": s.errors,
            "robots": robots,
        }),
    ))
}
