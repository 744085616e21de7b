//! The physics world: rapier stepped in the fixed loop with exactly the scene's `dt`, the
//! freshly spawned scene put into it one body at a time, in spawn order, and the bodies synced
//! between Bevy and rapier each step.

use bevy::ecs::schedule::ScheduleCleanupPolicy;
use bevy::ecs::system::SystemId;
use bevy::prelude::*;
use bevy_rapier2d::plugin::RapierBevyComponentApply;
use bevy_rapier2d::plugin::context::RapierRigidBodySet;
use bevy_rapier2d::plugin::systems::{
    apply_initial_rigid_body_impulses, apply_rigid_body_user_changes, writeback_rigid_bodies,
};
use bevy_rapier2d::prelude::*;
use bevy_rapier2d::rapier::dynamics::RigidBodyHandle;
use bevy_rapier2d::rapier::math::Pose;

use crate::robot::{ReportedPose, Robot};
use crate::scene::ActiveScene;
use crate::scene::schema::PhysicsMode;
use crate::sim::{Env, Passes, PerEnv, RobotOrder, SimTime};
use crate::world::kinematic::{Give, Mover, Separator};
use crate::world::{Arena, DiscRadius, PendingPhysics, SpatialIndex};

pub(super) fn plugin(app: &mut App) {
    app.insert_resource(TimestepMode::Fixed { dt: 0.02, substeps: 1 }).add_plugins(
        RapierPhysicsPlugin::<NoUserData>::default()
            // The scene loader creates a fresh physics context for every scene it loads.
            .with_custom_initialization(RapierContextInitialization::NoAutomaticRapierContext)
            .in_fixed_schedule(),
    );
    // bevy_rapier also runs its removal sync once per frame in PostUpdate, after all the frame's
    // steps, and that copy re-enables every collider and body whose `ColliderDisabled` or
    // `RigidBodyDisabled` was removed during the frame, even when it is back: a pen released
    // and gripped again within one frame would be held with its collider on. How many steps a
    // frame runs would then change the trajectory. The copy inside each step sees every removal
    // made by the step (scene loads build a fresh physics context), so the per-frame one goes.
    let removed = app.remove_systems_in_set(
        PostUpdate,
        bevy_rapier2d::plugin::systems::sync_removals,
        ScheduleCleanupPolicy::RemoveSystemsOnly,
    );
    debug_assert_eq!(removed.ok(), Some(1), "bevy_rapier's per-frame removal sync");
    // bevy_rapier's own sync of bodies keeps the pose it last wrote for every body in a map
    // hashed with SipHash, updated for every body every step: at 10,000 robots that map cost
    // more than the camera sensor. These two do the same for the body components crsim uses,
    // with the pose kept on the entity.
    for (system, name) in [
        (
            app.remove_systems_in_set(
                FixedUpdate,
                apply_rigid_body_user_changes,
                ScheduleCleanupPolicy::RemoveSystemsOnly,
            ),
            "user changes",
        ),
        (
            app.remove_systems_in_set(FixedUpdate, writeback_rigid_bodies, ScheduleCleanupPolicy::RemoveSystemsOnly),
            "writeback",
        ),
        // Rapier's step starts before the radio and, in a large world, runs on a thread of its
        // own (`super::physics_step`).
        (
            app.remove_systems_in_set(
                FixedUpdate,
                bevy_rapier2d::plugin::systems::step_simulation::<NoUserData>,
                ScheduleCleanupPolicy::RemoveSystemsOnly,
            ),
            "step",
        ),
        // bevy_rapier re-derives every collider's scale from its `GlobalTransform` whenever that
        // changes: a matrix decomposition per moving body per step. crsim's bodies keep scale 1
        // (the world is rebuilt when an item is resized), so the scale is applied when a collider
        // or its `ColliderScale` changes.
        (
            app.remove_systems_in_set(
                FixedUpdate,
                bevy_rapier2d::plugin::systems::apply_scale,
                ScheduleCleanupPolicy::RemoveSystemsOnly,
            ),
            "scale",
        ),
    ] {
        debug_assert_eq!(system.ok(), Some(1), "bevy_rapier's body {name}");
    }
    super::physics_step::plugin(app);
    add_optional_rapier_systems(app);
    // Bodies spawned other than through `init_body` get one too: their first push then puts
    // their pose into rapier again.
    app.register_required_components_with::<RigidBody, WrittenPose>(|| WrittenPose(GlobalTransform::IDENTITY));
    app.add_systems(
        FixedUpdate,
        (
            apply_collider_scale
                .in_set(RapierBevyComponentApply)
                .after(bevy_rapier2d::plugin::RapierTransformPropagateSet)
                .after(bevy_rapier2d::plugin::systems::init_colliders)
                .before(bevy_rapier2d::plugin::systems::apply_collider_user_changes),
            // Where bevy_rapier's own body sync ran: after the poses are propagated (it reads
            // `GlobalTransform`), the new bodies and colliders are in and the colliders' changes
            // applied. Each named, not only through the impulses system: a world that drops
            // that one (`crate::sim::drop_unused_systems`) keeps the order.
            push_body_changes
                .in_set(RapierBevyComponentApply)
                .after(bevy_rapier2d::plugin::RapierTransformPropagateSet)
                .after(bevy_rapier2d::plugin::systems::init_colliders)
                .after(bevy_rapier2d::plugin::systems::apply_collider_user_changes)
                .after(apply_initial_rigid_body_impulses),
            write_bodies_back.in_set(PhysicsSet::Writeback),
            // Rapier then steps only the fixed bodies, which do not move.
            step_kinematic.in_set(PhysicsSet::StepSimulation).run_if(crate::scene::kinematic),
        ),
    );
}

