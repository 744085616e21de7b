//! Headless behaviour tests of the simulator core: physics, sensors, actuators, the loop and
//! determinism. Each builds a small scene, steps it and asserts on the world.

mod common;

use bevy::ecs::schedule::ScheduleLabel;
use bevy::prelude::*;
use bevy_rapier2d::prelude::{ColliderDisabled, RigidBodyDisabled};

use common::{get, named, position, robot, room, scene_path};
use crsim::robot::{Battery, BumpSensor, CameraView, Gripper, Odometry, RangeScan, Robot, pose};
use crsim::run::headless::{headless_app, run_steps};
use crsim::run::physics_step::{OffThread, StepThread};
use crsim::run::report::build_report;
use crsim::scene::schema::*;
use crsim::scene::{PendingScene, SceneSource, load_scene_file};
use crsim::sim::{Passes, PerEnv, SimClock, SimTime, TrajectoryHash};
use crsim::skills::{Grip, Release, SkillFacade, SkillRequest, Velocity};
use crsim::world::{Boxed, Held, PenBox, Seeable, Sonar, SonarEcho};

fn app(scene: SceneFile) -> App {
    headless_app(scene, SceneSource::Generated)
}

fn app_in(mut scene: SceneFile, mode: PhysicsMode) -> App {
    scene.physics = mode;
    app(scene)
}

/// The test function `name(mode)` as two tests, `name::rigid` and `name::kinematic`: the same
/// assertions with rapier's rigid bodies and with the kinematic model.
macro_rules! both_models {
    ($name:ident) => {
        mod $name {
            use super::PhysicsMode;
            #[test]
            fn rigid() {
                super::$name(PhysicsMode::Rigid)
            }
            #[test]
            fn kinematic() {
                super::$name(PhysicsMode::Kinematic)
            }
        }
    };
}

both_models!(robot_driving_into_a_wall_stops_and_bumps);
fn robot_driving_into_a_wall_stops_and_bumps(mode: PhysicsMode) {
    let mut s = room(2.0, 1.0);
    s.robots.push(robot("r", 0.5, 0.5, 0.0, ControllerSpec::Drive { linear: 0.3, angular: 0.0, lateral: 0.0 }));
    let mut app = app_in(s, mode);
    let r = named(&mut app, "r");
    let wall = named(&mut app, "wallRight");
    run_steps(&mut app, 50);
    assert!(!get::<BumpSensor>(&app, r).is_touching(), "still in the open after 1 s");
    run_steps(&mut app, 350);
    let p = position(&app, r);
    // The body's edge is at the wall (x = 2.0), within rapier's contact tolerance.
    assert!((1.88..=1.9001).contains(&p.x), "x = {}", p.x);
    assert!((p.y - 0.5).abs() < 0.01, "y = {}", p.y);
    let bump: BumpSensor = get(&app, r);
    assert_eq!(bump.touching, vec![wall]);
    assert_eq!(get::<Odometry>(&app, r).collisions, 1);
    // Pushing on: it stays put.
    run_steps(&mut app, 50);
    assert!((position(&app, r).x - p.x).abs() < 1e-3);
}

both_models!(bump_events_name_the_obstacle);
fn bump_events_name_the_obstacle(mode: PhysicsMode) {
    let mut s = room(2.0, 1.0);
    s.boxes.push(BoxSpec { name: "block".into(), center: (1.5, 0.5), size: (0.2, 0.6), angle: 0.0 });
    s.robots.push(robot("r", 0.5, 0.5, 0.0, ControllerSpec::Drive { linear: 0.4, angular: 0.0, lateral: 0.0 }));
    let mut app = app_in(s, mode);
    let block = named(&mut app, "block");
    app.world_mut().init_resource::<Messages<crsim::robot::BumpEvent>>();
    let mut cursor = app.world().resource::<Messages<crsim::robot::BumpEvent>>().get_cursor();
    let mut seen = Vec::new();
    for _ in 0..20 {
        run_steps(&mut app, 10);
        let msgs = app.world().resource::<Messages<crsim::robot::BumpEvent>>();
        seen.extend(cursor.read(msgs).map(|e| e.other));
    }
    assert_eq!(seen, vec![block]);
}

both_models!(drive_commands_are_limited_to_the_robots_maxima);
fn drive_commands_are_limited_to_the_robots_maxima(mode: PhysicsMode) {
    let mut s = room(6.0, 2.0);
    let mut r = robot("r", 0.5, 1.0, 0.0, ControllerSpec::Drive { linear: 5.0, angular: 0.0, lateral: 0.0 });
    r.max_speed = 0.5;
    s.robots.push(r);
    let mut app = app_in(s, mode);
    let r = named(&mut app, "r");
    run_steps(&mut app, 100);
    let travelled = position(&app, r).x - 0.5;
    // 2 s at 0.5 m/s.
    assert!((travelled - 1.0).abs() < 0.02, "travelled {travelled}");
}

both_models!(turning_in_place_follows_the_turn_rate);
fn turning_in_place_follows_the_turn_rate(mode: PhysicsMode) {
    let mut s = room(2.0, 2.0);
    s.robots.push(robot("r", 1.0, 1.0, 0.0, ControllerSpec::Drive { linear: 0.0, angular: 45.0, lateral: 0.0 }));
    let mut app = app_in(s, mode);
    let r = named(&mut app, "r");
    run_steps(&mut app, 100);
    let (p, heading) = pose(app.world().get::<Transform>(r).unwrap());
    assert!((heading.to_degrees() - 90.0).abs() < 1.0, "heading {}", heading.to_degrees());
    assert!(p.distance(Vec2::new(1.0, 1.0)) < 1e-3);
}

fn gripper_scene() -> SceneFile {
    let mut s = room(3.0, 2.0);
    s.pens.push(PenSpec { name: "pen".into(), pos: (0.65, 1.0), radius: 0.03 });
    s.boxes.push(BoxSpec { name: "bin".into(), center: (2.5, 1.0), size: (0.4, 0.6), angle: 0.0 });
    s.robots.push(robot("r", 0.5, 1.0, 0.0, ControllerSpec::Idle));
    s
}

/// Drives and grips through the skill system, as every controller does.
fn command(app: &mut App, r: Entity, linear: f32, close: bool) {
    let mut facade = SkillFacade::new();
    facade.set(Velocity { linear, angular: 0.0, lateral: 0.0 }).unwrap();
    if close {
        facade.set(Grip).unwrap();
    } else {
        facade.set(Release).unwrap();
    }
    app.world_mut().get_mut::<SkillRequest>(r).unwrap().0 = Some(facade);
}

both_models!(gripper_picks_up_a_pen_carries_it_and_puts_it_down);
fn gripper_picks_up_a_pen_carries_it_and_puts_it_down(mode: PhysicsMode) {
    let mut app = app_in(gripper_scene(), mode);
    let (r, pen) = (named(&mut app, "r"), named(&mut app, "pen"));
    run_steps(&mut app, 2);
    assert_eq!(get::<crsim::robot::GripSensor>(&app, r).pen_in_reach, Some(pen));
    command(&mut app, r, 0.0, true);
    run_steps(&mut app, 2);
    assert_eq!(get::<Gripper>(&app, r).holding, Some(pen));
    assert_eq!(get::<Held>(&app, pen).by, r);
    assert!(app.world().get::<ColliderDisabled>(pen).is_some());
    // Carry it 0.5 m.
    command(&mut app, r, 0.25, true);
    run_steps(&mut app, 100);
    command(&mut app, r, 0.0, true);
    run_steps(&mut app, 2);
    let rx = position(&app, r).x;
    assert!((rx - 1.0).abs() < 0.02, "robot at {rx}");
    assert!((position(&app, pen).x - (rx + 0.14)).abs() < 0.01, "pen rides in front");
    // Open: the pen is back on the floor, in the physics world, where it was put down.
    command(&mut app, r, 0.0, false);
    run_steps(&mut app, 2);
    assert_eq!(get::<Gripper>(&app, r).holding, None);
    assert!(app.world().get::<Held>(pen).is_none());
    assert!(app.world().get::<RigidBodyDisabled>(pen).is_none());
    assert!(app.world().get::<Boxed>(pen).is_none());
    let dropped = position(&app, pen);
    run_steps(&mut app, 20);
    assert!(position(&app, pen).distance(dropped) < 0.01);
    assert_eq!(build_report(app.world_mut(), 0.0).pens.boxed, 0);
}

