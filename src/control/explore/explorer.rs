//! The cautious explorer's decisions as plain types: given what the robot senses this step (where
//! it is, its contacts, whether its last order is still running), [`Explorer::step`] says what to
//! do next — an [`Order`] for the skill system, or nothing — and keeps the mental map, the path
//! and the counters. No Bevy: the think-stage system only translates senses in and orders out.

use std::collections::{HashSet, VecDeque};

use bevy::math::Vec2;
use bevy::prelude::Component;

use super::map::{Cell, CellState, Dir, MentalMap, Move, return_path};
use super::strategy::Strategy;
use crate::robot::wrap_angle;
use crate::scene::geometry::{Footprint, all_walls, box_footprint, wall_footprint};
use crate::scene::schema::SceneFile;

/// Contacts within this angle of the direction of motion end a move.
pub const AHEAD: f32 = std::f32::consts::FRAC_PI_3;
/// Steps a returning robot waits when something blocks its way home.
pub const WAIT_STEPS: u64 = 25;
/// Within this distance of a cell's centre the robot is in the cell, metres.
pub const ARRIVED: f32 = 0.005;
/// A recovery shorter than this needs no move back, metres.
const RECOVERED: f32 = 1e-3;
/// How close a forward move steers onto the next cell's centre, metres.
pub const CENTRE_TOLERANCE: f32 = 0.002;
/// A straight unit move that has not ended after this many times the time it takes at full
/// speed (plus [`MOVE_SLACK_S`]) is blocked: the robot is wedged in a passage as wide as itself.
pub const MOVE_TIMEOUT_FACTOR: f64 = 4.0;
/// Seconds added to every move's time limit (turning onto the line, starting and stopping).
pub const MOVE_SLACK_S: f64 = 1.0;

/// What the explorer is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Leaving the den, exploring.
    Outbound,
    /// Backing up to the centre of the last cell after a collision or alarm.
    Recovering,
    /// Running home by the reversed path.
    Returning,
    /// Nothing left to explore: home and stopped.
    Done,
}

/// A move in progress.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Active {
    mv: Option<Move>,
    from: Cell,
    requested: u64,
    /// Simulated seconds by which the move must have ended.
    deadline: f64,
}

/// Something the robot's body touches, as the bump sensor reports it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Contact {
    /// Direction of the contact, world frame, radians (counter-clockwise from +x).
    pub direction: f32,
    /// The other body is a robot (it moves, so it is no obstacle of the room).
    pub robot: bool,
}

/// What the robot senses this step.
#[derive(Debug, Clone, PartialEq)]
pub struct Senses {
    pub step: u64,
    /// Simulated seconds at this step.
    pub seconds: f64,
    pub position: Vec2,
    pub contacts: Vec<Contact>,
    /// A move skill is still running.
    pub moving: bool,
}

/// What the explorer asks of its skill system.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Order {
    /// Drive onto a point, steering onto it (a forward unit move).
    MoveTo(Vec2),
    /// Drive straight along the heading by a distance, negative backwards.
    MoveAhead(f32),
    /// Turn on the spot to an absolute heading, radians.
    TurnTo(f32),
    Stop,
}

/// Counters for the run metrics.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ExploreStats {
    pub collisions: u32,
    /// Collisions with an obstacle cell already known: must stay 0.
    pub repeat_collisions: u32,
    pub returns: u32,
    /// Unit moves completed (outbound and returning).
    pub moves: u32,
    pub sonar_alarms: u32,
    /// Simulated seconds when exploring finished, home.
    pub finished_at: Option<f64>,
    /// The last collision: the cell and the step.
    pub last_collision: Option<(Cell, u64)>,
    /// Obstacle cells learned from other robots over the radio.
    pub obstacles_received: u32,
}

/// The explorer's state: its mental map, its believed pose, its path and plan.
#[derive(Component, Debug)]
pub struct Explorer {
    pub map: MentalMap,
    /// Cell size: the robot's diameter, metres.
    pub cell_size: f32,
    pub strategy: Box<dyn Strategy>,
    /// The sonar option: a sonar detecting the robot sends it home and marks danger cells.
    pub sonar_alarm: bool,
    pub cell: Cell,
    pub dir: Dir,
    pub phase: Phase,
    /// Moves since leaving the den on this excursion.
    pub outbound: Vec<Move>,
    /// The heading this excursion started with.
    pub excursion_dir: Dir,
    /// Moves still to do in this phase.
    pub plan: VecDeque<Move>,
    active: Option<Active>,
    /// Go home once the current move is over (set by a sonar alarm).
    alarm: bool,
    /// Finish after this return.
    finishing: bool,
    hit: HashSet<Cell>,
    /// Staggers retries of robots blocking each other on the way home.
    stagger: u64,
    /// Seconds a unit move may take before it counts as blocked.
    move_limit: f64,
    pub stats: ExploreStats,
}