/// bevy_rapier's systems for what crsim's scenes do not hold — joints, character controllers,
/// initial impulses, read-back mass properties, sets of colliding entities, bodies under a
/// parent — registered as optional: the app keeps them, an environment's world drops them
/// ([`crate::sim::drop_unused_systems`]), a few system runs less a step.
fn add_optional_rapier_systems(app: &mut App) {
    use crate::sim::{add_optional_systems, any_with};
    use bevy_rapier2d::plugin::systems as rapier;
    fn joints(world: &mut World) -> bool {
        any_with::<ImpulseJoint>(world) || any_with::<MultibodyJoint>(world)
    }
    add_optional_systems(app, FixedUpdate, rapier::update_character_controls, any_with::<KinematicCharacterController>);
    add_optional_systems(app, FixedUpdate, rapier::init_joints, joints);
    add_optional_systems(app, FixedUpdate, rapier::apply_joint_user_changes, joints);
    add_optional_systems(app, FixedUpdate, apply_initial_rigid_body_impulses, any_with::<ExternalImpulse>);
    add_optional_systems(app, FixedUpdate, rapier::writeback_mass_properties, any_with::<ReadMassProperties>);
    add_optional_systems(app, FixedUpdate, rapier::update_colliding_entities, any_with::<CollidingEntities>);
    add_optional_systems(app, FixedUpdate, rapier::on_add_entity_with_parent, any_with::<ChildOf>);
}

type KinematicBodies<'w, 's> = Query<
    'w,
    's,
    (
        &'static mut Transform,
        &'static DiscRadius,
        &'static CollisionGroups,
        Option<&'static Velocity>,
        Has<Robot>,
        Has<ReportedPose>,
    ),
    (Without<ColliderDisabled>, Without<Sensor>),
>;

