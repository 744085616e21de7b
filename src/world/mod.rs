//! The static world and its passive objects: arena, walls, boxes, pens, dens, charging
//! stations and sonars, each an entity with a rapier collider where it is solid or sensed; and
//! the spatial index (`spatial.rs`) the robots' sensors ask where these and the robots are.

use bevy::prelude::*;
use bevy_rapier2d::plugin::context::systemparams::{RapierContext, RapierContextItem};
use bevy_rapier2d::prelude::*;

use crate::scene::SceneLoaded;
use crate::scene::schema::{BoxSpec, DenSpec, PenSpec, SceneFile, SonarSpec, StationSpec, WallSpec};
use crate::scene::{SceneEntity, geometry::all_walls};
use crate::sim::{Env, FixedSense, LoadSystems, PerEnv, SenseSystems, SimSystems};

pub mod kinematic;
mod sonar;
pub mod spatial;

pub use sonar::{Sonar, SonarEcho, to_arena_edge};
pub use spatial::{DiscRadius, SpatialIndex};

/// Collision groups, so spatial queries can ask for one kind of object.
pub mod groups {
    use bevy_rapier2d::prelude::Group;
    pub const WALL: Group = Group::GROUP_1;
    pub const BOX: Group = Group::GROUP_2;
    pub const PEN: Group = Group::GROUP_3;
    pub const ROBOT: Group = Group::GROUP_4;
    pub const STATION: Group = Group::GROUP_5;
}

/// Mass density of a pen, kg/m².
pub const PEN_DENSITY: f32 = 50.0;
/// A pen's linear and angular damping, 1/s: the floor's friction on a pushed pen.
pub const PEN_DAMPING: f32 = 6.0;

/// The floor's size; the arena spans `0..width × 0..height`.
#[derive(Resource, Debug, Clone, Copy, PartialEq)]
pub struct Arena {
    pub width: f32,
    pub height: f32,
}

/// A wall segment (a fixed rectangle).
#[derive(Component, Debug, Clone, Copy)]
pub struct Wall {
    pub size: Vec2,
}

/// A box (the seed's "Box" subject): solid for robots; a pen released over it drops inside.
#[derive(Component, Debug, Clone, Copy)]
pub struct PenBox {
    pub size: Vec2,
    /// Pens dropped into this box so far.
    pub pens: u32,
}

/// A pen: a small dynamic body that can be pushed, gripped, carried and boxed.
#[derive(Component, Debug, Clone, Copy)]
pub struct Pen {
    pub radius: f32,
}

/// A pen held by a robot's gripper: out of the physics world, carried in front of the robot.
#[derive(Component, Debug, Clone, Copy)]
pub struct Held {
    pub by: Entity,
}

/// A pen dropped into a box: out of the physics world for good.
#[derive(Component, Debug, Clone, Copy)]
pub struct Boxed {
    pub container: Entity,
}

/// A robot's den: a refuge on the floor by a wall.
#[derive(Component, Debug, Clone, Copy)]
pub struct Den {
    pub radius: f32,
}

/// A charging pad; robots overlapping it charge at `rate` units per second.
#[derive(Component, Debug, Clone, Copy)]
pub struct Station {
    pub radius: f32,
    pub rate: f32,
}

/// A body waiting to enter the physics world. Scene loading puts bodies into rapier one at a
/// time in spawn order (see `scene::load_now`): rapier's results depend on the order bodies are
/// added, and left to rapier's own systems that order would follow Bevy's archetype hashing.
#[derive(Component, Debug, Clone)]
pub struct PendingPhysics {
    pub body: Option<RigidBody>,
    pub collider: Collider,
}

impl PendingPhysics {
    pub fn new(body: Option<RigidBody>, collider: Collider) -> Self {
        Self { body, collider }
    }
}

/// What a robot's camera can recognise.
#[derive(Component, Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Seeable {
    Pen,
    Box,
    Station,
    Robot,
}

pub(super) fn plugin(app: &mut App) {
    app.add_message::<SonarEcho>()
        .insert_resource(Arena { width: 1.0, height: 1.0 })
        .insert_resource(PerEnv::<SpatialIndex>::one())
        .add_systems(
            FixedSense,
            (
                spatial::index_before_sensing.in_set(SenseSystems::Index),
                sonar::sense_sonars.in_set(SenseSystems::Sensors),
            ),
        )
        .add_systems(FixedUpdate, spatial::index_after_physics.in_set(SimSystems::Physics).after(PhysicsSet::Writeback))
        .add_systems(PreUpdate, spatial::forget_on_load.run_if(on_message::<SceneLoaded>).in_set(LoadSystems::React));
    crate::sim::add_optional_systems(app, FixedSense, sonar::sense_sonars, crate::sim::any_with::<Sonar>);
}

/// A physics context as bevy_rapier's queries take it, from a query of [`RapierContext`] (a
/// world of several environments has a context each: they are looked up, not taken as the
/// single one).
pub fn context_of<'w, 's, 'a>(item: RapierContextItem<'w, 's, 'a>) -> RapierContext<'w> {
    RapierContext {
        simulation: item.simulation,
        colliders: item.colliders,
        joints: item.joints,
        rigidbody_set: item.rigidbody_set,
    }
}

