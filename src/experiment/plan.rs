//! A sweep's plan on disk, for any engine: `manifest.jsonl` (one line per run: id, condition,
//! parameters, seed), `commands.txt` (one `crsim run ...` per line, each writing
//! `runs/ID.json`; GNU parallel runs it as is), `slurm.sh` (a job array running line
//! `$SLURM_ARRAY_TASK_ID` of the same file) and `sweep.json` (what `crsim collect` needs).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::sweep::{PlannedRun, Sweep, value_text};
use crate::run::files::{ReadError, read_file, write_atomic};

/// What `crsim collect` reads from a plan folder besides the manifest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanInfo {
    pub sweep: String,
    pub scene: String,
    pub axes: Vec<String>,
    pub metrics: Vec<String>,
    pub runs: usize,
}

/// Where a run's result goes.
pub fn result_path(dir: &Path, id: &str) -> PathBuf {
    dir.join("runs").join(format!("{id}.json"))
}

/// Where a failed run's error goes (`crsim sweep --jobs`).
pub fn failure_path(dir: &Path, id: &str) -> PathBuf {
    dir.join("runs").join(format!("{id}.failed.json"))
}

/// The command line of one run: the program, then its arguments.
pub fn run_args(crsim: &Path, sweep: &Sweep, run: &PlannedRun, dir: &Path) -> Vec<String> {
    let mut args = vec![crsim.display().to_string(), "run".into(), sweep.scene.display().to_string()];
    args.extend(["--steps".into(), sweep.steps.to_string(), "--seed".into(), run.seed.to_string()]);
    if let Some(until) = sweep.until {
        args.extend(["--until".into(), until.name().to_string()]);
    }
    for s in &sweep.set {
        args.extend(["--set".into(), s.clone()]);
    }
    for (path, value) in &run.params {
        args.extend(["--set".into(), format!("{path}={}", value_text(value))]);
    }
    args.extend(["--out".into(), result_path(dir, &run.id).display().to_string()]);
    args
}

/// The crsim a plan's commands name: `started_as` (the `--bin` given, or the path this crsim was
/// started by) as the user wrote it, only made absolute when it is a relative path, so that a
/// cluster's nodes find it where the user's shell did (a symlink or a shared folder stays as it
/// is, and a bare `crsim` is looked up on each node's PATH); `fallback` when there is none.
pub fn plan_binary(started_as: Option<&Path>, fallback: &Path) -> PathBuf {
    let Some(p) = started_as.filter(|p| !p.as_os_str().is_empty()) else { return fallback.to_path_buf() };
    let bare = p.components().count() == 1 && !p.is_absolute() && !p.to_string_lossy().starts_with('.');
    if p.is_absolute() || bare {
        return p.to_path_buf();
    }
    std::env::current_dir().map_or_else(|_| p.to_path_buf(), |cwd| cwd.join(p))
}

/// Quotes one word for a POSIX shell (left bare when it needs no quoting).
pub fn shell_quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/' | ',' | ':' | '=' | '+' | '@'));
    if plain { word.to_string() } else { format!("'{}'", word.replace('\'', r"'\''")) }
}

/// Writes the plan into `dir` (created if missing). Paths in the commands are absolute, so the
/// lines run from any folder and on any machine that sees the same files.
pub fn write_plan(sweep: &Sweep, dir: &Path, crsim: &Path) -> Result<(), String> {
    let shown = dir.display();
    std::fs::create_dir_all(dir.join("runs")).map_err(|e| format!("{shown}: cannot create: {e}"))?;
    let dir = dir.canonicalize().map_err(|e| format!("{shown}: {e}"))?;
    // SLURM opens each task's `--output` file before the task runs: its folder must be there.
    std::fs::create_dir_all(dir.join("logs")).map_err(|e| format!("{shown}/logs: cannot create: {e}"))?;
    let scene = sweep.scene.canonicalize().map_err(|e| format!("{}: {e}", sweep.scene.display()))?;
    let sweep = &Sweep { scene, ..sweep.clone() };
    let mut manifest = String::new();
    let mut commands = String::new();
    for run in &sweep.runs {
        manifest.push_str(&serde_json::to_string(run).map_err(|e| e.to_string())?);
        manifest.push('\n');
        let line: Vec<String> = run_args(crsim, sweep, run, &dir).iter().map(|w| shell_quote(w)).collect();
        commands.push_str(&line.join(" "));
        commands.push('\n');
    }
    let info = PlanInfo {
        sweep: sweep.file.display().to_string(),
        scene: sweep.scene.display().to_string(),
        axes: sweep.axis_paths.clone(),
        metrics: sweep.metrics.clone(),
        runs: sweep.runs.len(),
    };
    let info = serde_json::to_string_pretty(&info).map_err(|e| e.to_string())? + "\n";
    write_atomic(&dir.join("manifest.jsonl"), manifest.as_bytes())?;
    write_atomic(&dir.join("commands.txt"), commands.as_bytes())?;
    write_atomic(&dir.join("sweep.json"), info.as_bytes())?;
    write_atomic(&dir.join("slurm.sh"), slurm_script(&dir, sweep.runs.len()).as_bytes())?;
    Ok(())
}

