//! The sweep file: a scene, the values to change (axes, crossed or zipped), the seeds, how long
//! each run goes and which metrics to collect; and its expansion into a plan of runs.
//!
//! ```ron
//! Sweep(
//!     scene: "../scenes/pens.ron",          // relative to this file
//!     set: ["robots[*].battery.capacity=40"], // the same for every run
//!     axes: [
//!         (path: "comms.probability", values: [1.0, 0.7, 0.4]),
//!         (path: "arena.width", range: (from: 5.0, to: 7.0, step: 1.0)),
//!     ],
//!     combine: Cross,                         // or Zip: the i-th values of every axis together
//!     seeds: Count(20),                       // seeds 1..=20, or List([3, 5, 8])
//!     steps: 30000,                           // the most steps a run takes
//!     until: PensBoxed,                       // or Explored; absent: run all the steps
//!     metrics: ["collect.all_boxed_s", "collect.duplicate_pursuit_s"],
//! )
//! ```

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::run::until::Until;
use crate::scene::overrides::SetValue;
use crate::scene::path::ValuePath;
use crate::scene::{SceneOverrides, load_scene_file_with};

/// A sweep file as written.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename = "Sweep")]
pub struct SweepFile {
    /// The scene, relative to the sweep file.
    pub scene: String,
    /// Overrides for every run, as `--set` takes them.
    #[serde(default)]
    pub set: Vec<String>,
    /// The parameters that change; none gives one condition.
    #[serde(default)]
    pub axes: Vec<Axis>,
    #[serde(default)]
    pub combine: Combine,
    pub seeds: Seeds,
    pub steps: u64,
    #[serde(default)]
    pub until: Option<Until>,
    /// Paths into each run's metrics JSON (`crsim run --out`).
    pub metrics: Vec<String>,
}

/// One parameter: a scene path and its values, listed or as a range.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Axis {
    pub path: String,
    #[serde(default)]
    pub values: Vec<Value>,
    #[serde(default)]
    pub range: Option<Range>,
}

/// `from`, `from + step`, ... up to and including `to`.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Range {
    pub from: f64,
    pub to: f64,
    pub step: f64,
}

/// How the axes combine into conditions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
pub enum Combine {
    /// Every combination of values (the axes' lengths multiplied).
    #[default]
    Cross,
    /// The i-th value of every axis together (all axes as long as each other).
    Zip,
}

/// The seeds each condition runs with.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
pub enum Seeds {
    /// Seeds 1, 2, ... N.
    Count(u64),
    List(Vec<u64>),
}

/// One run of a plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlannedRun {
    pub id: String,
    /// The condition's index, from 0.
    pub condition: usize,
    /// The axis values of the condition, in axis order (path, value).
    pub params: Vec<(String, Value)>,
    pub seed: u64,
}

/// A sweep, checked and expanded.
#[derive(Debug, Clone, PartialEq)]
pub struct Sweep {
    /// The sweep file, as given.
    pub file: PathBuf,
    pub scene: PathBuf,
    pub set: Vec<String>,
    pub axis_paths: Vec<String>,
    pub steps: u64,
    pub until: Option<Until>,
    pub metrics: Vec<String>,
    pub runs: Vec<PlannedRun>,
}

/// The most runs one sweep plans.
pub const MAX_RUNS: usize = 1_000_000;

/// Reads, checks and expands a sweep file. The scene is loaded with every condition's overrides,
/// so a path that does not exist or a value of the wrong type is reported before any run.
pub fn load_sweep(path: &Path) -> Result<Sweep, String> {
    let shown = path.display().to_string();
    // As a scene file is read: a regular file of at most 16 MiB, UTF-8.
    let text = crate::scene::load::read_text(path).map_err(|e| e.to_string())?;
    let file: SweepFile = ron::Options::default()
        .with_default_extension(ron::extensions::Extensions::IMPLICIT_SOME)
        .from_str(&text)
        .map_err(|e| format!("{shown}:{}:{}: {}", e.span.start.line, e.span.start.col, e.code))?;
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let scene = dir.join(&file.scene);
    let sweep = expand(&file, path, &scene).map_err(|e| format!("{shown}: {e}"))?;
    // Every condition must load: the scene exists, every path exists and every value fits.
    let mut seen = BTreeSet::new();
    for run in &sweep.runs {
        if !seen.insert(run.condition) {
            continue;
        }
        let overrides = overrides_of(&sweep, run).map_err(|e| format!("{shown}: {e}"))?;
        load_scene_file_with(&scene, &overrides).map_err(|e| {
            format!("{shown}: condition {} ({}) does not load:\n{e}", run.condition, describe(&run.params))
        })?;
    }
    Ok(sweep)
}