/// One step of the kinematic model (`crate::world::kinematic`) for the free discs: the robots
/// and the pens that are neither held nor in a box. A robot turns and moves by its velocity
/// over `dt`, then the discs are separated; with the scene's `substeps`, moving and separating
/// go in that many parts of `dt` (a fast robot then cannot jump through a thin wall).
#[allow(clippy::too_many_arguments)]
fn step_kinematic(
    time: Res<SimTime>,
    active: Res<ActiveScene>,
    arena: Res<Arena>,
    indices: Res<PerEnv<SpatialIndex>>,
    passes: Res<Passes>,
    order: Res<RobotOrder>,
    mut bodies: KinematicBodies,
    mut separator: Local<Separator>,
    mut movers: Local<Vec<Mover>>,
) {
    let dt = time.dt;
    let substeps = active.scene.substeps.max(1);
    let part = dt / substeps as f32;
    movers.clear();
    let (mut at, mut velocities) = (Vec::with_capacity(movers.capacity()), Vec::with_capacity(movers.capacity()));
    for (transform, radius, groups, velocity, robot, outside) in &bodies {
        let give = match (robot, outside) {
            (_, true) => Give::Fixed,
            (true, false) => Give::Robot,
            (false, false) => Give::Pen,
        };
        movers.push(Mover { radius: radius.0, give, groups: *groups });
        at.push(transform.translation.truncate());
        velocities.push(if give == Give::Fixed { Vec2::ZERO } else { velocity.map_or(Vec2::ZERO, |v| v.linear) });
    }
    let arena = Vec2::new(arena.width, arena.height);
    for _ in 0..substeps {
        let moved = at.iter().zip(&velocities).map(|(p, v)| *p + *v * part).collect();
        at.clear();
        at.extend_from_slice(separator.separate(&movers, moved, arena, indices.only(), &passes));
    }
    for ((mut transform, _, _, _, _, outside), p) in bodies.iter_mut().zip(&at) {
        let translation = p.extend(transform.translation.z);
        if !outside && transform.translation != translation {
            transform.translation = translation;
        }
    }
    // Turning, robot by robot in parallel: it does not depend on the separation.
    passes.each_mut(order.0.len(), &mut bodies, |(mut transform, _, _, velocity, _, outside)| {
        if let Some(v) = velocity.filter(|v| v.angular != 0.0 && !outside) {
            // Normalised, so rounding never builds up over a long run.
            transform.rotation = (Quat::from_rotation_z(v.angular * dt) * transform.rotation).normalize();
        }
    });
}

/// The pose the last writeback (or the body's creation) gave a body, as its `GlobalTransform`
/// is after propagation: a `GlobalTransform` that differs was set by someone else (a gripper
/// carrying a pen, a reload) and goes to rapier.
#[derive(Component, Debug, Clone, Copy, PartialEq)]
pub struct WrittenPose(GlobalTransform);

type Body<'a, T> = (&'a RapierRigidBodyHandle, &'a RapierContextEntityLink, T);

/// A changed body's handle and environment.
type ChangedBody<'a, T> = (&'a RapierRigidBodyHandle, &'a Env, T);

/// The body changes of one environment's context, in the order the queries met them.
#[derive(Default)]
struct BodyChanges {
    sleeping: Vec<(RigidBodyHandle, Sleeping)>,
    types: Vec<(RigidBodyHandle, RigidBody)>,
    poses: Vec<(RigidBodyHandle, Pose)>,
    velocities: Vec<(RigidBodyHandle, Velocity)>,
    damping: Vec<(RigidBodyHandle, Damping)>,
    disabled: Vec<RigidBodyHandle>,
}

impl BodyChanges {
    fn is_empty(&self) -> bool {
        self.sleeping.is_empty()
            && self.types.is_empty()
            && self.poses.is_empty()
            && self.velocities.is_empty()
            && self.damping.is_empty()
            && self.disabled.is_empty()
    }
}