both_models!(a_pen_released_over_a_box_is_boxed);
fn a_pen_released_over_a_box_is_boxed(mode: PhysicsMode) {
    let mut app = app_in(gripper_scene(), mode);
    let (r, pen, bin) = (named(&mut app, "r"), named(&mut app, "pen"), named(&mut app, "bin"));
    command(&mut app, r, 0.0, true);
    run_steps(&mut app, 2);
    assert_eq!(get::<Gripper>(&app, r).holding, Some(pen));
    // Drive up to the box (its face is at x = 2.3) and push against it, then release.
    command(&mut app, r, 0.4, true);
    run_steps(&mut app, 250);
    assert!(get::<BumpSensor>(&app, r).touching.contains(&bin));
    command(&mut app, r, 0.0, false);
    run_steps(&mut app, 2);
    assert_eq!(get::<Boxed>(&app, pen).container, bin);
    assert_eq!(get::<PenBox>(&app, bin).pens, 1);
    let report = build_report(app.world_mut(), 0.0);
    assert_eq!((report.pens.total, report.pens.boxed, report.pens.held), (1, 1, 0));
}

#[test]
fn a_closed_gripper_with_nothing_in_reach_holds_nothing() {
    let mut s = gripper_scene();
    s.pens[0].pos = (1.2, 1.0);
    let mut app = app(s);
    let r = named(&mut app, "r");
    command(&mut app, r, 0.0, true);
    run_steps(&mut app, 5);
    assert_eq!(get::<Gripper>(&app, r).holding, None);
}

#[test]
fn battery_drains_with_motion_and_charges_at_a_station() {
    let mut s = room(3.0, 2.0);
    s.stations.push(StationSpec { name: "charger".into(), pos: (2.5, 1.0), radius: 0.3, rate: 5.0 });
    let mut spinner =
        robot("spinner", 0.5, 1.0, 0.0, ControllerSpec::Drive { linear: 0.0, angular: 90.0, lateral: 0.0 });
    spinner.battery =
        BatterySpec { capacity: 100.0, initial: Some(50.0), idle_drain: 0.1, move_drain: 1.0, turn_drain: 2.0 };
    let mut parked = robot("parked", 2.5, 1.0, 0.0, ControllerSpec::Idle);
    parked.battery = spinner.battery.clone();
    s.robots.extend([spinner, parked]);
    let mut app = app(s);
    let (spinner, parked) = (named(&mut app, "spinner"), named(&mut app, "parked"));
    run_steps(&mut app, 100);
    // 2 s: idle 0.1/s + turning π/2 rad/s × 2 per rad.
    let expected = 50.0 - 2.0 * (0.1 + std::f32::consts::FRAC_PI_2 * 2.0);
    let b: Battery = get(&app, spinner);
    assert!((b.charge - expected).abs() < 0.05, "{} vs {expected}", b.charge);
    assert!(!b.charging);
    let b: Battery = get(&app, parked);
    // Charging from the second step on (the overlap is known after the first physics step).
    assert!(b.charging);
    assert!((b.charge - (50.0 + 99.0 * 0.02 * 5.0 - 100.0 * 0.02 * 0.1)).abs() < 0.05, "{}", b.charge);
}

both_models!(an_empty_battery_stops_the_robot);
fn an_empty_battery_stops_the_robot(mode: PhysicsMode) {
    let mut s = room(4.0, 2.0);
    let mut r = robot("r", 0.5, 1.0, 0.0, ControllerSpec::Drive { linear: 0.4, angular: 0.0, lateral: 0.0 });
    r.battery = BatterySpec { capacity: 10.0, initial: Some(0.2), idle_drain: 0.0, move_drain: 1.0, turn_drain: 0.0 };
    s.robots.push(r);
    let mut app = app_in(s, mode);
    let r = named(&mut app, "r");
    run_steps(&mut app, 200);
    // 0.2 units at 1 unit per metre: it stops after 0.2 m.
    let x = position(&app, r).x;
    assert!((x - 0.7).abs() < 0.02, "x = {x}");
    let b: Battery = get(&app, r);
    assert_eq!((b.charge, b.depletions), (0.0, 1));
    assert_eq!(build_report(app.world_mut(), 0.0).robots[0].battery_depletions, 1);
}

both_models!(sonar_reports_a_robot_crossing_its_beam);
fn sonar_reports_a_robot_crossing_its_beam(mode: PhysicsMode) {
    let mut s = room(3.0, 2.0);
    s.sonars.push(SonarSpec {
        name: "sonar1".into(),
        pos: (1.5, 0.0),
        axis: 90.0,
        width: 0.1,
        range: None,
        through_walls: false,
    });
    s.robots.push(robot("r", 0.4, 1.2, 0.0, ControllerSpec::Drive { linear: 0.4, angular: 0.0, lateral: 0.0 }));
    let mut app = app_in(s, mode);
    let (sonar, r) = (named(&mut app, "sonar1"), named(&mut app, "r"));
    let mut cursor = app.world().resource::<Messages<SonarEcho>>().get_cursor();
    let mut echoes = Vec::new();
    for _ in 0..30 {
        run_steps(&mut app, 10);
        echoes.extend(cursor.read(app.world().resource::<Messages<SonarEcho>>()).copied());
    }
    assert_eq!(echoes.len(), 1, "{echoes:?}");
    let e = echoes[0];
    assert_eq!((e.sonar, e.robot), (sonar, r));
    assert!((e.distance - 1.2).abs() < 0.01, "distance {}", e.distance);
    // The robot's centre entered the 0.1 m beam at x = 1.5 - 0.05 = 1.45 m, after ~2.6 s (its
    // edge, 0.1 m earlier, does not count: as in the VirtualRobot's sonars).
    assert!((127..=135).contains(&e.step), "step {}", e.step);
    let sonar_state: Sonar = get(&app, sonar);
    assert_eq!(sonar_state.detections, 1);
    assert!(sonar_state.inside.is_empty(), "robot has left the beam");
    assert!((sonar_state.beam_length - 2.0).abs() < 1e-3, "beam reaches wallUp");
}

