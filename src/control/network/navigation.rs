//! The way to a charging station, as a plain type. A network robot knows where the stations are
//! (as a robot knows its docking station) and the fixed walls and boxes of the room; a distance
//! field over a grid of the floor tells, from anywhere, how far the nearest station is along a
//! path that keeps the robot clear of every wall and box, and which way that path goes. One field
//! per scene and robot size, shared by all the robots that use it.

use bevy::math::Vec2;

use crate::scene::geometry::{Footprint, all_walls, box_footprint, wall_footprint};
use crate::scene::schema::SceneFile;

/// The most grid cells a field may have; larger floors get coarser cells.
const MAX_CELLS: f32 = 4.0e6;
/// Extra clearance beyond the robot's radius, metres.
pub const MARGIN: f32 = 0.02;
/// How many cells away a robot pressed against a wall looks for open floor.
const ESCAPE_CELLS: i32 = 6;

/// Distances to the nearest charging station over the floor.
#[derive(Debug, Clone, PartialEq)]
pub struct StationMap {
    cell: f32,
    cols: usize,
    rows: usize,
    /// Metres to the nearest station for each cell; infinite where blocked or cut off.
    dist: Vec<f32>,
    /// Station centres.
    pub stations: Vec<Vec2>,
}

/// Dijkstra's open cells with two step lengths (straight and diagonal): one first-in
/// first-out queue per kind of entry. The cells are taken in order of distance, so each queue
/// receives distances in order, and the nearest open cell is at the head of one of them: no heap
/// needed. Which of equal distances goes first does not change any cell's final distance.
#[derive(Default)]
struct OpenCells {
    /// Stations' own cells, straight steps, diagonal steps: (distance, cell).
    queues: [std::collections::VecDeque<(f32, usize)>; 3],
}

impl OpenCells {
    fn push(&mut self, queue: usize, dist: f32, index: usize) {
        self.queues[queue].push_back((dist, index));
    }

    fn pop(&mut self) -> Option<(f32, usize)> {
        let nearest = (0..3).filter_map(|q| Some((self.queues[q].front()?.0, q))).min_by(|a, b| a.0.total_cmp(&b.0))?.1;
        self.queues[nearest].pop_front()
    }
}

const NEIGHBOURS: [(i32, i32); 8] = [(1, 0), (-1, 0), (0, 1), (0, -1), (1, 1), (1, -1), (-1, 1), (-1, -1)];

