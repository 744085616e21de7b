//! Sonars: a fixed beam along an axis that reports every robot whose centre enters it, with its
//! distance along the beam (as the VirtualRobot's sonars do). The beam runs from the sonar to its
//! range or the first wall or box; a sonar that sees through walls runs to its range or the
//! arena's edge.

use bevy::prelude::*;
use bevy_rapier2d::plugin::context::systemparams::RapierContext;
use bevy_rapier2d::prelude::*;

use super::spatial::Block;
use super::{Arena, Seeable, SpatialIndex, groups};
use crate::sim::{Env, EnvStart, PerEnv, SimTime};

/// A sonar and its current reading.
#[derive(Component, Debug, Clone)]
pub struct Sonar {
    /// Unit vector the beam points along.
    pub axis: Vec2,
    pub width: f32,
    /// Maximum range, metres; `None` reaches the first obstacle.
    pub range: Option<f32>,
    /// The beam passes walls and boxes.
    pub through_walls: bool,
    /// Length of the beam this step (range cut by the first wall or box).
    pub beam_length: f32,
    /// Robots in the beam, in detection order, with their distance along the beam.
    pub inside: Vec<(Entity, f32)>,
    /// Robots that entered the beam so far.
    pub detections: u32,
}

impl Sonar {
    pub fn new(axis: Vec2, width: f32, range: Option<f32>, through_walls: bool) -> Self {
        Self { axis, width, range, through_walls, beam_length: 0.0, inside: vec![], detections: 0 }
    }
}

/// How far a ray from `origin` along the unit vector `axis` runs before it leaves the arena
/// `0..width × 0..height` (0 when it starts outside and never enters).
pub fn to_arena_edge(origin: Vec2, axis: Vec2, arena: &Arena) -> f32 {
    let exit = |p: f32, d: f32, hi: f32| {
        if d > 1e-9 {
            (hi - p) / d
        } else if d < -1e-9 {
            -p / d
        } else {
            f32::INFINITY
        }
    };
    exit(origin.x, axis.x, arena.width).min(exit(origin.y, axis.y, arena.height)).max(0.0)
}

/// A robot entered a sonar's beam.
#[derive(Message, Debug, Clone, Copy, PartialEq)]
pub struct SonarEcho {
    pub sonar: Entity,
    pub robot: Entity,
    /// Distance from the sonar along the beam axis, metres.
    pub distance: f32,
    pub step: u64,
}

/// How far any beam may reach when unlimited: far beyond any sane arena.
const MAX_BEAM: f32 = 1.0e4;

pub(super) fn sense_sonars(
    contexts: Query<(RapierContext<'static>, &Env)>,
    time: Res<SimTime>,
    starts: Res<PerEnv<EnvStart>>,
    arena: Res<Arena>,
    indices: Res<PerEnv<SpatialIndex>>,
    mut sonars: Query<(Entity, &Transform, &mut Sonar, &Env)>,
    bodies: Query<&Transform>,
    mut echoes: MessageWriter<SonarEcho>,
) {
    for (entity, transform, mut sonar, env) in &mut sonars {
        // The physics context of the sonar's environment (a world holds few).
        let Some(ctx) = contexts.iter().find(|(_, e)| *e == env).map(|(ctx, _)| super::context_of(ctx)) else {
            continue;
        };
        let index = &indices[*env];
        let origin = transform.translation.truncate();
        let length = if sonar.through_walls {
            sonar.range.unwrap_or(f32::INFINITY).min(to_arena_edge(origin, sonar.axis, &arena))
        } else {
            let range = sonar.range.unwrap_or(MAX_BEAM);
            // A sonar usually sits in a wall: ignore whatever contains its own position.
            let mut containing = Vec::new();
            ctx.intersect_point(origin, QueryFilter::only_fixed().exclude_sensors(), |e| {
                containing.push(e);
                true
            });
            let not_containing = |e: Entity| !containing.contains(&e);
            let blockers = CollisionGroups::new(Group::ALL, groups::WALL | groups::BOX);
            let filter = QueryFilter::only_fixed().exclude_sensors().groups(blockers).predicate(&not_containing);
            ctx.cast_ray(origin, sonar.axis, range, true, filter).map_or(range, |(_, toi)| toi)
        };
        sonar.beam_length = length;
        if length <= 0.0 {
            sonar.inside.clear();
            continue;
        }
        // Robots whose centre may be in the beam: the discs around its bounding box.
        let beam = Block {
            entity,
            center: origin + sonar.axis * length / 2.0,
            half: Vec2::new(length / 2.0, sonar.width / 2.0),
            axis: sonar.axis,
            kind: None,
            groups: CollisionGroups::default(),
        };
        let (lo, hi) = beam.bounds();
        let mut now: Vec<Entity> = Vec::new();
        index.discs_in(lo, hi, |d| {
            if d.kind == Some(Seeable::Robot) {
                now.push(d.entity);
            }
        });
        now.sort();
        let previous = std::mem::take(&mut sonar.inside);
        for robot in now {
            let Ok(pose) = bodies.get(robot) else {
                continue;
            };
            // The robot's centre must be in the beam, not just its edge.
            let rel = pose.translation.truncate() - origin;
            let distance = rel.dot(sonar.axis);
            if rel.perp_dot(sonar.axis).abs() > sonar.width / 2.0 || !(0.0..=length).contains(&distance) {
                continue;
            }
            if !previous.iter().any(|(e, _)| *e == robot) {
                sonar.detections += 1;
                echoes.write(SonarEcho { sonar: entity, robot, distance, step: starts.step_of(*env, time.step) });
            }
            sonar.inside.push((robot, distance));
        }
    }
}