both_models!(a_range_sensor_reads_walls_pens_and_robots_as_the_robot_turns_and_drives);
fn a_range_sensor_reads_walls_pens_and_robots_as_the_robot_turns_and_drives(mode: PhysicsMode) {
    // A 4 x 2 m room. r at (1, 1) facing east with 4 beams over the full circle (behind, right,
    // ahead, left) reaching 1.2 m: the wall behind and the wall to its right 1 m away, a pen
    // 0.5 m ahead (its near side at 0.47 m), another robot 0.8 m to its left (its near side at
    // 0.7 m, before the wall at 1 m).
    let mut s = room(4.0, 2.0);
    s.pens.push(PenSpec { name: "pen".into(), pos: (1.5, 1.0), radius: 0.03 });
    let mut r = robot("r", 1.0, 1.0, 0.0, ControllerSpec::Idle);
    r.range_sensor = Some(RangeSensorSpec { rays: 4, fov: 360.0, range: 1.2, period: 1 });
    s.robots.push(r);
    s.robots.push(robot("other", 1.0, 1.8, 0.0, ControllerSpec::Idle));
    let mut app = app_in(s, mode);
    let (r, other) = (named(&mut app, "r"), named(&mut app, "other"));
    run_steps(&mut app, 1);
    let scan: RangeScan = get(&app, r);
    let want = [1.0, 1.0, 0.47, 0.7];
    for (got, want) in scan.distances.iter().zip(want) {
        assert!((got - want).abs() < 0.01, "{:?}", scan.distances);
    }
    assert!(app.world().get::<RangeScan>(other).is_none(), "a robot without a sensor has no scan");
}

#[test]
fn kinematic_robots_push_pens_that_stop_when_the_push_stops() {
    let mut s = room(4.0, 2.0);
    s.physics = PhysicsMode::Kinematic;
    s.pens.push(PenSpec { name: "pen".into(), pos: (1.0, 1.0), radius: 0.03 });
    s.robots.push(robot("r", 0.5, 1.0, 0.0, ControllerSpec::Idle));
    let mut app = app(s);
    let (r, pen) = (named(&mut app, "r"), named(&mut app, "pen"));
    // 0.3 m/s for 2 s: 0.6 m, the last 0.23 of it pushing the pen.
    command(&mut app, r, 0.3, false);
    run_steps(&mut app, 100);
    let (rp, pp) = (position(&app, r), position(&app, pen));
    assert!((rp.x - 1.1).abs() < 1e-3, "robot at {rp}");
    assert!((pp.x - (rp.x + 0.13)).abs() < 1e-3 && (pp.y - 1.0).abs() < 1e-4, "the pen just ahead: {pp}");
    // Stopped, the pen stops too: no momentum.
    command(&mut app, r, 0.0, false);
    run_steps(&mut app, 1);
    let stopped = position(&app, pen);
    run_steps(&mut app, 50);
    assert_eq!(position(&app, pen), stopped);
}

#[test]
fn kinematic_robots_meeting_head_on_stop_touching() {
    let mut s = room(4.0, 2.0);
    s.physics = PhysicsMode::Kinematic;
    s.robots.push(robot("a", 1.0, 1.0, 0.0, ControllerSpec::Drive { linear: 0.3, angular: 0.0, lateral: 0.0 }));
    s.robots.push(robot("b", 3.0, 1.0, 180.0, ControllerSpec::Drive { linear: 0.3, angular: 0.0, lateral: 0.0 }));
    let mut app = app(s);
    let (a, b) = (named(&mut app, "a"), named(&mut app, "b"));
    run_steps(&mut app, 300);
    let (pa, pb) = (position(&app, a), position(&app, b));
    assert!((pb.x - pa.x - 0.2).abs() < 0.013, "they touch ({pa}, {pb}): one step's drive at most between");
    assert!((pa.x + pb.x - 4.0).abs() < 1e-3, "symmetric: {pa} {pb}");
    assert!(get::<BumpSensor>(&app, a).touching.contains(&b));
    assert_eq!(get::<Odometry>(&app, b).collisions, 1);
}

#[test]
fn kinematic_substeps_keep_a_fast_robot_from_jumping_a_thin_wall() {
    // 10 m/s: 0.2 m a step, more than the 0.1 m robot's radius plus half the 0.04 m wall.
    let fast = |substeps: u32| {
        let mut s = room(4.0, 2.0);
        s.physics = PhysicsMode::Kinematic;
        s.substeps = substeps;
        s.walls.push(WallSpec { name: "thin".into(), from: (2.0, 0.2), to: (2.0, 1.8), thickness: 0.04 });
        let mut r = robot("r", 0.5, 1.0, 0.0, ControllerSpec::Drive { linear: 10.0, angular: 0.0, lateral: 0.0 });
        r.max_speed = 10.0;
        s.robots.push(r);
        let mut app = app(s);
        let r = named(&mut app, "r");
        run_steps(&mut app, 50);
        position(&app, r).x
    };
    let x = fast(4);
    assert!((x - 1.88).abs() < 1e-3, "held at the wall's face: {x}");
    let x = fast(1);
    assert!(x > 2.0, "one part of 0.2 m can jump it: {x}");
}

/// A hostile crowd: 300 fast wanderers and 100 pens packed into a 6 m room with a thin wall
/// across it. Nothing may leave the room or end inside the wall, and nothing becomes NaN.
#[test]
fn a_packed_kinematic_room_keeps_everything_inside() {
    let mut s = room(6.0, 6.0);
    s.physics = PhysicsMode::Kinematic;
    s.walls.push(WallSpec { name: "mid".into(), from: (3.0, 1.0), to: (3.0, 5.0), thickness: 0.04 });
    let clear_of_mid = |x: f32, y: f32| (x - 3.0).abs() > 0.2 || !(0.8..5.2).contains(&y);
    for i in 0..19 {
        for j in 0..19 {
            let (x, y) = (0.3 + i as f32 * 0.3, 0.3 + j as f32 * 0.3);
            if !clear_of_mid(x, y) {
                continue;
            }
            let n = s.robots.len();
            if n < 300 {
                let mut r = robot(&format!("r{n}"), x, y, (n * 37 % 360) as f32, ControllerSpec::Wander { speed: 1.0 });
                r.max_speed = 1.5;
                s.robots.push(r);
            }
            if (i + j) % 3 == 0 && i < 18 && j < 18 && clear_of_mid(x + 0.15, y + 0.15) {
                s.pens.push(PenSpec { name: format!("p{i}_{j}"), pos: (x + 0.15, y + 0.15), radius: 0.03 });
            }
        }
    }
    let mut app = app(s);
    run_steps(&mut app, 1500);
    let world = app.world_mut();
    let mut bodies: Vec<(String, Vec2, f32)> = world
        .query::<(&Name, &Transform, &Robot)>()
        .iter(world)
        .map(|(n, t, r)| (n.to_string(), t.translation.truncate(), r.radius))
        .collect();
    let pens: Vec<(String, Vec2, f32)> = world
        .query_filtered::<(&Name, &Transform, &crsim::world::Pen), (Without<Held>, Without<Boxed>)>()
        .iter(world)
        .map(|(n, t, p)| (n.to_string(), t.translation.truncate(), p.radius))
        .collect();
    assert!(bodies.len() >= 290 && pens.len() >= 90, "{} robots, {} pens", bodies.len(), pens.len());
    bodies.extend(pens);
    for (name, p, r) in &bodies {
        assert!(p.is_finite(), "{name} at {p}");
        let inside = (r - 1e-3..=6.0 - r + 1e-3).contains(&p.x) && (r - 1e-3..=6.0 - r + 1e-3).contains(&p.y);
        assert!(inside, "{name} at {p} left the room");
        let in_mid = (p.x - 3.0).abs() < 0.02 + r - 1e-3 && (1.0 - 0.02..=5.0 + 0.02).contains(&p.y);
        assert!(!in_mid, "{name} at {p} is in the wall");
    }
}