impl StationMap {
    /// The field of `scene`'s stations for a robot of `radius`.
    pub fn new(scene: &SceneFile, radius: f32) -> Self {
        let (w, h) = (scene.arena.width, scene.arena.height);
        let clearance = radius + MARGIN;
        let cell = (clearance / 2.0).max(((w * h) / MAX_CELLS).sqrt()).max(1e-3);
        let (cols, rows) = (((w / cell).ceil() as usize).max(1), ((h / cell).ceil() as usize).max(1));
        let mut blocked = vec![false; cols * rows];
        let mut solids: Vec<Footprint> = all_walls(scene)
            .iter()
            .map(|w| wall_footprint(Vec2::new(w.from.0, w.from.1), Vec2::new(w.to.0, w.to.1), w.thickness))
            .collect();
        solids.extend(scene.boxes.iter().map(box_footprint));
        let centre = |x: usize, y: usize| Vec2::new((x as f32 + 0.5) * cell, (y as f32 + 0.5) * cell);
        let span = |lo: f32, hi: f32, n: usize| {
            let a = ((lo / cell).floor().max(0.0) as usize).min(n);
            let b = ((hi / cell).ceil().max(0.0) as usize).min(n);
            a..b
        };
        // Each solid marks the cells of its bounding box, grown by the clearance, that it keeps
        // the robot's centre out of.
        for s in &solids {
            let (c, half) = (s.center(), s.aabb_half() + Vec2::splat(clearance));
            for y in span(c.y - half.y, c.y + half.y, rows) {
                for x in span(c.x - half.x, c.x + half.x, cols) {
                    if s.signed_distance(centre(x, y)) < clearance {
                        blocked[y * cols + x] = true;
                    }
                }
            }
        }
        // Without boundary walls the floor's edge still bounds the robot.
        if !scene.arena.boundary {
            for y in 0..rows {
                for x in 0..cols {
                    let p = centre(x, y);
                    if p.x < clearance || p.y < clearance || p.x > w - clearance || p.y > h - clearance {
                        blocked[y * cols + x] = true;
                    }
                }
            }
        }
        let stations: Vec<Vec2> = scene.stations.iter().map(|s| Vec2::new(s.pos.0, s.pos.1)).collect();
        let mut dist = vec![f32::INFINITY; cols * rows];
        let mut open = OpenCells::default();
        for s in &scene.stations {
            let (p, r) = (Vec2::new(s.pos.0, s.pos.1), s.radius);
            for y in span(p.y - r, p.y + r, rows) {
                for x in span(p.x - r, p.x + r, cols) {
                    let i = y * cols + x;
                    if !blocked[i] && centre(x, y).distance(p) <= r && dist[i] > 0.0 {
                        dist[i] = 0.0;
                        open.push(0, 0.0, i);
                    }
                }
            }
        }
        let at = |x: i32, y: i32| {
            (x >= 0 && y >= 0 && (x as usize) < cols && (y as usize) < rows).then(|| y as usize * cols + x as usize)
        };
        let steps = [cell, cell * std::f32::consts::SQRT_2];
        while let Some((d, index)) = open.pop() {
            if d > dist[index] {
                continue;
            }
            let (x, y) = ((index % cols) as i32, (index / cols) as i32);
            for (dx, dy) in NEIGHBOURS {
                let Some(n) = at(x + dx, y + dy) else { continue };
                // No cutting corners past a blocked cell.
                let diagonal = dx != 0 && dy != 0;
                if blocked[n]
                    || (diagonal
                        && (at(x + dx, y).is_none_or(|i| blocked[i]) || at(x, y + dy).is_none_or(|i| blocked[i])))
                {
                    continue;
                }
                let nd = d + steps[usize::from(diagonal)];
                if nd < dist[n] {
                    dist[n] = nd;
                    open.push(1 + usize::from(diagonal), nd, n);
                }
            }
        }
        Self { cell, cols, rows, dist, stations }
    }

    fn index(&self, p: Vec2) -> Option<usize> {
        let (x, y) = ((p.x / self.cell).floor(), (p.y / self.cell).floor());
        (x >= 0.0 && y >= 0.0 && (x as usize) < self.cols && (y as usize) < self.rows)
            .then(|| y as usize * self.cols + x as usize)
    }

    fn centre(&self, index: usize) -> Vec2 {
        Vec2::new(((index % self.cols) as f32 + 0.5) * self.cell, ((index / self.cols) as f32 + 0.5) * self.cell)
    }

    /// The best cell next to `index` (or `index` itself): where the distance falls most.
    fn descend(&self, index: usize) -> usize {
        let (x, y) = ((index % self.cols) as i32, (index / self.cols) as i32);
        let mut best = index;
        for (dx, dy) in NEIGHBOURS {
            let (nx, ny) = (x + dx, y + dy);
            if nx < 0 || ny < 0 || nx as usize >= self.cols || ny as usize >= self.rows {
                continue;
            }
            let n = ny as usize * self.cols + nx as usize;
            if self.dist[n] < self.dist[best] {
                best = n;
            }
        }
        best
    }

    /// The cell to measure `p` from: its own, or, for a robot pressed against a wall (its
    /// centre nearer the wall than the clearance), the best open cell close by.
    fn start(&self, p: Vec2) -> Option<usize> {
        self.start_at(self.index(p)?)
    }