impl Explorer {
    /// An explorer of a `cols × rows` room at its den, facing `dir`, moving at up to
    /// `max_speed` m/s; `index` (the robot's) staggers its retries when robots block each other.
    pub fn new(
        cols: i32,
        rows: i32,
        den: Cell,
        dir: Dir,
        cell_size: f32,
        strategy: Box<dyn Strategy>,
        sonar: bool,
        (index, max_speed): (u32, f32),
    ) -> Self {
        Self {
            map: MentalMap::new(cols, rows, den),
            cell_size,
            strategy,
            sonar_alarm: sonar,
            cell: den,
            dir,
            phase: Phase::Outbound,
            outbound: Vec::new(),
            excursion_dir: dir,
            plan: VecDeque::new(),
            active: None,
            alarm: false,
            finishing: false,
            hit: HashSet::new(),
            stagger: 1 + u64::from(index % 4),
            move_limit: MOVE_TIMEOUT_FACTOR * f64::from(cell_size / max_speed.max(1e-6)) + MOVE_SLACK_S,
            stats: ExploreStats::default(),
        }
    }

    /// The centre of a cell, metres.
    pub fn centre(&self, c: Cell) -> Vec2 {
        Vec2::new((c.x as f32 + 0.5) * self.cell_size, (c.y as f32 + 0.5) * self.cell_size)
    }

    /// The cell containing a point.
    pub fn cell_at(&self, p: Vec2) -> Cell {
        Cell::new((p.x / self.cell_size).floor() as i32, (p.y / self.cell_size).floor() as i32)
    }

    /// Cells visited on this excursion, from the den.
    pub fn outbound_cells(&self) -> Vec<Cell> {
        walk(self.map.den, self.excursion_dir, &self.outbound)
    }

    /// Cells still ahead in the current plan, from where the robot is.
    pub fn plan_cells(&self) -> Vec<Cell> {
        let moves: Vec<Move> = self.plan.iter().copied().collect();
        walk(self.cell, self.dir, &moves)
    }

    /// Known free cells over the reachable cells of the scene.
    pub fn coverage(&self, truth: &GroundTruth) -> f64 {
        let known = truth.reachable.iter().filter(|c| self.map.get(**c) == CellState::Free).count();
        known as f64 / truth.reachable.len().max(1) as f64
    }

    /// The obstacle cells of the mental map.
    pub fn obstacle_cells(&self) -> HashSet<Cell> {
        self.map.cells().filter(|(_, s)| *s == CellState::Obstacle).map(|(c, _)| c).collect()
    }

    /// Obstacle cells another robot found (points in world coordinates): each unknown one
    /// becomes an obstacle of this map, so the robot never has to touch it itself.
    pub fn hear_obstacles(&mut self, points: &[Vec2]) {
        for p in points {
            let c = self.cell_at(*p);
            if !matches!(self.map.get(c), CellState::Free | CellState::Obstacle) && c != self.map.den {
                self.map.merge_obstacle(c);
                self.stats.obstacles_received += 1;
            }
        }
    }

    /// A sonar reported the robot. With the sonar option, the cell where the robot was becomes
    /// danger — what the robot can know: the cell it was moving into during a straight move,
    /// else the cell it stands in (never the den) — and an outbound robot goes home. Where else
    /// the beam runs, the robot learns only by meeting it there.
    pub fn sonar_detected(&mut self) {
        if !self.sonar_alarm || self.phase == Phase::Done {
            return;
        }
        let at = match self.active {
            Some(Active { mv: Some(mv @ (Move::Forward | Move::Backward)), from, .. }) => mv.apply(from, self.dir).0,
            _ => self.cell,
        };
        if at != self.map.den && self.map.get(at) != CellState::Obstacle {
            self.map.set(at, CellState::Danger);
        }
        if self.phase == Phase::Outbound {
            self.alarm = true;
            self.stats.sonar_alarms += 1;
        }
    }

