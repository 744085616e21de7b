//! The egui control panel (presentation only): run control (pause, step, speed, reset), scene
//! open and reload with load errors, run statistics, and the inspector of the selected robot.
//! It reads simulation state and writes only commands: clock settings and scene requests.

use std::path::PathBuf;

use bevy::ecs::system::SystemParam;
use bevy::ecs::world::EntityRefExcept;
use bevy::prelude::*;
use bevy_egui::{EguiContexts, EguiPrimaryContextPass, egui};

use crate::botlink::transport::CentralSocket;
use crate::botlink::udp::{UdpEndpoint, UpdateAllSocket};
use crate::botlink::{BotLink, BotManager, LinkAction, LinkRequest, LinkState, LinkStats};
use crate::control::ControllerKind;
use crate::control::explore::Explorer;
use crate::control::network::NetworkController;
use crate::control::programs::{Program, ProgramServer};
use crate::control::remote::Remote;
use crate::render::picture::{Theme, ViewOptions};
use crate::render::{PanelWidth, Selection, WorldCamera};
use crate::robot::registry::{Around, Carried, SensorRegistry};
use crate::robot::{DriveCommand, HomeDen, LampState, Robot};
use crate::ros2::{Ros2Bridge, Ros2Request};
use crate::run::hot_reload::reload_from;
use crate::scene::schema::PhysicsMode;
use crate::scene::{ActiveScene, PendingScene, SceneOverrides, SceneSource, SceneStatus};
use crate::sim::{PerEnv, SimClock, SimTime, Speed, StepGate, TrajectoryHash};
use crate::skills::{EmergencyStop, Executor, SkillGroup};
use crate::world::{Boxed, Den, Pen, PenBox, Sonar, Station};

/// Text typed into the "open scene" field.
#[derive(Resource, Default)]
struct OpenField(String);

pub mod editor;
mod network;
pub mod plots;
mod radio;
pub mod timeline;

/// The panel's colours.
pub mod palette {
    use bevy_egui::egui::Color32;
    /// Errors and refusals.
    pub const ERROR: Color32 = Color32::from_rgb(220, 60, 50);
    pub const ESTOP: Color32 = Color32::from_rgb(200, 40, 30);
    pub const ESTOP_ENGAGED: Color32 = Color32::from_rgb(120, 30, 30);
    /// Names drawn over the arena, and under a robot.
    pub const LABEL: Color32 = Color32::from_gray(60);
    pub const LABEL_ROBOT: Color32 = Color32::from_gray(20);
    /// The behaviour network graph: excitatory and inhibitory links, subjects and commands.
    pub const EXCITE: Color32 = Color32::from_rgb(90, 170, 90);
    pub const INHIBIT: Color32 = Color32::from_rgb(200, 80, 70);
    pub const TRACK: Color32 = Color32::from_rgb(80, 150, 220);
    pub const LEVEL: Color32 = Color32::from_rgb(230, 170, 60);
    pub const NO_SIGNAL: Color32 = Color32::from_rgb(150, 150, 150);
}

pub fn plugin(app: &mut App) {
    radio::plugin(app);
    timeline::plugin(app);
    editor::plugin(app);
    plots::plugin(app);
    app.init_resource::<OpenField>()
        .init_resource::<HelpOpen>()
        .add_systems(Update, keyboard_shortcuts)
        .init_resource::<InspectedSensors>()
        .add_systems(
            EguiPrimaryContextPass,
            (egui_theme, inspect_sensors, control_panel, world_labels, help_window).chain(),
        );
}

/// A panel section that folds: its heading opens and closes it (open at first).
pub fn fold<R>(ui: &mut egui::Ui, title: &str, body: impl FnOnce(&mut egui::Ui) -> R) {
    egui::CollapsingHeader::new(egui::RichText::new(title).heading()).id_salt(title).default_open(true).show(ui, body);
}

/// Label at most this many robots by name (beyond, only the selected one).
const LABELS_UP_TO: usize = 100;

