//! The selected explorer's mental map drawn over the arena (free, obstacle, danger, unexplored,
//! den), with its current outbound path and, while it returns, the way home.

use bevy::prelude::*;

use super::Selection;
use crate::control::explore::{CellState, Explorer, Phase};

pub mod palette {
    use bevy::prelude::Color;
    pub const UNEXPLORED: Color = Color::srgba(0.45, 0.45, 0.45, 0.35);
    pub const FREE: Color = Color::srgb(0.20, 0.65, 0.30);
    pub const OBSTACLE: Color = Color::srgb(0.75, 0.10, 0.10);
    pub const DANGER: Color = Color::srgb(0.95, 0.55, 0.00);
    pub const DEN: Color = Color::srgb(0.55, 0.30, 0.10);
    pub const OUTBOUND: Color = Color::srgb(0.10, 0.30, 0.95);
    pub const RETURN: Color = Color::srgb(0.85, 0.10, 0.75);
}

pub fn plugin(app: &mut App) {
    app.add_systems(Update, draw_mental_map);
}

fn draw_mental_map(mut gizmos: Gizmos, selection: Res<Selection>, explorers: Query<&Explorer>) {
    let Some(ex) = selection.0.and_then(|e| explorers.get(e).ok()) else { return };
    let size = Vec2::splat(ex.cell_size * 0.86);
    for (c, state) in ex.map.cells() {
        let p = ex.centre(c);
        let colour = if c == ex.map.den {
            palette::DEN
        } else {
            match state {
                CellState::Unexplored => palette::UNEXPLORED,
                CellState::Free => palette::FREE,
                CellState::Obstacle => palette::OBSTACLE,
                CellState::Danger => palette::DANGER,
            }
        };
        gizmos.rect_2d(p, size, colour);
        if matches!(state, CellState::Obstacle | CellState::Danger) || c == ex.map.den {
            let h = size / 2.0;
            gizmos.line_2d(p - h, p + h, colour);
            gizmos.line_2d(p + Vec2::new(-h.x, h.y), p + Vec2::new(h.x, -h.y), colour);
        }
    }
    let path = |cells: Vec<crate::control::explore::Cell>| cells.into_iter().map(|c| ex.centre(c)).collect::<Vec<_>>();
    if ex.phase == Phase::Outbound {
        gizmos.linestrip_2d(path(ex.outbound_cells()), palette::OUTBOUND);
    }
    if matches!(ex.phase, Phase::Returning | Phase::Recovering) {
        gizmos.linestrip_2d(path(ex.plan_cells()), palette::RETURN);
    }
}
