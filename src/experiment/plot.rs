//! `crsim collect DIR --plot METRIC --by PARAM`: a PNG of one metric's mean per condition with
//! its 95% confidence band, PARAM along x and one line per combination of the other parameters.
//! Drawn on the CPU into a pixel buffer (plotters) and written as PNG: no GPU, no system fonts.

use std::path::Path;
use std::sync::Once;

use plotters::prelude::*;
use serde_json::Value;

use super::collect::Collected;
use super::sweep::{describe, value_text};
use crate::run::files::write_atomic;

const WIDTH: u32 = 900;
const HEIGHT: u32 = 560;

/// One line of the plot: (x, mean, low, high) per condition.
#[derive(Debug, Clone, PartialEq)]
pub struct PlotSeries {
    pub label: String,
    pub points: Vec<(f64, f64, f64, f64)>,
}

/// What the plot shows, before drawing: the series and the x axis's category names (empty when
/// the parameter is numeric).
#[derive(Debug, Clone, PartialEq)]
pub struct PlotData {
    pub series: Vec<PlotSeries>,
    pub categories: Vec<String>,
}

/// The series of `metric` by parameter `by`.
pub fn plot_data(c: &Collected, metric: &str, by: &str) -> Result<PlotData, String> {
    if !c.info.metrics.iter().any(|m| m == metric) {
        return Err(format!(
            "--plot {metric}: not a metric of this sweep (its metrics: {})",
            c.info.metrics.join(", ")
        ));
    }
    let Some(axis) = c.info.axes.iter().position(|a| a == by) else {
        return Err(format!(
            "--by {by}: not a parameter of this sweep (its parameters: {})",
            if c.info.axes.is_empty() { "none".to_string() } else { c.info.axes.join(", ") }
        ));
    };
    let rows: Vec<_> = c.summaries.iter().filter(|s| s.metric == metric).collect();
    let numeric = rows.iter().all(|s| s.params[axis].1.is_number());
    let mut categories: Vec<String> = Vec::new();
    if !numeric {
        for s in &rows {
            let name = value_text(&s.params[axis].1);
            if !categories.contains(&name) {
                categories.push(name);
            }
        }
    }
    let mut series: Vec<PlotSeries> = Vec::new();
    for s in &rows {
        let Some(summary) = s.summary else { continue };
        let x = match &s.params[axis].1 {
            Value::Number(n) if numeric => n.as_f64().unwrap_or(0.0),
            v => categories.iter().position(|c| *c == value_text(v)).unwrap_or(0) as f64,
        };
        let others: Vec<(String, Value)> =
            s.params.iter().enumerate().filter(|(i, _)| *i != axis).map(|(_, p)| p.clone()).collect();
        let label = if others.is_empty() { metric.to_string() } else { describe(&others) };
        let half = summary.ci95.unwrap_or(0.0);
        let point = (x, summary.mean, summary.mean - half, summary.mean + half);
        match series.iter_mut().find(|l| l.label == label) {
            Some(l) => l.points.push(point),
            None => series.push(PlotSeries { label, points: vec![point] }),
        }
    }
    if series.is_empty() {
        return Err(format!("--plot {metric}: no run has a number there yet"));
    }
    for l in &mut series {
        l.points.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    Ok(PlotData { series, categories })
}

fn register_font() {
    static FONT: Once = Once::new();
    FONT.call_once(|| {
        let _ = plotters::style::register_font("sans-serif", FontStyle::Normal, epaint_default_fonts::UBUNTU_LIGHT);
    });
}

const COLOURS: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(255, 127, 14),
    RGBColor(23, 190, 207),
];

/// Draws the plot and writes it to `out` as PNG.
pub fn write_plot(data: &PlotData, metric: &str, by: &str, title: &str, out: &Path) -> Result<(), String> {
    register_font();
    let mut pixels = vec![255u8; (WIDTH * HEIGHT * 3) as usize];
    draw(data, metric, by, title, &mut pixels).map_err(|e| format!("cannot draw the plot: {e}"))?;
    write_png(&pixels, WIDTH, HEIGHT, out)
}

/// One panel of a time-series figure: its title and its curves (label, colour, points).
pub struct TimePanel {
    pub title: String,
    pub curves: Vec<(String, [u8; 3], Vec<(f64, f64)>)>,
}

/// Time series stacked in panels over a shared time axis (the app's plots, exported), written
/// to `out` as PNG.
pub fn write_time_series(panels: &[TimePanel], title: &str, out: &Path) -> Result<(), String> {
    if panels.is_empty() {
        return Err("nothing to plot: choose at least one series".into());
    }
    register_font();
    let height = 80 + 240 * panels.len() as u32;
    let mut pixels = vec![255u8; (WIDTH * height * 3) as usize];
    draw_time_series(panels, title, &mut pixels, height).map_err(|e| format!("cannot draw the plot: {e}"))?;
    write_png(&pixels, WIDTH, height, out)
}

