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
use crate::run::files::write_atomic;
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

/// Reads the plan and every result in `dir`.
pub fn collect(dir: &Path) -> Result<Collected, String> {
    let info = read_info(dir)?;
    let runs = read_manifest(dir)?;
    let paths: Vec<ValuePath> = info
        .metrics
        .iter()
        .map(|m| ValuePath::parse(m).map_err(|e| format!("{}: metric {m}: {e}", dir.join("sweep.json").display())))
        .collect::<Result<_, _>>()?;
    let mut rows = Vec::with_capacity(runs.len());
    for run in runs {
        let path = result_path(dir, &run.id);
        let (status, metrics) = match std::fs::read(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let failed = std::fs::read(failure_path(dir, &run.id)).ok().map(|b| {
                    serde_json::from_slice::<Value>(&b)
                        .ok()
                        .and_then(|v| v.get("error").and_then(Value::as_str).map(String::from))
                        .unwrap_or_else(|| "failed (unreadable failure record)".into())
                });
                (failed.map_or(Status::Missing, Status::Failed), vec![None; paths.len()])
            }
            Err(e) => (Status::Corrupt(format!("{}: cannot read: {e}", path.display())), vec![None; paths.len()]),
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
