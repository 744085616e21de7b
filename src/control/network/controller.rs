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

use std::sync::Arc;

use bevy::prelude::*;
use bevy_rapier2d::prelude::*;
use serde::Serialize;
use smallvec::SmallVec;

use super::navigation::StationMap;
use super::units::{Blueprint, Brain, BrainParams, MAX_SUBJECTS, Outputs, Percepts, SubjectKind, View};
use crate::comms::{Payload, RadioIn, RadioOut, Target};
use crate::control::simple::Wander;
use crate::robot::{
    Battery, BumpSensor, CameraView, GripSensor, Gripper, PoseCache, PowerSensor, Robot, angle_of, carry_point,
    wrap_angle,
};
use crate::scene::ActiveScene;
use crate::sim::rng::stream;
use crate::sim::{Env, EnvStart, Passes, PerEnv, RobotOrder, SimTime};
use crate::skills::{Executor, Grip, Release, SkillFacade, SkillRequest, Velocity};
use crate::world::{Boxed, Held, Seeable, SpatialIndex, Station, groups};

/// A kind's subject slots, on the stack (walked while the controller changes).
type Slots = SmallVec<[usize; MAX_SUBJECTS]>;

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

/// Another robot's claim on a pen: names shared with the message it came in.
#[derive(Debug, Clone, PartialEq)]
struct Claim {
    pen: Arc<str>,
    by: Arc<str>,
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
#[require(Pursuing)]
pub struct NetworkController {
    pub brain: Brain,
    pub forget_after: u64,
    /// The object of each subject slot (Box, Pen, Station, then the structure's further nodes of
    /// a kind, as [`Blueprint::slots`] numbers them).
    pub tracked: SmallVec<[Option<Tracked>; 3]>,
    /// Where a box was last seen, for searching with a pen in the gripper.
    pub known_box: Option<Vec2>,
    /// The way to the charging stations: their places, and the room's walls and boxes, are
    /// known, as a docking station's is.
    pub stations: Arc<StationMap>,
    search: Wander,
    /// The latest claim heard on each pen, while it lasts (a few: a short list is smaller and
    /// quicker than a map).
    claims: Vec<Claim>,
    /// No claim in `claims` was heard before this step (`u64::MAX` while there is none): the
    /// list is looked through for lapsed claims only once the oldest may have lapsed.
    claims_since: u64,
    /// The pen claimed last and when.
    claimed: Option<(Entity, u64)>,
    was_holding: Option<Entity>,
    was_charging: bool,
    pub last: Outputs,
    pub stats: CollectStats,
    /// The last cell of `stations` asked about and its distance to a station: a robot stays in
    /// a cell for several steps, and the field is too large to stay in the cache.
    /// (The map is told by its address.)
    station_memo: Option<(usize, usize, Option<f32>)>,
}

/// The pen a network robot is going for this step: the tracked pen while it holds none and Pen
/// leads. A component of its own, not a field of the controller, so that counting the robots
/// after the same pen each step reads a few bytes per robot rather than a cache line of each
/// controller (reading the controllers took 0.17–0.21 ms a step at 10,000 robots).
#[derive(Component, Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pursuing(pub Option<Entity>);

impl NetworkController {
    pub fn new(brain: Brain, forget_after: u32, search: Wander, stations: Arc<StationMap>) -> Self {
        Self {
            tracked: smallvec::smallvec![None; brain.blueprint.slots.len()],
            brain,
            forget_after: u64::from(forget_after),
            known_box: None,
            stations,
            search,
            claims: Vec::new(),
            claims_since: u64::MAX,
            claimed: None,
            was_holding: None,
            was_charging: false,
            last: Outputs::default(),
            stats: CollectStats::default(),
            station_memo: None,
        }
    }

    /// Whether a pen is claimed by another robot that is closer to it than `distance` (ties go
    /// to the smaller name).
    fn yields_to_claim(&self, pen: &str, distance: f32, me: &str, now: u64) -> bool {
        self.claims.iter().find(|c| &*c.pen == pen).is_some_and(|c| {
            now.saturating_sub(c.step) <= CLAIM_LIFETIME
                && &*c.by != me
                && (c.distance < distance || (c.distance == distance && &*c.by < me))
        })
    }

    /// Whether it keeps any claim heard (none: no pen yields to a claim).
    pub fn hears_claims(&self) -> bool {
        !self.claims.is_empty()
    }

