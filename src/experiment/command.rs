//! `crsim sweep` and `crsim collect` as the command line runs them: what they print, the progress
//! bar, and their exit codes.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use indicatif::{ProgressBar, ProgressStyle};

use super::collect::collect;
use super::plan::{plan_binary, result_path, write_plan};
use super::plot::{plot_data, write_plot};
use super::runner::{Outcome, is_complete, run_sweep, this_binary};
use super::sweep::load_sweep;
use crate::run::runner::{BAD_INPUT, INTERRUPTED};
use crate::run::signals;
use crate::say;

/// Exit code of `crsim collect` when some runs are not done (without `--partial`).
pub const RUNS_NOT_OK: u8 = 3;

/// What `crsim sweep` was asked for.
pub struct SweepCommand {
    pub file: PathBuf,
    /// The plan's folder (default: `NAME-results` beside the sweep file).
    pub dir: Option<PathBuf>,
    /// Only write the plan, into this folder.
    pub plan: Option<PathBuf>,
    pub jobs: Option<usize>,
    /// The crsim the plan's commands run (default: the path this crsim was started by).
    pub bin: Option<PathBuf>,
}

/// The folder a sweep's plan and results go to by default: `NAME-results` beside `NAME.ron`.
pub fn default_dir(file: &Path) -> PathBuf {
    let stem = file.file_stem().map_or_else(|| "sweep".into(), |s| s.to_string_lossy().into_owned());
    file.with_file_name(format!("{stem}-results"))
}

/// `crsim sweep`: plans the sweep, then (without `--plan`) runs what is not done yet, `jobs` at a
/// time; the exit code (130 when stopped, 1 when a run failed).
pub fn sweep_command(c: SweepCommand) -> ExitCode {
    if let Err(e) = signals::install() {
        eprintln!("{e}");
    }
    let sweep = match load_sweep(&c.file) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(BAD_INPUT);
        }
    };
    let crsim = this_binary();
    let only_plan = c.plan.is_some();
    let dir = c.plan.or(c.dir).unwrap_or_else(|| default_dir(&c.file));
    let started_as = c.bin.or_else(|| std::env::args_os().next().map(PathBuf::from));
    if let Err(e) = write_plan(&sweep, &dir, &plan_binary(started_as.as_deref(), &crsim)) {
        eprintln!("{e}");
        return ExitCode::FAILURE;
    }
    let d = dir.display();
    if only_plan {
        say!("planned {} runs in {d}", sweep.runs.len());
        say!("  GNU parallel: parallel --joblog {d}/joblog --resume < {d}/commands.txt");
        say!("  SLURM:        sbatch {d}/slurm.sh");
        say!("  then:         crsim collect {d}");
        return ExitCode::SUCCESS;
    }
    let jobs = c.jobs.unwrap_or_else(crate::sim::cores).max(1);
    let bar = ProgressBar::new(sweep.runs.len() as u64);
    if let Ok(style) = ProgressStyle::with_template("{bar:40} {pos}/{len} runs  {elapsed} elapsed, {eta} left  {msg}") {
        bar.set_style(style);
    }
    let already = sweep.runs.iter().filter(|r| is_complete(&result_path(&dir, &r.id))).count();
    bar.set_position(already as u64);
    bar.reset_eta();
    let mut failed = 0;
    let summary = run_sweep(&sweep, &dir, &crsim, jobs, |run, outcome| match outcome {
        Outcome::Done => bar.inc(1),
        Outcome::Failed(e) => {
            failed += 1;
            bar.inc(1);
            bar.set_message(format!("{failed} failed"));
            bar.println(format!("{} failed: {}", run.id, e.lines().next().unwrap_or_default()));
        }
        Outcome::Stopped => {}
    });
    bar.finish_and_clear();
    let not_run = summary.total - summary.done - summary.skipped - summary.failed.len();
    let stopped = if signals::requested() { format!(", stopped with {not_run} not run") } else { String::new() };
    say!(
        "{} runs: {} done now, {} done before, {} failed{stopped}",
        summary.total,
        summary.done,
        summary.skipped,
        summary.failed.len()
    );
    for (id, e) in &summary.failed {
        say!("  {id}: {}", e.lines().next().unwrap_or_default());
    }
    say!("results in {d}/runs; collect them with: crsim collect {d}");
    if signals::requested() {
        say!("resume with the same command: finished runs are skipped");
        ExitCode::from(INTERRUPTED)
    } else if summary.failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// `crsim collect DIR`: the tables (and the plot of `plot` = (metric, parameter) to `out`) are
/// written first, then printed, so a reader that goes away early (`| head -1`) loses nothing.
/// The exit code: [`RUNS_NOT_OK`] when some runs have no result to count, unless `partial`.
pub fn collect_command(dir: &Path, plot: Option<(String, String)>, out: Option<PathBuf>, partial: bool) -> ExitCode {
    let fail = |e: String, code: u8| {
        eprintln!("{e}");
        ExitCode::from(code)
    };
    let collected = match collect(dir) {
        Ok(c) => c,
        Err(e) => return fail(e, BAD_INPUT),
    };
    if let Err(e) = collected.write(dir) {
        return fail(e, 1);
    }
    let mut plotted = None;
    if let Some((metric, by)) = plot {
        let data = match plot_data(&collected, &metric, &by) {
            Ok(d) => d,
            Err(e) => return fail(e, BAD_INPUT),
        };
        let out = out.unwrap_or_else(|| dir.join(format!("plot-{}.png", metric.replace(['.', '[', ']', '*'], "_"))));
        let scene =
            Path::new(&collected.info.scene).file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        if let Err(e) = write_plot(&data, &metric, &by, &format!("{scene}: {metric} by {by}"), &out) {
            return fail(e, 1);
        }
        plotted = Some(out);
    }
    say!("{}", collected.status_report());
    say!();
    crate::sim::output::print_str(&collected.table());
    say!("\nwrote {0}/results.csv and {0}/summary.csv", dir.display());
    if let Some(out) = plotted {
        say!("plot: {}", out.display());
    }
    let not_ok = collected.not_ok();
    if not_ok > 0 && !partial {
        return fail(
            format!(
                "collect: {not_ok} of {} runs have no result to count (see above); the tables hold the others. \
                 Run the missing ones, or pass --partial to accept them as they are",
                collected.rows.len()
            ),
            RUNS_NOT_OK,
        );
    }
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sweeps_results_go_beside_its_file_by_default() {
        assert_eq!(default_dir(Path::new("experiments/quick.ron")), Path::new("experiments/quick-results"));
        assert_eq!(default_dir(Path::new("quick.ron")), Path::new("quick-results"));
    }
}