    /// Marks a cell hit by the robot as an obstacle, counting repeats.
    fn record_hit(&mut self, c: Cell) {
        self.stats.collisions += 1;
        // A repeat is hitting a cell this robot hit before. (A cell a message marked while the
        // robot was already moving into it is hit once, not repeated.)
        if !self.hit.insert(c) {
            self.stats.repeat_collisions += 1;
        }
        self.map.merge_obstacle(c);
    }

    /// Starts the way home (turn around, reversed outbound path).
    fn start_return(&mut self) {
        self.stats.returns += 1;
        self.plan = return_path(&self.outbound).into();
        self.outbound.clear();
        self.phase = Phase::Returning;
    }

    /// One think step: what to do given what the robot senses.
    pub fn step(&mut self, s: &Senses) -> Option<Order> {
        // 1. The move in progress: collided, interrupted, done, or still going.
        if let Some(active) = self.active {
            let straight = matches!(active.mv, Some(Move::Forward | Move::Backward));
            let backwards = active.mv == Some(Move::Backward);
            let target = active.mv.map(|m| m.apply(active.from, self.dir).0).unwrap_or(active.from);
            // A robot that has arrived at the centre of an edge cell touches the wall ahead: that
            // is not a collision, the next move into the wall is.
            let along = Vec2::from_angle(self.dir.angle());
            let arrived = (self.centre(target) - s.position).dot(along).abs() <= ARRIVED;
            // Ahead is the grid direction of the move, not the heading: a robot turning onto its
            // line sweeps its nose past what touches its sides.
            let motion = if backwards { self.dir.opposite() } else { self.dir };
            let mut hit: Vec<Contact> = if straight && !arrived && s.step > active.requested {
                s.contacts.iter().copied().filter(|c| wrap_angle(c.direction - motion.angle()).abs() <= AHEAD).collect()
            } else {
                Vec::new()
            };
            let interrupted = straight && self.alarm && self.phase == Phase::Outbound;
            // A straight move that cannot end (wedged between two bodies that touch its sides,
            // with nothing ahead) is blocked: a collision in the cell it was entering.
            let blocked = straight && s.seconds > active.deadline;
            if blocked && hit.is_empty() {
                hit.push(Contact { direction: self.dir.angle(), robot: false });
            }
            if !hit.is_empty() && self.phase != Phase::Outbound {
                // On the way home the path is known free: something moving (another robot) is in
                // the way. Stop, wait, and try the same move again.
                if let Some(mv) = active.mv {
                    self.plan.push_front(mv);
                }
                // Robots blocking each other must not retry in lockstep.
                let wait = WAIT_STEPS * self.stagger;
                let deadline = s.seconds + self.move_limit;
                self.active = Some(Active { mv: None, from: self.cell, requested: s.step + wait, deadline });
                return Some(Order::Stop);
            }
            if !hit.is_empty() || interrupted {
                // Other robots move: they send the explorer home but are not obstacles of the room.
                if hit.iter().any(|c| !c.robot) {
                    self.record_hit(target);
                } else if !hit.is_empty() {
                    self.stats.collisions += 1;
                }
                if !hit.is_empty() {
                    self.stats.last_collision = Some((target, s.step));
                }
                return Some(self.recover(s, active.from));
            }
            // A move back to the centre of the cell that cannot end is over all the same.
            if (s.moving && s.seconds <= active.deadline) || s.step <= active.requested {
                return None;
            }
            self.active = None;
            if let Some(mv) = active.mv {
                let (cell, dir) = mv.apply(self.cell, self.dir);
                self.cell = cell;
                self.dir = dir;
                self.stats.moves += 1;
                if self.map.get(cell) == CellState::Unexplored {
                    self.map.set(cell, CellState::Free);
                }
                if self.phase == Phase::Outbound {
                    self.outbound.push(mv);
                }
            } else {
                // A recovery move: the robot is back at the centre of its cell.
                self.cell = active.from;
            }
        }
        // 2. The next move.
        loop {
            match self.phase {
                Phase::Done => return None,
                Phase::Recovering => self.start_return(),
                Phase::Outbound if self.alarm => {
                    self.alarm = false;
                    if self.outbound.is_empty() {
                        continue;
                    }
                    self.start_return();
                }
                Phase::Outbound => {
                    if self.plan.is_empty() {
                        match self.strategy.plan(&self.map, self.cell, self.dir) {
                            Some(moves) => self.plan = moves.into(),
                            None => {
                                self.finishing = true;
                                if self.outbound.is_empty() {
                                    return Some(self.finish(s.seconds));
                                }
                                self.start_return();
                                continue;
                            }
                        }
                    }
                    let next = self.plan[0];
                    // The map may have changed (a sonar, a shared obstacle): never step into a
                    // known obstacle or danger cell.
                    if next == Move::Forward
                        && !matches!(self.map.get(self.cell.step(self.dir)), CellState::Free | CellState::Unexplored)
                    {
                        self.plan.clear();
                        continue;
                    }
                }
                Phase::Returning => {
                    if self.plan.is_empty() {
                        // Home.
                        self.excursion_dir = self.dir;
                        if self.finishing {
                            return Some(self.finish(s.seconds));
                        }
                        self.phase = Phase::Outbound;
                        continue;
                    }
                }
            }
            let Some(mv) = self.plan.pop_front() else { continue };
            return Some(self.start_move(mv, s));
        }
    }