#[test]
fn kinematic_battery_charges_on_a_pad_from_the_first_step() {
    let mut s = room(3.0, 2.0);
    s.physics = PhysicsMode::Kinematic;
    s.stations.push(StationSpec { name: "charger".into(), pos: (2.5, 1.0), radius: 0.3, rate: 5.0 });
    let mut parked = robot("parked", 2.5, 1.0, 0.0, ControllerSpec::Idle);
    parked.battery =
        BatterySpec { capacity: 100.0, initial: Some(50.0), idle_drain: 0.1, move_drain: 1.0, turn_drain: 2.0 };
    s.robots.push(parked);
    let mut app = app(s);
    let parked = named(&mut app, "parked");
    run_steps(&mut app, 100);
    let b: Battery = get(&app, parked);
    assert!(b.charging);
    assert!((b.charge - (50.0 + 100.0 * 0.02 * 5.0 - 100.0 * 0.02 * 0.1)).abs() < 0.05, "{}", b.charge);
}

#[test]
fn sonar_beam_stops_at_the_first_box() {
    let mut s = room(3.0, 2.0);
    s.sonars.push(SonarSpec {
        name: "sonar1".into(),
        pos: (1.5, 0.0),
        axis: 90.0,
        width: 0.1,
        range: None,
        through_walls: false,
    });
    s.boxes.push(BoxSpec { name: "b".into(), center: (1.5, 1.0), size: (0.4, 0.4), angle: 0.0 });
    let mut app = app(s);
    let sonar = named(&mut app, "sonar1");
    run_steps(&mut app, 2);
    assert!((get::<Sonar>(&app, sonar).beam_length - 0.8).abs() < 1e-3);
}

#[test]
fn camera_sees_what_is_in_its_cone_and_not_behind() {
    let mut s = room(4.0, 3.0);
    let pen = |name: &str, x: f32, y: f32| PenSpec { name: name.into(), pos: (x, y), radius: 0.03 };
    s.pens.extend([
        pen("ahead", 2.0, 1.5),
        pen("left", 1.8, 1.9),   // bearing +33.7°, inside the 90° cone
        pen("behind", 0.7, 1.5), // bearing 180°
        pen("wide", 1.3, 2.3),   // bearing +82.9°, outside the cone
        pen("far", 3.0, 1.5),    // beyond the 1.5 m range
        pen("hidden", 2.4, 1.0), // behind the box
    ]);
    s.boxes.push(BoxSpec { name: "screen".into(), center: (1.9, 1.2), size: (0.1, 0.2), angle: 0.0 });
    s.robots.push(robot("r", 1.2, 1.5, 0.0, ControllerSpec::Idle));
    s.robots.push(robot("other", 2.2, 2.0, 0.0, ControllerSpec::Idle));
    let mut app = app(s);
    let r = named(&mut app, "r");
    run_steps(&mut app, 3);
    let view: CameraView = get(&app, r);
    let names: Vec<String> = view.seen.iter().map(|s| app.world().get::<Name>(s.entity).unwrap().to_string()).collect();
    assert_eq!(names, vec!["left", "screen", "ahead", "other"], "nearest first");
    let ahead = view.seen.iter().find(|s| s.entity == named(&mut app, "ahead")).unwrap();
    assert!((ahead.distance - 0.8).abs() < 1e-4 && ahead.bearing.abs() < 1e-4);
    let left = view.seen.iter().find(|s| s.kind == Seeable::Pen && s.bearing > 0.1).unwrap();
    assert!((left.bearing.to_degrees() - 33.69).abs() < 0.05, "{}", left.bearing.to_degrees());
    assert_eq!(view.nearest(Seeable::Robot).map(|s| s.entity), Some(named(&mut app, "other")));
}

fn run_scene(path: &str, steps: u64, seed: Option<u64>) -> String {
    let (mut scene, _) = load_scene_file(&scene_path(path)).unwrap();
    if let Some(seed) = seed {
        scene.seed = seed;
    }
    let mut app = app(scene);
    run_steps(&mut app, steps);
    app.world().resource::<PerEnv<TrajectoryHash>>().only().hex()
}

#[test]
fn same_scene_and_seed_give_the_same_hash_and_another_seed_changes_it() {
    let a = run_scene("swarm.ron", 300, None);
    let b = run_scene("swarm.ron", 300, None);
    assert_eq!(a, b);
    let c = run_scene("swarm.ron", 300, Some(99));
    assert_ne!(a, c);
}

#[test]
fn the_hash_does_not_depend_on_how_steps_are_batched() {
    let (scene, _) = load_scene_file(&scene_path("pens.ron")).unwrap();
    let mut one = app(scene.clone());
    run_steps(&mut one, 240);
    let mut many = app(scene);
    for n in [1, 7, 100, 2, 130] {
        run_steps(&mut many, n);
    }
    assert_eq!(many.world().resource::<SimTime>().step, 240);
    assert_eq!(
        one.world().resource::<PerEnv<TrajectoryHash>>().only(),
        many.world().resource::<PerEnv<TrajectoryHash>>().only()
    );
}

#[test]
fn real_time_pacing_does_not_change_the_trajectory() {
    // The app's clock runs a varying number of steps per frame; the result must not change.
    let (scene, _) = load_scene_file(&scene_path("pens.ron")).unwrap();
    let mut paced = app(scene.clone());
    *paced.world_mut().resource_mut::<SimClock>() = SimClock::real_time();
    while paced.world().resource::<SimTime>().step < 150 {
        paced.update();
        std::thread::sleep(std::time::Duration::from_millis(3));
    }
    let steps = paced.world().resource::<SimTime>().step;
    let mut manual = app(scene);
    run_steps(&mut manual, steps);
    assert_eq!(
        paced.world().resource::<PerEnv<TrajectoryHash>>().only(),
        manual.world().resource::<PerEnv<TrajectoryHash>>().only()
    );
}

#[derive(Component)]
struct Tag<const N: usize>;

/// The app has a window, cameras and a panel: many more archetypes than a headless run, which
/// changes the order in which Bevy's queries meet archetypes. The trajectory must not care.
#[test]
fn the_trajectory_does_not_depend_on_other_archetypes_in_the_world() {
    let (scene, _) = load_scene_file(&scene_path("swarm.ron")).unwrap();
    let mut plain = app(scene.clone());
    run_steps(&mut plain, 300);
    let mut crowded = App::new();
    crowded.add_plugins((MinimalPlugins, TransformPlugin, crsim::SimPlugin));
    for i in 0..64u32 {
        let mut e = crowded.world_mut().spawn(Transform::default());
        // A different archetype for every i.
        if i & 1 != 0 {
            e.insert(Tag::<0>);
        }
        if i & 2 != 0 {
            e.insert(Tag::<1>);
        }
        if i & 4 != 0 {
            e.insert(Tag::<2>);
        }
        if i & 8 != 0 {
            e.insert(Tag::<3>);
        }
        if i & 16 != 0 {
            e.insert(Tag::<4>);
        }
        if i & 32 != 0 {
            e.insert(Name::new("x"));
        }
    }
    crowded.world_mut().resource_mut::<PendingScene>().request(scene, SceneSource::Generated);
    crowded.finish();
    crowded.cleanup();
    crowded.update();
    run_steps(&mut crowded, 300);
    assert_eq!(
        plain.world().resource::<PerEnv<TrajectoryHash>>().only(),
        crowded.world().resource::<PerEnv<TrajectoryHash>>().only()
    );
}

