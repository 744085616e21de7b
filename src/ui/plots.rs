//! The plots window (`P`): time series of the run — pens boxed, each robot's battery, explorer
//! coverage, collisions, the radio's delivery ratio and latency — sampled over simulated time.
//! Pick what is shown; export what is shown as CSV or PNG. Each robot's curve has its colour in
//! the world view.

use std::collections::HashMap;
use std::path::PathBuf;

use bevy::prelude::*;
use bevy_egui::{EguiContexts, EguiPrimaryContextPass, egui};
use egui_plot::{Legend, Line, Plot, PlotPoints};

use crate::comms::Radio;
use crate::control::explore::{Explorer, GroundTruth, ground_truth};
use crate::experiment::plot::{TimePanel, write_time_series};
use crate::render::picture::robot_rgb;
use crate::robot::{Battery, Odometry, Robot};
use crate::scene::ActiveScene;
use crate::sim::{PerEnv, SimTime};
use crate::world::{Boxed, Pen};

/// Whether the plots window is open.
#[derive(Resource, Default)]
pub struct PlotsOpen(pub bool);

/// What a column measures; each group is one plot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Group {
    Pens,
    Battery,
    Coverage,
    Collisions,
    Delivery,
    Latency,
}

impl Group {
    pub const ALL: [Group; 6] =
        [Group::Pens, Group::Battery, Group::Coverage, Group::Collisions, Group::Delivery, Group::Latency];

    pub fn title(self) -> &'static str {
        match self {
            Group::Pens => "pens boxed",
            Group::Battery => "battery level",
            Group::Coverage => "explorer coverage",
            Group::Collisions => "collisions",
            Group::Delivery => "radio delivery ratio",
            Group::Latency => "radio mean latency (steps)",
        }
    }
}

/// One measured quantity over time.
#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    pub name: String,
    pub group: Group,
    pub colour: [u8; 3],
    /// One value per sample; NaN before the column existed.
    pub values: Vec<f64>,
}

/// Samples of the run over simulated time. When full, every other sample is dropped and the
/// interval doubles: a long run keeps its whole history, more coarsely.
#[derive(Resource, Debug, Clone)]
pub struct Series {
    pub t: Vec<f64>,
    pub columns: Vec<Column>,
    /// Simulated seconds between samples.
    pub every: f64,
    capacity: usize,
    first_every: f64,
}

impl Default for Series {
    fn default() -> Self {
        Self::new(0.2, 2000)
    }
}

impl Series {
    pub fn new(every: f64, capacity: usize) -> Self {
        Self { t: Vec::new(), columns: Vec::new(), every, capacity: capacity.max(4), first_every: every }
    }

    /// Forgets everything (a new scene, or time going back).
    pub fn clear(&mut self) {
        *self = Self::new(self.first_every, self.capacity);
    }

    /// Whether a sample is due at simulated time `t`.
    pub fn due(&self, t: f64) -> bool {
        self.t.last().is_none_or(|last| t - last >= self.every - 1e-9)
    }

    /// Adds a sample: a value per column (by name); columns not given get NaN.
    pub fn push(&mut self, t: f64, values: &[(String, Group, [u8; 3], f64)]) {
        let n = self.t.len();
        self.t.push(t);
        for (name, group, colour, v) in values {
            let column = match self.columns.iter().position(|c| c.name == *name && c.group == *group) {
                Some(i) => &mut self.columns[i],
                None => {
                    self.columns.push(Column {
                        name: name.clone(),
                        group: *group,
                        colour: *colour,
                        values: vec![f64::NAN; n],
                    });
                    self.columns.last_mut().expect("just pushed")
                }
            };
            column.values.push(*v);
        }
        for c in &mut self.columns {
            if c.values.len() < n + 1 {
                c.values.push(f64::NAN);
            }
        }
        if self.t.len() >= self.capacity {
            self.decimate();
        }
    }

