//! The editor's operations on real scene files, without a window.

use std::path::{Path, PathBuf};

use bevy::math::Vec2;

use super::*;
use crate::scene::load::parse_unchecked;

fn scene_text(name: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes").join(name)).unwrap()
}

fn open(name: &str) -> Document {
    Document::from_text(&scene_text(name), Some(PathBuf::from(name))).unwrap()
}

fn r(kind: ItemKind, index: usize) -> ItemRef {
    ItemRef { kind, index }
}

/// Saves, checks the text parses back to the document's scene, and returns the text.
fn saved(doc: &Document) -> String {
    let text = doc.save_text().unwrap();
    let back = parse_unchecked(&text, "saved").unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(back, doc.scene, "{text}");
    text
}

/// The lines of `b` that are not in `a`, and of `a` not in `b`.
fn changed_lines(a: &str, b: &str) -> (Vec<String>, Vec<String>) {
    let la: Vec<&str> = a.lines().collect();
    let lb: Vec<&str> = b.lines().collect();
    let added = lb.iter().filter(|l| !la.contains(l)).map(|l| l.to_string()).collect();
    let removed = la.iter().filter(|l| !lb.contains(l)).map(|l| l.to_string()).collect();
    (added, removed)
}

#[test]
fn saving_an_unchanged_scene_gives_its_text_byte_for_byte() {
    for name in ["explorer.ron", "pens.ron", "collectors.ron", "lossy.ron", "swarm.ron", "wenv.ron", "programs.ron"] {
        let doc = open(name);
        assert!(!doc.modified(), "{name}");
        assert_eq!(doc.save_text().unwrap(), scene_text(name), "{name}");
    }
}

#[test]
fn moving_a_box_changes_only_its_centre() {
    let mut doc = open("explorer.ron");
    let table = doc.find(ItemKind::Box, "table").unwrap();
    doc.apply(Edit::Move { item: table, to: Vec2::new(2.5, 1.2) }, None).unwrap();
    let Some(Item::Box(b)) = doc.item(table) else { panic!() };
    assert_eq!(b.center, (2.5, 1.2));
    let text = saved(&doc);
    let (added, removed) = changed_lines(&scene_text("explorer.ron"), &text);
    assert_eq!(added, ["        (name: \"table\", center: (2.5, 1.2), size: (0.6, 0.4)),"]);
    assert_eq!(removed, ["        (name: \"table\", center: (2.1, 1.6), size: (0.6, 0.4)),"]);
    // The comments are all still there.
    assert!(text.starts_with("// The cautious explorer's room (seed 002)"));
    assert!(text.contains("            // No charger in this room: a battery that lasts the whole exploration.\n"));
}

#[test]
fn every_operation_on_every_shipped_scene_saves_text_that_reads_back() {
    for name in [
        "explorer.ron",
        "pens.ron",
        "collectors.ron",
        "lossy.ron",
        "swarm.ron",
        "wenv.ron",
        "programs.ron",
        "explorers.ron",
    ] {
        let mut doc = open(name);
        let items: Vec<ItemRef> = doc.items().map(|(r, _)| r).collect();
        for &item in &items {
            let p = doc.item(item).unwrap().position();
            doc.apply(Edit::Move { item, to: p + Vec2::new(0.05, -0.05) }, None).unwrap();
            doc.apply(Edit::Rotate { item, degrees: 30.0 }, None).unwrap();
            let size = doc.item(item).unwrap().size();
            doc.apply(Edit::Resize { item, size: size * 1.5 + Vec2::splat(0.01) }, None).unwrap();
        }
        for kind in ItemKind::ALL {
            doc.apply(Edit::Add { kind, at: Vec2::new(1.0, 1.0) }, None).unwrap();
        }
        if let Some(&first) = items.first() {
            doc.apply(Edit::Duplicate { item: first, offset: Vec2::new(0.2, 0.0) }, None).unwrap();
        }
        // Delete the first item of every kind that had one.
        for kind in ItemKind::ALL {
            if items.iter().any(|i| i.kind == kind) {
                doc.apply(Edit::Delete { item: r(kind, 0) }, None).unwrap();
            }
        }
        saved(&doc);
    }
}

