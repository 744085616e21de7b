//! The robot's sensors, read in the sense stage from the world as the last physics step left it.
//!
//! - bump: the bodies the robot touches, and a [`BumpEvent`] for each new contact;
//! - camera: pens, boxes, stations and robots inside the field-of-view cone and range, not hidden
//!   behind a wall or box, with distance and bearing;
//! - grip: what the gripper holds and the nearest free pen within reach;
//! - power: the battery level and whether it is charging;
//! - range (when the scene gives the robot one): a 2D lidar's beams, each the distance to the
//!   first wall, box, pen or robot it meets.
//!
//! Every query goes through the world's [`SpatialIndex`] (a grid), never a scan of all robots.

use bevy::prelude::*;
use bevy_rapier2d::prelude::CollisionGroups;

use super::gripper::front_point;
use super::{Battery, Gripper, Odometry, PoseCache, Robot, angle_of, pose, wrap_angle};
use crate::sim::{Env, EnvStart, Passes, PerEnv, RobotOrder, SimTime};
use crate::world::spatial::{groups_match, seeable_groups};
use crate::world::{Seeable, SpatialIndex, groups};

/// Bodies closer than this touch, metres.
pub const TOUCH: f32 = 0.001;

/// Contacts of the robot's body.
#[derive(Component, Debug, Clone, Default, PartialEq)]
pub struct BumpSensor {
    /// Bodies touched after the last physics step, sorted.
    pub touching: Vec<Entity>,
    /// For each touched body, the direction of the contact relative to the heading (radians,
    /// positive to the left; 0 is dead ahead).
    pub bearings: Vec<f32>,
    /// True when a contact started this step.
    pub bumped: bool,
    /// The bodies whose contact started this step.
    pub started: Vec<Entity>,
    /// Its environment's step it last sensed: sensing again in that step (as a world of several
    /// environments does when one of them is reset beside the others) changes nothing.
    pub sensed: Option<u64>,
    /// Whether the last pass of the sensor sensed it (else it had sensed this step already).
    pub fresh: bool,
}

impl BumpSensor {
    pub fn is_touching(&self) -> bool {
        !self.touching.is_empty()
    }

    /// Bodies touched within `half_angle` of the heading (or of the reverse heading with
    /// `backwards`).
    pub fn touching_towards(&self, half_angle: f32, backwards: bool) -> impl Iterator<Item = Entity> + '_ {
        self.touching.iter().zip(&self.bearings).filter_map(move |(e, b)| {
            let b = if backwards { wrap_angle(b + std::f32::consts::PI) } else { *b };
            (b.abs() <= half_angle).then_some(*e)
        })
    }
}

/// A robot's body started touching another body.
#[derive(Message, Debug, Clone, Copy, PartialEq, Eq)]
pub struct BumpEvent {
    pub robot: Entity,
    pub other: Entity,
    pub step: u64,
}

/// The camera's optics.
#[derive(Component, Debug, Clone, Copy, PartialEq)]
pub struct RobotCamera {
    /// Full opening angle, radians.
    pub fov: f32,
    /// Metres.
    pub range: f32,
    /// Refresh every `period` steps (staggered over robots).
    pub period: u32,
}

/// One thing the camera sees.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sighting {
    pub entity: Entity,
    pub kind: Seeable,
    /// From the robot's centre to the object's centre, metres.
    pub distance: f32,
    /// Relative to the heading, radians, positive to the left.
    pub bearing: f32,
}

/// The camera's latest picture, nearest first.
#[derive(Component, Debug, Clone, Default, PartialEq)]
pub struct CameraView {
    pub seen: Vec<Sighting>,
    /// The step the picture was taken.
    pub step: u64,
}

impl CameraView {
    /// The nearest sighting of a kind.
    pub fn nearest(&self, kind: Seeable) -> Option<&Sighting> {
        self.seen.iter().find(|s| s.kind == kind)
    }
}

/// A range sensor's beams (a 2D lidar), from the scene's `range_sensor`.
#[derive(Component, Debug, Clone, Copy, PartialEq)]
pub struct RangeSensor {
    /// Beams.
    pub rays: u32,
    /// Full opening angle, radians.
    pub fov: f32,
    /// Metres a beam reaches.
    pub range: f32,
    /// Scan every `period` steps (staggered over robots).
    pub period: u32,
}

impl From<&crate::scene::schema::RangeSensorSpec> for RangeSensor {
    fn from(s: &crate::scene::schema::RangeSensorSpec) -> Self {
        Self { rays: s.rays, fov: s.fov.to_radians(), range: s.range, period: s.period }
    }
}

impl RangeSensor {
    /// The first beam's angle from the heading and the angle between beams, radians, as ROS's
    /// `LaserScan` gives them (`angle_min`, `angle_increment`): counter-clockwise from the right
    /// edge of the field of view; a full circle starts straight behind and does not read that
    /// direction twice; one beam looks straight ahead.
    pub fn angles(&self) -> (f32, f32) {
        let full = self.fov >= std::f32::consts::TAU - 1e-6;
        match self.rays {
            0 | 1 => (0.0, 0.0),
            n if full => (-std::f32::consts::PI, std::f32::consts::TAU / n as f32),
            n => (-self.fov / 2.0, self.fov / (n - 1) as f32),
        }
    }

    /// Where each beam of a scan from `p` facing `heading` ends, and whether it met something
    /// there (read less than the sensor's range).
    pub fn beam_ends<'a>(
        &'a self,
        p: Vec2,
        heading: f32,
        distances: &'a [f32],
    ) -> impl Iterator<Item = (Vec2, bool)> + 'a {
        let (first, step) = self.angles();
        distances
            .iter()
            .enumerate()
            .map(move |(k, &d)| (p + Vec2::from_angle(heading + first + step * k as f32) * d, d < self.range))
    }
}