/// Bevy → rapier before each step, as bevy_rapier's `apply_rigid_body_user_changes` does and in
/// its order, for the body components crsim uses: sleeping, body type, pose, velocity, damping,
/// disabling. (Forces, impulses, mass, locked axes, gravity scale, CCD and dominance are not
/// used by crsim and not synced.) Each change query is read once and its changes sorted by
/// environment (in a world of many, reading every query once per context would cost the
/// square of their number); each context then takes its own in the order the queries met them.
#[allow(clippy::type_complexity)]
fn push_body_changes(
    mut sets: Query<(&mut RapierRigidBodySet, &Env)>,
    sleeping: Query<ChangedBody<&Sleeping>, Changed<Sleeping>>,
    types: Query<ChangedBody<&RigidBody>, Changed<RigidBody>>,
    mut poses: Query<ChangedBody<(&GlobalTransform, &mut WrittenPose)>, Changed<GlobalTransform>>,
    velocities: Query<ChangedBody<&Velocity>, Changed<Velocity>>,
    damping: Query<ChangedBody<&Damping>, Changed<Damping>>,
    disabled: Query<ChangedBody<&RigidBodyDisabled>, Changed<RigidBodyDisabled>>,
    mut by_env: Local<Vec<BodyChanges>>,
) {
    let envs = sets.iter().map(|(_, env)| env.index() + 1).max().unwrap_or(0);
    if by_env.len() < envs {
        by_env.resize_with(envs, BodyChanges::default);
    }
    let by_env = &mut *by_env;
    for (handle, env, s) in &sleeping {
        if let Some(b) = by_env.get_mut(env.index()) {
            b.sleeping.push((handle.0, *s));
        }
    }
    for (handle, env, kind) in &types {
        if let Some(b) = by_env.get_mut(env.index()) {
            b.types.push((handle.0, *kind));
        }
    }
    for (handle, env, (global, mut written)) in &mut poses {
        if written.0 == *global {
            continue;
        }
        let Some(b) = by_env.get_mut(env.index()) else { continue };
        let t = global.compute_transform();
        b.poses.push((handle.0, Pose::new(t.translation.truncate(), t.rotation.to_scaled_axis().z)));
        written.0 = *global;
    }
    for (handle, env, v) in &velocities {
        if let Some(b) = by_env.get_mut(env.index()) {
            b.velocities.push((handle.0, *v));
        }
    }
    for (handle, env, d) in &damping {
        if let Some(b) = by_env.get_mut(env.index()) {
            b.damping.push((handle.0, *d));
        }
    }
    for (handle, env, _) in &disabled {
        if let Some(b) = by_env.get_mut(env.index()) {
            b.disabled.push(handle.0);
        }
    }
    for (mut set, env) in &mut sets {
        let Some(changes) = by_env.get_mut(env.index()).filter(|c| !c.is_empty()) else { continue };
        apply_body_changes(&mut set, changes);
    }
}

/// One context's body changes into its rapier set, kind by kind; the lists are left empty.
fn apply_body_changes(set: &mut RapierRigidBodySet, changes: &mut BodyChanges) {
    let bodies = &mut set.bodies;
    for (handle, s) in changes.sleeping.drain(..) {
        let Some(rb) = bodies.get_mut(handle) else { continue };
        let activation = rb.activation_mut();
        activation.normalized_linear_threshold = s.normalized_linear_threshold;
        activation.angular_threshold = s.angular_threshold;
        if !s.sleeping && activation.sleeping {
            rb.wake_up(true);
        } else if s.sleeping && !activation.sleeping {
            rb.sleep();
        }
    }
    for (handle, kind) in changes.types.drain(..) {
        if let Some(rb) = bodies.get_mut(handle) {
            rb.set_body_type(kind.into(), true);
        }
    }
    for (handle, pose) in changes.poses.drain(..) {
        if let Some(rb) = bodies.get_mut(handle) {
            rb.set_position(pose, true);
        }
    }
    for (handle, v) in changes.velocities.drain(..) {
        if let Some(rb) = bodies.get_mut(handle) {
            rb.set_linvel(v.linear, true);
            rb.set_angvel(v.angular, true);
        }
    }
    for (handle, d) in changes.damping.drain(..) {
        if let Some(rb) = bodies.get_mut(handle) {
            rb.set_linear_damping(d.linear_damping);
            rb.set_angular_damping(d.angular_damping);
        }
    }
    for handle in changes.disabled.drain(..) {
        if let Some(rb) = bodies.get_mut(handle) {
            rb.set_enabled(false);
        }
    }
}

