//! `crsim collect DIR`: every run's result merged into one tidy table (`results.csv`, a row per
//! run: id, condition, parameters, seed, status, metrics) and a summary per condition and metric
//! (`summary.csv`: count, mean, standard deviation, 95% confidence interval, min, max). Results
//! copied in from other machines' `runs/` folders merge the same way: a result is found by its
//! run id.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use serde_json::Value;

use super::plan::{PlanInfo, failure_path, read_info, read_manifest, result_path};
use super::stats::Summary;
use super::sweep::{PlannedRun, describe, value_text};
use crate::run::files::{ReadError, read_file, write_atomic};
use crate::scene::path::ValuePath;

/// The state of one planned run's result.
#[derive(Debug, Clone, PartialEq)]
pub enum Status {
    Ok,
    /// No result yet.
    Missing,
    /// `crsim sweep --jobs` recorded a failure.
    Failed(String),
    /// A result marked interrupted (the run was stopped): not counted.
    Interrupted,
    /// A result file that cannot be read as a run's metrics.
    Corrupt(String),
}

impl Status {
    pub fn label(&self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Missing => "missing",
            Status::Failed(_) => "failed",
            Status::Interrupted => "interrupted",
            Status::Corrupt(_) => "corrupt",
        }
    }
}

/// One row of the results.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub run: PlannedRun,
    pub status: Status,
    /// One per metric of the plan; none where the run has no number there.
    pub metrics: Vec<Option<f64>>,
}

/// One condition's summary of one metric.
#[derive(Debug, Clone, PartialEq)]
pub struct ConditionSummary {
    pub condition: usize,
    pub params: Vec<(String, Value)>,
    pub metric: String,
    /// Runs with a result but no number at this metric (for example a task never finished).
    pub missing: usize,
    pub summary: Option<Summary>,
}

/// Everything collected from a plan folder.
#[derive(Debug, Clone, PartialEq)]
pub struct Collected {
    pub info: PlanInfo,
    pub rows: Vec<Row>,
    pub summaries: Vec<ConditionSummary>,
}

/// A number from a metrics value: numbers as they are, `true`/`false` as 1/0.
fn number(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::Bool(b) => Some(f64::from(u8::from(*b))),
        _ => None,
    }
}

/// The largest result file read: a run's metrics are a few kilobytes, a world of 10,000 robots'
/// a few megabytes.
pub const MAX_RESULT_BYTES: u64 = 64 * 1024 * 1024;

/// Reads the plan and every result in `dir`.
pub fn collect(dir: &Path) -> Result<Collected, String> {
    let info = read_info(dir)?;
    let runs = read_manifest(dir, &info)?;
    let paths: Vec<ValuePath> = info
        .metrics
        .iter()
        .map(|m| ValuePath::parse(m).map_err(|e| format!("{}: metric {m}: {e}", dir.join("sweep.json").display())))
        .collect::<Result<_, _>>()?;
    let mut rows = Vec::with_capacity(runs.len());
    for run in runs {
        let path = result_path(dir, &run.id);
        let (status, metrics) = match read_file(&path, MAX_RESULT_BYTES) {
            Err(ReadError::Missing) => {
                let failed = match read_file(&failure_path(dir, &run.id), MAX_RESULT_BYTES) {
                    Err(ReadError::Missing) => None,
                    record => Some(
                        record
                            .ok()
                            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
                            .and_then(|v| v.get("error").and_then(Value::as_str).map(String::from))
                            .unwrap_or_else(|| "failed (unreadable failure record)".into()),
                    ),
                };
                (failed.map_or(Status::Missing, Status::Failed), vec![None; paths.len()])
            }
            Err(ReadError::Unreadable(e)) => (Status::Corrupt(e), vec![None; paths.len()]),
            Ok(bytes) => match serde_json::from_slice::<Value>(&bytes) {
                Err(e) => {
                    (Status::Corrupt(format!("{}: not a run's metrics: {e}", path.display())), vec![None; paths.len()])
                }
                Ok(v) if !v.is_object() || v.get("hash").is_none() => (
                    Status::Corrupt(format!("{}: not a run's metrics (no hash)", path.display())),
                    vec![None; paths.len()],
                ),
                Ok(v) if v.get("interrupted") == Some(&Value::Bool(true)) => {
                    (Status::Interrupted, vec![None; paths.len()])
                }
                Ok(v) => (Status::Ok, paths.iter().map(|p| p.get(&v).ok().and_then(number)).collect()),
            },
        };
        rows.push(Row { run, status, metrics });
    }
    let mut by_condition: BTreeMap<usize, Vec<&Row>> = BTreeMap::new();
    for row in &rows {
        by_condition.entry(row.run.condition).or_default().push(row);
    }
    let mut summaries = Vec::new();
    for (&condition, rows) in &by_condition {
        for (m, metric) in info.metrics.iter().enumerate() {
            let ok: Vec<&&Row> = rows.iter().filter(|r| r.status == Status::Ok).collect();
            let values: Vec<f64> = ok.iter().filter_map(|r| r.metrics[m]).collect();
            summaries.push(ConditionSummary {
                condition,
                params: rows[0].run.params.clone(),
                metric: metric.clone(),
                missing: ok.len() - values.len(),
                summary: Summary::of(&values),
            });
        }
    }
    Ok(Collected { info, rows, summaries })
}

