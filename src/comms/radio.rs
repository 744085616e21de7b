//! The communication model in the loop: one [`Radio`] resource holds the model; robots register
//! when a scene loads (in robot order) and unregister when they despawn; in the communicate
//! stage every robot's [`RadioOut`] is sent and every robot's due messages land in its
//! [`RadioIn`] for the next think stage. A broadcast's candidates come from a grid of the
//! registered robots' centres, rebuilt each step a robot talks, instead of a scan of all robots.

use std::sync::{Arc, Mutex};

use bevy::prelude::*;
use serde_json::json;

use super::model::{
    CommType, CommsError, CommsModel, Nearby, PairParams, RobotId, RobotParams, SystemParams, Target, To,
};
use super::{DropCause, Message, PlannedChunk};
use crate::robot::Robot;
use crate::scene::schema::{ControllerSpec, RobotCommsSpec, SceneFile};
use crate::scene::{ActiveScene, SceneLoaded};
use crate::sim::rng::{SimSeed, stream_seed};
use crate::sim::{
    Env, EnvStart, LoadSystems, PASS_CHUNK, Passes, PerEnv, RobotOrder, SimSystems, SimTime, add_report_section,
};
use crate::world::spatial::CellGrid;

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
    Claim { pen: Arc<str>, distance: f32 },
    /// Free text, for people and tests.
    Text(String),
    /// Anything a robot program sends (JSON).
    Json(serde_json::Value),
}

impl Payload {
    /// The payload as JSON, as robot programs read it: `{"obstacles": [[x, y], ...]}`,
    /// `{"claim": {"pen": NAME, "distance": D}}`, a string, or what a program sent.
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            Payload::Obstacles(points) => json!({"obstacles": points.iter().map(|p| [p.x, p.y]).collect::<Vec<_>>()}),
            Payload::Claim { pen, distance } => json!({"claim": {"pen": &**pen, "distance": distance}}),
            Payload::Text(t) => serde_json::Value::String(t.clone()),
            Payload::Json(v) => v.clone(),
        }
    }

    /// A program's message: in the shapes crsim's own robots speak (`claim`, `obstacles`) it
    /// becomes what they understand; anything else travels as it is.
    pub fn from_json(v: serde_json::Value) -> Payload {
        let single = v.as_object().filter(|o| o.len() == 1);
        if let Some(claim) = single.and_then(|o| o.get("claim")).and_then(|c| c.as_object())
            && let (Some(pen), Some(distance)) =
                (claim.get("pen").and_then(|p| p.as_str()), claim.get("distance").and_then(|d| d.as_f64()))
            && claim.len() == 2
        {
            return Payload::Claim { pen: Arc::from(pen), distance: distance as f32 };
        }
        if let Some(points) = single.and_then(|o| o.get("obstacles")).and_then(|p| p.as_array()) {
            let parsed: Option<Vec<Vec2>> = points
                .iter()
                .map(|p| {
                    let a = p.as_array().filter(|a| a.len() == 2)?;
                    Some(Vec2::new(a[0].as_f64()? as f32, a[1].as_f64()? as f32))
                })
                .collect();
            if let Some(points) = parsed {
                return Payload::Obstacles(points);
            }
        }
        Payload::Json(v)
    }
}

/// The communication model of an environment's scene (kept in a [`PerEnv`]: the robots of one
/// environment never hear another's).
#[derive(Debug)]
pub struct Radio(pub CommsModel<Payload>);

impl Default for Radio {
    fn default() -> Self {
        Radio(CommsModel::new(SystemParams::default(), 64, stream_seed(0, "comms", 0)))
    }
}

/// What a robot sends this step.
#[derive(Component, Debug, Default)]
pub struct RadioOut(pub Vec<(Target, Payload)>);

/// What a robot received: the messages delivered in the last communicate stage.
#[derive(Component, Debug, Default)]
pub struct RadioIn(pub Vec<Message<Payload>>);