#[test]
fn reloading_a_scene_restarts_it_exactly() {
    let (scene, _) = load_scene_file(&scene_path("pens.ron")).unwrap();
    let mut fresh = app(scene.clone());
    run_steps(&mut fresh, 200);
    let mut reloaded = app(scene.clone());
    run_steps(&mut reloaded, 123);
    reloaded.world_mut().resource_mut::<PendingScene>().request(scene, SceneSource::Generated);
    reloaded.update();
    assert_eq!(reloaded.world().resource::<SimTime>().step, 0);
    run_steps(&mut reloaded, 200);
    assert_eq!(
        fresh.world().resource::<PerEnv<TrajectoryHash>>().only(),
        reloaded.world().resource::<PerEnv<TrajectoryHash>>().only()
    );
    let count = |app: &mut App| app.world_mut().query::<&Robot>().iter(app.world()).count();
    assert_eq!(count(&mut reloaded), 3);
}

/// Golden trajectory of the explorer room: fails on any change of behaviour. If a change is
/// intended, update the constant and say why in the commit.
/// In the style of avian's: two systems of the fixed schedules that touch the same data must
/// have a declared order between them, or the step's result would depend on the executor's
/// choice. Rapier's own systems are rapier's business and are left out among themselves. Checked
/// in a whole app and in an environment's world, which drops the systems it does not use (an
/// order that ran only through a dropped system would be lost there).
#[test]
fn no_two_systems_of_a_step_conflict_without_an_order() {
    for scene in ["pens.ron", "explorers.ron", "wenv.ron"] {
        let (mut s, _) = load_scene_file(&scene_path(scene)).unwrap();
        for r in &mut s.robots {
            if let ControllerSpec::Remote { http, ws, .. } = &mut r.controller {
                (*http, *ws) = (0, 0);
            }
        }
        let mut whole = app(s.clone());
        let mut trimmed = crsim::run::headless::headless_app_with(s, SceneSource::Generated, |app| {
            app.insert_resource(crsim::control::programs::InProcess);
        });
        crsim::sim::drop_unused_systems(trimmed.world_mut());
        for (kind, app) in [("app", &mut whole), ("environment world", &mut trimmed)] {
            run_steps(app, 1);
            for label in [crsim::sim::FixedSense.intern(), FixedUpdate.intern()] {
                let conflicts = unordered_conflicts(app.world(), label);
                assert!(
                    conflicts.is_empty(),
                    "{scene}, {kind}, {label:?}: systems without an order:\n{}",
                    conflicts.join("\n")
                );
            }
        }
    }
}

/// The pairs of systems of `label` in `world` that touch the same data with no order between
/// them, rapier's among themselves left out.
fn unordered_conflicts(world: &World, label: bevy::ecs::schedule::InternedScheduleLabel) -> Vec<String> {
    let schedule = world.resource::<Schedules>().get(label).expect("the fixed schedule ran");
    let names: std::collections::HashMap<_, String> =
        schedule.systems().expect("initialised").map(|(key, system)| (key, system.name().to_string())).collect();
    let rapier = |name: &str| name.starts_with("bevy_rapier2d::");
    schedule
        .graph()
        .conflicting_systems()
        .iter()
        .map(|(a, b, on)| {
            let on: Vec<String> =
                on.iter().map(|c| world.components().get_name(*c).map_or("?".into(), |n| n.to_string())).collect();
            (names[a].clone(), names[b].clone(), on)
        })
        .filter(|(a, b, _)| !(rapier(a) && rapier(b)))
        .map(|(a, b, on)| format!("{a} <-> {b} on {on:?}"))
        .collect()
}

#[test]
fn golden_hash_of_the_explorer_scene() {
    assert_eq!(run_scene("explorer.ron", 1000, None), GOLDEN_EXPLORER);
}

const GOLDEN_EXPLORER: &str = "9e281878f7cf4f0b";

/// Collectors and a swarm: cameras, bumps, grips, releases, the radio and contacts. Changed on
/// purpose when sensing moved to the spatial grid (it reads the bodies where the last step left
/// them from the very first step) and the per-frame removal sync went, and (with every golden
/// hash here) when headings and bearings came from `robot::angle_of` instead of libm's `atan2f`
/// (a difference of about one unit in the last place), and again when a body's rotation came
/// back from rapier through the half-angle formulas and its facing from its transform's x axis
/// instead of through an angle's sine and cosine (the same, to within 3.2e-7). The collectors'
/// changed once more when the behaviour network became their whole controller (#47: the search,
/// the back-off, the remembered box and the way to a station as nodes; subjects created at the
/// tick after the perception node asks).
#[test]
fn golden_hashes_of_the_collectors_and_the_swarm() {
    assert_eq!(run_scene("collectors.ron", 1000, None), GOLDEN_COLLECTORS);
    assert_eq!(run_scene("swarm.ron", 1000, None), GOLDEN_SWARM);
}

/// The swarm in the kinematic model: pins what the model does (walls, shared pushes, pens).
#[test]
fn golden_hash_of_the_kinematic_swarm() {
    let (mut scene, _) = load_scene_file(&scene_path("swarm.ron")).unwrap();
    scene.physics = PhysicsMode::Kinematic;
    let mut app = app(scene);
    run_steps(&mut app, 1000);
    assert_eq!(app.world().resource::<PerEnv<TrajectoryHash>>().only().hex(), GOLDEN_KINEMATIC_SWARM);
}

const GOLDEN_KINEMATIC_SWARM: &str = "8777b09239e3230f";

const GOLDEN_COLLECTORS: &str = "222d0c862b0fd2ec";
const GOLDEN_SWARM: &str = "57ef4ce952ab8a2a";

#[test]
fn run_report_counts_robots_and_distance() {
    let (scene, _) = load_scene_file(&scene_path("swarm.ron")).unwrap();
    let mut app = app(scene);
    run_steps(&mut app, 250);
    let report = build_report(app.world_mut(), 1.0);
    assert_eq!(report.steps, 250);
    assert!((report.sim_time_s - 5.0).abs() < 1e-9);
    assert_eq!(report.robots.len(), 64);
    assert_eq!(report.hash.len(), 16);
    // Wanderers cruise at 0.32 m/s: about 1.6 m in 5 s, less after bumps.
    let mean = report.robots.iter().map(|r| r.distance_m).sum::<f32>() / 64.0;
    assert!((0.8..=1.7).contains(&mean), "mean distance {mean}");
    let json = serde_json::to_value(&report).unwrap();
    for key in ["steps", "sim_time_s", "wall_time_s", "hash", "robots"] {
        assert!(json.get(key).is_some(), "{key}");
    }
    assert!(json["robots"][0].get("distance_m").is_some());
}