#[test]
fn deleting_removes_the_line_and_adding_appends_in_the_lists_layout() {
    let mut doc = open("pens.ron");
    let pen3 = doc.find(ItemKind::Pen, "pen3").unwrap();
    doc.apply(Edit::Delete { item: pen3 }, None).unwrap();
    let added = doc.apply(Edit::Add { kind: ItemKind::Pen, at: Vec2::new(1.5, 1.5) }, None).unwrap().unwrap();
    assert_eq!(doc.item(added).unwrap().name(), "pen3", "the freed name is reused");
    let beta = doc.find(ItemKind::Robot, "beta").unwrap();
    doc.apply(Edit::Delete { item: beta }, None).unwrap();
    let text = saved(&doc);
    assert!(!text.contains("(name: \"pen3\", pos: (3.4, 1.1)),"));
    assert!(
        text.contains("        (name: \"pen8\", pos: (3.7, 2.8)),\n        (name: \"pen3\", pos: (1.5, 1.5)),\n    ],"),
        "{text}"
    );
    // beta's two lines are gone, alpha's and gamma's are as written.
    assert!(!text.contains("beta"));
    assert!(text.contains(
        "        (name: \"alpha\", pose: (1.0, 0.25, 90.0), den: \"den1\", battery: (capacity: 20.0, initial: 9.0),\n            controller: Network()),\n        (name: \"gamma\""
    ));
}

#[test]
fn a_list_the_file_does_not_have_is_written_at_the_end() {
    let mut doc = open("explorer.ron");
    doc.apply(Edit::Add { kind: ItemKind::Pen, at: Vec2::new(3.0, 2.0) }, None).unwrap();
    let text = saved(&doc);
    assert!(text.ends_with("    ],\n    pens: [\n        (name: \"pen1\", pos: (3.0, 2.0)),\n    ],\n)\n"), "{text}");
}

#[test]
fn a_new_robot_copies_the_last_robots_controller_and_is_written_without_defaults() {
    let mut doc = open("explorer.ron");
    let new = doc.apply(Edit::Add { kind: ItemKind::Robot, at: Vec2::new(1.5, 0.5) }, None).unwrap().unwrap();
    let Some(Item::Robot(rb)) = doc.item(new) else { panic!() };
    assert_eq!(rb.name, "robot1");
    assert_eq!(rb.pose, (1.5, 0.5, 0.0));
    assert_eq!(rb.den.as_deref(), Some("home"));
    assert!(matches!(rb.controller, ControllerSpec::Explorer { .. }));
    let text = saved(&doc);
    assert!(text.contains("            name: \"robot1\",\n            pose: (1.5, 0.5, 0.0),\n"), "{text}");
    assert!(!text.contains("comms: (broadcast"), "defaults are left out: {text}");
}

#[test]
fn a_field_edit_in_a_nested_struct_keeps_the_rest_of_the_item() {
    let mut doc = open("pens.ron");
    let alpha = doc.find(ItemKind::Robot, "alpha").unwrap();
    let Some(Item::Robot(mut rb)) = doc.item(alpha) else { panic!() };
    rb.battery.initial = Some(12.0);
    rb.controller = ControllerSpec::Network { forget_after: 25, low_power: 0.35, full_power: 0.95 };
    doc.apply(Edit::Set { item: alpha, to: Item::Robot(rb.clone()) }, None).unwrap();
    let text = saved(&doc);
    let low = match ControllerSpec::network() {
        ControllerSpec::Network { forget_after, full_power, .. } => (forget_after, full_power),
        _ => unreachable!(),
    };
    assert_eq!(low, (25, 0.95), "the defaults this test relies on");
    assert!(
        text.contains(
            "battery: (capacity: 20.0, initial: Some(12.0)),\n            controller: Network(low_power: 0.35)),"
        ),
        "{text}"
    );
}

#[test]
fn undo_and_redo_walk_the_history_and_a_gesture_is_one_step() {
    let mut doc = open("explorer.ron");
    let original = doc.scene.clone();
    let crate_ = doc.find(ItemKind::Box, "crate").unwrap();
    // A drag: many moves with one gesture key.
    for i in 1..=10 {
        doc.apply(Edit::Move { item: crate_, to: Vec2::new(3.2 - 0.05 * i as f32, 0.9) }, Some(7)).unwrap();
    }
    doc.end_gesture();
    doc.apply(Edit::Delete { item: doc.find(ItemKind::Box, "table").unwrap() }, None).unwrap();
    let after = doc.scene.clone();
    assert_eq!(doc.scene.boxes.len(), 2);
    assert!(doc.undo());
    assert_eq!(doc.scene.boxes.len(), 3);
    assert_eq!(doc.scene.boxes[2].center, (2.7, 0.9));
    assert!(doc.undo(), "the whole drag is one step");
    assert_eq!(doc.scene, original);
    assert!(!doc.undo());
    assert!(doc.redo() && doc.redo());
    assert_eq!(doc.scene, after);
    assert!(!doc.redo());
    // A new edit after undo drops the redo steps.
    assert!(doc.undo());
    doc.apply(Edit::Rename("room".into()), None).unwrap();
    assert!(!doc.can_redo());
    // An edit that changes nothing is no step.
    let steps = doc.undo.len();
    doc.apply(Edit::Rename("room".into()), None).unwrap();
    assert_eq!(doc.undo.len(), steps);
}

