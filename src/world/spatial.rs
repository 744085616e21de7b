//! The spatial index every per-robot query goes through: a uniform grid of the discs (robots,
//! free pens, charging pads) rebuilt after every physics step, and a grid of the fixed
//! rectangles (walls and boxes) rebuilt only when they change.
//!
//! Rapier's BVH answers the same questions, but a query in a tree of all colliders visits a
//! hundred nodes to return a dozen (its group filters apply only at the leaves), and every
//! answer goes through a callback and a component lookup. Here a query reads the few cells it
//! overlaps, and each entry carries what the sensors need (position, radius, kind, groups), so
//! they never look anything up. The geometry is exact: circles and oriented rectangles, as
//! rapier has them.
//!
//! Entries within a cell keep the order they were added in, and every query's consumer sorts
//! or picks by a stable key, so answers do not depend on how the grid is laid out.

use bevy::prelude::*;
use bevy_rapier2d::prelude::{ColliderDisabled, CollisionGroups, Group, Sensor};

use super::{Arena, PenBox, Seeable, Wall};
use crate::scene::SceneLoaded;
use crate::sim::{Env, PerEnv, SimTime};

/// Side of a grid cell, metres: about a camera's range, so a camera query reads a few cells.
pub const CELL: f32 = 1.0;
/// No grid has more cells than this along a side (a huge arena gets coarser cells).
const MAX_CELLS_PER_SIDE: u32 = 4096;

/// A uniform grid of item indices: `starts[c]..starts[c + 1]` of `items` are the items of cell
/// `c`. An item covering several cells is listed in each.
#[derive(Debug, Clone, Default)]
pub struct CellGrid {
    origin: Vec2,
    /// The far corner the grid was made for.
    max: Vec2,
    cell: f32,
    cols: u32,
    rows: u32,
    starts: Vec<u32>,
    items: Vec<u32>,
}

impl CellGrid {
    /// A grid over `min..max` with cells of `cell` metres (coarser for a huge area).
    pub fn new(min: Vec2, max: Vec2, cell: f32) -> Self {
        let extent = (max - min).max(Vec2::splat(cell));
        let per_side = (extent / cell).ceil().max(Vec2::ONE);
        let cell = cell.max(extent.max_element() / MAX_CELLS_PER_SIDE as f32);
        let (cols, rows) =
            ((per_side.x as u32).clamp(1, MAX_CELLS_PER_SIDE), (per_side.y as u32).clamp(1, MAX_CELLS_PER_SIDE));
        Self { origin: min, max, cell, cols, rows, starts: vec![0; (cols * rows) as usize + 1], items: Vec::new() }
    }

    /// The cell range `(x0, y0, x1, y1)` (inclusive) that `min..max` overlaps, clamped to the
    /// grid: what lies outside the arena is kept in its border cells.
    fn span(&self, min: Vec2, max: Vec2) -> (u32, u32, u32, u32) {
        // Truncation is the floor here: negatives (and NaN) go to cell 0 first. (`floor` is a
        // libm call on baseline x86-64, and this runs several times per query.)
        let c = |v: f32, n: u32| {
            let i = v / self.cell;
            if i >= 0.0 { (i as u32).min(n - 1) } else { 0 }
        };
        let (a, b) = (min - self.origin, max - self.origin);
        (c(a.x, self.cols), c(a.y, self.rows), c(b.x, self.cols), c(b.y, self.rows))
    }

    /// Fills the grid with `n` items, item `i` covering the box `bounds(i)`. Items of a cell
    /// are in index order.
    pub fn fill(&mut self, n: usize, bounds: impl Fn(usize) -> (Vec2, Vec2)) {
        let spans: Vec<(u32, u32, u32, u32)> = (0..n)
            .map(|i| {
                let (lo, hi) = bounds(i);
                self.span(lo, hi)
            })
            .collect();
        let cols = self.cols;
        self.place(|| {
            spans.iter().enumerate().flat_map(move |(i, &(x0, y0, x1, y1))| {
                (y0..=y1).flat_map(move |y| (x0..=x1).map(move |x| (y * cols + x, i as u32)))
            })
        });
    }