#[test]
fn hot_reload_applies_valid_edits_and_keeps_the_scene_on_errors() {
    use crsim::run::hot_reload;
    use crsim::scene::{ActiveScene, SceneStatus};
    let dir = common::Scratch::new("hot");
    let path = dir.join("room.ron");
    let text = |x: f32| {
        format!("(name: \"room\", arena: (width: 3.0, height: 2.0), robots: [(name: \"r\", pose: ({x}, 1.0, 0.0))])")
    };
    std::fs::write(&path, text(0.5)).unwrap();
    let (scene, _) = load_scene_file(&path).unwrap();
    let mut app = headless_app(scene, SceneSource::File(path.clone()));
    hot_reload::plugin(&mut app);
    run_steps(&mut app, 10);
    let wait_for_poll = |app: &mut App| {
        for _ in 0..8 {
            std::thread::sleep(std::time::Duration::from_millis(100));
            app.update();
        }
    };
    // A valid edit: the robot moves to its new pose and the run restarts.
    wait_for_poll(&mut app);
    std::fs::write(&path, text(2.0)).unwrap();
    wait_for_poll(&mut app);
    let r = named(&mut app, "r");
    assert!((position(&app, r).x - 2.0).abs() < 1e-4);
    assert_eq!(app.world().resource::<ActiveScene>().generation, 2);
    assert!(app.world().resource::<SceneStatus>().error.is_none());
    run_steps(&mut app, 25);
    // An invalid edit: an error naming the place, and the running scene goes on untouched.
    std::fs::write(
        &path,
        "(name: \"room\", arena: (width: 3.0, height: 2.0), robots: [(name: \"r\", pose: (9.0, 1.0, 0.0))])",
    )
    .unwrap();
    wait_for_poll(&mut app);
    let status = app.world().resource::<SceneStatus>().clone();
    let err = status.error.expect("error shown");
    assert!(err.contains("room.ron: robot \"r\": body at (9.00, 1.00) is outside the arena"), "{err}");
    assert_eq!(app.world().resource::<ActiveScene>().generation, 2);
    assert_eq!(app.world().resource::<SimTime>().step, 25);
    assert_eq!(named(&mut app, "r"), r);
    std::fs::write(&path, "(name: \"room\", arena: (width: 3.0 height: 2.0))").unwrap();
    wait_for_poll(&mut app);
    let err = app.world().resource::<SceneStatus>().error.clone().unwrap();
    assert!(err.contains("room.ron:1:"), "{err}");
}

#[test]
fn radio_parameters_from_the_scene_shape_delivery() {
    use crsim::comms::{DropCause, Payload, Radio, RadioIn, RadioOut, Target};
    let mut s = room(4.0, 2.0);
    s.robots.push(robot("a", 0.5, 1.0, 0.0, ControllerSpec::Idle));
    s.robots.push(robot("b", 1.5, 1.0, 0.0, ControllerSpec::Idle));
    let mut c = robot("c", 2.5, 1.0, 0.0, ControllerSpec::Idle);
    c.comms.outgoing = false;
    s.robots.push(c);
    s.comms.pairs.push(PairSpec {
        from: "a".into(),
        to: "b".into(),
        link: None,
        range: None,
        delay: Some(3),
        probability: None,
    });
    let mut app = app(s);
    let (a, b, c) = (named(&mut app, "a"), named(&mut app, "b"), named(&mut app, "c"));
    let say = |app: &mut App, e: Entity, target: Target, text: &str| {
        app.world_mut().get_mut::<RadioOut>(e).unwrap().0.push((target, Payload::Text(text.into())));
    };
    say(&mut app, a, Target::Robot("b".into()), "hello b");
    say(&mut app, c, Target::Broadcast, "anyone?");
    run_steps(&mut app, 1);
    // Sent at step 0 with the pair's delay of 3 steps.
    let mut got_at = None;
    for step in 1..6 {
        if let Some(m) = app.world().get::<RadioIn>(b).unwrap().0.first() {
            got_at = Some((step, m.content().clone(), m.sent_step, m.received_step));
            break;
        }
        run_steps(&mut app, 1);
    }
    assert_eq!(got_at, Some((4, Payload::Text("hello b".into()), 0, 3)));
    let stats = app.world().resource::<PerEnv<Radio>>().only().0.stats.clone();
    // c's outgoing link is off: its broadcast to a and b is dropped, twice.
    assert_eq!(stats.dropped.get(DropCause::LinkOff), 2);
    assert_eq!((stats.sent, stats.delivered, stats.in_flight), (3, 1, 0));
    assert!(app.world().get::<RadioIn>(a).unwrap().0.is_empty());
    assert!(app.world().get::<RadioIn>(c).unwrap().0.is_empty());
}

both_models!(a_sends_range_is_measured_where_the_robots_were_when_it_was_sent);
fn a_sends_range_is_measured_where_the_robots_were_when_it_was_sent(mode: PhysicsMode) {
    use crsim::comms::{DropCause, Payload, Radio, RadioIn, RadioOut, Target};
    // A 1 m radio. b starts 0.997 m from a and drives away (about 8 mm a step, at the robot's
    // top speed): in range when a sends, out of range once the physics step has moved it. c
    // starts 1.003 m from a on the other side and drives towards it: out of range when a sends,
    // in range after the step.
    let mut s = room(4.0, 2.0);
    s.comms.range = Some(1.0);
    s.robots.push(robot("a", 2.0, 1.0, 0.0, ControllerSpec::Idle));
    s.robots.push(robot("b", 2.997, 1.0, 0.0, ControllerSpec::Drive { linear: 0.5, angular: 0.0, lateral: 0.0 }));
    s.robots.push(robot("c", 0.997, 1.0, 0.0, ControllerSpec::Drive { linear: 0.5, angular: 0.0, lateral: 0.0 }));
    let mut app = app_in(s, mode);
    let (a, b, c) = (named(&mut app, "a"), named(&mut app, "b"), named(&mut app, "c"));
    app.world_mut().get_mut::<RadioOut>(a).unwrap().0.push((Target::Broadcast, Payload::Text("near?".into())));
    run_steps(&mut app, 1);
    let (ab, ac) = (position(&app, b).x - 2.0, 2.0 - position(&app, c).x);
    assert!(ab > 1.002 && ac < 0.998, "after the step b is {ab} m from a, c {ac} m");
    let inbox = &app.world().get::<RadioIn>(b).unwrap().0;
    assert_eq!(inbox.iter().map(|m| m.content().clone()).collect::<Vec<_>>(), [Payload::Text("near?".into())]);
    assert!(app.world().get::<RadioIn>(c).unwrap().0.is_empty());
    let stats = &app.world().resource::<PerEnv<Radio>>().only().0.stats;
    assert_eq!((stats.delivered, stats.dropped.get(DropCause::OutOfRange)), (1, 1), "{stats:?}");
}

#[test]
fn grips_and_releases_do_not_depend_on_how_many_steps_a_frame_runs() {
    // Collectors grip, release and grip pens again all the time; a pen released and gripped
    // within one frame once kept its collider on when the frame ran many steps.
    let (scene, _) = load_scene_file(&scene_path("collectors.ron")).unwrap();
    let hash_after = |chunks: &[u64]| {
        let mut app = app(scene.clone());
        for &n in chunks {
            run_steps(&mut app, n);
        }
        assert_eq!(app.world().resource::<SimTime>().step, 2500);
        app.world().resource::<PerEnv<TrajectoryHash>>().only().hex()
    };
    let by_500 = hash_after(&[500; 5]);
    assert_eq!(hash_after(&[100; 25]), by_500);
    assert_eq!(hash_after(&[1, 2499]), by_500);
}

