//! The scene editor's document and operations, as plain types tested without a window: select
//! (pick), move, rotate and resize any item, add one from the palette, duplicate, delete, set an
//! item's fields; snapping to a grid; undo and redo; live validation mapped onto the items at
//! fault; and saving into the text the scene came from, keeping what was not touched
//! ([`text`]). The app's edit mode (`ui/editor.rs`) is thin glue around [`Document`].

use std::path::PathBuf;

use bevy::math::{Rot2, Vec2};
use serde::Serialize;

use super::error::{SceneError, SceneLoadError};
use super::geometry::{Footprint, box_footprint, wall_footprint};
use super::schema::*;
use super::validate::validate;

pub mod text;

/// The kinds of item a scene lists, in the order they are drawn from the back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ItemKind {
    Wall,
    Box,
    Den,
    Station,
    Sonar,
    Pen,
    Robot,
}

impl ItemKind {
    pub const ALL: [ItemKind; 7] = [
        ItemKind::Wall,
        ItemKind::Box,
        ItemKind::Den,
        ItemKind::Station,
        ItemKind::Sonar,
        ItemKind::Pen,
        ItemKind::Robot,
    ];

    /// The word validation errors use: `robot "r1"`.
    pub fn name(self) -> &'static str {
        match self {
            ItemKind::Wall => "wall",
            ItemKind::Box => "box",
            ItemKind::Den => "den",
            ItemKind::Station => "station",
            ItemKind::Sonar => "sonar",
            ItemKind::Pen => "pen",
            ItemKind::Robot => "robot",
        }
    }

    /// The scene file's list.
    pub fn field(self) -> &'static str {
        match self {
            ItemKind::Wall => "walls",
            ItemKind::Box => "boxes",
            ItemKind::Den => "dens",
            ItemKind::Station => "stations",
            ItemKind::Sonar => "sonars",
            ItemKind::Pen => "pens",
            ItemKind::Robot => "robots",
        }
    }

    fn slot(self) -> usize {
        self as usize
    }
}

/// An item of the document: its kind and its index in that kind's list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ItemRef {
    pub kind: ItemKind,
    pub index: usize,
}

/// One item's specification, of any kind.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    Wall(WallSpec),
    Box(BoxSpec),
    Den(DenSpec),
    Station(StationSpec),
    Sonar(SonarSpec),
    Pen(PenSpec),
    Robot(RobotSpec),
}

fn v(p: Vec2f) -> Vec2 {
    Vec2::new(p.0, p.1)
}

fn f(p: Vec2) -> Vec2f {
    (p.x, p.y)
}

/// Rounds to a millimetre (a tenth of a degree for angles), so dragged values read well in the
/// file.
fn mm(x: f32) -> f32 {
    (x * 1000.0).round() / 1000.0
}

fn deg(x: f32) -> f32 {
    let d = (x * 10.0).round() / 10.0;
    // Headings in (-180, 180].
    let d = d.rem_euclid(360.0);
    if d > 180.0 { d - 360.0 } else { d }
}

impl Item {
    pub fn kind(&self) -> ItemKind {
        match self {
            Item::Wall(_) => ItemKind::Wall,
            Item::Box(_) => ItemKind::Box,
            Item::Den(_) => ItemKind::Den,
            Item::Station(_) => ItemKind::Station,
            Item::Sonar(_) => ItemKind::Sonar,
            Item::Pen(_) => ItemKind::Pen,
            Item::Robot(_) => ItemKind::Robot,
        }
    }

    pub fn name(&self) -> &str {
        match self {
            Item::Wall(x) => &x.name,
            Item::Box(x) => &x.name,
            Item::Den(x) => &x.name,
            Item::Station(x) => &x.name,
            Item::Sonar(x) => &x.name,
            Item::Pen(x) => &x.name,
            Item::Robot(x) => &x.name,
        }
    }

    pub fn name_mut(&mut self) -> &mut String {
        match self {
            Item::Wall(x) => &mut x.name,
            Item::Box(x) => &mut x.name,
            Item::Den(x) => &mut x.name,
            Item::Station(x) => &mut x.name,
            Item::Sonar(x) => &mut x.name,
            Item::Pen(x) => &mut x.name,
            Item::Robot(x) => &mut x.name,
        }
    }