    fn decimate(&mut self) {
        let keep = |v: &mut Vec<f64>| *v = v.iter().copied().step_by(2).collect();
        keep(&mut self.t);
        for c in &mut self.columns {
            keep(&mut c.values);
        }
        self.every *= 2.0;
    }

    /// The columns of the shown groups, as CSV: `t_s` and one column per series, named
    /// `group: name`.
    pub fn to_csv(&self, shown: &[Group]) -> String {
        let cols: Vec<&Column> = self.columns.iter().filter(|c| shown.contains(&c.group)).collect();
        let quote = |s: &str| {
            if s.contains([',', '"', '\n']) { format!("\"{}\"", s.replace('"', "\"\"")) } else { s.to_string() }
        };
        let mut out = String::from("t_s");
        for c in &cols {
            out.push(',');
            out.push_str(&quote(&format!("{}: {}", c.group.title(), c.name)));
        }
        out.push('\n');
        for (i, t) in self.t.iter().enumerate() {
            out.push_str(&format!("{t:.3}"));
            for c in &cols {
                out.push(',');
                let v = c.values[i];
                if v.is_finite() {
                    out.push_str(&format!("{v}"));
                }
            }
            out.push('\n');
        }
        out
    }

    /// The shown groups as panels of curves, for the PNG.
    pub fn panels(&self, shown: &[Group]) -> Vec<TimePanel> {
        Group::ALL
            .into_iter()
            .filter(|g| shown.contains(g))
            .filter_map(|g| {
                let curves: Vec<_> = self
                    .columns
                    .iter()
                    .filter(|c| c.group == g)
                    .map(|c| (c.name.clone(), c.colour, self.t.iter().copied().zip(c.values.iter().copied()).collect()))
                    .collect();
                (!curves.is_empty()).then(|| TimePanel { title: g.title().to_string(), curves })
            })
            .collect()
    }
}

/// What the window shows and where it exports.
#[derive(Resource, Debug, Clone)]
pub struct PlotsView {
    pub shown: Vec<Group>,
    pub csv: String,
    pub png: String,
    pub message: Option<(bool, String)>,
}

impl Default for PlotsView {
    fn default() -> Self {
        Self {
            shown: vec![Group::Pens, Group::Battery, Group::Coverage, Group::Collisions],
            csv: "plots.csv".into(),
            png: "plots.png".into(),
            message: None,
        }
    }
}

/// A robot's battery curve is kept for scenes of up to this many robots (beyond, their mean).
pub const BATTERY_CURVES_UP_TO: usize = 24;

pub fn plugin(app: &mut App) {
    app.init_resource::<PlotsOpen>()
        .init_resource::<Series>()
        .init_resource::<PlotsView>()
        .add_systems(Update, sample)
        .add_systems(EguiPrimaryContextPass, plots_window.after(super::control_panel));
}

/// The ground truth each explorer's coverage is measured against, per scene load.
#[derive(Default)]
struct Truths {
    generation: u64,
    of: HashMap<Entity, GroundTruth>,
}

