//! The editor's part of the panel: edit mode on and off, new scene, undo and redo, snapping, the
//! palette, the selected item's fields, the validation errors and saving; and the errors'
//! labels on the items in the world view.

use bevy::prelude::*;
use bevy_egui::{EguiContexts, egui};

use super::{Editor, PALETTE, save_from_panel, start_editing};
use crate::render::{PanelWidth, WorldCamera};
use crate::scene::edit::{Document, Edit, Item, ItemKind};
use crate::scene::schema::*;
use crate::scene::{ActiveScene, PendingScene, SceneStatus};
use crate::ui::palette;

/// The editor's section of the panel.
pub fn section(
    ui: &mut egui::Ui,
    editor: &mut Editor,
    active: Option<&ActiveScene>,
    pending: &mut PendingScene,
    status: &mut SceneStatus,
) {
    if !editor.active() {
        ui.horizontal(|ui| {
            let edit = ui.button("✏ Edit scene").on_hover_text("E: pause and edit the scene in place");
            if edit.clicked()
                && let Some(a) = active
            {
                start_editing(editor, a, pending);
            }
            if ui.button("New scene").on_hover_text("start from an explorer room").clicked() {
                new_scene(editor);
            }
        });
        show_message(ui, editor);
        return;
    }
    ui.horizontal(|ui| {
        let fill = egui::Color32::from_rgb(0, 110, 170);
        let done =
            egui::Button::new(egui::RichText::new("✏ Editing — Done (E)").color(egui::Color32::WHITE)).fill(fill);
        if ui.add(done).clicked() {
            stop_editing(editor);
        }
        if ui.button("New scene").clicked() {
            new_scene(editor);
        }
    });
    let Some(doc) = &editor.doc else { return };
    let (can_undo, can_redo, modified) = (doc.can_undo(), doc.can_redo(), doc.modified());
    let grid = doc.snap().grid;
    ui.horizontal(|ui| {
        if ui.add_enabled(can_undo, egui::Button::new("Undo")).on_hover_text("Ctrl+Z").clicked() {
            editor.undo();
        }
        if ui.add_enabled(can_redo, egui::Button::new("Redo")).on_hover_text("Ctrl+Y").clicked() {
            editor.redo();
        }
        ui.checkbox(&mut editor.snapping, format!("snap to {grid} m, 15°"));
    });
    ui.horizontal_wrapped(|ui| {
        ui.label("add");
        for (kind, label) in PALETTE {
            if ui.small_button(format!("+ {label}")).clicked() {
                let at = editor.doc.as_ref().map_or(Vec2::ONE, |d| add_point(d, kind));
                editor.apply(Edit::Add { kind, at }, None);
            }
        }
    });
    scene_fields(ui, editor);
    item_section(ui, editor);
    errors_section(ui, editor);
    ui.horizontal(|ui| {
        ui.add(egui::TextEdit::singleline(&mut editor.save_as).hint_text("scenes/my-room.ron").desired_width(180.0));
        let label = if modified { "Save*" } else { "Save" };
        if ui.button(label).on_hover_text("Ctrl+S: write the file; the hot reload loads it").clicked() {
            save_from_panel(editor, status, pending);
        }
    });
    show_message(ui, editor);
}

fn show_message(ui: &mut egui::Ui, editor: &Editor) {
    if let Some((ok, m)) = &editor.message {
        let colour = if *ok { ui.visuals().text_color() } else { palette::ERROR };
        ui.label(egui::RichText::new(m).small().color(colour));
    }
}

fn new_scene(editor: &mut Editor) {
    editor.open(Document::new_scene());
    editor.snapping = true;
    editor.message = Some((true, "a new explorer room: add boxes and walls, then save it".into()));
}

/// Leaves edit mode; the world keeps the last valid state of the document, at step 0.
pub fn stop_editing(editor: &mut Editor) {
    if let Some(doc) = &editor.doc
        && doc.modified()
    {
        editor.message = Some((false, "left edit mode with unsaved changes: Edit again to save them".into()));
    } else {
        editor.message = None;
    }
    editor.parked = editor.doc.take();
    editor.selected = None;
}