    /// Where the item is: a disc's or box's centre, a wall's midpoint.
    pub fn position(&self) -> Vec2 {
        match self {
            Item::Wall(w) => (v(w.from) + v(w.to)) / 2.0,
            Item::Box(b) => v(b.center),
            Item::Den(d) => v(d.pos),
            Item::Station(s) => v(s.pos),
            Item::Sonar(s) => v(s.pos),
            Item::Pen(p) => v(p.pos),
            Item::Robot(r) => Vec2::new(r.pose.0, r.pose.1),
        }
    }

    /// Its angle in degrees: a robot's heading, a box's angle, a sonar's axis, a wall's
    /// direction; none for round items.
    pub fn angle(&self) -> Option<f32> {
        match self {
            Item::Wall(w) => {
                let d = v(w.to) - v(w.from);
                Some(d.y.atan2(d.x).to_degrees())
            }
            Item::Box(b) => Some(b.angle),
            Item::Sonar(s) => Some(s.axis),
            Item::Robot(r) => Some(r.pose.2),
            _ => None,
        }
    }

    /// The radius of a round item (a sonar's mark is drawn with a tenth of a metre).
    pub fn radius(&self) -> Option<f32> {
        match self {
            Item::Den(d) => Some(d.radius),
            Item::Station(s) => Some(s.radius),
            Item::Pen(p) => Some(p.radius),
            Item::Robot(r) => Some(r.radius),
            Item::Sonar(s) => Some((s.width / 2.0).max(0.05)),
            _ => None,
        }
    }

    /// The area it covers, for picking.
    pub fn footprint(&self) -> Footprint {
        match self {
            Item::Wall(w) => wall_footprint(v(w.from), v(w.to), w.thickness),
            Item::Box(b) => box_footprint(b),
            other => Footprint::Circle { center: other.position(), radius: other.radius().unwrap_or(0.05) },
        }
    }

    fn move_to(&mut self, to: Vec2) {
        let delta = to - self.position();
        match self {
            Item::Wall(w) => {
                w.from = f((v(w.from) + delta).map(mm));
                w.to = f((v(w.to) + delta).map(mm));
            }
            Item::Box(b) => b.center = f(to.map(mm)),
            Item::Den(d) => d.pos = f(to.map(mm)),
            Item::Station(s) => s.pos = f(to.map(mm)),
            Item::Sonar(s) => s.pos = f(to.map(mm)),
            Item::Pen(p) => p.pos = f(to.map(mm)),
            Item::Robot(r) => r.pose = (mm(to.x), mm(to.y), r.pose.2),
        }
    }

    fn rotate_to(&mut self, degrees: f32) {
        let a = deg(degrees);
        match self {
            Item::Wall(w) => {
                let (mid, half) = ((v(w.from) + v(w.to)) / 2.0, v(w.to).distance(v(w.from)) / 2.0);
                let d = Vec2::from_angle(a.to_radians()) * half;
                w.from = f((mid - d).map(mm));
                w.to = f((mid + d).map(mm));
            }
            Item::Box(b) => b.angle = a,
            Item::Sonar(s) => s.axis = a,
            Item::Robot(r) => r.pose.2 = a,
            _ => {}
        }
    }

    /// Resizes: a box to `size`, a wall to length `size.x` and thickness `size.y`, a round item
    /// to radius `size.x`, a sonar to range `size.x` (0: unlimited) and width `size.y`.
    fn resize(&mut self, size: Vec2) {
        let size = size.map(mm).max(Vec2::splat(0.001));
        match self {
            Item::Wall(w) => {
                let (a, b) = (v(w.from), v(w.to));
                let dir = (b - a).try_normalize().unwrap_or(Vec2::X);
                let mid = (a + b) / 2.0;
                w.from = f((mid - dir * size.x / 2.0).map(mm));
                w.to = f((mid + dir * size.x / 2.0).map(mm));
                w.thickness = size.y;
            }
            Item::Box(b) => b.size = f(size),
            Item::Den(d) => d.radius = size.x,
            Item::Station(s) => s.radius = size.x,
            Item::Pen(p) => p.radius = size.x,
            Item::Robot(r) => r.radius = size.x,
            Item::Sonar(s) => {
                s.range = (size.x > 0.001).then_some(size.x);
                s.width = size.y;
            }
        }
    }

    /// Its size as [`Edit::Resize`] takes it.
    pub fn size(&self) -> Vec2 {
        match self {
            Item::Wall(w) => Vec2::new(v(w.to).distance(v(w.from)), w.thickness),
            Item::Box(b) => v(b.size),
            Item::Sonar(s) => Vec2::new(s.range.unwrap_or(0.0), s.width),
            other => Vec2::splat(other.radius().unwrap_or(0.0)),
        }
    }
}

