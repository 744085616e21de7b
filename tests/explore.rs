//! The cautious explorer (seed 002) in a running headless simulation: the seed's three test
//! plans, the whole explorer room, the sonar option and the random walk.

mod common;

use bevy::prelude::*;

use common::named;
use crsim::control::explore::{Cell, CellState, ExploreCollision, Explorer, Move, Phase, ground_truth, return_path};
use crsim::run::headless::{headless_app, run_steps};
use crsim::run::report::build_report;
use crsim::scene::schema::*;
use crsim::scene::{ActiveScene, SceneSource, load_scene_file};
use crsim::sim::SimTime;

fn explorer(app: &App, e: Entity) -> &Explorer {
    app.world().get::<Explorer>(e).expect("an explorer")
}

/// Steps until `done` holds (checked every 10 steps) or `max` steps have run.
fn run_until(app: &mut App, max: u64, mut done: impl FnMut(&mut App) -> bool) -> u64 {
    let mut steps = 0;
    while steps < max && !done(app) {
        run_steps(app, 10);
        steps += 10;
    }
    steps
}

/// A 1.2 m × 1 m room (6 × 5 cells of 0.2 m) with the den in the bottom-left corner and one box.
fn small_room(sonar: bool) -> SceneFile {
    let mut s = SceneFile::empty("small", 1.2, 1.0);
    s.boxes.push(BoxSpec { name: "block".into(), center: (0.1, 0.5), size: (0.2, 0.2), angle: 0.0 });
    s.dens.push(DenSpec { name: "den".into(), pos: (0.1, 0.1), radius: 0.1 });
    let mut r = RobotSpec::new("ex", 0.1, 0.1, 90.0);
    r.den = Some("den".into());
    r.max_speed = 0.5;
    r.controller = ControllerSpec::Explorer { strategy: StrategySpec::Rings, sonar };
    s.robots.push(r);
    s
}

/// Steps one at a time until `done` holds.
fn run_each_step_until(app: &mut App, max: u64, mut done: impl FnMut(&mut App) -> bool) {
    for _ in 0..max {
        run_steps(app, 1);
        if done(app) {
            return;
        }
    }
}

#[test]
fn seed_plan_1_the_return_sequence_of_an_outbound_path() {
    use Move::*;
    assert_eq!(return_path(&[Forward, Left, Forward, Forward]), vec![Left, Left, Forward, Forward, Right, Forward]);
}

#[test]
fn seed_plan_2_the_map_after_hitting_an_obstacle() {
    let mut app = headless_app(small_room(false), SceneSource::Generated);
    let ex = named(&mut app, "ex");
    // Facing north from the den, the nearest ring first: (0,1) straight ahead, then from there
    // the ring-1 cell with the fewest moves, ties to the lowest cell: (-1,1), the west wall.
    let mut cursor = app.world().resource::<Messages<ExploreCollision>>().get_cursor();
    let mut reported = Vec::new();
    run_each_step_until(&mut app, 2000, |app| {
        reported.extend(cursor.read(app.world().resource::<Messages<ExploreCollision>>()).copied());
        explorer(app, ex).stats.collisions > 0
    });
    // The collision is reported with the cell where it happened.
    assert_eq!(reported.len(), 1);
    assert_eq!((reported[0].robot, reported[0].cell, reported[0].obstacle), (ex, Cell::new(-1, 1), true));
    let e = explorer(&app, ex);
    assert_eq!(e.stats.collisions, 1);
    assert_eq!(e.stats.last_collision.map(|c| c.0), Some(Cell::new(-1, 1)));
    assert_eq!(e.outbound, vec![Move::Forward, Move::Left]);
    assert_eq!(e.map.get(Cell::new(-1, 1)), CellState::Obstacle);
    assert_eq!(
        e.map.to_text(None),
        [
            "????????", //
            "????????", "????????", "????????", "#.??????", "?D??????", "????????",
        ]
        .join("\n")
            + "\n"
    );
    // It runs home at once by the reversed path: left, left, then right, forward.
    assert_eq!(e.phase, Phase::Recovering);
    assert_eq!(return_path(&e.outbound), vec![Move::Left, Move::Left, Move::Right, Move::Forward]);
    run_each_step_until(&mut app, 2000, |app| explorer(app, ex).phase == Phase::Returning);
    // The first left is under way.
    assert_eq!(explorer(&app, ex).plan, vec![Move::Left, Move::Right, Move::Forward]);
    run_each_step_until(&mut app, 2000, |app| explorer(app, ex).phase == Phase::Outbound);
    let e = explorer(&app, ex);
    assert_eq!((e.cell, e.dir, e.stats.returns), (Cell::new(0, 0), crsim::control::explore::Dir::South, 1));
    let t = app.world().get::<Transform>(ex).unwrap();
    assert!(t.translation.truncate().distance(Vec2::new(0.1, 0.1)) < 0.005);
}

