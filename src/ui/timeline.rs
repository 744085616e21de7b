//! The panel's recording section: record the live run to a file and stop; open a recording;
//! while a recording is shown, its timeline (play, pause, speed, step back and forward, drag to
//! any step); while attached to a running simulation, its pause, speed and radio sent back.

use std::path::PathBuf;

use bevy::ecs::system::SystemParam;
use bevy::prelude::*;
use bevy_egui::egui;

use super::palette;
use crate::comms::Radio;
use crate::record::Recorder;
use crate::record::replay::{Replay, ReplaySource};
use crate::record::viewer::ViewerCommand;
use crate::record::writer::FileSink;
use crate::scene::{ActiveScene, PendingScene, SceneOverrides, SceneSource};
use crate::sim::{PerEnv, SimTime};

/// What the recording section shows and edits.
#[derive(SystemParam)]
pub struct RecordView<'w> {
    pub replay: Option<ResMut<'w, Replay>>,
    pub recorder: ResMut<'w, Recorder>,
    pub form: ResMut<'w, RecordForm>,
    pub overrides: Res<'w, SceneOverrides>,
}

/// The section's text fields and last message.
#[derive(Resource, Debug, Default)]
pub struct RecordForm {
    pub open: String,
    pub message: Option<String>,
    pub recording_to: Option<PathBuf>,
    /// A recording opened from the panel, to be shown from the next frame.
    pub opened: Option<PathBuf>,
}

pub fn plugin(app: &mut App) {
    app.init_resource::<RecordForm>().add_systems(Update, (open_requested, replay_keys, send_radio_changes));
}

/// The section; `active` and `time` describe the live run.
pub fn section(ui: &mut egui::Ui, view: &mut RecordView, active: Option<&ActiveScene>, time: &SimTime) {
    egui::CollapsingHeader::new("Recording").default_open(true).show(ui, |ui| {
        if let Some(replay) = view.replay.as_deref_mut() {
            shown(ui, replay);
            return;
        }
        let rec = &mut *view.recorder;
        let form = &mut *view.form;
        if let Some(to) = form.recording_to.clone().filter(|_| rec.active()) {
            ui.label(format!("recording to {}: {} steps", to.display(), rec.steps));
            if ui.button("⏹ Stop recording").clicked() {
                rec.finish(false);
                form.message = Some(match rec.errors.pop() {
                    Some(e) => e,
                    None => format!("saved {} ({} steps)", to.display(), rec.steps),
                });
                form.recording_to = None;
            }
        } else if ui.button("⏺ Record").on_hover_text("record the run from this step into recordings/").clicked()
            && let Some(a) = active
        {
            form.message = Some(match start(a, time, &view.overrides) {
                Ok((path, sink)) => {
                    rec.add_sink(sink);
                    form.recording_to = Some(path.clone());
                    format!("recording to {}", path.display())
                }
                Err(e) => e,
            });
        }
        ui.horizontal(|ui| {
            ui.add(egui::TextEdit::singleline(&mut form.open).hint_text("run.mcap").desired_width(200.0));
            if ui.button("Open").on_hover_text("replay a recording").clicked() {
                form.opened = Some(PathBuf::from(form.open.trim()));
            }
        });
        if let Some(m) = &form.message {
            ui.label(egui::RichText::new(m).small());
        }
    });
}

/// Starts recording the live run into `recordings/SCENE-STEP.mcap`.
fn start(
    active: &ActiveScene,
    time: &SimTime,
    overrides: &SceneOverrides,
) -> Result<(PathBuf, Box<dyn crate::record::Sink>), String> {
    let scene = &active.scene;
    let (text, path, dir) = match &active.source {
        SceneSource::File(p) => (
            std::fs::read_to_string(p).unwrap_or_else(|_| crate::scene::load::to_ron(scene)),
            p.display().to_string(),
            p.parent().map(PathBuf::from).unwrap_or_default(),
        ),
        other => (crate::scene::load::to_ron(scene), other.label(), PathBuf::from(".")),
    };
    let meta = crate::record::run_meta(scene, &text, &path, &dir, overrides, !scene.comms.link, time.step);
    std::fs::create_dir_all("recordings").map_err(|e| format!("cannot create recordings/: {e}"))?;
    let stamp = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let name = crate::scene::schema::file_token(&scene.name);
    let file = PathBuf::from("recordings").join(format!("{name}-{stamp}-step{}.mcap", time.step));
    let sink = FileSink::create(&file, &meta)?;
    Ok((file, Box::new(sink)))
}

