//! The gripper: closing it picks up the pen the grip sensor reports within reach (the nearest
//! free one in front of the robot); opening it puts the pen down in front of the robot, or into
//! a box when released over one. A held pen leaves the physics world and rides in front of the
//! robot.

use bevy::prelude::*;
use bevy_rapier2d::prelude::*;

use super::{GripCommand, GripSensor, PoseCache, Robot};
use crate::sim::{Env, PerEnv, RobotOrder};
use crate::world::{Boxed, Held, PenBox, SpatialIndex, groups};

/// The gripper and what it holds.
#[derive(Component, Debug, Clone, PartialEq)]
pub struct Gripper {
    /// Reach beyond the body's front edge, metres.
    pub reach: f32,
    pub holding: Option<Entity>,
    /// Pens it dropped into boxes so far.
    pub boxed: u32,
    /// Pens it picked up so far.
    pub picked: u32,
}

/// Where a held pen is carried: in front of the body, halfway into the reach.
pub fn carry_point(transform: &Transform, cache: &PoseCache, robot: &Robot, gripper: &Gripper) -> Vec2 {
    let (p, facing) = cache.facing(transform);
    p + facing * (robot.radius + gripper.reach / 2.0)
}

/// The front edge of the body, from which the reach is measured.
pub fn front_point(transform: &Transform, cache: &PoseCache, robot: &Robot) -> Vec2 {
    let (p, facing) = cache.facing(transform);
    p + facing * robot.radius
}

pub(super) fn carry_held_pens(
    robots: Query<(&Transform, &PoseCache, &Robot, &Gripper)>,
    mut pens: Query<&mut Transform, (With<Held>, Without<Robot>)>,
) {
    for (transform, cache, robot, gripper) in &robots {
        if let Some(pen) = gripper.holding
            && let Ok(mut t) = pens.get_mut(pen)
        {
            t.translation = carry_point(transform, cache, robot, gripper).extend(0.0);
        }
    }
}

pub(super) fn apply_gripper(
    mut commands: Commands,
    indices: Res<PerEnv<SpatialIndex>>,
    order: Res<RobotOrder>,
    mut robots: Query<(Entity, &Transform, &PoseCache, &Robot, &GripCommand, &GripSensor, &mut Gripper, &Env)>,
    mut boxes: Query<&mut PenBox>,
) {
    // The robots with something to do (grip a pen in reach, or let go), found in one pass over
    // the components: in a large swarm most have nothing, and looking every robot up in robot
    // order would cost a lookup each.
    let mut acting: Vec<Entity> = robots
        .iter()
        .filter(|(.., cmd, sensor, gripper, _)| match (cmd.close, gripper.holding) {
            (true, None) => sensor.pen_in_reach.is_some(),
            (false, Some(_)) => true,
            _ => false,
        })
        .map(|(entity, ..)| entity)
        .collect();
    if acting.is_empty() {
        return;
    }
    acting.sort_unstable();
    let mut taken: Vec<Entity> = Vec::new();
    // Robot order decides who gets a pen two robots reach for in the same step.
    for &entity in order.0.iter().filter(|e| acting.binary_search(e).is_ok()) {
        let Ok((_, transform, cache, robot, cmd, sensor, mut gripper, env)) = robots.get_mut(entity) else {
            continue;
        };
        match (cmd.close, gripper.holding) {
            (true, None) => {
                // The grip sensor found the nearest free pen within reach this step; a robot
                // earlier in robot order may have just taken it.
                if let Some(pen) = sensor.pen_in_reach.filter(|p| !taken.contains(p)) {
                    taken.push(pen);
                    gripper.holding = Some(pen);
                    gripper.picked += 1;
                    commands.entity(pen).insert((Held { by: entity }, RigidBodyDisabled, ColliderDisabled));
                }
            }
            (false, Some(pen)) => {
                gripper.holding = None;
                let at = carry_point(transform, cache, robot, &gripper);
                // The box it is over, as the network's percept saw it.
                let container =
                    indices[*env].block_at(at, CollisionGroups::new(Group::ALL, groups::BOX)).map(|b| b.entity);
                let mut pen_commands = commands.entity(pen);
                pen_commands.remove::<Held>().insert(Transform::from_translation(at.extend(0.0)));
                match container.and_then(|b| boxes.get_mut(b).ok().map(|pb| (b, pb))) {
                    Some((b, mut pen_box)) => {
                        pen_box.pens += 1;
                        gripper.boxed += 1;
                        pen_commands.insert(Boxed { container: b });
                    }
                    None => {
                        pen_commands.remove::<(RigidBodyDisabled, ColliderDisabled)>().insert(Velocity::zero());
                    }
                }
            }
            _ => {}
        }
    }
}