#[test]
fn seed_plan_3_the_next_excursion_differs_from_the_one_that_hit() {
    let mut app = headless_app(small_room(false), SceneSource::Generated);
    let ex = named(&mut app, "ex");
    let mut excursions: Vec<Vec<Cell>> = vec![vec![]];
    let mut last_returns = 0;
    run_until(&mut app, 20_000, |app| {
        let e = explorer(app, ex);
        if e.stats.returns != last_returns {
            last_returns = e.stats.returns;
            excursions.push(vec![]);
        }
        if e.phase == Phase::Outbound {
            let cells = e.outbound_cells();
            *excursions.last_mut().unwrap() = cells;
        }
        excursions.len() > 3
    });
    assert!(excursions.len() > 3);
    for pair in excursions.windows(2).take(2) {
        assert_ne!(pair[0], pair[1], "excursions {excursions:?}");
        // The next excursion never enters the cell that ended the previous one.
        let e = explorer(&app, ex);
        for c in &pair[1] {
            assert_ne!(e.map.get(*c), CellState::Obstacle);
        }
    }
}

#[test]
fn the_explorer_room_is_fully_mapped_without_hitting_anything_twice() {
    let (scene, _) =
        load_scene_file(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/explorer.ron")).unwrap();
    let mut app = headless_app(scene.clone(), SceneSource::Generated);
    let ex = named(&mut app, "explorer");
    let steps = run_until(&mut app, 120_000, |app| explorer(app, ex).phase == Phase::Done);
    let e = explorer(&app, ex);
    assert_eq!(e.phase, Phase::Done, "finished within {steps} steps");
    let truth = ground_truth(&scene, e.cell_size, e.map.cols, e.map.rows, e.map.den);
    assert_eq!(truth.reachable.len(), 20 * 15 - 3 * 2 - 1 - 2 * 3);
    assert_eq!(e.coverage(&truth), 1.0);
    assert_eq!(e.stats.repeat_collisions, 0);
    assert_eq!(e.obstacle_cells(), truth.obstacles, "obstacle cells = the scene rasterised to the grid");
    assert_eq!(e.cell, e.map.den, "home");
    assert!(app.world().get::<Transform>(ex).unwrap().translation.truncate().distance(Vec2::new(0.1, 2.9)) < 0.01);
    // The run metrics carry the same.
    let report = build_report(app.world_mut(), 0.0);
    let x = &report.sections["explore"];
    assert_eq!(x["coverage"], 1.0);
    assert_eq!(x["repeat_collisions"], 0);
    assert_eq!(x["collisions"].as_u64().unwrap() as usize, truth.obstacles.len());
    assert_eq!(x["returns"], x["collisions"]);
    assert!(x["steps"].as_u64().unwrap() > 1000);
    assert_eq!(x["map"].as_array().unwrap().len(), 17);
    assert_eq!(x["map"][1].as_str().unwrap(), "#R...................#");
    // Once done it stays home.
    let at = app.world().resource::<SimTime>().step;
    run_steps(&mut app, 200);
    assert_eq!(explorer(&app, ex).stats.moves, e_moves(&app, ex));
    assert!(app.world().resource::<SimTime>().step > at);
}

/// Runs the scene's one explorer until it is done (or `max` steps): the app, the explorer and
/// what the scene really holds on its grid.
fn explore_fully(scene: SceneFile, max: u64) -> (App, Entity, crsim::control::explore::GroundTruth) {
    let name = scene.robots[0].name.clone();
    let mut app = headless_app(scene.clone(), SceneSource::Generated);
    let ex = named(&mut app, &name);
    run_until(&mut app, max, |app| explorer(app, ex).phase == Phase::Done);
    let e = explorer(&app, ex);
    let truth = ground_truth(&scene, e.cell_size, e.map.cols, e.map.rows, e.map.den);
    (app, ex, truth)
}

/// The skill clock follows simulated time for any step: with 50 ms steps (the executor's period
/// is 20 ms) the explorer maps the room as well, and hits nothing that is not there.
#[test]
fn with_long_steps_the_room_is_mapped_all_the_same() {
    let mut scene = small_room(false);
    scene.dt = 0.05;
    let (app, ex, truth) = explore_fully(scene, 40_000);
    let e = explorer(&app, ex);
    let map = e.map.to_text(Some(e.cell));
    assert_eq!(e.phase, Phase::Done, "\n{map}");
    assert_eq!(e.coverage(&truth), 1.0, "\n{map}{:?}", e.stats);
    assert_eq!(e.stats.repeat_collisions, 0);
    assert_eq!(e.obstacle_cells(), truth.obstacles);
    assert_eq!(e.stats.collisions as usize, truth.obstacles.len());
}

/// Passages exactly one robot wide: a one-cell gap in a partition, and a box one cell from a
/// wall. Every unit move ends, and the room is finished with everything reachable mapped.
fn narrow_room() -> SceneFile {
    let mut s = SceneFile::empty("narrow", 2.0, 1.0);
    let block =
        |name: &str, center: (f32, f32), size: (f32, f32)| BoxSpec { name: name.into(), center, size, angle: 0.0 };
    s.boxes.push(block("lower", (1.1, 0.2), (0.2, 0.4)));
    s.boxes.push(block("upper", (1.1, 0.8), (0.2, 0.4)));
    s.boxes.push(block("byTheWall", (1.7, 0.3), (0.2, 0.2)));
    s.dens.push(DenSpec { name: "den".into(), pos: (0.1, 0.1), radius: 0.1 });
    let mut r = RobotSpec::new("ex", 0.1, 0.1, 90.0);
    r.den = Some("den".into());
    r.max_speed = 0.5;
    r.controller = ControllerSpec::Explorer { strategy: StrategySpec::Rings, sonar: false };
    s.robots.push(r);
    s
}

#[test]
fn rooms_with_passages_one_robot_wide_are_finished() {
    let (app, ex, truth) = explore_fully(narrow_room(), 150_000);
    let e = explorer(&app, ex);
    assert_eq!(e.phase, Phase::Done, "the explorer finished\n{}", e.map.to_text(Some(e.cell)));
    assert_eq!(e.coverage(&truth), 1.0, "\n{}", e.map.to_text(Some(e.cell)));
    assert_eq!(e.stats.repeat_collisions, 0);
}

fn e_moves(app: &App, ex: Entity) -> u32 {
    explorer(app, ex).stats.moves
}

fn sonar_room(sonar: bool) -> SceneFile {
    let mut s = small_room(sonar);
    s.boxes.clear();
    // A beam across the room, along y = 0.5 (the cells of row 2).
    s.sonars.push(SonarSpec {
        name: "sonar1".into(),
        pos: (1.2, 0.5),
        axis: 180.0,
        width: 0.05,
        range: None,
        through_walls: false,
    });
    s
}

#[test]
fn with_the_sonar_option_crossing_the_beam_sends_the_robot_home_and_marks_where_it_was() {
    let mut app = headless_app(sonar_room(true), SceneSource::Generated);
    let ex = named(&mut app, "ex");
    let mut collisions_before = 0;
    run_until(&mut app, 5000, |app| {
        let e = explorer(app, ex);
        if e.stats.sonar_alarms == 0 {
            collisions_before = e.stats.collisions;
        }
        e.stats.sonar_alarms > 0
    });
    let e = explorer(&app, ex);
    assert_eq!(e.stats.sonar_alarms, 1);
    assert_eq!(e.stats.collisions, collisions_before, "the alarm, not a collision, sent it home");
    assert!(matches!(e.phase, Phase::Recovering | Phase::Returning), "{:?}", e.phase);
    // Only where the robot was when the sonar saw it: not the rest of the beam, which the
    // robot cannot know of.
    let danger: Vec<Cell> = e.map.cells().filter(|(_, s)| *s == CellState::Danger).map(|(c, _)| c).collect();
    assert_eq!(danger.len(), 1, "{danger:?}");
    assert_eq!(danger[0].y, 2, "{danger:?}");
    // It meets the beam wherever it tries to cross, and learns it cell by cell; it never
    // plans through a danger cell, so the rows above stay unexplored.
    run_until(&mut app, 120_000, |app| explorer(app, ex).phase == Phase::Done);
    let e = explorer(&app, ex);
    assert_eq!(e.phase, Phase::Done);
    let danger: Vec<Cell> = e.map.cells().filter(|(_, s)| *s == CellState::Danger).map(|(c, _)| c).collect();
    assert_eq!(danger, (0..6).map(|x| Cell::new(x, 2)).collect::<Vec<_>>());
    assert_eq!(e.stats.sonar_alarms, 6);
    assert_eq!(e.map.get(Cell::new(0, 3)), CellState::Unexplored);
    assert_eq!(e.map.get(Cell::new(3, 1)), CellState::Free);
}

#[test]
fn without_the_sonar_option_the_beam_is_ignored_and_the_toggle_acts_at_once() {
    let mut app = headless_app(sonar_room(false), SceneSource::Generated);
    let ex = named(&mut app, "ex");
    run_until(&mut app, 60_000, |app| explorer(app, ex).phase == Phase::Done);
    let e = explorer(&app, ex);
    assert_eq!((e.stats.sonar_alarms, e.map.count(CellState::Danger)), (0, 0));
    assert_eq!(e.map.get(Cell::new(0, 3)), CellState::Free);
    // Toggled on in a fresh run: the very next crossing raises the alarm.
    let mut app = headless_app(sonar_room(false), SceneSource::Generated);
    let ex = named(&mut app, "ex");
    app.world_mut().get_mut::<Explorer>(ex).unwrap().sonar_alarm = true;
    run_until(&mut app, 5000, |app| explorer(app, ex).stats.sonar_alarms > 0);
    assert_eq!(explorer(&app, ex).stats.sonar_alarms, 1);
}

#[test]
fn the_random_walk_explores_too_and_never_repeats_a_collision() {
    let mut scene = small_room(false);
    scene.robots[0].controller = ControllerSpec::Explorer { strategy: StrategySpec::Random, sonar: false };
    let mut app = headless_app(scene.clone(), SceneSource::Generated);
    let ex = named(&mut app, "ex");
    run_steps(&mut app, 20_000);
    let e = explorer(&app, ex);
    assert_eq!(e.strategy.name(), "random");
    assert_eq!(e.stats.repeat_collisions, 0);
    assert!(e.stats.collisions > 0);
    let truth =
        ground_truth(&app.world().resource::<ActiveScene>().scene, e.cell_size, e.map.cols, e.map.rows, e.map.den);
    assert!(e.coverage(&truth) > 0.3, "coverage {}", e.coverage(&truth));
}

/// Two explorers in one room: with the radio on, each avoids obstacles it never touched itself,
/// because the other told it; with the radio off, each must hit every obstacle itself.
#[test]
fn explorers_sharing_obstacles_over_the_radio_avoid_obstacles_they_never_touched() {
    let two = |radio: bool| {
        let mut s = small_room(false);
        s.dens.push(DenSpec { name: "den2".into(), pos: (1.1, 0.9), radius: 0.1 });
        let mut r = s.robots[0].clone();
        r.name = "ex2".into();
        r.pose = (1.1, 0.9, -90.0);
        r.den = Some("den2".into());
        s.robots.push(r);
        s.comms.link = radio;
        let mut app = headless_app(s, SceneSource::Generated);
        let (a, b) = (named(&mut app, "ex"), named(&mut app, "ex2"));
        run_until(&mut app, 60_000, |app| {
            explorer(app, a).phase == Phase::Done && explorer(app, b).phase == Phase::Done
        });
        let report = build_report(app.world_mut(), 0.0);
        (explorer(&app, a).stats, explorer(&app, b).stats, explorer(&app, b).obstacle_cells().len(), report)
    };
    let (a_on, b_on, known_on, report) = two(true);
    let (a_off, b_off, known_off, _) = two(false);
    // Both know every obstacle cell around the room either way...
    assert_eq!(known_on, known_off);
    assert_eq!(a_off.collisions as usize, known_off);
    // ...but with the radio neither had to hit them all: what one found, the other avoided.
    assert!(b_on.obstacles_received > 0 && a_on.obstacles_received > 0);
    assert!((b_on.collisions as usize) < known_on, "{} of {known_on}", b_on.collisions);
    assert_eq!(a_on.collisions + b_on.collisions, known_on as u32, "every obstacle hit once in all");
    assert_eq!(a_on.repeat_collisions + b_on.repeat_collisions, 0);
    assert!(
        a_on.finished_at.unwrap().max(b_on.finished_at.unwrap())
            < a_off.finished_at.unwrap().max(b_off.finished_at.unwrap())
    );
    // Every message is accounted for.
    let c = &report.sections["comms"];
    assert_eq!(
        c["sent"],
        c["delivered"].as_u64().unwrap() + c["in_flight"].as_u64().unwrap() + c["dropped_total"].as_u64().unwrap()
    );
    assert_eq!(c["delivered"].as_u64().unwrap(), u64::from(a_on.obstacles_received + b_on.obstacles_received));
    // Per robot: what each sent is what the other received.
    let robots = c["robots"].as_array().unwrap();
    assert_eq!(robots.len(), 2);
    assert_eq!(robots[0]["sent"], robots[1]["received"]);
    assert_eq!(robots[1]["sent"], robots[0]["received"]);
}