    /// Takes the claims heard over the radio this step (sender, pen, sender's distance to it)
    /// and forgets those that lapsed.
    pub fn hear_claims(&mut self, heard: impl IntoIterator<Item = (Arc<str>, Arc<str>, f32)>, now: u64) {
        for (by, pen, distance) in heard {
            let claim = Claim { pen, by, distance, step: now };
            match self.claims.iter_mut().find(|c| c.pen == claim.pen) {
                Some(c) => *c = claim,
                None => self.claims.push(claim),
            }
            self.claims_since = self.claims_since.min(now);
        }
        if now.saturating_sub(self.claims_since) > CLAIM_LIFETIME {
            self.claims.retain(|c| now.saturating_sub(c.step) <= CLAIM_LIFETIME);
            self.claims_since = self.claims.iter().map(|c| c.step).min().unwrap_or(u64::MAX);
        }
    }

    /// The pen a pen subject (by slot) was going for went into another robot's gripper:
    /// duplicated effort.
    pub fn pen_taken_by_another(&mut self, slot: usize) {
        self.stats.contested += 1;
        self.tracked[slot] = None;
    }

    /// Updates the objects a subject kind's nodes track from the camera's sightings of that kind
    /// (nearest first; `fresh` when the picture was taken this step), the first node's first:
    /// each keeps the one it tracks while it is in view, else takes the nearest one no other node
    /// of the kind tracks and this robot need not yield; a pen a closer robot claimed is given up
    /// at once (returns true then). A subject not seen for `forget_after` steps is forgotten. (The
    /// Camera node asks for a subject node while it tracks an object.)
    pub fn choose_subject(
        &mut self,
        kind: SubjectKind,
        seen: &[Candidate],
        pose: (Vec2, f32),
        me: &str,
        now: u64,
        fresh: bool,
    ) -> bool {
        let mut yielded = false;
        for slot in self.brain.blueprint.instances(kind).collect::<Slots>() {
            yielded |= self.choose_one(kind, slot, seen, pose, me, now, fresh);
        }
        yielded
    }

    /// [`Self::choose_subject`] for one subject slot.
    #[allow(clippy::too_many_arguments)]
    fn choose_one(
        &mut self,
        kind: SubjectKind,
        slot: usize,
        seen: &[Candidate],
        pose: (Vec2, f32),
        me: &str,
        now: u64,
        fresh: bool,
    ) -> bool {
        let mut yielded = false;
        let mut choice: Option<&Candidate> = None;
        let mut keep_current = false;
        for s in seen {
            let current = self.tracked[slot].as_ref().is_some_and(|t| t.entity == s.entity);
            // Another node of the kind has it.
            if !current && self.tracked.iter().flatten().any(|t| t.entity == s.entity) {
                continue;
            }
            if let Some(pen) = s.pen
                && self.yields_to_claim(pen, s.distance, me, now)
            {
                if current {
                    // Give it up at once, not after the forget period.
                    self.stats.yielded += 1;
                    self.tracked[slot] = None;
                    yielded = true;
                }
                continue;
            }
            if current {
                choice = Some(s);
                keep_current = true;
                break;
            }
            if choice.is_none() {
                choice = Some(s);
            }
        }
        if fresh && let Some(s) = choice {
            let (entity, position) = (s.entity, s.position(pose));
            if !keep_current && kind == SubjectKind::Pen {
                self.claimed = None;
            }
            self.tracked[slot] = Some(Tracked { entity, position, last_seen: now });
            if kind == SubjectKind::Box {
                self.known_box = Some(position);
            }
        } else if self.tracked[slot].as_ref().is_some_and(|t| now.saturating_sub(t.last_seen) > self.forget_after) {
            self.tracked[slot] = None;
        }
        yielded
    }

    /// The pen to announce now, with this robot's distance to it: the tracked pen while the pen
    /// subject leads and the gripper is empty, when it is newly chosen or the last claim on it is
    /// [`CLAIM_PERIOD`] steps old.
    pub fn claim_due(&mut self, holding: bool, position: Vec2, now: u64) -> Option<(Entity, f32)> {
        let t = self.pursued()?;
        let due =
            !holding && self.claimed.is_none_or(|(e, at)| e != t.entity || now.saturating_sub(at) >= CLAIM_PERIOD);
        if !due {
            return None;
        }
        let claim = (t.entity, t.position.distance(position));
        self.claimed = Some((t.entity, now));
        self.stats.claims_sent += 1;
        Some(claim)
    }

    /// The object of the pen subject that leads, if one does.
    pub fn pursued(&self) -> Option<&Tracked> {
        let slot = self.brain.leading_slot()?;
        (self.brain.leader() == Some(SubjectKind::Pen)).then(|| self.tracked.get(slot)?.as_ref()).flatten()
    }

