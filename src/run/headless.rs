//! Running without a window: the same plugins and the same fixed steps as the app, stepped as
//! fast as the machine goes. Used by `crsim run`, `crsim bench` and the tests.

use bevy::prelude::*;

use crate::scene::{PendingScene, SceneFile, SceneSource};
use crate::sim::SimClock;

/// A headless app with `scene` loaded and no step run yet.
pub fn headless_app(scene: SceneFile, source: SceneSource) -> App {
    let mut app = App::new();
    app.add_plugins((MinimalPlugins, TransformPlugin, super::SimPlugin));
    app.world_mut().resource_mut::<PendingScene>().request(scene, source);
    app.finish();
    app.cleanup();
    // The first update loads the scene and runs no step.
    app.update();
    app
}

/// Runs exactly `n` more steps.
pub fn run_steps(app: &mut App, n: u64) {
    app.world_mut().resource_mut::<SimClock>().queue_steps(n);
    app.update();
}

/// Runs `total` steps in chunks of `chunk`, calling `progress` with the steps done after each.
pub fn run_in_chunks(app: &mut App, total: u64, chunk: u64, mut progress: impl FnMut(u64)) {
    let mut done = 0;
    while done < total {
        let n = chunk.max(1).min(total - done);
        run_steps(app, n);
        done += n;
        progress(done);
    }
}
