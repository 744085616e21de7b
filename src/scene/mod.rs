//! Scenes: the RON schema, validation with precise errors, spawning, and (in the app) hot
//! reload. Loading a scene replaces the whole simulation state: every scene entity, the physics
//! context, the step counter, the hash and the random streams start afresh, so a reloaded
//! scene runs exactly like a freshly started one.

use std::path::PathBuf;

use bevy::prelude::*;
use bevy_rapier2d::prelude::*;

pub mod hot_reload;
pub mod load;
pub mod schema;
pub mod validate;

pub use load::{SceneLoadError, default_scene, load_scene_file, parse_scene};
pub use schema::SceneFile;

use crate::robot::{RobotOrder, spawn_robot};
use crate::sim::{SimClock, SimTime, TrajectoryHash, rng::SimSeed};
use bevy::ecs::system::SystemId;

use crate::world::{PendingPhysics, spawn_world};

/// Marks every entity that belongs to the loaded scene (despawned on reload).
#[derive(Component, Debug, Clone, Copy, Default)]
pub struct SceneEntity;

/// Where the loaded scene came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SceneSource {
    /// The scene embedded in the binary.
    BuiltIn,
    /// A file on disk (watched for changes in the app).
    File(PathBuf),
    /// Built by code, for example by `crsim bench`.
    Generated,
}

impl SceneSource {
    /// How the source is shown to users.
    pub fn label(&self) -> String {
        match self {
            SceneSource::BuiltIn => load::DEFAULT_SCENE_NAME.to_string(),
            SceneSource::File(p) => p.display().to_string(),
            SceneSource::Generated => "<generated>".to_string(),
        }
    }
}

/// The scene currently running.
#[derive(Resource, Debug, Clone)]
pub struct ActiveScene {
    pub scene: SceneFile,
    pub source: SceneSource,
    /// Increases with every load.
    pub generation: u64,
}

/// A scene waiting to replace the running one at the start of the next frame.
#[derive(Resource, Debug, Default)]
pub struct PendingScene(pub Option<(SceneFile, SceneSource)>);

impl PendingScene {
    pub fn request(&mut self, scene: SceneFile, source: SceneSource) {
        self.0 = Some((scene, source));
    }
}

/// What the panel shows about loading: the last error (the running scene is kept) or note.
#[derive(Resource, Debug, Default, Clone)]
pub struct SceneStatus {
    pub error: Option<String>,
    pub note: Option<String>,
}

/// A scene was (re)loaded and the world rebuilt.
#[derive(Message, Debug, Clone, Copy)]
pub struct SceneLoaded {
    pub generation: u64,
}

pub(super) fn plugin(app: &mut App) {
    app.init_resource::<PendingScene>()
        .init_resource::<SceneStatus>()
        .add_message::<SceneLoaded>()
        .add_systems(PreUpdate, apply_pending_scene.in_set(SceneSystems));
}

/// Scene loading, in `PreUpdate`; systems reacting to a load run after it.
#[derive(SystemSet, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SceneSystems;

fn apply_pending_scene(world: &mut World) {
    if let Some((scene, source)) = world.resource_mut::<PendingScene>().0.take() {
        load_now(world, scene, source);
    }
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
fn init_physics(world: &mut World, bodies: &[Entity]) {
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

/// Replaces the running simulation with `scene`. The scene must be valid (see
/// [`validate::validate`]).
pub fn load_now(world: &mut World, scene: SceneFile, source: SceneSource) {
    let old: Vec<Entity> = world.query_filtered::<Entity, With<SceneEntity>>().iter(world).collect();
    for e in old {
        world.despawn(e);
    }
    // A fresh physics context: rapier's internal arenas then match a first load exactly.
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
    world.insert_resource(TimestepMode::Fixed { dt: scene.dt as f32, substeps: scene.substeps as usize });
    world.resource_mut::<Time<Fixed>>().set_timestep_seconds(scene.dt);
    world.insert_resource(SimTime { step: 0, dt: scene.dt as f32, dt_exact: scene.dt });
    world.insert_resource(TrajectoryHash::default());
    world.insert_resource(SimSeed(scene.seed));
    world.resource_mut::<SimClock>().clear();

    let (dens, mut bodies) = spawn_world(world, &scene);
    let mut order = Vec::with_capacity(scene.robots.len());
    for (i, spec) in scene.robots.iter().enumerate() {
        let den = spec.den.as_ref().and_then(|name| dens.iter().find(|(n, _)| n == name).map(|(_, e)| *e));
        order.push(spawn_robot(world, spec, i as u32, den, scene.seed, scene.botlink.watchdog));
    }
    bodies.extend(order.iter().copied());
    world.insert_resource(RobotOrder(order));
    init_physics(world, &bodies);
    crate::botlink::udp::open_endpoints(world, &scene);
    let generation = world.get_resource::<ActiveScene>().map_or(1, |a| a.generation + 1);
    world.insert_resource(ActiveScene { scene, source, generation });
    world.write_message(SceneLoaded { generation });
}
