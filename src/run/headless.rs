//! Running without a window: the same plugins and the same fixed steps as the app, stepped as
//! fast as the machine goes. Used by `crsim run`, `crsim bench` and the tests.

use bevy::prelude::*;

use crate::scene::{PendingScene, SceneFile, SceneSource};
use crate::sim::SimClock;

/// A headless app with `scene` loaded and no step run yet.
pub fn headless_app(scene: SceneFile, source: SceneSource) -> App {
    headless_app_with(scene, source, |_| {})
}

/// A headless app with `scene` loaded and no step run yet, after `setup` had its say on the app
/// (resources that must be in place when the scene loads).
pub fn headless_app_with(scene: SceneFile, source: SceneSource, setup: impl FnOnce(&mut App)) -> App {
    let mut app = App::new();
    app.add_plugins((MinimalPlugins, TransformPlugin, super::SimPlugin));
    setup(&mut app);
    app.world_mut().resource_mut::<PendingScene>().request(scene, source);
    // Without a window every schedule is a handful of small systems: on one thread they run
    // without waking the pool's workers, which cost a one-robot scene two thirds of its time
    // (`crsim bench --robots 1`: 13,900 steps/s on the pool, 45,000-50,000 on one thread).
    let mut schedules = app.world_mut().resource_mut::<Schedules>();
    for (_, schedule) in schedules.iter_mut() {
        schedule.set_executor(bevy::ecs::schedule::SingleThreadedExecutor::new());
    }
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