/// Where the palette puts a new item: a free-looking spot in the middle of the floor, snapped.
fn add_point(doc: &Document, kind: ItemKind) -> Vec2 {
    let a = &doc.scene.arena;
    let mut p = Vec2::new(a.width, a.height) / 2.0;
    // Step along a diagonal until nothing is there.
    for _ in 0..20 {
        if doc.pick(p, 0.05).is_none() {
            break;
        }
        p += Vec2::splat(doc.snap().grid.max(0.1));
    }
    let probe = doc.template(kind, p);
    doc.snap().position(&probe, p)
}

fn scene_fields(ui: &mut egui::Ui, editor: &mut Editor) {
    let Some(doc) = &editor.doc else { return };
    let mut name = doc.scene.name.clone();
    let mut arena = doc.scene.arena.clone();
    let mut edits = Vec::new();
    egui::CollapsingHeader::new("Scene and arena").id_salt("edit-scene").show(ui, |ui| {
        egui::Grid::new("edit-scene-grid").num_columns(2).show(ui, |ui| {
            ui.label("name");
            let r = ui.text_edit_singleline(&mut name);
            if r.changed() {
                edits.push((Edit::Rename(name.clone()), r.id));
            }
            ui.end_row();
            ui.label("arena");
            ui.horizontal(|ui| {
                let a = ui.add(egui::DragValue::new(&mut arena.width).speed(0.1).range(0.1..=10_000.0).suffix(" m"));
                ui.label("×");
                let b = ui.add(egui::DragValue::new(&mut arena.height).speed(0.1).range(0.1..=10_000.0).suffix(" m"));
                let c = ui.checkbox(&mut arena.boundary, "walls");
                for r in [a, b, c] {
                    if r.changed() {
                        edits.push((Edit::Arena(arena.clone()), r.id));
                    }
                }
            });
            ui.end_row();
        });
    });
    for (edit, id) in edits {
        editor.apply(edit, Some(id.value()));
    }
}

fn item_section(ui: &mut egui::Ui, editor: &mut Editor) {
    let Some(doc) = &editor.doc else { return };
    let Some(sel) = editor.selected else {
        ui.label(egui::RichText::new("Click an item to select it; drag it or its handles.").small());
        return;
    };
    let Some(mut item) = doc.item(sel) else { return };
    let dens: Vec<String> = doc.scene.dens.iter().map(|d| d.name.clone()).collect();
    let faults: Vec<String> =
        editor.errors.iter().filter(|(i, _)| *i == Some(sel)).map(|(_, e)| e.message.clone()).collect();
    ui.separator();
    ui.label(egui::RichText::new(format!("{} \"{}\"", sel.kind.name(), item.name())).strong());
    for f in &faults {
        ui.label(egui::RichText::new(f).small().color(palette::ERROR));
    }
    let changed = item_fields(ui, &mut item, &dens);
    let grid = doc.snap().grid.max(0.1);
    let mut asked = None;
    ui.horizontal(|ui| {
        if ui.button("Duplicate").on_hover_text("Ctrl+D").clicked() {
            asked = Some(Edit::Duplicate { item: sel, offset: Vec2::splat(grid) });
        }
        if ui.button("Delete").on_hover_text("Delete").clicked() {
            asked = Some(Edit::Delete { item: sel });
        }
    });
    if let Some(id) = changed {
        editor.apply(Edit::Set { item: sel, to: item }, Some(id.value()));
    }
    if let Some(edit) = asked {
        editor.apply(edit, None);
    }
}

fn errors_section(ui: &mut egui::Ui, editor: &mut Editor) {
    if editor.errors.is_empty() {
        ui.label(egui::RichText::new("✔ valid: the world shows it").small());
        return;
    }
    ui.label(
        egui::RichText::new(format!("{} problem(s); the world keeps the last valid scene:", editor.errors.len()))
            .color(palette::ERROR),
    );
    let mut pick = None;
    for (item, e) in editor.errors.iter().take(12) {
        let text = egui::RichText::new(e.to_string()).small().color(palette::ERROR);
        if ui.add(egui::Label::new(text).sense(egui::Sense::click())).clicked() {
            pick = *item;
        }
    }
    if pick.is_some() {
        editor.selected = pick;
    }
}