fn sample(
    time: Res<SimTime>,
    active: Option<Res<ActiveScene>>,
    radio: Res<PerEnv<Radio>>,
    robots: Query<(&Name, &Robot, &Battery, &Odometry)>,
    explorers: Query<(Entity, &Name, &Robot, &Explorer)>,
    pens: Query<Has<Boxed>, With<Pen>>,
    mut series: ResMut<Series>,
    mut truths: Local<Truths>,
) {
    let Some(active) = active else { return };
    let now = time.seconds();
    if truths.generation != active.generation || series.t.last().is_some_and(|t| now < *t) {
        truths.generation = active.generation;
        truths.of.clear();
        series.clear();
    }
    if !series.due(now) {
        return;
    }
    let mut values = Vec::new();
    let boxed = pens.iter().filter(|b| *b).count();
    values.push(("boxed".to_string(), Group::Pens, [40, 90, 200], boxed as f64));
    let n = robots.iter().len();
    let mut collisions = 0u64;
    let mut charge = 0.0;
    for (name, robot, battery, odo) in &robots {
        collisions += u64::from(odo.collisions);
        let level = (battery.charge / battery.capacity.max(1e-6)) as f64;
        charge += level;
        if n <= BATTERY_CURVES_UP_TO {
            values.push((name.to_string(), Group::Battery, robot_rgb(robot.index), level));
        }
    }
    if n > BATTERY_CURVES_UP_TO {
        values.push(("mean".to_string(), Group::Battery, [90, 90, 90], charge / n as f64));
    }
    values.push(("all robots".to_string(), Group::Collisions, [200, 50, 40], collisions as f64));
    for (e, name, robot, ex) in &explorers {
        let truth = truths
            .of
            .entry(e)
            .or_insert_with(|| ground_truth(&active.scene, ex.cell_size, ex.map.cols, ex.map.rows, ex.map.den));
        values.push((name.to_string(), Group::Coverage, robot_rgb(robot.index), ex.coverage(truth)));
    }
    let stats = &radio.only().0.stats;
    values.push(("delivery ratio".to_string(), Group::Delivery, [200, 60, 60], stats.delivery_ratio()));
    values.push(("mean latency".to_string(), Group::Latency, [60, 110, 200], stats.mean_latency()));
    series.push(now, &values);
}

fn plots_window(
    mut contexts: EguiContexts,
    mut open: ResMut<PlotsOpen>,
    series: Res<Series>,
    mut view: ResMut<PlotsView>,
) -> Result {
    if !open.0 {
        return Ok(());
    }
    let ctx = contexts.ctx_mut()?;
    let mut still_open = true;
    egui::Window::new("Plots")
        .open(&mut still_open)
        .default_size([460.0, 560.0])
        .default_pos(egui::pos2(ctx.viewport_rect().width() - 490.0, 30.0))
        .show(ctx, |ui| {
            ui.horizontal_wrapped(|ui| {
                for g in Group::ALL {
                    let mut on = view.shown.contains(&g);
                    if ui.checkbox(&mut on, g.title()).changed() {
                        view.shown.retain(|x| *x != g);
                        if on {
                            view.shown.push(g);
                            view.shown.sort();
                        }
                    }
                }
            });
            export_row(ui, &series, &mut view);
            ui.label(
                egui::RichText::new(format!(
                    "{} samples, one every {:.2} s of simulated time; drag to pan, double-click to reset",
                    series.t.len(),
                    series.every
                ))
                .small(),
            );
            egui::ScrollArea::vertical().show(ui, |ui| {
                let shown = view.shown.clone();
                for g in shown {
                    let cols: Vec<&Column> = series.columns.iter().filter(|c| c.group == g).collect();
                    if cols.is_empty() {
                        continue;
                    }
                    ui.label(egui::RichText::new(g.title()).strong());
                    // The wheel scrolls the window, not the plot.
                    Plot::new(("run-plot", g as u8))
                        .height(150.0)
                        .legend(Legend::default())
                        .link_axis("run-plots", [true, false])
                        .include_y(0.0)
                        .allow_scroll(false)
                        .allow_zoom(false)
                        .show(ui, |plot| {
                            for c in cols {
                                let points: Vec<[f64; 2]> = series
                                    .t
                                    .iter()
                                    .zip(&c.values)
                                    .filter(|(_, v)| v.is_finite())
                                    .map(|(t, v)| [*t, *v])
                                    .collect();
                                let [r, gr, b] = c.colour;
                                plot.line(
                                    Line::new(c.name.clone(), PlotPoints::from(points))
                                        .color(egui::Color32::from_rgb(r, gr, b)),
                                );
                            }
                        });
                }
            });
        });
    open.0 = still_open;
    Ok(())
}

