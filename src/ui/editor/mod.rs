//! Edit mode (`E`, or the panel's Edit button): the run pauses at step 0 and the scene becomes a
//! document to edit in place. Click an item to select it, drag it to move it (snapped to the
//! grid), drag its handles to rotate or resize it; add items from the palette, duplicate
//! (Ctrl+D), delete (Delete), undo (Ctrl+Z) and redo (Ctrl+Y, Ctrl+Shift+Z), save (Ctrl+S).
//! Every change is validated at once (the errors of `crsim check`, drawn on the items at fault)
//! and, when the scene is valid, the world is rebuilt from it. Saving writes the scene's file,
//! keeping the text of what was not touched, and the hot reload takes it from there.
//!
//! The document and its operations are plain types in `scene::edit`; this is the glue.

use std::path::PathBuf;

use bevy::prelude::*;
use bevy::window::PrimaryWindow;
use bevy_egui::input::EguiWantsInput;

use crate::render::{EditMode, PanelWidth, WorldCamera};
use crate::scene::edit::{Document, Edit, Handle, ItemKind, ItemRef, Snap};
use crate::scene::error::SceneError;
use crate::scene::{ActiveScene, PendingScene, SceneSource, SceneStatus};
use crate::sim::SimClock;

mod draw;
pub mod panel;

/// The editor's state in the app.
#[derive(Resource, Default)]
pub struct Editor {
    /// The scene being edited, while edit mode is on.
    pub doc: Option<Document>,
    pub selected: Option<ItemRef>,
    /// Snap positions and angles while dragging.
    pub snapping: bool,
    /// The drag going on, if any.
    drag: Option<Drag>,
    /// Changes not yet shown in the world.
    dirty: bool,
    /// The document's validation errors, refreshed after every change.
    pub errors: Vec<(Option<ItemRef>, SceneError)>,
    /// The last save's or load's outcome, for the panel.
    pub message: Option<(bool, String)>,
    /// The "save as" path typed in the panel.
    pub save_as: String,
    /// Counts gestures, so each drag or widget is one step of undo.
    next_gesture: u64,
    /// The document edit mode was left with: editing again resumes it (with its history) while
    /// the world still shows it.
    pub parked: Option<Document>,
}

#[derive(Debug, Clone, Copy)]
enum Drag {
    /// Moving an item: where it was grabbed, relative to its position.
    Move {
        item: ItemRef,
        grab: Vec2,
        gesture: u64,
    },
    Handle {
        item: ItemRef,
        handle: Handle,
        gesture: u64,
    },
}

impl Editor {
    pub fn active(&self) -> bool {
        self.doc.is_some()
    }

    /// A new gesture key: the edits made under it are one step of undo.
    pub fn gesture(&mut self) -> u64 {
        self.next_gesture += 1;
        self.next_gesture
    }

    /// Applies an edit to the document; the selection follows it.
    pub fn apply(&mut self, edit: Edit, gesture: Option<u64>) {
        let Some(doc) = &mut self.doc else { return };
        let deleting = matches!(edit, Edit::Delete { .. });
        match doc.apply(edit, gesture) {
            Ok(Some(item)) => self.selected = Some(item),
            Ok(None) if deleting => self.selected = None,
            Ok(None) => {}
            Err(e) => self.message = Some((false, e.to_string())),
        }
        self.changed();
    }

    /// After any change of the document: validate, and rebuild the world when the pointer lets
    /// go.
    pub fn changed(&mut self) {
        if let Some(doc) = &self.doc {
            self.errors = doc.errors();
            if self.selected.is_some_and(|s| doc.item(s).is_none()) {
                self.selected = None;
            }
        }
        self.dirty = true;
    }

    pub fn undo(&mut self) {
        if let Some(doc) = &mut self.doc
            && doc.undo()
        {
            self.changed();
        }
    }

    pub fn redo(&mut self) {
        if let Some(doc) = &mut self.doc
            && doc.redo()
        {
            self.changed();
        }
    }

    /// Starts editing `doc`.
    pub fn open(&mut self, doc: Document) {
        self.save_as = doc.path.as_ref().map(|p| p.display().to_string()).unwrap_or_default();
        self.errors = doc.errors();
        self.doc = Some(doc);
        self.selected = None;
        self.drag = None;
        self.dirty = true;
        self.message = None;
    }

    /// Saves the document to `path` (atomically); the hot reload then loads it.
    pub fn save(&mut self, path: PathBuf) -> Result<PathBuf, String> {
        let Some(doc) = &mut self.doc else { return Err("nothing is being edited".into()) };
        let text = doc.save_text().map_err(|e| format!("cannot write the scene into its text: {e}"))?;
        // What is saved must read back as what is edited.
        let back =
            crate::scene::load::parse_unchecked(&text, &path.display().to_string()).map_err(|e| e.to_string())?;
        if back != doc.scene {
            return Err("the saved text would not read back as the edited scene; not saved".into());
        }
        crate::run::files::write_atomic(&path, text.as_bytes())?;
        doc.saved(text, path.clone());
        self.save_as = path.display().to_string();
        Ok(path)
    }
}