/// Names of robots and fixed objects, painted over the world view: a fixed font size on a
/// translucent plate, so they read the same at any zoom; robots' names only while they are far
/// enough apart on screen not to pile up.
fn world_labels(
    mut contexts: EguiContexts,
    camera: Single<(&Camera, &GlobalTransform, &Projection), With<WorldCamera>>,
    selection: Res<Selection>,
    panel: Res<PanelWidth>,
    options: Res<ViewOptions>,
    robots: Query<(Entity, &Name, &Transform, &Robot)>,
    objects: Query<(&Name, &Transform, Option<&PenBox>), Or<(With<PenBox>, With<Station>, With<Den>, With<Sonar>)>>,
) -> Result {
    if !options.labels {
        return Ok(());
    }
    let ctx = contexts.ctx_mut()?;
    let (cam, cam_t, projection) = *camera;
    let scale = match projection {
        Projection::Orthographic(o) => o.scale,
        _ => 0.01,
    };
    // Clipped to the world view, so labels never draw over the panel.
    let view = egui::Rect::from_min_max(egui::pos2(panel.0, 0.0), ctx.viewport_rect().max);
    let painter = ctx
        .layer_painter(egui::LayerId::new(egui::Order::Background, egui::Id::new("world-labels")))
        .with_clip_rect(view);
    let font = egui::FontId::proportional(11.0);
    let dark = options.theme == Theme::Dark;
    let plate = if dark {
        egui::Color32::from_rgba_unmultiplied(20, 20, 24, 170)
    } else {
        egui::Color32::from_rgba_unmultiplied(255, 255, 255, 170)
    };
    let ink = if dark { egui::Color32::from_gray(225) } else { palette::LABEL_ROBOT };
    let label = |world: Vec2, text: &str, colour: egui::Color32| {
        if let Ok(p) = cam.world_to_viewport(cam_t, world.extend(0.0)) {
            let galley = painter.layout_no_wrap(text.to_string(), font.clone(), colour);
            let rect =
                egui::Align2::CENTER_TOP.anchor_size(egui::pos2(p.x, p.y), galley.size()).expand2(egui::vec2(3.0, 1.0));
            painter.rect_filled(rect, 3.0, plate);
            painter.galley(rect.min + egui::vec2(3.0, 1.0), galley, colour);
        }
    };
    for (name, t, b) in &objects {
        // A box's name goes under it, clear of the pens inside.
        let below = b.map_or(0.0, |b| b.size.y / 2.0 + 0.02);
        label(t.translation.truncate() - Vec2::Y * below, name.as_str(), ink);
    }
    // Robots' names while there are few, and while a robot is at least 6 px wide on screen.
    let few = robots.iter().len() <= LABELS_UP_TO;
    for (e, name, t, robot) in &robots {
        let big = robot.radius * 2.0 / scale >= 6.0;
        if (few && big) || selection.0 == Some(e) {
            let below = t.translation.truncate() - Vec2::Y * robot.radius * 1.2;
            let colour = if selection.0 == Some(e) { egui::Color32::from_rgb(200, 140, 0) } else { ink };
            label(below, name.as_str(), colour);
        }
    }
    Ok(())
}

/// The panel follows the view's theme.
fn egui_theme(mut contexts: EguiContexts, options: Res<ViewOptions>, mut applied: Local<Option<Theme>>) -> Result {
    if *applied == Some(options.theme) {
        return Ok(());
    }
    let ctx = contexts.ctx_mut()?;
    ctx.set_theme(match options.theme {
        Theme::Light => egui::Theme::Light,
        Theme::Dark => egui::Theme::Dark,
    });
    *applied = Some(options.theme);
    Ok(())
}

/// Whether the help window is open (`?`).
#[derive(Resource, Default)]
pub struct HelpOpen(pub bool);

/// Every mouse action and key, in one window.
const HELP: &[(&str, &str)] = &[
    ("Mouse", ""),
    ("drag", "pan the view (in edit mode: right or middle button)"),
    ("wheel", "zoom about the cursor (over the panel: scroll it)"),
    ("click a robot", "select it: inspector, network, radio, trail"),
    ("shift-click a robot", "the other end of a radio pair"),
    ("Keys", ""),
    ("Space", "pause or resume"),
    (".", "one step while paused"),
    ("Esc", "emergency stop on or off"),
    ("E", "edit the scene (pauses at step 0) or leave edit mode"),
    ("P", "the plots window"),
    ("T", "trails on or off"),
    ("?", "this help"),
    ("Edit mode", ""),
    ("click, drag", "select an item, move it (snapped to the grid)"),
    ("drag a handle", "orange circle: turn; squares: resize, wall ends"),
    ("R, Shift+R", "turn the selected item by 15°"),
    ("Ctrl+D, Delete", "duplicate, delete the selected item"),
    ("Ctrl+Z, Ctrl+Y", "undo, redo (a whole drag is one step)"),
    ("Ctrl+S", "save to the path in the panel; the hot reload loads it"),
];

fn help_window(mut contexts: EguiContexts, mut open: ResMut<HelpOpen>) -> Result {
    if !open.0 {
        return Ok(());
    }
    let ctx = contexts.ctx_mut()?;
    egui::Window::new("Help — mouse and keys")
        .open(&mut open.0)
        .collapsible(false)
        .resizable(false)
        .anchor(egui::Align2::RIGHT_TOP, egui::vec2(-12.0, 12.0))
        .show(ctx, |ui| {
            egui::Grid::new("help").num_columns(2).spacing([16.0, 4.0]).show(ui, |ui| {
                for (k, v) in HELP {
                    if v.is_empty() {
                        ui.label(egui::RichText::new(*k).strong());
                    } else {
                        ui.label(egui::RichText::new(*k).monospace());
                        ui.label(*v);
                    }
                    ui.end_row();
                }
            });
        });
    Ok(())
}