    /// Fills the grid with `points` (each in the one cell that holds it); cheaper than
    /// [`CellGrid::fill`] for the common case.
    pub fn fill_points(&mut self, points: impl Iterator<Item = Vec2>) {
        let cell_of: Vec<u32> = points
            .map(|p| {
                let (x, y, _, _) = self.span(p, p);
                y * self.cols + x
            })
            .collect();
        self.place(|| cell_of.iter().enumerate().map(|(i, &c)| (c, i as u32)));
    }

    /// A counting sort of `(cell, item)` pairs into the cells; `pairs` gives the same pairs each
    /// time it is called (once to count, once to place).
    fn place<I: Iterator<Item = (u32, u32)>>(&mut self, pairs: impl Fn() -> I) {
        let cells = (self.cols * self.rows) as usize;
        self.starts.clear();
        self.starts.resize(cells + 1, 0);
        for (c, _) in pairs() {
            self.starts[c as usize + 1] += 1;
        }
        for c in 0..cells {
            self.starts[c + 1] += self.starts[c];
        }
        self.items.clear();
        self.items.resize(self.starts[cells] as usize, 0);
        let mut next: Vec<u32> = self.starts[..cells].to_vec();
        for (c, i) in pairs() {
            self.items[next[c as usize] as usize] = i;
            next[c as usize] += 1;
        }
    }

    /// Calls `f` with every item listed in a cell that `min..max` overlaps, cell by cell (an
    /// item covering several of those cells comes once per cell).
    #[inline]
    pub fn for_each(&self, min: Vec2, max: Vec2, mut f: impl FnMut(u32)) {
        // The cells of a row are contiguous, so one slice covers x0..=x1.
        self.for_each_run(min, max, |run| self.items[run].iter().for_each(|&i| f(i)));
    }

    /// Calls `f` with the positions in `items` of the items listed in the cells `min..max`
    /// overlaps: one run of positions per row of cells.
    #[inline]
    pub fn for_each_run(&self, min: Vec2, max: Vec2, mut f: impl FnMut(std::ops::Range<usize>)) {
        if self.items.is_empty() {
            return;
        }
        let (x0, y0, x1, y1) = self.span(min, max);
        for y in y0..=y1 {
            let row = (y * self.cols) as usize;
            f(self.starts[row + x0 as usize] as usize..self.starts[row + x1 as usize + 1] as usize);
        }
    }

    pub fn cell_size(&self) -> f32 {
        self.cell
    }

    /// The items cell by cell: the runs [`CellGrid::for_each_run`] gives are ranges of this.
    pub fn items(&self) -> &[u32] {
        &self.items
    }

    /// How many cells the grid has.
    pub fn cells(&self) -> usize {
        (self.cols * self.rows) as usize
    }

    /// The cell that holds `p` (a border cell for a point outside).
    #[inline]
    pub fn cell_of(&self, p: Vec2) -> usize {
        let (x, y, _, _) = self.span(p, p);
        (y * self.cols + x) as usize
    }

    /// Calls `f` with every cell that `min..max` overlaps.
    pub fn for_each_cell(&self, min: Vec2, max: Vec2, mut f: impl FnMut(usize)) {
        let (x0, y0, x1, y1) = self.span(min, max);
        for y in y0..=y1 {
            for x in x0..=x1 {
                f((y * self.cols + x) as usize);
            }
        }
    }
}

/// A disc in the index: a robot, a free pen or a charging pad.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Disc {
    pub entity: Entity,
    pub pos: Vec2,
    pub radius: f32,
    pub kind: Option<Seeable>,
    pub groups: CollisionGroups,
    /// Sensed, not solid (charging pads).
    pub sensor: bool,
}

/// A fixed rectangle in the index: a wall or a box.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Block {
    pub entity: Entity,
    pub center: Vec2,
    pub half: Vec2,
    /// The rectangle's x axis (cos, sin of its angle).
    pub axis: Vec2,
    pub kind: Option<Seeable>,
    pub groups: CollisionGroups,
}

