//! `crsim sweep --jobs N`: the plan's runs in N worker processes on this machine, the same
//! command lines as `commands.txt`. Resumable: a run with a complete result is skipped. A run
//! that fails is recorded in `runs/ID.failed.json` with its error and does not stop the others.
//! Ctrl-C (or SIGTERM) stops the sweep: running runs are asked to stop, their interrupted
//! results are removed, and every finished result stays.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;

use super::plan::{failure_path, result_path, run_args};
use super::sweep::{PlannedRun, Sweep};
use crate::run::files::{read_file, write_atomic};
use crate::run::signals;

/// How a run of the sweep ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Done,
    Failed(String),
    /// Stopped by Ctrl-C; its result is removed and it runs again on resume.
    Stopped,
}

/// What `run_sweep` did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SweepSummary {
    pub total: usize,
    /// Runs whose complete result was there already.
    pub skipped: usize,
    pub done: usize,
    pub failed: Vec<(String, String)>,
    pub stopped: usize,
}

/// A result file that a finished run wrote: a regular file that parses and is not marked
/// interrupted (a FIFO or a device in `runs/` is not one, and is not read).
pub fn is_complete(path: &Path) -> bool {
    read_file(path, super::collect::MAX_RESULT_BYTES)
        .ok()
        .and_then(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).ok())
        .is_some_and(|v| v.is_object() && v.get("interrupted") != Some(&json!(true)) && v.get("hash").is_some())
}

/// Runs every run of `sweep` without a complete result in `dir`, `jobs` at a time, calling
/// `progress(finished, outcome)` as each ends.
pub fn run_sweep(
    sweep: &Sweep,
    dir: &Path,
    crsim: &Path,
    jobs: usize,
    mut progress: impl FnMut(&PlannedRun, &Outcome),
) -> SweepSummary {
    let mut summary = SweepSummary { total: sweep.runs.len(), ..Default::default() };
    let mut todo = VecDeque::new();
    for run in &sweep.runs {
        if is_complete(&result_path(dir, &run.id)) {
            summary.skipped += 1;
        } else {
            todo.push_back(run.clone());
        }
    }
    let queue = Arc::new(Mutex::new(todo));
    let running: Running = Mutex::new(Vec::new());
    let running = &running;
    let (tx, rx) = mpsc::channel();
    std::thread::scope(|scope| {
        for _ in 0..jobs.max(1) {
            let queue = Arc::clone(&queue);
            let tx = tx.clone();
            scope.spawn(move || {
                loop {
                    if signals::requested() {
                        break;
                    }
                    let Some(run) = queue.lock().ok().and_then(|mut q| q.pop_front()) else { break };
                    let outcome = run_one(sweep, dir, crsim, &run, running);
                    if tx.send((run, outcome)).is_err() {
                        break;
                    }
                }
            });
        }
        drop(tx);
        let mut told = Vec::new();
        loop {
            let (run, outcome) = match rx.recv_timeout(Duration::from_millis(50)) {
                Ok(next) => next,
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    if signals::requested() {
                        stop_all(running, &mut told);
                    }
                    continue;
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            };
            match &outcome {
                Outcome::Done => summary.done += 1,
                Outcome::Failed(e) => summary.failed.push((run.id.clone(), e.clone())),
                Outcome::Stopped => summary.stopped += 1,
            }
            progress(&run, &outcome);
        }
    });
    summary
}

/// One run as a child process; its stderr is kept for the failure record.
fn run_one(sweep: &Sweep, dir: &Path, crsim: &Path, run: &PlannedRun, running: &Running) -> Outcome {
    let args = run_args(crsim, sweep, run, dir);
    let result = result_path(dir, &run.id);
    let failure = failure_path(dir, &run.id);
    let err_path = dir.join("runs").join(format!(".{}.stderr", run.id));
    let outcome = (|| {
        let err_file = std::fs::File::create(&err_path).map_err(|e| format!("{}: {e}", err_path.display()))?;
        let child = Command::new(&args[0])
            .args(&args[1..])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(err_file)
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", args[0]))?;
        let status = wait(child, running)?;
        let stderr = std::fs::read_to_string(&err_path).unwrap_or_default();
        if status == Some(130) || (signals::requested() && !is_complete(&result)) {
            return Ok(Outcome::Stopped);
        }
        if status == Some(0) && is_complete(&result) {
            return Ok(Outcome::Done);
        }
        let tail: Vec<&str> = stderr.lines().rev().take(20).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        Ok(Outcome::Failed(match status {
            Some(code) => format!("exit code {code}: {}", tail.join("\n")),
            None => format!("killed by a signal: {}", tail.join("\n")),
        }))
    })()
    .unwrap_or_else(Outcome::Failed);
    let _ = std::fs::remove_file(&err_path);
    match &outcome {
        Outcome::Done => {
            let _ = std::fs::remove_file(&failure);
        }
        Outcome::Stopped => {
            // An interrupted result is not a result: the run starts again on resume.
            let _ = std::fs::remove_file(&result);
        }
        Outcome::Failed(error) => {
            let record = json!({"id": run.id, "seed": run.seed, "error": error, "command": args});
            let text = serde_json::to_string_pretty(&record).unwrap_or_default() + "\n";
            let _ = write_atomic(&failure, text.as_bytes());
        }
    }
    outcome
}

/// The runs going now, by process id, so that a stop request reaches them.
type Running = Mutex<Vec<u32>>;

/// Waits for the child without polling; `running` lists it meanwhile.
fn wait(mut child: Child, running: &Running) -> Result<Option<i32>, String> {
    let pid = child.id();
    if let Ok(mut r) = running.lock() {
        r.push(pid);
    }
    let status = child.wait();
    if let Ok(mut r) = running.lock() {
        r.retain(|&p| p != pid);
    }
    status.map(|s| s.code()).map_err(|e| format!("waiting for the run: {e}"))
}

/// Passes SIGTERM on to every run going (a child started from a terminal's Ctrl-C has had
/// SIGINT already; a sweep stopped by SIGTERM passes it on), once each.
fn stop_all(running: &Running, told: &mut Vec<u32>) {
    if let Ok(r) = running.lock() {
        for &pid in r.iter() {
            if told.contains(&pid) {
                continue;
            }
            told.push(pid);
            if let Ok(pid) = i32::try_from(pid) {
                let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGTERM);
            }
        }
    }
}

/// The crsim binary the plan's commands use: this one.
pub fn this_binary() -> PathBuf {
    std::env::current_exe().unwrap_or_else(|_| PathBuf::from("crsim"))
}