/// A number field: returns the widget's id when it changed.
fn num<N: egui::emath::Numeric>(
    ui: &mut egui::Ui,
    label: &str,
    value: &mut N,
    speed: f64,
    suffix: &str,
    changed: &mut Option<egui::Id>,
) {
    ui.label(label);
    let r = ui.add(egui::DragValue::new(value).speed(speed).suffix(suffix));
    if r.changed() {
        *changed = Some(r.id);
    }
    ui.end_row();
}

fn pair(ui: &mut egui::Ui, label: &str, value: &mut (f32, f32), suffix: &str, changed: &mut Option<egui::Id>) {
    ui.label(label);
    ui.horizontal(|ui| {
        for v in [&mut value.0, &mut value.1] {
            let r = ui.add(egui::DragValue::new(v).speed(0.01).suffix(suffix));
            if r.changed() {
                *changed = Some(r.id);
            }
        }
    });
    ui.end_row();
}

fn flag(ui: &mut egui::Ui, label: &str, value: &mut bool, changed: &mut Option<egui::Id>) {
    ui.label("");
    let r = ui.checkbox(value, label);
    if r.changed() {
        *changed = Some(r.id);
    }
    ui.end_row();
}

fn optional(
    ui: &mut egui::Ui,
    label: &str,
    value: &mut Option<f32>,
    default: f32,
    suffix: &str,
    changed: &mut Option<egui::Id>,
) {
    ui.label(label);
    ui.horizontal(|ui| {
        let mut on = value.is_some();
        let r = ui.checkbox(&mut on, "");
        if r.changed() {
            *value = on.then_some(value.unwrap_or(default));
            *changed = Some(r.id);
        }
        if let Some(v) = value {
            let r = ui.add(egui::DragValue::new(v).speed(0.01).suffix(suffix));
            if r.changed() {
                *changed = Some(r.id);
            }
        } else {
            ui.label("none");
        }
    });
    ui.end_row();
}

/// The item's fields as widgets; returns the id of the widget that changed one.
fn item_fields(ui: &mut egui::Ui, item: &mut Item, dens: &[String]) -> Option<egui::Id> {
    let mut changed = None;
    let c = &mut changed;
    egui::Grid::new("edit-item").num_columns(2).show(ui, |ui| {
        ui.label("name");
        let r = ui.text_edit_singleline(item.name_mut());
        if r.changed() {
            *c = Some(r.id);
        }
        ui.end_row();
        match item {
            Item::Wall(w) => {
                pair(ui, "from", &mut w.from, " m", c);
                pair(ui, "to", &mut w.to, " m", c);
                num(ui, "thickness", &mut w.thickness, 0.005, " m", c);
            }
            Item::Box(b) => {
                pair(ui, "centre", &mut b.center, " m", c);
                pair(ui, "size", &mut b.size, " m", c);
                num(ui, "angle", &mut b.angle, 1.0, "°", c);
            }
            Item::Pen(p) => {
                pair(ui, "position", &mut p.pos, " m", c);
                num(ui, "radius", &mut p.radius, 0.001, " m", c);
            }
            Item::Den(d) => {
                pair(ui, "position", &mut d.pos, " m", c);
                num(ui, "radius", &mut d.radius, 0.005, " m", c);
            }
            Item::Station(s) => {
                pair(ui, "position", &mut s.pos, " m", c);
                num(ui, "radius", &mut s.radius, 0.005, " m", c);
                num(ui, "rate", &mut s.rate, 0.05, " /s", c);
            }
            Item::Sonar(s) => {
                pair(ui, "position", &mut s.pos, " m", c);
                num(ui, "axis", &mut s.axis, 1.0, "°", c);
                num(ui, "width", &mut s.width, 0.005, " m", c);
                optional(ui, "range", &mut s.range, 1.0, " m", c);
                flag(ui, "through walls", &mut s.through_walls, c);
            }
            Item::Robot(r) => robot_fields(ui, r, dens, c),
        }
    });
    if let Item::Robot(r) = item {
        robot_more(ui, r, c);
    }
    changed
}