#[test]
fn the_hash_is_the_same_on_one_thread_and_on_several() {
    // Enough robots for several chunks of the parallel passes; wanderers and network collectors
    // (bumps, cameras, grips, the radio).
    let threads = bevy::tasks::ComputeTaskPool::get_or_init(bevy::tasks::TaskPool::new).thread_num();
    for (network, physics) in [
        (false, PhysicsMode::Rigid),
        (true, PhysicsMode::Rigid),
        (false, PhysicsMode::Kinematic),
        (true, PhysicsMode::Kinematic),
    ] {
        let mut scene = crsim::run::bench::bench_scene(600, 5, network);
        scene.physics = physics;
        let hash_with = |threads: usize, policy: OffThread| {
            let mut app = app(scene.clone());
            app.insert_resource(Passes { threads });
            app.world_mut().resource_mut::<StepThread>().policy = policy;
            run_steps(&mut app, 300);
            let off_thread = app.world().resource::<StepThread>().off_thread;
            assert_eq!(off_thread > 0, policy == OffThread::Always, "{policy:?}: {off_thread} steps off the thread");
            let bumps = app.world_mut().query::<&Odometry>().iter(app.world()).map(|o| o.collisions).sum::<u32>();
            (app.world().resource::<PerEnv<TrajectoryHash>>().only().hex(), bumps)
        };
        let one = hash_with(1, OffThread::Never);
        assert!(one.1 > 0, "the robots bump into each other");
        for n in [2, 8] {
            assert_eq!(
                hash_with(n, OffThread::Auto),
                one,
                "{n} threads (the pool has {threads}), network {network}, {physics:?}"
            );
        }
        // Rapier's step on its own thread, while the radio delivers.
        assert_eq!(hash_with(2, OffThread::Always), one, "rapier on its own thread, network {network}, {physics:?}");
    }
    // A lossy radio with every robot broadcasting every step (more senders than a chunk) and
    // some robots sending to one robot: the same deliveries, drops and inboxes on any thread.
    use crsim::comms::{DropCause, Payload, Radio, RadioIn, RadioOut, Target};
    let mut scene = crsim::run::bench::bench_scene(600, 5, false);
    scene.comms.range = Some(2.0);
    scene.comms.probability = 0.7;
    scene.comms.inbox_capacity = 12;
    scene.comms.delay = 2;
    fn chatter(mut robots: Query<(&Robot, &mut RadioOut)>) {
        for (robot, mut out) in &mut robots {
            out.0.push((Target::Broadcast, Payload::Text(format!("from {}", robot.index))));
            if robot.index % 7 == 0 {
                out.0.push((Target::Robot("r3".into()), Payload::Text("to r3".into())));
            }
        }
    }
    let radio_with = |threads: usize, policy: OffThread| {
        let mut app = app(scene.clone());
        app.insert_resource(Passes { threads });
        app.world_mut().resource_mut::<StepThread>().policy = policy;
        app.add_systems(FixedUpdate, chatter.in_set(crsim::sim::ThinkSystems::Receive));
        run_steps(&mut app, 20);
        let stats = app.world().resource::<PerEnv<Radio>>().only().0.stats.clone();
        let mut inboxes: Vec<(String, Vec<(String, u64, Payload)>)> = app
            .world_mut()
            .query::<(&Name, &RadioIn)>()
            .iter(app.world())
            .map(|(n, i)| {
                (n.to_string(), i.0.iter().map(|m| (m.sender().to_string(), m.seq, m.content().clone())).collect())
            })
            .collect();
        inboxes.sort_by(|a, b| a.0.cmp(&b.0));
        (stats, inboxes)
    };
    let one = radio_with(1, OffThread::Never);
    let stats = &one.0;
    assert!(stats.dropped.get(DropCause::Lost) > 0 && stats.dropped.get(DropCause::InboxFull) > 0, "{stats:?}");
    assert!(stats.delivered > 30_000, "{stats:?}");
    for n in [2, 8] {
        assert!(radio_with(n, OffThread::Auto) == one, "radio on {n} threads");
    }
    assert!(radio_with(2, OffThread::Always) == one, "rapier on its own thread beside the radio");
}

/// The scene editor's link to the world, without a window: editing starts at step 0 and
/// pauses; a valid change rebuilds the world, an invalid one keeps the last valid world; saving
/// writes only the changed line and goes through the hot reload; a change on disk is read again.
#[test]
#[cfg(feature = "app")]
fn the_editor_shows_its_document_in_the_world_and_saves_through_the_hot_reload() {
    use crsim::run::hot_reload;
    use crsim::scene::edit::{Edit, ItemKind};
    use crsim::scene::{ActiveScene, PendingScene, SceneStatus};
    use crsim::sim::SimClock;
    use crsim::ui::editor::{self, Editor};
    let dir = common::Scratch::new("editor");
    let path = dir.join("room.ron");
    let original = std::fs::read_to_string(scene_path("explorer.ron")).unwrap();
    std::fs::write(&path, &original).unwrap();
    let (scene, _) = load_scene_file(&path).unwrap();
    let mut app = headless_app(scene, SceneSource::File(path.clone()));
    hot_reload::plugin(&mut app);
    editor::world_plugin(&mut app);
    run_steps(&mut app, 30);
    let start = |app: &mut App| {
        app.world_mut().resource_scope(|world, mut editor: Mut<Editor>| {
            let active = world.resource::<ActiveScene>().clone();
            editor::start_editing(&mut editor, &active, &mut world.resource_mut::<PendingScene>());
        });
    };
    start(&mut app);
    app.update();
    app.update();
    assert_eq!(app.world().resource::<SimTime>().step, 0, "editing starts from step 0");
    assert!(app.world().resource::<SimClock>().paused, "and the run pauses");
    let generation = app.world().resource::<ActiveScene>().generation;
    // Move the table: the world is rebuilt with it there.
    let with_editor = |app: &mut App, f: &mut dyn FnMut(&mut Editor)| f(&mut app.world_mut().resource_mut::<Editor>());
    with_editor(&mut app, &mut |ed| {
        let table = ed.doc.as_ref().unwrap().find(ItemKind::Box, "table").unwrap();
        ed.apply(Edit::Move { item: table, to: Vec2::new(2.5, 1.2) }, None);
    });
    app.update();
    app.update();
    let table = named(&mut app, "table");
    assert!(position(&app, table).distance(Vec2::new(2.5, 1.2)) < 1e-4);
    assert_eq!(app.world().resource::<ActiveScene>().generation, generation + 1);
    // A robot outside the arena: an error on it, and the world keeps the last valid scene.
    with_editor(&mut app, &mut |ed| {
        let robot = ed.doc.as_ref().unwrap().find(ItemKind::Robot, "explorer").unwrap();
        ed.apply(Edit::Move { item: robot, to: Vec2::new(9.0, 1.0) }, None);
        assert!(ed.errors.iter().any(|(i, e)| *i == Some(robot) && e.message.contains("outside the arena")));
    });
    app.update();
    assert_eq!(app.world().resource::<ActiveScene>().generation, generation + 1);
    with_editor(&mut app, &mut |ed| {
        ed.undo();
        assert!(ed.errors.is_empty());
    });
    app.update();
    // Save: only the table's line changes, and the hot reload loads the file.
    let wait_for_poll = |app: &mut App| {
        for _ in 0..8 {
            std::thread::sleep(std::time::Duration::from_millis(100));
            app.update();
        }
    };
    wait_for_poll(&mut app);
    app.world_mut().resource_scope(|world, mut ed: Mut<Editor>| {
        world.resource_scope(|world, mut status: Mut<SceneStatus>| {
            editor::save_from_panel(&mut ed, &mut status, &mut world.resource_mut::<PendingScene>());
        });
        assert_eq!(ed.message.as_ref().map(|m| m.1.clone()), Some(format!("saved {}", path.display())));
    });
    let saved = std::fs::read_to_string(&path).unwrap();
    let changed: Vec<&str> = saved.lines().filter(|l| !original.lines().any(|o| o == *l)).collect();
    assert_eq!(changed, ["        (name: \"table\", center: (2.5, 1.2), size: (0.6, 0.4)),"]);
    wait_for_poll(&mut app);
    assert!(app.world().resource::<SceneStatus>().error.is_none());
    assert_eq!(app.world().resource::<ActiveScene>().scene.boxes[0].center, (2.5, 1.2));
    // Someone else edits the file: the unchanged document reads it again.
    std::fs::write(&path, saved.replace("center: (3.2, 0.9)", "center: (3.2, 1.3)")).unwrap();
    wait_for_poll(&mut app);
    let ed = app.world().resource::<Editor>();
    assert_eq!(ed.doc.as_ref().unwrap().scene.boxes[2].center, (3.2, 1.3));
    assert!(ed.message.as_ref().is_some_and(|m| m.1.contains("changed on disk")), "{:?}", ed.message);
}