    /// The battery level the way to the nearest station needs, with a margin of
    /// [`RESERVE_FACTOR`]: at `energy_per_metre` units per metre of `capacity`.
    /// `station` is the length of the way there ([`Self::station_distance`]).
    pub fn reserve(station: Option<f32>, energy_per_metre: f32, capacity: f32) -> f32 {
        station.map_or(0.0, |d| RESERVE_FACTOR * d * energy_per_metre / capacity.max(1e-6))
    }

    /// The length of the way from `position` to the nearest charging station, if there is one.
    pub fn station_distance(&mut self, position: Vec2) -> Option<f32> {
        let map = Arc::as_ptr(&self.stations) as usize;
        self.stations.cell_of(position).and_then(|cell| match self.station_memo {
            Some((m, c, d)) if m == map && c == cell => d,
            _ => {
                let d = self.stations.distance_from_cell(cell);
                self.station_memo = Some((map, cell, d));
                d
            }
        })
    }

    /// What the robot knows beyond its camera, for the subjects: the box last seen (while holding
    /// a pen, until within 0.3 m of it) and the way to the nearest charging station (while
    /// charging: the point 0.4 m along it, or the station itself).
    pub fn remembered(&self, kind: SubjectKind, pos: Vec2, holding: bool) -> Option<Vec2> {
        match kind {
            SubjectKind::Box if holding => self.known_box.filter(|b| b.distance(pos) > GOAL_REACHED),
            SubjectKind::Station if self.brain.charging => {
                self.stations.waypoint(pos, WAYPOINT_AHEAD).or_else(|| self.stations.nearest_station(pos))
            }
            _ => None,
        }
    }

    /// Counts a charging visit (the Charging task brought it onto a station) and a pen boxed
    /// (the pen it held is now in a box).
    pub fn count(&mut self, charging_on_station: bool, holding: Option<Entity>, dropped_into_box: bool) {
        if charging_on_station && !self.was_charging && self.brain.charging {
            self.stats.charging_visits += 1;
        }
        self.was_charging = charging_on_station;
        if self.was_holding.is_some() && holding.is_none() && dropped_into_box {
            self.stats.boxed += 1;
        }
        self.was_holding = holding;
    }
}

/// A thing of one subject kind the camera sees.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Candidate<'a> {
    pub entity: Entity,
    /// The pen's name, for claims (pens only; left out while no claim is heard).
    pub pen: Option<&'a str>,
    pub distance: f32,
    /// Its bearing from the robot's heading, radians (where it is follows from the robot's pose:
    /// worked out only for the one chosen).
    pub bearing: f32,
}

impl Candidate<'_> {
    /// Where it is, world coordinates, seen from `pose` (position, heading).
    pub fn position(&self, (at, heading): (Vec2, f32)) -> Vec2 {
        at + Vec2::from_angle(heading + self.bearing) * self.distance
    }
}

/// Within this of the box last seen the search takes over, metres.
const GOAL_REACHED: f32 = 0.3;
/// How far along the path to a station the robot steers at, metres.
const WAYPOINT_AHEAD: f32 = 0.4;
/// The way to a station is budgeted this many times over when deciding to go and charge.
pub const RESERVE_FACTOR: f32 = 2.0;
/// The speed, as a fraction of the maximum, a robot is reckoned to make on its way to charge.
const CRUISE: f32 = 0.7;

/// The structure of the running scene, indexed once and shared by its network robots, with the
/// scene generation it belongs to.
#[derive(Resource, Debug, Clone)]
pub struct SceneBlueprint(pub Arc<Blueprint>, pub u64);

/// Speed of the search wander, as a fraction of the robot's maximum.
const SEARCH_SPEED: f32 = 0.7;

/// What attaching a network robot needs: the structure of the running scene, indexed once per
/// scene and shared by all its network robots, and where the charging stations are.
#[derive(bevy::ecs::system::SystemParam)]
pub struct NetworkAttach<'w, 's> {
    /// The blueprint of the scene being loaded, with its generation (the resource is written
    /// only when commands apply, after every robot of the scene was attached).
    fresh: Local<'s, Option<(u64, Arc<Blueprint>)>>,
    /// The ways to the stations of the scene being loaded, one per robot radius.
    maps: Local<'s, (u64, Vec<(u32, Arc<StationMap>)>)>,
    _stations: Query<'w, 's, (), With<Station>>,
}

