//! Scenes, as the ground floor every subsystem reads: the RON schema, geometry, validation with
//! precise errors, the network structure file's types, and reading scene files. Types and pure
//! functions only: building a world from a scene is `run/`'s work, and each subsystem attaches
//! its own parts to what `run/` spawns.

use std::path::PathBuf;

use bevy::prelude::*;

pub mod edit;
pub mod error;
pub mod geometry;
pub mod kinds;
pub mod load;
pub mod network;
pub mod overlap;
pub mod overrides;
pub mod path;
pub mod reference;
pub mod schema;
pub mod validate;

pub use load::{SceneLoadError, default_scene, load_scene_file, load_scene_file_with, parse_scene};
pub use overrides::SceneOverrides;
pub use schema::SceneFile;

/// Marks every entity that belongs to the loaded scene (despawned on reload), in its
/// environment ([`crate::sim::Env`]; the first unless it is spawned with another).
#[derive(Component, Debug, Clone, Copy, Default)]
#[require(crate::sim::Env)]
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
    /// The scene a recording or a watched run holds: its scene file's name, and where it came
    /// from (a recording's path, a viewer's address). Never reloaded from disk.
    Recorded { scene: String, from: String },
}

impl SceneSource {
    /// How the source is shown to users.
    pub fn label(&self) -> String {
        match self {
            SceneSource::BuiltIn => load::DEFAULT_SCENE_NAME.to_string(),
            SceneSource::File(p) => p.display().to_string(),
            SceneSource::Generated => "<generated>".to_string(),
            SceneSource::Recorded { scene, from } => format!("{scene}, as recorded in {from}"),
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

/// Whether a scene runs and uses the kinematic model (`physics: Kinematic`); also a run
/// condition.
pub fn kinematic(active: Option<Res<ActiveScene>>) -> bool {
    active.is_some_and(|a| a.scene.physics == schema::PhysicsMode::Kinematic)
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
    /// The environment it was loaded into.
    pub env: crate::sim::Env,
}
