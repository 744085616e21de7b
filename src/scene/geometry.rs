//! Plane geometry of scene items, as pure functions: footprints of walls and boxes, signed
//! distances and overlaps, and the arena's boundary walls. Validation, the explorer's ground
//! truth and the world's spawning all measure the scene the same way through these.

use bevy::math::Vec2;

use super::schema::{ArenaSpec, BoxSpec, SceneFile, Vec2f, WallSpec};

/// A solid body's footprint, used for the overlap and near-wall checks.
#[derive(Debug, Clone, Copy)]
pub enum Footprint {
    Circle {
        center: Vec2,
        radius: f32,
    },
    /// A rectangle rotated by `angle` radians about its centre.
    Rect {
        center: Vec2,
        half: Vec2,
        angle: f32,
    },
}

impl Footprint {
    /// Axis-aligned half extents of the footprint.
    pub fn aabb_half(&self) -> Vec2 {
        match *self {
            Footprint::Circle { radius, .. } => Vec2::splat(radius),
            Footprint::Rect { half, angle, .. } => {
                let (s, c) = angle.sin_cos();
                Vec2::new((half.x * c).abs() + (half.y * s).abs(), (half.x * s).abs() + (half.y * c).abs())
            }
        }
    }

    pub fn center(&self) -> Vec2 {
        match *self {
            Footprint::Circle { center, .. } | Footprint::Rect { center, .. } => center,
        }
    }

    /// Penetration depth of two footprints (positive when they overlap).
    pub fn penetration(&self, other: &Footprint) -> f32 {
        match (*self, *other) {
            (Footprint::Circle { center: a, radius: ra }, Footprint::Circle { center: b, radius: rb }) => {
                ra + rb - a.distance(b)
            }
            (Footprint::Circle { center, radius }, rect @ Footprint::Rect { .. })
            | (rect @ Footprint::Rect { .. }, Footprint::Circle { center, radius }) => {
                radius - rect.signed_distance(center)
            }
            (a @ Footprint::Rect { .. }, b @ Footprint::Rect { .. }) => sat_rects(&a, &b),
        }
    }

    /// Signed distance from a point to the footprint's surface (negative inside).
    pub fn signed_distance(&self, p: Vec2) -> f32 {
        match *self {
            Footprint::Circle { center, radius } => p.distance(center) - radius,
            Footprint::Rect { center, half, angle } => {
                let local = Vec2::from_angle(-angle).rotate(p - center);
                let q = local.abs() - half;
                q.max(Vec2::ZERO).length() + q.x.max(q.y).min(0.0)
            }
        }
    }

    pub fn corners(&self) -> [Vec2; 4] {
        match *self {
            Footprint::Circle { center, radius } => [
                center + Vec2::new(radius, 0.0),
                center + Vec2::new(-radius, 0.0),
                center + Vec2::new(0.0, radius),
                center + Vec2::new(0.0, -radius),
            ],
            Footprint::Rect { center, half, angle } => {
                let rot = Vec2::from_angle(angle);
                [
                    center + rot.rotate(Vec2::new(half.x, half.y)),
                    center + rot.rotate(Vec2::new(-half.x, half.y)),
                    center + rot.rotate(Vec2::new(-half.x, -half.y)),
                    center + rot.rotate(Vec2::new(half.x, -half.y)),
                ]
            }
        }
    }
}

/// Separating-axis overlap of two rectangles: the smallest overlap over the four axes.
fn sat_rects(a: &Footprint, b: &Footprint) -> f32 {
    let (Footprint::Rect { angle: aa, .. }, Footprint::Rect { angle: ab, .. }) = (a, b) else {
        return f32::NEG_INFINITY;
    };
    let (ca, cb) = (a.corners(), b.corners());
    let axes =
        [Vec2::from_angle(*aa), Vec2::from_angle(*aa).perp(), Vec2::from_angle(*ab), Vec2::from_angle(*ab).perp()];
    let mut min_overlap = f32::INFINITY;
    for axis in axes {
        let project = |cs: &[Vec2; 4]| {
            cs.iter().fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), c| {
                let d = c.dot(axis);
                (lo.min(d), hi.max(d))
            })
        };
        let (alo, ahi) = project(&ca);
        let (blo, bhi) = project(&cb);
        min_overlap = min_overlap.min(ahi.min(bhi) - alo.max(blo));
    }
    min_overlap
}

/// The footprint of a wall given by its centre line: a rectangle that also covers the end caps,
/// so walls meeting at a corner close it.
pub fn wall_footprint(from: Vec2, to: Vec2, thickness: f32) -> Footprint {
    let d = to - from;
    Footprint::Rect {
        center: (from + to) / 2.0,
        half: Vec2::new(d.length() / 2.0 + thickness / 2.0, thickness / 2.0),
        angle: d.y.atan2(d.x),
    }
}

/// The four boundary walls of an arena, named as in the VirtualRobot room. They lie outside the
/// floor, so the free floor is exactly `0..width × 0..height`.
pub fn boundary_walls(arena: &ArenaSpec) -> Vec<WallSpec> {
    if !arena.boundary {
        return vec![];
    }
    let (w, h, t) = (arena.width, arena.height, arena.wall_thickness);
    let wall = |name: &str, from: Vec2f, to: Vec2f| WallSpec { name: name.to_string(), from, to, thickness: t };
    vec![
        // The horizontal walls reach over the corners, closing them.
        wall("wallDown", (-t / 2.0, -t / 2.0), (w + t / 2.0, -t / 2.0)),
        wall("wallUp", (-t / 2.0, h + t / 2.0), (w + t / 2.0, h + t / 2.0)),
        wall("wallLeft", (-t / 2.0, 0.0), (-t / 2.0, h)),
        wall("wallRight", (w + t / 2.0, 0.0), (w + t / 2.0, h)),
    ]
}

/// All walls of a scene: the boundary walls first, then the scene's own.
pub fn all_walls(scene: &SceneFile) -> Vec<WallSpec> {
    let mut walls = boundary_walls(&scene.arena);
    walls.extend(scene.walls.iter().cloned());
    walls
}

/// The footprint of a box.
pub fn box_footprint(b: &BoxSpec) -> Footprint {
    Footprint::Rect {
        center: Vec2::new(b.center.0, b.center.1),
        half: Vec2::new(b.size.0 / 2.0, b.size.1 / 2.0),
        angle: b.angle.to_radians(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signed_distance_to_rotated_rect() {
        let r = Footprint::Rect { center: Vec2::ZERO, half: Vec2::new(1.0, 0.5), angle: std::f32::consts::FRAC_PI_2 };
        assert!((r.signed_distance(Vec2::new(0.0, 2.0)) - 1.0).abs() < 1e-5);
        assert!((r.signed_distance(Vec2::new(1.0, 0.0)) - 0.5).abs() < 1e-5);
        assert!(r.signed_distance(Vec2::ZERO) < 0.0);
    }
}
