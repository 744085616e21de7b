//! The network section of the panel: the selected robot's live behaviour network drawn as a
//! graph (collections as columns, nodes with their degree of execution as bars, links with
//! their weights; dynamic nodes that do not exist right now drawn faint), what leads it, what
//! the actuators command, and the seed's table dump.

use bevy::prelude::*;
use bevy_egui::egui;

use super::palette;
use crate::control::network::{NetworkController, Signal};
use crate::scene::network::COLLECTIONS;

/// Widest node box; narrower when the panel is.
const NODE_W: f32 = 66.0;
const NODE_H: f32 = 22.0;
const ROW: f32 = 30.0;

/// Draws the section for `nc` (the selected robot's controller, if it is a network robot).
pub fn network_section(ui: &mut egui::Ui, nc: Option<&NetworkController>, names: &Query<&Name>) {
    egui::CollapsingHeader::new("Behaviour network").default_open(true).show(ui, |ui| {
        let Some(nc) = nc else {
            ui.label("Select a robot of controller kind Network to see its network.");
            return;
        };
        graph(ui, nc);
        let net = &nc.brain.net;
        let leader = nc.brain.leading_node.map_or("nothing".to_string(), |id| net.name(id).to_string());
        let task = if nc.brain.charging { "Charging" } else { "Collecting" };
        let o = nc.last;
        let f = |x: Option<f32>| x.map_or("-".to_string(), |v| format!("{v:+.2}"));
        egui::Grid::new("network-state").num_columns(2).show(ui, |ui| {
            let mut row = |k: &str, v: String| {
                ui.label(k);
                ui.label(v);
                ui.end_row();
            };
            row("task", task.to_string());
            row("leading Move", leader);
            row("actuators", format!("speed {}  angle {}  gripper {:+.0}", f(o.speed), f(o.turn), o.grip));
            // What each subject node's object is (the camera's; the remembered box and the way to a
            // station are not objects the camera tracks).
            for (&(_, node), tracked) in nc.brain.blueprint.slots.iter().zip(&nc.tracked) {
                if let (Some(node), Some(t)) = (node, tracked) {
                    let name = names.get(t.entity).map_or_else(|_| format!("{}", t.entity), |n| n.to_string());
                    row(
                        net.name(node),
                        format!("{name} at ({:.2}, {:.2}), seen step {}", t.position.x, t.position.y, t.last_seen),
                    );
                }
            }
            let s = nc.stats;
            row("boxed", s.boxed.to_string());
            row("charging visits", s.charging_visits.to_string());
            row("claims sent / yielded", format!("{} / {}", s.claims_sent, s.yielded));
            row("nodes created / removed", format!("{} / {}", nc.brain.net.created, nc.brain.net.removed));
            // Seed 001's process: each collection's manager, what it created and removed, and the
            // connection requests it forwarded to a node or created one for.
            for (name, m) in COLLECTIONS.iter().zip(&nc.brain.net.managers) {
                row(
                    &format!("{name} manager"),
                    format!(
                        "created {}  removed {}  requests forwarded {}  creating {}",
                        m.created, m.removed, m.forwarded, m.created_for
                    ),
                );
            }
            row("requests waiting", nc.brain.net.pending_requests().to_string());
            // The latest creating-node and removal requests of the static nodes.
            let sent: Vec<String> = nc
                .brain
                .sent
                .iter()
                .map(|r| match r.by() {
                    Some(by) => format!("{} asks for {}", net.name(by), net.name(r.node())),
                    None => format!("{} removed (nobody asks)", net.name(r.node())),
                })
                .collect();
            if !sent.is_empty() {
                row(&format!("subject requests, tick {}", nc.brain.sent_at), sent.join("; "));
            }
        });
        egui::CollapsingHeader::new("table dump (NT:DE, LT:LW)").show(ui, |ui| {
            ui.label(egui::RichText::new(nc.brain.net.dump()).monospace().small());
        });
    });
}

