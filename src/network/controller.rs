//! The network controller in the loop: for every robot of controller kind `Network`, the think
//! stage turns the sensors into [`Percepts`], lets the subject manager create and remove subject
//! nodes as objects come into and out of view, ticks the [`Brain`], and hands the actuator
//! nodes' commands to the skill system (a `Velocity` skill, `Grip` or `Release`).
//!
//! Around the network, as a collecting robot needs it:
//! - each subject tracks one object: the nearest box or station, and the nearest pen no closer
//!   robot has claimed; the object's position is remembered for `forget_after` steps after it
//!   was last seen, then the subject is forgotten;
//! - collectors announce the pen they go for over the radio (`Payload::Claim`, on choosing it
//!   and every [`CLAIM_PERIOD`] steps); a robot that hears a claim on its pen from a robot
//!   closer to it picks another;
//! - with no subject leading, the robot searches: it heads for the box it saw last (holding a
//!   pen) or the nearest charging station (charging; their places are known), or wanders; a bump
//!   into a robot or a wall starts the wanderer's back-off turn.

use std::collections::HashMap;
use std::sync::Arc;

use bevy::prelude::*;
use bevy_rapier2d::prelude::*;
use serde::Serialize;

use super::units::{Blueprint, Brain, BrainParams, Outputs, Percepts, SubjectKind, View};
use crate::comms::{Payload, RadioIn, RadioOut, Target};
use crate::robot::{
    BumpSensor, CameraView, ControllerKind, GripSensor, Gripper, PowerSensor, Robot, Wander, carry_point, pose,
    wrap_angle,
};
use crate::scene::ActiveScene;
use crate::scene::schema::ControllerSpec;
use crate::sim::SimTime;
use crate::sim::rng::{SimSeed, stream};
use crate::skills::{Executor, Grip, Release, SkillFacade, SkillGroup, SkillRequest, Velocity};
use crate::world::{Boxed, Held, Seeable, Station, groups};

/// Steps between repeated claims on the same pen.
pub const CLAIM_PERIOD: u64 = 50;
/// A claim not repeated for this many steps has lapsed.
pub const CLAIM_LIFETIME: u64 = 2 * CLAIM_PERIOD;

/// An object a subject node stands for.
#[derive(Debug, Clone, PartialEq)]
pub struct Tracked {
    pub entity: Entity,
    /// Where it was last seen, world coordinates.
    pub position: Vec2,
    pub last_seen: u64,
}

/// Another robot's claim on a pen.
#[derive(Debug, Clone, PartialEq)]
struct Claim {
    by: String,
    distance: f32,
    step: u64,
}

/// What a network robot has done, for the `collect` metrics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct CollectStats {
    /// Pens it dropped into a box.
    pub boxed: u32,
    /// Times the Charging task brought it onto a station (passing over one while collecting
    /// is not counted).
    pub charging_visits: u32,
    /// Times the pen it was going for was picked up by another robot (duplicated effort).
    pub contested: u32,
    /// Claims it broadcast.
    pub claims_sent: u32,
    /// Times it gave a pen up to a closer robot's claim.
    pub yielded: u32,
}

/// A robot driven by the behaviour network.
#[derive(Component, Debug)]
pub struct NetworkController {
    pub brain: Brain,
    pub forget_after: u64,
    /// The object of each subject kind (Box, Pen, Station).
    pub tracked: [Option<Tracked>; 3],
    /// Where a box was last seen, for searching with a pen in the gripper.
    pub known_box: Option<Vec2>,
    /// Where the charging stations are: their places are known, as a docking station's is.
    pub stations: Vec<Vec2>,
    search: Wander,
    claims: HashMap<String, Claim>,
    /// The pen claimed last and when.
    claimed: Option<(Entity, u64)>,
    was_holding: Option<Entity>,
    was_charging: bool,
    pub last: Outputs,
    /// The pen it is going for this step: the tracked pen while it holds none and Pen leads.
    pub pursuing: Option<Entity>,
    pub stats: CollectStats,
}

impl NetworkController {
    pub fn new(brain: Brain, forget_after: u32, search: Wander) -> Self {
        Self {
            brain,
            forget_after: u64::from(forget_after),
            tracked: [None, None, None],
            known_box: None,
            stations: Vec::new(),
            search,
            claims: HashMap::new(),
            claimed: None,
            was_holding: None,
            was_charging: false,
            last: Outputs::default(),
            pursuing: None,
            stats: CollectStats::default(),
        }
    }

    /// Whether a pen is claimed by another robot that is closer to it than `distance` (ties go
    /// to the smaller name).
    fn yields_to_claim(&self, pen: &str, distance: f32, me: &str, now: u64) -> bool {
        self.claims.get(pen).is_some_and(|c| {
            now.saturating_sub(c.step) <= CLAIM_LIFETIME
                && c.by != me
                && (c.distance < distance || (c.distance == distance && c.by.as_str() < me))
        })
    }
}