fn robot_fields(ui: &mut egui::Ui, r: &mut RobotSpec, dens: &[String], c: &mut Option<egui::Id>) {
    ui.label("pose");
    ui.horizontal(|ui| {
        for (v, suffix, speed) in [(&mut r.pose.0, " m", 0.01), (&mut r.pose.1, " m", 0.01), (&mut r.pose.2, "°", 1.0)]
        {
            let resp = ui.add(egui::DragValue::new(v).speed(speed).suffix(suffix));
            if resp.changed() {
                *c = Some(resp.id);
            }
        }
    });
    ui.end_row();
    ui.label("den");
    let shown = r.den.clone().unwrap_or_else(|| "none".into());
    egui::ComboBox::from_id_salt("edit-den").selected_text(shown).show_ui(ui, |ui| {
        let mut pick = |ui: &mut egui::Ui, value: Option<String>, text: &str| {
            let resp = ui.selectable_label(r.den == value, text);
            if resp.clicked() {
                r.den = value;
                *c = Some(resp.id);
            }
        };
        pick(ui, None, "none");
        for d in dens {
            pick(ui, Some(d.clone()), d);
        }
    });
    ui.end_row();
    num(ui, "radius", &mut r.radius, 0.005, " m", c);
    num(ui, "max speed", &mut r.max_speed, 0.01, " m/s", c);
    num(ui, "max turn", &mut r.max_turn, 1.0, "°/s", c);
    num(ui, "grip reach", &mut r.grip_reach, 0.005, " m", c);
    controller_fields(ui, &mut r.controller, c);
}

/// The controller: its kind (switching gives that kind's defaults) and its parameters.
fn controller_fields(ui: &mut egui::Ui, ctl: &mut ControllerSpec, c: &mut Option<egui::Id>) {
    let kinds: [(&str, fn() -> ControllerSpec); 8] = [
        ("Idle", || ControllerSpec::Idle),
        ("Drive", || ControllerSpec::Drive { linear: 0.2, angular: 0.0, lateral: 0.0 }),
        ("Wander", || ControllerSpec::Wander { speed: 0.5 }),
        ("Explorer", || ControllerSpec::Explorer { strategy: StrategySpec::Rings, sonar: false }),
        ("Network", ControllerSpec::network),
        ("Remote", || ControllerSpec::Remote { http: 0, ws: 0, protocol: Dialect::Vr2023 }),
        ("Program", || ControllerSpec::Program {}),
        ("External", || ControllerSpec::External { port: 0 }),
    ];
    let current = format!("{ctl:?}").split([' ', '(', '{']).next().unwrap_or("").to_string();
    ui.label("controller");
    egui::ComboBox::from_id_salt("edit-controller").selected_text(&current).show_ui(ui, |ui| {
        for (name, make) in kinds {
            let resp = ui.selectable_label(current == name, name);
            if resp.clicked() && current != name {
                *ctl = make();
                *c = Some(resp.id);
            }
        }
    });
    ui.end_row();
    match ctl {
        ControllerSpec::Idle | ControllerSpec::Program {} => {}
        ControllerSpec::Drive { linear, angular, lateral } => {
            num(ui, "linear", linear, 0.01, " m/s", c);
            num(ui, "angular", angular, 1.0, "°/s", c);
            num(ui, "lateral", lateral, 0.01, " m/s", c);
        }
        ControllerSpec::Wander { speed } => num(ui, "speed", speed, 0.01, "× max", c),
        ControllerSpec::External { port } => num(ui, "udp port", port, 1.0, "", c),
        ControllerSpec::Explorer { strategy, sonar } => {
            ui.label("strategy");
            ui.horizontal(|ui| {
                for (s, label) in [(StrategySpec::Rings, "rings"), (StrategySpec::Random, "random")] {
                    let resp = ui.radio(*strategy == s, label);
                    if resp.clicked() {
                        *strategy = s;
                        *c = Some(resp.id);
                    }
                }
            });
            ui.end_row();
            flag(ui, "sonar sends it home", sonar, c);
        }
        ControllerSpec::Remote { http, ws, protocol } => {
            num(ui, "http port", http, 1.0, "", c);
            num(ui, "ws port", ws, 1.0, "", c);
            ui.label("protocol");
            ui.horizontal(|ui| {
                for (d, label) in [(Dialect::Vr2021, "2021"), (Dialect::Vr2022, "2022"), (Dialect::Vr2023, "2023")] {
                    let resp = ui.radio(*protocol == d, label);
                    if resp.clicked() {
                        *protocol = d;
                        *c = Some(resp.id);
                    }
                }
            });
            ui.end_row();
        }
        ControllerSpec::Network { forget_after, low_power, full_power } => {
            num(ui, "forget after", forget_after, 1.0, " steps", c);
            num(ui, "low power", low_power, 0.01, "", c);
            num(ui, "full power", full_power, 0.01, "", c);
        }
    }
}