/// A grab point of the selected item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Handle {
    /// Turns the item about its centre.
    Rotate,
    /// A box's corner, a round item's rim, a sonar's beam end: resizes.
    Resize,
    /// One end of a wall (0: `from`, 1: `to`).
    WallEnd(u8),
}

/// Snapping while dragging: positions to a grid, angles to steps.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Snap {
    /// Grid spacing, metres; 0 turns snapping off.
    pub grid: f32,
    /// Round items go to cell centres (the explorer's robot-unit cells) rather than grid lines.
    pub cell_centres: bool,
    /// Angle step, degrees.
    pub angle: f32,
}

impl Snap {
    pub const OFF: Snap = Snap { grid: 0.0, cell_centres: false, angle: 0.0 };

    fn line(&self, x: f32) -> f32 {
        if self.grid > 0.0 { (x / self.grid).round() * self.grid } else { x }
    }

    fn centre(&self, x: f32) -> f32 {
        if self.grid > 0.0 && self.cell_centres {
            ((x / self.grid - 0.5).round() + 0.5) * self.grid
        } else {
            self.line(x)
        }
    }

    fn angle(&self, a: f32) -> f32 {
        if self.angle > 0.0 { (a / self.angle).round() * self.angle } else { a }
    }

    /// Where an item dragged to `to` lands: a box with its lower-left corner on the grid (as
    /// rotated by 0° or 180°; rotated boxes by their centre), a wall with its ends and round
    /// items on cell centres (explorer rooms) or grid points.
    pub fn position(&self, item: &Item, to: Vec2) -> Vec2 {
        if self.grid <= 0.0 {
            return to;
        }
        match item {
            Item::Box(b) if b.angle.rem_euclid(180.0) == 0.0 => {
                let half = v(b.size) / 2.0;
                Vec2::new(self.line(to.x - half.x) + half.x, self.line(to.y - half.y) + half.y)
            }
            Item::Box(_) => to.map(|x| self.line(x)),
            Item::Wall(w) => {
                // In an explorer room a wall's ends sit on cell centres, so the wall fills whole
                // cells, as the explorer's mental map will see it.
                let from = v(w.from) + (to - item.position());
                let snapped = from.map(|x| self.centre(x));
                to + (snapped - from)
            }
            _ => to.map(|x| self.centre(x)),
        }
    }
}

/// One change to the document.
#[derive(Debug, Clone, PartialEq)]
// An edit holds a whole item when it replaces one (a robot with its kind fields is the largest):
// edits are made one at a time by a person and kept in a short undo list, so their size is no cost.
#[allow(clippy::large_enum_variant)]
pub enum Edit {
    /// Moves the item's position (centre, midpoint) to `to`.
    Move {
        item: ItemRef,
        to: Vec2,
    },
    /// Sets the item's angle, degrees.
    Rotate {
        item: ItemRef,
        degrees: f32,
    },
    /// Sets its size as [`Item::size`] gives it.
    Resize {
        item: ItemRef,
        size: Vec2,
    },
    /// Moves one end of a wall.
    WallEnd {
        item: ItemRef,
        end: u8,
        to: Vec2,
    },
    /// Adds an item of this kind from the palette at `at`, with a fresh name.
    Add {
        kind: ItemKind,
        at: Vec2,
    },
    /// Copies the item under a fresh name, `offset` away.
    Duplicate {
        item: ItemRef,
        offset: Vec2,
    },
    Delete {
        item: ItemRef,
    },
    /// Replaces the item's fields (from the panel; it keeps its kind).
    Set {
        item: ItemRef,
        to: Item,
    },
    /// Replaces the arena (size, boundary walls).
    Arena(ArenaSpec),
    /// Renames the scene.
    Rename(String),
}

/// Why an edit was refused.
#[derive(Debug, Clone, PartialEq)]
pub enum EditError {
    NoSuchItem(ItemRef),
    WrongKind { item: ItemRef, given: ItemKind },
}

impl std::fmt::Display for EditError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EditError::NoSuchItem(r) => write!(f, "there is no {} number {}", r.kind.name(), r.index + 1),
            EditError::WrongKind { item, given } => {
                write!(f, "a {} cannot become a {}", item.kind.name(), given.name())
            }
        }
    }
}

/// Everything undo restores: the scene and where each item came from in the text.
#[derive(Debug, Clone, PartialEq)]
struct State {
    scene: SceneFile,
    origins: [Vec<Option<usize>>; 7],
}

