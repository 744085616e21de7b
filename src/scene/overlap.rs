//! Which bodies of a scene may touch: the candidate pairs of axis-aligned boxes, found in a
//! hierarchical grid so that validation's work stays near linear in the number of bodies
//! whatever their sizes. A single grid sized by one body (the old check used the largest circle)
//! puts every small body in one cell when one body is huge, and walks billions of cells when a
//! body is long and the cells are small; here each body sits at the level whose cells are at
//! least its size, and looks for partners only at its own level and the coarser ones, in the
//! three by three cells around it.
//!
//! Pure logic: plain boxes in, index pairs out, no Bevy.

use std::collections::HashMap;
use std::ops::ControlFlow;

/// An axis-aligned box: `min` and `max` corners, and whether the body is a wall (walls may
/// cross each other, so two walls are never a candidate pair).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Aabb {
    pub min: [f64; 2],
    pub max: [f64; 2],
    pub wall: bool,
}

impl Aabb {
    fn extent(&self) -> f64 {
        (self.max[0] - self.min[0]).max(self.max[1] - self.min[1]).max(0.0)
    }

    fn center(&self) -> [f64; 2] {
        [(self.min[0] + self.max[0]) / 2.0, (self.min[1] + self.max[1]) / 2.0]
    }

    fn touches(&self, other: &Aabb) -> bool {
        self.min[0] <= other.max[0]
            && other.min[0] <= self.max[0]
            && self.min[1] <= other.max[1]
            && other.min[1] <= self.max[1]
    }
}

/// The finest cell side, metres: no body of a valid scene is smaller (see
/// `validate::MIN_LENGTH`), and a finer grid would only cost levels.
const FINEST: f64 = 1e-3;

/// Calls `visit(i, j)` (with `i < j`) for every pair of boxes that overlap or touch, except two
/// walls, in no particular order; `visit` may stop the search by returning `Break`. Boxes with
/// a coordinate or an extent that is not finite are left out.
pub fn candidate_pairs(boxes: &[Aabb], mut visit: impl FnMut(usize, usize) -> ControlFlow<()>) {
    let finest = boxes
        .iter()
        .filter(|b| finite(b))
        .map(Aabb::extent)
        .filter(|e| *e > 0.0)
        .fold(f64::INFINITY, f64::min)
        .max(FINEST);
    // Cells double in size from level to level: a box sits at the first level whose cells are at
    // least as wide as it is (at most about 2,100 levels above `FINEST` for any finite extent).
    let level_of = |b: &Aabb| -> usize { (b.extent() / finest).log2().ceil().max(0.0) as usize };
    let side = |level: usize| finest * 2f64.powi(level as i32);
    // A cell's index at a level; far-away boxes are clamped into a range where the index is
    // exact arithmetic, which only merges cells (more candidates, never fewer).
    const FAR: f64 = (1u64 << 52) as f64;
    let cell = |x: f64, level: usize| -> i64 { (x / side(level)).floor().clamp(-FAR, FAR) as i64 };
    let mut grid: HashMap<(usize, i64, i64), Vec<usize>> = HashMap::new();
    let mut levels = std::collections::BTreeSet::new();
    let mut placed = Vec::with_capacity(boxes.len());
    for (i, b) in boxes.iter().enumerate() {
        if !finite(b) {
            placed.push(None);
            continue;
        }
        let level = level_of(b);
        let c = b.center();
        grid.entry((level, cell(c[0], level), cell(c[1], level))).or_default().push(i);
        levels.insert(level);
        placed.push(Some(level));
    }
    let used: Vec<usize> = levels.into_iter().collect();
    for (i, b) in boxes.iter().enumerate() {
        let Some(own) = placed[i] else { continue };
        for &level in used.iter().filter(|l| **l >= own) {
            // Boxes at `level` are at most one cell wide and filed by their centres: any that
            // touches `b` has its centre within half a cell of `b`'s box.
            let half = side(level) / 2.0;
            let (x0, x1) = (cell(b.min[0] - half, level), cell(b.max[0] + half, level));
            let (y0, y1) = (cell(b.min[1] - half, level), cell(b.max[1] + half, level));
            for x in x0..=x1 {
                for y in y0..=y1 {
                    let Some(bucket) = grid.get(&(level, x, y)) else { continue };
                    for &j in bucket {
                        // A pair at one level is seen from both ends: keep it once.
                        if j == i || (level == own && j < i) {
                            continue;
                        }
                        let other = &boxes[j];
                        if (b.wall && other.wall) || !b.touches(other) {
                            continue;
                        }
                        if visit(i.min(j), i.max(j)).is_break() {
                            return;
                        }
                    }
                }
            }
        }
    }
}