/// Battery, camera and radio, folded.
fn robot_more(ui: &mut egui::Ui, r: &mut RobotSpec, c: &mut Option<egui::Id>) {
    egui::CollapsingHeader::new("battery and camera").id_salt("edit-battery").show(ui, |ui| {
        egui::Grid::new("edit-battery-grid").num_columns(2).show(ui, |ui| {
            let b = &mut r.battery;
            num(ui, "capacity", &mut b.capacity, 0.5, "", c);
            let cap = b.capacity;
            optional(ui, "initial", &mut b.initial, cap, "", c);
            num(ui, "idle drain", &mut b.idle_drain, 0.001, " /s", c);
            num(ui, "move drain", &mut b.move_drain, 0.001, " /m", c);
            num(ui, "turn drain", &mut b.turn_drain, 0.001, " /rad", c);
            let cam = &mut r.camera;
            num(ui, "camera fov", &mut cam.fov, 1.0, "°", c);
            num(ui, "camera range", &mut cam.range, 0.05, " m", c);
            num(ui, "camera period", &mut cam.period, 1.0, " steps", c);
        });
    });
    egui::CollapsingHeader::new("radio").id_salt("edit-radio").show(ui, |ui| {
        egui::Grid::new("edit-radio-grid").num_columns(2).show(ui, |ui| {
            let k = &mut r.comms;
            flag(ui, "broadcast", &mut k.broadcast, c);
            flag(ui, "point to point", &mut k.point_to_point, c);
            flag(ui, "incoming", &mut k.incoming, c);
            flag(ui, "outgoing", &mut k.outgoing, c);
            optional(ui, "range", &mut k.range, 2.0, " m", c);
            num(ui, "delay", &mut k.delay, 1.0, " steps", c);
            num(ui, "probability", &mut k.probability, 0.01, "", c);
            ui.label("outside bot");
            let mut addr = r.outside.clone().unwrap_or_default();
            let resp = ui.add(egui::TextEdit::singleline(&mut addr).hint_text("127.0.0.1:7001"));
            if resp.changed() {
                r.outside = (!addr.trim().is_empty()).then_some(addr);
                *c = Some(resp.id);
            }
            ui.end_row();
        });
    });
}

/// Each item validation finds a problem with gets its first message written beside it in the
/// world view.
pub(super) fn error_labels(
    mut contexts: EguiContexts,
    editor: Res<Editor>,
    camera: Single<(&Camera, &GlobalTransform), With<WorldCamera>>,
    panel: Res<PanelWidth>,
) -> Result {
    let Some(doc) = &editor.doc else { return Ok(()) };
    let ctx = contexts.ctx_mut()?;
    let (cam, cam_t) = *camera;
    let view = egui::Rect::from_min_max(egui::pos2(panel.0, 0.0), ctx.viewport_rect().max);
    let painter = ctx
        .layer_painter(egui::LayerId::new(egui::Order::Foreground, egui::Id::new("edit-errors")))
        .with_clip_rect(view);
    let mut done = Vec::new();
    for (item, e) in &editor.errors {
        let Some(r) = item else { continue };
        if done.contains(r) {
            continue;
        }
        done.push(*r);
        let Some(it) = doc.item(*r) else { continue };
        let at = it.position() + Vec2::new(0.0, it.size().y.max(it.radius().unwrap_or(0.0)) + 0.05);
        if let Ok(p) = cam.world_to_viewport(cam_t, at.extend(0.0)) {
            let font = egui::FontId::proportional(11.0);
            let text = format!("⚠ {}", e.message);
            let galley = painter.layout_no_wrap(text, font, palette::ERROR);
            let rect = egui::Align2::CENTER_BOTTOM.anchor_size(egui::pos2(p.x, p.y), galley.size()).expand(2.0);
            painter.rect_filled(rect, 2.0, egui::Color32::from_rgba_unmultiplied(255, 255, 255, 220));
            painter.galley(rect.min + egui::vec2(2.0, 2.0), galley, palette::ERROR);
        }
    }
    Ok(())
}