    fn finish(&mut self, seconds: f64) -> Order {
        self.phase = Phase::Done;
        self.plan.clear();
        self.stats.finished_at = Some(seconds);
        Order::Stop
    }

    fn start_move(&mut self, mv: Move, s: &Senses) -> Order {
        let (to, dir) = mv.apply(self.cell, self.dir);
        let pos = s.position;
        let deadline = s.seconds + self.move_limit;
        self.active = Some(Active { mv: Some(mv), from: self.cell, requested: s.step, deadline });
        match mv {
            // Forward: drive to the next cell's centre, steering onto it so that small errors
            // never add up over an excursion.
            Move::Forward => Order::MoveTo(self.centre(to)),
            Move::Backward => Order::MoveAhead((self.centre(to) - pos).dot(Vec2::from_angle(self.dir.angle()))),
            Move::Left | Move::Right => Order::TurnTo(dir.angle()),
        }
    }

    /// Backs up to the centre of `from` after an interrupted straight move, then returns home.
    fn recover(&mut self, s: &Senses, from: Cell) -> Order {
        let back = (self.centre(from) - s.position).dot(Vec2::from_angle(self.dir.angle()));
        self.alarm = false;
        self.plan.clear();
        self.phase = Phase::Recovering;
        self.cell = from;
        if back.abs() > RECOVERED {
            self.active = Some(Active { mv: None, from, requested: s.step, deadline: s.seconds + self.move_limit });
            Order::MoveAhead(back)
        } else {
            self.active = None;
            Order::Stop
        }
    }
}

/// The cells a sequence of moves passes through.
fn walk(mut cell: Cell, mut dir: Dir, moves: &[Move]) -> Vec<Cell> {
    let mut cells = vec![cell];
    for m in moves {
        (cell, dir) = m.apply(cell, dir);
        if cells.last() != Some(&cell) {
            cells.push(cell);
        }
    }
    cells
}

/// What the scene really holds, on an explorer's grid: the floor cells reachable from the den,
/// and the cells next to them that stop the robot — the ring around the floor, floor cells whose
/// centre lies in a wall or box, and passages exactly one robot wide (a disc as wide as the gap
/// wedges between its two sides).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroundTruth {
    pub reachable: HashSet<Cell>,
    pub obstacles: HashSet<Cell>,
}