pub fn plugin(app: &mut App) {
    world_plugin(app);
    app.add_systems(
        Update,
        (editor_keys, editor_pointer, draw::draw_document)
            .chain()
            .after(crate::render::ViewSystems)
            .before(show_in_world)
            .run_if(|editor: Res<Editor>| editor.active()),
    );
    app.add_systems(Update, toggle_key.before(show_in_world));
    app.add_systems(
        bevy_egui::EguiPrimaryContextPass,
        panel::error_labels.after(super::control_panel).run_if(|editor: Res<Editor>| editor.active()),
    );
}

/// The editor's link to the simulation, which needs no window: the run pauses while editing,
/// the world is rebuilt from a valid document after each change, and a file changed on disk is
/// read again. Headless tests use it alone.
pub fn world_plugin(app: &mut App) {
    app.init_resource::<Editor>().init_resource::<EditMode>();
    // Before the fixed loop of the frame after edit mode starts, so no step runs past step 0.
    app.add_systems(PreUpdate, sync_edit_mode);
    app.add_systems(
        Update,
        (follow_file.run_if(on_message::<crate::scene::SceneLoaded>), show_in_world)
            .chain()
            .run_if(|editor: Res<Editor>| editor.active()),
    );
}

/// Starts edit mode once the first scene has loaded, selecting the item called `select`
/// (`crsim SCENE --edit [--select NAME]`).
pub fn edit_on_load(app: &mut App, select: Option<String>) {
    app.add_systems(
        Update,
        (move |mut editor: ResMut<Editor>,
               active: Option<Res<ActiveScene>>,
               mut pending: ResMut<PendingScene>,
               mut done: Local<bool>| {
            let Some(active) = active else { return };
            if *done {
                return;
            }
            *done = true;
            start_editing(&mut editor, &active, &mut pending);
            if let (Some(name), Some(doc)) = (&select, &editor.doc) {
                let found = doc.items().find(|(_, it)| it.name() == name).map(|(r, _)| r);
                editor.selected = found;
            }
        })
        .run_if(on_message::<crate::scene::SceneLoaded>),
    );
}

/// `E` turns edit mode on and off.
fn toggle_key(
    keys: Res<ButtonInput<KeyCode>>,
    wants: Res<EguiWantsInput>,
    mut editor: ResMut<Editor>,
    active: Option<Res<ActiveScene>>,
    mut pending: ResMut<PendingScene>,
) {
    if wants.wants_keyboard_input() || !keys.just_pressed(KeyCode::KeyE) {
        return;
    }
    let ctrl = keys.any_pressed([KeyCode::ControlLeft, KeyCode::ControlRight]);
    if ctrl {
        return;
    }
    if editor.active() {
        panel::stop_editing(&mut editor);
    } else if let Some(a) = active {
        start_editing(&mut editor, &a, &mut pending);
    }
}

/// Starts edit mode on the running scene: its file's text when it has one.
pub fn start_editing(editor: &mut Editor, active: &ActiveScene, pending: &mut PendingScene) {
    if let Some(doc) = editor.parked.take()
        && resolved(&doc).is_some_and(|s| s == active.scene)
    {
        editor.open(doc);
        pending.request(active.scene.clone(), active.source.clone());
        return;
    }
    let doc = match &active.source {
        SceneSource::File(path) => {
            match crate::scene::load::read_text(path).and_then(|text| Document::from_text(&text, Some(path.clone()))) {
                Ok(doc) => doc,
                Err(e) => {
                    editor.message = Some((false, format!("cannot edit {}: {e}", path.display())));
                    return;
                }
            }
        }
        SceneSource::BuiltIn => match Document::from_text(crate::scene::load::DEFAULT_SCENE, None) {
            Ok(doc) => doc,
            Err(e) => {
                editor.message = Some((false, e.to_string()));
                return;
            }
        },
        _ => match Document::from_text(&crate::scene::load::to_ron(&active.scene), None) {
            Ok(doc) => doc,
            Err(e) => {
                editor.message = Some((false, e.to_string()));
                return;
            }
        },
    };
    editor.snapping = true;
    editor.open(doc);
    // Back to step 0: the editor edits the scene's starting state.
    pending.request(active.scene.clone(), active.source.clone());
}

