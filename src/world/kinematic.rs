//! The kinematic model (`physics: Kinematic`): discs moved without a rigid-body solver.
//!
//! Each step every robot goes where its wheels take it (its velocity times `dt`), then overlaps
//! are separated geometrically in a few rounds: two robots each take half of their overlap, a
//! pen gives way to a robot entirely (robots push pens, pens do not slow robots), two pens share
//! theirs, and an outside robot (whose pose its controller reports) never moves. At the end of
//! every round walls and boxes push discs out along the shortest way, and a disc a wall pushed
//! stands fast in the next round: whatever presses it against the wall takes the whole overlap
//! (a robot cannot drive through a pen, or another robot, pinned to a wall). There is no mass
//! and no momentum: a pen moves while it is pushed and stops when the push stops.
//!
//! A round reads only the positions the previous round left and each disc writes only its own,
//! so the rounds run in fixed chunks on any number of threads with the same result.

use bevy::prelude::*;
use bevy_rapier2d::prelude::CollisionGroups;

use super::spatial::{CELL, CellGrid, SpatialIndex, groups_match};
use crate::sim::Passes;

/// Rounds of separation per step. An overlap between two discs alone is gone after one; the
/// rounds after it settle chains of discs pressed together (what is left waits for the next
/// step).
pub const ROUNDS: usize = 3;

/// How a disc gives way when it overlaps another.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Give {
    /// A simulated robot: shares an overlap with another robot, pushes pens.
    Robot,
    /// A free pen: gives way to robots entirely, shares with pens.
    Pen,
    /// Never moves (a robot whose pose comes from outside).
    Fixed,
}

impl Give {
    /// The part of an overlap between a disc of this kind and one of `other`'s this one takes.
    pub fn share(self, other: Give) -> f32 {
        match (self, other) {
            (Give::Fixed, _) => 0.0,
            (_, Give::Fixed) | (Give::Pen, Give::Robot) => 1.0,
            (Give::Robot, Give::Pen) => 0.0,
            _ => 0.5,
        }
    }
}

/// A disc of the kinematic model.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Mover {
    pub radius: f32,
    pub give: Give,
    pub groups: CollisionGroups,
}

/// The separation's grid and buffers, kept from step to step.
#[derive(Debug)]
pub struct Separator {
    grid: CellGrid,
    arena: Vec2,
    positions: Vec<Vec2>,
    /// What each disc met in the last round.
    met: Vec<Met>,
    /// The grid cells within reach of a disc that moved in the last round: those holding the
    /// round's stamp (so the cells of a huge arena are not cleared every round).
    stirred: Vec<u32>,
    stamp: u32,
    /// Rounds after the first settle only the discs that met something in the round before or
    /// are within reach of a disc that moved in it; the others would stay where they are. Off
    /// only to test that the shortcut changes nothing.
    shortcut: bool,
}

impl Default for Separator {
    fn default() -> Self {
        Self {
            grid: CellGrid::default(),
            arena: Vec2::ZERO,
            positions: Vec::new(),
            met: Vec::new(),
            stirred: Vec::new(),
            stamp: 0,
            shortcut: true,
        }
    }
}

/// What a disc met in a round.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Met {
    /// It overlapped another disc (whoever gave way) or a wall or box.
    anything: bool,
    /// A wall or box pushed it.
    wall: bool,
}

impl Separator {
    /// Separates `movers`, which stand at `positions` (where their motion took them), from each
    /// other and from the fixed rectangles of `index` in [`ROUNDS`] rounds; returns where they
    /// end.
    pub fn separate(
        &mut self,
        movers: &[Mover],
        positions: Vec<Vec2>,
        arena: Vec2,
        index: &SpatialIndex,
        passes: &Passes,
    ) -> &[Vec2] {
        assert_eq!(movers.len(), positions.len(), "one position per mover");
        if self.grid.cell_size() == 0.0 || self.arena != arena {
            self.grid = CellGrid::new(Vec2::ZERO, arena, CELL);
            self.arena = arena;
        }
        self.positions = positions;
        self.met.clear();
        self.met.resize(movers.len(), Met::default());
        let max_radius = movers.iter().map(|m| m.radius).fold(0.0, f32::max);
        for round in 0..ROUNDS {
            self.grid.fill_points(self.positions.iter().copied());
            let r = Round {
                movers,
                now: &self.positions,
                met: &self.met,
                // The first round settles every disc.
                stirred: (round > 0 && self.shortcut).then_some((&self.stirred[..], self.stamp)),
                grid: &self.grid,
                max_radius,
                index,
            };
            let chunks = passes.map_chunks(movers, |start, chunk| {
                (start..start + chunk.len()).map(|i| r.settle(i)).collect::<Vec<(Vec2, Met)>>()
            });
            self.stamp = self.stamp.wrapping_add(1);
            if self.stamp == 0 || self.stirred.len() != self.grid.cells() {
                self.stirred.clear();
                self.stirred.resize(self.grid.cells(), 0);
                self.stamp = 1;
            }
            let settled = chunks.into_iter().flatten();
            for (i, (p, met)) in settled.enumerate() {
                if p != self.positions[i] {
                    // Every disc that could overlap this one where it now stands.
                    let reach = Vec2::splat(movers[i].radius + max_radius);
                    self.grid.for_each_cell(p - reach, p + reach, |c| self.stirred[c] = self.stamp);
                    self.positions[i] = p;
                }
                self.met[i] = met;
            }
        }
        &self.positions
    }
}

