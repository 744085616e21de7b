//! `crsim replay FILE --frames DIR [--every N]`: shows the recording one step after another
//! and saves the window at each as `DIR/frame-000001.png`, `frame-000002.png`, ..., then exits.
//! Turn them into a video with ffmpeg (see the README).

use std::path::PathBuf;

use bevy::prelude::*;
use bevy::render::view::screenshot::{Screenshot, ScreenshotCaptured, save_to_disk};

use crate::record::replay::{Replay, ReplaySource};
use crate::scene::ActiveScene;

/// Frames rendered before the first capture, so the panel and the view settle.
const WARM_UP: u32 = 20;
/// Frames rendered between setting a step and capturing it: text that needs glyphs the font
/// atlas does not have yet shows them only a frame or two later.
const SETTLE: u32 = 4;
/// Frames to wait for one capture before giving up.
const TIMEOUT: u32 = 600;

#[derive(Resource)]
struct FramesJob {
    dir: PathBuf,
    every: u64,
    /// The next step to show; `None` before the first.
    step: Option<u64>,
    written: u32,
    frames: u32,
    /// Frames since the current step was set.
    since: u32,
    requested: bool,
    captured: u32,
}

#[derive(Message)]
struct Captured;

pub fn plugin(app: &mut App, dir: PathBuf, every: u64) {
    app.insert_resource(FramesJob {
        dir,
        every: every.max(1),
        step: None,
        written: 0,
        frames: 0,
        since: 0,
        requested: false,
        captured: 0,
    })
    .add_message::<Captured>()
    .add_systems(Update, export);
}

fn export(
    mut commands: Commands,
    mut job: ResMut<FramesJob>,
    mut captured: MessageReader<Captured>,
    mut replay: ResMut<Replay>,
    active: Option<Res<ActiveScene>>,
    mut exit: MessageWriter<AppExit>,
) {
    job.frames += 1;
    job.captured += captured.read().count() as u32;
    replay.exporting = true;
    let ReplaySource::File(t) = &mut replay.source else {
        error!("--frames needs a recording");
        exit.write(AppExit::error());
        return;
    };
    if active.is_none() || job.frames < WARM_UP {
        return;
    }
    let Some(step) = job.step else {
        job.step = Some(t.step);
        job.since = 0;
        return;
    };
    if t.step != step {
        t.seek(step as i64);
    }
    job.since += 1;
    if !job.requested && job.since >= SETTLE {
        job.requested = true;
        job.written += 1;
        let path = job.dir.join(format!("frame-{:06}.png", job.written));
        commands.spawn(Screenshot::primary_window()).observe(save_to_disk(path)).observe(
            |_: On<ScreenshotCaptured>, mut out: MessageWriter<Captured>| {
                out.write(Captured);
            },
        );
        return;
    }
    if job.requested && job.captured >= job.written {
        // Saved: on to the next step, or done.
        job.requested = false;
        // The last step always gets a frame: a run's end is what people look for.
        let next = if step < t.last { (step + job.every).min(t.last) } else { step + 1 };
        if next > t.last {
            // Every capture has been saved (save_to_disk writes in the capture's observer).
            println!("wrote {} frames to {}", job.written, job.dir.display());
            exit.write(AppExit::Success);
            return;
        }
        job.step = Some(next);
        job.since = 0;
    } else if job.since > TIMEOUT {
        error!("no frame was captured after {TIMEOUT} frames");
        exit.write(AppExit::error());
    }
}