/// Keeps the drawing side told whether the editor has the pointer, and the run paused while
/// editing.
fn sync_edit_mode(editor: Res<Editor>, mut mode: ResMut<EditMode>, mut clock: ResMut<SimClock>) {
    if mode.0 != editor.active() {
        mode.0 = editor.active();
    }
    if editor.active() && !clock.paused {
        clock.paused = true;
    }
}

fn editor_keys(
    keys: Res<ButtonInput<KeyCode>>,
    wants: Res<EguiWantsInput>,
    mut editor: ResMut<Editor>,
    mut status: ResMut<SceneStatus>,
    mut pending: ResMut<PendingScene>,
) {
    if wants.wants_keyboard_input() {
        return;
    }
    let ctrl = keys.any_pressed([KeyCode::ControlLeft, KeyCode::ControlRight, KeyCode::SuperLeft, KeyCode::SuperRight]);
    let shift = keys.any_pressed([KeyCode::ShiftLeft, KeyCode::ShiftRight]);
    let ed = &mut *editor;
    if ctrl && keys.just_pressed(KeyCode::KeyZ) {
        if shift { ed.redo() } else { ed.undo() }
    } else if ctrl && keys.just_pressed(KeyCode::KeyY) {
        ed.redo();
    } else if ctrl && keys.just_pressed(KeyCode::KeyS) {
        save_from_panel(ed, &mut status, &mut pending);
    } else if let Some(item) = ed.selected {
        if keys.any_just_pressed([KeyCode::Delete, KeyCode::Backspace]) {
            ed.apply(Edit::Delete { item }, None);
        } else if ctrl && keys.just_pressed(KeyCode::KeyD) {
            let offset = Vec2::splat(ed.doc.as_ref().map_or(0.1, |d| d.snap().grid));
            ed.apply(Edit::Duplicate { item, offset }, None);
        } else if keys.just_pressed(KeyCode::KeyR)
            && let Some(angle) = ed.doc.as_ref().and_then(|d| d.item(item)).and_then(|it| it.angle())
        {
            let step = if shift { -15.0 } else { 15.0 };
            ed.apply(Edit::Rotate { item, degrees: angle + step }, None);
        }
    }
}

/// Saves to the panel's path; a new path becomes the scene's source.
pub fn save_from_panel(editor: &mut Editor, status: &mut SceneStatus, pending: &mut PendingScene) {
    let path = PathBuf::from(editor.save_as.trim());
    if editor.save_as.trim().is_empty() {
        editor.message = Some((false, "type a file name to save to, for example scenes/my-room.ron".into()));
        return;
    }
    let same = editor.doc.as_ref().and_then(|d| d.path.clone()) == Some(path.clone());
    match editor.save(path) {
        Ok(path) => {
            let problems = editor.errors.len();
            editor.message = Some(if problems == 0 {
                (true, format!("saved {}", path.display()))
            } else {
                (
                    false,
                    format!(
                        "saved {} with {problems} problem(s): it will not load until they are fixed",
                        path.display()
                    ),
                )
            });
            status.error = None;
            if !same && let Some(doc) = &editor.doc {
                // Follow the new file: the hot reload watches the scene's source.
                if editor.errors.is_empty()
                    && let Some(scene) = resolved(doc)
                {
                    pending.request(scene, SceneSource::File(path));
                }
            }
        }
        Err(e) => editor.message = Some((false, format!("not saved: {e}"))),
    }
}

/// The document's scene with the network structure file it names read in, ready to load.
fn resolved(doc: &Document) -> Option<crate::scene::SceneFile> {
    let mut scene = doc.scene.clone();
    let dir = doc.path.as_ref().and_then(|p| p.parent()).map_or(PathBuf::from("."), |d| d.to_path_buf());
    crate::scene::load::resolve_network(&mut scene, &dir, "scene").ok()?;
    Some(scene)
}

/// Pixels within which a handle is grabbed.
const GRAB_PX: f32 = 10.0;

