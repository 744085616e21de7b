//! Loading a scene: the running simulation is replaced by a fresh one built from the scene. Every
//! scene entity, the physics context, the step counter, the hash and the random streams start
//! afresh, so a reloaded scene runs exactly like a freshly started one.
//!
//! The loader spawns the world and the robots' bodies; every subsystem attaches its own parts to
//! each robot in an observer of the robot being added (they read the robot's entry in
//! [`ActiveScene`], which is in place before the first robot spawns), and sets up its scene-wide
//! state in [`LoadSystems::React`] on [`SceneLoaded`].

use bevy::prelude::*;

use super::physics;
use crate::robot::registry::SensorRegistry;
use crate::robot::spawn_robot;
use crate::scene::{
    ActiveScene, PendingScene, SceneEntity, SceneFile, SceneLoaded, SceneOverrides, SceneSource, SceneStatus,
};
use crate::sim::env::despawn_in;
use crate::sim::rng::SimSeed;
use crate::sim::{Env, EnvStart, LoadSystems, PerEnv, RobotOrder, SimClock, SimTime, TrajectoryHash};
use crate::world::spawn_world;

pub(super) fn plugin(app: &mut App) {
    app.init_resource::<PendingScene>()
        .init_resource::<SceneStatus>()
        .init_resource::<SceneOverrides>()
        .add_message::<SceneLoaded>()
        .add_systems(PreUpdate, apply_pending_scene.in_set(LoadSystems::Load));
}

/// Loads the scene asked for, unless its robots name sensors the app's registry does not have
/// (or they cannot carry): then the running simulation goes on, and the scene's status (and a
/// headless run's opening errors) say why.
fn apply_pending_scene(world: &mut World) {
    let Some((scene, source)) = world.resource_mut::<PendingScene>().0.take() else { return };
    let problems = world.get_resource::<SensorRegistry>().map_or_else(Vec::new, |r| r.check(&scene));
    if problems.is_empty() {
        return load_now(world, scene, source);
    }
    let said: Vec<String> = problems.iter().map(|e| format!("{}: {e}", source.label())).collect();
    for line in &said {
        error!("{line}");
    }
    if let Some(mut opening) = world.get_resource_mut::<super::runner::OpeningErrors>() {
        opening.0.extend(said.iter().cloned());
    }
    world.resource_mut::<SceneStatus>().error = Some(said.join("\n"));
    // Nothing ran before: an empty room of the scene's size stands in, so that every system has
    // a scene to read while the app shows the error (and a headless run stops on it).
    if world.get_resource::<ActiveScene>().is_none() {
        let empty = SceneFile::empty(scene.name.clone(), scene.arena.width, scene.arena.height);
        load_now(world, empty, source);
    }
}

/// Replaces the running simulation with `scene`, in a world of one environment. The scene must
/// be valid (see [`crate::scene::validate::validate`]).
pub fn load_now(world: &mut World, scene: SceneFile, source: SceneSource) {
    let old: Vec<Entity> = world.query_filtered::<Entity, With<SceneEntity>>().iter(world).collect();
    for e in old {
        world.despawn(e);
    }
    physics::forget_contexts(world);
    world.insert_resource(SimTime { step: 0, dt: scene.dt as f32, dt_exact: scene.dt });
    world.insert_resource(PerEnv::<TrajectoryHash>::default());
    world.insert_resource(PerEnv::<EnvStart>::default());
    world.insert_resource(PerEnv::<SimSeed>::default());
    world.insert_resource(RobotOrder::default());
    world.resource_mut::<SimClock>().clear();
    physics::set_step(world, scene.dt, scene.substeps);
    // In place before anything spawns: the subsystems' observers read the robots' entries.
    let generation = world.get_resource::<ActiveScene>().map_or(1, |a| a.generation + 1);
    world.insert_resource(ActiveScene { scene: scene.clone(), source, generation });
    load_env(world, Env::FIRST, &scene);
}

/// Loads `scene` into environment `env` of the world, in place of what it held, while the other
/// environments keep theirs: its entities, physics context, hash, step count and random streams
/// start afresh, so it runs from here as a world of its own would from its start. The scene is
/// the world's [`ActiveScene`] but for its seed (and must be valid, as for [`load_now`]).
pub fn load_env(world: &mut World, env: Env, scene: &SceneFile) {
    despawn_in::<With<SceneEntity>>(world, env);
    let context = physics::new_context(world, env);
    let now = world.resource::<SimTime>().step;
    *world.resource_mut::<PerEnv<TrajectoryHash>>().reach(env) = TrajectoryHash::default();
    *world.resource_mut::<PerEnv<EnvStart>>().reach(env) = EnvStart(now);
    *world.resource_mut::<PerEnv<SimSeed>>().reach(env) = SimSeed(scene.seed);

    // Each body goes into the physics world as soon as it is spawned (so the bodies enter in
    // spawn order): it then leaves the table it was spawned in before the next one arrives, so
    // that table never grows to hold every robot or pen. (Bevy keeps an emptied table's room:
    // at 10,000 network robots, about 25 MB that would stay allocated for the whole run.)
    let mode = scene.physics;
    let dens = spawn_world(world, scene, env, |world, body| physics::init_body(world, body, mode, context));
    let mut order = Vec::with_capacity(scene.robots.len());
    for (i, spec) in scene.robots.iter().enumerate() {
        let den = spec.den.as_ref().and_then(|name| dens.iter().find(|(n, _)| n == name).map(|(_, e)| *e));
        let robot = spawn_robot(world, spec, i as u32, den, env);
        physics::init_body(world, robot, mode, context);
        order.push(robot);
    }
    world.resource_mut::<RobotOrder>().set(env, order);
    let generation = world.resource::<ActiveScene>().generation;
    world.write_message(SceneLoaded { generation, env });
}
