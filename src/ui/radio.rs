//! The radio section of the panel: system parameters, the selected robot's parameters, the pair
//! parameters from the selected robot to its partner (shift-click) with the effective link,
//! the selected robot's inbox, the counters and a live plot of delivery ratio and latency. It
//! writes only parameters, which take effect on the next step.

use std::collections::{HashMap, VecDeque};

use bevy::prelude::*;
use bevy_egui::egui;
use egui_plot::{Legend, Line, Plot};

use crate::comms::{Radio, RadioIn};
use crate::render::{Partner, Selection};
use crate::sim::{PerEnv, SimTime};
use crate::ui::fold;

/// Samples of the radio's delivery ratio and mean latency over simulated time.
#[derive(Resource, Default)]
pub struct RadioHistory {
    pub samples: VecDeque<[f64; 3]>,
}

/// Sampling interval of the plot, simulated seconds.
const SAMPLE_EVERY: f64 = 0.5;
const SAMPLES: usize = 600;

/// How long a delivery's line stays on screen, seconds.
const FLASH_SECONDS: f32 = 0.4;

/// Delivered messages drawn as lines for a moment.
#[derive(Resource, Default)]
pub struct Flashes(pub Vec<(Entity, Entity, f32)>);

pub fn plugin(app: &mut App) {
    app.init_resource::<RadioHistory>()
        .init_resource::<Flashes>()
        .add_systems(Update, (sample_history, collect_flashes, draw_flashes).chain());
}

fn sample_history(time: Res<SimTime>, radio: Res<PerEnv<Radio>>, mut history: ResMut<RadioHistory>) {
    let now = time.seconds();
    let last = history.samples.back().map_or(f64::NEG_INFINITY, |s| s[0]);
    if now < last {
        // A new scene: start over.
        history.samples.clear();
    } else if now - last < SAMPLE_EVERY {
        return;
    }
    let s = &radio.only().0.stats;
    history.samples.push_back([now, s.delivery_ratio(), s.mean_latency()]);
    if history.samples.len() > SAMPLES {
        history.samples.pop_front();
    }
}

fn collect_flashes(
    real: Res<Time<Real>>,
    mut flashes: ResMut<Flashes>,
    inboxes: Query<(Entity, &RadioIn), Changed<RadioIn>>,
    names: Query<(Entity, &Name), With<RadioIn>>,
) {
    let dt = real.delta_secs();
    flashes.0.retain_mut(|f| {
        f.2 -= dt;
        f.2 > 0.0
    });
    if flashes.0.len() > 2000 {
        return;
    }
    if inboxes.iter().all(|(_, inbox)| inbox.0.is_empty()) {
        return;
    }
    let by_name: HashMap<&str, Entity> = names.iter().map(|(e, n)| (n.as_str(), e)).collect();
    for (receiver, inbox) in &inboxes {
        for m in &inbox.0 {
            if let Some(&sender) = by_name.get(&**m.sender()) {
                flashes.0.push((sender, receiver, FLASH_SECONDS));
            }
        }
    }
}

fn draw_flashes(
    mut gizmos: Gizmos,
    flashes: Res<Flashes>,
    positions: Query<(&Transform, Option<&crate::robot::Robot>)>,
) {
    for &(a, b, life) in &flashes.0 {
        if let (Ok((pa, robot)), Ok((pb, _))) = (positions.get(a), positions.get(b)) {
            // In the sender's colour.
            let base = robot.map_or(crate::render::palette::PARTNER, |r| crate::render::picture::robot_colour(r.index));
            let colour = base.with_alpha(life / FLASH_SECONDS);
            gizmos.line_2d(pa.translation.truncate(), pb.translation.truncate(), colour);
        }
    }
}

/// A value that may be unset: a checkbox to set it, a slider for it.
fn optional_slider<N: egui::emath::Numeric>(
    ui: &mut egui::Ui,
    label: &str,
    value: &mut Option<N>,
    default: N,
    range: std::ops::RangeInclusive<N>,
    suffix: &str,
) {
    ui.horizontal(|ui| {
        let mut set = value.is_some();
        ui.checkbox(&mut set, label);
        let mut v = value.unwrap_or(default);
        ui.add_enabled(set, egui::Slider::new(&mut v, range).suffix(suffix));
        *value = set.then_some(v);
    });
}

fn range_editor(ui: &mut egui::Ui, label: &str, range: &mut Option<f32>) {
    optional_slider(ui, label, range, 5.0, 0.0..=50.0, " m");
}