/// A network robot of the scene being loaded: its brain on the scene's structure.
pub(in crate::control) fn attach(
    params: &mut NetworkAttach,
    commands: &mut Commands,
    active: &ActiveScene,
    robot: &Robot,
    seed: u64,
    (forget_after, low_power, full_power): (u32, f32, f32),
) -> NetworkController {
    let blueprint = match &*params.fresh {
        Some((generation, b)) if *generation == active.generation => Arc::clone(b),
        _ => {
            let structure = active.scene.network_structure.clone().unwrap_or_else(super::default_network);
            let b = Arc::new(Blueprint::new(structure));
            *params.fresh = Some((active.generation, Arc::clone(&b)));
            commands.insert_resource(SceneBlueprint(Arc::clone(&b), active.generation));
            b
        }
    };
    if params.maps.0 != active.generation {
        *params.maps = (active.generation, Vec::new());
    }
    let key = robot.radius.to_bits();
    let stations = match params.maps.1.iter().find(|(r, _)| *r == key) {
        Some((_, map)) => Arc::clone(map),
        None => {
            let map = Arc::new(StationMap::new(&active.scene, robot.radius));
            params.maps.1.push((key, Arc::clone(&map)));
            map
        }
    };
    let brain = BrainParams { low_power, full_power, ..default() };
    let search = Wander::new(SEARCH_SPEED, stream(seed, "network-search", u64::from(robot.index)));
    NetworkController::new(Brain::new(blueprint, brain), forget_after, search, stations)
}

/// Bearing and distance of a point from a pose.
fn view_of(at: Vec2, heading: f32, target: Vec2) -> View {
    let rel = target - at;
    View { distance: rel.length(), bearing: wrap_angle(angle_of(rel) - heading) }
}

fn subject_of(kind: Seeable) -> Option<SubjectKind> {
    match kind {
        Seeable::Box => Some(SubjectKind::Box),
        Seeable::Pen => Some(SubjectKind::Pen),
        Seeable::Station => Some(SubjectKind::Station),
        Seeable::Robot => None,
    }
}

type ThinkItem<'a> = (
    Entity,
    &'a Name,
    &'a Robot,
    (&'a Transform, &'a PoseCache),
    (&'a CameraView, &'a GripSensor, &'a PowerSensor, &'a BumpSensor, &'a Gripper, &'a Battery),
    Mut<'a, NetworkController>,
    (&'a Executor, Mut<'a, SkillRequest>, Mut<'a, Pursuing>),
    (&'a RadioIn, Mut<'a, RadioOut>),
    &'a Env,
);

