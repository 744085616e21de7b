//! `crsim --frame-stats N`: once the app has settled, N frames timed with Bevy's diagnostics;
//! prints the mean, median, 95th percentile and maximum of the whole frame (Bevy's frame time,
//! rendering included), of the main world's part of it (the simulation steps, the panel and the
//! drawing commands: from the `First` schedule to the `Last`) and of the simulation steps alone,
//! and the steps run meanwhile, then exits. It measures how fluid the app stays with many robots.

use std::time::Instant;

use bevy::diagnostic::{
    Diagnostic, DiagnosticPath, Diagnostics, DiagnosticsStore, FrameTimeDiagnosticsPlugin, RegisterDiagnostic,
};
use bevy::prelude::*;

use crate::sim::SimTime;

/// Frames before the timing starts: the window, the panel and the first steps settle.
const WARM_UP: u32 = 120;

/// Milliseconds from the start of `First` to the end of `Last` in the main world.
const MAIN_WORLD_MS: DiagnosticPath = DiagnosticPath::const_new("crsim/main_world_ms");

/// Milliseconds of the frame spent in the fixed loop: the simulation steps it ran.
const SIMULATION_MS: DiagnosticPath = DiagnosticPath::const_new("crsim/simulation_ms");

#[derive(Resource, Default)]
struct FrameStart(Option<Instant>);

#[derive(Resource, Default)]
struct LoopStart(Option<Instant>);

#[derive(Resource)]
struct FrameStatsJob {
    frames: u32,
    seen: u32,
    start: Option<(Instant, u64)>,
}

pub fn plugin(app: &mut App, frames: u32) {
    let frames = frames.max(1);
    app.add_plugins(FrameTimeDiagnosticsPlugin::new(frames as usize))
        .register_diagnostic(Diagnostic::new(MAIN_WORLD_MS).with_max_history_length(frames as usize))
        .register_diagnostic(Diagnostic::new(SIMULATION_MS).with_max_history_length(frames as usize))
        .init_resource::<FrameStart>()
        .init_resource::<LoopStart>()
        .insert_resource(FrameStatsJob { frames, seen: 0, start: None })
        .add_systems(First, |mut start: ResMut<FrameStart>| start.0 = Some(Instant::now()))
        .add_systems(
            RunFixedMainLoop,
            (
                (|mut start: ResMut<LoopStart>| start.0 = Some(Instant::now()))
                    .in_set(RunFixedMainLoopSystems::BeforeFixedMainLoop),
                simulation_time.in_set(RunFixedMainLoopSystems::AfterFixedMainLoop),
            ),
        )
        .add_systems(Last, (main_world_time, measure).chain());
}

fn simulation_time(start: Res<LoopStart>, mut diagnostics: Diagnostics) {
    if let Some(t) = start.0 {
        diagnostics.add_measurement(&SIMULATION_MS, || t.elapsed().as_secs_f64() * 1000.0);
    }
}

fn main_world_time(start: Res<FrameStart>, mut diagnostics: Diagnostics) {
    if let Some(t) = start.0 {
        diagnostics.add_measurement(&MAIN_WORLD_MS, || t.elapsed().as_secs_f64() * 1000.0);
    }
}

/// Mean, median, 95th percentile and maximum of `values`.
pub fn summary(values: &[f64]) -> Option<[f64; 4]> {
    if values.is_empty() {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let at = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
    Some([v.iter().sum::<f64>() / v.len() as f64, at(0.5), at(0.95), v[v.len() - 1]])
}

fn measure(
    mut job: ResMut<FrameStatsJob>,
    store: Res<DiagnosticsStore>,
    time: Res<SimTime>,
    mut exit: MessageWriter<AppExit>,
) {
    job.seen += 1;
    if job.seen == WARM_UP {
        job.start = Some((Instant::now(), time.step));
    }
    if job.seen < WARM_UP + job.frames {
        return;
    }
    let values = |path: &DiagnosticPath| -> Vec<f64> {
        store.get(path).map(|d| d.values().copied().collect()).unwrap_or_default()
    };
    let (frame, main, sim) =
        (values(&FrameTimeDiagnosticsPlugin::FRAME_TIME), values(&MAIN_WORLD_MS), values(&SIMULATION_MS));
    let (Some(frame_ms), Some(main_ms), Some(sim_ms)) = (summary(&frame), summary(&main), summary(&sim)) else {
        error!("the frame-time diagnostics recorded no frames");
        exit.write(AppExit::error());
        return;
    };
    println!("frames: {}", frame.len());
    for (name, [mean, median, p95, max]) in
        [("frame_time_ms", frame_ms), ("main_world_ms", main_ms), ("simulation_ms", sim_ms)]
    {
        println!("{name}: mean {mean:.2}, median {median:.2}, p95 {p95:.2}, max {max:.2}");
    }
    if let Some((start, step)) = job.start {
        let seconds = start.elapsed().as_secs_f64();
        let steps = time.step - step;
        println!("steps: {steps} in {seconds:.2} s ({:.1} steps/s)", steps as f64 / seconds.max(1e-9));
        // What a frame of the main world would cost at 60 frames a second: the panel and the
        // drawing of one frame, and the steps of a sixtieth of a second.
        if steps > 0 {
            let frames = f64::from(job.frames);
            let per_step = sim.iter().sum::<f64>() / steps as f64;
            let beside = (main.iter().sum::<f64>() - sim.iter().sum::<f64>()) / frames;
            let per_frame_at_60 = beside + per_step / (60.0 * f64::from(time.dt));
            println!(
                "per step {per_step:.2} ms, panel and drawing {beside:.2} ms per frame: main world at 60 frames/s \
                 {per_frame_at_60:.2} ms"
            );
        }
    }
    exit.write(AppExit::Success);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_of_frame_times() {
        assert_eq!(summary(&[]), None);
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        let [mean, median, p95, max] = summary(&v).unwrap();
        assert_eq!((mean, median, p95, max), (50.5, 51.0, 95.0, 100.0));
    }
}
