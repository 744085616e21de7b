//! `crsim verify`: runs a recording's scene and seed again, with the recorded inputs from
//! outside put back at their steps, and compares the trajectory hash after every step. It says
//! "identical", or the first step where the hashes part and the first robot whose recorded pose
//! differs from the new one by a millimetre or more.

use std::sync::{Arc, Mutex};

use bevy::prelude::*;

use super::headless::{headless_app_with, run_steps};
use crate::record::format::{Body, Channel, EndMeta, InputsRecord, Record, RobotsRecord, StepRecord};
use crate::record::{InputLog, Recorder, Recording, Sink, recorded_scene, without_outside_drivers};
use crate::scene::{SceneFile, SceneSource};

/// Steps run between comparisons.
const CHUNK: u64 = 500;
/// How far past the first differing hash verify looks for a robot that moved differently.
const LOOK_AHEAD: u64 = 500;

/// What verify found.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// Every recorded step gave the recorded hash.
    Identical { steps: u64, hash: String },
    /// The hashes part at `step`.
    Differs {
        step: u64,
        recorded: String,
        now: String,
        /// The first robot (by step, then robot order) whose pose differs by a millimetre or
        /// more: its name, the step, and the recorded and new positions in metres.
        robot: Option<(String, u64, [f32; 2], [f32; 2])>,
    },
}

impl Verdict {
    /// The line `crsim verify` prints.
    pub fn describe(&self) -> String {
        match self {
            Verdict::Identical { steps, hash } => format!("identical: {steps} steps, trajectory hash {hash}"),
            Verdict::Differs { step, recorded, now, robot } => {
                let mut s = format!("differs: first at step {step} (hash recorded {recorded}, now {now})");
                match robot {
                    Some((name, at, a, b)) => s.push_str(&format!(
                        "; robot {name} is the first to move differently, at step {at}: recorded ({:.3}, {:.3}), now ({:.3}, {:.3})",
                        a[0], a[1], b[0], b[1]
                    )),
                    None => s.push_str(&format!(
                        "; no robot's pose differs by a millimetre within {LOOK_AHEAD} steps of it"
                    )),
                }
                s
            }
        }
    }
}

/// Keeps the records of the new run that verify compares.
struct Collect(Arc<Mutex<Vec<Record>>>);

impl Sink for Collect {
    fn write(&mut self, record: &std::sync::Arc<Record>) -> Result<(), String> {
        if matches!(record.channel, Channel::Step | Channel::Robots) {
            self.0.lock().map_err(|_| "poisoned")?.push(Record::clone(record));
        }
        Ok(())
    }
    fn finish(&mut self, _: &EndMeta) -> Result<(), String> {
        Ok(())
    }
    fn name(&self) -> String {
        "verify".into()
    }
}

/// Runs the recording again; `scene` replaces the recorded scene (to see where an edit makes
/// a run part from the recording). `setup` is what an extension adds to the app (the run that
/// was recorded had it too). `progress` gets the steps done.
pub fn verify(
    rec: &mut Recording,
    scene: Option<SceneFile>,
    setup: &dyn Fn(&mut App),
    mut progress: impl FnMut(u64, u64),
) -> Result<Verdict, String> {
    let (first, last) = rec.steps();
    if rec.meta.first_step != 0 || first != 0 {
        return Err(format!(
            "{} starts at step {first}, in the middle of a run: verify runs a scene from its start, so it needs a \
             recording made from step 0",
            rec.path.display()
        ));
    }
    let scene = match scene {
        Some(s) => s,
        None => recorded_scene(&rec.meta)?,
    };
    let scene = without_outside_drivers(scene);
    let script: std::collections::BTreeMap<u64, InputsRecord> =
        rec.read::<InputsRecord>(Channel::Inputs, first, last)?.into_iter().map(|r| (r.step, r)).collect();
    let collected = Arc::new(Mutex::new(Vec::new()));
    let sink = Collect(Arc::clone(&collected));
    let mut app = headless_app_with(scene, SceneSource::Generated, move |app| {
        app.insert_resource(InputLog::replaying(script));
        setup(app);
    });
    app.world_mut().resource_mut::<Recorder>().add_sink(Box::new(sink));
    let total = last + 1;
    let mut done = 0;
    while done < total {
        let n = CHUNK.min(total - done);
        run_steps(&mut app, n);
        let from = done;
        done += n;
        progress(done, total);
        let now: Vec<Record> = std::mem::take(&mut *collected.lock().map_err(|_| "poisoned")?);
        let recorded: Vec<StepRecord> = rec.read(Channel::Step, from, done - 1)?;
        let new_steps = steps_of(&now);
        for r in &recorded {
            let Some(n) = new_steps.iter().find(|s| s.step == r.step) else { continue };
            if n.hash != r.hash {
                return Ok(first_difference(rec, &mut app, &collected, now, r, &n.hash));
            }
        }
        if crate::run::signals::requested() {
            return Err(format!("stopped at step {done}: every step so far is identical"));
        }
    }
    let hash = rec.end.as_ref().map(|e| e.hash.clone()).unwrap_or_default();
    let final_hash = app.world().resource::<crate::sim::PerEnv<crate::sim::TrajectoryHash>>().only().hex();
    if !hash.is_empty() && rec.end.as_ref().is_some_and(|e| e.last_step == last) && final_hash != hash {
        return Ok(Verdict::Differs { step: last, recorded: hash, now: final_hash, robot: None });
    }
    Ok(Verdict::Identical { steps: total, hash: final_hash })
}

