//! The physics world: rapier stepped in the fixed loop with exactly the scene's `dt`, and the
//! freshly spawned scene put into it one body at a time, in spawn order.

use bevy::ecs::schedule::ScheduleCleanupPolicy;
use bevy::ecs::system::SystemId;
use bevy::prelude::*;
use bevy_rapier2d::prelude::*;

use crate::world::PendingPhysics;

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
}

/// A fresh physics context for a scene with step `dt` and `substeps`: rapier's internal arenas
/// then match a first load exactly.
pub(super) fn new_context(world: &mut World, dt: f64, substeps: u32) {
    let contexts: Vec<Entity> = world.query_filtered::<Entity, With<RapierContextSimulation>>().iter(world).collect();
    for e in contexts {
        world.despawn(e);
    }
    world.spawn((
        Name::new("Rapier Context"),
        RapierContextSimulation::default(),
        RapierConfiguration { gravity: Vec2::ZERO, ..RapierConfiguration::new(1.0) },
        DefaultRapierContext,
    ));
    world.insert_resource(TimestepMode::Fixed { dt: dt as f32, substeps: substeps as usize });
    world.resource_mut::<Time<Fixed>>().set_timestep_seconds(dt);
}

/// The registered physics initialisation systems, run once per body on scene load.
#[derive(Resource, Clone, Copy)]
struct PhysicsInit {
    bodies: SystemId,
    colliders: SystemId,
}

/// Puts the freshly spawned scene into the physics world one body at a time, in spawn order.
/// Left to the first step, rapier would take the bodies in the order Bevy's queries meet their
/// archetypes, which follows the hashing of archetype ids and so depends on everything else in
/// the world (the app has a window, a camera, a panel...); rapier's results depend on that order,
/// and the app and a headless run would differ.
pub(super) fn init_bodies(world: &mut World, bodies: &[Entity]) {
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
    for &e in bodies {
        let Some(pending) = world.entity_mut(e).take::<PendingPhysics>() else { continue };
        let transform = world.get::<Transform>(e).copied().unwrap_or_default();
        let mut entity = world.entity_mut(e);
        entity.insert((pending.collider, GlobalTransform::from(transform)));
        if let Some(body) = pending.body {
            entity.insert(body);
        }
        for system in [init.bodies, init.colliders] {
            if let Err(err) = world.run_system(system) {
                error!("physics initialisation of {e}: {err}");
            }
        }
        world.flush();
    }
}