#[test]
fn undo_restores_where_items_came_from_so_saving_keeps_their_text() {
    let mut doc = open("explorer.ron");
    doc.apply(Edit::Delete { item: r(ItemKind::Box, 0) }, None).unwrap();
    doc.undo();
    assert_eq!(doc.save_text().unwrap(), scene_text("explorer.ron"));
}

#[test]
fn rotating_and_resizing_walls_boxes_robots_and_sonars() {
    let mut doc = Document::new_scene();
    let wall = doc.apply(Edit::Add { kind: ItemKind::Wall, at: Vec2::new(1.5, 1.0) }, None).unwrap().unwrap();
    doc.apply(Edit::Rotate { item: wall, degrees: 90.0 }, None).unwrap();
    let Some(Item::Wall(w)) = doc.item(wall) else { panic!() };
    assert_eq!((w.from, w.to), ((1.5, 0.5), (1.5, 1.5)));
    doc.apply(Edit::Resize { item: wall, size: Vec2::new(0.6, 0.1) }, None).unwrap();
    let Some(Item::Wall(w)) = doc.item(wall) else { panic!() };
    assert_eq!((w.from, w.to, w.thickness), ((1.5, 0.7), (1.5, 1.3), 0.1));
    doc.apply(Edit::WallEnd { item: wall, end: 1, to: Vec2::new(2.0, 1.3) }, None).unwrap();
    let Some(Item::Wall(w)) = doc.item(wall) else { panic!() };
    assert_eq!(w.to, (2.0, 1.3));

    let robot = doc.find(ItemKind::Robot, "explorer").unwrap();
    doc.apply(Edit::Rotate { item: robot, degrees: 270.0 }, None).unwrap();
    assert_eq!(doc.scene.robots[0].pose.2, -90.0, "headings are kept in (-180, 180]");
    let sonar = doc.apply(Edit::Add { kind: ItemKind::Sonar, at: Vec2::new(1.0, 0.0) }, None).unwrap().unwrap();
    doc.apply(Edit::Resize { item: sonar, size: Vec2::new(1.2, 0.2) }, None).unwrap();
    assert_eq!((doc.scene.sonars[0].range, doc.scene.sonars[0].width), (Some(1.2), 0.2));
    doc.apply(Edit::Resize { item: sonar, size: Vec2::new(0.0, 0.2) }, None).unwrap();
    assert_eq!(doc.scene.sonars[0].range, None, "range 0 is unlimited");
}

#[test]
fn handles_turn_into_edits() {
    let mut doc = open("explorer.ron");
    let table = doc.find(ItemKind::Box, "table").unwrap();
    let handles = doc.handles(table);
    let (_, corner) = handles.iter().find(|(h, _)| *h == Handle::Resize).unwrap();
    assert!(corner.distance(Vec2::new(2.4, 1.8)) < 1e-5, "{corner}");
    // Dragging the corner out by a bit more than a cell: the size snaps to the 0.2 m grid.
    let edit = doc.drag_handle(table, Handle::Resize, Vec2::new(2.52, 1.93), doc.snap()).unwrap();
    assert_eq!(edit, Edit::Resize { item: table, size: Vec2::new(0.8, 0.6) });
    let robot = doc.find(ItemKind::Robot, "explorer").unwrap();
    let edit = doc.drag_handle(robot, Handle::Rotate, Vec2::new(0.6, 2.95), doc.snap()).unwrap();
    assert_eq!(edit, Edit::Rotate { item: robot, degrees: 0.0 }, "angles snap to 15°");
    doc.apply(edit, None).unwrap();
    assert_eq!(doc.scene.robots[0].pose.2, 0.0);
}