fn graph(ui: &mut egui::Ui, nc: &NetworkController) {
    let net = &nc.brain.net;
    let catalog = net.catalog();
    let columns = COLLECTIONS.len();
    let rows = (0..columns).map(|c| catalog.collection_nodes(c).count()).max().unwrap_or(1);
    let width = ui.available_width();
    let node_w = ((width - (columns as f32 - 1.0) * 8.0) / columns as f32).clamp(30.0, NODE_W);
    let height = 18.0 + rows as f32 * ROW;
    let (rect, _) = ui.allocate_exact_size(egui::vec2(width, height), egui::Sense::hover());
    let painter = ui.painter_at(rect);
    let gap = ((width - columns as f32 * node_w) / (columns as f32 - 1.0).max(1.0)).max(0.0);
    let node_rect = |id: usize| {
        let c = catalog.collection[id];
        let row = catalog.collection_nodes(c).position(|n| n == id).unwrap_or(0);
        let min = rect.min + egui::vec2(c as f32 * (node_w + gap), 18.0 + row as f32 * ROW);
        egui::Rect::from_min_size(min, egui::vec2(node_w, NODE_H))
    };
    let text = ui.visuals().text_color();
    let small = egui::FontId::proportional(10.0);
    for (c, name) in COLLECTIONS.iter().enumerate() {
        let x = rect.min.x + c as f32 * (node_w + gap) + node_w / 2.0;
        painter.text(egui::pos2(x, rect.min.y + 6.0), egui::Align2::CENTER_CENTER, *name, small.clone(), text);
    }
    for l in &net.links {
        let (a, b) = (node_rect(l.from()), node_rect(l.to()));
        let (from, to) = (a.right_center(), b.left_center());
        let color = if l.weight >= 0.0 { palette::EXCITE } else { palette::INHIBIT };
        painter.line_segment([from, to], egui::Stroke::new(0.8 + l.weight.abs().min(3.0), color));
        let mid = from + (to - from) * 0.5;
        // The degree the port carries this tick (its source's last output); the weight is the
        // line's width and colour, and in the table dump.
        let degree = net.node(l.from()).map_or(0.0, |n| n.degree);
        painter.text(mid, egui::Align2::CENTER_BOTTOM, format!("{degree:.2}"), egui::FontId::proportional(9.0), color);
    }
    for id in 0..catalog.names.len() {
        let r = node_rect(id);
        let node = net.node(id);
        let alive = node.is_some();
        // Nodes in the panel's own colours, so the graph reads in the light and the dark theme.
        let visuals = ui.visuals();
        let faint = visuals.weak_text_color();
        let stroke = if alive { egui::Stroke::new(1.0, text) } else { egui::Stroke::new(1.0, faint) };
        let fill = if alive { visuals.extreme_bg_color } else { visuals.faint_bg_color };
        painter.rect_filled(r, 3.0, fill);
        if let Some(n) = node {
            let mut bar = r.shrink(2.0);
            bar.set_top(bar.bottom() - 4.0);
            bar.set_width(bar.width() * n.degree);
            let fill = match n.signal {
                Signal::Track { .. } => palette::TRACK,
                Signal::Level(_) | Signal::Steer { .. } => palette::LEVEL,
                Signal::None => palette::NO_SIGNAL,
            };
            painter.rect_filled(bar, 1.0, fill);
        }
        painter.rect_stroke(r, 3.0, stroke, egui::StrokeKind::Inside);
        let label = match node {
            Some(n) => format!("{} {:.2}", catalog.names[id], n.degree),
            None => catalog.names[id].clone(),
        };
        let color = if alive { text } else { faint };
        painter.text(
            r.center() - egui::vec2(0.0, 3.0),
            egui::Align2::CENTER_CENTER,
            label,
            egui::FontId::proportional(9.5),
            color,
        );
        // Hovering a node shows its ports: the links it connected as inputs and outputs, and the
        // connection requests naming it that it has not checked yet.
        if alive {
            let hover = ui.interact(r, ui.id().with(("network-node", id)), egui::Sense::hover());
            hover.on_hover_text(ports_text(net, id));
        }
    }
}

/// A node's ports as text, one line per port.
fn ports_text(net: &crate::control::network::Network, id: usize) -> String {
    let catalog = net.catalog();
    let ports = net.ports(id);
    let link = |k: &usize| {
        let l = catalog.links[*k];
        format!("{} -> {}  {}:{:.2}", catalog.names[l.from], catalog.names[l.to], l.kind.short(), l.weight)
    };
    let mut out =
        format!("{}: input ports {}, output ports {}", catalog.names[id], ports.inputs.len(), ports.outputs.len());
    for k in &ports.inputs {
        out.push_str(&format!("\n  in   {}", link(k)));
    }
    for k in &ports.outputs {
        out.push_str(&format!("\n  out  {}", link(k)));
    }
    for r in &ports.pending {
        out.push_str(&format!("\n  pending  {}", link(&r.link)));
    }
    out
}