/// The scene being edited, the text it was read from, and its history.
#[derive(Debug, Clone)]
pub struct Document {
    pub scene: SceneFile,
    /// Per kind, per item: its index in the text's list (`None`: added in the editor).
    origins: [Vec<Option<usize>>; 7],
    /// The text the scene was read from (or last saved as), and the scene it gives.
    text: String,
    base: SceneFile,
    /// Where it is saved; `None` for a new scene not saved yet.
    pub path: Option<PathBuf>,
    undo: Vec<(State, Option<u64>)>,
    redo: Vec<State>,
    /// The gesture (a drag, one widget's edits) the last edit belonged to: its later edits are
    /// one step of undo.
    gesture: Option<u64>,
}

/// The most steps undo keeps.
pub const UNDO_LIMIT: usize = 500;

impl Document {
    /// Reads scene text for editing: its syntax must be right; semantic problems are shown on
    /// the items, as the editor's live validation does.
    pub fn from_text(text: &str, path: Option<PathBuf>) -> Result<Self, SceneLoadError> {
        let shown = path.as_ref().map_or("<new scene>".to_string(), |p| p.display().to_string());
        let scene = super::load::parse_unchecked(text, &shown)?;
        let origins = ItemKind::ALL.map(|k| (0..list_len(&scene, k)).map(Some).collect());
        Ok(Self {
            base: scene.clone(),
            scene,
            origins,
            text: text.to_string(),
            path,
            undo: Vec::new(),
            redo: Vec::new(),
            gesture: None,
        })
    }

    /// A new explorer room from the template: a closed 3 m × 2 m room, a den in its top-left
    /// corner and a cautious explorer in it.
    pub fn new_scene() -> Self {
        Self::from_text(NEW_SCENE, None).expect("the template parses")
    }

    /// The text it was read from or last saved as.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Whether there are changes not saved.
    pub fn modified(&self) -> bool {
        self.scene != self.base || self.path.is_none() || self.origins.iter().flatten().any(Option::is_none)
    }

    pub fn item(&self, r: ItemRef) -> Option<Item> {
        let s = &self.scene;
        let i = r.index;
        Some(match r.kind {
            ItemKind::Wall => Item::Wall(s.walls.get(i)?.clone()),
            ItemKind::Box => Item::Box(s.boxes.get(i)?.clone()),
            ItemKind::Den => Item::Den(s.dens.get(i)?.clone()),
            ItemKind::Station => Item::Station(s.stations.get(i)?.clone()),
            ItemKind::Sonar => Item::Sonar(s.sonars.get(i)?.clone()),
            ItemKind::Pen => Item::Pen(s.pens.get(i)?.clone()),
            ItemKind::Robot => Item::Robot(s.robots.get(i)?.clone()),
        })
    }