/// The structure of the running scene, indexed once and shared by its network robots.
#[derive(Resource, Debug, Clone)]
pub struct SceneBlueprint(pub Arc<Blueprint>);

/// Gives every robot of controller kind `Network` its brain when a scene loads.
pub(super) fn attach_networks(
    mut commands: Commands,
    active: Res<ActiveScene>,
    seed: Res<SimSeed>,
    robots: Query<(Entity, &Robot, &ControllerKind), Without<NetworkController>>,
    stations: Query<&Transform, With<Station>>,
) {
    let docks: Vec<Vec2> = stations.iter().map(|t| t.translation.truncate()).collect();
    let structure = active.scene.network_structure.clone().unwrap_or_else(super::default_network);
    let blueprint = Arc::new(Blueprint::new(structure));
    commands.insert_resource(SceneBlueprint(Arc::clone(&blueprint)));
    for (entity, robot, kind) in &robots {
        let ControllerSpec::Network { forget_after, low_power, full_power } = kind.0 else { continue };
        let params = BrainParams { low_power, full_power, ..default() };
        let search = Wander::new(0.7, stream(seed.0, "network-search", u64::from(robot.index)));
        let mut nc = NetworkController::new(Brain::new(Arc::clone(&blueprint), params), forget_after, search);
        nc.stations.clone_from(&docks);
        commands.entity(entity).insert(nc);
    }
}

/// Bearing and distance of a point from a pose.
fn view_of(at: Vec2, heading: f32, target: Vec2) -> View {
    let rel = target - at;
    View { distance: rel.length(), bearing: wrap_angle(rel.y.atan2(rel.x) - heading) }
}

fn subject_of(kind: Seeable) -> Option<SubjectKind> {
    match kind {
        Seeable::Box => Some(SubjectKind::Box),
        Seeable::Pen => Some(SubjectKind::Pen),
        Seeable::Station => Some(SubjectKind::Station),
        Seeable::Robot => None,
    }
}