/// A range sensor's latest scan: one distance per beam in [`RangeSensor::angles`] order,
/// metres, the sensor's range where a beam met nothing.
#[derive(Component, Debug, Clone, Default, PartialEq)]
pub struct RangeScan {
    pub distances: Vec<f32>,
    /// The step the scan was taken.
    pub step: u64,
}

/// The grip sensor.
#[derive(Component, Debug, Clone, Copy, Default, PartialEq)]
pub struct GripSensor {
    pub holding: Option<Entity>,
    /// The nearest free pen within reach, if any.
    pub pen_in_reach: Option<Entity>,
}

/// The power sensor.
#[derive(Component, Debug, Clone, Copy, Default, PartialEq)]
pub struct PowerSensor {
    /// Charge as a fraction of capacity.
    pub level: f32,
    pub charging: bool,
}

pub(super) fn sense_bump(
    indices: Res<PerEnv<SpatialIndex>>,
    time: Res<SimTime>,
    starts: Res<PerEnv<EnvStart>>,
    passes: Res<Passes>,
    order: Res<RobotOrder>,
    mut robots: Query<(Entity, &Robot, &Transform, &CollisionGroups, &mut BumpSensor, &mut Odometry, &Env)>,
    mut events: MessageWriter<BumpEvent>,
) {
    let touch = |scratch: &mut (Vec<(Entity, Vec2)>, Vec<u32>), item: BumpItem| {
        let (entity, robot, transform, groups, mut bump, mut odo, env) = item;
        let step = starts.step_of(*env, time.step);
        // (Not a change others watch for: the tick is left alone.)
        let again = bump.sensed == Some(step);
        let marks = bump.bypass_change_detection();
        (marks.sensed, marks.fresh) = (Some(step), !again);
        if again {
            return;
        }
        let (found, blocks) = scratch;
        contacts(&indices[*env], entity, robot, transform, *groups, found, blocks);
        let new = found.iter().filter(|f| !bump.touching.contains(&f.0)).count();
        odo.collisions += new as u32;
        let bumped = new > 0;
        // Most robots touch nothing most of the time: leave their sensor (and its change tick)
        // alone then. Bearings move while touching, so they are refreshed whenever something is.
        if !found.is_empty() || !bump.touching.is_empty() || bump.bumped != bumped {
            let heading = pose(transform).1;
            let bearing = |towards: Vec2| {
                let towards = if towards.length_squared() > 1e-12 { towards } else { Vec2::X };
                wrap_angle(angle_of(towards) - heading)
            };
            bump.bearings = found.iter().map(|f| bearing(f.1)).collect();
            // The contacts that started this step, for the events below.
            bump.started = found.iter().filter(|f| !bump.touching.contains(&f.0)).map(|f| f.0).collect();
            bump.touching = found.iter().map(|f| f.0).collect();
            bump.bumped = bumped;
        }
    };
    // Each robot writes only its own sensor: the same in any order, on any thread.
    passes.each_mut_with(order.0.len(), &mut robots, || (Vec::new(), Vec::new()), touch);
    // Events in robot order, whatever ran where.
    for (env, of_env) in order.envs() {
        let step = starts.step_of(env, time.step);
        for &e in of_env {
            if let Ok((_, _, _, _, bump, _, _)) = robots.get(e)
                && bump.bumped
                && bump.fresh
            {
                for &other in &bump.started {
                    events.write(BumpEvent { robot: e, other, step });
                }
            }
        }
    }
}

type BumpItem<'a> =
    (Entity, &'a Robot, &'a Transform, &'a CollisionGroups, Mut<'a, BumpSensor>, Mut<'a, Odometry>, &'a Env);

/// Every solid body a robot's body touches within [`TOUCH`], sorted, each with the direction
/// towards its nearest point. Geometric: rapier reports contacts from a prediction distance on.
fn contacts(
    index: &SpatialIndex,
    entity: Entity,
    robot: &Robot,
    transform: &Transform,
    groups: CollisionGroups,
    found: &mut Vec<(Entity, Vec2)>,
    blocks: &mut Vec<u32>,
) {
    let pos = transform.translation.truncate();
    found.clear();
    let probe = robot.radius + TOUCH;
    index.discs_touching(pos, probe, |d| {
        if d.entity != entity && !d.sensor && groups_match(groups, d.groups) {
            found.push((d.entity, d.pos - pos));
        }
    });
    index.blocks_in(pos - Vec2::splat(probe), pos + Vec2::splat(probe), blocks);
    for &b in blocks.iter() {
        let block = &index.blocks[b as usize];
        let (nearest, distance) = block.nearest(pos);
        if distance <= probe && groups_match(groups, block.groups) {
            // From inside a block (pushed in), away from its centre.
            let towards = if distance > 1e-6 { nearest - pos } else { block.center - pos };
            found.push((block.entity, towards));
        }
    }
    found.sort_by_key(|f| f.0);
    found.dedup_by_key(|f| f.0);
}

pub(super) fn sense_camera(
    indices: Res<PerEnv<SpatialIndex>>,
    time: Res<SimTime>,
    starts: Res<PerEnv<EnvStart>>,
    passes: Res<Passes>,
    order: Res<RobotOrder>,
    mut robots: Query<(Entity, &Robot, (&Transform, &PoseCache), &RobotCamera, &mut CameraView, &Env)>,
) {
    let look = |scratch: &mut CameraScratch, (entity, robot, (transform, cache), camera, mut view, env): CameraItem| {
        // Stagger refreshes so a period of k spreads the work over k steps.
        let step = starts.step_of(*env, time.step);
        if (step + u64::from(robot.index)).is_multiple_of(u64::from(camera.period.max(1))) {
            let view = &mut *view;
            camera_picture(&indices[*env], entity, transform, cache, camera, scratch, &mut view.seen);
            view.step = step;
        }
    };
    // Each robot writes only its own picture: the same in any order, on any thread.
    passes.each_mut_with(order.0.len(), &mut robots, CameraScratch::default, look);
}