fn steps_of(records: &[Record]) -> Vec<StepRecord> {
    records
        .iter()
        .filter_map(|r| match &r.body {
            Body::Step(s) => Some(s.clone()),
            _ => None,
        })
        .collect()
}

fn robots_of(records: &[Record]) -> Vec<RobotsRecord> {
    records
        .iter()
        .filter_map(|r| match &r.body {
            Body::Robots(robots) => Some(robots.clone()),
            _ => None,
        })
        .collect()
}

/// The hashes part at `at`: run on a little and find the first robot that moved differently.
fn first_difference(
    rec: &mut Recording,
    app: &mut App,
    collected: &Arc<Mutex<Vec<Record>>>,
    mut now: Vec<Record>,
    at: &StepRecord,
    new_hash: &str,
) -> Verdict {
    let (_, last) = rec.steps();
    let until = (at.step + LOOK_AHEAD).min(last);
    let have = steps_of(&now).last().map_or(0, |s| s.step);
    if until > have {
        run_steps(app, until - have);
        if let Ok(mut more) = collected.lock() {
            now.append(&mut more);
        }
    }
    let recorded: Vec<RobotsRecord> = rec.read(Channel::Robots, at.step, until).unwrap_or_default();
    let new = robots_of(&now);
    let mut robot = None;
    'steps: for r in &recorded {
        let Some(n) = new.iter().find(|n| n.step == r.step) else { continue };
        for i in 0..r.x.len().min(n.x.len()) {
            if r.x[i] != n.x[i] || r.y[i] != n.y[i] || r.heading[i] != n.heading[i] {
                let name = rec.meta.robots.get(i).cloned().unwrap_or_else(|| format!("#{i}"));
                let m = |v: i32| v as f32 / 1000.0;
                robot = Some((name, r.step, [m(r.x[i]), m(r.y[i])], [m(n.x[i]), m(n.y[i])]));
                break 'steps;
            }
        }
    }
    Verdict::Differs { step: at.step, recorded: at.hash.clone(), now: new_hash.to_string(), robot }
}
/// `crsim verify FILE [--scene SCENE]`: runs the recording's scene (or `scene`, with the
/// recording's seed) again with its recorded inputs and prints `identical` or where it parts;
/// the exit code (1 when it parts, 2 on bad input).
pub fn verify_command(
    path: &std::path::Path,
    scene: Option<&std::path::Path>,
    setup: &dyn Fn(&mut App),
) -> std::process::ExitCode {
    use std::process::ExitCode;
    let bad = |e: String| {
        eprintln!("{e}");
        ExitCode::from(super::runner::BAD_INPUT)
    };
    if let Err(e) = super::signals::install() {
        eprintln!("{e}");
    }
    let mut recording = match Recording::open(path) {
        Ok(r) => r,
        Err(e) => return bad(e.to_string()),
    };
    if let Some(note) = recording.describe_end() {
        eprintln!("{note}");
    }
    let scene = match scene.map(crate::scene::load_scene_file) {
        None => None,
        Some(Ok((mut s, _))) => {
            s.seed = recording.meta.seed;
            Some(s)
        }
        Some(Err(e)) => return bad(e.to_string()),
    };
    let (_, last) = recording.steps();
    let bar = super::runner::progress_bar(last + 1);
    let verdict = verify(&mut recording, scene, setup, |done, _| bar.set_position(done));
    bar.finish_and_clear();
    match verdict {
        Ok(v) => {
            crate::say!("{}", v.describe());
            if matches!(v, Verdict::Identical { .. }) { ExitCode::SUCCESS } else { ExitCode::FAILURE }
        }
        Err(e) => bad(format!("{}: {e}", path.display())),
    }
}