    /// [`StationMap::start`] for a point in cell `i`.
    fn start_at(&self, i: usize) -> Option<usize> {
        if self.dist[i].is_finite() {
            return Some(i);
        }
        let (x, y) = ((i % self.cols) as i32, (i / self.cols) as i32);
        let mut best: Option<usize> = None;
        for r in 1..=ESCAPE_CELLS {
            for dy in -r..=r {
                for dx in -r..=r {
                    let (nx, ny) = (x + dx, y + dy);
                    if dx.abs() != r && dy.abs() != r
                        || nx < 0
                        || ny < 0
                        || nx as usize >= self.cols
                        || ny as usize >= self.rows
                    {
                        continue;
                    }
                    let n = ny as usize * self.cols + nx as usize;
                    if self.dist[n].is_finite() && best.is_none_or(|b| self.dist[n] < self.dist[b]) {
                        best = Some(n);
                    }
                }
            }
            if best.is_some() {
                break;
            }
        }
        best
    }

    /// Whether the straight segment from `a` to `b` stays in open cells.
    fn clear(&self, a: Vec2, b: Vec2) -> bool {
        let n = ((a.distance(b) / (self.cell / 2.0)).ceil() as usize).max(1);
        (0..=n).all(|k| self.index(a.lerp(b, k as f32 / n as f32)).is_some_and(|i| self.dist[i].is_finite()))
    }

    /// Metres to the nearest station along a clear path from `p`, if there is one.
    pub fn distance(&self, p: Vec2) -> Option<f32> {
        self.start(p).map(|i| self.dist[i])
    }

    /// The grid cell `p` lies in (`None` off the floor): [`StationMap::distance`] is the same
    /// for every point of a cell.
    pub fn cell_of(&self, p: Vec2) -> Option<usize> {
        self.index(p)
    }

    /// [`StationMap::distance`] from any point of `cell`.
    pub fn distance_from_cell(&self, cell: usize) -> Option<f32> {
        self.start_at(cell).map(|i| self.dist[i])
    }

    /// A point about `ahead` metres further along the path to the nearest station that the
    /// robot can reach in a straight line, to steer at; the station itself once the path ends
    /// there. `None` when no clear path is known.
    pub fn waypoint(&self, p: Vec2, ahead: f32) -> Option<Vec2> {
        let mut i = self.start(p)?;
        let first = i;
        let mut travelled = 0.0;
        while travelled < ahead {
            let next = self.descend(i);
            if next == i || !self.clear(p, self.centre(next)) {
                break;
            }
            travelled += self.centre(i).distance(self.centre(next));
            i = next;
        }
        if self.dist[i] == 0.0 {
            // On the station: its centre.
            let c = self.centre(i);
            return self.stations.iter().copied().min_by(|a, b| a.distance(c).total_cmp(&b.distance(c)));
        }
        if i == first && self.index(p) == Some(i) {
            // Nothing in sight further on: the next cell down the path.
            return Some(self.centre(self.descend(i)));
        }
        Some(self.centre(i))
    }