/// What one round of separation reads.
struct Round<'a> {
    movers: &'a [Mover],
    now: &'a [Vec2],
    met: &'a [Met],
    /// Where discs moved in the last round, and its stamp (`None`: settle every disc).
    stirred: Option<(&'a [u32], u32)>,
    grid: &'a CellGrid,
    max_radius: f32,
    index: &'a SpatialIndex,
}

impl Round<'_> {
    /// How disc `k` gives way this round: not at all if a wall pushed it last round.
    fn give(&self, k: usize) -> Give {
        if self.met[k].wall { Give::Fixed } else { self.movers[k].give }
    }

    /// Where disc `i` goes in one round (out of the discs it overlaps by its share, then out of
    /// the walls and boxes it overlaps), and what it met.
    fn settle(&self, i: usize) -> (Vec2, Met) {
        let (me, p, give) = (&self.movers[i], self.now[i], self.give(i));
        if give == Give::Fixed {
            return (p, Met::default());
        }
        // Nothing touched it last round and nothing near it moved since: it would stay.
        if let Some((stirred, stamp)) = self.stirred
            && !self.met[i].anything
            && stirred[self.grid.cell_of(p)] != stamp
        {
            return (p, Met::default());
        }
        let reach = Vec2::splat(me.radius + self.max_radius);
        let mut push = Vec2::ZERO;
        let mut met = Met::default();
        self.grid.for_each(p - reach, p + reach, |j| {
            let j = j as usize;
            let other = &self.movers[j];
            if j == i || !groups_match(me.groups, other.groups) {
                return;
            }
            let (d, touch) = (p - self.now[j], me.radius + other.radius);
            let dist2 = d.length_squared();
            if dist2 >= touch * touch {
                return;
            }
            met.anything = true;
            let share = give.share(self.give(j));
            if share == 0.0 {
                return;
            }
            let dist = dist2.sqrt();
            let normal = if dist > 1e-9 { d / dist } else { apart(i, j) };
            push += normal * (touch - dist) * share;
        });
        let moved = p + push;
        let mut p = moved;
        // A wall listed in two cells pushes twice; the second push finds the disc out already.
        let r = Vec2::splat(me.radius);
        self.index.blocks_near(moved - r, moved + r, |block| {
            if groups_match(me.groups, block.groups) {
                p = block.push_out(p, me.radius);
            }
        });
        met.wall = p != moved;
        met.anything |= met.wall;
        (p, met)
    }
}