both_models!(a_loaded_scene_leaves_no_emptied_table_holding_room_for_its_robots);
/// Bevy keeps an emptied table's room: had every robot or pen been spawned before any went into
/// the physics world, the tables they were spawned in would hold room for all of them, empty,
/// for the whole run (26 MB at 10,000 network robots).
fn a_loaded_scene_leaves_no_emptied_table_holding_room_for_its_robots(mode: PhysicsMode) {
    let options = crsim::run::bench::BenchOptions {
        network: true,
        kinematic: mode == PhysicsMode::Kinematic,
        ..Default::default()
    };
    let scene = crsim::run::bench::bench_arena(600, 1, options);
    assert_eq!((scene.robots.len(), scene.pens.len()), (600, 225));
    let mut app = app(scene);
    run_steps(&mut app, 2);
    let world = app.world();
    let robots = world.iter_entities().filter(|e| e.contains::<Robot>()).count();
    assert_eq!(robots, 600);
    // Each body passed through its spawn table alone: an emptied table has room for a few.
    for table in world.storages().tables.iter() {
        if table.entity_count() == 0 {
            assert!(table.capacity() < 8, "an empty table keeps room for {} entities", table.capacity());
        }
    }
}

/// Keeps the events of every step a recording gets.
struct EventSink(std::sync::Arc<std::sync::Mutex<Vec<(u64, String)>>>);

impl crsim::record::Sink for EventSink {
    fn write(&mut self, record: &std::sync::Arc<crsim::record::format::Record>) -> Result<(), String> {
        if let crsim::record::format::Body::Events(e) = &record.body {
            self.0.lock().unwrap().extend(e.events.iter().map(|ev| (e.step, ev.to_string())));
        }
        Ok(())
    }
    fn finish(&mut self, _: &crsim::record::format::EndMeta) -> Result<(), String> {
        Ok(())
    }
    fn name(&self) -> String {
        "events".into()
    }
}

#[test]
fn the_recorder_observes_skills_only_while_it_records_from_its_first_step_on() {
    use crsim::record::{Recorder, SkillObserver};
    let mut app = app(gripper_scene());
    let r = named(&mut app, "r");
    let observers =
        |app: &mut App| app.world_mut().query_filtered::<(), With<SkillObserver>>().iter(app.world()).count();
    run_steps(&mut app, 2);
    assert_eq!(observers(&mut app), 0, "nothing records, nothing observes skills");
    // Started while nothing records: announced to no one.
    command(&mut app, r, 0.1, false);
    run_steps(&mut app, 1);
    let events = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    app.world_mut().resource_mut::<Recorder>().add_sink(Box::new(EventSink(events.clone())));
    command(&mut app, r, 0.2, false);
    run_steps(&mut app, 1);
    assert_eq!(observers(&mut app), 2);
    // Every note of the first step recorded, in order: the observers were there before the skills ran.
    let got = std::mem::take(&mut *events.lock().unwrap());
    let expected = [
        "r: Velocity (move) replaced",
        "r started Velocity (move)",
        "r started Release (grip)",
        "r: Release (grip) completed",
    ];
    assert_eq!(got, expected.map(|e| (3, e.to_string())));
    app.world_mut().resource_mut::<Recorder>().finish(false);
    run_steps(&mut app, 1);
    assert_eq!(observers(&mut app), 0, "the recording ended");
    command(&mut app, r, 0.3, false);
    run_steps(&mut app, 1);
    assert!(events.lock().unwrap().is_empty(), "nothing is recorded once the recording ended");
}

both_models!(a_holonomic_robot_moves_sideways_through_the_bot_link_and_a_differential_one_does_not);
fn a_holonomic_robot_moves_sideways_through_the_bot_link_and_a_differential_one_does_not(mode: PhysicsMode) {
    // In the process and as real UDP datagrams: the bot manager's packets carry the sideways
    // speed (an update-all packet with sideways slots) to the bot's end.
    for transport in [Transport::InProcess, Transport::Udp] {
        let mut s = room(3.0, 3.0);
        s.botlink.transport = transport;
        let sideways = ControllerSpec::Drive { linear: 0.0, angular: 0.0, lateral: 0.2 };
        let mut omni = robot("omni", 1.0, 1.0, 0.0, sideways.clone());
        omni.drive = DriveSpec::Holonomic { max_lateral: 0.15 };
        s.robots.push(omni);
        s.robots.push(robot("diff", 2.0, 1.0, 0.0, sideways));
        let mut app = app_in(s, mode);
        let (omni, diff) = (named(&mut app, "omni"), named(&mut app, "diff"));
        run_steps(&mut app, 5);
        let start = position(&app, omni);
        run_steps(&mut app, 100);
        let (p, heading) = common::pose_of(&app, omni);
        // To its left (+y at heading 0), at its own limit of 0.15 m/s: 0.3 m in 2 s.
        assert!((p.y - start.y - 0.3).abs() < 0.01 && (p.x - 1.0).abs() < 1e-3, "{transport:?}: {start} to {p}");
        assert!(heading.abs() < 1e-4, "{heading}");
        assert!((get::<Odometry>(&app, omni).distance - (p.y - 1.0)).abs() < 0.01);
        let q = position(&app, diff);
        assert!(
            (q - Vec2::new(2.0, 1.0)).length() < 1e-4,
            "{transport:?}: a differential drive has no sideways wheels: {q}"
        );
    }
}

#[test]
fn robots_of_a_kind_have_its_body_drive_sensors_and_controller_and_the_run_repeats() {
    use crsim::robot::registry::{Carried, SensorRegistry};
    let scene = common::shipped_scene("kinds.ron");
    let kinds: Vec<&str> = scene.robots.iter().map(|r| r.kind.as_deref().unwrap_or("-")).collect();
    assert_eq!(kinds, ["scout", "scout", "carrier", "relay"]);
    let run = |steps| {
        let mut app = app(scene.clone());
        run_steps(&mut app, steps);
        app
    };
    let mut app = run(1500);
    let (scout, carrier, relay) = (named(&mut app, "scout1"), named(&mut app, "carrier"), named(&mut app, "relay"));
    assert_eq!(get::<Robot>(&app, scout).radius, 0.07);
    assert_eq!(get::<Robot>(&app, carrier).max_lateral, 0.2);
    // The scouts carry the sensors their kind lists, in its order.
    let sensors = app.world().resource::<SensorRegistry>().clone();
    let carried: Vec<&str> = get::<Carried>(&app, scout).0.iter().map(|&id| sensors.get(id).name()).collect();
    assert_eq!(carried, ["pose", "bump", "range", "radio", "battery"]);
    assert!(get::<RangeScan>(&app, scout).distances.len() == 16);
    // The relay strafes up the west wall (it faces east), the scouts wander.
    let p = position(&app, relay);
    assert!((0.2..0.5).contains(&p.x) && p.y > 1.5, "relay at {p}: 0.06 m/s up for 30 s from (0.3, 0.5)");
    assert!(get::<Odometry>(&app, scout).distance > 3.0);
    // The carrier's behaviour network drives it about the room collecting pens.
    assert!(get::<Odometry>(&app, carrier).distance > 1.0);
    let hash = |app: &App| app.world().resource::<PerEnv<TrajectoryHash>>().only().hex();
    assert_eq!(hash(&app), hash(&run(1500)), "the same run twice");
}