/// One think step of every network robot. Each robot reads the world and writes only its own
/// controller, skill request and radio output, so with many robots they think in parallel
/// chunks, with the same results as one by one.
#[allow(clippy::too_many_arguments)]
pub(in crate::control) fn think<'w>(
    indices: Res<PerEnv<SpatialIndex>>,
    time: Res<SimTime>,
    starts: Res<PerEnv<EnvStart>>,
    passes: Res<Passes>,
    order: Res<RobotOrder>,
    mut robots: Query<(
        Entity,
        &Name,
        &Robot,
        (&Transform, &PoseCache),
        (&CameraView, &GripSensor, &PowerSensor, &BumpSensor, &Gripper, &Battery),
        &mut NetworkController,
        (&Executor, &mut SkillRequest, &mut Pursuing),
        (&RadioIn, &mut RadioOut),
        &Env,
    )>,
    names: Query<'w, '_, &Name>,
    held: Query<&Held>,
    boxed: Query<(), With<Boxed>>,
    kinds: Query<&Seeable>,
) {
    // `seen` is each chunk's scratch lists of candidates, one per subject kind, reused from robot
    // to robot.
    let think_one = |seen: &mut [Vec<Candidate<'w>>; SubjectKind::ALL.len()], item: ThinkItem| {
        let (
            entity,
            name,
            robot,
            (transform, cache),
            (view, grip, power, bump, gripper, battery),
            mut nc,
            (executor, mut request, mut pursuing),
            (inbox, mut out),
            env,
        ) = item;
        let now = starts.step_of(*env, time.step);
        let index = &indices[*env];
        let nc = &mut *nc;
        let me = name.as_str();
        let (pos, heading) = cache.pose(transform);
        let heard = inbox.0.iter().filter_map(|m| match m.content() {
            Payload::Claim { pen, distance } => Some((m.sender().clone(), pen.clone(), *distance)),
            _ => None,
        });
        nc.hear_claims(heard, now);
        for slot in nc.brain.blueprint.instances(SubjectKind::Pen).collect::<Slots>() {
            if nc.tracked[slot].as_ref().is_some_and(|t| held.get(t.entity).is_ok_and(|h| h.by != entity)) {
                nc.pen_taken_by_another(slot);
            }
        }

        // Subjects follow the camera's latest picture. (A pen's name is looked up only when a
        // claim could be on it.)
        let claims = nc.hears_claims();
        seen.iter_mut().for_each(Vec::clear);
        for s in &view.seen {
            let Some(kind) = subject_of(s.kind) else { continue };
            let named = kind == SubjectKind::Pen && claims;
            seen[kind as usize].push(Candidate {
                entity: s.entity,
                pen: named.then(|| names.get_inner(s.entity).ok().map(Name::as_str)).flatten(),
                distance: s.distance,
                bearing: s.bearing,
            });
        }
        let mut yielded = false;
        for kind in SubjectKind::ALL {
            yielded |= nc.choose_subject(kind, &seen[kind as usize], (pos, heading), me, now, view.step == now);
        }

        // Announce the pen it goes for.
        if let Some((pen, distance)) = nc.claim_due(grip.holding.is_some(), pos, now)
            && let Ok(pen) = names.get(pen)
        {
            out.0.push((Target::Broadcast, Payload::Claim { pen: Arc::from(pen.as_str()), distance }));
        }

        // Only a held pen can go into a box.
        let holding = grip.holding.is_some();
        let mut over_box = false;
        if holding {
            let at = carry_point(transform, cache, robot, gripper);
            over_box = index.block_at(at, CollisionGroups::new(Group::ALL, groups::BOX)).is_some();
        }
        // Bumping into a robot or a wall (or a box it is not bringing a pen to) blocks the way:
        // the search backs off (the Bumper asks for the Obstacle node, which leads meanwhile).
        let blocked = bump.bumped
            && bump.touching.iter().any(|e| match kinds.get(*e) {
                Ok(Seeable::Pen) => false,
                Ok(Seeable::Box) => nc.brain.leader() != Some(SubjectKind::Box),
                _ => true,
            });
        let steer = nc.search.decide(blocked, time.dt);
        let energy_per_metre = battery.move_drain + battery.idle_drain / (CRUISE * robot.max_speed).max(1e-6);
        let station = nc.station_distance(pos);
        let (mut seen, mut tracks) = ([false; MAX_SUBJECTS], [None; MAX_SUBJECTS]);
        for (slot, tracked) in nc.tracked.iter().enumerate() {
            let kind = nc.brain.blueprint.slots[slot].0;
            seen[slot] = tracked.is_some();
            let camera = tracked.as_ref().map(|t| t.position);
            // The remembered box and the way to a station are the first node's of their kind.
            let known = || if slot < SubjectKind::ALL.len() { nc.remembered(kind, pos, holding) } else { None };
            tracks[slot] = camera.or_else(known).map(|at| view_of(pos, heading, at));
        }
        let percepts = Percepts {
            reserve: NetworkController::reserve(station, energy_per_metre, battery.capacity),
            power: power.level,
            on_station: power.charging,
            holding,
            pen_in_reach: grip.pen_in_reach.is_some(),
            over_box,
            sees: view.seen.iter().any(|s| subject_of(s.kind).is_some()),
            seen,
            box_known: nc.remembered(SubjectKind::Box, pos, true).is_some(),
            station_known: station.is_some(),
            tracks,
            steer,
            backing_off: nc.search.is_turning(),
            yielded,
        };
        let outputs = nc.brain.tick(&percepts);
        nc.last = outputs;
        pursuing.set_if_neq(Pursuing(nc.pursued().filter(|_| !holding).map(|t| t.entity)));
        let dropped_into_box = nc.was_holding.is_some_and(|pen| boxed.contains(pen));
        nc.count(power.charging, grip.holding, dropped_into_box);

        // The robot's commands are the actuator nodes' outputs, and nothing else.
        let (linear, angular) = (outputs.speed.unwrap_or(0.0), outputs.turn.unwrap_or(0.0));
        let mut facade = SkillFacade::new();
        let drive = Velocity { linear: linear * robot.max_speed, angular: angular * robot.max_turn, lateral: 0.0 };
        if !executor.0.runs_velocity(&drive) {
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
    };
    passes.each_mut_with(order.0.len(), &mut robots, Default::default, think_one);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scene::network::default_network;
    use crate::sim::rng::stream;
    use std::f32::consts::FRAC_PI_2;

    fn controller() -> NetworkController {
        controller_in(&crate::scene::schema::SceneFile::empty("t", 6.0, 4.0))
    }

    fn controller_in(scene: &crate::scene::schema::SceneFile) -> NetworkController {
        let blueprint = Arc::new(Blueprint::new(default_network()));
        let search = Wander::new(SEARCH_SPEED, stream(1, "network-search", 0));
        let map = Arc::new(StationMap::new(scene, 0.1));
        NetworkController::new(Brain::new(blueprint, BrainParams::default()), 25, search, map)
    }

    fn entity(i: u32) -> Entity {
        Entity::from_raw_u32(i).unwrap()
    }

    /// The robot's pose in the choices below: at the origin, facing +x.
    const POSE: (Vec2, f32) = (Vec2::ZERO, 0.0);

    fn pen(i: u32, name: &'static str, distance: f32) -> Candidate<'static> {
        Candidate { entity: entity(i), pen: Some(name), distance, bearing: 0.0 }
    }

    fn tracked_pen(nc: &NetworkController) -> Option<Entity> {
        nc.tracked[SubjectKind::Pen as usize].as_ref().map(|t| t.entity)
    }

    #[test]
    fn the_nearest_pen_no_closer_robot_claimed_is_chosen() {
        let mut nc = controller();
        nc.hear_claims([(Arc::from("b"), Arc::from("p1"), 0.5)], 10);
        nc.choose_subject(SubjectKind::Pen, &[pen(1, "p1", 1.0), pen(2, "p2", 1.5)], POSE, "a", 10, true);
        assert_eq!(tracked_pen(&nc), Some(entity(2)), "p1 is b's: it is nearer");
        // A claim from farther away does not take the pen; a tie goes to the smaller name.
        let mut nc = controller();
        nc.hear_claims([(Arc::from("b"), Arc::from("p1"), 2.0)], 10);
        nc.choose_subject(SubjectKind::Pen, &[pen(1, "p1", 1.0)], POSE, "a", 10, true);
        assert_eq!(tracked_pen(&nc), Some(entity(1)));
        let mut nc = controller();
        nc.hear_claims([(Arc::from("b"), Arc::from("p1"), 1.0)], 10);
        nc.choose_subject(SubjectKind::Pen, &[pen(1, "p1", 1.0)], POSE, "a", 10, true);
        assert_eq!(tracked_pen(&nc), Some(entity(1)), "a < b");
        nc.choose_subject(SubjectKind::Pen, &[pen(1, "p1", 1.0)], POSE, "c", 10, true);
        assert_eq!(tracked_pen(&nc), None, "b < c: c gives it up");
    }

    /// Claims are told apart by pen name: a newer claim on a pen replaces the older one, and a
    /// claim on one pen says nothing of pens whose names share its letters.
    #[test]
    fn a_claim_is_on_its_own_pen_and_a_newer_one_replaces_it() {
        let mut nc = controller();
        let claim = |pen: &str, d: f32| (Arc::from("b"), Arc::from(pen), d);
        nc.hear_claims([claim("p1", 5.0), claim("p10", 0.1), claim("p100", 5.0), claim("p01", 5.0)], 10);
        nc.hear_claims([claim("p10", 3.0)], 11);
        assert_eq!(nc.claims.len(), 4);
        let on = |nc: &NetworkController, pen: &str| nc.claims.iter().find(|c| &*c.pen == pen).map(|c| c.distance);
        assert_eq!(on(&nc, "p10"), Some(3.0));
        assert!(!nc.yields_to_claim("p10", 1.0, "a", 11), "the newer claim, from 3 m, is farther");
        assert!(nc.yields_to_claim("p1", 6.0, "a", 11) && !nc.yields_to_claim("p1", 4.0, "a", 11));
        assert!(!nc.yields_to_claim("p2", 9.0, "a", 11), "nobody claimed p2");
    }

    /// Lapsed claims are let go of only when the oldest may have lapsed: the list is still, step
    /// by step, the one a look through it every step keeps.
    #[test]
    fn the_claims_kept_are_those_a_look_every_step_keeps() {
        use rand::RngExt;
        let mut nc = controller();
        let mut every_step: Vec<(Arc<str>, u64, f32)> = Vec::new();
        let mut rng = stream(7, "claims-test", 0);
        let pens: Vec<Arc<str>> = (0..12).map(|i| Arc::from(format!("p{i}"))).collect();
        for now in 0..2_000u64 {
            // Quiet spells let every claim lapse now and then.
            let heard: Vec<(Arc<str>, Arc<str>, f32)> = if (now / 300) % 3 == 2 {
                Vec::new()
            } else {
                (0..rng.random_range(0..3))
                    .map(|_| {
                        (Arc::from("b"), pens[rng.random_range(0..pens.len())].clone(), rng.random_range(0.0..3.0))
                    })
                    .collect()
            };
            for (_, pen, d) in &heard {
                match every_step.iter_mut().find(|c| c.0 == *pen) {
                    Some(c) => *c = (pen.clone(), now, *d),
                    None => every_step.push((pen.clone(), now, *d)),
                }
            }
            every_step.retain(|c| now - c.1 <= CLAIM_LIFETIME);
            nc.hear_claims(heard, now);
            let kept: Vec<(Arc<str>, u64, f32)> =
                nc.claims.iter().map(|c| (c.pen.clone(), c.step, c.distance)).collect();
            assert_eq!(kept, every_step, "step {now}");
        }
    }

    #[test]
    fn a_claim_lapses_unless_repeated() {
        let mut nc = controller();
        nc.hear_claims([(Arc::from("b"), Arc::from("p1"), 0.1)], 0);
        nc.hear_claims([], CLAIM_LIFETIME + 1);
        nc.choose_subject(SubjectKind::Pen, &[pen(1, "p1", 1.0)], POSE, "a", CLAIM_LIFETIME + 1, true);
        assert_eq!(tracked_pen(&nc), Some(entity(1)));
    }

    #[test]
    fn a_tracked_pen_is_given_up_at_once_and_counted() {
        let mut nc = controller();
        nc.choose_subject(SubjectKind::Pen, &[pen(1, "p1", 1.0)], POSE, "a", 5, true);
        assert_eq!(tracked_pen(&nc), Some(entity(1)));
        nc.hear_claims([(Arc::from("b"), Arc::from("p1"), 0.2)], 6);
        nc.choose_subject(SubjectKind::Pen, &[pen(1, "p1", 0.9)], POSE, "a", 6, true);
        assert_eq!((tracked_pen(&nc), nc.stats.yielded), (None, 1));
    }

    #[test]
    fn the_tracked_object_is_kept_in_view_and_forgotten_out_of_view() {
        let mut nc = controller();
        nc.choose_subject(SubjectKind::Pen, &[pen(1, "p1", 1.0)], POSE, "a", 0, true);
        // A nearer pen comes into view: the one it goes for stays its subject.
        nc.choose_subject(SubjectKind::Pen, &[pen(2, "p2", 0.3), pen(1, "p1", 0.9)], POSE, "a", 1, true);
        assert_eq!(tracked_pen(&nc), Some(entity(1)));
        // Out of view: remembered for forget_after steps, then forgotten.
        nc.choose_subject(SubjectKind::Pen, &[], POSE, "a", 26, true);
        assert_eq!(tracked_pen(&nc), Some(entity(1)));
        nc.choose_subject(SubjectKind::Pen, &[], POSE, "a", 27, true);
        assert_eq!(tracked_pen(&nc), None);
        // A box seen is remembered as the place to bring pens to.
        // (Seen from (1, 1) facing +y, 2 m away a quarter turn to the right: at (3, 1).)
        let b = Candidate { entity: entity(9), pen: None, distance: 2.0, bearing: -FRAC_PI_2 };
        nc.choose_subject(SubjectKind::Box, &[b], (Vec2::ONE, FRAC_PI_2), "a", 30, true);
        let seen_at = nc.known_box.unwrap();
        assert!(seen_at.distance(Vec2::new(3.0, 1.0)) < 1e-6, "{seen_at}");
    }

    #[test]
    fn a_pen_taken_by_another_counts_as_contested() {
        let mut nc = controller();
        nc.choose_subject(SubjectKind::Pen, &[pen(1, "p1", 1.0)], POSE, "a", 0, true);
        nc.pen_taken_by_another(SubjectKind::Pen as usize);
        assert_eq!((tracked_pen(&nc), nc.stats.contested), (None, 1));
    }

    #[test]
    fn claims_are_announced_on_choosing_and_every_claim_period() {
        let mut nc = controller();
        nc.choose_subject(SubjectKind::Pen, &[pen(1, "p1", 1.0)], POSE, "a", 0, true);
        // Let the network make Pen lead.
        let mut percepts = Percepts { power: 0.9, sees: true, ..Percepts::default() };
        percepts.seen[1] = true;
        percepts.tracks[1] = Some(View { distance: 1.0, bearing: 0.0 });
        for _ in 0..5 {
            nc.brain.tick(&percepts);
        }
        assert_eq!(nc.brain.leader(), Some(SubjectKind::Pen));
        assert_eq!(nc.claim_due(false, Vec2::ZERO, 10), Some((entity(1), 1.0)));
        assert_eq!(nc.claim_due(false, Vec2::ZERO, 11), None);
        assert_eq!(nc.claim_due(true, Vec2::ZERO, 10 + CLAIM_PERIOD), None, "holding a pen: nothing to claim");
        assert!(nc.claim_due(false, Vec2::ZERO, 10 + CLAIM_PERIOD).is_some());
        assert_eq!(nc.stats.claims_sent, 2);
    }

    /// What the robot knows beyond its camera: the way to the nearest station around a wall
    /// (while charging) and the box last seen (while holding a pen, until close to it).
    #[test]
    fn the_robot_remembers_its_box_and_knows_the_way_to_a_station() {
        use crate::scene::schema::{SceneFile, StationSpec, WallSpec};
        // Stations east and north of (1, 1); a wall between the robot and the nearer one.
        let mut scene = SceneFile::empty("t", 6.0, 4.0);
        let station = |name: &str, pos| StationSpec { name: name.into(), pos, radius: 0.3, rate: 1.0 };
        scene.stations.extend([station("east", (5.0, 1.0)), station("north", (1.0, 3.0))]);
        scene.walls.push(WallSpec { name: "w".into(), from: (0.2, 2.0), to: (3.0, 2.0), thickness: 0.1 });
        let mut nc = controller_in(&scene);
        let at = Vec2::new(1.0, 1.0);
        assert_eq!(nc.remembered(SubjectKind::Station, at, false), None, "not charging");
        nc.brain.charging = true;
        // North is nearer in a straight line but behind the wall; the way east is shorter.
        let way = nc.remembered(SubjectKind::Station, at, false).unwrap();
        assert!(way.x > at.x && (way.y - at.y).abs() < 0.2, "{way}");
        // Holding a pen: the box last seen, until within reach of it.
        nc.known_box = Some(Vec2::ZERO);
        assert_eq!(nc.remembered(SubjectKind::Box, at, false), None, "nothing to bring");
        assert_eq!(nc.remembered(SubjectKind::Box, at, true), Some(Vec2::ZERO));
        assert_eq!(nc.remembered(SubjectKind::Box, Vec2::splat(0.1), true), None);
        // The reserve: twice the way to the station, at 0.5 units per metre of 20.
        let d = nc.stations.distance(at).unwrap();
        assert_eq!(nc.station_distance(at), Some(d));
        assert!((NetworkController::reserve(Some(d), 0.5, 20.0) - 2.0 * d * 0.5 / 20.0).abs() < 1e-6);
    }

    /// A structure with a second Pen node ("Pen 2"): the Camera tracks the two nearest pens, one
    /// for each, asks for both nodes, and the nearer one leads; when the first is taken by another
    /// robot, the other stays tracked.
    #[test]
    fn several_pens_are_tracked_by_several_pen_nodes() {
        use crate::scene::network::with_copy_of;
        let structure = with_copy_of(default_network(), "Pen", "Pen 2");
        assert!(crate::scene::network::validate(&structure).is_empty());
        let blueprint = Arc::new(Blueprint::new(structure));
        let slots: Vec<usize> = blueprint.instances(SubjectKind::Pen).collect();
        assert_eq!(slots, vec![1, 3]);
        let search = Wander::new(SEARCH_SPEED, stream(1, "network-search", 0));
        let map = Arc::new(StationMap::new(&crate::scene::schema::SceneFile::empty("t", 6.0, 4.0), 0.1));
        let mut nc = NetworkController::new(Brain::new(blueprint, BrainParams::default()), 25, search, map);
        let pens = [pen(1, "p1", 1.0), pen(2, "p2", 1.5), pen(3, "p3", 2.0)];
        nc.choose_subject(SubjectKind::Pen, &pens, POSE, "a", 0, true);
        let tracked = |nc: &NetworkController, slot: usize| nc.tracked[slot].as_ref().map(|t| t.entity);
        assert_eq!((tracked(&nc, 1), tracked(&nc, 3)), (Some(entity(1)), Some(entity(2))));
        // Seen the other way round, each node keeps its own.
        nc.choose_subject(SubjectKind::Pen, &[pen(2, "p2", 0.5), pen(1, "p1", 0.9)], POSE, "a", 1, true);
        assert_eq!((tracked(&nc, 1), tracked(&nc, 3)), (Some(entity(1)), Some(entity(2))));
        let mut p = Percepts { power: 1.0, sees: true, ..Percepts::default() };
        p.seen[1] = true;
        p.seen[3] = true;
        p.tracks[1] = Some(View { distance: 0.9, bearing: 0.0 });
        p.tracks[3] = Some(View { distance: 0.5, bearing: 0.1 });
        for _ in 0..5 {
            nc.brain.tick(&p);
        }
        let net = &nc.brain.net;
        assert!(net.get("Pen").is_some() && net.get("Pen 2").is_some(), "{:?}", net.names());
        // Equal degrees: the first node in node order leads.
        assert_eq!(nc.brain.leading_slot(), Some(1));
        assert_eq!(nc.pursued().map(|t| t.entity), Some(entity(1)));
        nc.pen_taken_by_another(1);
        assert_eq!((tracked(&nc, 1), tracked(&nc, 3)), (None, Some(entity(2))));
        p.seen[1] = false;
        p.tracks[1] = None;
        for _ in 0..5 {
            nc.brain.tick(&p);
        }
        assert!(nc.brain.net.get("Pen").is_none());
        assert_eq!(nc.brain.leading_slot(), Some(3), "Pen 2 leads");
    }
}