/// The timeline of a shown recording, or the controls of a watched run.
fn shown(ui: &mut egui::Ui, replay: &mut Replay) {
    let label = replay.label();
    match &mut replay.source {
        ReplaySource::File(t) => {
            ui.label(egui::RichText::new(format!("replay of {label}")).strong());
            if let Some(note) = t.recording.describe_end() {
                ui.label(egui::RichText::new(note).small().color(palette::ERROR));
            }
            ui.horizontal(|ui| {
                if ui.button("⏮").on_hover_text("first step (Home)").clicked() {
                    t.seek(t.first as i64);
                }
                if ui.button("◀").on_hover_text("step back (←)").clicked() {
                    t.seek(t.step as i64 - 1);
                }
                let play = if t.playing { "⏸ Pause" } else { "▶ Play" };
                if ui.button(play).on_hover_text("Space").clicked() {
                    t.playing = !t.playing;
                }
                if ui.button("▶|").on_hover_text("step forward (→)").clicked() {
                    t.seek(t.step as i64 + 1);
                }
                if ui.button("⏭").on_hover_text("last step (End)").clicked() {
                    t.seek(t.last as i64);
                }
            });
            let mut step = t.step;
            if ui.add(egui::Slider::new(&mut step, t.first..=t.last.max(t.first)).text("step")).changed() {
                t.seek(step as i64);
            }
            ui.add(egui::Slider::new(&mut t.speed, 0.1..=100.0).logarithmic(true).suffix("×").text("speed"));
            if let Some(e) = &t.error {
                ui.label(egui::RichText::new(e).small().color(palette::ERROR));
            }
            let events = &replay.frame.events;
            if !events.is_empty() {
                for e in events.iter().take(6) {
                    ui.label(egui::RichText::new(e.to_string()).small());
                }
                if events.len() > 6 {
                    ui.label(egui::RichText::new(format!("… and {} more", events.len() - 6)).small());
                }
            }
        }
        ReplaySource::Live(c) => {
            ui.label(egui::RichText::new(format!("watching {label}")).strong());
            if let Some(why) = &c.closed {
                ui.label(egui::RichText::new(why).color(palette::ERROR));
            }
            if let Some((hash, steps)) = &c.ended {
                ui.label(format!("the run ended after {steps} steps, hash {hash}"));
            }
            let mut cmd = None;
            ui.horizontal(|ui| {
                if ui.button("⏸ Pause").clicked() {
                    cmd = Some(ViewerCommand::Pause { paused: true });
                }
                if ui.button("▶ Resume").clicked() {
                    cmd = Some(ViewerCommand::Pause { paused: false });
                }
            });
            ui.horizontal(|ui| {
                for (label, factor) in [("1×", Some(1.0)), ("10×", Some(10.0)), ("max", None)] {
                    if ui.button(label).on_hover_text("the run's speed").clicked() {
                        cmd = Some(ViewerCommand::Speed { factor });
                    }
                }
            });
            if let Some(cmd) = cmd {
                c.send(&cmd);
            }
        }
    }
}

/// A recording opened from the panel: its scene loads and the replay starts.
fn open_requested(
    mut commands: Commands,
    mut form: ResMut<RecordForm>,
    mut pending: ResMut<PendingScene>,
    mut recorder: ResMut<Recorder>,
) {
    let Some(path) = form.opened.take() else { return };
    let opened = crate::record::Recording::open(&path).and_then(|r| {
        let scene = crate::record::recorded_scene(&r.meta)?;
        Ok((r, crate::record::without_outside_drivers(scene)))
    });
    match opened {
        Ok((r, scene)) => {
            if recorder.active() {
                recorder.finish(false);
            }
            form.message = r.describe_end();
            let source = SceneSource::Recorded { scene: r.meta.scene_path.clone(), from: path.display().to_string() };
            pending.request(scene, source);
            commands.insert_resource(Replay::file(r));
        }
        Err(e) => form.message = Some(e),
    }
}

/// Space plays or pauses a replay; arrows step; Home and End jump.
fn replay_keys(
    keys: Res<ButtonInput<KeyCode>>,
    wants: Res<bevy_egui::input::EguiWantsInput>,
    replay: Option<ResMut<Replay>>,
) {
    let Some(mut replay) = replay else { return };
    if wants.wants_keyboard_input() {
        return;
    }
    let ReplaySource::File(t) = &mut replay.source else { return };
    if keys.just_pressed(KeyCode::Space) {
        t.playing = !t.playing;
    }
    if keys.just_pressed(KeyCode::ArrowRight) || keys.just_pressed(KeyCode::Period) {
        t.seek(t.step as i64 + 1);
    }
    if keys.just_pressed(KeyCode::ArrowLeft) || keys.just_pressed(KeyCode::Comma) {
        t.seek(t.step as i64 - 1);
    }
    if keys.just_pressed(KeyCode::Home) {
        t.seek(t.first as i64);
    }
    if keys.just_pressed(KeyCode::End) {
        t.seek(t.last as i64);
    }
}

/// The radio's system parameters edited in the panel go back to a watched simulation.
fn send_radio_changes(
    radio: Res<PerEnv<Radio>>,
    replay: Option<ResMut<Replay>>,
    mut last: Local<Option<crate::comms::model::SystemParams>>,
) {
    let Some(mut replay) = replay else { return };
    if !matches!(replay.source, ReplaySource::Live(_)) {
        return;
    }
    let now = radio.only().0.system;
    if last.is_some_and(|l| l != now) {
        replay.send(&ViewerCommand::Radio { system: now });
    }
    *last = Some(now);
}