/// The view's options: theme, trails, cones, labels; the plots window and help.
fn view_section(ui: &mut egui::Ui, options: &mut ViewOptions, plots: &mut plots::PlotsOpen, help: &mut HelpOpen) {
    fold(ui, "View", |ui| {
        ui.horizontal(|ui| {
            ui.radio_value(&mut options.theme, Theme::Light, "light");
            ui.radio_value(&mut options.theme, Theme::Dark, "dark");
            ui.separator();
            ui.checkbox(&mut options.cones, "cones");
            ui.checkbox(&mut options.labels, "labels");
        });
        ui.horizontal(|ui| {
            ui.checkbox(&mut options.trails, "trails (T)");
            ui.add_enabled(
                options.trails,
                egui::Slider::new(&mut options.trail_seconds, 1.0..=60.0).suffix(" s").logarithmic(true),
            );
        });
        ui.horizontal(|ui| {
            if ui.button("Plots (P)").clicked() {
                plots.0 = !plots.0;
            }
            if ui.button("Help (?)").clicked() {
                help.0 = !help.0;
            }
        });
    });
}

/// Space pauses or resumes; `.` runs one step while paused; Escape engages or releases the
/// emergency stop; `?` opens help, `P` the plots, `T` turns trails on and off.
fn keyboard_shortcuts(
    keys: Res<ButtonInput<KeyCode>>,
    wants: Res<bevy_egui::input::EguiWantsInput>,
    mut clock: ResMut<SimClock>,
    mut estop: ResMut<EmergencyStop>,
    mut toggles: (ResMut<HelpOpen>, ResMut<plots::PlotsOpen>, ResMut<ViewOptions>),
    logical: Res<ButtonInput<bevy::input::keyboard::Key>>,
) {
    if keys.just_pressed(KeyCode::Escape) {
        estop.engaged = !estop.engaged;
    }
    if wants.wants_keyboard_input() {
        return;
    }
    if keys.just_pressed(KeyCode::Space) {
        clock.paused = !clock.paused;
    }
    if keys.just_pressed(KeyCode::Period) && clock.paused {
        clock.queue_steps(1);
    }
    let ctrl = keys.any_pressed([KeyCode::ControlLeft, KeyCode::ControlRight]);
    // `?` by the character typed, wherever a keyboard layout puts it.
    if logical.just_pressed(bevy::input::keyboard::Key::Character("?".into())) {
        toggles.0.0 = !toggles.0.0;
    }
    if keys.just_pressed(KeyCode::KeyP) && !ctrl {
        toggles.1.0 = !toggles.1.0;
    }
    if keys.just_pressed(KeyCode::KeyT) && !ctrl {
        toggles.2.trails = !toggles.2.trails;
    }
}

/// What the inspector shows about one robot beside its sensors.
type RobotView<'a> = (&'a Name, &'a DriveCommand, &'a ControllerKind, &'a HomeDen);

/// The selected robot's sensors as the inspector shows them: each sensor's rows under its name,
/// from the sensor registry (read before the panel is drawn, which holds other robots' parts
/// mutably).
#[derive(Resource, Debug, Default)]
struct InspectedSensors(Vec<(String, Vec<(String, String)>)>);

fn inspect_sensors(
    selection: Res<Selection>,
    sensors: Res<SensorRegistry>,
    arena: Res<crate::world::Arena>,
    robots: Query<EntityRefExcept<InspectedSensors>, With<Robot>>,
    names: Query<&Name>,
    mut inspected: ResMut<InspectedSensors>,
) {
    inspected.0.clear();
    let Some(robot) = selection.0.and_then(|e| robots.get(e).ok()) else { return };
    let name_of = |e: Entity| name_of(&names, e);
    let around = Around { arena: *arena, name_of: &name_of };
    let carried = robot.get::<Carried>().cloned().unwrap_or_default();
    inspected.0 = sensors.inspect(&carried, &(&robot).into(), &around);
}

/// What the panel shows and edits of the radio.
#[derive(SystemParam)]
struct RadioView<'w> {
    radio: ResMut<'w, PerEnv<crate::comms::Radio>>,
    history: Res<'w, radio::RadioHistory>,
    partner: Res<'w, crate::render::Partner>,
}

/// The scene, where it came from, and opening another.
#[derive(SystemParam)]
struct SceneView<'w> {
    active: Option<Res<'w, ActiveScene>>,
    pending: ResMut<'w, PendingScene>,
    status: ResMut<'w, SceneStatus>,
    open: ResMut<'w, OpenField>,
    overrides: Res<'w, SceneOverrides>,
    editor: ResMut<'w, editor::Editor>,
}

/// The view's options and the windows the panel opens.
#[derive(SystemParam)]
struct ViewToggles<'w> {
    options: ResMut<'w, ViewOptions>,
    plots: ResMut<'w, plots::PlotsOpen>,
    help: ResMut<'w, HelpOpen>,
}