fn editor_pointer(
    buttons: Res<ButtonInput<MouseButton>>,
    wants: Res<EguiWantsInput>,
    window: Single<&Window, With<PrimaryWindow>>,
    camera: Single<(&Camera, &GlobalTransform, &Projection), With<WorldCamera>>,
    panel: Res<PanelWidth>,
    mut editor: ResMut<Editor>,
) {
    let (cam, cam_t, projection) = *camera;
    let scale = match projection {
        Projection::Orthographic(o) => o.scale,
        _ => 0.01,
    };
    let cursor = window.cursor_position();
    let over_ui = wants.is_using_pointer() || wants.is_popup_open() || cursor.is_some_and(|c| c.x <= panel.0);
    let world = cursor.and_then(|c| cam.viewport_to_world_2d(cam_t, c).ok());
    let ed = &mut *editor;
    let Some(doc) = &ed.doc else { return };
    if buttons.just_pressed(MouseButton::Left) && !over_ui {
        let Some(p) = world else { return };
        let grab = GRAB_PX * scale;
        let handle = ed
            .selected
            .and_then(|s| doc.handles(s).into_iter().find(|(_, at)| at.distance(p) <= grab).map(|(h, _)| (s, h)));
        ed.drag = if let Some((item, handle)) = handle {
            Some(Drag::Handle { item, handle, gesture: 0 })
        } else if let Some(item) = doc.pick(p, 4.0 * scale) {
            ed.selected = Some(item);
            let at = doc.item(item).map_or(p, |it| it.position());
            Some(Drag::Move { item, grab: at - p, gesture: 0 })
        } else {
            ed.selected = None;
            None
        };
        let g = ed.gesture();
        match &mut ed.drag {
            Some(Drag::Move { gesture, .. } | Drag::Handle { gesture, .. }) => *gesture = g,
            None => {}
        }
        return;
    }
    if buttons.pressed(MouseButton::Left)
        && let (Some(drag), Some(p)) = (ed.drag, world)
    {
        let snap = if ed.snapping { doc.snap() } else { Snap::OFF };
        let (edit, gesture) = match drag {
            Drag::Move { item, grab, gesture } => {
                let Some(it) = doc.item(item) else { return };
                let to = snap.position(&it, p + grab);
                if to.distance(it.position()) < 1e-4 {
                    return;
                }
                (Some(Edit::Move { item, to }), gesture)
            }
            Drag::Handle { item, handle, gesture } => (doc.drag_handle(item, handle, p, snap), gesture),
        };
        if let Some(edit) = edit {
            ed.apply(edit, Some(gesture));
        }
    }
    if buttons.just_released(MouseButton::Left) {
        ed.drag = None;
        if let Some(doc) = &mut ed.doc {
            doc.end_gesture();
        }
    }
}

/// A scene loaded from the document's file while editing: when someone else changed the file
/// (it is not the text the document last read or saved), an unchanged document reads it again;
/// a changed one says that saving will overwrite it.
fn follow_file(mut editor: ResMut<Editor>, active: Option<Res<ActiveScene>>) {
    let Some(active) = active else { return };
    let Some(doc) = &editor.doc else { return };
    let (SceneSource::File(path), Some(own)) = (&active.source, &doc.path) else { return };
    if path != own {
        return;
    }
    let Ok(text) = crate::scene::load::read_text(path) else { return };
    if text == doc.text() {
        return;
    }
    if doc.modified() {
        editor.message =
            Some((false, format!("{} changed on disk; saving will overwrite it with this document", path.display())));
        return;
    }
    match Document::from_text(&text, Some(path.clone())) {
        Ok(new) => {
            let selected = editor.selected.and_then(|s| doc.item(s)).and_then(|it| new.find(it.kind(), it.name()));
            editor.open(new);
            editor.selected = selected;
            editor.message = Some((true, format!("read {} again: it changed on disk", path.display())));
        }
        Err(e) => editor.message = Some((false, e.to_string())),
    }
}

/// Rebuilds the world from the document after a change, once the pointer lets go, when the
/// document is valid (an invalid one keeps the last valid world; its errors are on the items).
pub fn show_in_world(
    buttons: Option<Res<ButtonInput<MouseButton>>>,
    mut editor: ResMut<Editor>,
    active: Option<Res<ActiveScene>>,
    mut pending: ResMut<PendingScene>,
) {
    // No mouse (headless) is a mouse not pressed.
    let dragging = buttons.is_some_and(|b| b.pressed(MouseButton::Left));
    if !editor.dirty || dragging || !editor.errors.is_empty() {
        return;
    }
    editor.dirty = false;
    let Some(doc) = &editor.doc else { return };
    let Some(scene) = resolved(doc) else {
        editor.message = Some((false, "the network structure file the scene names cannot be read".into()));
        return;
    };
    if active.as_ref().is_some_and(|a| a.scene == scene) {
        return;
    }
    let source = match (&doc.path, active.as_ref().map(|a| &a.source)) {
        (Some(p), _) => SceneSource::File(p.clone()),
        // The built-in scene, edited, is no longer the built-in scene.
        (None, Some(SceneSource::BuiltIn)) | (None, None) => SceneSource::Generated,
        (None, Some(s)) => s.clone(),
    };
    pending.request(scene, source);
}

/// The palette's kinds, with their button labels.
pub const PALETTE: [(ItemKind, &str); 7] = [
    (ItemKind::Robot, "robot"),
    (ItemKind::Pen, "pen"),
    (ItemKind::Box, "box"),
    (ItemKind::Wall, "wall"),
    (ItemKind::Den, "den"),
    (ItemKind::Station, "station"),
    (ItemKind::Sonar, "sonar"),
];
