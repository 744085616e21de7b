//! The cautious explorer (seed 002): a robot of controller kind `Explorer` leaves its den, maps
//! the room in robot units (the cell is the robot's diameter) and runs home by the reversed path
//! as soon as it hits something — or, with the sonar option, as soon as a sonar detects it.
//!
//! Every move is a whole unit executed physically through the skill system: forward or backward
//! one cell (`MoveAhead` to the next cell's centre) or a 90° turn (`TurnTo` the grid heading).
//! A contact ahead ends a forward move at once; the robot backs up to the centre of the cell it
//! came from, turns 180° and replays its outbound moves in reverse with left and right swapped.

use std::collections::{HashSet, VecDeque};

use bevy::prelude::*;
use bevy_rapier2d::prelude::{CollisionGroups, Group};
use serde_json::json;

pub mod map;
pub mod strategy;

pub use map::{Cell, CellState, Dir, MentalMap, Move, return_path};
pub use strategy::{RandomWalk, Rings, Strategy};

use crate::comms::{Payload, RadioIn, RadioOut, Target};
use crate::robot::{BumpSensor, ControllerKind, Robot, RobotOrder, pose};
use crate::scene::ActiveScene;
use crate::scene::schema::{ControllerSpec, SceneFile, StrategySpec};
use crate::scene::validate::{Footprint, all_walls, box_footprint, wall_footprint};
use crate::sim::report::ReportSections;
use crate::sim::rng::{SimSeed, stream};
use crate::sim::{SimSet, SimTime};
use crate::skills::{Executor, MoveAhead, MoveTo, SkillGroup, SkillRequest, Stop, TurnTo};
use crate::world::{Arena, Sonar, SonarEcho, groups};

/// Contacts within this angle of the direction of motion end a move.
const AHEAD: f32 = std::f32::consts::FRAC_PI_3;
/// Steps a returning robot waits when something blocks its way home.
const WAIT_STEPS: u64 = 25;
/// Within this distance of a cell's centre the robot is in the cell, metres.
const ARRIVED: f32 = 0.005;

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
}

/// An explorer's move ended in a collision: the cell it was entering, and whether the cell was
/// an obstacle of the room (not another robot).
#[derive(Message, Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExploreCollision {
    pub robot: Entity,
    pub cell: Cell,
    pub obstacle: bool,
    pub step: u64,
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
    pub stats: ExploreStats,
}