/// Rasterises `scene` onto an explorer's grid.
pub fn ground_truth(scene: &SceneFile, cell_size: f32, cols: i32, rows: i32, den: Cell) -> GroundTruth {
    let mut solids: Vec<Footprint> = all_walls(scene)
        .iter()
        .map(|w| wall_footprint(Vec2::new(w.from.0, w.from.1), Vec2::new(w.to.0, w.to.1), w.thickness))
        .collect();
    solids.extend(scene.boxes.iter().map(box_footprint));
    let blocked = |c: Cell| {
        if c.x < 0 || c.y < 0 || c.x >= cols || c.y >= rows {
            return true;
        }
        let p = Vec2::new((c.x as f32 + 0.5) * cell_size, (c.y as f32 + 0.5) * cell_size);
        solids.iter().any(|f| f.signed_distance(p) < 0.0)
    };
    // Entering a cell across which both sides are blocked: a gap exactly one robot wide.
    let narrow = |c: Cell, d: Dir| blocked(c.step(d.left())) && blocked(c.step(d.right()));
    let mut reachable = HashSet::from([den]);
    let mut queue = VecDeque::from([den]);
    while let Some(c) = queue.pop_front() {
        for d in Dir::ALL {
            let n = c.step(d);
            if !blocked(n) && !narrow(n, d) && reachable.insert(n) {
                queue.push_back(n);
            }
        }
    }
    let obstacles =
        reachable.iter().flat_map(|c| Dir::ALL.map(|d| c.step(d))).filter(|n| !reachable.contains(n)).collect();
    GroundTruth { reachable, obstacles }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::control::explore::strategy::Rings;

    /// A robot that carries out every order at once, in a room of `cols × rows` cells whose
    /// `blocked` cells (and everything outside) stop it halfway into the cell.
    struct Kinematic {
        ex: Explorer,
        position: Vec2,
        heading: f32,
        step: u64,
        contacts: Vec<Contact>,
        blocked: HashSet<Cell>,
        cols: i32,
        rows: i32,
        orders: Vec<Order>,
    }

    impl Kinematic {
        fn new(cols: i32, rows: i32, den: Cell, dir: Dir, blocked: &[Cell]) -> Self {
            let ex = Explorer::new(cols, rows, den, dir, 0.2, Box::new(Rings), false, (0, 0.5));
            let position = ex.centre(den);
            Self {
                ex,
                position,
                heading: dir.angle(),
                step: 0,
                contacts: vec![],
                blocked: blocked.iter().copied().collect(),
                cols,
                rows,
                orders: vec![],
            }
        }

        fn is_blocked(&self, c: Cell) -> bool {
            c.x < 0 || c.y < 0 || c.x >= self.cols || c.y >= self.rows || self.blocked.contains(&c)
        }

        /// One think step, then the order carried out before the next.
        fn tick(&mut self) {
            self.step += 1;
            let senses = Senses {
                step: self.step,
                seconds: self.step as f64 * 0.02,
                position: self.position,
                contacts: std::mem::take(&mut self.contacts),
                moving: false,
            };
            let Some(order) = self.ex.step(&senses) else { return };
            self.orders.push(order);
            match order {
                Order::MoveTo(p) => {
                    let target = self.ex.cell_at(p);
                    if self.is_blocked(target) {
                        // Stops a little way in, touching what is ahead.
                        self.position += (p - self.position) * 0.25;
                        self.contacts = vec![Contact { direction: self.heading, robot: false }];
                    } else {
                        self.position = p;
                    }
                }
                Order::MoveAhead(d) => self.position += Vec2::from_angle(self.heading) * d,
                Order::TurnTo(h) => self.heading = h,
                Order::Stop => {}
            }
        }

        fn run(&mut self, max: usize) {
            for _ in 0..max {
                if self.ex.phase == Phase::Done {
                    return;
                }
                self.tick();
            }
        }
    }

    #[test]
    fn the_first_order_leaves_the_den_one_cell_ahead() {
        let mut k = Kinematic::new(3, 3, Cell::new(0, 2), Dir::South, &[]);
        k.tick();
        assert_eq!(k.orders, vec![Order::MoveTo(Vec2::new(0.1, 0.3))]);
        // Arrived: the cell is free and the move is on the outbound path.
        k.tick();
        assert_eq!(k.ex.cell, Cell::new(0, 1));
        assert_eq!(k.ex.map.get(Cell::new(0, 1)), CellState::Free);
        assert_eq!(k.ex.outbound, vec![Move::Forward]);
    }

    #[test]
    fn a_contact_ahead_marks_the_cell_backs_up_and_returns_by_the_reversed_path() {
        let mut k = Kinematic::new(3, 3, Cell::new(0, 2), Dir::South, &[Cell::new(0, 0)]);
        while k.ex.stats.collisions == 0 {
            k.tick();
            assert!(k.step < 100);
        }
        let (hit, _) = k.ex.stats.last_collision.unwrap();
        assert!(k.is_blocked(hit), "{hit:?}");
        assert_eq!(k.ex.map.get(hit), CellState::Obstacle);
        assert_eq!(k.ex.phase, Phase::Recovering);
        let outbound = k.ex.outbound.clone();
        // Backs up to the centre of the cell it came from.
        assert!(matches!(k.orders.last(), Some(Order::MoveAhead(d)) if *d < 0.0), "{:?}", k.orders);
        k.tick();
        assert_eq!(k.ex.phase, Phase::Returning);
        // Two lefts (the first one under way), then the outbound moves reversed with left and
        // right swapped.
        assert!(matches!(k.orders.last(), Some(Order::TurnTo(_))), "{:?}", k.orders);
        assert_eq!(k.ex.plan.iter().copied().collect::<Vec<_>>(), return_path(&outbound)[1..]);
        while k.ex.phase == Phase::Returning {
            k.tick();
        }
        assert_eq!(k.ex.cell, Cell::new(0, 2), "home");
        assert_eq!(k.ex.stats.returns, 1);
    }

    #[test]
    fn a_robot_in_the_way_is_no_obstacle_of_the_room() {
        let mut k = Kinematic::new(3, 3, Cell::new(0, 2), Dir::South, &[]);
        k.tick();
        // Something touches the front while moving, and it is a robot.
        k.contacts = vec![Contact { direction: Dir::South.angle() + 0.1, robot: true }];
        k.position = Vec2::new(0.1, 0.45);
        k.tick();
        assert_eq!(k.ex.stats.collisions, 1);
        assert_eq!(k.ex.map.get(Cell::new(0, 1)), CellState::Unexplored);
        assert_eq!(k.ex.phase, Phase::Recovering);
    }

    #[test]
    fn a_contact_behind_or_beside_does_not_end_a_forward_move() {
        let mut k = Kinematic::new(3, 3, Cell::new(0, 2), Dir::South, &[]);
        k.tick();
        // Behind, and beside while the robot still faces away from its line (turning onto it).
        k.heading = Dir::North.angle();
        k.contacts = vec![
            Contact { direction: Dir::North.angle(), robot: false },
            Contact { direction: Dir::East.angle(), robot: false },
        ];
        k.position = Vec2::new(0.1, 0.45);
        let order = k.ex.step(&Senses {
            step: 2,
            seconds: 0.04,
            position: k.position,
            contacts: k.contacts.clone(),
            moving: true,
        });
        assert_eq!(order, None);
        assert_eq!(k.ex.stats.collisions, 0);
    }

    #[test]
    fn a_room_is_mapped_completely_with_every_obstacle_hit_once() {
        let blocked = [Cell::new(2, 2), Cell::new(3, 2), Cell::new(1, 4), Cell::new(4, 0)];
        let mut k = Kinematic::new(6, 5, Cell::new(0, 4), Dir::South, &blocked);
        k.run(20_000);
        assert_eq!(k.ex.phase, Phase::Done);
        assert_eq!(k.ex.stats.repeat_collisions, 0);
        assert_eq!(k.ex.cell, Cell::new(0, 4), "finishes home");
        for y in 0..5 {
            for x in 0..6 {
                let c = Cell::new(x, y);
                let want = if blocked.contains(&c) { CellState::Obstacle } else { CellState::Free };
                assert_eq!(k.ex.map.get(c), want, "{c:?}\n{}", k.ex.map.to_text(None));
            }
        }
        assert_eq!(k.ex.stats.finished_at, Some(k.step as f64 * 0.02));
    }

    #[test]
    fn a_sonar_alarm_marks_where_the_robot_was_and_sends_it_home() {
        let mut k = Kinematic::new(4, 4, Cell::new(0, 3), Dir::South, &[]);
        k.ex.sonar_alarm = true;
        // Moving out of the den into the cell below when the sonar sees it.
        k.tick();
        assert_eq!(k.orders.last(), Some(&Order::MoveTo(Vec2::new(0.1, 0.5))));
        k.ex.sonar_detected();
        let danger: Vec<Cell> = k.ex.map.cells().filter(|(_, s)| *s == CellState::Danger).map(|(c, _)| c).collect();
        assert_eq!(danger, vec![Cell::new(0, 2)]);
        assert_eq!(k.ex.stats.sonar_alarms, 1);
        k.tick();
        assert_eq!(k.ex.phase, Phase::Recovering);
        // Without the option nothing happens.
        let mut k = Kinematic::new(4, 4, Cell::new(0, 3), Dir::South, &[]);
        k.tick();
        k.ex.sonar_detected();
        assert_eq!((k.ex.map.count(CellState::Danger), k.ex.stats.sonar_alarms), (0, 0));
    }

    #[test]
    fn heard_obstacles_join_the_map_once() {
        let mut ex = Explorer::new(4, 4, Cell::new(0, 0), Dir::North, 0.2, Box::new(Rings), false, (0, 0.5));
        ex.hear_obstacles(&[Vec2::new(0.5, 0.5), Vec2::new(0.5, 0.5), Vec2::new(0.1, 0.1)]);
        assert_eq!(ex.map.get(Cell::new(2, 2)), CellState::Obstacle);
        assert_eq!(ex.map.get(Cell::new(0, 0)), CellState::Free, "the den is never an obstacle");
        assert_eq!(ex.stats.obstacles_received, 1);
    }
}