/// The angles of a camera's cone that do not change with its pose: worked out once for a
/// field of view and kept while the cameras met have that one (a sine and a cosine per camera
/// per step otherwise).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Cone {
    fov: f32,
    half: f32,
    /// The cosine of the half-angle a little widened, for the cheap test against the cone.
    cos_wide: f32,
    /// The sine and cosine of the same half-angle, for the cone's box.
    sin_cos_wide: (f32, f32),
}

impl Cone {
    fn of(fov: f32) -> Self {
        let half = fov / 2.0;
        let wide = half + 1e-3;
        Self { fov, half, cos_wide: wide.min(std::f32::consts::PI).cos(), sin_cos_wide: wide.sin_cos() }
    }
}

/// A pass's room between cameras: the blocks near a cone, and the last cone worked out.
#[derive(Default)]
struct CameraScratch {
    blocks: Vec<u32>,
    cone: Option<Cone>,
}

type CameraItem<'a> =
    (Entity, &'a Robot, (&'a Transform, &'a PoseCache), &'a RobotCamera, Mut<'a, CameraView>, &'a Env);

/// What a camera at `transform` sees, nearest first, into `seen` (its old picture, whose room
/// is reused); `blocks` is scratch space.
fn camera_picture(
    index: &SpatialIndex,
    entity: Entity,
    transform: &Transform,
    cache: &PoseCache,
    camera: &RobotCamera,
    scratch: &mut CameraScratch,
    seen: &mut Vec<Sighting>,
) {
    let seeable = seeable_groups();
    let occluders = groups::WALL | groups::BOX;
    let pos = transform.translation.truncate();
    let PoseCache { heading, facing, .. } = cache.current(transform);
    let cone = match scratch.cone {
        // Compared bit for bit: the same field of view gives the same angles.
        Some(cone) if cone.fov.to_bits() == camera.fov.to_bits() => cone,
        _ => *scratch.cone.insert(Cone::of(camera.fov)),
    };
    let half_fov = cone.half;
    // A cheap test against the cone, a little wider than it: the exact bearing (an atan2) is
    // computed only for what passes.
    let cos_wide = cone.cos_wide;
    let range = camera.range;
    // Only what lies in the cone's bounding box can be seen, and only blocks there can hide it.
    let (lo, hi) = cone_bounds(pos, facing, half_fov + 1e-3, cone.sin_cos_wide, range);
    let blocks = &mut scratch.blocks;
    index.blocks_in(lo, hi, blocks);
    let blocks = &*blocks;
    seen.clear();
    // Out of range or outside the wide cone: told where the candidate is met, without a call.
    let in_reach = |at: Vec2| {
        let rel = at - pos;
        let distance = rel.length();
        (distance <= range && distance > f32::EPSILON && rel.dot(facing) >= cos_wide * distance)
            .then_some((rel, distance))
    };
    let mut look = |target: Entity, (rel, distance): (Vec2, f32), kind: Seeable| {
        let bearing = wrap_angle(angle_of(rel) - heading);
        if bearing.abs() > half_fov {
            return;
        }
        // Walls and boxes hide what is behind them: the first one the line of sight meets,
        // unless it is the target itself (a box does not hide itself).
        let dir = rel / distance;
        let first = blocks
            .iter()
            .map(|&b| &index.blocks[b as usize])
            .filter(|o| o.groups.memberships.intersects(occluders))
            .filter_map(|o| Some((o.ray(pos, dir, distance)?, o.entity)))
            .min_by(|a, b| a.0.total_cmp(&b.0));
        let hidden = first.is_some_and(|(toi, hit)| hit != target && toi < distance - 1e-3);
        if !hidden {
            seen.push(Sighting { entity: target, kind, distance, bearing });
        }
    };
    index.discs_in(lo, hi, |d| {
        if let Some(kind) = d.kind
            && d.entity != entity
            && d.groups.memberships.intersects(seeable)
            && let Some(seen_at) = in_reach(d.pos)
        {
            look(d.entity, seen_at, kind);
        }
    });
    for &b in blocks {
        let block = &index.blocks[b as usize];
        if let Some(kind) = block.kind
            && block.groups.memberships.intersects(seeable)
            && let Some(seen_at) = in_reach(block.center)
        {
            look(block.entity, seen_at, kind);
        }
    }
    // Each entity appears once: the order is total.
    seen.sort_unstable_by(|a, b| a.distance.total_cmp(&b.distance).then(a.entity.cmp(&b.entity)));
}

/// A box holding the cone at `pos` facing `facing` (a unit vector) with half-angle `half`
/// (radians, whose sine and cosine are `sin_cos`) and `range` metres: the apex, the two ends of
/// the arc and the arc's extremes along the axes it passes, a little widened for rounding.
fn cone_bounds(pos: Vec2, facing: Vec2, half: f32, (sin, cos): (f32, f32), range: f32) -> (Vec2, Vec2) {
    if half >= std::f32::consts::PI {
        return (pos - Vec2::splat(range), pos + Vec2::splat(range));
    }
    let ends = [Vec2::new(cos, sin).rotate(facing), Vec2::new(cos, -sin).rotate(facing)];
    let (mut lo, mut hi) = (pos.min(pos + range * ends[0]), pos.max(pos + range * ends[0]));
    lo = lo.min(pos + range * ends[1]);
    hi = hi.max(pos + range * ends[1]);
    // The arc reaches furthest along an axis it crosses (a little early, for rounding).
    let c = cos - 1e-4;
    if facing.x >= c {
        hi.x = pos.x + range;
    }
    if -facing.x >= c {
        lo.x = pos.x - range;
    }
    if facing.y >= c {
        hi.y = pos.y + range;
    }
    if -facing.y >= c {
        lo.y = pos.y - range;
    }
    let pad = Vec2::splat(1e-4 + range * 1e-4);
    (lo - pad, hi + pad)
}