/// A CSV field, quoted when it must be.
fn csv(field: &str) -> String {
    if field.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", field.replace('"', "\"\""))
    } else {
        field.to_string()
    }
}

fn num(x: Option<f64>) -> String {
    x.map_or_else(String::new, |x| format!("{x}"))
}

impl Collected {
    /// `results.csv`: a row per run.
    pub fn results_csv(&self) -> String {
        let mut head = vec!["id".to_string(), "condition".into()];
        head.extend(self.info.axes.iter().cloned());
        head.extend(["seed".into(), "status".into()]);
        head.extend(self.info.metrics.iter().cloned());
        let mut out = head.iter().map(|h| csv(h)).collect::<Vec<_>>().join(",") + "\n";
        for row in &self.rows {
            let mut fields = vec![row.run.id.clone(), row.run.condition.to_string()];
            fields.extend(row.run.params.iter().map(|(_, v)| value_text(v)));
            fields.extend([row.run.seed.to_string(), row.status.label().to_string()]);
            fields.extend(row.metrics.iter().map(|m| num(*m)));
            out += &(fields.iter().map(|f| csv(f)).collect::<Vec<_>>().join(",") + "\n");
        }
        out
    }

    /// `summary.csv`: a row per condition and metric.
    pub fn summary_csv(&self) -> String {
        let mut head = vec!["condition".to_string()];
        head.extend(self.info.axes.iter().cloned());
        head.extend(["metric", "n", "missing", "mean", "sd", "ci95_low", "ci95_high", "min", "max"].map(String::from));
        let mut out = head.iter().map(|h| csv(h)).collect::<Vec<_>>().join(",") + "\n";
        for s in &self.summaries {
            let mut fields = vec![s.condition.to_string()];
            fields.extend(s.params.iter().map(|(_, v)| value_text(v)));
            fields.push(s.metric.clone());
            match &s.summary {
                Some(x) => fields.extend([
                    x.n.to_string(),
                    s.missing.to_string(),
                    num(Some(x.mean)),
                    num(Some(x.sd)),
                    num(x.ci95.map(|c| x.mean - c)),
                    num(x.ci95.map(|c| x.mean + c)),
                    num(Some(x.min)),
                    num(Some(x.max)),
                ]),
                None => {
                    fields.extend(["0".to_string(), s.missing.to_string()]);
                    fields.extend(std::iter::repeat_n(String::new(), 6));
                }
            }
            out += &(fields.iter().map(|f| csv(f)).collect::<Vec<_>>().join(",") + "\n");
        }
        out
    }

    /// The summary as a table for the terminal: a line per condition, a column per metric
    /// (mean ± 95% half-width, and n).
    pub fn table(&self) -> String {
        let mut header = vec!["condition".to_string()];
        header.extend(self.info.metrics.iter().cloned());
        let mut lines: Vec<Vec<String>> = vec![header];
        let mut conditions: BTreeMap<usize, Vec<&ConditionSummary>> = BTreeMap::new();
        for s in &self.summaries {
            conditions.entry(s.condition).or_default().push(s);
        }
        for list in conditions.values() {
            let mut line = vec![describe(&list[0].params)];
            for s in list {
                line.push(match &s.summary {
                    Some(x) => {
                        let ci = x.ci95.map_or_else(String::new, |c| format!(" ± {}", round(c)));
                        let missing = if s.missing > 0 { format!(", {} without", s.missing) } else { String::new() };
                        format!("{}{ci} (n={}{missing})", round(x.mean), x.n)
                    }
                    None => format!("- (n=0, {} without)", s.missing),
                });
            }
            lines.push(line);
        }
        let widths: Vec<usize> =
            (0..lines[0].len()).map(|c| lines.iter().map(|l| l[c].chars().count()).max().unwrap_or(0)).collect();
        let mut out = String::new();
        for (i, line) in lines.iter().enumerate() {
            let cells: Vec<String> = line.iter().zip(&widths).map(|(c, w)| format!("{c:<w$}")).collect();
            let _ = writeln!(out, "{}", cells.join("  ").trim_end());
            if i == 0 {
                let _ = writeln!(out, "{}", widths.iter().map(|w| "-".repeat(*w)).collect::<Vec<_>>().join("  "));
            }
        }
        out
    }