    /// The station nearest to `p` in a straight line.
    pub fn nearest_station(&self, p: Vec2) -> Option<Vec2> {
        self.stations.iter().copied().min_by(|a, b| a.distance(p).total_cmp(&b.distance(p)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scene::schema::{BoxSpec, StationSpec, WallSpec};

    /// A 6 m × 3 m room, the station at the east end, a partition at x = 3 open only at the top.
    fn room() -> SceneFile {
        let mut s = SceneFile::empty("nav", 6.0, 3.0);
        s.stations.push(StationSpec { name: "charger".into(), pos: (5.5, 1.5), radius: 0.3, rate: 1.0 });
        s.walls.push(WallSpec { name: "partition".into(), from: (3.0, 0.0), to: (3.0, 2.2), thickness: 0.1 });
        s
    }

    #[test]
    fn the_way_to_the_station_goes_round_the_partition() {
        let map = StationMap::new(&room(), 0.1);
        // Straight to the station's edge from (1, 0.5): 4.3 m; round the partition's top end:
        // about 5.1 m.
        let d = map.distance(Vec2::new(1.0, 0.5)).unwrap();
        assert!(d > 4.9 && d < 5.5, "{d}");
        // The first steps lead up towards the gap, not east into the partition.
        let w = map.waypoint(Vec2::new(2.5, 0.5), 0.5).unwrap();
        assert!(w.y > 0.8, "{w:?}");
        // On the station the way ends at its centre.
        assert_eq!(map.waypoint(Vec2::new(5.45, 1.5), 0.5), Some(Vec2::new(5.5, 1.5)));
        assert_eq!(map.distance(Vec2::new(5.5, 1.5)), Some(0.0));
    }

    #[test]
    fn a_gap_narrower_than_the_robot_is_no_way() {
        let mut s = room();
        // Close the gap to 0.15 m: a robot of radius 0.1 cannot pass.
        s.boxes.push(BoxSpec { name: "plug".into(), center: (3.0, 2.7), size: (0.3, 0.6), angle: 0.0 });
        let map = StationMap::new(&s, 0.1);
        assert_eq!(map.distance(Vec2::new(1.0, 0.5)), None);
        assert_eq!(map.waypoint(Vec2::new(1.0, 0.5), 0.5), None);
        assert!(map.distance(Vec2::new(4.0, 0.5)).is_some());
    }

    #[test]
    fn following_the_waypoints_arrives() {
        let map = StationMap::new(&room(), 0.1);
        let mut p = Vec2::new(0.5, 0.5);
        for _ in 0..200 {
            let Some(w) = map.waypoint(p, 0.4) else { break };
            p += (w - p).clamp_length_max(0.1);
        }
        assert!(p.distance(Vec2::new(5.5, 1.5)) < 0.35, "{p:?}");
    }

    /// The queues give exactly the distances a textbook Dijkstra with a binary heap gives (over
    /// the same open cells and sources), in a cluttered room with many stations.
    #[test]
    fn the_queues_give_what_a_heap_gives() {
        use rand::RngExt;
        use std::cmp::Reverse;
        let mut rng = crate::sim::rng::stream(5, "nav-test", 0);
        let mut s = SceneFile::empty("clutter", 12.0, 9.0);
        for i in 0..40 {
            let center = (rng.random_range(0.5..11.5), rng.random_range(0.5..8.5));
            let size = (rng.random_range(0.1..1.0), rng.random_range(0.1..1.0));
            s.boxes.push(BoxSpec { name: format!("b{i}"), center, size, angle: rng.random_range(0.0..3.0) });
        }
        for i in 0..12 {
            let pos = (rng.random_range(0.5..11.5), rng.random_range(0.5..8.5));
            s.stations.push(StationSpec { name: format!("s{i}"), pos, radius: 0.25, rate: 1.0 });
        }
        let map = StationMap::new(&s, 0.1);
        let (cols, rows, cell) = (map.cols as i32, map.rows as i32, map.cell);
        // Open cells are the finite ones and their unreachable pockets: the heap's walk takes
        // "blocked" as "infinite", which is the same next to every reachable cell.
        let open =
            |x: i32, y: i32| x >= 0 && y >= 0 && x < cols && y < rows && map.dist[(y * cols + x) as usize].is_finite();
        let mut want = vec![f32::INFINITY; map.dist.len()];
        let mut heap = std::collections::BinaryHeap::new();
        for (i, d) in map.dist.iter().enumerate() {
            if *d == 0.0 {
                want[i] = 0.0;
                heap.push(Reverse((0u32, i)));
            }
        }
        while let Some(Reverse((bits, i))) = heap.pop() {
            let d = f32::from_bits(bits);
            if d > want[i] {
                continue;
            }
            let (x, y) = ((i % map.cols) as i32, (i / map.cols) as i32);
            for (dx, dy) in NEIGHBOURS {
                let diagonal = dx != 0 && dy != 0;
                if !open(x + dx, y + dy) || (diagonal && (!open(x + dx, y) || !open(x, y + dy))) {
                    continue;
                }
                let n = ((y + dy) * cols + x + dx) as usize;
                let nd = d + if diagonal { cell * std::f32::consts::SQRT_2 } else { cell };
                if nd < want[n] {
                    want[n] = nd;
                    // Positive floats order as their bits.
                    heap.push(Reverse((nd.to_bits(), n)));
                }
            }
        }
        assert!(map.dist.iter().filter(|d| d.is_finite()).count() > 1000);
        assert!(map.dist.iter().zip(&want).all(|(a, b)| a.to_bits() == b.to_bits()));
    }
}
