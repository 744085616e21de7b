//! Hot reload (app only): the open scene file, and the network structure file it names, are
//! polled for changes; a valid edit replaces the running scene, an invalid one leaves it running
//! and puts the error in the panel.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use bevy::prelude::*;

use crate::scene::{ActiveScene, PendingScene, SceneOverrides, SceneSource, SceneStatus, load_scene_file_with};

/// How often the file's modification time is checked.
const POLL: Duration = Duration::from_millis(300);

#[derive(Default)]
struct Watched {
    path: Option<PathBuf>,
    /// Modification times of the scene file and of its network file.
    modified: (Option<SystemTime>, Option<SystemTime>),
    since_poll: Duration,
}

pub fn plugin(app: &mut App) {
    app.add_systems(Update, watch_scene_file);
}

fn modified(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

/// The scene file's and its network file's modification times.
fn stamps(path: &Path, active: &ActiveScene) -> (Option<SystemTime>, Option<SystemTime>) {
    let network = crate::scene::load::network_path(&active.scene, path.parent().unwrap_or(Path::new(".")));
    (modified(path), network.and_then(|n| modified(&n)))
}

fn watch_scene_file(
    time: Res<Time<Real>>,
    active: Option<Res<ActiveScene>>,
    mut watched: Local<Watched>,
    overrides: Res<SceneOverrides>,
    mut pending: ResMut<PendingScene>,
    mut status: ResMut<SceneStatus>,
) {
    let Some(active) = active else { return };
    let SceneSource::File(path) = &active.source else {
        watched.path = None;
        return;
    };
    if watched.path.as_ref() != Some(path) {
        // A new file was opened: remember its current state, reload only on later changes.
        watched.path = Some(path.clone());
        watched.modified = stamps(path, &active);
        return;
    }
    watched.since_poll += time.delta();
    if watched.since_poll < POLL {
        return;
    }
    watched.since_poll = Duration::ZERO;
    let now = stamps(path, &active);
    if now == watched.modified || now.0.is_none() {
        return;
    }
    watched.modified = now;
    reload_from(path, &overrides, &mut pending, &mut status);
}

/// Reads `path` (with the command line's overrides) and queues it to replace the running scene,
/// or reports why it cannot.
pub fn reload_from(path: &Path, overrides: &SceneOverrides, pending: &mut PendingScene, status: &mut SceneStatus) {
    match load_scene_file_with(path, overrides) {
        Ok((scene, _)) => {
            info!("loaded scene {}", path.display());
            pending.request(scene, SceneSource::File(path.to_path_buf()));
            status.error = None;
            status.note = Some(format!("loaded {}", path.display()));
        }
        Err(e) => {
            warn!("scene not loaded, the running scene is kept:\n{e}");
            status.error = Some(e.to_string());
            status.note = None;
        }
    }
}