    /// Every item, from the back (walls) to the front (robots).
    pub fn items(&self) -> impl Iterator<Item = (ItemRef, Item)> + '_ {
        ItemKind::ALL.into_iter().flat_map(move |kind| {
            (0..list_len(&self.scene, kind)).filter_map(move |index| {
                let r = ItemRef { kind, index };
                self.item(r).map(|it| (r, it))
            })
        })
    }

    /// The item by kind and name.
    pub fn find(&self, kind: ItemKind, name: &str) -> Option<ItemRef> {
        self.items().find(|(r, it)| r.kind == kind && it.name() == name).map(|(r, _)| r)
    }

    fn put(&mut self, r: ItemRef, item: Item) -> Result<(), EditError> {
        let s = &mut self.scene;
        let i = r.index;
        let missing = EditError::NoSuchItem(r);
        let given = item.kind();
        match (r.kind, item) {
            (ItemKind::Wall, Item::Wall(x)) => *s.walls.get_mut(i).ok_or(missing)? = x,
            (ItemKind::Box, Item::Box(x)) => *s.boxes.get_mut(i).ok_or(missing)? = x,
            (ItemKind::Den, Item::Den(x)) => *s.dens.get_mut(i).ok_or(missing)? = x,
            (ItemKind::Station, Item::Station(x)) => *s.stations.get_mut(i).ok_or(missing)? = x,
            (ItemKind::Sonar, Item::Sonar(x)) => *s.sonars.get_mut(i).ok_or(missing)? = x,
            (ItemKind::Pen, Item::Pen(x)) => *s.pens.get_mut(i).ok_or(missing)? = x,
            (ItemKind::Robot, Item::Robot(x)) => *s.robots.get_mut(i).ok_or(missing)? = x,
            _ => return Err(EditError::WrongKind { item: r, given }),
        }
        Ok(())
    }

    /// Appends `item` to its list; returns where.
    fn push(&mut self, item: Item) -> ItemRef {
        let kind = item.kind();
        let s = &mut self.scene;
        match item {
            Item::Wall(x) => s.walls.push(x),
            Item::Box(x) => s.boxes.push(x),
            Item::Den(x) => s.dens.push(x),
            Item::Station(x) => s.stations.push(x),
            Item::Sonar(x) => s.sonars.push(x),
            Item::Pen(x) => s.pens.push(x),
            Item::Robot(x) => s.robots.push(x),
        }
        self.origins[kind.slot()].push(None);
        ItemRef { kind, index: list_len(&self.scene, kind) - 1 }
    }

    fn remove(&mut self, r: ItemRef) -> Result<(), EditError> {
        if r.index >= list_len(&self.scene, r.kind) {
            return Err(EditError::NoSuchItem(r));
        }
        let s = &mut self.scene;
        let i = r.index;
        match r.kind {
            ItemKind::Wall => drop(s.walls.remove(i)),
            ItemKind::Box => drop(s.boxes.remove(i)),
            ItemKind::Den => drop(s.dens.remove(i)),
            ItemKind::Station => drop(s.stations.remove(i)),
            ItemKind::Sonar => drop(s.sonars.remove(i)),
            ItemKind::Pen => drop(s.pens.remove(i)),
            ItemKind::Robot => drop(s.robots.remove(i)),
        }
        self.origins[r.kind.slot()].remove(i);
        Ok(())
    }

    /// A name no item uses: `pen1`, `pen2`, … (`base` stripped of its trailing digits).
    pub fn fresh_name(&self, base: &str) -> String {
        let stem = base.trim_end_matches(|c: char| c.is_ascii_digit());
        let stem = if stem.is_empty() { "item" } else { stem };
        let used: std::collections::HashSet<String> = self
            .items()
            .map(|(_, it)| it.name().to_string())
            .chain(super::geometry::boundary_walls(&self.scene.arena).into_iter().map(|w| w.name))
            .collect();
        (1..).map(|n| format!("{stem}{n}")).find(|n| !used.contains(n)).expect("some number is free")
    }

    /// A new item of `kind` at `at` as the palette adds it: the scene's defaults, and for a
    /// robot the controller (and den) of the scene's last robot.
    pub fn template(&self, kind: ItemKind, at: Vec2) -> Item {
        let name = self.fresh_name(kind.name());
        let (x, y) = (mm(at.x), mm(at.y));
        let text = match kind {
            ItemKind::Wall => {
                format!("(name: {name:?}, from: ({:?}, {y:?}), to: ({:?}, {y:?}))", mm(x - 0.5), mm(x + 0.5))
            }
            ItemKind::Box => format!("(name: {name:?}, center: ({x:?}, {y:?}), size: (0.4, 0.4))"),
            ItemKind::Den => format!("(name: {name:?}, pos: ({x:?}, {y:?}))"),
            ItemKind::Station => format!("(name: {name:?}, pos: ({x:?}, {y:?}))"),
            ItemKind::Sonar => format!("(name: {name:?}, pos: ({x:?}, {y:?}), axis: 90.0, width: 0.1)"),
            ItemKind::Pen => format!("(name: {name:?}, pos: ({x:?}, {y:?}))"),
            ItemKind::Robot => format!("(name: {name:?}, pose: ({x:?}, {y:?}, 0.0))"),
        };
        let item = match kind {
            ItemKind::Wall => ron::from_str(&text).map(Item::Wall),
            ItemKind::Box => ron::from_str(&text).map(Item::Box),
            ItemKind::Den => ron::from_str(&text).map(Item::Den),
            ItemKind::Station => ron::from_str(&text).map(Item::Station),
            ItemKind::Sonar => ron::from_str(&text).map(Item::Sonar),
            ItemKind::Pen => ron::from_str(&text).map(Item::Pen),
            ItemKind::Robot => ron::from_str(&text).map(Item::Robot),
        };
        let mut item = item.expect("palette templates parse");
        if let Item::Robot(r) = &mut item {
            match self.scene.robots.last() {
                Some(last) => {
                    let name = std::mem::take(&mut r.name);
                    *r = RobotSpec { name, pose: r.pose, outside: None, ..last.clone() };
                    if let ControllerSpec::External { .. } = r.controller {
                        r.controller = ControllerSpec::External { port: 0 };
                    }
                }
                None => {
                    r.controller = ControllerSpec::Wander { speed: 0.5 };
                }
            }
            if r.den.is_none()
                && let ControllerSpec::Explorer { .. } = r.controller
            {
                r.den = self.scene.dens.first().map(|d| d.name.clone());
            }
        }
        item
    }

    /// Applies `edit`, recording it for undo. Edits with the same `gesture` in a row are one
    /// step of undo (a drag, typing in one field). Returns the item to select afterwards.
    pub fn apply(&mut self, edit: Edit, gesture: Option<u64>) -> Result<Option<ItemRef>, EditError> {
        let before = self.state();
        let selected = self.apply_unrecorded(edit)?;
        if before != self.state() {
            if gesture.is_none() || gesture != self.gesture {
                self.undo.push((before, gesture));
                if self.undo.len() > UNDO_LIMIT {
                    self.undo.remove(0);
                }
            }
            self.redo.clear();
        }
        self.gesture = gesture;
        Ok(selected)
    }

    /// Ends the current gesture: the next edit is a new step of undo even with the same key.
    pub fn end_gesture(&mut self) {
        self.gesture = None;
    }

    fn state(&self) -> State {
        State { scene: self.scene.clone(), origins: self.origins.clone() }
    }

    fn restore(&mut self, s: State) {
        self.scene = s.scene;
        self.origins = s.origins;
    }

    fn apply_unrecorded(&mut self, edit: Edit) -> Result<Option<ItemRef>, EditError> {
        let get = |doc: &Self, r: ItemRef| doc.item(r).ok_or(EditError::NoSuchItem(r));
        match edit {
            Edit::Move { item, to } => {
                let mut it = get(self, item)?;
                it.move_to(to);
                self.put(item, it)?;
                Ok(Some(item))
            }
            Edit::Rotate { item, degrees } => {
                let mut it = get(self, item)?;
                it.rotate_to(degrees);
                self.put(item, it)?;
                Ok(Some(item))
            }
            Edit::Resize { item, size } => {
                let mut it = get(self, item)?;
                it.resize(size);
                self.put(item, it)?;
                Ok(Some(item))
            }
            Edit::WallEnd { item, end, to } => {
                let Item::Wall(mut w) = get(self, item)? else {
                    return Err(EditError::WrongKind { item, given: ItemKind::Wall });
                };
                let to = f(to.map(mm));
                if end == 0 {
                    w.from = to;
                } else {
                    w.to = to;
                }
                self.put(item, Item::Wall(w))?;
                Ok(Some(item))
            }
            Edit::Add { kind, at } => {
                let it = self.template(kind, at);
                Ok(Some(self.push(it)))
            }
            Edit::Duplicate { item, offset } => {
                let mut it = get(self, item)?;
                *it.name_mut() = self.fresh_name(it.name());
                let at = it.position() + offset;
                it.move_to(at);
                if let Item::Robot(r) = &mut it {
                    r.outside = None;
                }
                Ok(Some(self.push(it)))
            }
            Edit::Delete { item } => {
                self.remove(item)?;
                Ok(None)
            }
            Edit::Set { item, to } => {
                self.put(item, to)?;
                Ok(Some(item))
            }
            Edit::Arena(a) => {
                self.scene.arena = a;
                Ok(None)
            }
            Edit::Rename(name) => {
                self.scene.name = name;
                Ok(None)
            }
        }
    }

    pub fn can_undo(&self) -> bool {
        !self.undo.is_empty()
    }

    pub fn can_redo(&self) -> bool {
        !self.redo.is_empty()
    }

    /// Undoes the last step; false when there is none.
    pub fn undo(&mut self) -> bool {
        let Some((state, _)) = self.undo.pop() else { return false };
        self.redo.push(self.state());
        self.restore(state);
        self.gesture = None;
        true
    }

    /// Redoes the last undone step; false when there is none.
    pub fn redo(&mut self) -> bool {
        let Some(state) = self.redo.pop() else { return false };
        self.undo.push((self.state(), None));
        self.restore(state);
        self.gesture = None;
        true
    }

    /// The topmost item at `p`, within `slack` metres (robots and pens before the floor's
    /// items, walls last).
    pub fn pick(&self, p: Vec2, slack: f32) -> Option<ItemRef> {
        let mut best: Option<(ItemRef, f32)> = None;
        for (r, it) in self.items() {
            let d = it.footprint().signed_distance(p);
            if d <= slack {
                // Later kinds are on top; within a kind, the nearest.
                let better = best.is_none_or(|(b, bd)| r.kind > b.kind || (r.kind == b.kind && d < bd));
                if better {
                    best = Some((r, d));
                }
            }
        }
        best.map(|(r, _)| r)
    }

    /// The grab points of an item and where they are.
    pub fn handles(&self, r: ItemRef) -> Vec<(Handle, Vec2)> {
        let Some(it) = self.item(r) else { return vec![] };
        let p = it.position();
        match &it {
            Item::Wall(w) => vec![(Handle::WallEnd(0), v(w.from)), (Handle::WallEnd(1), v(w.to))],
            Item::Box(b) => {
                let rot = Rot2::degrees(b.angle);
                let half = v(b.size) / 2.0;
                vec![(Handle::Resize, p + rot * half), (Handle::Rotate, p + rot * Vec2::new(half.x + 0.15, 0.0))]
            }
            Item::Robot(rb) => {
                let dir = Vec2::from_angle(rb.pose.2.to_radians());
                vec![(Handle::Rotate, p + dir * (rb.radius + 0.15)), (Handle::Resize, p + dir.perp() * rb.radius)]
            }
            Item::Sonar(s) => {
                let dir = Vec2::from_angle(s.axis.to_radians());
                let mut h = vec![(Handle::Rotate, p + dir * 0.3)];
                if let Some(range) = s.range {
                    h.push((Handle::Resize, p + dir * range));
                }
                h
            }
            other => vec![(Handle::Resize, p + Vec2::X * other.radius().unwrap_or(0.05))],
        }
    }

    /// The edit a drag of `handle` to `p` asks for.
    pub fn drag_handle(&self, r: ItemRef, handle: Handle, p: Vec2, snap: Snap) -> Option<Edit> {
        let it = self.item(r)?;
        let c = it.position();
        Some(match (handle, &it) {
            (Handle::WallEnd(end), _) => Edit::WallEnd { item: r, end, to: p.map(|x| snap.centre(x)) },
            (Handle::Rotate, _) => {
                let d = p - c;
                Edit::Rotate { item: r, degrees: snap.angle(d.y.atan2(d.x).to_degrees()) }
            }
            (Handle::Resize, Item::Box(b)) => {
                // The corner follows the pointer in the box's own frame; sizes on the grid.
                let local = Rot2::degrees(b.angle).inverse() * (p - c);
                let size = (local.abs() * 2.0).map(|x| snap.line(x).max(snap.grid.max(0.01)));
                Edit::Resize { item: r, size }
            }
            (Handle::Resize, Item::Sonar(s)) => {
                let range = (p - c).dot(Vec2::from_angle(s.axis.to_radians())).max(0.01);
                Edit::Resize { item: r, size: Vec2::new(range, s.width) }
            }
            (Handle::Resize, _) => Edit::Resize { item: r, size: Vec2::splat(p.distance(c).max(0.01)) },
        })
    }

    /// The grid the editor snaps to: the explorers' robot unit (their cells' centres) when the
    /// scene has explorers, a tenth of a metre otherwise; angles by 15°.
    pub fn snap(&self) -> Snap {
        let unit = self
            .scene
            .robots
            .iter()
            .find(|r| matches!(r.controller, ControllerSpec::Explorer { .. }))
            .map(|r| 2.0 * r.radius);
        match unit {
            Some(u) if u > 0.0 => Snap { grid: u, cell_centres: true, angle: 15.0 },
            _ => Snap { grid: 0.1, cell_centres: false, angle: 15.0 },
        }
    }

    /// `crsim check`'s errors for the scene as it is now, each with the item it names (`None`:
    /// the scene as a whole, the arena, the radio, …).
    pub fn errors(&self) -> Vec<(Option<ItemRef>, SceneError)> {
        validate(&self.scene)
            .into_iter()
            .flat_map(|e| {
                let items = self.items_named_by(&e.item);
                if items.is_empty() {
                    vec![(None, e)]
                } else {
                    items.into_iter().map(|r| (Some(r), e.clone())).collect()
                }
            })
            .collect()
    }

    /// The items an error's `item` names: `robot "r1"` (every item of that kind and name), or
    /// `pen number 3 in pens`.
    fn items_named_by(&self, what: &str) -> Vec<ItemRef> {
        for kind in ItemKind::ALL {
            if let Some(rest) = what.strip_prefix(kind.name()).and_then(|r| r.strip_prefix(' ')) {
                if let Some(name) = rest.strip_prefix('"').and_then(|r| r.strip_suffix('"')) {
                    return self
                        .items()
                        .filter(|(r, it)| r.kind == kind && it.name() == name)
                        .map(|(r, _)| r)
                        .collect();
                }
                if let Some(n) = rest.strip_prefix("number ").and_then(|r| r.split(' ').next())
                    && let Ok(n) = n.parse::<usize>()
                    && rest.ends_with(&format!("in {}", kind.field()))
                    && n >= 1
                {
                    return vec![ItemRef { kind, index: n - 1 }];
                }
            }
        }
        Vec::new()
    }

    /// The text to save: the text the scene came from with only the changes written into it.
    pub fn save_text(&self) -> Result<String, text::TextError> {
        let lists: Vec<text::ListChange> = ItemKind::ALL
            .into_iter()
            .map(|kind| {
                let old = serialised(&self.base, kind);
                let now = serialised(&self.scene, kind);
                let indent = "        ";
                let new = self.origins[kind.slot()]
                    .iter()
                    .zip(now)
                    .enumerate()
                    .map(|(i, (o, s))| {
                        let fresh = match (o, self.item(ItemRef { kind, index: i })) {
                            (None, Some(it)) => minimal_item(&it, indent),
                            _ => String::new(),
                        };
                        (*o, s, fresh)
                    })
                    .collect();
                text::ListChange { field: kind.field(), old, new }
            })
            .collect();
        text::save_into(&self.text, &text::compact(&self.base), &text::compact(&self.scene), &lists)
    }

    /// The document was written as `text` to `path`: that text is now what later saves edit.
    pub fn saved(&mut self, text: String, path: PathBuf) {
        self.base = self.scene.clone();
        self.text = text;
        self.path = Some(path);
        self.origins = ItemKind::ALL.map(|k| (0..list_len(&self.scene, k)).map(Some).collect());
    }
}

