//! `crsim inspect FILE [--step S]`: what a recording holds — its run, steps, end and size per
//! robot-step — and, with a step, the state there and how long reading it took.

use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

use super::Recording;
use crate::say;

/// The most robots whose positions `--step` prints.
const ROBOTS_SHOWN: usize = 10;

/// Describes the recording at `path` (and its state at `step`); the exit code.
pub fn inspect_command(path: &Path, step: Option<u64>) -> ExitCode {
    let opened = Instant::now();
    let mut r = match Recording::open(path) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let open_ms = opened.elapsed().as_secs_f64() * 1e3;
    let (first, last) = r.steps();
    let m = r.meta.clone();
    let size = std::fs::metadata(path).map_or(0, |m| m.len());
    let robot_steps = (last - first + 1) * m.robots.len().max(1) as u64;
    say!("recording: {}", path.display());
    say!("crsim: {} (format {})", m.crsim_version, m.format_version);
    say!("scene: {} (seed {}, dt {} s)", m.scene_path, m.seed, m.dt);
    say!("robots: {}   pens: {}", m.robots.len(), m.pens.len());
    say!("steps: {first}..={last}");
    match (&r.end, r.describe_end()) {
        (_, Some(note)) => say!("end: {note}"),
        (Some(e), None) => {
            say!("end: {} steps, hash {}{}", e.steps, e.hash, if e.interrupted { ", interrupted" } else { "" })
        }
        (None, None) => say!("end: not recorded"),
    }
    say!("size: {size} bytes, {:.2} bytes per robot-step", size as f64 / robot_steps as f64);
    say!("opened in {open_ms:.1} ms");
    let Some(s) = step else { return ExitCode::SUCCESS };
    let t = Instant::now();
    match r.frame(s) {
        Ok(f) => {
            say!("step {}: read in {:.1} ms, hash {}", f.step.step, t.elapsed().as_secs_f64() * 1e3, f.step.hash);
            for (i, name) in m.robots.iter().enumerate().take(ROBOTS_SHOWN) {
                let (x, y) = (f.robots.x.get(i).copied().unwrap_or(0), f.robots.y.get(i).copied().unwrap_or(0));
                say!("  {name}: ({:.3}, {:.3})", x as f64 / 1e3, y as f64 / 1e3);
            }
            if m.robots.len() > ROBOTS_SHOWN {
                say!("  ... and {} more robots", m.robots.len() - ROBOTS_SHOWN);
            }
            for e in &f.events {
                say!("  event: {e}");
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}