/// The radio section.
pub fn radio_section(
    ui: &mut egui::Ui,
    radio: &mut Radio,
    history: &RadioHistory,
    selection: &Selection,
    partner: &Partner,
    names: &Query<&Name>,
) {
    fold(ui, "Radio", |ui| {
        let model = &mut radio.0;
        ui.label(egui::RichText::new("system").strong());
        ui.checkbox(&mut model.system.link, "link on");
        range_editor(ui, "range", &mut model.system.range);
        ui.add(egui::Slider::new(&mut model.system.delay, 0..=50).text("delay (steps)"));
        ui.add(egui::Slider::new(&mut model.system.probability, 0.0..=1.0).text("delivery probability"));
        let s = model.stats.clone();
        let dropped: Vec<String> = s.dropped.iter().map(|(c, n)| format!("{} {n}", c.name())).collect();
        ui.label(
        egui::RichText::new(format!(
            "sent {}  delivered {}  in flight {}  dropped {}{}\ndelivery ratio {:.3}  latency mean {:.1} max {} steps",
            s.sent,
            s.delivered,
            s.in_flight,
            s.dropped_total(),
            if dropped.is_empty() { String::new() } else { format!(" ({})", dropped.join(", ")) },
            s.delivery_ratio(),
            s.mean_latency(),
            s.latency_max
        ))
        .small(),
    );
        if history.samples.len() > 1 {
            let ratio: Vec<[f64; 2]> = history.samples.iter().map(|s| [s[0], s[1]]).collect();
            let latency: Vec<[f64; 2]> = history.samples.iter().map(|s| [s[0], s[2]]).collect();
            // Both quantities start at 0 and the ratio ends at 1: keep that range in view.
            // Static: the wheel scrolls the panel, not the plot.
            let plot = Plot::new("radio-plot")
                .height(120.0)
                .legend(Legend::default())
                .include_y(0.0)
                .include_y(1.0)
                .allow_scroll(false)
                .allow_zoom(false)
                .allow_drag(false)
                .allow_boxed_zoom(false);
            plot.show(ui, |plot| {
                plot.line(Line::new("delivery ratio", ratio));
                plot.line(Line::new("mean latency (steps)", latency));
            });
        }
        let name = |e: Option<Entity>| e.and_then(|e| names.get(e).ok()).map(|n| n.to_string());
        let Some(me) = name(selection.0) else {
            ui.label("Click a robot for its radio; shift-click a second one for the pair.");
            return;
        };
        if let Some(p) = model.robot_params_mut(&me) {
            ui.label(egui::RichText::new(format!("robot {me}")).strong());
            ui.horizontal(|ui| {
                ui.checkbox(&mut p.incoming, "incoming");
                ui.checkbox(&mut p.outgoing, "outgoing");
                ui.checkbox(&mut p.kind.broadcast, "broadcast");
                ui.checkbox(&mut p.kind.point_to_point, "point to point");
            });
            range_editor(ui, "sending range", &mut p.range);
            ui.add(egui::Slider::new(&mut p.delay, 0..=50).text("delay (steps)"));
            ui.add(egui::Slider::new(&mut p.probability, 0.0..=1.0).text("probability"));
        }
        if let Some(record) = model.robot(&me) {
            let pending: Vec<String> = record
                .pending()
                .take(10)
                .map(|m| format!("  from {} sent {} due {}", m.sender(), m.sent_step, m.received_step))
                .collect();
            ui.label(format!("inbox: {} pending", record.pending().count()));
            for line in pending {
                ui.label(egui::RichText::new(line).monospace().small());
            }
        }
        let Some(other) = name(partner.0).filter(|o| *o != me) else { return };
        ui.label(egui::RichText::new(format!("pair {me} -> {other}")).strong());
        let mut pair = model.pair(&me, &other).copied().unwrap_or_default();
        let before = pair;
        ui.horizontal(|ui| {
            ui.label("link");
            egui::ComboBox::from_id_salt("pair-link")
                .selected_text(match pair.link {
                    None => "not set",
                    Some(true) => "on",
                    Some(false) => "off",
                })
                .show_ui(ui, |ui| {
                    ui.selectable_value(&mut pair.link, None, "not set");
                    ui.selectable_value(&mut pair.link, Some(true), "on");
                    ui.selectable_value(&mut pair.link, Some(false), "off");
                });
        });
        range_editor(ui, "range (the smallest counts)", &mut pair.range);
        optional_slider(ui, "delay (replaces)", &mut pair.delay, 0, 0..=50, " steps");
        optional_slider(ui, "probability (multiplies)", &mut pair.probability, 1.0, 0.0..=1.0, "");
        if pair != before {
            model.set_pair(&me, &other, pair);
        }
        if let Some(l) = model.link(&me, &other) {
            ui.label(format!(
                "effective link: {}, range {}, delay {} steps, probability {:.3}",
                if l.up { "up" } else { "down" },
                l.range.map_or("unlimited".to_string(), |r| format!("{r:.1} m")),
                l.delay,
                l.probability
            ));
        }
    });
}