fn list_len(s: &SceneFile, kind: ItemKind) -> usize {
    match kind {
        ItemKind::Wall => s.walls.len(),
        ItemKind::Box => s.boxes.len(),
        ItemKind::Den => s.dens.len(),
        ItemKind::Station => s.stations.len(),
        ItemKind::Sonar => s.sonars.len(),
        ItemKind::Pen => s.pens.len(),
        ItemKind::Robot => s.robots.len(),
    }
}

fn each<T: Serialize>(items: &[T]) -> Vec<String> {
    items.iter().map(text::compact).collect()
}

fn serialised(s: &SceneFile, kind: ItemKind) -> Vec<String> {
    match kind {
        ItemKind::Wall => each(&s.walls),
        ItemKind::Box => each(&s.boxes),
        ItemKind::Den => each(&s.dens),
        ItemKind::Station => each(&s.stations),
        ItemKind::Sonar => each(&s.sonars),
        ItemKind::Pen => each(&s.pens),
        ItemKind::Robot => each(&s.robots),
    }
}

fn minimal_item(it: &Item, indent: &str) -> String {
    match it {
        Item::Wall(x) => text::minimal(x, indent),
        Item::Box(x) => text::minimal(x, indent),
        Item::Den(x) => text::minimal(x, indent),
        Item::Station(x) => text::minimal(x, indent),
        Item::Sonar(x) => text::minimal(x, indent),
        Item::Pen(x) => text::minimal(x, indent),
        Item::Robot(x) => text::minimal(x, indent),
    }
}

/// The template of "new scene": an explorer room to build on.
pub const NEW_SCENE: &str = r#"// A new explorer room: a closed room, a den in its top-left corner and a cautious explorer
// (seed 002) in it. Obstacles on the 0.2 m grid of the robot's diameter.
SceneFile(
    name: "new room",
    seed: 1,
    dt: 0.02,
    arena: (width: 3.0, height: 2.0),
    dens: [
        (name: "home", pos: (0.1, 1.9), radius: 0.15),
    ],
    robots: [
        (
            name: "explorer",
            pose: (0.1, 1.9, -90.0),
            den: "home",
            radius: 0.1,
            max_speed: 0.6,
            max_turn: 180.0,
            battery: (capacity: 1000.0),
            controller: Explorer(strategy: Rings, sonar: false),
        ),
    ],
)
"#;

#[cfg(test)]
mod tests;