impl Block {
    /// `p` in the rectangle's own frame.
    #[inline]
    pub fn local(&self, p: Vec2) -> Vec2 {
        let d = p - self.center;
        Vec2::new(d.dot(self.axis), d.dot(self.axis.perp()))
    }

    /// Whether `p` is in the rectangle (its edges included), as rapier's point query on the
    /// body's cuboid answers it.
    #[inline]
    pub fn contains(&self, p: Vec2) -> bool {
        let l = self.local(p);
        l.x.abs() <= self.half.x && l.y.abs() <= self.half.y
    }

    /// The rectangle's nearest point to `p` and the distance to it (0 inside).
    pub fn nearest(&self, p: Vec2) -> (Vec2, f32) {
        let l = self.local(p);
        let q = l.clamp(-self.half, self.half);
        let world = self.center + self.axis * q.x + self.axis.perp() * q.y;
        (world, (l - q).length())
    }

    /// A disc at `p` with `radius` moved the shortest way out of the rectangle (unchanged when
    /// clear of it): the kinematic model's walls and boxes.
    pub fn push_out(&self, p: Vec2, radius: f32) -> Vec2 {
        let local = self.local(p);
        let nearest = local.clamp(-self.half, self.half);
        let off = local - nearest;
        let dist = off.length();
        let out = if dist > 0.0 {
            if dist >= radius {
                return p;
            }
            nearest + off / dist * radius
        } else {
            // The centre is inside: out through the nearest side.
            let sign = |v: f32| if v < 0.0 { -1.0 } else { 1.0 };
            let gap = self.half - local.abs();
            if gap.x <= gap.y {
                Vec2::new(sign(local.x) * (self.half.x + radius), local.y)
            } else {
                Vec2::new(local.x, sign(local.y) * (self.half.y + radius))
            }
        };
        self.center + self.axis * out.x + self.axis.perp() * out.y
    }

    /// Where a ray from `origin` along the unit `dir` first meets the solid rectangle, within
    /// `max` metres: 0 from inside.
    pub fn ray(&self, origin: Vec2, dir: Vec2, max: f32) -> Option<f32> {
        self.ray_from_local(self.local(origin), dir, max)
    }

    /// [`Block::ray`] from the origin in the rectangle's own frame ([`Block::local`]), for many
    /// rays from one origin.
    #[inline]
    pub fn ray_from_local(&self, o: Vec2, dir: Vec2, max: f32) -> Option<f32> {
        let d = Vec2::new(dir.dot(self.axis), dir.dot(self.axis.perp()));
        let (mut t0, mut t1) = (0.0f32, max);
        for (o, d, h) in [(o.x, d.x, self.half.x), (o.y, d.y, self.half.y)] {
            if d.abs() < 1e-12 {
                if o < -h || o > h {
                    return None;
                }
            } else {
                let (a, b) = ((-h - o) / d, (h - o) / d);
                let (a, b) = if a <= b { (a, b) } else { (b, a) };
                t0 = t0.max(a);
                t1 = t1.min(b);
                if t0 > t1 {
                    return None;
                }
            }
        }
        Some(t0)
    }

    /// The axis-aligned box around the rectangle.
    pub fn bounds(&self) -> (Vec2, Vec2) {
        let ext = Vec2::new(
            self.axis.x.abs() * self.half.x + self.axis.y.abs() * self.half.y,
            self.axis.y.abs() * self.half.x + self.axis.x.abs() * self.half.y,
        );
        (self.center - ext, self.center + ext)
    }
}

/// Whether rapier would let two colliders with these groups interact.
#[inline]
pub fn groups_match(a: CollisionGroups, b: CollisionGroups) -> bool {
    a.memberships.intersects(b.filters) && b.memberships.intersects(a.filters)
}

/// Up to this many fixed rectangles, [`SpatialIndex::blocks_in`] tests every one's bounds: the
/// grid lists a wall in every cell along it, and sorting out the repeats cost a 16-robot room
/// more than the tests (about 1,000 instructions a robot-step).
const FEW_BLOCKS: usize = 32;