fn draw_time_series(
    panels: &[TimePanel],
    title: &str,
    pixels: &mut [u8],
    height: u32,
) -> Result<(), Box<dyn std::error::Error>> {
    let root = BitMapBackend::with_buffer(pixels, (WIDTH, height)).into_drawing_area();
    root.fill(&WHITE)?;
    let root = root.titled(title, ("sans-serif", 22))?;
    let points = || panels.iter().flat_map(|p| p.curves.iter().flat_map(|c| c.2.iter()));
    let (t0, t1) = points().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), p| (a.min(p.0), b.max(p.0)));
    let (t0, t1) = if t0.is_finite() && t1 > t0 { (t0, t1) } else { (0.0, 1.0) };
    for (area, panel) in root.split_evenly((panels.len(), 1)).iter().zip(panels) {
        let ys = panel.curves.iter().flat_map(|c| c.2.iter().map(|p| p.1)).filter(|y| y.is_finite());
        let (y0, y1) = ys.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), y| (a.min(y), b.max(y)));
        let (y0, y1) = if y0.is_finite() { (y0.min(0.0), if y1 > y0 { y1 } else { y0 + 1.0 }) } else { (0.0, 1.0) };
        let pad = (y1 - y0) * 0.08;
        let mut chart = ChartBuilder::on(area)
            .caption(&panel.title, ("sans-serif", 17))
            .margin(10)
            .x_label_area_size(34)
            .y_label_area_size(60)
            .build_cartesian_2d(t0..t1, y0..(y1 + pad))?;
        chart
            .configure_mesh()
            .x_desc("simulated time (s)")
            .label_style(("sans-serif", 14))
            .light_line_style(RGBColor(238, 238, 238))
            .draw()?;
        for (label, [r, g, b], pts) in &panel.curves {
            let colour = RGBColor(*r, *g, *b);
            let line: Vec<(f64, f64)> = pts.iter().copied().filter(|p| p.1.is_finite()).collect();
            chart
                .draw_series(LineSeries::new(line, colour.stroke_width(2)))?
                .label(label.clone())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 22, y)], colour.stroke_width(2)));
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .label_font(("sans-serif", 13))
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.4))
            .draw()?;
    }
    root.present()?;
    Ok(())
}

/// Encodes RGB pixels as PNG and writes them atomically.
fn write_png(pixels: &[u8], width: u32, height: u32, out: &Path) -> Result<(), String> {
    let mut png_bytes = Vec::new();
    {
        let mut encoder = png::Encoder::new(&mut png_bytes, width, height);
        encoder.set_color(png::ColorType::Rgb);
        encoder.set_depth(png::BitDepth::Eight);
        let mut writer = encoder.write_header().map_err(|e| format!("cannot encode the plot: {e}"))?;
        writer.write_image_data(pixels).map_err(|e| format!("cannot encode the plot: {e}"))?;
    }
    write_atomic(out, &png_bytes)
}

fn draw(
    data: &PlotData,
    metric: &str,
    by: &str,
    title: &str,
    pixels: &mut [u8],
) -> Result<(), Box<dyn std::error::Error>> {
    let root = BitMapBackend::with_buffer(pixels, (WIDTH, HEIGHT)).into_drawing_area();
    root.fill(&WHITE)?;
    let all = data.series.iter().flat_map(|s| s.points.iter());
    let (mut x0, mut x1, mut y0, mut y1) = (f64::INFINITY, f64::NEG_INFINITY, f64::INFINITY, f64::NEG_INFINITY);
    for &(x, _, lo, hi) in all {
        x0 = x0.min(x);
        x1 = x1.max(x);
        y0 = y0.min(lo);
        y1 = y1.max(hi);
    }
    let xpad = if x1 > x0 { (x1 - x0) * 0.08 } else { 0.5 };
    let ypad = if y1 > y0 { (y1 - y0) * 0.12 } else { y1.abs().max(1.0) * 0.1 };
    let y_low = if y0 >= 0.0 && y0 - ypad < 0.0 { 0.0 } else { y0 - ypad };
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 22))
        .margin(18)
        .x_label_area_size(48)
        .y_label_area_size(70)
        .build_cartesian_2d((x0 - xpad)..(x1 + xpad), y_low..(y1 + ypad))?;
    let categories = &data.categories;
    let x_format = |x: &f64| -> String {
        if categories.is_empty() {
            let s = format!("{x:.3}");
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else if (x - x.round()).abs() < 1e-6 && *x >= 0.0 {
            categories.get(x.round() as usize).cloned().unwrap_or_default()
        } else {
            String::new()
        }
    };
    let mut mesh = chart.configure_mesh();
    mesh.x_desc(by)
        .y_desc(format!("{metric} (mean, 95% CI)"))
        .x_label_formatter(&x_format)
        .label_style(("sans-serif", 15))
        .light_line_style(RGBColor(238, 238, 238));
    if !categories.is_empty() {
        mesh.x_labels(categories.len() * 2 + 1);
    }
    mesh.draw()?;
    for (i, s) in data.series.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        // Categories have no order between them: points and bars only, no line or band.
        let joined = categories.is_empty();
        if joined && s.points.len() > 1 {
            let mut band: Vec<(f64, f64)> = s.points.iter().map(|p| (p.0, p.3)).collect();
            band.extend(s.points.iter().rev().map(|p| (p.0, p.2)));
            chart.draw_series(std::iter::once(Polygon::new(band, colour.mix(0.18).filled())))?;
        }
        let line = if joined { s.points.iter().map(|p| (p.0, p.1)).collect() } else { Vec::new() };
        chart
            .draw_series(LineSeries::new(line, colour.stroke_width(2)))?
            .label(s.label.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 22, y)], colour.stroke_width(2)));
        chart.draw_series(
            s.points.iter().map(|p| ErrorBar::new_vertical(p.0, p.2, p.1, p.3, colour.stroke_width(1), 8)),
        )?;
        chart.draw_series(s.points.iter().map(|p| Circle::new((p.0, p.1), 4, colour.filled())))?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .label_font(("sans-serif", 15))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.4))
        .draw()?;
    root.present()?;
    Ok(())
}