pub(super) fn plugin(app: &mut App) {
    app.insert_resource(PerEnv::<Radio>::one())
        .add_observer(give_radio)
        .add_observer(take_radio)
        .add_systems(PreUpdate, rebuild_radio.run_if(on_message::<SceneLoaded>).in_set(LoadSystems::React))
        .init_resource::<RadioLog>()
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

fn take_radio(remove: On<Remove, CommAbilities>, names: Query<(&Name, &Env)>, mut radios: ResMut<PerEnv<Radio>>) {
    if let Ok((name, env)) = names.get(remove.entity)
        && let Some(radio) = radios.0.get_mut(env.index())
    {
        // A robot of a scene being replaced may already be gone from the new model.
        let _ = radio.0.unregister(name.as_str());
    }
}

/// A fresh model for each environment a scene was just loaded into, every robot registered in
/// robot order, but for the robots of outside programs, which register when their program says
/// so (seed 000).
fn rebuild_radio(
    active: Res<ActiveScene>,
    order: Res<RobotOrder>,
    seeds: Res<PerEnv<SimSeed>>,
    robots: Query<&Name>,
    mut radios: ResMut<PerEnv<Radio>>,
    mut loaded: MessageReader<SceneLoaded>,
) {
    for env in loaded.read().map(|l| l.env) {
        let seed = seeds.0.get(env.index()).map_or(active.scene.seed, |s| s.0);
        *radios.reach(env) = scene_radio(&active.scene, seed, order.of(env), &robots);
    }
}

/// The model of `scene` with `seed` for the robots `order` (in robot order).
fn scene_radio(scene: &SceneFile, seed: u64, order: &[Entity], robots: &Query<&Name>) -> Radio {
    let c = &scene.comms;
    let system = SystemParams { link: c.link, range: c.range, delay: c.delay, probability: c.probability };
    let mut model = CommsModel::new(system, c.inbox_capacity, stream_seed(seed, "comms", 0));
    for (spec, &e) in scene.robots.iter().zip(order) {
        let Ok(name) = robots.get(e) else { continue };
        if matches!(spec.controller, ControllerSpec::Program {}) {
            continue;
        }
        let kind = CommType { broadcast: spec.comms.broadcast, point_to_point: spec.comms.point_to_point };
        if let Err(err) = register_robot(&mut model, &spec.comms, name.as_str(), kind) {
            warn!("comms: {err}");
        }
    }
    for p in &c.pairs {
        let params = PairParams { link: p.link, range: p.range, delay: p.delay, probability: p.probability };
        model.set_pair(&p.from, &p.to, params);
    }
    Radio(model)
}

/// Registers a robot (seed 000's registerRobot) with the communication type `kind` and the
/// robot parameters of its scene entry.
pub fn register_robot(
    model: &mut CommsModel<Payload>,
    rc: &RobotCommsSpec,
    name: &str,
    kind: CommType,
) -> Result<(), CommsError> {
    model.register(name, kind)?;
    if let Some(p) = model.robot_params_mut(name) {
        *p = RobotParams {
            incoming: rc.incoming,
            outgoing: rc.outgoing,
            range: rc.range,
            delay: rc.delay,
            probability: rc.probability,
            kind,
        };
    }
    Ok(())
}

/// Sets the scene's pair parameters that involve `name` again (after it registered anew).
pub fn restore_pairs(model: &mut CommsModel<Payload>, scene: &SceneFile, name: &str) {
    for p in scene.comms.pairs.iter().filter(|p| p.from == name || p.to == name) {
        let params = PairParams { link: p.link, range: p.range, delay: p.delay, probability: p.probability };
        model.set_pair(&p.from, &p.to, params);
    }
}

/// The sends of the step just run and what became of them, kept only while `enabled` (for
/// recordings; nothing is kept otherwise).
#[derive(Resource, Debug, Default)]
pub struct RadioLog {
    pub enabled: bool,
    /// Sender, receiver (`None` for a broadcast) and outcome, in the order they were sent.
    pub sends: Vec<(String, Option<String>, crate::comms::model::Sent)>,
}

/// The world's robots by slot in the model, rebuilt when robots register or unregister.
#[derive(Default)]
struct Slots {
    generation: u64,
    /// The slot of each robot, in robot order (`None`: not registered).
    by_order: Vec<Option<RobotId>>,
    /// Where each slot's robot is this step (one entry per slot of the model).
    positions: Vec<Option<Vec2>>,
    /// The same robots in a grid, for a broadcast's candidates.
    grid: RobotGrid,
    /// The planning pass's chunks, kept from step to step for their room and their letters.
    chunks: Vec<PlannedChunk<Payload>>,
}

/// The registered robots' centres in the world's uniform grid ([`CellGrid`]) with cells sized
/// for about one robot each, rebuilt every step a robot talks: a broadcast's candidates come from
/// it without the world index's other discs (pens, pads) or a map from entities to slots. In a
/// step of only a few broadcasts, each of them scans the list of centres instead (cheaper than
/// building the grid).
#[derive(Debug, Default)]
struct RobotGrid {
    /// No grid this step: each query scans `robots`.
    scan: bool,
    grid: CellGrid,
    /// The robots at a finite place, in robot order (the grid's items index this list).
    robots: Vec<(Vec2, RobotId)>,
    /// The same robots cell by cell (in the grid's item order): a row of cells a query
    /// overlaps is one run of this list, read straight through.
    by_cell: Vec<(Vec2, RobotId)>,
}

/// Steps with fewer broadcasts than this scan the robots' list for each instead of building the
/// grid (a scan of 10,000 centres costs about what a tenth of a grid's build does).
const GRID_FROM_BROADCASTS: usize = 8;

impl RobotGrid {
    /// The grid of `robots` (in robot order; robots at no finite place are left out), or their
    /// plain list when only a few `broadcasts` will ask.
    fn rebuild(&mut self, robots: impl Iterator<Item = (Vec2, RobotId)>, broadcasts: usize) {
        self.robots.clear();
        self.robots.extend(robots.filter(|(p, _)| p.is_finite()));
        // (An empty list is scanned too: no grid of other robots is left to ask.)
        self.scan = broadcasts < GRID_FROM_BROADCASTS || self.robots.is_empty();
        if self.scan {
            return;
        }
        let (min, max) =
            self.robots.iter().fold((Vec2::INFINITY, Vec2::NEG_INFINITY), |(lo, hi), &(p, _)| (lo.min(p), hi.max(p)));
        let (size, n) = ((max - min).max(Vec2::splat(1e-3)), self.robots.len() as f32);
        // About one robot per cell, and never more cells than a few per robot.
        let cell = (size.x * size.y / n).sqrt().max(size.max_element() / (4.0 * n)).max(1e-3);
        self.grid = CellGrid::new(min, max, cell);
        self.grid.fill_points(self.robots.iter().map(|&(p, _)| p));
        let robots = &self.robots;
        self.by_cell.clear();
        self.by_cell.extend(self.grid.items().iter().map(|&i| robots[i as usize]));
    }

    /// Every robot whose centre is within `range` of `center` (and a few within a centimetre
    /// more: the model decides the exact distance), with its distance from `center` (the very
    /// value `Vec2::distance` gives: the square root of the same sum of squares).
    fn within(&self, center: Vec2, range: f32, out: &mut Vec<Nearby>) {
        let reach = range + 0.01;
        let near = |&(p, id): &(Vec2, RobotId)| {
            let squared = p.distance_squared(center);
            (squared <= reach * reach).then(|| Nearby { id, distance: Some(squared.sqrt()) })
        };
        if self.scan {
            out.extend(self.robots.iter().filter_map(near));
        } else if center.is_finite() {
            self.grid.for_each_run(center - Vec2::splat(reach), center + Vec2::splat(reach), |run| {
                out.extend(self.by_cell[run].iter().filter_map(near));
            });
        }
    }
}

/// One send of this step. Sends are taken out of each robot's [`RadioOut`] (which keeps its
/// room for the next step) into one list, in robot order.
struct Outgoing {
    sender: Option<RobotId>,
    /// For the log of sends (empty when nothing is logged).
    name: String,
    pos: Vec2,
    target: Target,
    /// Taken when the send is planned.
    payload: Option<Payload>,
}

type RadioRobots<'w, 's> = Query<
    'w,
    's,
    (&'static Name, &'static Transform, &'static mut RadioOut, &'static mut RadioIn, &'static Env),
    With<Robot>,
>;

/// The communicate stage: each environment's radio sends what its robots say and hands out what
/// is due to them.
#[allow(clippy::too_many_arguments)]
fn deliver(
    time: Res<SimTime>,
    starts: Res<PerEnv<EnvStart>>,
    mut log: ResMut<RadioLog>,
    order: Res<RobotOrder>,
    passes: Res<Passes>,
    mut radios: ResMut<PerEnv<Radio>>,
    mut robots: RadioRobots,
    mut slots: Local<Vec<Slots>>,
    mut outgoing: Local<Vec<Outgoing>>,
    mut talking: Local<Vec<bool>>,
) {
    if log.enabled {
        log.sends.clear();
    }
    // Which environments' robots say something this step, in one pass.
    talking.clear();
    talking.resize(radios.len(), false);
    for (_, _, out, _, env) in &robots {
        if !out.0.is_empty()
            && let Some(t) = talking.get_mut(env.index())
        {
            *t = true;
        }
    }
    if !talking.contains(&true) && radios.0.iter().all(|radio| radio.0.stats.in_flight == 0) {
        // Nothing queued anywhere: only clear what was delivered last step.
        for (_, _, _, mut inbox, _) in &mut robots {
            if !inbox.0.is_empty() {
                inbox.0.clear();
            }
        }
        return;
    }
    slots.resize_with(radios.len(), Slots::default);
    let changed = order.is_changed();
    for ((env, radio), slots) in radios.iter_mut().zip(slots.iter_mut()) {
        let step = starts.step_of(env, time.step);
        let stage = Stage {
            step,
            order: order.of(env),
            talking: talking[env.index()],
            order_changed: changed,
            passes: &passes,
        };
        deliver_in(&stage, &mut log, &mut radio.0, &mut robots, slots, &mut outgoing);
    }
}

/// What one environment's communicate stage is given.
struct Stage<'a> {
    /// The environment's own step.
    step: u64,
    /// Its robots in robot order.
    order: &'a [Entity],
    /// Whether any of them says something this step.
    talking: bool,
    /// Whether the world's robot order changed since the last step.
    order_changed: bool,
    passes: &'a Passes,
}

/// One environment's communicate stage.
fn deliver_in(
    stage: &Stage,
    log: &mut RadioLog,
    model: &mut CommsModel<Payload>,
    robots: &mut RadioRobots,
    slots: &mut Slots,
    outgoing: &mut Vec<Outgoing>,
) {
    let Stage { step, order, talking, order_changed, passes } = *stage;
    if model.stats.in_flight == 0 && !talking {
        // Nothing queued here: only clear what was delivered last step.
        for &e in order {
            if let Ok((_, _, _, mut inbox, _)) = robots.get_mut(e)
                && !inbox.0.is_empty()
            {
                inbox.0.clear();
            }
        }
        return;
    }
    if slots.generation != model.generation() || order_changed || slots.by_order.len() != order.len() {
        let by_order: Vec<Option<RobotId>> =
            order.iter().map(|&e| robots.get(e).ok().and_then(|(n, ..)| model.id(n.as_str()))).collect();
        let positions = vec![None; by_order.iter().flatten().map(|&id| id as usize + 1).max().unwrap_or(0)];
        *slots = Slots { generation: model.generation(), by_order, positions, ..Slots::default() };
    }
    if talking {
        let Slots { by_order, positions, grid, chunks, .. } = &mut *slots;
        // Robots send in robot order.
        outgoing.clear();
        for (&e, id) in order.iter().zip(by_order.iter()) {
            let Ok((name, transform, mut out, ..)) = robots.get_mut(e) else { continue };
            let pos = transform.translation.truncate();
            if let Some(id) = *id {
                positions[id as usize] = Some(pos);
            }
            if !out.0.is_empty() {
                let name = || if log.enabled { name.to_string() } else { String::new() };
                let sends = out.0.drain(..).map(|(target, payload)| Outgoing {
                    sender: *id,
                    name: name(),
                    pos,
                    target,
                    payload: Some(payload),
                });
                outgoing.extend(sends);
            }
        }
        let broadcasts = outgoing.iter().filter(|out| out.target == Target::Broadcast).count();
        grid.rebuild(by_order.iter().flatten().filter_map(|&id| Some((positions[id as usize]?, id))), broadcasts);
        model.prepare();
        // Each chunk of sends is planned into the chunk that planned the same place last step.
        chunks.resize_with(outgoing.len().div_ceil(PASS_CHUNK), PlannedChunk::default);
        let kept: Vec<Mutex<PlannedChunk<Payload>>> = chunks.drain(..).map(Mutex::new).collect();
        let decide = |first: usize, chunk: &mut [Outgoing]| -> PlannedChunk<Payload> {
            let mut planned = kept[first / PASS_CHUNK].lock().map(|mut c| std::mem::take(&mut *c)).unwrap_or_default();
            planned.recycle();
            let mut near = Vec::new();
            let distance = |a: RobotId, b: RobotId| Some(positions[a as usize]?.distance(positions[b as usize]?));
            for out in chunk {
                near.clear();
                let to = match &out.target {
                    Target::Robot(n) => To::Robot(model.id(n)),
                    Target::Broadcast => {
                        receivers_around(model, grid, by_order, out, &mut near);
                        To::Broadcast
                    }
                };
                let payload = out.payload.take().expect("planned once");
                model.plan(out.sender, to, step, &near, distance, &mut planned, payload);
            }
            // Grouped by receiver here, in parallel, for the serial part of applying them.
            model.seal(&mut planned);
            planned
        };
        // Applied as if sent one by one in robot order: each receiver's queue fills in that order.
        *chunks = passes.map_chunks_mut(outgoing, decide);
        let sent = model.apply_all(step, chunks, passes);
        if log.enabled {
            for (out, sent) in outgoing.drain(..).zip(sent) {
                let to = match out.target {
                    Target::Robot(n) => Some(n),
                    Target::Broadcast => None,
                };
                log.sends.push((out.name, to, sent));
            }
        }
    }
    model.hand_out_all(step, passes);
    for (&e, &id) in order.iter().zip(slots.by_order.iter()) {
        let Ok((_, _, _, mut inbox, _)) = robots.get_mut(e) else { continue };
        // Touched only when something changes (the radio panel watches for changes).
        if !inbox.0.is_empty() || id.is_some_and(|id| model.has_ready(id)) {
            model.swap_ready(id, &mut inbox.0);
        }
    }
}

/// The registered robots a broadcast from `out` may reach: every robot whose centre is within
/// the sender's widest range (the model then checks the exact distance; the others it counts as
/// out of range), or every registered robot when the range is unlimited. They come in the
/// grid's order: nothing depends on it, since a send gives each receiver one message, drawn for
/// loss by receiver, and all of them one sequence number.
fn receivers_around(
    model: &CommsModel<Payload>,
    grid: &RobotGrid,
    by_order: &[Option<RobotId>],
    out: &Outgoing,
    near: &mut Vec<Nearby>,
) {
    let own = out.sender.and_then(|s| model.record(s)).and_then(|r| r.params.range);
    match [model.system.range, own].into_iter().flatten().reduce(f32::min) {
        Some(range) => grid.within(out.pos, range, near),
        None => near.extend(by_order.iter().flatten().map(|&id| Nearby::unmeasured(id))),
    }
}

/// The `comms` section of the run metrics.
fn report_section(world: &mut World) -> Option<(String, serde_json::Value)> {
    let order = world.resource::<RobotOrder>().0.clone();
    let names: Vec<String> = order.iter().filter_map(|&e| world.get::<Name>(e)).map(|n| n.to_string()).collect();
    let radio = world.get_resource::<PerEnv<Radio>>()?.0.first()?;
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
        DropCause::ALL.iter().map(|c| (c.name().to_string(), json!(s.dropped.get(*c)))).collect();
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

#[cfg(test)]
mod tests {
    use super::*;
    use rand::RngExt;

    /// The grid's candidates are every robot within range of the centre (a few just beyond
    /// may come too), each once, for robots spread, crowded on one spot, on a line, and with
    /// some at no finite place, from a grid and from the plain list a step of few broadcasts
    /// scans.
    #[test]
    fn the_robot_grid_finds_every_robot_in_range() {
        let mut rng = crate::sim::rng::stream(7, "grid", 0);
        let spread: Vec<Vec2> =
            (0..2000).map(|_| Vec2::new(rng.random_range(-30.0..30.0), rng.random_range(-10.0..10.0))).collect();
        let crowded: Vec<Vec2> = (0..300).map(|i| Vec2::new(1.0, 2.0) + Vec2::splat(i as f32 * 1e-6)).collect();
        let line: Vec<Vec2> = (0..500).map(|i| Vec2::new(i as f32 * 0.37, 4.0)).collect();
        let mut odd = spread[..200].to_vec();
        odd.extend([Vec2::NAN, Vec2::new(f32::INFINITY, 0.0), Vec2::new(1e30, -1e30)]);
        for (robots, broadcasts) in [spread, crowded, line, odd].into_iter().flat_map(|r| [(r.clone(), 1), (r, 1000)]) {
            let mut grid = RobotGrid::default();
            grid.rebuild(robots.iter().enumerate().map(|(i, &p)| (p, i as RobotId)), broadcasts);
            assert_eq!(grid.scan, broadcasts < GRID_FROM_BROADCASTS);
            // A step where no robot is at a finite place leaves no earlier grid to ask.
            let mut emptied = RobotGrid::default();
            emptied.rebuild(robots.iter().enumerate().map(|(i, &p)| (p, i as RobotId)), broadcasts);
            emptied.rebuild([(Vec2::NAN, 0)].into_iter(), broadcasts);
            let mut none = Vec::new();
            emptied.within(robots[0], 100.0, &mut none);
            assert!(none.is_empty());
            // About one robot per cell: never more than a few cells per robot.
            assert!(grid.grid.cells() <= 9 * robots.len() + 2, "{} cells", grid.grid.cells());
            for (k, &center) in robots.iter().enumerate().step_by(7) {
                for range in [0.0, 0.5, 2.0, 15.0] {
                    let mut found = Vec::new();
                    grid.within(center, range, &mut found);
                    let mut sorted: Vec<RobotId> = found.iter().map(|n| n.id).collect();
                    sorted.sort_unstable();
                    sorted.dedup();
                    assert_eq!(sorted.len(), found.len(), "each robot once");
                    for (i, p) in robots.iter().enumerate() {
                        // The sender's distance to the receiver, as the model would ask it.
                        let d = center.distance(*p);
                        let candidate = found.iter().find(|n| n.id == i as RobotId);
                        if d <= range {
                            assert!(candidate.is_some(), "robot {i} at {d} m from {k}, range {range}");
                        }
                        if let Some(n) = candidate {
                            assert!(d <= range + 0.02, "robot {i} at {d} m from {k} is no candidate for {range}");
                            // Bit for bit: the model decides the range on it.
                            assert_eq!(n.distance.map(f32::to_bits), Some(d.to_bits()), "robot {i} from {k}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn payloads_travel_as_json_and_back() {
        for p in [
            Payload::Claim { pen: "pen3".into(), distance: 0.5 },
            Payload::Obstacles(vec![Vec2::new(1.0, 2.0), Vec2::new(0.5, 0.25)]),
        ] {
            assert_eq!(Payload::from_json(p.to_json()), p);
        }
        assert_eq!(Payload::Text("hi".into()).to_json(), json!("hi"));
        let other = json!({"claim": {"pen": "p", "distance": 1, "extra": true}});
        assert_eq!(Payload::from_json(other.clone()), Payload::Json(other));
        assert_eq!(Payload::from_json(json!([1, 2])), Payload::Json(json!([1, 2])));
    }
}