/// Whether the boxes `lo..hi` and `min..max` overlap (touching counts).
#[inline]
fn overlaps(lo: Vec2, hi: Vec2, min: Vec2, max: Vec2) -> bool {
    lo.x <= max.x && lo.y <= max.y && hi.x >= min.x && hi.y >= min.y
}

/// An environment's discs and fixed rectangles, gridded (kept in a [`PerEnv`]). See the module
/// docs.
#[derive(Debug, Default)]
pub struct SpatialIndex {
    /// The discs cell by cell (in the order given within a cell), so a query reads each row of
    /// cells it overlaps as one contiguous slice.
    pub discs: Vec<Disc>,
    /// The discs in the order given, while they are sorted into cells.
    given: Vec<Disc>,
    disc_grid: CellGrid,
    /// The largest disc radius: a query for overlaps widens by it.
    max_radius: f32,
    pub blocks: Vec<Block>,
    /// Each rectangle's bounds ([`Block::bounds`]), worked out once.
    block_bounds: Vec<(Vec2, Vec2)>,
    block_grid: CellGrid,
    /// The step whose sensing the discs are current for.
    fresh_for: Option<u64>,
}

impl SpatialIndex {
    /// Replaces the discs (within a cell, in the order given).
    pub fn set_discs(&mut self, arena: Vec2, discs: impl IntoIterator<Item = Disc>) {
        self.given.clear();
        self.given.extend(discs);
        self.grid_given(arena);
    }

    /// Sorts the discs given into cells.
    fn grid_given(&mut self, arena: Vec2) {
        if self.disc_grid.cols == 0 || self.disc_grid.max != arena {
            self.disc_grid = CellGrid::new(Vec2::ZERO, arena, CELL);
        }
        self.max_radius = self.given.iter().map(|d| d.radius).fold(0.0, f32::max);
        let given = &self.given;
        self.disc_grid.fill_points(given.iter().map(|d| d.pos));
        self.discs.clear();
        self.discs.extend(self.disc_grid.items.iter().map(|&i| given[i as usize]));
    }

    /// Replaces the fixed rectangles.
    pub fn set_blocks(&mut self, arena: Vec2, blocks: Vec<Block>) {
        self.blocks = blocks;
        self.block_bounds = self.blocks.iter().map(Block::bounds).collect();
        self.block_grid = CellGrid::new(Vec2::ZERO, arena, CELL);
        let b = &self.block_bounds;
        self.block_grid.fill(b.len(), |i| b[i]);
    }

    /// Every disc whose centre lies within `half` of `center` on both axes (and some more
    /// around; callers test the exact distance).
    #[inline]
    pub fn discs_around(&self, center: Vec2, half: f32, f: impl FnMut(&Disc)) {
        self.discs_in(center - Vec2::splat(half), center + Vec2::splat(half), f);
    }

    /// Every disc whose centre lies within `min..max` (and some more around; callers test the
    /// exact geometry), cell by cell.
    #[inline]
    pub fn discs_in(&self, min: Vec2, max: Vec2, mut f: impl FnMut(&Disc)) {
        // The discs are stored cell by cell: each row of cells is one slice.
        self.disc_grid.for_each_run(min, max, |run| self.discs[run].iter().for_each(&mut f));
    }

    /// Every disc that may overlap a circle at `center` with `radius`.
    #[inline]
    pub fn discs_touching(&self, center: Vec2, radius: f32, mut f: impl FnMut(&Disc)) {
        let reach = radius + self.max_radius;
        self.discs_around(center, reach, |d| {
            if d.pos.distance_squared(center) <= (radius + d.radius) * (radius + d.radius) {
                f(d)
            }
        });
    }

    /// The fixed rectangles whose bounds overlap `min..max`, each once, in index order. Up to
    /// 32 of them (`FEW_BLOCKS`: a room's walls and boxes) each is tested; past that, those the
    /// grid lists in the cells `min..max` overlaps.
    pub fn blocks_in(&self, min: Vec2, max: Vec2, out: &mut Vec<u32>) {
        if self.block_bounds.len() > FEW_BLOCKS {
            return self.blocks_in_grid(min, max, out);
        }
        out.clear();
        for (i, &(lo, hi)) in self.block_bounds.iter().enumerate() {
            if overlaps(lo, hi, min, max) {
                out.push(i as u32);
            }
        }
    }