impl Explorer {
    pub fn new(
        cols: i32,
        rows: i32,
        den: Cell,
        dir: Dir,
        cell_size: f32,
        strategy: Box<dyn Strategy>,
        sonar: bool,
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

pub(super) fn plugin(app: &mut App) {
    app.add_message::<ExploreCollision>()
        .add_observer(attach_explorer)
        .add_systems(FixedUpdate, explore.in_set(SimSet::Think))
        .world_mut()
        .get_resource_or_init::<ReportSections>()
        .0
        .push(report_section);
}

/// Gives every robot of controller kind `Explorer` its mental map when it spawns.
fn attach_explorer(
    add: On<Add, ControllerKind>,
    mut commands: Commands,
    robots: Query<(&ControllerKind, &Robot, &Transform)>,
    arena: Res<Arena>,
    seed: Res<SimSeed>,
) {
    let Ok((kind, robot, transform)) = robots.get(add.entity) else { return };
    let ControllerSpec::Explorer { strategy, sonar } = &kind.0 else { return };
    let cell = 2.0 * robot.radius;
    let (cols, rows) = ((arena.width / cell).floor() as i32, (arena.height / cell).floor() as i32);
    let (p, heading) = pose(transform);
    let den = Cell::new((p.x / cell).floor() as i32, (p.y / cell).floor() as i32);
    let strategy: Box<dyn Strategy> = match strategy {
        StrategySpec::Rings => Box::new(Rings),
        StrategySpec::Random => Box::new(RandomWalk { rng: stream(seed.0, "explore", u64::from(robot.index)) }),
    };
    commands.entity(add.entity).insert((
        Explorer::new(cols, rows, den, Dir::nearest(heading), cell, strategy, *sonar),
        // Seed 002 excludes mobile obstacles: explorers pass through other robots, as if each
        // had the room to itself, and still meet every wall, box and pen.
        CollisionGroups::new(groups::ROBOT, Group::ALL ^ groups::ROBOT),
    ));
}

/// Marks the cells whose centre lies in a sonar's beam as danger.
fn mark_beam(explorer: &mut Explorer, origin: Vec2, sonar: &Sonar) {
    let beam = Footprint::Rect {
        center: origin + sonar.axis * sonar.beam_length / 2.0,
        half: Vec2::new(sonar.beam_length / 2.0, sonar.width / 2.0),
        angle: sonar.axis.y.atan2(sonar.axis.x),
    };
    let cells: Vec<Cell> = explorer.map.cells().map(|(c, _)| c).collect();
    for c in cells {
        // The robot's half-width around the centre: any cell the beam would catch it in.
        if beam.signed_distance(explorer.centre(c)) < explorer.cell_size / 2.0 && c != explorer.map.den {
            let state = explorer.map.get(c);
            if state != CellState::Obstacle {
                explorer.map.set(c, CellState::Danger);
            }
        }
    }
}

fn explore(
    time: Res<SimTime>,
    mut echoes: MessageReader<SonarEcho>,
    mut collisions: MessageWriter<ExploreCollision>,
    sonars: Query<(&Transform, &Sonar)>,
    mut robots: Query<(Entity, &Robot, &Transform, &BumpSensor, &Executor, &mut SkillRequest, &mut Explorer)>,
    mut radios: Query<(&RadioIn, &mut RadioOut)>,
    others: Query<(), With<Robot>>,
) {
    for echo in echoes.read() {
        let (Ok((_, _, _, _, _, _, mut ex)), Ok((st, sonar))) = (robots.get_mut(echo.robot), sonars.get(echo.sonar))
        else {
            continue;
        };
        if ex.sonar_alarm && ex.phase != Phase::Done {
            mark_beam(&mut ex, st.translation.truncate(), sonar);
            if ex.phase == Phase::Outbound {
                ex.alarm = true;
                ex.stats.sonar_alarms += 1;
            }
        }
    }
    for (entity, robot, transform, bump, executor, mut request, mut ex) in &mut robots {
        let mut radio = radios.get_mut(entity).ok();
        // What the others found: obstacle cells this explorer need never touch itself.
        if let Some((inbox, _)) = radio.as_ref() {
            for message in &inbox.0 {
                if let Payload::Obstacles(points) = &message.content {
                    for p in points {
                        let c = ex.cell_at(*p);
                        if !matches!(ex.map.get(c), CellState::Free | CellState::Obstacle) && c != ex.map.den {
                            ex.map.merge_obstacle(c);
                            ex.stats.obstacles_received += 1;
                        }
                    }
                }
            }
        }
        let before = ex.stats.collisions;
        step_explorer(&time, robot.index, transform, bump, executor, &mut request, &mut ex, &others);
        if ex.stats.collisions > before
            && let Some((cell, step)) = ex.stats.last_collision
        {
            let obstacle = ex.map.get(cell) == CellState::Obstacle;
            collisions.write(ExploreCollision { robot: entity, cell, obstacle, step });
            if obstacle && let Some((_, out)) = radio.as_mut() {
                out.0.push((Target::Broadcast, Payload::Obstacles(vec![ex.centre(cell)])));
            }
        }
    }
}

fn step_explorer(
    time: &SimTime,
    index: u32,
    transform: &Transform,
    bump: &BumpSensor,
    executor: &Executor,
    request: &mut SkillRequest,
    ex: &mut Explorer,
    robots: &Query<(), With<Robot>>,
) {
    let (pos, _) = pose(transform);
    // 1. The move in progress: collided, interrupted, done, or still going.
    if let Some(active) = ex.active {
        let straight = matches!(active.mv, Some(Move::Forward | Move::Backward));
        let backwards = active.mv == Some(Move::Backward);
        let target = active.mv.map(|m| m.apply(active.from, ex.dir).0).unwrap_or(active.from);
        // A robot that has arrived at the centre of an edge cell touches the wall ahead: that is
        // not a collision, the next move into the wall is.
        let along = Vec2::from_angle(ex.dir.angle());
        let arrived = (ex.centre(target) - pos).dot(along).abs() <= ARRIVED;
        let hit: Vec<Entity> = if straight && !arrived && time.step > active.requested {
            bump.touching_towards(AHEAD, backwards).collect()
        } else {
            Vec::new()
        };
        let interrupted = straight && ex.alarm && ex.phase == Phase::Outbound;
        if !hit.is_empty() && ex.phase != Phase::Outbound {
            // On the way home the path is known free: something moving (another robot) is in
            // the way. Stop, wait, and try the same move again.
            if let Some(mv) = active.mv {
                ex.plan.push_front(mv);
            }
            // Robots blocking each other must not retry in lockstep.
            let wait = WAIT_STEPS * (1 + u64::from(index % 4));
            ex.active = Some(Active { mv: None, from: ex.cell, requested: time.step + wait });
            request.set(Stop);
            return;
        }
        if !hit.is_empty() || interrupted {
            // Other robots move: they send the explorer home but are not obstacles of the room.
            if hit.iter().any(|e| !robots.contains(*e)) {
                ex.record_hit(target);
            } else if !hit.is_empty() {
                ex.stats.collisions += 1;
            }
            if !hit.is_empty() {
                ex.stats.last_collision = Some((target, time.step));
            }
            recover(ex, pos, active.from, time.step, request);
            return;
        }
        let running = executor.0.running(SkillGroup::Move).is_some();
        if running || time.step <= active.requested {
            return;
        }
        ex.active = None;
        if let Some(mv) = active.mv {
            let (cell, dir) = mv.apply(ex.cell, ex.dir);
            ex.cell = cell;
            ex.dir = dir;
            ex.stats.moves += 1;
            if ex.map.get(cell) == CellState::Unexplored {
                ex.map.set(cell, CellState::Free);
            }
            if ex.phase == Phase::Outbound {
                ex.outbound.push(mv);
            }
        } else {
            // A recovery move: the robot is back at the centre of its cell.
            ex.cell = active.from;
        }
    }
    // 2. The next move.
    loop {
        match ex.phase {
            Phase::Done => return,
            Phase::Recovering => {
                ex.start_return();
            }
            Phase::Outbound if ex.alarm => {
                ex.alarm = false;
                if ex.outbound.is_empty() {
                    continue;
                }
                ex.start_return();
            }
            Phase::Outbound => {
                if ex.plan.is_empty() {
                    match ex.strategy.plan(&ex.map, ex.cell, ex.dir) {
                        Some(moves) => ex.plan = moves.into(),
                        None => {
                            ex.finishing = true;
                            if ex.outbound.is_empty() {
                                finish(ex, time, request);
                                return;
                            }
                            ex.start_return();
                            continue;
                        }
                    }
                }
                let next = ex.plan[0];
                // The map may have changed (a sonar, a shared obstacle): never step into a known
                // obstacle or danger cell.
                if next == Move::Forward
                    && !matches!(ex.map.get(ex.cell.step(ex.dir)), CellState::Free | CellState::Unexplored)
                {
                    ex.plan.clear();
                    continue;
                }
            }
            Phase::Returning => {
                if ex.plan.is_empty() {
                    // Home.
                    ex.excursion_dir = ex.dir;
                    if ex.finishing {
                        finish(ex, time, request);
                        return;
                    }
                    ex.phase = Phase::Outbound;
                    continue;
                }
            }
        }
        let Some(mv) = ex.plan.pop_front() else { continue };
        start_move(ex, mv, pos, time.step, request);
        return;
    }
}

fn finish(ex: &mut Explorer, time: &SimTime, request: &mut SkillRequest) {
    ex.phase = Phase::Done;
    ex.plan.clear();
    ex.stats.finished_at = Some(time.seconds());
    request.set(Stop);
}

fn start_move(ex: &mut Explorer, mv: Move, pos: Vec2, step: u64, request: &mut SkillRequest) {
    let (to, dir) = mv.apply(ex.cell, ex.dir);
    match mv {
        // Forward: drive to the next cell's centre, steering onto it so that small errors never
        // add up over an excursion.
        Move::Forward => request.set(MoveTo { point: ex.centre(to), speed: f32::INFINITY, tolerance: 0.002 }),
        Move::Backward => {
            let distance = (ex.centre(to) - pos).dot(Vec2::from_angle(ex.dir.angle()));
            request.set(MoveAhead::new(distance, f32::INFINITY));
        }
        Move::Left | Move::Right => request.set(TurnTo { heading: dir.angle() }),
    }
    ex.active = Some(Active { mv: Some(mv), from: ex.cell, requested: step });
}

/// Backs up to the centre of `from` after an interrupted straight move, then returns home.
fn recover(ex: &mut Explorer, pos: Vec2, from: Cell, step: u64, request: &mut SkillRequest) {
    let back = (ex.centre(from) - pos).dot(Vec2::from_angle(ex.dir.angle()));
    ex.alarm = false;
    ex.plan.clear();
    ex.phase = Phase::Recovering;
    ex.cell = from;
    if back.abs() > 1e-3 {
        request.set(MoveAhead::new(back, f32::INFINITY));
        ex.active = Some(Active { mv: None, from, requested: step });
    } else {
        request.set(Stop);
        ex.active = None;
    }
}

/// What the scene really holds, on an explorer's grid: the floor cells reachable from the den,
/// and the obstacle cells next to them (the ring around the floor, and floor cells whose centre
/// lies in a wall or box).
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
    let mut reachable = HashSet::new();
    let mut obstacles = HashSet::new();
    let mut queue = VecDeque::from([den]);
    reachable.insert(den);
    while let Some(c) = queue.pop_front() {
        for d in Dir::ALL {
            let n = c.step(d);
            if blocked(n) {
                obstacles.insert(n);
            } else if reachable.insert(n) {
                queue.push_back(n);
            }
        }
    }
    GroundTruth { reachable, obstacles }
}

impl Explorer {
    /// Known free cells over the reachable cells of the scene.
    pub fn coverage(&self, truth: &GroundTruth) -> f64 {
        let known = truth.reachable.iter().filter(|c| self.map.get(**c) == CellState::Free).count();
        known as f64 / truth.reachable.len().max(1) as f64
    }