pub(super) fn sense_range(
    indices: Res<PerEnv<SpatialIndex>>,
    time: Res<SimTime>,
    starts: Res<PerEnv<EnvStart>>,
    passes: Res<Passes>,
    order: Res<RobotOrder>,
    mut robots: Query<(Entity, &Robot, (&Transform, &PoseCache), &RangeSensor, &mut RangeScan, &Env)>,
) {
    if robots.is_empty() {
        return;
    }
    let scan = |scratch: &mut RangeScratch, (entity, robot, (transform, cache), sensor, mut scan, env): RangeItem| {
        let step = starts.step_of(*env, time.step);
        if (step + u64::from(robot.index)).is_multiple_of(u64::from(sensor.period.max(1))) {
            let PoseCache { heading, .. } = cache.current(transform);
            let pos = transform.translation.truncate();
            range_scan(&indices[*env], entity, pos, heading, sensor, scratch, &mut scan.distances);
            scan.step = step;
        }
    };
    // Each robot writes only its own scan: the same in any order, on any thread.
    passes.each_mut_with(order.0.len(), &mut robots, RangeScratch::default, scan);
}

/// A pass's room between range scans: the blocks near a sensor, and its beams' directions.
#[derive(Default)]
pub struct RangeScratch {
    blocks: Vec<u32>,
    dirs: Vec<Vec2>,
    /// Each beam's direction relative to the heading, for the layout (rays, and the first beam's
    /// angle and the angle between beams, as bits) they were worked out for.
    relative: Vec<Vec2>,
    layout: Option<(u32, u32, u32)>,
}

impl RangeScratch {
    /// The beams' directions of `sensor` heading `heading`, into `dirs`: each beam's direction
    /// relative to the heading turned by it, a sine and a cosine a scan rather than one a beam
    /// (the relative ones are worked out again only for another layout, and are the same on
    /// any thread).
    fn aim(&mut self, heading: f32, sensor: &RangeSensor) {
        let (first, step) = sensor.angles();
        let layout = (sensor.rays, first.to_bits(), step.to_bits());
        if self.layout != Some(layout) {
            self.relative.clear();
            self.relative.extend((0..sensor.rays).map(|k| Vec2::from_angle(first + step * k as f32)));
            self.layout = Some(layout);
        }
        let turn = Vec2::from_angle(heading);
        self.dirs.clear();
        self.dirs.extend(self.relative.iter().map(|&r| turn.rotate(r)));
    }
}

type RangeItem<'a> = (Entity, &'a Robot, (&'a Transform, &'a PoseCache), &'a RangeSensor, Mut<'a, RangeScan>, &'a Env);

/// What a range sensor at `pos` heading `heading` reads, beam by beam, into `out`: the distance
/// along each beam to the first wall, box, pen or robot (not `entity` itself, not a charging
/// pad: it is flat), or the sensor's range.
pub fn range_scan(
    index: &SpatialIndex,
    entity: Entity,
    pos: Vec2,
    heading: f32,
    sensor: &RangeSensor,
    scratch: &mut RangeScratch,
    out: &mut Vec<f32>,
) {
    let range = sensor.range;
    let solid = groups::WALL | groups::BOX | groups::PEN | groups::ROBOT;
    let (lo, hi) = (pos - Vec2::splat(range), pos + Vec2::splat(range));
    // Each beam's direction once, not once per body it is tested against.
    scratch.aim(heading, sensor);
    let RangeScratch { blocks, dirs, .. } = scratch;
    index.blocks_in(lo, hi, blocks);
    let (first, step) = sensor.angles();
    out.clear();
    out.resize(sensor.rays as usize, range);
    // A beam's reading is the least distance at which it meets a body (a test passes the
    // reading so far as its limit), whatever order the bodies are tested in; the beams a body
    // cannot meet are skipped by tests that never skip one it meets (see `beams_toward`).
    let reach = range * (1.0 + 1e-4) + 1e-4;
    let fan = Fan::new(heading + first, step, sensor.rays.saturating_sub(1) as usize, reach);
    for &b in blocks.iter() {
        let block = &index.blocks[b as usize];
        if !block.groups.memberships.intersects(solid) {
            continue;
        }
        let (near, distance) = block.nearest(pos);
        if distance > reach {
            continue;
        }
        // From outside, a beam meets the (convex) rectangle only heading towards its nearest
        // point: beams heading away, with a margin for rounding, are skipped.
        let toward = near - pos;
        let outside = distance > 0.0;
        let o = block.local(pos);
        for (reading, &dir) in out.iter_mut().zip(dirs.iter()) {
            if outside && dir.dot(toward) < -1e-5 {
                continue;
            }
            if let Some(t) = block.ray_from_local(o, dir, *reading) {
                *reading = t;
            }
        }
    }
    index.discs_in(lo - Vec2::splat(index.max_radius()), hi + Vec2::splat(index.max_radius()), |d| {
        if d.entity == entity || d.sensor || !d.groups.memberships.intersects(solid) {
            return;
        }
        let mut hit = |k: usize| {
            if let Some(t) = ray_disc(pos, dirs[k], d.pos, d.radius)
                && t < out[k]
            {
                out[k] = t;
            }
        };
        match fan.beams_toward(pos, d.pos, d.radius) {
            Beams::None => {}
            Beams::All => (0..dirs.len()).for_each(&mut hit),
            Beams::Some(ranges) => ranges.into_iter().flatten().for_each(&mut hit),
        }
    });
}