fn finite(b: &Aabb) -> bool {
    b.min.iter().chain(&b.max).all(|x| x.is_finite()) && b.extent().is_finite()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn square(x: f64, y: f64, half: f64) -> Aabb {
        Aabb { min: [x - half, y - half], max: [x + half, y + half], wall: false }
    }

    fn pairs(boxes: &[Aabb]) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        candidate_pairs(boxes, |i, j| {
            out.push((i, j));
            ControlFlow::Continue(())
        });
        out.sort_unstable();
        out
    }

    /// Every pair a scan of all pairs finds, and no other.
    fn scan(boxes: &[Aabb]) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        for i in 0..boxes.len() {
            for j in i + 1..boxes.len() {
                if !(boxes[i].wall && boxes[j].wall) && boxes[i].touches(&boxes[j]) {
                    out.push((i, j));
                }
            }
        }
        out
    }

    #[test]
    fn bodies_of_very_different_sizes_pair_as_a_scan_pairs_them() {
        let mut boxes = vec![square(50.0, 50.0, 40.0), square(0.5, 0.5, 0.01), square(95.0, 95.0, 0.2)];
        for i in 0..200 {
            let t = f64::from(i);
            boxes.push(square((t * 7.31) % 100.0, (t * 3.17) % 100.0, 0.05 + (t % 13.0) * 0.3));
        }
        boxes.push(Aabb { min: [0.0, 49.9], max: [100.0, 50.1], wall: true });
        boxes.push(Aabb { min: [49.9, 0.0], max: [50.1, 100.0], wall: true });
        assert_eq!(pairs(&boxes), scan(&boxes));
    }

    #[test]
    fn two_walls_never_pair_and_a_stop_is_obeyed() {
        let boxes = [
            Aabb { min: [0.0, 0.0], max: [10.0, 0.1], wall: true },
            Aabb { min: [5.0, -5.0], max: [5.1, 5.0], wall: true },
            square(5.0, 0.0, 0.2),
            square(5.1, 0.0, 0.2),
        ];
        assert_eq!(pairs(&boxes), vec![(0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]);
        let mut seen = 0;
        candidate_pairs(&boxes, |_, _| {
            seen += 1;
            if seen == 2 { ControlFlow::Break(()) } else { ControlFlow::Continue(()) }
        });
        assert_eq!(seen, 2);
    }

    #[test]
    fn a_huge_body_among_many_small_ones_is_not_quadratic() {
        // One body 10 km wide and 20,000 small ones in a row under it: each small one is compared
        // with its neighbours and the big one, not with all the others.
        let mut boxes = vec![square(5_000.0, 5_000.0, 5_000.0)];
        boxes.extend((0..20_000).map(|i| square(f64::from(i) * 0.5, 1.0, 0.2)));
        let mut visits = 0u64;
        candidate_pairs(&boxes, |_, _| {
            visits += 1;
            ControlFlow::Continue(())
        });
        assert_eq!(visits, 20_000);
    }

    #[test]
    fn boxes_that_are_not_finite_are_left_out() {
        let boxes = [square(0.0, 0.0, 1.0), Aabb { min: [f64::NAN, 0.0], max: [1.0, 1.0], wall: false }];
        assert_eq!(pairs(&boxes), vec![]);
        let far = [square(1e30, 1e30, 1e29), square(1e30, 1e30, 1.0)];
        assert_eq!(pairs(&far), vec![(0, 1)]);
    }
}