    /// [`SpatialIndex::blocks_in`] through the grid, whatever the number of rectangles.
    fn blocks_in_grid(&self, min: Vec2, max: Vec2, out: &mut Vec<u32>) {
        out.clear();
        self.block_grid.for_each(min, max, |i| out.push(i));
        out.sort_unstable();
        out.dedup();
        out.retain(|&i| {
            let (lo, hi) = self.block_bounds[i as usize];
            overlaps(lo, hi, min, max)
        });
    }

    /// Every fixed rectangle listed in a grid cell that `min..max` overlaps, once per such cell
    /// (cheaper than [`SpatialIndex::blocks_in`] for a caller that does not mind repeats).
    #[inline]
    pub fn blocks_near<'a>(&'a self, min: Vec2, max: Vec2, mut f: impl FnMut(&'a Block)) {
        self.block_grid.for_each(min, max, |i| f(&self.blocks[i as usize]));
    }

    /// The first fixed rectangle (in index order) that holds `p` and that `groups` may meet
    /// ([`groups_match`]): what a robot carries a pen over, without a query through rapier's
    /// tree of every collider.
    pub fn block_at(&self, p: Vec2, groups: CollisionGroups) -> Option<&Block> {
        let mut found: Option<&Block> = None;
        // A cell lists its rectangles in index order: the first that holds `p` is kept.
        self.blocks_near(p, p, |b| {
            if found.is_none() && groups_match(groups, b.groups) && b.contains(p) {
                found = Some(b);
            }
        });
        found
    }

    /// The largest disc radius.
    pub fn max_radius(&self) -> f32 {
        self.max_radius
    }

    /// Whether the discs were rebuilt for this step's sensing.
    pub fn fresh_for(&self, step: u64) -> bool {
        self.fresh_for == Some(step)
    }
}

/// Rebuilds the discs of the environments `stale` picks from the world as it stands; `step` is
/// the step whose sensing will use them. Within an environment, the discs keep the order of
/// the query. (`picked` is room for the choice, kept by the caller.)
fn rebuild_discs(
    indices: &mut PerEnv<SpatialIndex>,
    arena: &Arena,
    step: u64,
    bodies: &DiscBodies,
    stale: impl Fn(&SpatialIndex) -> bool,
    picked: &mut Vec<bool>,
) {
    picked.clear();
    picked.extend(indices.0.iter().map(&stale));
    for (index, _) in indices.0.iter_mut().zip(picked.iter()).filter(|(_, p)| **p) {
        index.given.clear();
    }
    for (entity, t, groups, kind, r, sensor, env) in bodies {
        if picked.get(env.index()).copied().unwrap_or(false) {
            indices[*env].given.push(Disc {
                entity,
                pos: t.translation.truncate(),
                radius: r.0,
                kind: kind.copied(),
                groups: *groups,
                sensor,
            });
        }
    }
    let arena = Vec2::new(arena.width, arena.height);
    for (index, _) in indices.0.iter_mut().zip(picked.iter()).filter(|(_, p)| **p) {
        index.grid_given(arena);
        index.fresh_for = Some(step);
    }
}

/// The radius a body has in the index (robots, pens and pads get it when they spawn).
#[derive(Component, Debug, Clone, Copy, PartialEq)]
pub struct DiscRadius(pub f32);

type DiscBodies<'w, 's> = Query<
    'w,
    's,
    (
        Entity,
        &'static Transform,
        &'static CollisionGroups,
        Option<&'static Seeable>,
        &'static DiscRadius,
        Has<Sensor>,
        &'static Env,
    ),
    Without<ColliderDisabled>,
>;

/// After the physics step: the discs where the step left them, for the sensors of the next
/// step (the radio, which delivers before the physics step, keeps a grid of its own).
pub(super) fn index_after_physics(
    mut indices: ResMut<PerEnv<SpatialIndex>>,
    arena: Res<Arena>,
    time: Res<SimTime>,
    bodies: DiscBodies,
    mut picked: Local<Vec<bool>>,
) {
    rebuild_discs(&mut indices, &arena, time.step + 1, &bodies, |_| true, &mut picked);
}