fn export_row(ui: &mut egui::Ui, series: &Series, view: &mut PlotsView) {
    ui.horizontal(|ui| {
        ui.add(egui::TextEdit::singleline(&mut view.csv).desired_width(120.0));
        if ui.button("Export CSV").clicked() {
            let path = PathBuf::from(view.csv.trim());
            view.message = Some(match crate::run::files::write_atomic(&path, series.to_csv(&view.shown).as_bytes()) {
                Ok(()) => (true, format!("wrote {} ({} rows)", path.display(), series.t.len())),
                Err(e) => (false, e),
            });
        }
        ui.add(egui::TextEdit::singleline(&mut view.png).desired_width(120.0));
        if ui.button("Export PNG").clicked() {
            let path = PathBuf::from(view.png.trim());
            let panels = series.panels(&view.shown);
            view.message = Some(match write_time_series(&panels, "crsim run", &path) {
                Ok(()) => (true, format!("wrote {}", path.display())),
                Err(e) => (false, e),
            });
        }
    });
    if let Some((ok, m)) = &view.message {
        let colour = if *ok { ui.visuals().text_color() } else { super::palette::ERROR };
        ui.label(egui::RichText::new(m).small().color(colour));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(name: &str, group: Group, x: f64) -> (String, Group, [u8; 3], f64) {
        (name.to_string(), group, [0, 0, 0], x)
    }

    #[test]
    fn columns_appear_when_first_given_and_are_blank_before() {
        let mut s = Series::new(0.5, 100);
        s.push(0.0, &[v("boxed", Group::Pens, 0.0)]);
        assert!(!s.due(0.2) && s.due(0.5));
        s.push(0.5, &[v("boxed", Group::Pens, 1.0), v("r1", Group::Battery, 0.9)]);
        s.push(1.0, &[v("boxed", Group::Pens, 2.0)]);
        assert_eq!(s.t, [0.0, 0.5, 1.0]);
        let r1 = &s.columns[1];
        assert!(r1.values[0].is_nan() && r1.values[1] == 0.9 && r1.values[2].is_nan());
        assert_eq!(
            s.to_csv(&[Group::Pens, Group::Battery]),
            "t_s,pens boxed: boxed,battery level: r1\n0.000,0,\n0.500,1,0.9\n1.000,2,\n"
        );
        assert_eq!(s.to_csv(&[Group::Battery]), "t_s,battery level: r1\n0.000,\n0.500,0.9\n1.000,\n");
    }

    #[test]
    fn a_full_series_keeps_every_other_sample_and_samples_half_as_often() {
        let mut s = Series::new(0.1, 10);
        for i in 0..10 {
            s.push(i as f64 * 0.1, &[v("x", Group::Pens, i as f64)]);
        }
        assert_eq!(s.t.len(), 5);
        assert_eq!(s.columns[0].values, [0.0, 2.0, 4.0, 6.0, 8.0]);
        assert!((s.every - 0.2).abs() < 1e-12);
        assert!(!s.due(0.9) && s.due(1.0));
        s.clear();
        assert!(s.t.is_empty() && s.columns.is_empty() && (s.every - 0.1).abs() < 1e-12);
    }

    #[test]
    fn exported_png_and_csv_are_written() {
        let dir = std::env::temp_dir().join(format!("crsim-plots-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut s = Series::new(0.1, 100);
        for i in 0..50 {
            let t = i as f64 * 0.1;
            s.push(t, &[v("boxed", Group::Pens, (i / 10) as f64), v("r1", Group::Battery, 1.0 - t / 10.0)]);
        }
        let png = dir.join("p.png");
        write_time_series(&s.panels(&[Group::Pens, Group::Battery]), "test", &png).unwrap();
        let bytes = std::fs::read(&png).unwrap();
        assert_eq!(&bytes[1..4], b"PNG");
        assert!(write_time_series(&s.panels(&[Group::Coverage]), "test", &png).is_err(), "nothing shown");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