#[test]
fn snapping_puts_explorer_items_on_cell_centres_and_box_edges_on_grid_lines() {
    let doc = open("explorer.ron");
    let snap = doc.snap();
    assert_eq!((snap.grid, snap.cell_centres), (0.2, true));
    let robot = doc.item(doc.find(ItemKind::Robot, "explorer").unwrap()).unwrap();
    let p = snap.position(&robot, Vec2::new(1.04, 0.77));
    assert!(p.distance(Vec2::new(1.1, 0.7)) < 1e-5, "{p}");
    let table = doc.item(doc.find(ItemKind::Box, "table").unwrap()).unwrap();
    // A 0.6 × 0.4 box: its corner on the grid, so its centre at x = 0.3 + 0.2k, y = 0.2k.
    let p = snap.position(&table, Vec2::new(1.27, 1.13));
    assert!(p.distance(Vec2::new(1.3, 1.2)) < 1e-5, "{p}");
    // A wall's ends on cell centres: it fills whole cells of the explorer's map.
    let mut room = Document::new_scene();
    let wall = room.apply(Edit::Add { kind: ItemKind::Wall, at: Vec2::new(1.5, 1.0) }, None).unwrap().unwrap();
    let it = room.item(wall).unwrap();
    let p = snap.position(&it, Vec2::new(1.52, 1.04));
    room.apply(Edit::Move { item: wall, to: p }, None).unwrap();
    let Some(Item::Wall(w)) = room.item(wall) else { panic!() };
    assert_eq!((w.from, w.to), ((1.1, 1.1), (2.1, 1.1)));
    let plain = Document::from_text("(name: \"x\", arena: (width: 2.0, height: 2.0))", None).unwrap().snap();
    assert_eq!((plain.grid, plain.cell_centres), (0.1, false));
}

#[test]
fn picking_prefers_robots_and_pens_over_what_they_stand_on() {
    let mut doc = open("explorer.ron");
    let den = doc.find(ItemKind::Den, "home").unwrap();
    let robot = doc.find(ItemKind::Robot, "explorer").unwrap();
    assert_eq!(doc.pick(Vec2::new(0.1, 2.9), 0.0), Some(robot));
    assert_eq!(doc.pick(Vec2::new(0.1, 2.77), 0.0), Some(den), "outside the robot, inside the den");
    assert_eq!(doc.pick(Vec2::new(2.0, 1.7), 0.0), doc.find(ItemKind::Box, "table"));
    assert_eq!(doc.pick(Vec2::new(3.0, 2.5), 0.0), None);
    doc.apply(Edit::Add { kind: ItemKind::Pen, at: Vec2::new(2.0, 1.7) }, None).unwrap();
    assert_eq!(doc.pick(Vec2::new(2.0, 1.7), 0.0), doc.find(ItemKind::Pen, "pen1"));
}

#[test]
fn validation_errors_land_on_the_items_at_fault() {
    let mut doc = open("explorer.ron");
    assert!(doc.errors().is_empty());
    let robot = doc.find(ItemKind::Robot, "explorer").unwrap();
    doc.apply(Edit::Move { item: robot, to: Vec2::new(5.0, 1.0) }, None).unwrap();
    let crate_ = doc.find(ItemKind::Box, "crate").unwrap();
    doc.apply(
        Edit::Set { item: crate_, to: Item::Box(BoxSpec { name: "table".into(), ..doc.scene.boxes[2].clone() }) },
        None,
    )
    .unwrap();
    doc.apply(Edit::Arena(ArenaSpec { width: -1.0, ..doc.scene.arena.clone() }), None).unwrap();
    let errors = doc.errors();
    let on =
        |r: ItemRef| errors.iter().filter(|(i, _)| *i == Some(r)).map(|(_, e)| e.message.clone()).collect::<Vec<_>>();
    assert!(on(crate_).iter().any(|m| m.starts_with("duplicate name")), "{errors:?}");
    assert!(on(doc.find(ItemKind::Box, "table").unwrap()).iter().any(|m| m.starts_with("duplicate name")));
    assert!(errors.iter().any(|(i, e)| i.is_none() && e.item == "arena"), "{errors:?}");
    doc.apply(Edit::Arena(ArenaSpec { width: 4.0, ..doc.scene.arena.clone() }), None).unwrap();
    let errors = doc.errors();
    assert!(errors.iter().any(|(i, e)| *i == Some(robot) && e.message.contains("outside the arena")), "{errors:?}");
    // An empty name is reported by position.
    let pen = doc.apply(Edit::Add { kind: ItemKind::Pen, at: Vec2::new(2.0, 0.5) }, None).unwrap().unwrap();
    doc.apply(Edit::Set { item: pen, to: Item::Pen(PenSpec { name: " ".into(), ..doc.scene.pens[0].clone() }) }, None)
        .unwrap();
    assert!(doc.errors().iter().any(|(i, e)| *i == Some(pen) && e.message == "name must not be empty"));
}

