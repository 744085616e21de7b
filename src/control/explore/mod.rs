//! The cautious explorer (seed 002): a robot of controller kind `Explorer` leaves its den, maps
//! the room in robot units (the cell is the robot's diameter) and runs home by the reversed path
//! as soon as it hits something — or, with the sonar option, as soon as a sonar detects it.
//!
//! Every move is a whole unit executed physically through the skill system: forward or backward
//! one cell (`MoveAhead` to the next cell's centre) or a 90° turn (`TurnTo` the grid heading).
//! A contact ahead ends a forward move at once; the robot backs up to the centre of the cell it
//! came from, turns 180° and replays its outbound moves in reverse with left and right swapped.

use bevy::prelude::*;
use bevy_rapier2d::prelude::{CollisionGroups, Group};
use serde_json::json;

pub mod explorer;
pub mod map;
pub mod strategy;

pub use explorer::{Contact, ExploreStats, Explorer, GroundTruth, Order, Phase, Senses, ground_truth};
pub use map::{Cell, CellState, Dir, MentalMap, Move, return_path};
pub use strategy::{RandomWalk, Rings, Strategy};

use crate::comms::{Payload, RadioIn, RadioOut, Target};
use crate::robot::{BumpSensor, Robot, pose};
use crate::scene::ActiveScene;
use crate::scene::schema::StrategySpec;
use crate::sim::rng::stream;
use crate::sim::{Env, EnvStart, PerEnv, RobotOrder, SimTime, add_report_section};
use crate::skills::{Executor, MoveAhead, MoveTo, SkillGroup, SkillRequest, Stop, TurnTo};
use crate::world::{Arena, SonarEcho, groups};

/// An explorer's move ended in a collision: the cell it was entering, and whether the cell was
/// an obstacle of the room (not another robot).
#[derive(Message, Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExploreCollision {
    pub robot: Entity,
    pub cell: Cell,
    pub obstacle: bool,
    pub step: u64,
}

pub(super) fn plugin(app: &mut App) {
    app.add_message::<ExploreCollision>();
    add_report_section(app, report_section);
}

/// An explorer of the scene being loaded: its mental map on the robot-unit grid of the arena,
/// its den the cell it starts in.
pub(in crate::control) fn attach(
    robot: &Robot,
    transform: &Transform,
    arena: &Arena,
    seed: u64,
    strategy: StrategySpec,
    sonar: bool,
) -> impl Bundle {
    let cell = 2.0 * robot.radius;
    let (cols, rows) = ((arena.width / cell).floor() as i32, (arena.height / cell).floor() as i32);
    let (p, heading) = pose(transform);
    let den = Cell::new((p.x / cell).floor() as i32, (p.y / cell).floor() as i32);
    let strategy: Box<dyn Strategy> = match strategy {
        StrategySpec::Rings => Box::new(Rings),
        StrategySpec::Random => Box::new(RandomWalk { rng: stream(seed, "explore", u64::from(robot.index)) }),
    };
    (
        Explorer::new(cols, rows, den, Dir::nearest(heading), cell, strategy, sonar, (robot.index, robot.max_speed)),
        // Seed 002 excludes mobile obstacles: explorers pass through other robots, as if each
        // had the room to itself, and still meet every wall, box and pen.
        CollisionGroups::new(groups::ROBOT, Group::ALL ^ groups::ROBOT),
    )
}

pub(in crate::control) fn explore(
    time: Res<SimTime>,
    starts: Res<PerEnv<EnvStart>>,
    mut echoes: MessageReader<SonarEcho>,
    mut collisions: MessageWriter<ExploreCollision>,
    mut robots: Query<(Entity, &Transform, &BumpSensor, &Executor, &mut SkillRequest, &mut Explorer, &Env)>,
    mut radios: Query<(&RadioIn, &mut RadioOut)>,
    others: Query<(), With<Robot>>,
) {
    for echo in echoes.read() {
        if let Ok((_, _, _, _, _, mut ex, _)) = robots.get_mut(echo.robot) {
            ex.sonar_detected();
        }
    }
    for (entity, transform, bump, executor, mut request, mut ex, env) in &mut robots {
        let mut radio = radios.get_mut(entity).ok();
        // What the others found: obstacle cells this explorer need never touch itself.
        if let Some((inbox, _)) = radio.as_ref() {
            for message in &inbox.0 {
                if let Payload::Obstacles(points) = message.content() {
                    ex.hear_obstacles(points);
                }
            }
        }
        let (position, heading) = pose(transform);
        // The environment's own step and time.
        let step = starts.step_of(*env, time.step);
        let senses = Senses {
            step,
            seconds: step as f64 * time.dt_exact,
            position,
            contacts: bump
                .touching
                .iter()
                .zip(&bump.bearings)
                .map(|(e, bearing)| Contact { direction: heading + bearing, robot: others.contains(*e) })
                .collect(),
            moving: executor.0.running(SkillGroup::Move).is_some(),
        };
        let before = ex.stats.collisions;
        if let Some(order) = ex.step(&senses) {
            self::request(order, &mut request);
        }
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

/// The skill that carries out an explorer's order.
fn request(order: Order, request: &mut SkillRequest) {
    match order {
        Order::MoveTo(point) => {
            request.set(MoveTo { point, speed: f32::INFINITY, tolerance: explorer::CENTRE_TOLERANCE })
        }
        Order::MoveAhead(distance) => request.set(MoveAhead::new(distance, f32::INFINITY)),
        Order::TurnTo(heading) => request.set(TurnTo { heading }),
        Order::Stop => request.set(Stop),
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