/// The condition's parameters as people read them: `comms.probability=0.7, comms.link=true`.
pub fn describe(params: &[(String, Value)]) -> String {
    if params.is_empty() {
        return "no parameters".into();
    }
    params.iter().map(|(p, v)| format!("{p}={}", value_text(v))).collect::<Vec<_>>().join(", ")
}

/// A value as `--set` reads it back: numbers and `true`/`false` as they are, names of variants
/// bare, other text in quotes, lists in brackets.
pub fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) if is_identifier(s) && s != "true" && s != "false" => s.clone(),
        Value::Array(items) => format!("[{}]", items.iter().map(value_text).collect::<Vec<_>>().join(", ")),
        other => other.to_string(),
    }
}

fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The overrides of one run: the sweep's fixed ones, then the condition's.
pub fn overrides_of(sweep: &Sweep, run: &PlannedRun) -> Result<SceneOverrides, String> {
    let mut sets = Vec::new();
    for s in &sweep.set {
        sets.push(s.parse::<SetValue>().map_err(|e| format!("set: {e}"))?);
    }
    for (path, value) in &run.params {
        let path = ValuePath::parse(path).map_err(|e| format!("axis {path}: {e}"))?;
        sets.push(SetValue { path, value: value.clone() });
    }
    Ok(SceneOverrides { sets, ..Default::default() })
}

/// The checks that need no scene, and the expansion into runs.
fn expand(file: &SweepFile, path: &Path, scene: &Path) -> Result<Sweep, String> {
    if file.steps == 0 {
        return Err("steps: must be at least 1".into());
    }
    if file.metrics.is_empty() {
        return Err("metrics: name at least one path into the run's metrics, e.g. \"sim_time_s\"".into());
    }
    for m in &file.metrics {
        ValuePath::parse(m).map_err(|e| format!("metrics: \"{m}\": {e}"))?;
    }
    for s in &file.set {
        s.parse::<SetValue>().map_err(|e| format!("set: {e}"))?;
    }
    let seeds: Vec<u64> = match &file.seeds {
        Seeds::Count(0) => return Err("seeds: Count(0) gives no runs".into()),
        Seeds::Count(n) if *n > MAX_RUNS as u64 => {
            return Err(format!("seeds: Count({n}) is more than {MAX_RUNS} runs, the most one sweep holds"));
        }
        Seeds::Count(n) => (1..=*n).collect(),
        Seeds::List(list) => {
            if list.is_empty() {
                return Err("seeds: the list is empty".into());
            }
            let mut seen = BTreeSet::new();
            for s in list {
                if !seen.insert(s) {
                    return Err(format!("seeds: {s} is listed twice (each seed once per condition)"));
                }
            }
            list.clone()
        }
    };
    let mut axes: Vec<(String, Vec<Value>)> = Vec::new();
    for (i, axis) in file.axes.iter().enumerate() {
        let name = format!("axes[{i}] ({})", axis.path);
        ValuePath::parse(&axis.path).map_err(|e| format!("{name}: {e}"))?;
        if axes.iter().any(|(p, _)| *p == axis.path) {
            return Err(format!("{name}: this path has an axis already"));
        }
        let values = match (&axis.values[..], axis.range) {
            ([], None) => return Err(format!("{name}: no values (give `values: [...]` or `range: (from, to, step)`)")),
            ([_, ..], Some(_)) => return Err(format!("{name}: give `values` or `range`, not both")),
            (values, None) => values.to_vec(),
            ([], Some(r)) => range_values(r).map_err(|e| format!("{name}: range: {e}"))?,
        };
        axes.push((axis.path.clone(), values));
    }
    // Counted before the conditions are built: many axes of many values multiply.
    let crossed = axes.iter().fold(1usize, |n, (_, v)| n.saturating_mul(v.len()));
    if matches!(file.combine, Combine::Cross) && crossed.saturating_mul(seeds.len()) > MAX_RUNS {
        return Err(format!("the axes and seeds make more than {MAX_RUNS} runs: at most {MAX_RUNS} in one sweep"));
    }
    let conditions: Vec<Vec<(String, Value)>> = match file.combine {
        _ if axes.is_empty() => vec![Vec::new()],
        Combine::Zip => {
            let n = axes[0].1.len();
            if let Some((p, v)) = axes.iter().find(|(_, v)| v.len() != n) {
                return Err(format!(
                    "combine: Zip needs axes of one length: {} has {n} values, {p} has {}",
                    axes[0].0,
                    v.len()
                ));
            }
            (0..n).map(|i| axes.iter().map(|(p, v)| (p.clone(), v[i].clone())).collect()).collect()
        }
        Combine::Cross => {
            let mut out: Vec<Vec<(String, Value)>> = vec![Vec::new()];
            for (p, values) in &axes {
                out = out
                    .into_iter()
                    .flat_map(|c| {
                        values.iter().map(move |v| {
                            let mut c = c.clone();
                            c.push((p.clone(), v.clone()));
                            c
                        })
                    })
                    .collect();
            }
            out
        }
    };
    let total = conditions.len().saturating_mul(seeds.len());
    if total > MAX_RUNS {
        return Err(format!("{total} runs: at most {MAX_RUNS} in one sweep"));
    }
    let width = (conditions.len().max(1) - 1).to_string().len().max(2);
    let mut runs = Vec::with_capacity(total);
    for (c, params) in conditions.into_iter().enumerate() {
        for &seed in &seeds {
            runs.push(PlannedRun { id: format!("c{c:0width$}-s{seed}"), condition: c, params: params.clone(), seed });
        }
    }
    Ok(Sweep {
        file: path.to_path_buf(),
        scene: scene.to_path_buf(),
        set: file.set.clone(),
        axis_paths: axes.into_iter().map(|(p, _)| p).collect(),
        steps: file.steps,
        until: file.until,
        metrics: file.metrics.clone(),
        runs,
    })
}