/// Which beams of a range sensor may meet a disc: an over-estimate (a beam left out never meets
/// it), from the disc's bearing and angular half-width with a margin far above rounding's.
#[derive(Debug, Clone, PartialEq)]
enum Beams {
    None,
    All,
    /// Up to three runs of beam indices (the field of view may wrap around behind the robot).
    Some([std::ops::Range<usize>; 3]),
}

/// Radians of margin on a disc's angular extent: rounding in the beams' directions and in
/// [`angle_of`] is below 1e-6.
const BEAM_MARGIN: f32 = 1e-3;

/// A scan's beams, worked out once for all the discs it tests.
struct Fan {
    /// The first beam's direction, radians.
    from: f32,
    /// Radians between beams.
    step: f32,
    /// The last beam's index.
    last: usize,
    /// The range, with a margin: a body farther than this meets no beam.
    reach: f32,
    /// For a fan no wider than a half-turn, the direction of its middle: no beam heads more
    /// than a quarter-turn away from it.
    ahead: Option<Vec2>,
}

/// Radians a beam may be off its angle, far above rounding's, when a disc is left out for lying
/// behind a fan ([`Fan::ahead`]).
const AHEAD_MARGIN: f32 = 1e-3;

impl Fan {
    fn new(from: f32, step: f32, last: usize, reach: f32) -> Fan {
        let span = step * last as f32;
        let ahead = (span <= std::f32::consts::PI + 1e-6).then(|| Vec2::from_angle(from + span / 2.0));
        Fan { from, step, last, reach, ahead }
    }

    fn beams_toward(&self, pos: Vec2, center: Vec2, radius: f32) -> Beams {
        let to = center - pos;
        // Behind a fan no wider than a half-turn: a point t along a beam (t at most the reach)
        // lies at least -t·sin(margin) ahead of the fan's middle, and every point of the disc
        // lies at most `radius` ahead of its centre.
        if let Some(ahead) = self.ahead
            && to.dot(ahead) < -radius - self.reach * AHEAD_MARGIN
        {
            return Beams::None;
        }
        let d2 = to.length_squared();
        if d2 <= radius * radius * (1.0 + 1e-3) || self.last == 0 || self.step <= 0.0 {
            // From inside (or nearly), or a single beam: test every beam.
            return Beams::All;
        }
        // Out of reach: farther than `reach + radius`, compared squared.
        if d2 > (self.reach + radius) * (self.reach + radius) {
            return Beams::None;
        }
        let d = d2.sqrt();
        // The half-width asin(r/d) is below its tangent, r / sqrt(d² - r²).
        let s = radius / d;
        let half = if s < 0.99 { s / (1.0 - s * s).sqrt() } else { std::f32::consts::PI };
        let half = half + BEAM_MARGIN;
        if half >= std::f32::consts::PI {
            return Beams::All;
        }
        // The bearing from the first beam, in [0, 2π) (a heading far outside [-π, π] by the
        // remainder, otherwise by a turn or two).
        let tau = std::f32::consts::TAU;
        let mut rel = angle_of(to) - self.from;
        if !(-2.0 * tau..3.0 * tau).contains(&rel) {
            rel = rel.rem_euclid(tau);
        }
        while rel < 0.0 {
            rel += tau;
        }
        while rel >= tau {
            rel -= tau;
        }
        let run = |c: f32| {
            let (a, b) = ((c - half) / self.step, (c + half) / self.step);
            if b < 0.0 || a > self.last as f32 {
                return 0..0;
            }
            // Beams ⌈a⌉ to ⌊b⌋; truncating a positive `a` may add the beam before (tested in
            // vain, it changes nothing).
            let from = if a <= 0.0 { 0 } else { a as usize };
            from..((b as usize).min(self.last) + 1)
        };
        Beams::Some([run(rel - tau), run(rel), run(rel + tau)])
    }
}

/// Where a ray from `origin` along the unit `dir` first meets the disc at `center` of `radius`
/// (0 from inside), if it does ahead of the origin.
pub fn ray_disc(origin: Vec2, dir: Vec2, center: Vec2, radius: f32) -> Option<f32> {
    let to = center - origin;
    let along = to.dot(dir);
    let off2 = to.length_squared() - along * along;
    let r2 = radius * radius;
    if to.length_squared() <= r2 {
        return Some(0.0);
    }
    if along < 0.0 || off2 > r2 {
        return None;
    }
    Some(along - (r2 - off2).max(0.0).sqrt())
}

pub(super) fn sense_grip(
    indices: Res<PerEnv<SpatialIndex>>,
    passes: Res<Passes>,
    order: Res<RobotOrder>,
    mut robots: Query<(&Robot, &Transform, &PoseCache, &Gripper, &mut GripSensor, &Env)>,
) {
    passes.each_mut(order.0.len(), &mut robots, |(robot, transform, cache, gripper, mut sensor, env)| {
        let index = &indices[*env];
        let front = front_point(transform, cache, robot);
        let mut best: Option<(f32, Entity)> = None;
        // Free pens only: held and boxed pens are out of the physics world and the index.
        index.discs_touching(front, gripper.reach, |d| {
            if d.kind == Some(Seeable::Pen) {
                let dist = d.pos.distance(front) - d.radius;
                if dist <= gripper.reach && best.is_none_or(|b| (dist, d.entity) < b) {
                    best = Some((dist, d.entity));
                }
            }
        });
        let reading = GripSensor { holding: gripper.holding, pen_in_reach: best.map(|b| b.1) };
        if *sensor != reading {
            *sensor = reading;
        }
    });
}

