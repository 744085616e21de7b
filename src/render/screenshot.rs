//! `crsim --screenshot FILE.png`: render a few seconds of the scene, save the window to a PNG
//! and exit. Used by the GUI smoke test.

use std::path::PathBuf;

use bevy::prelude::*;
use bevy::render::view::screenshot::{Screenshot, ScreenshotCaptured, save_to_disk};

use crate::sim::{PerEnv, SimTime, TrajectoryHash};

/// Frames to wait for the capture before giving up.
const TIMEOUT_FRAMES: u32 = 1200;

#[derive(Resource)]
struct ScreenshotJob {
    path: PathBuf,
    /// Frames to render before the screenshot, so the panel and the scene have settled.
    before: u32,
    frames: u32,
    requested: bool,
    saved_at: Option<u32>,
}

#[derive(Message)]
struct Captured;

pub fn plugin(app: &mut App, path: PathBuf, before: u32) {
    app.insert_resource(ScreenshotJob { path, before, frames: 0, requested: false, saved_at: None })
        .add_message::<Captured>()
        .add_systems(Update, take_screenshot);
}

fn take_screenshot(
    mut commands: Commands,
    mut job: ResMut<ScreenshotJob>,
    mut captured: MessageReader<Captured>,
    mut exit: MessageWriter<AppExit>,
    time: Res<SimTime>,
    hash: Res<PerEnv<TrajectoryHash>>,
) {
    job.frames += 1;
    if captured.read().count() > 0 && job.saved_at.is_none() {
        job.saved_at = Some(job.frames);
    }
    if !job.requested && job.frames >= job.before {
        job.requested = true;
        let path = job.path.clone();
        commands.spawn(Screenshot::primary_window()).observe(save_to_disk(path)).observe(
            |_: On<ScreenshotCaptured>, mut out: MessageWriter<Captured>| {
                out.write(Captured);
            },
        );
    }
    if let Some(at) = job.saved_at
        && job.frames > at + 2
    {
        info!("screenshot written to {}", job.path.display());
        // No step runs after this frame, so a headless run of this many steps must agree.
        println!("app stopped at step {}", time.step);
        println!("hash: {}", hash.only().hex());
        exit.write(AppExit::Success);
    } else if job.frames > job.before + TIMEOUT_FRAMES {
        error!("no screenshot was captured after {TIMEOUT_FRAMES} frames");
        exit.write(AppExit::error());
    }
}