/// A SLURM job array over the lines of `commands.txt`: task N runs line N.
fn slurm_script(dir: &Path, runs: usize) -> String {
    let d = dir.display().to_string();
    let q = shell_quote(&d);
    format!(
        r#"#!/bin/bash
# A SLURM job array running the crsim sweep planned in {d}:
# task N runs line N of commands.txt. Submit from any folder:
#     sbatch {q}/slurm.sh
# At most 50 tasks at once: sbatch --array=1-{runs}%50 {q}/slurm.sh
# Collect when the array is done: crsim collect {q}
# (Each task's output goes to {d}/logs/, made with the plan: SLURM needs it before a task starts.)
#SBATCH --job-name=crsim-sweep
#SBATCH --array=1-{runs}
#SBATCH --ntasks=1
#SBATCH --cpus-per-task=1
#SBATCH --output={d}/logs/%A_%a.out
set -euo pipefail
line=$(sed -n "${{SLURM_ARRAY_TASK_ID:?run by sbatch, or set SLURM_ARRAY_TASK_ID}}p" {q}/commands.txt)
if [ -z "$line" ]; then
    echo "no line $SLURM_ARRAY_TASK_ID in {d}/commands.txt" >&2
    exit 2
fi
exec bash -c "$line"
"#
    )
}

/// The largest plan file read (a million runs' manifest is about 100 MB).
const MAX_PLAN_BYTES: u64 = 1 << 30;

/// A plan file's text, read with the checks result files have.
fn read_plan_file(path: &Path) -> Result<String, String> {
    let bytes = read_file(path, MAX_PLAN_BYTES).map_err(|e| match e {
        ReadError::Missing => format!("{}: cannot read: no such file", path.display()),
        ReadError::Unreadable(e) => e,
    })?;
    String::from_utf8(bytes).map_err(|e| format!("{}: not UTF-8 text: {e}", path.display()))
}

/// Reads a plan's manifest and checks it against the plan: every run once, as many as the plan
/// made (`runs` in `sweep.json`); the error names the file and line. A manifest cut short or
/// with a line written twice would otherwise count runs that were never planned, or miss some.
pub fn read_manifest(dir: &Path, info: &PlanInfo) -> Result<Vec<PlannedRun>, String> {
    let path = dir.join("manifest.jsonl");
    let shown = path.display();
    let text = read_plan_file(&path)?;
    let mut runs: Vec<PlannedRun> = Vec::new();
    let mut seen = std::collections::HashMap::new();
    for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let run: PlannedRun = serde_json::from_str(line).map_err(|e| format!("{shown}:{}: {e}", i + 1))?;
        if let Some(first) = seen.insert(run.id.clone(), i + 1) {
            return Err(format!("{shown}:{}: run {} is listed again (first on line {first})", i + 1, run.id));
        }
        runs.push(run);
    }
    if runs.len() != info.runs {
        return Err(format!(
            "{shown}: lists {} runs, but the plan made {} (sweep.json): the manifest is damaged; plan the sweep again",
            runs.len(),
            info.runs
        ));
    }
    Ok(runs)
}

/// Reads a plan's `sweep.json`.
pub fn read_info(dir: &Path) -> Result<PlanInfo, String> {
    let path = dir.join("sweep.json");
    let text = read_plan_file(&path)?;
    serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plan_names_crsim_as_it_was_started() {
        let fallback = Path::new("/build/cache/debug/crsim");
        assert_eq!(plan_binary(None, fallback), fallback);
        assert_eq!(plan_binary(Some(Path::new("crsim")), fallback), Path::new("crsim"));
        assert_eq!(plan_binary(Some(Path::new("/opt/bin/crsim")), fallback), Path::new("/opt/bin/crsim"));
        let cwd = std::env::current_dir().unwrap();
        assert_eq!(plan_binary(Some(Path::new("./target/crsim")), fallback), cwd.join("./target/crsim"));
        assert_eq!(plan_binary(Some(Path::new("bin/crsim")), fallback), cwd.join("bin/crsim"));
    }

    #[test]
    fn words_are_quoted_only_when_a_shell_needs_it() {
        assert_eq!(shell_quote("/a/b-c.json"), "/a/b-c.json");
        assert_eq!(shell_quote("robots[*].x=1"), "'robots[*].x=1'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote(""), "''");
    }
}
