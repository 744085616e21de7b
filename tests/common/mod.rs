//! Helpers the integration tests share: finding entities, reading poses, building scenes.
//! Each test binary uses some of them.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use bevy::prelude::*;

use crsim::robot::pose;
use crsim::scene::load_scene_file;
use crsim::scene::schema::{ControllerSpec, RobotSpec, SceneFile};

/// The entity called `name`.
pub fn named(app: &mut App, name: &str) -> Entity {
    let world = app.world_mut();
    let mut q = world.query::<(Entity, &Name)>();
    q.iter(world).find(|(_, n)| n.as_str() == name).map(|(e, _)| e).unwrap_or_else(|| panic!("no entity {name}"))
}

/// A copy of one of an entity's components.
pub fn get<C: Component + Clone>(app: &App, e: Entity) -> C {
    app.world().get::<C>(e).cloned().expect("component present")
}

/// Position and heading (radians) of an entity.
pub fn pose_of(app: &App, e: Entity) -> (Vec2, f32) {
    pose(app.world().get::<Transform>(e).expect("a transform"))
}

/// Position of an entity.
pub fn position(app: &App, e: Entity) -> Vec2 {
    pose_of(app, e).0
}

/// An empty walled room.
pub fn room(w: f32, h: f32) -> SceneFile {
    SceneFile::empty("test", w, h)
}

/// A robot with defaults and a controller.
pub fn robot(name: &str, x: f32, y: f32, heading: f32, controller: ControllerSpec) -> RobotSpec {
    let mut r = RobotSpec::new(name, x, y, heading);
    r.controller = controller;
    r
}

/// A shipped scene file's path.
pub fn scene_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes").join(name)
}

/// A shipped scene, loaded and checked.
pub fn shipped_scene(name: &str) -> SceneFile {
    load_scene_file(&scene_path(name)).unwrap_or_else(|e| panic!("{e}")).0
}