/// Which way disc `i` leaves disc `j` when their centres coincide: a direction fixed by the
/// pair, opposite for the other one.
fn apart(i: usize, j: usize) -> Vec2 {
    // The golden angle spreads the pairs' directions around the circle.
    let dir = Vec2::from_angle(2.399_963 * i.min(j) as f32);
    if i < j { dir } else { -dir }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::world::groups;
    use crate::world::spatial::Block;
    use crate::world::spatial::tests::block as wall;
    use bevy_rapier2d::prelude::Group;

    fn robot(r: f32) -> Mover {
        Mover { radius: r, give: Give::Robot, groups: CollisionGroups::new(groups::ROBOT, Group::ALL) }
    }

    fn pen(r: f32) -> Mover {
        Mover { radius: r, give: Give::Pen, groups: CollisionGroups::new(groups::PEN, Group::ALL) }
    }

    fn separate(movers: &[Mover], at: &[Vec2], blocks: Vec<Block>, threads: usize) -> Vec<Vec2> {
        separate_with(Separator::default(), movers, at, blocks, threads)
    }

    fn separate_with(
        mut separator: Separator,
        movers: &[Mover],
        at: &[Vec2],
        blocks: Vec<Block>,
        threads: usize,
    ) -> Vec<Vec2> {
        let arena = Vec2::new(20.0, 20.0);
        let mut index = SpatialIndex::default();
        index.set_blocks(arena, blocks);
        separator.separate(movers, at.to_vec(), arena, &index, &Passes { threads }).to_vec()
    }

    #[test]
    fn two_robots_each_take_half_of_their_overlap() {
        let at = [Vec2::new(5.0, 5.0), Vec2::new(5.15, 5.0)];
        let end = separate(&[robot(0.1), robot(0.1)], &at, vec![], 1);
        assert!((end[0] - Vec2::new(4.975, 5.0)).length() < 1e-5, "{end:?}");
        assert!((end[1] - Vec2::new(5.175, 5.0)).length() < 1e-5, "{end:?}");
    }

    #[test]
    fn a_robot_pushes_a_pen_and_keeps_its_place() {
        let at = [Vec2::new(5.0, 5.0), Vec2::new(5.0, 5.12)];
        let end = separate(&[robot(0.1), pen(0.03)], &at, vec![], 1);
        assert_eq!(end[0], at[0], "the robot is not slowed");
        assert!((end[1] - Vec2::new(5.0, 5.13)).length() < 1e-5, "the pen just touches: {end:?}");
    }

    #[test]
    fn an_outside_robot_never_moves_and_others_give_way_entirely() {
        let fixed = Mover { give: Give::Fixed, ..robot(0.1) };
        let at = [Vec2::new(5.0, 5.0), Vec2::new(5.1, 5.0)];
        let end = separate(&[fixed, robot(0.1)], &at, vec![], 1);
        assert_eq!(end[0], at[0]);
        assert!((end[1] - Vec2::new(5.2, 5.0)).length() < 1e-5, "{end:?}");
    }

    #[test]
    fn a_pen_pinned_to_a_wall_stops_the_robot_pressing_it() {
        // A wall face at x = 10; a pen against it; a robot that drove 2 cm into the pen.
        let walls = vec![wall(Vec2::new(10.05, 10.0), Vec2::new(0.05, 5.0), 0.0)];
        let at = [Vec2::new(9.97, 10.0), Vec2::new(9.86, 10.0)];
        let end = separate(&[pen(0.03), robot(0.1)], &at, walls, 1);
        assert!((end[0] - at[0]).length() < 1e-5, "the pen stays at the wall: {end:?}");
        assert!((end[1] - Vec2::new(9.84, 10.0)).length() < 1e-5, "the robot is held off: {end:?}");
    }

    #[test]
    fn discs_end_outside_walls_whether_they_graze_or_sit_inside() {
        // A wall along x = 10 (0.1 thick), and a turned box.
        let walls = vec![
            wall(Vec2::new(10.0, 10.0), Vec2::new(0.05, 5.0), 0.0),
            wall(Vec2::new(3.0, 3.0), Vec2::new(0.5, 0.2), 0.6),
        ];
        let at = [Vec2::new(9.9, 8.0), Vec2::new(10.01, 12.0), Vec2::new(3.0, 3.0), Vec2::new(3.1, 3.1)];
        let movers = [robot(0.1), robot(0.1), robot(0.1), pen(0.03)];
        let end = separate(&movers, &at, walls.clone(), 1);
        assert!((end[0] - Vec2::new(9.85, 8.0)).length() < 1e-5, "grazing: out to touch {end:?}");
        assert!((end[1] - Vec2::new(10.15, 12.0)).length() < 1e-5, "centre inside: out the near side {end:?}");
        for (k, p) in end.iter().enumerate() {
            for w in &walls {
                let (_, dist) = w.nearest(*p);
                assert!(dist >= movers[k].radius - 1e-4, "disc {k} at {p} is {dist} from a wall");
            }
        }
    }

    #[test]
    fn a_crowd_comes_apart_the_same_on_any_number_of_threads() {
        let mut rng = crate::sim::rng::stream(3, "kinematic-test", 0);
        use rand::RngExt;
        let n = 2000;
        let movers: Vec<Mover> = (0..n).map(|i| if i % 4 == 0 { pen(0.03) } else { robot(0.1) }).collect();
        let at: Vec<Vec2> =
            (0..n).map(|_| Vec2::new(rng.random_range(1.0..19.0), rng.random_range(1.0..19.0))).collect();
        // Two coincident robots too.
        let mut at = at;
        at[2] = at[1];
        bevy::tasks::ComputeTaskPool::get_or_init(bevy::tasks::TaskPool::new);
        // Walls through the crowd, one of them turned.
        let walls = || {
            vec![
                wall(Vec2::new(10.0, 10.0), Vec2::new(0.05, 6.0), 0.0),
                wall(Vec2::new(6.0, 6.0), Vec2::new(3.0, 0.1), 0.7),
            ]
        };
        let one = separate(&movers, &at, walls(), 1);
        let two = separate(&movers, &at, walls(), 2);
        assert_eq!(one, two);
        let full = Separator { shortcut: false, ..Separator::default() };
        assert_eq!(
            one,
            separate_with(full, &movers, &at, walls(), 2),
            "settling only the discs that can move changes nothing"
        );
        assert_ne!(one[1], one[2], "coincident discs come apart");
        let overlap = |p: &[Vec2]| -> f32 {
            let mut worst = 0.0f32;
            for i in 0..n {
                for j in i + 1..n {
                    let touch = movers[i].radius + movers[j].radius;
                    worst = worst.max(touch - p[i].distance(p[j]));
                }
            }
            worst
        };
        assert!(overlap(&one) < overlap(&at) / 2.0, "before {} after {}", overlap(&at), overlap(&one));
    }
}