/// What the panel shows of the bot manager and the skill system.
#[derive(SystemParam)]
struct BotManagerView<'w, 's> {
    estop: ResMut<'w, EmergencyStop>,
    stats: Res<'w, LinkStats>,
    update_all: Res<'w, UpdateAllSocket>,
    manager: Res<'w, PerEnv<BotManager>>,
    central: Res<'w, CentralSocket>,
    requests: MessageWriter<'w, LinkRequest>,
    links: Query<'w, 's, (Entity, &'static Name, &'static BotLink, Option<&'static UdpEndpoint>)>,
    detail: Query<'w, 's, (&'static Executor, &'static BotLink, Option<&'static UdpEndpoint>, &'static LampState)>,
}

/// The controllers the panel shows: explorers (editable) and network robots.
#[derive(SystemParam)]
struct ControllerViews<'w, 's> {
    explorers: Query<'w, 's, &'static mut Explorer>,
    networks: Query<'w, 's, &'static NetworkController>,
    remotes: Query<'w, 's, (Entity, &'static Name, &'static Remote)>,
    programs: Query<'w, 's, (Entity, &'static Name, &'static Program)>,
    program_server: Res<'w, ProgramServer>,
    gate: Res<'w, StepGate>,
    ros2: Option<Res<'w, Ros2Bridge>>,
    ros2_request: Option<ResMut<'w, Ros2Request>>,
}

fn control_panel(
    mut contexts: EguiContexts,
    mut clock: ResMut<SimClock>,
    time: Res<SimTime>,
    hash: Res<PerEnv<TrajectoryHash>>,
    mut scene: SceneView,
    mut panel_width: ResMut<PanelWidth>,
    mut selection: ResMut<Selection>,
    robots: Query<RobotView>,
    names: Query<&Name>,
    pens: Query<Has<Boxed>, With<Pen>>,
    mut bots: BotManagerView,
    mut controllers: ControllerViews,
    mut radio_view: RadioView,
    mut record: timeline::RecordView,
    mut toggles: ViewToggles,
    inspected: Res<InspectedSensors>,
) -> Result {
    let ctx = contexts.ctx_mut()?;
    let mut root = egui::Ui::new(
        ctx.clone(),
        "crsim-root".into(),
        egui::UiBuilder::new().layer_id(egui::LayerId::background()).max_rect(ctx.viewport_rect()),
    );
    let response = egui::Panel::left("control").resizable(true).default_size(320.0).show(&mut root, |ui| {
        egui::ScrollArea::vertical().show(ui, |ui| {
            ui.horizontal(|ui| {
                ui.heading("crsim");
                ui.with_layout(egui::Layout::right_to_left(egui::Align::Center), |ui| {
                    if ui.button("?").on_hover_text("help: mouse and keys").clicked() {
                        toggles.help.0 = !toggles.help.0;
                    }
                });
            });
            fold(ui, "Scene", |ui| scene_section(ui, &mut scene));
            ui.separator();
            let ViewToggles { options, plots, help } = &mut toggles;
            view_section(ui, options, plots, help);
            ui.separator();
            // The emergency stop never folds away.
            emergency_stop(ui, &mut bots.estop);
            fold(ui, "Run", |ui| {
                if record.replay.is_none() {
                    run_section(ui, &mut clock, &time, hash.only(), scene.active.as_deref(), &mut scene.pending);
                } else {
                    ui.label(format!("step {}   hash {}", time.step, hash.only().hex()));
                }
                let (total, boxed) = pens.iter().fold((0, 0), |(t, b), is| (t + 1, b + u32::from(is)));
                ui.label(format!("robots: {}   pens boxed: {boxed} / {total}", bots.links.iter().len()));
            });
            ui.separator();
            timeline::section(ui, &mut record, scene.active.as_deref(), &time);
            ui.separator();
            bot_manager_section(ui, &bots, &mut selection);
            remote_section(ui, &controllers.remotes, &mut selection);
            programs_section(ui, &controllers, &mut selection);
            ros2_section(ui, &mut controllers, scene.active.as_deref());
            explorer_section(ui, &mut controllers.explorers, &selection);
            ui.separator();
            network::network_section(ui, selection.0.and_then(|e| controllers.networks.get(e).ok()), &names);
            ui.separator();
            radio::radio_section(
                ui,
                radio_view.radio.only_mut(),
                &radio_view.history,
                &selection,
                &radio_view.partner,
                &names,
            );
            ui.separator();
            let selected = selection.0.and_then(|e| robots.get(e).ok().zip(bots.detail.get(e).ok()));
            let mut asked = Vec::new();
            inspector(ui, selected, &inspected.0, &names, &mut |action| asked.push(action));
            if let Some(bot) = selection.0 {
                for action in asked {
                    bots.requests.write(LinkRequest { bot, action });
                }
            }
        });
    });
    panel_width.0 = response.response.rect.width();
    Ok(())
}

/// ROS 2: serving or not (a switch over the scene's `ros2.enabled`), where, each robot's
/// namespace, and what the bridge counted.
fn ros2_section(ui: &mut egui::Ui, views: &mut ControllerViews, active: Option<&ActiveScene>) {
    // The request is written only when the switch changes: the bridge reopens on a change.
    let (Some(bridge), Some(request)) = (views.ros2.as_deref(), views.ros2_request.as_mut()) else { return };
    let by_scene = active.is_some_and(|a| a.scene.ros2.enabled);
    egui::CollapsingHeader::new("ROS 2").default_open(bridge.domain().is_some()).show(ui, |ui| {
        let mut on = request.enabled || by_scene;
        let switch = ui.add_enabled(!by_scene, egui::Checkbox::new(&mut on, "serve every robot over ROS 2 (DDS)"));
        if switch.changed() {
            request.enabled = on;
        }
        if by_scene {
            ui.label(egui::RichText::new("the scene's ros2.enabled serves it").small());
        }
        match (bridge.domain(), &bridge.error) {
            (Some(d), _) => ui.label(format!("domain {d}: {}", bridge.namespaces().join(" "))),
            (None, Some(e)) => ui.colored_label(palette::ERROR, e),
            (None, None) => ui.label("not serving"),
        };
        let s = bridge.stats();
        ui.label(
            egui::RichText::new(format!(
                "published {}  refused {}  commands {}  malformed {}  late {}  radio sent {}",
                s.published,
                s.publish_errors,
                s.commands,
                s.malformed + s.radio_malformed,
                s.late,
                s.radio_sent
            ))
            .small(),
        );
    });
}

/// Robot programs: where they connect, which robots step 0 still waits for, each connection and
/// each program robot's state.
fn programs_section(ui: &mut egui::Ui, views: &ControllerViews, selection: &mut Selection) {
    let server = &views.program_server;
    if views.programs.is_empty() && server.local.is_none() {
        return;
    }
    egui::CollapsingHeader::new("Robot programs").default_open(true).show(ui, |ui| {
        match (server.local, &server.error) {
            (Some(addr), _) => ui.label(format!("listening on {addr} (newline-delimited JSON)")),
            (None, Some(e)) => ui.colored_label(palette::ERROR, e),
            (None, None) => ui.label("not listening"),
        };
        if views.gate.held() {
            ui.colored_label(palette::ESTOP, format!("waiting for: {}", views.gate.describe()));
        }
        let s = &server.stats;
        ui.label(
            egui::RichText::new(format!(
                "connections {}  refused {}  late steps {}  resets {}  exchange {:.2} ms/step",
                s.connections,
                s.refused,
                s.late,
                s.resets,
                if s.steps > 0 { 1000.0 * s.exchange_s / s.steps as f64 } else { 0.0 }
            ))
            .small(),
        );
        for (id, peer, robots, late) in server.connections() {
            ui.label(egui::RichText::new(format!("#{id} {peer}: {} (late {late})", robots.join(", "))).small());
        }
        let by_ros = views.ros2.as_ref().is_some_and(|b| b.domain().is_some());
        for (e, name, p) in &views.programs {
            let state = match (p.connection, p.disconnected) {
                (Some(c), _) => format!("program #{c}, {:?}", p.comm),
                (None, true) => "disconnected".to_string(),
                (None, false) if by_ros => "ROS 2 cmd_vel".to_string(),
                (None, false) => "awaited".to_string(),
            };
            let text = format!("{name}: {state}, answered {}, late {}", p.answered, p.late);
            if ui.selectable_label(selection.0 == Some(e), text).clicked() {
                selection.0 = Some(e);
            }
        }
    });
}

fn emergency_stop(ui: &mut egui::Ui, estop: &mut EmergencyStop) {
    let (text, fill) = if estop.engaged {
        ("EMERGENCY STOP ENGAGED — release (Esc)", palette::ESTOP_ENGAGED)
    } else {
        ("EMERGENCY STOP (Esc)", palette::ESTOP)
    };
    let button = egui::Button::new(egui::RichText::new(text).strong().color(egui::Color32::WHITE)).fill(fill);
    if ui.add_sized([ui.available_width(), 28.0], button).clicked() {
        estop.engaged = !estop.engaged;
    }
}

fn explorer_section(ui: &mut egui::Ui, explorers: &mut Query<&mut Explorer>, selection: &Selection) {
    if explorers.is_empty() {
        return;
    }
    ui.separator();
    fold(ui, "Explorers", |ui| {
        let all_on = explorers.iter().all(|e| e.sonar_alarm);
        let mut on = all_on;
        if ui.checkbox(&mut on, "sonar option (all explorers): a sonar sends them home").changed() {
            for mut e in explorers.iter_mut() {
                e.sonar_alarm = on;
            }
        }
        let Some(mut ex) = selection.0.and_then(|e| explorers.get_mut(e).ok()) else {
            ui.label("Click an explorer to see its mental map.");
            return;
        };
        ui.checkbox(&mut ex.sonar_alarm, "sonar option for this explorer");
        let s = ex.stats;
        ui.label(format!(
            "{:?} at {:?} facing {:?} — {} strategy\nmoves {}  collisions {}  repeated {}  returns {}  sonar alarms {}",
            ex.phase,
            (ex.cell.x, ex.cell.y),
            ex.dir,
            ex.strategy.name(),
            s.moves,
            s.collisions,
            s.repeat_collisions,
            s.returns,
            s.sonar_alarms
        ));
        if let Some((cell, step)) = s.last_collision {
            ui.label(format!("last collision: cell ({}, {}) at step {step}", cell.x, cell.y));
        }
        let path: String = ex.outbound.iter().map(|m| m.letter()).collect();
        ui.label(egui::RichText::new(format!("outbound: {path}")).monospace().small());
        if !ex.plan.is_empty() {
            let plan: String = ex.plan.iter().map(|m| m.letter()).collect();
            ui.label(egui::RichText::new(format!("plan: {plan}")).monospace().small());
        }
        ui.label(egui::RichText::new(ex.map.to_text(Some(ex.cell))).monospace().size(9.0));
    });
}

fn bot_manager_section(ui: &mut egui::Ui, bots: &BotManagerView, selection: &mut Selection) {
    fold(ui, "Bot manager", |ui| {
        let mut counts = [0usize; 3];
        for (_, _, link, _) in &bots.links {
            counts[link.state as usize] += 1;
        }
        ui.label(format!(
            "online {}   connecting {}   offline {}",
            counts[LinkState::Online as usize],
            counts[LinkState::Connecting as usize],
            counts[LinkState::Offline as usize]
        ));
        let s = &*bots.stats;
        if bots.links.iter().any(|(_, _, l, _)| l.external) {
            ui.label(
                egui::RichText::new(format!(
                    "external robots: packets sent {}  received {}  malformed {}  refused {}  errors sent {}",
                    s.packets_sent, s.packets_received, s.malformed, s.refused, s.errors_sent
                ))
                .small(),
            );
        }
        let m = bots.manager.only();
        let t = &m.totals;
        ui.label(
            egui::RichText::new(format!(
                "manager: rounds {}  update-all {}  unicast {}  statuses {}  held back {}  watchdog stops {}  \
                 connects failed {}",
                m.rounds,
                t.sent.update_all.packets + t.sent.multicast.packets + t.sent.update_all_unicast.packets,
                t.sent.unicast.packets,
                t.statuses,
                t.duplicates_held,
                t.watchdog_stops,
                t.connect_failures
            ))
            .small(),
        );
        if let Some(local) = bots.central.local {
            let group = bots.central.group.map_or(String::new(), |g| format!(", multicast {g}"));
            ui.label(egui::RichText::new(format!("manager on udp://{local}{group}")).small());
        }
        if let Some(e) = bots.central.error.as_ref().or(bots.central.fallback.as_ref()) {
            ui.label(egui::RichText::new(e).small().color(palette::ERROR));
        }
        // Outside bots: where they are and whether they answer.
        for (e, name, link, _) in bots.links.iter().filter(|(_, _, l, _)| l.outside.is_some()) {
            let addr = link.outside.map(|a| a.to_string()).unwrap_or_default();
            let text = format!("{name}: {} — outside bot at udp://{addr}", link.state.name());
            if ui.selectable_label(selection.0 == Some(e), text).clicked() {
                selection.0 = Some(e);
            }
        }
        if let Some(addr) = bots.update_all.local {
            ui.label(format!("update-all port: udp://{addr}"));
        }
        if let Some(e) = &s.last_error {
            ui.label(egui::RichText::new(e).small().color(palette::ERROR));
        }
        // External robots: where to reach them and how their link is.
        for (e, name, link, endpoint) in bots.links.iter().filter(|(_, _, l, _)| l.external) {
            let addr = match endpoint {
                Some(UdpEndpoint { local: Some(local), .. }) => format!("udp://{local}"),
                Some(UdpEndpoint { error: Some(e), .. }) => e.clone(),
                _ => "not bound".to_string(),
            };
            let text = format!("{name}: {} — {addr}", link.state.name());
            if ui.selectable_label(selection.0 == Some(e), text).clicked() {
                selection.0 = Some(e);
            }
        }
    });
}

/// Robots driven in the VirtualRobot protocol: where to reach them, who is connected, what was
/// asked and answered.
fn remote_section(ui: &mut egui::Ui, remotes: &Query<(Entity, &Name, &Remote)>, selection: &mut Selection) {
    if remotes.is_empty() {
        return;
    }
    ui.separator();
    fold(ui, "Remote control (VirtualRobot)", |ui| {
        for (e, name, r) in remotes {
            let running = match r.session.running() {
                Some((mv, true)) => format!("{}, collided", mv.as_str()),
                Some((mv, false)) => mv.as_str().to_string(),
                None => "idle".to_string(),
            };
            let head = format!("{name}: {running}  ({:?})", r.session.dialect);
            if ui.selectable_label(selection.0 == Some(e), head).clicked() {
                selection.0 = Some(e);
            }
            match (&r.error, r.http, r.ws) {
                (Some(err), _, _) => {
                    ui.label(egui::RichText::new(err).small().color(palette::ERROR));
                }
                (None, Some(http), Some(ws)) => {
                    ui.label(egui::RichText::new(format!("http://{http}/api/move   ws://{ws}")).monospace().small());
                }
                _ => {}
            }
            ui.label(
                egui::RichText::new(format!(
                    "clients: {} websocket, {} http waiting   requests {}  errors {}  watchdog stops {}",
                    r.ws_clients, r.held_requests, r.session.requests, r.session.errors, r.session.watchdog_stops
                ))
                .small(),
            );
            egui::CollapsingHeader::new(format!("last requests and replies of {name}")).id_salt(e).show(ui, |ui| {
                for line in r.session.log.iter().rev().take(16) {
                    ui.label(egui::RichText::new(line).monospace().small());
                }
            });
        }
    });
}

fn scene_section(ui: &mut egui::Ui, view: &mut SceneView) {
    let SceneView { active, pending, status, open, overrides, editor } = view;
    let active = active.as_deref();
    if let Some(a) = active {
        ui.label(egui::RichText::new(&a.scene.name).strong());
        let model = match a.scene.physics {
            PhysicsMode::Rigid => "rigid bodies",
            PhysicsMode::Kinematic => "kinematic discs",
        };
        ui.label(egui::RichText::new(format!("{} · {model}", a.source.label())).small()).on_hover_text(
            "How robots and pens move: rigid bodies in rapier, or the kinematic model for large swarms (the scene's `physics`)",
        );
    }
    ui.horizontal(|ui| {
        ui.add(egui::TextEdit::singleline(&mut open.0).hint_text("scenes/explorer.ron").desired_width(200.0));
        if ui.button("Open").clicked() && !open.0.trim().is_empty() {
            reload_from(&PathBuf::from(open.0.trim()), overrides, pending, status);
        }
    });
    if let Some(a) = active
        && let SceneSource::File(path) = &a.source
        && ui.button("Reload from file").on_hover_text("also happens on every save").clicked()
    {
        reload_from(path, overrides, pending, status);
    }
    editor::panel::section(ui, editor, active, pending, status);
    if let Some(err) = &status.error {
        ui.colored_label(palette::ERROR, "Scene not loaded; the running scene is kept:");
        ui.label(egui::RichText::new(err).monospace().small().color(palette::ERROR));
    } else if let Some(note) = &status.note {
        ui.label(egui::RichText::new(note).small());
    }
}

fn run_section(
    ui: &mut egui::Ui,
    clock: &mut SimClock,
    time: &SimTime,
    hash: &TrajectoryHash,
    active: Option<&ActiveScene>,
    pending: &mut PendingScene,
) {
    ui.horizontal(|ui| {
        let label = if clock.paused { "▶ Resume" } else { "⏸ Pause" };
        if ui.button(label).on_hover_text("Space").clicked() {
            clock.paused = !clock.paused;
        }
        if ui.add_enabled(clock.paused, egui::Button::new("Step")).on_hover_text(".").clicked() {
            clock.queue_steps(1);
        }
        if ui.button("Reset").on_hover_text("restart the scene from step 0").clicked()
            && let Some(a) = active
        {
            pending.request(a.scene.clone(), a.source.clone());
        }
    });
    let mut max = clock.speed == Speed::Max;
    let mut factor = match clock.speed {
        Speed::Factor(f) => f,
        Speed::Max => 1.0,
    };
    ui.horizontal(|ui| {
        ui.label("speed");
        let slider = egui::Slider::new(&mut factor, 0.1..=100.0).logarithmic(true).suffix("×");
        let changed = ui.add_enabled(!max, slider).changed();
        let toggled = ui.checkbox(&mut max, "max").changed();
        if changed || toggled {
            clock.speed = if max { Speed::Max } else { Speed::Factor(factor) };
        }
    });
    egui::Grid::new("stats").num_columns(2).show(ui, |ui| {
        ui.label("step");
        ui.label(time.step.to_string());
        ui.end_row();
        ui.label("sim time");
        ui.label(format!("{:.2} s", time.seconds()));
        ui.end_row();
        ui.label("steps/s");
        ui.label(format!("{:.0} (up to {:.0})", clock.actual_steps_per_s, clock.capacity_steps_per_s));
        ui.end_row();
        ui.label("hash");
        ui.label(egui::RichText::new(hash.hex()).monospace());
        ui.end_row();
    });
}

fn name_of(names: &Query<&Name>, e: Entity) -> String {
    names.get(e).map_or_else(|_| format!("{e}"), |n| n.to_string())
}

type LinkView<'a> = (&'a Executor, &'a BotLink, Option<&'a UdpEndpoint>, &'a LampState);

fn inspector(
    ui: &mut egui::Ui,
    robot: Option<(<RobotView as bevy::ecs::query::QueryData>::Item<'_, '_>, LinkView<'_>)>,
    sensors: &[(String, Vec<(String, String)>)],
    names: &Query<&Name>,
    ask: &mut dyn FnMut(LinkAction),
) {
    fold(ui, "Inspector", |ui| {
        let Some(((name, cmd, controller, den), (executor, link, endpoint, lamp))) = robot else {
            ui.label("Click a robot to inspect it.");
            return;
        };
        ui.label(egui::RichText::new(name.as_str()).strong());
        egui::Grid::new("robot").num_columns(2).show(ui, |ui| {
            let mut row = |k: &str, v: String| {
                ui.label(k);
                ui.label(v);
                ui.end_row();
            };
            row("controller", format!("{:?}", controller.0));
            row("den", den.0.map_or("none".into(), |d| name_of(names, d)));
            row("command", format!("{:.2} m/s, {:.0}°/s", cmd.linear, cmd.angular.to_degrees()));
            row("lamp", if lamp.on { "on".into() } else { "off".into() });
            let kind = match (link.external, link.outside) {
                (true, _) => "external controller".to_string(),
                (false, Some(a)) => format!("outside bot at {a}"),
                (false, None) if link.managed => "simulated bot".to_string(),
                (false, None) => "driven directly".to_string(),
            };
            row("link", format!("{} ({kind})", link.state.name()));
            if let Some(ep) = endpoint {
                let peer = ep.peer.map_or("no controller yet".to_string(), |p| format!("from {p}"));
                let local = ep.local.map_or_else(|| ep.error.clone().unwrap_or_default(), |a| a.to_string());
                row("udp", format!("{local} {peer}"));
            }
            for group in SkillGroup::ALL {
                let running = executor.0.running(group).map_or("empty".to_string(), |s| s.name().to_string());
                row(&format!("{} slot", group.name()), running);
            }
        });
        // Every sensor the robot carries, as the registry's sensors show themselves.
        egui::Grid::new("sensors").num_columns(2).show(ui, |ui| {
            for (sensor, rows) in sensors {
                ui.label(egui::RichText::new(sensor).strong());
                ui.end_row();
                for (k, v) in rows {
                    ui.label(format!("  {k}"));
                    ui.label(egui::RichText::new(v).monospace());
                    ui.end_row();
                }
            }
        });
        if link.managed {
            bot_link_controls(ui, link, ask);
        }
        ui.label(format!("last commands ({} packets sent):", link.packets_sent));
        for sent in link.recent.iter().rev() {
            ui.label(
                egui::RichText::new(format!("  step {:>6}  {}  ({} bytes)", sent.step, sent.command(), sent.bytes))
                    .monospace()
                    .small(),
            );
        }
    });
}

/// One managed bot's link: connect, disconnect and reconnect by hand, its motor parameters, its
/// counters and last status.
fn bot_link_controls(ui: &mut egui::Ui, link: &BotLink, ask: &mut dyn FnMut(LinkAction)) {
    ui.horizontal(|ui| {
        if ui.add_enabled(link.state == LinkState::Offline, egui::Button::new("Connect")).clicked() {
            ask(LinkAction::Connect);
        }
        if ui.add_enabled(link.state != LinkState::Offline, egui::Button::new("Disconnect")).clicked() {
            ask(LinkAction::Disconnect);
        }
        if ui.button("Reconnect").clicked() {
            ask(LinkAction::Reconnect);
        }
    });
    let (mut speed, mut turn) = (link.motor.0, link.motor.1.to_degrees());
    ui.horizontal(|ui| {
        ui.label("motor");
        let a = ui.add(egui::DragValue::new(&mut speed).range(0.0..=5.0).speed(0.01).suffix(" m/s"));
        let b = ui.add(egui::DragValue::new(&mut turn).range(0.0..=1000.0).speed(1.0).suffix(" °/s"));
        if a.changed() || b.changed() {
            ask(LinkAction::Motor { max_speed: speed, max_turn: turn.to_radians() });
        }
    });
    let c = &link.counters;
    let update_all = c.sent.update_all.packets + c.sent.multicast.packets + c.sent.update_all_unicast.packets;
    ui.label(
        egui::RichText::new(format!(
            "sent {} unicast, {update_all} update-all; received {} ({} statuses, {} malformed); \
             held back {}; watchdog stops {}; connects failed {}; state changes {}",
            c.sent.unicast.packets,
            c.received.packets,
            c.statuses,
            c.malformed,
            c.duplicates_held,
            c.watchdog_stops,
            c.connect_failures,
            c.state_changes
        ))
        .small(),
    );
    match &link.last_status {
        Some(s) => ui.label(
            egui::RichText::new(format!(
                "last status at {:.2} s: ({:.2}, {:.2}) {:.0}°, battery {:.0}%, {}{}",
                link.last_packet_s,
                s.x,
                s.y,
                s.heading.to_degrees(),
                s.battery * 100.0,
                if s.bump { "bumping" } else { "clear" },
                s.held.as_ref().map_or(String::new(), |h| format!(", holding {h}"))
            ))
            .small(),
        ),
        None => ui.label(egui::RichText::new("no status yet").small()),
    };
    if let Some(e) = &link.last_error {
        ui.label(egui::RichText::new(e).small().color(palette::ERROR));
    }
}