/// The most values one range may give.
const MAX_RANGE_VALUES: u64 = 100_000;

fn range_values(r: Range) -> Result<Vec<Value>, String> {
    if !(r.from.is_finite() && r.to.is_finite() && r.step.is_finite()) {
        return Err("from, to and step must be numbers".into());
    }
    if r.step <= 0.0 {
        return Err(format!("step must be above 0, not {}", r.step));
    }
    if r.to < r.from {
        return Err(format!("to ({}) is below from ({})", r.to, r.from));
    }
    // Counted as a float first: a count beyond u64 (3 m in steps of 1e-20) saturates the cast,
    // and the 1 added after it would wrap to no values at all.
    let count = ((r.to - r.from) / r.step + 1e-9).floor() + 1.0;
    if !count.is_finite() || count > MAX_RANGE_VALUES as f64 {
        return Err(format!("{count:.0} values: at most {MAX_RANGE_VALUES}"));
    }
    let n = count as u64;
    let whole = [r.from, r.to, r.step].iter().all(|x| x.fract() == 0.0);
    Ok((0..n)
        .map(|i| {
            // Rounded to 12 significant digits: 0.1 + 2 * 0.1 is 0.3, not 0.30000000000000004.
            let x = r.from + i as f64 * r.step;
            let x: f64 = format!("{x:.12e}").parse().unwrap_or(x);
            if whole { Value::from(x as i64) } else { Value::from(x) }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn file(text: &str) -> SweepFile {
        ron::Options::default()
            .with_default_extension(ron::extensions::Extensions::IMPLICIT_SOME)
            .from_str(text)
            .unwrap()
    }

    fn expanded(text: &str) -> Result<Sweep, String> {
        expand(&file(text), Path::new("s.ron"), Path::new("scene.ron"))
    }

    #[test]
    fn axes_cross_or_zip_into_conditions_times_seeds() {
        let s = expanded(
            r#"Sweep(scene: "x.ron", axes: [(path: "comms.probability", values: [1.0, 0.5]),
                (path: "arena.width", range: (from: 5.0, to: 7.0, step: 1.0))],
                seeds: Count(2), steps: 100, metrics: ["steps"])"#,
        )
        .unwrap();
        assert_eq!(s.runs.len(), 2 * 3 * 2);
        assert_eq!(s.runs[0].id, "c00-s1");
        assert_eq!(s.runs[0].params, vec![("comms.probability".into(), json!(1.0)), ("arena.width".into(), json!(5))]);
        assert_eq!(s.runs[11].id, "c05-s2");
        assert_eq!(s.runs[11].params, vec![("comms.probability".into(), json!(0.5)), ("arena.width".into(), json!(7))]);
        let z = expanded(
            r#"Sweep(scene: "x.ron", combine: Zip, axes: [(path: "comms.probability", values: [1.0, 0.4, 1.0]),
                (path: "comms.link", values: [true, true, false])], seeds: List([4, 9]), steps: 10,
                until: PensBoxed, metrics: ["steps"])"#,
        )
        .unwrap();
        let ids: Vec<&str> = z.runs.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids, ["c00-s4", "c00-s9", "c01-s4", "c01-s9", "c02-s4", "c02-s9"]);
        assert_eq!(describe(&z.runs[4].params), "comms.probability=1.0, comms.link=false");
        assert_eq!(z.until, Some(Until::PensBoxed));
    }

    #[test]
    fn ranges_land_on_round_values() {
        let v = range_values(Range { from: 0.1, to: 0.5, step: 0.1 }).unwrap();
        assert_eq!(v, vec![json!(0.1), json!(0.2), json!(0.3), json!(0.4), json!(0.5)]);
        assert!(range_values(Range { from: 1.0, to: 0.0, step: 0.1 }).unwrap_err().contains("below"));
        assert!(range_values(Range { from: 0.0, to: 1.0, step: 0.0 }).unwrap_err().contains("above 0"));
        // More values than u64 counts: refused, not wrapped to none.
        let e = range_values(Range { from: 0.0, to: 3.0, step: 1e-20 }).unwrap_err();
        assert_eq!(e, "300000000000000000000 values: at most 100000");
        assert!(range_values(Range { from: 0.0, to: 1e300, step: 1e-300 }).unwrap_err().contains("at most 100000"));
    }

    #[test]
    fn bad_sweeps_are_named() {
        let base = |axes: &str, seeds: &str| {
            format!(r#"Sweep(scene: "x.ron", axes: [{axes}], seeds: {seeds}, steps: 10, metrics: ["steps"])"#)
        };
        let e = expanded(&base(r#"(path: "comms.probability", values: [])"#, "Count(3)")).unwrap_err();
        assert_eq!(e, "axes[0] (comms.probability): no values (give `values: [...]` or `range: (from, to, step)`)");
        let e = expanded(&base("", "List([1, 2, 1])")).unwrap_err();
        assert_eq!(e, "seeds: 1 is listed twice (each seed once per condition)");
        let e = expanded(&base("", "Count(0)")).unwrap_err();
        assert_eq!(e, "seeds: Count(0) gives no runs");
        // Refused before anything that size is built.
        let e = expanded(&base("", "Count(18446744073709551615)")).unwrap_err();
        assert!(e.contains("is more than 1000000 runs"), "{e}");
        let axis = |p: &str| format!(r#"(path: "{p}", range: (from: 0.0, to: 99999.0, step: 1.0))"#);
        let many = [axis("a.b"), axis("a.c"), axis("a.d"), axis("a.e")].join(", ");
        let e = expanded(&base(&many, "Count(1)")).unwrap_err();
        assert!(e.contains("more than 1000000 runs: at most 1000000"), "{e}");
        let e = expanded(&base(r#"(path: "a..b", values: [1])"#, "Count(1)")).unwrap_err();
        assert!(e.starts_with("axes[0] (a..b): a field name was expected"), "{e}");
        let e = expanded(
            r#"Sweep(scene: "x.ron", combine: Zip, axes: [(path: "a", values: [1, 2]), (path: "b", values: [1])],
                seeds: Count(1), steps: 10, metrics: ["steps"])"#,
        )
        .unwrap_err();
        assert_eq!(e, "combine: Zip needs axes of one length: a has 2 values, b has 1");
    }

    #[test]
    fn values_are_written_back_as_set_reads_them() {
        for v in [json!(0.7), json!(3), json!(true), json!("Random"), json!("two words"), json!([1.0, 2.0])] {
            assert_eq!(crate::scene::path::parse_value(&value_text(&v)), v, "{v}");
        }
    }
}