    /// How many runs are in each state, and the problems by name.
    pub fn status_report(&self) -> String {
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for r in &self.rows {
            *counts.entry(r.status.label()).or_default() += 1;
        }
        let mut out = format!(
            "{} runs: {}",
            self.rows.len(),
            counts.iter().map(|(k, v)| format!("{v} {k}")).collect::<Vec<_>>().join(", ")
        );
        for r in &self.rows {
            match &r.status {
                Status::Failed(e) => {
                    let first = e.lines().next().unwrap_or_default();
                    let _ = write!(out, "\n  {} failed: {first}", r.run.id);
                }
                Status::Corrupt(e) => {
                    let _ = write!(out, "\n  {e}; remove it and run the sweep again to redo the run");
                }
                _ => {}
            }
        }
        out
    }

    /// How many runs have no result that counts (missing, failed, interrupted or corrupt).
    pub fn not_ok(&self) -> usize {
        self.rows.iter().filter(|r| r.status != Status::Ok).count()
    }

    /// Writes `results.csv` and `summary.csv` into `dir`.
    pub fn write(&self, dir: &Path) -> Result<(), String> {
        write_atomic(&dir.join("results.csv"), self.results_csv().as_bytes())?;
        write_atomic(&dir.join("summary.csv"), self.summary_csv().as_bytes())
    }
}

/// Four significant digits, for the terminal.
fn round(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return format!("{x}");
    }
    let digits = (3 - x.abs().log10().floor() as i32).max(0) as usize;
    format!("{x:.digits$}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A plan folder of four runs of one condition, each with a result.
    fn plan(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("crsim-collect-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("runs")).unwrap();
        let info =
            serde_json::json!({"sweep": "s.ron", "scene": "pens.ron", "axes": [], "metrics": ["steps"], "runs": 4});
        std::fs::write(dir.join("sweep.json"), info.to_string()).unwrap();
        let mut manifest = String::new();
        for seed in 1..=4 {
            let id = format!("c00-s{seed}");
            manifest += &format!("{}\n", serde_json::json!({"id": id, "condition": 0, "params": [], "seed": seed}));
            let result = serde_json::json!({"hash": "0123456789abcdef", "steps": 100 * seed});
            std::fs::write(result_path(&dir, &id), result.to_string()).unwrap();
        }
        std::fs::write(dir.join("manifest.jsonl"), manifest).unwrap();
        dir
    }

    fn manifest_lines(dir: &Path) -> Vec<String> {
        std::fs::read_to_string(dir.join("manifest.jsonl")).unwrap().lines().map(String::from).collect()
    }

    #[test]
    fn a_manifest_that_differs_from_the_plan_is_refused() {
        let dir = plan("manifest");
        assert_eq!(collect(&dir).unwrap().rows.len(), 4);
        let lines = manifest_lines(&dir);
        let manifest = dir.join("manifest.jsonl");
        // Cut to three lines, emptied, a line written twice.
        std::fs::write(&manifest, lines[..3].join("\n")).unwrap();
        let e = collect(&dir).unwrap_err();
        assert!(e.ends_with("manifest.jsonl: lists 3 runs, but the plan made 4 (sweep.json): the manifest is damaged; plan the sweep again"), "{e}");
        std::fs::write(&manifest, "").unwrap();
        assert!(collect(&dir).unwrap_err().contains("lists 0 runs, but the plan made 4"));
        std::fs::write(&manifest, [&lines[..], &lines[1..2]].concat().join("\n")).unwrap();
        assert!(collect(&dir).unwrap_err().ends_with("manifest.jsonl:5: run c00-s2 is listed again (first on line 2)"));
        std::fs::remove_dir_all(&dir).ok();
    }

    /// A FIFO among the results blocked collect (and a resuming sweep) forever, and one linked
    /// to /dev/zero was read until memory ran out: each is a corrupt result now, not read.
    #[test]
    fn a_result_that_is_not_a_regular_file_is_corrupt_and_not_read() {
        let dir = plan("fifo");
        let (fifo, zero) = (result_path(&dir, "c00-s1"), result_path(&dir, "c00-s2"));
        std::fs::remove_file(&fifo).unwrap();
        assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
        std::fs::remove_file(&zero).unwrap();
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        let c = collect(&dir).unwrap();
        let status: Vec<&Status> = c.rows.iter().map(|r| &r.status).collect();
        let not_regular = |p: &Path| Status::Corrupt(format!("{}: cannot read: not a regular file", p.display()));
        assert_eq!(status, [&not_regular(&fifo), &not_regular(&zero), &Status::Ok, &Status::Ok]);
        assert!(!super::super::runner::is_complete(&fifo) && !super::super::runner::is_complete(&zero));
        assert_eq!(c.not_ok(), 2);
        std::fs::remove_dir_all(&dir).ok();
    }
}