fn v(p: (f32, f32)) -> Vec2 {
    Vec2::new(p.0, p.1)
}

/// A transform at a 2D position and rotation.
pub fn transform2d(pos: Vec2, angle: f32) -> Transform {
    Transform::from_translation(pos.extend(0.0)).with_rotation(Quat::from_rotation_z(angle))
}

/// Spawns everything but the robots, in scene order (walls, boxes, pens, dens, stations,
/// sonars), handing each entity with a body to `body` as soon as it is spawned (the loader puts
/// it into the physics world there). Returns the den entities by name for the robots to refer
/// to.
pub fn spawn_world(
    world: &mut World,
    scene: &SceneFile,
    env: Env,
    mut body: impl FnMut(&mut World, Entity),
) -> Vec<(String, Entity)> {
    world.insert_resource(Arena { width: scene.arena.width, height: scene.arena.height });
    for wall in all_walls(scene) {
        let e = spawn_wall(world, &wall, env);
        body(world, e);
    }
    for b in &scene.boxes {
        let e = spawn_box(world, b, env);
        body(world, e);
    }
    for p in &scene.pens {
        let e = spawn_pen(world, p, env);
        body(world, e);
    }
    let dens = scene.dens.iter().map(|d| (d.name.clone(), spawn_den(world, d, env))).collect();
    for s in &scene.stations {
        let e = spawn_station(world, s, env);
        body(world, e);
    }
    for s in &scene.sonars {
        spawn_sonar(world, s, env);
    }
    dens
}

fn solid(members: Group) -> CollisionGroups {
    CollisionGroups::new(members, Group::ALL)
}

fn spawn_wall(world: &mut World, w: &WallSpec, env: Env) -> Entity {
    let (from, to) = (v(w.from), v(w.to));
    let d = to - from;
    let size = Vec2::new(d.length() + w.thickness, w.thickness);
    world
        .spawn((
            Name::new(w.name.clone()),
            (SceneEntity, env),
            Wall { size },
            transform2d((from + to) / 2.0, d.y.atan2(d.x)),
            PendingPhysics::new(Some(RigidBody::Fixed), Collider::cuboid(size.x / 2.0, size.y / 2.0)),
            solid(groups::WALL),
            Friction::coefficient(0.0),
        ))
        .id()
}

fn spawn_box(world: &mut World, b: &BoxSpec, env: Env) -> Entity {
    let size = v(b.size);
    world
        .spawn((
            Name::new(b.name.clone()),
            (SceneEntity, env),
            PenBox { size, pens: 0 },
            Seeable::Box,
            transform2d(v(b.center), b.angle.to_radians()),
            PendingPhysics::new(Some(RigidBody::Fixed), Collider::cuboid(size.x / 2.0, size.y / 2.0)),
            solid(groups::BOX),
            Friction::coefficient(0.0),
        ))
        .id()
}

fn spawn_pen(world: &mut World, p: &PenSpec, env: Env) -> Entity {
    world
        .spawn((
            Name::new(p.name.clone()),
            (SceneEntity, env),
            Pen { radius: p.radius },
            DiscRadius(p.radius),
            Seeable::Pen,
            transform2d(v(p.pos), 0.0),
            PendingPhysics::new(Some(RigidBody::Dynamic), Collider::ball(p.radius)),
            ColliderMassProperties::Density(PEN_DENSITY),
            // Floor friction: a pushed pen slides a little and stops.
            Damping { linear_damping: PEN_DAMPING, angular_damping: PEN_DAMPING },
            Velocity::zero(),
            solid(groups::PEN),
        ))
        .id()
}

fn spawn_den(world: &mut World, d: &DenSpec, env: Env) -> Entity {
    world
        .spawn((Name::new(d.name.clone()), (SceneEntity, env), Den { radius: d.radius }, transform2d(v(d.pos), 0.0)))
        .id()
}

fn spawn_station(world: &mut World, s: &StationSpec, env: Env) -> Entity {
    world
        .spawn((
            Name::new(s.name.clone()),
            (SceneEntity, env),
            Station { radius: s.radius, rate: s.rate },
            DiscRadius(s.radius),
            Seeable::Station,
            transform2d(v(s.pos), 0.0),
            PendingPhysics::new(None, Collider::ball(s.radius)),
            Sensor,
            CollisionGroups::new(groups::STATION, groups::ROBOT),
        ))
        .id()
}

fn spawn_sonar(world: &mut World, s: &SonarSpec, env: Env) -> Entity {
    let axis = Vec2::from_angle(s.axis.to_radians());
    world
        .spawn((
            Name::new(s.name.clone()),
            (SceneEntity, env),
            Sonar::new(axis, s.width, s.range, s.through_walls),
            transform2d(v(s.pos), s.axis.to_radians()),
        ))
        .id()
}