#[allow(clippy::type_complexity)]
pub(super) fn think(
    rapier: ReadRapierContext,
    time: Res<SimTime>,
    mut robots: Query<(
        Entity,
        &Name,
        &Robot,
        &Transform,
        (&CameraView, &GripSensor, &PowerSensor, &BumpSensor, &Gripper),
        &mut NetworkController,
        (&Executor, &mut SkillRequest),
        (&RadioIn, &mut RadioOut),
    )>,
    names: Query<&Name>,
    held: Query<&Held>,
    boxed: Query<(), With<Boxed>>,
    kinds: Query<&Seeable>,
) {
    let Ok(ctx) = rapier.single() else { return };
    let now = time.step;
    let box_filter = QueryFilter::default().groups(CollisionGroups::new(Group::ALL, groups::BOX));
    for (
        entity,
        name,
        robot,
        transform,
        (view, grip, power, bump, gripper),
        mut nc,
        (executor, mut request),
        (inbox, mut out),
    ) in &mut robots
    {
        let nc = &mut *nc;
        let me = name.as_str();
        let (pos, heading) = pose(transform);
        for m in &inbox.0 {
            if let Payload::Claim { pen, distance } = &m.content {
                nc.claims.insert(pen.clone(), Claim { by: m.sender.clone(), distance: *distance, step: now });
            }
        }
        nc.claims.retain(|_, c| now.saturating_sub(c.step) <= CLAIM_LIFETIME);

        // The pen it was going for went into another robot's gripper: duplicated effort.
        let pen_slot = SubjectKind::Pen as usize;
        if let Some(t) = &nc.tracked[pen_slot]
            && held.get(t.entity).is_ok_and(|h| h.by != entity)
        {
            nc.stats.contested += 1;
            nc.tracked[pen_slot] = None;
        }

        // Subjects follow the camera's latest picture.
        let fresh = view.step == now;
        for kind in SubjectKind::ALL {
            let slot = kind as usize;
            let mut choice: Option<(Entity, Vec2)> = None;
            let mut keep_current = false;
            for s in view.seen.iter().filter(|s| subject_of(s.kind) == Some(kind)) {
                if kind == SubjectKind::Pen
                    && let Ok(pen) = names.get(s.entity)
                    && nc.yields_to_claim(pen.as_str(), s.distance, me, now)
                {
                    if nc.tracked[slot].as_ref().is_some_and(|t| t.entity == s.entity) {
                        // Give it up at once, not after the forget period.
                        nc.stats.yielded += 1;
                        nc.tracked[slot] = None;
                    }
                    continue;
                }
                let at = pos + Vec2::from_angle(heading + s.bearing) * s.distance;
                if nc.tracked[slot].as_ref().is_some_and(|t| t.entity == s.entity) {
                    choice = Some((s.entity, at));
                    keep_current = true;
                    break;
                }
                // Nearest first: the first acceptable one, unless the current one is in view.
                if choice.is_none() {
                    choice = Some((s.entity, at));
                }
            }
            if fresh && let Some((entity, position)) = choice {
                if !keep_current && kind == SubjectKind::Pen {
                    nc.claimed = None;
                }
                nc.tracked[slot] = Some(Tracked { entity, position, last_seen: now });
                if kind == SubjectKind::Box {
                    nc.known_box = Some(position);
                }
            } else if nc.tracked[slot].as_ref().is_some_and(|t| now.saturating_sub(t.last_seen) > nc.forget_after) {
                nc.tracked[slot] = None;
            }
            nc.brain.set_subject(kind, nc.tracked[slot].is_some());
        }

        // Announce the pen it goes for.
        if grip.holding.is_none()
            && let Some(t) = &nc.tracked[pen_slot]
            && nc.brain.leader() == Some(SubjectKind::Pen)
            && nc.claimed.is_none_or(|(e, at)| e != t.entity || now.saturating_sub(at) >= CLAIM_PERIOD)
            && let Ok(pen) = names.get(t.entity)
        {
            let distance = t.position.distance(pos);
            out.0.push((Target::Broadcast, Payload::Claim { pen: pen.to_string(), distance }));
            nc.claimed = Some((t.entity, now));
            nc.stats.claims_sent += 1;
        }

        // Only a held pen can go into a box.
        let mut over_box = false;
        if grip.holding.is_some() {
            ctx.intersect_point(carry_point(transform, robot, gripper), box_filter, |_| {
                over_box = true;
                false
            });
        }
        let percepts = Percepts {
            power: power.level,
            on_station: power.charging,
            holding: grip.holding.is_some(),
            pen_in_reach: grip.pen_in_reach.is_some(),
            over_box,
            sees: view.seen.iter().any(|s| subject_of(s.kind).is_some()),
            tracks: SubjectKind::ALL
                .map(|k| nc.tracked[k as usize].as_ref().map(|t| view_of(pos, heading, t.position))),
        };
        let outputs = nc.brain.tick(&percepts);
        nc.last = outputs;
        let leader = nc.brain.leader();
        nc.pursuing = nc.tracked[pen_slot]
            .as_ref()
            .filter(|_| grip.holding.is_none() && leader == Some(SubjectKind::Pen))
            .map(|t| t.entity);

        // Bookkeeping for the metrics.
        if power.charging && !nc.was_charging && nc.brain.charging {
            nc.stats.charging_visits += 1;
        }
        nc.was_charging = power.charging;
        if let Some(pen) = nc.was_holding
            && grip.holding.is_none()
            && boxed.contains(pen)
        {
            nc.stats.boxed += 1;
        }
        nc.was_holding = grip.holding;

        // Motion: the network's command, the back-off after bumping into a robot or a wall (or a
        // box it is not bringing a pen to), or the search.
        let blocked = bump.bumped
            && bump.touching.iter().any(|e| match kinds.get(*e) {
                Ok(Seeable::Pen) => false,
                Ok(Seeable::Box) => leader != Some(SubjectKind::Box),
                _ => true,
            });
        let (linear, angular) = match (outputs.speed, outputs.turn) {
            (Some(s), Some(t)) if !nc.search.is_turning() && !blocked => (s, t),
            _ => {
                let goal = if nc.brain.charging {
                    nc.stations.iter().copied().min_by(|a, b| a.distance(pos).total_cmp(&b.distance(pos)))
                } else if grip.holding.is_some() {
                    nc.known_box
                } else {
                    None
                };
                match goal {
                    Some(g) if !nc.search.is_turning() && !blocked && g.distance(pos) > 0.3 => {
                        let v = view_of(pos, heading, g);
                        let p = nc.brain.params;
                        (super::units::approach_speed(v, false, &p), (p.turn_gain * v.bearing).clamp(-1.0, 1.0))
                    }
                    _ => nc.search.decide(blocked, time.dt),
                }
            }
        };
        let mut facade = SkillFacade::new();
        let drive = Velocity { linear: linear * robot.max_speed, angular: angular * robot.max_turn };
        if !executor.0.running(SkillGroup::Move).is_some_and(|s| s.same_as(&drive)) {
            let _ = facade.set(drive);
        }
        if outputs.grip > 0.5 && grip.holding.is_none() && grip.pen_in_reach.is_some() {
            let _ = facade.set(Grip);
        } else if outputs.grip < -0.5 && grip.holding.is_some() {
            let _ = facade.set(Release);
        }
        if !facade.is_empty() {
            request.0 = Some(facade);
        }
    }
}