    /// The obstacle cells of the mental map.
    pub fn obstacle_cells(&self) -> HashSet<Cell> {
        self.map.cells().filter(|(_, s)| *s == CellState::Obstacle).map(|(c, _)| c).collect()
    }
}

/// The `explore` section of the run metrics: totals, the mental map, and each explorer.
fn report_section(world: &mut World) -> Option<(String, serde_json::Value)> {
    let scene = world.get_resource::<ActiveScene>()?.scene.clone();
    let order = world.resource::<RobotOrder>().0.clone();
    let mut q = world.query::<(&Name, &Explorer)>();
    let mut robots = Vec::new();
    let mut totals = ExploreStats::default();
    let mut first_map = None;
    let mut coverage_sum = 0.0;
    for e in order {
        let Ok((name, ex)) = q.get(world, e) else { continue };
        let truth = ground_truth(&scene, ex.cell_size, ex.map.cols, ex.map.rows, ex.map.den);
        let coverage = ex.coverage(&truth);
        coverage_sum += coverage;
        let map: Vec<String> = ex.map.to_text(Some(ex.cell)).lines().map(String::from).collect();
        first_map.get_or_insert_with(|| map.clone());
        totals.collisions += ex.stats.collisions;
        totals.repeat_collisions += ex.stats.repeat_collisions;
        totals.returns += ex.stats.returns;
        totals.moves += ex.stats.moves;
        totals.sonar_alarms += ex.stats.sonar_alarms;
        totals.obstacles_received += ex.stats.obstacles_received;
        robots.push(json!({
            "name": name.as_str(),
            "strategy": ex.strategy.name(),
            "coverage": coverage,
            "collisions": ex.stats.collisions,
            "repeat_collisions": ex.stats.repeat_collisions,
            "returns": ex.stats.returns,
            "steps": ex.stats.moves,
            "sonar_alarms": ex.stats.sonar_alarms,
            "obstacles_received": ex.stats.obstacles_received,
            "done": ex.phase == Phase::Done,
            "finished_at_s": ex.stats.finished_at,
            "map": map,
        }));
    }
    let n = robots.len();
    if n == 0 {
        return None;
    }
    let finished: Vec<Option<f64>> = robots.iter().map(|r| r["finished_at_s"].as_f64()).collect();
    let all_done_at = finished.iter().copied().collect::<Option<Vec<f64>>>().map(|v| v.into_iter().fold(0.0, f64::max));
    Some((
        "explore".to_string(),
        json!({
            "coverage": coverage_sum / n as f64,
            "collisions": totals.collisions,
            "repeat_collisions": totals.repeat_collisions,
            "returns": totals.returns,
            "steps": totals.moves,
            "sonar_alarms": totals.sonar_alarms,
            "obstacles_received": totals.obstacles_received,
            "finished_at_s": all_done_at,
            "map": first_map,
            "robots": robots,
        }),
    ))
}
