//! The robot's sensors, read in the sense stage from the world as the last physics step left it.
//!
//! - bump: the bodies the robot touches, and a [`BumpEvent`] for each new contact;
//! - camera: pens, boxes, stations and robots inside the field-of-view cone and range, not hidden
//!   behind a wall or box, with distance and bearing (rapier's spatial queries, never a scan of
//!   all robots);
//! - grip: what the gripper holds and the nearest free pen within reach;
//! - power: the battery level and whether it is charging.

use bevy::math::bounding::Aabb2d;
use bevy::prelude::*;
use bevy_rapier2d::parry::shape::Ball;
use bevy_rapier2d::prelude::*;

use super::gripper::front_point;
use super::{Battery, Gripper, Odometry, Robot, pose, wrap_angle};
use crate::sim::SimTime;
use crate::world::{Boxed, Held, Pen, Seeable, groups};

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
    rapier: ReadRapierContext,
    time: Res<SimTime>,
    mut robots: Query<(Entity, &Robot, &Transform, &CollisionGroups, &mut BumpSensor, &mut Odometry)>,
    positions: Query<&Transform>,
    mut events: MessageWriter<BumpEvent>,
) {
    let Ok(ctx) = rapier.single() else { return };
    let mut found: Vec<Entity> = Vec::new();
    for (entity, robot, transform, groups, mut bump, mut odo) in &mut robots {
        let (pos, heading) = pose(transform);
        // What the body really touches: rapier reports contacts from a prediction distance on
        // and keeps their distances stale once motion is tiny, so the test is geometric.
        found.clear();
        let probe = Ball::new(robot.radius + TOUCH);
        // Only what the body can collide with.
        let filter = QueryFilter::default().exclude_sensors().exclude_collider(entity).groups(*groups);
        ctx.intersect_shape(pos, 0.0, &probe, filter, |e| {
            found.push(e);
            true
        });
        found.sort();
        found.dedup();
        let bearing_of = |other: Entity| {
            // The contact normal points from the first collider to the second.
            let normal = ctx.contact_pair(entity, other).and_then(|pair| {
                let m = pair.manifolds().find(|m| m.num_points() > 0)?;
                let n = m.normal();
                Some(if pair.collider1() == Some(entity) { n } else { -n })
            });
            // Without a contact point yet, the nearest point of the other body (a long wall's
            // centre can lie far to the side of where the robot meets it).
            let only = |e: Entity| e == other;
            let nearest = || {
                ctx.project_point(pos, robot.radius + 1.0, true, QueryFilter::default().predicate(&only))
                    .map(|(_, p)| p.point - pos)
                    .filter(|d| d.length_squared() > 1e-12)
            };
            let towards = normal
                .filter(|n| n.length_squared() > 0.5)
                .or_else(nearest)
                .or_else(|| positions.get(other).ok().map(|t| t.translation.truncate() - pos))
                .unwrap_or(Vec2::X);
            wrap_angle(towards.y.atan2(towards.x) - heading)
        };
        let mut bumped = false;
        for &other in found.iter().filter(|o| !bump.touching.contains(o)) {
            bumped = true;
            odo.collisions += 1;
            events.write(BumpEvent { robot: entity, other, step: time.step });
        }
        // Most robots touch nothing most of the time: leave their sensor (and its change tick)
        // alone then. Bearings move while touching, so they are refreshed whenever something is.
        if !found.is_empty() || !bump.touching.is_empty() || bump.bumped != bumped {
            bump.bearings = found.iter().map(|e| bearing_of(*e)).collect();
            bump.touching.clone_from(&found);
            bump.bumped = bumped;
        }
    }
}

pub(super) fn sense_camera(
    rapier: ReadRapierContext,
    time: Res<SimTime>,
    mut robots: Query<(Entity, &Robot, &Transform, &RobotCamera, &mut CameraView)>,
    targets: Query<(&Transform, &Seeable)>,
) {
    let Ok(ctx) = rapier.single() else { return };
    let seeable = CollisionGroups::new(Group::ALL, groups::PEN | groups::BOX | groups::STATION | groups::ROBOT);
    let occluders = CollisionGroups::new(Group::ALL, groups::WALL | groups::BOX);
    let mut candidates: Vec<Entity> = Vec::new();
    for (entity, robot, transform, camera, mut view) in &mut robots {
        // Stagger refreshes so a period of k spreads the work over k steps.
        if !(time.step + u64::from(robot.index)).is_multiple_of(u64::from(camera.period.max(1))) {
            continue;
        }
        let (pos, heading) = pose(transform);
        candidates.clear();
        let aabb = Aabb2d::new(pos, Vec2::splat(camera.range));
        ctx.intersect_aabb_conservative(aabb, QueryFilter::default().groups(seeable), |e| {
            if e != entity {
                candidates.push(e);
            }
            true
        });
        let mut seen = Vec::new();
        for &target in &candidates {
            let Ok((t, kind)) = targets.get(target) else {
                continue;
            };
            let rel = t.translation.truncate() - pos;
            let distance = rel.length();
            if distance > camera.range || distance <= f32::EPSILON {
                continue;
            }
            let bearing = wrap_angle(rel.y.atan2(rel.x) - heading);
            if bearing.abs() > camera.fov / 2.0 {
                continue;
            }
            // Walls and boxes hide what is behind them (a box does not hide itself).
            let filter = QueryFilter::only_fixed().exclude_sensors().groups(occluders);
            let hidden = ctx
                .cast_ray(pos, rel / distance, distance, true, filter)
                .is_some_and(|(hit, toi)| hit != target && toi < distance - 1e-3);
            if !hidden {
                seen.push(Sighting { entity: target, kind: *kind, distance, bearing });
            }
        }
        seen.sort_by(|a, b| a.distance.total_cmp(&b.distance).then(a.entity.cmp(&b.entity)));
        view.seen = seen;
        view.step = time.step;
    }
}

pub(super) fn sense_grip(
    rapier: ReadRapierContext,
    mut robots: Query<(&Robot, &Transform, &Gripper, &mut GripSensor)>,
    free_pens: Query<(&Transform, &Pen), (Without<Held>, Without<Boxed>, Without<Robot>)>,
) {
    let Ok(ctx) = rapier.single() else { return };
    let filter = QueryFilter::default().groups(CollisionGroups::new(Group::ALL, groups::PEN));
    for (robot, transform, gripper, mut sensor) in &mut robots {
        let front = front_point(transform, robot);
        let mut best: Option<(f32, Entity)> = None;
        ctx.intersect_aabb_conservative(Aabb2d::new(front, Vec2::splat(gripper.reach)), filter, |pen| {
            if let Ok((pt, p)) = free_pens.get(pen) {
                let d = pt.translation.truncate().distance(front) - p.radius;
                if d <= gripper.reach && best.is_none_or(|b| (d, pen) < b) {
                    best = Some((d, pen));
                }
            }
            true
        });
        let reading = GripSensor { holding: gripper.holding, pen_in_reach: best.map(|b| b.1) };
        if *sensor != reading {
            *sensor = reading;
        }
    }
}

pub(super) fn sense_power(mut robots: Query<(&Battery, &mut PowerSensor)>) {
    for (battery, mut sensor) in &mut robots {
        let reading = PowerSensor { level: battery.level(), charging: battery.charging };
        if *sensor != reading {
            *sensor = reading;
        }
    }
}