/// bevy_rapier's `apply_scale` for colliders whose shape or `ColliderScale` changed (a new
/// collider counts): the scale from the `GlobalTransform`, snapped as bevy_rapier snaps it.
#[allow(clippy::type_complexity)]
fn apply_collider_scale(
    config: Query<&RapierConfiguration>,
    mut colliders: Query<
        (&mut Collider, &RapierContextEntityLink, &GlobalTransform, Option<&ColliderScale>),
        Or<(Changed<Collider>, Changed<ColliderScale>)>,
    >,
) {
    for (mut shape, link, transform, custom) in &mut colliders {
        let Ok(config) = config.get(link.0) else { continue };
        let scale = match custom {
            Some(ColliderScale::Absolute(scale)) => *scale,
            Some(ColliderScale::Relative(scale)) => *scale * transform.compute_transform().scale.xy(),
            None => transform.compute_transform().scale.xy(),
        };
        if shape.scale() != bevy_rapier2d::geometry::get_snapped_scale(scale) {
            shape.set_scale(scale, config.scaled_shape_subdivision);
        }
    }
}

/// Rapier → Bevy after each step, as bevy_rapier's `writeback_rigid_bodies` does for bodies
/// without a parent and without interpolation (crsim's): the pose into `Transform` (keeping its
/// z and scale) and into [`WrittenPose`], the velocity and sleeping state where they changed.
#[allow(clippy::type_complexity)]
fn write_bodies_back(
    sets: Query<(Entity, &RapierRigidBodySet)>,
    passes: Res<Passes>,
    order: Res<RobotOrder>,
    mut bodies: Query<
        Body<(&mut Transform, &mut WrittenPose, Option<&mut Velocity>, Option<&mut Sleeping>)>,
        (With<RigidBody>, Without<RigidBodyDisabled>),
    >,
) {
    // A scene's one context is looked up once, not once per body.
    let single = sets.single().ok();
    // Each body writes only its own components: the same on any thread.
    passes.each_mut(order.0.len(), &mut bodies, |item| {
        let (handle, link, (mut transform, mut written, velocity, sleeping)) = item;
        let set = match single {
            Some((context, set)) if context == link.0 => Some(set),
            _ => sets.get(link.0).ok().map(|(_, set)| set),
        };
        let Some(rb) = set.and_then(|set| set.bodies.get(handle.0)) else { return };
        let pose = rb.position();
        let rotation = quat_of(pose.rotation.re, pose.rotation.im);
        let translation = pose.translation.extend(transform.translation.z);
        if transform.rotation != rotation || transform.translation != translation {
            transform.rotation = rotation;
            transform.translation = translation;
        }
        let now = GlobalTransform::from(Transform { translation, rotation, scale: transform.scale });
        if written.0 != now {
            written.0 = now;
        }
        if let Some(mut velocity) = velocity {
            let v = Velocity { linear: rb.linvel(), angular: rb.angvel() };
            if *velocity != v {
                *velocity = v;
            }
        }
        if let Some(mut sleeping) = sleeping
            && sleeping.sleeping != rb.is_sleeping()
        {
            sleeping.sleeping = rb.is_sleeping();
        }
    });
}

/// The rotation about z whose cosine and sine are `cos` and `sin` (a unit complex number, as
/// rapier keeps a body's rotation), with `w >= 0` as `Quat::from_rotation_z` gives for an angle
/// in [-π, π]: from the half-angle formulas, a square root and a division instead of an
/// `atan2` and a sine and cosine for every body every step.
fn quat_of(cos: f32, sin: f32) -> Quat {
    if cos >= 0.0 {
        // cos(θ/2) = √((1 + cos θ)/2) ≥ √½; sin(θ/2) = sin θ / (2 cos(θ/2)).
        let w = ((1.0 + cos) * 0.5).sqrt();
        Quat::from_xyzw(0.0, 0.0, sin / (2.0 * w), w)
    } else {
        // Near a half turn: |sin(θ/2)| = √((1 − cos θ)/2) ≥ √½, with the sign of sin θ.
        let z = ((1.0 - cos) * 0.5).sqrt().copysign(sin);
        Quat::from_xyzw(0.0, 0.0, z, sin / (2.0 * z))
    }
}

/// Despawns every physics context of the world (a scene is loaded anew).
pub(super) fn forget_contexts(world: &mut World) {
    let contexts: Vec<Entity> = world.query_filtered::<Entity, With<RapierContextSimulation>>().iter(world).collect();
    for e in contexts {
        world.despawn(e);
    }
}