/// Before sensing: rebuilds what changed since (a freshly loaded scene, moved walls), in each
/// environment where it changed.
#[allow(clippy::type_complexity)]
pub(super) fn index_before_sensing(
    mut indices: ResMut<PerEnv<SpatialIndex>>,
    arena: Res<Arena>,
    time: Res<SimTime>,
    bodies: DiscBodies,
    blocks: Query<
        (Entity, &Transform, &CollisionGroups, Option<&Wall>, Option<&PenBox>, Option<&Seeable>, &Env),
        Or<(With<Wall>, With<PenBox>)>,
    >,
    changed: Query<&Env, (Or<(With<Wall>, With<PenBox>)>, Or<(Changed<Transform>, Added<CollisionGroups>)>)>,
    mut removed_walls: RemovedComponents<Wall>,
    mut removed_boxes: RemovedComponents<PenBox>,
    mut known_arena: Local<Option<Arena>>,
    mut dirty: Local<Vec<bool>>,
    mut picked: Local<Vec<bool>>,
) {
    let everywhere = *known_arena != Some(*arena);
    *known_arena = Some(*arena);
    dirty.clear();
    dirty.resize(indices.len(), everywhere);
    for env in &changed {
        if let Some(d) = dirty.get_mut(env.index()) {
            *d = true;
        }
    }
    // A removed wall or box has no environment left to tell: the one whose index holds it.
    for gone in removed_walls.read().chain(removed_boxes.read()) {
        for (d, index) in dirty.iter_mut().zip(&indices.0) {
            *d |= index.blocks.iter().any(|b| b.entity == gone);
        }
    }
    if dirty.contains(&true) {
        let mut lists: Vec<Vec<Block>> = vec![Vec::new(); indices.len()];
        for (entity, t, groups, wall, pen_box, kind, env) in &blocks {
            let Some(list) = lists.get_mut(env.index()).filter(|_| dirty[env.index()]) else { continue };
            let Some(size) = wall.map(|w| w.size).or(pen_box.map(|b| b.size)) else { continue };
            let axis = (t.rotation * Vec3::X).truncate().normalize_or(Vec2::X);
            let center = t.translation.truncate();
            list.push(Block { entity, center, half: size / 2.0, axis, kind: kind.copied(), groups: *groups });
        }
        let size = Vec2::new(arena.width, arena.height);
        for ((index, list), _) in indices.0.iter_mut().zip(lists).zip(dirty.iter()).filter(|(_, d)| **d) {
            index.set_blocks(size, list);
        }
    }
    if indices.0.iter().any(|index| !index.fresh_for(time.step)) {
        let stale = |index: &SpatialIndex| !index.fresh_for(time.step);
        rebuild_discs(&mut indices, &arena, time.step, &bodies, stale, &mut picked);
    }
}

/// A scene was loaded into an environment: its bodies are indexed before its first step is
/// sensed.
pub(super) fn forget_on_load(mut indices: ResMut<PerEnv<SpatialIndex>>, mut loaded: MessageReader<SceneLoaded>) {
    for loaded in loaded.read() {
        indices.reach(loaded.env).fresh_for = None;
    }
}

