//! The document drawn over the world while editing: every item's outline (red when validation
//! finds a problem with it), the selected one with its handles, the arena's outline and the
//! snapping grid.

use bevy::prelude::*;

use super::Editor;
use crate::render::WorldCamera;
use crate::scene::edit::{Handle, Item, ItemRef};
use crate::scene::geometry::Footprint;

pub mod colours {
    use bevy::prelude::Color;
    pub const OUTLINE: Color = Color::srgb(0.0, 0.55, 0.85);
    pub const SELECTED: Color = Color::srgb(1.0, 0.75, 0.0);
    pub const ERROR: Color = Color::srgb(0.9, 0.1, 0.1);
    pub const GRID: Color = Color::srgba(0.0, 0.3, 0.6, 0.18);
    pub const HANDLE: Color = Color::srgb(1.0, 0.45, 0.0);
}

/// At most this many grid lines are drawn (a fine grid on a big floor would hide the scene).
const MAX_GRID_LINES: usize = 400;

pub(super) fn draw_document(mut gizmos: Gizmos, editor: Res<Editor>, camera: Single<&Projection, With<WorldCamera>>) {
    let Some(doc) = &editor.doc else { return };
    let px = match *camera {
        Projection::Orthographic(o) => o.scale,
        _ => 0.01,
    };
    let a = &doc.scene.arena;
    let floor = Vec2::new(a.width, a.height);
    if floor.is_finite() && floor.min_element() > 0.0 {
        gizmos.rect_2d(Isometry2d::from_translation(floor / 2.0), floor, colours::OUTLINE);
        let snap = doc.snap();
        if editor.snapping && snap.grid > 0.0 {
            let (nx, ny) = ((a.width / snap.grid) as usize, (a.height / snap.grid) as usize);
            if nx + ny <= MAX_GRID_LINES && snap.grid / px >= 6.0 {
                for i in 1..nx.max(1) {
                    let x = i as f32 * snap.grid;
                    gizmos.line_2d(Vec2::new(x, 0.0), Vec2::new(x, a.height), colours::GRID);
                }
                for j in 1..ny.max(1) {
                    let y = j as f32 * snap.grid;
                    gizmos.line_2d(Vec2::new(0.0, y), Vec2::new(a.width, y), colours::GRID);
                }
            }
        }
    }
    let faulty = |r: ItemRef| editor.errors.iter().any(|(i, _)| *i == Some(r));
    for (r, item) in doc.items() {
        let colour = if faulty(r) {
            colours::ERROR
        } else if editor.selected == Some(r) {
            colours::SELECTED
        } else {
            colours::OUTLINE
        };
        outline(&mut gizmos, &item, colour);
        if faulty(r) && editor.selected == Some(r) {
            outline(&mut gizmos, &item, colours::SELECTED);
        }
    }
    if let Some(sel) = editor.selected {
        let centre = doc.item(sel).map(|it| it.position());
        for (handle, at) in doc.handles(sel) {
            let size = Vec2::splat(8.0 * px);
            match handle {
                Handle::Rotate => {
                    if let Some(c) = centre {
                        gizmos.line_2d(c, at, colours::HANDLE);
                    }
                    gizmos.circle_2d(at, 5.0 * px, colours::HANDLE);
                }
                Handle::Resize | Handle::WallEnd(_) => {
                    gizmos.rect_2d(Isometry2d::from_translation(at), size, colours::HANDLE);
                }
            }
        }
    }
}

fn outline(gizmos: &mut Gizmos, item: &Item, colour: Color) {
    match item.footprint() {
        Footprint::Rect { center, half, angle } => {
            gizmos.rect_2d(Isometry2d::new(center, Rot2::radians(angle)), half * 2.0, colour);
        }
        Footprint::Circle { center, radius } => {
            gizmos.circle_2d(center, radius, colour);
        }
    }
    match item {
        Item::Robot(r) => {
            let p = item.position();
            gizmos.line_2d(p, p + Vec2::from_angle(r.pose.2.to_radians()) * r.radius, colour);
        }
        Item::Sonar(s) => {
            let p = item.position();
            let len = s.range.unwrap_or(0.5);
            gizmos.line_2d(p, p + Vec2::from_angle(s.axis.to_radians()) * len, colour);
        }
        _ => {}
    }
}