#[test]
fn edits_of_missing_items_or_another_kind_are_refused() {
    let mut doc = open("explorer.ron");
    let ghost = r(ItemKind::Pen, 3);
    assert_eq!(doc.apply(Edit::Delete { item: ghost }, None), Err(EditError::NoSuchItem(ghost)));
    let table = doc.find(ItemKind::Box, "table").unwrap();
    let pen = Item::Pen(PenSpec { name: "p".into(), pos: (1.0, 1.0), radius: 0.02 });
    let e = doc.apply(Edit::Set { item: table, to: pen }, None).unwrap_err();
    assert_eq!(e.to_string(), "a box cannot become a pen");
    assert!(!doc.can_undo());
}

#[test]
fn the_new_scene_template_is_a_valid_explorer_room_and_saves_as_itself() {
    let doc = Document::new_scene();
    assert!(doc.errors().is_empty(), "{:?}", doc.errors());
    assert!(doc.modified(), "a new scene is not saved yet");
    assert_eq!(doc.save_text().unwrap(), NEW_SCENE);
}

#[test]
fn after_saving_later_saves_edit_the_saved_text() {
    let mut doc = open("explorer.ron");
    doc.apply(Edit::Add { kind: ItemKind::Box, at: Vec2::new(3.0, 2.2) }, None).unwrap();
    let text = saved(&doc);
    doc.saved(text.clone(), PathBuf::from("explorer.ron"));
    assert!(!doc.modified());
    assert_eq!(doc.save_text().unwrap(), text);
    let b = doc.find(ItemKind::Box, "box1").unwrap();
    doc.apply(Edit::Move { item: b, to: Vec2::new(3.0, 2.0) }, None).unwrap();
    let again = saved(&doc);
    let (added, removed) = changed_lines(&text, &again);
    assert_eq!((added.len(), removed.len()), (1, 1), "{added:?} {removed:?}");
}

#[test]
fn windows_line_endings_and_ron_attributes_are_kept() {
    let text = scene_text("pens.ron").replace('\n', "\r\n");
    let text = format!("#![enable(implicit_some)]\r\n{text}");
    let mut doc = Document::from_text(&text, None).unwrap();
    assert_eq!(doc.save_text().unwrap(), text);
    doc.apply(Edit::Add { kind: ItemKind::Pen, at: Vec2::new(2.0, 1.0) }, None).unwrap();
    doc.apply(Edit::Delete { item: doc.find(ItemKind::Pen, "pen1").unwrap() }, None).unwrap();
    let out = saved(&doc);
    assert!(out.starts_with("#![enable(implicit_some)]\r\n// The pen-collecting task"));
    assert!(!out.replace("\r\n", "").contains('\n'), "every line ends in CRLF");
    assert!(out.contains("        (name: \"pen9\", pos: (2.0, 1.0)),\r\n    ],"), "{out}");
}

mod fuzz {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

        /// Any text: opening it for editing and saving never panics.
        #[test]
        fn any_text_opens_or_is_refused(text in "\\PC{0,200}") {
            if let Ok(doc) = Document::from_text(&text, None) {
                let _ = doc.save_text();
            }
        }

        /// A shipped scene with a piece cut out: when it still parses, moving an item and saving
        /// gives text that reads back as the edited scene.
        #[test]
        fn a_damaged_scene_that_still_parses_saves_correctly(
            which in 0usize..4, start in 0usize..4000, len in 0usize..40, dx in -1.0f32..1.0
        ) {
            let name = ["explorer.ron", "pens.ron", "lossy.ron", "swarm.ron"][which];
            let mut text = scene_text(name);
            let start = start.min(text.len());
            let end = (start + len).min(text.len());
            if text.is_char_boundary(start) && text.is_char_boundary(end) {
                text.replace_range(start..end, "");
            }
            if let Ok(mut doc) = Document::from_text(&text, None) {
                let first = doc.items().next();
                if let Some((item, it)) = first {
                    doc.apply(Edit::Move { item, to: it.position() + Vec2::new(dx, 0.0) }, None).unwrap();
                }
                let saved = doc.save_text().unwrap();
                let back = parse_unchecked(&saved, "saved").unwrap();
                prop_assert_eq!(back, doc.scene);
            }
        }
    }
}