/// Every kind of body the camera can recognise, as collision groups.
pub fn seeable_groups() -> Group {
    super::groups::PEN | super::groups::BOX | super::groups::STATION | super::groups::ROBOT
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    fn disc(i: u32, x: f32, y: f32, r: f32) -> Disc {
        Disc {
            entity: Entity::from_raw_u32(i + 1).unwrap(),
            pos: Vec2::new(x, y),
            radius: r,
            kind: Some(Seeable::Robot),
            groups: CollisionGroups::new(super::super::groups::ROBOT, Group::ALL),
            sensor: false,
        }
    }

    #[test]
    fn a_grid_query_finds_exactly_what_a_scan_finds() {
        let mut rng = crate::sim::rng::stream(7, "grid-test", 0);
        use rand::RngExt;
        let arena = Vec2::new(23.0, 11.0);
        let discs: Vec<Disc> = (0..500)
            .map(|i| disc(i, rng.random_range(-0.5..23.5), rng.random_range(-0.5..11.5), rng.random_range(0.01..0.3)))
            .collect();
        let mut index = SpatialIndex::default();
        index.set_discs(arena, discs.clone());
        for _ in 0..200 {
            let c = Vec2::new(rng.random_range(-1.0..24.0), rng.random_range(-1.0..12.0));
            let r = rng.random_range(0.0..3.0);
            let mut got = Vec::new();
            index.discs_touching(c, r, |d| got.push(d.entity));
            got.sort();
            let mut want: Vec<Entity> =
                discs.iter().filter(|d| d.pos.distance(c) <= r + d.radius).map(|d| d.entity).collect();
            want.sort();
            assert_eq!(got, want, "around {c} within {r}");
        }
    }

    #[test]
    fn points_outside_the_arena_stay_findable_in_border_cells() {
        let mut index = SpatialIndex::default();
        index.set_discs(Vec2::new(4.0, 4.0), [disc(0, -0.3, 2.0, 0.1), disc(1, 4.6, 4.6, 0.1)]);
        let mut n = 0;
        index.discs_touching(Vec2::new(-0.2, 2.0), 0.05, |_| n += 1);
        index.discs_touching(Vec2::new(4.5, 4.5), 0.1, |_| n += 1);
        assert_eq!(n, 2);
    }

    /// A wall rectangle turned by `angle` (the kinematic model's tests use it too).
    pub(in crate::world) fn block(center: Vec2, half: Vec2, angle: f32) -> Block {
        Block {
            entity: Entity::from_raw_u32(99).unwrap(),
            center,
            half,
            axis: Vec2::from_angle(angle),
            kind: None,
            groups: CollisionGroups::new(super::super::groups::WALL, Group::ALL),
        }
    }

    #[test]
    fn rays_and_distances_against_a_turned_rectangle() {
        // A 2 × 0.2 bar at (5, 5) turned 90°: it spans y 4..6, x 4.9..5.1.
        let b = block(Vec2::new(5.0, 5.0), Vec2::new(1.0, 0.1), std::f32::consts::FRAC_PI_2);
        let toi = b.ray(Vec2::new(3.0, 5.5), Vec2::X, 10.0).unwrap();
        assert!((toi - 1.9).abs() < 1e-5, "{toi}");
        assert_eq!(b.ray(Vec2::new(3.0, 6.5), Vec2::X, 10.0), None, "passes above its end");
        assert_eq!(b.ray(Vec2::new(3.0, 5.5), Vec2::X, 1.5), None, "stops short");
        assert_eq!(b.ray(Vec2::new(5.0, 5.0), Vec2::Y, 1.0), Some(0.0), "from inside");
        let (p, d) = b.nearest(Vec2::new(5.5, 5.2));
        assert!((d - 0.4).abs() < 1e-5 && (p - Vec2::new(5.1, 5.2)).length() < 1e-5, "{p} {d}");
        let (lo, hi) = b.bounds();
        assert!((lo - Vec2::new(4.9, 4.0)).length() < 1e-5 && (hi - Vec2::new(5.1, 6.0)).length() < 1e-5);
    }

    #[test]
    fn the_box_under_a_point_is_found_by_its_turned_rectangle_and_its_groups() {
        use super::super::groups;
        // A 1 × 0.4 box at (4, 4) turned 90°: it spans x 3.8..4.2, y 3.5..4.5.
        let mut a_box = block(Vec2::new(4.0, 4.0), Vec2::new(0.5, 0.2), std::f32::consts::FRAC_PI_2);
        a_box.entity = Entity::from_raw_u32(7).unwrap();
        a_box.groups = CollisionGroups::new(groups::BOX, Group::ALL);
        let wall = block(Vec2::new(4.0, 4.0), Vec2::new(3.0, 0.05), 0.0);
        assert!(a_box.contains(Vec2::new(4.1, 4.4)));
        assert!(!a_box.contains(Vec2::new(4.3, 4.0)), "beside it, inside its unturned extent");
        assert!(a_box.contains(Vec2::new(4.0, 4.5 - 1e-6)), "on its far edge");
        assert!(!a_box.contains(Vec2::new(4.0, 4.51)));
        let mut index = SpatialIndex::default();
        index.set_blocks(Vec2::new(10.0, 10.0), vec![wall, a_box]);
        let boxes = CollisionGroups::new(Group::ALL, groups::BOX);
        assert_eq!(index.block_at(Vec2::new(4.1, 3.6), boxes).map(|b| b.entity), Some(a_box.entity));
        assert_eq!(index.block_at(Vec2::new(4.1, 3.4), boxes).map(|b| b.entity), None, "past its end");
        // The wall holds (2, 4) too, but only boxes are asked for.
        assert_eq!(index.block_at(Vec2::new(2.0, 4.0), boxes).map(|b| b.entity), None);
        let walls = CollisionGroups::new(Group::ALL, groups::WALL);
        assert_eq!(index.block_at(Vec2::new(2.0, 4.0), walls).map(|b| b.entity), Some(wall.entity));
        // Where both are, the first in index order.
        assert_eq!(
            index.block_at(Vec2::new(4.0, 4.0), CollisionGroups::default()).map(|b| b.entity),
            Some(wall.entity)
        );
    }

    #[test]
    fn blocks_come_once_however_many_cells_they_cover() {
        let mut index = SpatialIndex::default();
        let long = block(Vec2::new(10.0, 0.0), Vec2::new(10.0, 0.05), 0.0);
        let small = block(Vec2::new(3.0, 3.0), Vec2::new(0.1, 0.1), 0.3);
        index.set_blocks(Vec2::new(20.0, 20.0), vec![long, small]);
        let mut out = Vec::new();
        index.blocks_in(Vec2::new(0.0, -1.0), Vec2::new(20.0, 4.0), &mut out);
        assert_eq!(out, vec![0, 1]);
        index.blocks_in(Vec2::new(5.0, 5.0), Vec2::new(7.0, 7.0), &mut out);
        assert_eq!(out, Vec::<u32>::new());
    }

    /// Testing every rectangle finds what the grid finds, in the same order: over random rooms
    /// of turned rectangles, some reaching past the arena, and random query boxes, some outside
    /// it, some a point, some touching an edge exactly.
    #[test]
    fn testing_every_block_finds_what_the_grid_finds() {
        use rand::RngExt;
        let mut rng = crate::sim::rng::stream(5, "blocks-test", 0);
        let mut index = SpatialIndex::default();
        let (mut few, mut grid) = (Vec::new(), Vec::new());
        for case in 0..2_000 {
            let size = Vec2::new(rng.random_range(1.0..30.0), rng.random_range(1.0..30.0));
            let n = rng.random_range(0..=FEW_BLOCKS);
            let blocks = (0..n)
                .map(|_| {
                    let center = Vec2::new(rng.random_range(-2.0..size.x + 2.0), rng.random_range(-2.0..size.y + 2.0));
                    let half = Vec2::new(rng.random_range(0.01..size.x / 2.0), rng.random_range(0.01..2.0));
                    block(center, half, rng.random_range(-4.0..4.0))
                })
                .collect();
            index.set_blocks(size, blocks);
            for _ in 0..20 {
                let min = Vec2::new(rng.random_range(-5.0..size.x + 5.0), rng.random_range(-5.0..size.y + 5.0));
                let max = match rng.random_range(0..4) {
                    0 => min,
                    // An edge of the first rectangle's bounds, exactly.
                    1 if n > 0 => min.max(index.blocks[0].bounds().0),
                    _ => min + Vec2::new(rng.random_range(0.0..8.0), rng.random_range(0.0..8.0)),
                };
                index.blocks_in(min, max, &mut few);
                index.blocks_in_grid(min, max, &mut grid);
                assert_eq!(few, grid, "case {case}: {n} blocks, query {min}..{max}");
            }
        }
    }
}