/// The step every context of the world takes: the scene's `dt` in `substeps`.
pub(super) fn set_step(world: &mut World, dt: f64, substeps: u32) {
    world.insert_resource(TimestepMode::Fixed { dt: dt as f32, substeps: substeps as usize });
    world.resource_mut::<Time<Fixed>>().set_timestep_seconds(dt);
}

/// A fresh physics context for environment `env`, in place of the one it had: rapier's internal
/// arenas then match a first load exactly. The first environment's is the world's default one
/// (what the app's panels and tests look at).
pub(super) fn new_context(world: &mut World, env: Env) -> Entity {
    crate::sim::env::despawn_in::<With<RapierContextSimulation>>(world, env);
    let mut context = world.spawn((
        Name::new("Rapier Context"),
        RapierContextSimulation::default(),
        RapierConfiguration { gravity: Vec2::ZERO, ..RapierConfiguration::new(1.0) },
        env,
    ));
    if env == Env::FIRST {
        context.insert(DefaultRapierContext);
    }
    context.id()
}

/// The registered physics initialisation systems, run once per body on scene load.
#[derive(Resource, Clone, Copy)]
struct PhysicsInit {
    bodies: SystemId,
    colliders: SystemId,
}

/// Puts a freshly spawned body into the physics world; the loader calls it for each body as it
/// spawns it, so bodies enter rapier one at a time, in spawn order. Left to the first step,
/// rapier would take the bodies in the order Bevy's queries meet their archetypes, which follows
/// the hashing of archetype ids and so depends on everything else in the world (the app has a
/// window, a camera, a panel...); rapier's results depend on that order, and the app and a
/// headless run would differ.
///
/// In the kinematic model the robots and pens stay out of rapier (`step_kinematic` moves them):
/// only the fixed bodies and the charging pads go in, for the ray and point queries.
pub(super) fn init_body(world: &mut World, e: Entity, mode: PhysicsMode, context: Entity) {
    use bevy_rapier2d::plugin::systems::{init_colliders, init_rigid_bodies};
    let init = match world.get_resource::<PhysicsInit>() {
        Some(init) => *init,
        None => {
            let init = PhysicsInit {
                bodies: world.register_system(init_rigid_bodies),
                colliders: world.register_system(init_colliders),
            };
            world.insert_resource(init);
            init
        }
    };
    world.flush();
    let Some(pending) = world.entity_mut(e).take::<PendingPhysics>() else { return };
    if mode == PhysicsMode::Kinematic
        && matches!(pending.body, Some(RigidBody::Dynamic | RigidBody::KinematicPositionBased))
    {
        return;
    }
    let transform = world.get::<Transform>(e).copied().unwrap_or_default();
    let mut entity = world.entity_mut(e);
    entity.insert((pending.collider, GlobalTransform::from(transform), RapierContextEntityLink(context)));
    if let Some(body) = pending.body {
        entity.insert((body, WrittenPose(GlobalTransform::from(transform))));
    }
    for system in [init.bodies, init.colliders] {
        if let Err(err) = world.run_system(system) {
            error!("physics initialisation of {e}: {err}");
        }
    }
    world.flush();
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::f32::consts::{PI, TAU};

    #[test]
    fn a_rotations_quaternion_is_what_its_angle_gives_at_every_angle() {
        let mut worst = 0.0f32;
        for i in 0..=20_000 {
            let a = -PI + TAU * i as f32 / 20_000.0;
            let (sin, cos) = a.sin_cos();
            let q = quat_of(cos, sin);
            let exact = Quat::from_rotation_z(sin.atan2(cos));
            worst = worst.max((Vec4::from(q) - Vec4::from(exact)).abs().max_element());
            assert!(q.w >= 0.0 && q.x == 0.0 && q.y == 0.0, "{a}: {q}");
            assert!((q.length() - 1.0).abs() < 1.2e-7, "{a}: {q}");
        }
        assert!(worst < 1.2e-7, "{worst}");
        assert_eq!(quat_of(1.0, 0.0), Quat::IDENTITY);
        assert_eq!(quat_of(-1.0, 0.0), Quat::from_xyzw(0.0, 0.0, 1.0, 0.0));
    }
}