pub(super) fn sense_power(
    passes: Res<Passes>,
    order: Res<RobotOrder>,
    mut robots: Query<(&Battery, &mut PowerSensor)>,
) {
    passes.each_mut(order.0.len(), &mut robots, |(battery, mut sensor)| {
        let reading = PowerSensor { level: battery.level(), charging: battery.charging };
        if *sensor != reading {
            *sensor = reading;
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::world::spatial::Disc;
    use bevy_rapier2d::prelude::Group;
    use rand::RngExt;

    #[test]
    fn a_beam_ends_where_it_read_and_says_whether_it_met_something() {
        let sensor = RangeSensor { rays: 3, fov: std::f32::consts::PI, range: 2.0, period: 1 };
        let ends: Vec<(Vec2, bool)> = sensor.beam_ends(Vec2::new(1.0, 1.0), 0.0, &[0.5, 2.0, 1.0]).collect();
        let near = |a: Vec2, b: Vec2| (a - b).length() < 1e-5;
        assert!(near(ends[0].0, Vec2::new(1.0, 0.5)) && ends[0].1, "right: {ends:?}");
        assert!(near(ends[1].0, Vec2::new(3.0, 1.0)) && !ends[1].1, "ahead, nothing met: {ends:?}");
        assert!(near(ends[2].0, Vec2::new(1.0, 2.0)) && ends[2].1, "left: {ends:?}");
    }

    /// Robot `i`'s body as the index keeps it: a 0.1 m disc at `pos`.
    fn robot_disc(i: u32, pos: Vec2) -> Disc {
        Disc {
            entity: Entity::from_raw_u32(i + 1).unwrap(),
            pos,
            radius: 0.1,
            kind: Some(Seeable::Robot),
            groups: CollisionGroups::new(groups::ROBOT, Group::ALL),
            sensor: false,
        }
    }

    /// Cameras of different fields of view met in turn by one pass (which keeps the last cone's
    /// angles) see exactly what each sees with its angles worked out afresh.
    #[test]
    fn a_pass_meeting_cameras_of_several_fields_of_view_gives_each_its_own_picture() {
        let mut rng = crate::sim::rng::stream(5, "camera-test", 0);
        let places: Vec<Vec2> =
            (0..400).map(|_| Vec2::new(rng.random_range(0.0..10.0), rng.random_range(0.0..10.0))).collect();
        let mut index = SpatialIndex::default();
        index.set_discs(Vec2::splat(10.0), places.iter().enumerate().map(|(i, &p)| robot_disc(i as u32, p)));
        let fovs = [90f32, 30.0, 200.0, 90.0].map(f32::to_radians);
        let mut shared = CameraScratch::default();
        let mut seen_by_fov = [0usize; 4];
        for (i, &pos) in places.iter().enumerate().take(100) {
            let k = i % fovs.len();
            let camera = RobotCamera { fov: fovs[k], range: 1.5, period: 1 };
            let transform = crate::world::transform2d(pos, rng.random_range(-3.0..3.0));
            let cache = PoseCache::of(&transform);
            let entity = Entity::from_raw_u32(i as u32 + 1).unwrap();
            let (mut kept, mut fresh) = (Vec::new(), Vec::new());
            camera_picture(&index, entity, &transform, &cache, &camera, &mut shared, &mut kept);
            camera_picture(&index, entity, &transform, &cache, &camera, &mut CameraScratch::default(), &mut fresh);
            assert_eq!(kept, fresh, "camera {i} ({} degrees)", fovs[k].to_degrees());
            assert!(
                kept.iter().all(|s| s.bearing.abs() <= fovs[k].min(std::f32::consts::TAU) / 2.0 && s.distance <= 1.5)
            );
            seen_by_fov[k] += kept.len();
        }
        // The narrow cone sees least, the 200° one most.
        assert!(seen_by_fov[1] < seen_by_fov[0] && seen_by_fov[0] < seen_by_fov[2], "{seen_by_fov:?}");
    }

    /// A disc at no finite place (kept in a border cell of the index) is never seen, while a
    /// robot beside the camera is.
    #[test]
    fn a_camera_never_sees_a_disc_at_no_finite_place() {
        let mut index = SpatialIndex::default();
        index.set_discs(
            Vec2::splat(4.0),
            [robot_disc(1, Vec2::new(0.8, 0.3)), robot_disc(2, Vec2::NAN), robot_disc(3, Vec2::new(f32::NAN, 0.2))],
        );
        let camera = RobotCamera { fov: 360f32.to_radians(), range: 1.5, period: 1 };
        let transform = crate::world::transform2d(Vec2::new(0.3, 0.3), 0.0);
        let cache = PoseCache::of(&transform);
        let mut seen = Vec::new();
        let me = Entity::from_raw_u32(99).unwrap();
        camera_picture(&index, me, &transform, &cache, &camera, &mut CameraScratch::default(), &mut seen);
        let seen: Vec<(Entity, f32)> = seen.iter().map(|s| (s.entity, s.distance)).collect();
        assert_eq!(seen, [(Entity::from_raw_u32(2).unwrap(), 0.5)]);
    }

    /// Every point of a cone, its edges and arc included, lies in the cone's box, and the box is
    /// no bigger than the cone needs.
    #[test]
    fn the_cone_box_holds_the_whole_cone_and_little_else() {
        let mut rng = crate::sim::rng::stream(3, "cone-test", 0);
        for _ in 0..2_000 {
            let pos = Vec2::new(rng.random_range(-5.0..5.0), rng.random_range(-5.0..5.0));
            let heading = rng.random_range(-4.0..4.0f32);
            let half = rng.random_range(0.01..3.3f32);
            let range = rng.random_range(0.1..3.0f32);
            let facing = Vec2::from_angle(heading);
            let (lo, hi) = cone_bounds(pos, facing, half, half.sin_cos(), range);
            let (mut min, mut max) = (pos, pos);
            for i in 0..=200 {
                let a =
                    heading - half.min(std::f32::consts::PI) + 2.0 * half.min(std::f32::consts::PI) * i as f32 / 200.0;
                for r in [range, range * 0.5] {
                    let p = pos + r * Vec2::from_angle(a);
                    assert!(
                        p.cmpge(lo).all() && p.cmple(hi).all(),
                        "{p} outside {lo}..{hi} (heading {heading}, half {half})"
                    );
                    min = min.min(p);
                    max = max.max(p);
                }
            }
            // Tight: at most the padding and the arc between samples beyond the cone's extent.
            let slack = 1e-3 + range * 2e-3;
            assert!(
                (min - lo).max_element() <= slack && (hi - max).max_element() <= slack,
                "{lo}..{hi} for {min}..{max}"
            );
        }
    }

    fn wall(i: u32, center: Vec2, half: Vec2) -> crate::world::spatial::Block {
        crate::world::spatial::Block {
            entity: Entity::from_raw_u32(1000 + i).unwrap(),
            center,
            half,
            axis: Vec2::X,
            kind: None,
            groups: CollisionGroups::new(groups::WALL, Group::ALL),
        }
    }

    fn lidar(rays: u32, fov_deg: f32, range: f32) -> RangeSensor {
        RangeSensor { rays, fov: fov_deg.to_radians(), range, period: 1 }
    }

    #[test]
    fn beams_spread_counter_clockwise_from_the_right_edge_and_a_full_circle_reads_no_direction_twice() {
        let (first, step) = lidar(5, 180.0, 3.0).angles();
        assert!(
            (first + std::f32::consts::FRAC_PI_2).abs() < 1e-6 && (step - std::f32::consts::FRAC_PI_4).abs() < 1e-6
        );
        let (first, step) = lidar(4, 360.0, 3.0).angles();
        assert!((first + std::f32::consts::PI).abs() < 1e-6 && (step - std::f32::consts::FRAC_PI_2).abs() < 1e-6);
        assert_eq!(lidar(1, 90.0, 3.0).angles(), (0.0, 0.0));
    }

    #[test]
    fn a_beam_reads_the_nearest_wall_pen_or_robot_and_its_range_where_it_meets_none() {
        let mut index = SpatialIndex::default();
        let me = robot_disc(0, Vec2::new(5.0, 5.0));
        // A robot 1 m ahead (east), a wall 2 m to the left (north) whose near face is at 1.9 m,
        // behind it nothing; a pen 0.5 m to the right (south) of radius 0.05, and behind it a
        // robot that it hides.
        let ahead = robot_disc(1, Vec2::new(6.0, 5.0));
        let mut pen = robot_disc(2, Vec2::new(5.0, 4.5));
        pen.radius = 0.05;
        pen.groups = CollisionGroups::new(groups::PEN, Group::ALL);
        let hidden = robot_disc(3, Vec2::new(5.0, 4.0));
        // A charging pad straight behind: flat, never read.
        let mut pad = robot_disc(4, Vec2::new(4.0, 5.0));
        pad.sensor = true;
        pad.groups = CollisionGroups::new(groups::STATION, Group::ALL);
        index.set_discs(Vec2::splat(10.0), [me, ahead, pen, hidden, pad]);
        index.set_blocks(Vec2::splat(10.0), vec![wall(0, Vec2::new(5.0, 7.0), Vec2::new(2.0, 0.1))]);
        // Four beams over the full circle, heading east: behind, right, ahead, left.
        let (mut blocks, mut out) = (RangeScratch::default(), Vec::new());
        range_scan(&index, me.entity, me.pos, 0.0, &lidar(4, 360.0, 3.0), &mut blocks, &mut out);
        let expect = [3.0, 0.45, 0.9, 1.9];
        for (got, want) in out.iter().zip(expect) {
            assert!((got - want).abs() < 1e-5, "{out:?}");
        }
        // Out of range: everything reads the range.
        range_scan(&index, me.entity, me.pos, 0.0, &lidar(4, 360.0, 0.3), &mut blocks, &mut out);
        assert_eq!(out, vec![0.3; 4]);
        // Turned a quarter to the left, the single beam looks at the wall.
        range_scan(&index, me.entity, me.pos, std::f32::consts::FRAC_PI_2, &lidar(1, 90.0, 3.0), &mut blocks, &mut out);
        assert!((out[0] - 1.9).abs() < 1e-5, "{out:?}");
    }

    /// Every beam against every body in range, as range scans were taken before beams were
    /// skipped.
    fn scan_every_beam(
        index: &SpatialIndex,
        entity: Entity,
        pos: Vec2,
        heading: f32,
        sensor: &RangeSensor,
    ) -> Vec<f32> {
        let solid = groups::WALL | groups::BOX | groups::PEN | groups::ROBOT;
        let mut scratch = RangeScratch::default();
        scratch.aim(heading, sensor);
        let mut out = vec![sensor.range; sensor.rays as usize];
        for (k, reading) in out.iter_mut().enumerate() {
            let dir = scratch.dirs[k];
            for block in index.blocks.iter().filter(|b| b.groups.memberships.intersects(solid)) {
                if let Some(t) = block.ray(pos, dir, *reading) {
                    *reading = t;
                }
            }
            for d in index.discs.iter() {
                if d.entity != entity
                    && !d.sensor
                    && d.groups.memberships.intersects(solid)
                    && let Some(t) = ray_disc(pos, dir, d.pos, d.radius)
                    && t < *reading
                {
                    *reading = t;
                }
            }
        }
        out
    }

    /// A scan's beams point where their angles say, to within rounding, and a scratch used for
    /// one layout and then another aims the second's beams.
    #[test]
    fn beams_point_along_their_angles_for_each_layout_in_turn() {
        let mut scratch = RangeScratch::default();
        for (rays, fov_deg) in [(16, 180.0f32), (360, 360.0), (3, 90.0), (16, 270.0), (1, 0.0), (1024, 360.0)] {
            let sensor = RangeSensor { rays, fov: fov_deg.to_radians(), range: 4.0, period: 1 };
            let (first, step) = sensor.angles();
            for heading in [0.0f32, 1.0, -2.5, 3.1, 40.0] {
                scratch.aim(heading, &sensor);
                assert_eq!(scratch.dirs.len(), rays as usize);
                for (k, dir) in scratch.dirs.iter().enumerate() {
                    let want = Vec2::from_angle(heading + first + step * k as f32);
                    assert!(
                        (*dir - want).length() < 2e-5 && (dir.length() - 1.0).abs() < 1e-6,
                        "{rays} beams over {fov_deg}°, heading {heading}, beam {k}: {dir} against {want}"
                    );
                }
            }
        }
    }

    /// The beams a scan skips are ones that meet nothing: over thousands of random rooms, sensors
    /// and poses (robots touching the sensor's robot, discs straddling the field of view's edge,
    /// full circles, single beams, turned boxes) every reading is bit for bit the one testing
    /// every beam against every body gives.
    #[test]
    fn skipping_beams_changes_no_reading() {
        let mut rng = crate::sim::rng::stream(11, "range-skip-test", 0);
        let arena = Vec2::splat(8.0);
        let (mut scratch, mut out) = (RangeScratch::default(), Vec::new());
        for case in 0..3_000 {
            let mut index = SpatialIndex::default();
            let me = robot_disc(0, Vec2::new(rng.random_range(0.5..7.5), rng.random_range(0.5..7.5)));
            let mut discs = vec![me];
            for i in 1..rng.random_range(1..30u32) {
                let near = rng.random_bool(0.3);
                let at = if near {
                    me.pos + Vec2::from_angle(rng.random_range(-4.0..4.0)) * rng.random_range(0.0..0.4)
                } else {
                    Vec2::new(rng.random_range(0.0..8.0), rng.random_range(0.0..8.0))
                };
                let mut d = robot_disc(i, at);
                d.radius = rng.random_range(0.01..0.4);
                if rng.random_bool(0.3) {
                    d.groups = CollisionGroups::new(groups::PEN, Group::ALL);
                }
                discs.push(d);
            }
            index.set_discs(arena, discs);
            let mut blocks = vec![
                wall(0, Vec2::new(4.0, 0.0), Vec2::new(4.0, 0.05)),
                wall(1, Vec2::new(4.0, 8.0), Vec2::new(4.0, 0.05)),
                wall(2, Vec2::new(0.0, 4.0), Vec2::new(0.05, 4.0)),
                wall(3, Vec2::new(8.0, 4.0), Vec2::new(0.05, 4.0)),
            ];
            for i in 0..rng.random_range(0..4u32) {
                let mut b = wall(10 + i, Vec2::new(rng.random_range(0.0..8.0), rng.random_range(0.0..8.0)), Vec2::ZERO);
                b.half = Vec2::new(rng.random_range(0.05..1.0), rng.random_range(0.05..1.0));
                b.axis = Vec2::from_angle(rng.random_range(-4.0..4.0));
                b.groups = CollisionGroups::new(groups::BOX, Group::ALL);
                blocks.push(b);
            }
            index.set_blocks(arena, blocks);
            let rays = [1, 2, 5, 16, 64, 360][rng.random_range(0..6usize)];
            let fov = [30.0, 180.0, 270.0, 360.0][rng.random_range(0..4usize)];
            let sensor = lidar(rays, fov, rng.random_range(0.2..6.0));
            let heading = rng.random_range(-3.2..3.2f32);
            range_scan(&index, me.entity, me.pos, heading, &sensor, &mut scratch, &mut out);
            let want = scan_every_beam(&index, me.entity, me.pos, heading, &sensor);
            assert_eq!(out, want, "case {case}: {rays} beams over {fov}° at {} heading {heading}", me.pos);
        }
    }

    #[test]
    fn a_ray_meets_a_disc_at_its_near_side_never_behind_and_at_zero_from_inside() {
        let hit = ray_disc(Vec2::ZERO, Vec2::X, Vec2::new(2.0, 0.0), 0.5).unwrap();
        assert!((hit - 1.5).abs() < 1e-6);
        let grazing = ray_disc(Vec2::ZERO, Vec2::X, Vec2::new(2.0, 0.5), 0.5).unwrap();
        assert!((grazing - 2.0).abs() < 1e-3);
        assert_eq!(ray_disc(Vec2::ZERO, Vec2::X, Vec2::new(2.0, 0.6), 0.5), None);
        assert_eq!(ray_disc(Vec2::ZERO, Vec2::X, Vec2::new(-2.0, 0.0), 0.5), None);
        assert_eq!(ray_disc(Vec2::ZERO, Vec2::X, Vec2::new(0.1, 0.0), 0.5), Some(0.0));
    }
}
