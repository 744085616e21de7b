//! Headless tests of the behaviour network (seed 001) driving robots: the pens scene collected
//! end to end, charging taking over at low power, the network growing and shrinking with what
//! the camera sees, collectors' claims over the radio, and the structure file's errors.

mod common;

use bevy::prelude::*;

use common::{named, scene_path};
use crsim::control::network::{CollectProgress, NetworkController, Pursuing, SubjectKind, dump_network};
use crsim::robot::{Battery, PowerSensor};
use crsim::run::headless::{headless_app, run_steps};
use crsim::run::report::build_report;
use crsim::scene::schema::*;
use crsim::scene::{SceneSource, load_scene_file};

/// The text of the shipped structure file.
fn shipped_network() -> String {
    std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("assets").join("network.ron"))
        .unwrap()
}

fn controller(app: &App, e: Entity) -> &NetworkController {
    app.world().get::<NetworkController>(e).expect("a network robot")
}

/// The whole pens scene, headless: every pen ends in a box within two simulated minutes, no
/// battery runs empty, and the `collect` metrics say so.
#[test]
fn the_pens_scene_boxes_every_pen() {
    let (scene, _) = load_scene_file(&scene_path("pens.ron")).unwrap();
    let mut app = headless_app(scene, SceneSource::Generated);
    let robots: Vec<Entity> = ["alpha", "beta", "gamma"].iter().map(|n| named(&mut app, n)).collect();
    let (mut most_nodes, mut fewest_nodes) = (0, usize::MAX);
    for _ in 0..60 {
        run_steps(&mut app, 100);
        for &r in &robots {
            let net = &controller(&app, r).brain.net;
            net.check().unwrap();
            most_nodes = most_nodes.max(net.nodes().count());
            fewest_nodes = fewest_nodes.min(net.nodes().count());
        }
        if app.world().resource::<crsim::sim::PerEnv<CollectProgress>>().only().all_boxed_step.is_some() {
            break;
        }
    }
    // Subjects came and went: the full network of a pen, a box and the station at times; at
    // others the static seven and the search with the control and actuator nodes it drives.
    assert!(most_nodes >= 16, "{most_nodes}");
    assert_eq!(fewest_nodes, 12);
    let report = build_report(app.world_mut(), 0.0);
    let collect = &report.sections["collect"];
    assert_eq!(collect["pens_total"], 8);
    assert_eq!(collect["pens_boxed"], 8, "{collect:#}");
    assert_eq!(collect["batteries_depleted"], 0);
    let seconds = collect["all_boxed_s"].as_f64().unwrap();
    assert!(seconds < 120.0, "all pens boxed after {seconds} s");
    let boxed: u64 = collect["robots"].as_array().unwrap().iter().map(|r| r["boxed"].as_u64().unwrap()).sum();
    assert_eq!(boxed, 8, "every pen was boxed by a network robot");
    for &r in &robots {
        assert_eq!(app.world().get::<Battery>(r).unwrap().depletions, 0);
    }
}

/// alpha starts at 45% charge: when it falls to 30% Charging takes over, it drives to the
/// station, charges to 95%, and goes back to collecting (it boxes a pen afterwards).
#[test]
fn charging_takes_over_at_low_power_and_collecting_resumes() {
    let (scene, _) = load_scene_file(&scene_path("pens.ron")).unwrap();
    let mut app = headless_app(scene, SceneSource::Generated);
    let alpha = named(&mut app, "alpha");
    let mut phase = 0;
    let mut boxed_before = 0;
    for step in 0..6000 {
        run_steps(&mut app, 1);
        let nc = controller(&app, alpha);
        let power = *app.world().get::<PowerSensor>(alpha).unwrap();
        match phase {
            0 if nc.brain.charging => {
                assert!(power.level <= 0.3 + 1e-3, "charging starts at the low mark, level {}", power.level);
                let net = &nc.brain.net;
                assert_eq!(net.get("Charging").map(|n| n.degree), Some(1.0));
                assert_eq!(net.get("Collecting").map(|n| n.degree), Some(0.0));
                phase = 1;
            }
            1 if power.charging => {
                assert!(nc.brain.charging);
                boxed_before = nc.stats.boxed;
                phase = 2;
            }
            2 if !nc.brain.charging => {
                assert!(power.level >= 0.95 - 1e-3, "leaves the station charged, level {}", power.level);
                assert_eq!(nc.stats.charging_visits, 1);
                phase = 3;
            }
            3 if nc.stats.boxed > boxed_before => {
                phase = 4;
                println!("alpha boxed a pen after recharging, step {step}");
                break;
            }
            _ => {}
        }
        // On its way and on the station, Station leads once it is in view.
        if phase == 2 && step % 10 == 0 {
            let nc = controller(&app, alpha);
            if nc.brain.has_subject(SubjectKind::Station) && nc.brain.leader().is_some() {
                assert_eq!(nc.brain.leader(), Some(SubjectKind::Station));
            }
        }
    }
    assert_eq!(phase, 4, "alpha went through low power, charging and collecting again");
    assert_eq!(app.world().get::<Battery>(alpha).unwrap().depletions, 0);
}

/// Two collectors that see the same pen: the nearer is 0.6 m from it, the other 0.8 m (clear of
/// the wall, so that neither starts with a bump).
fn two_after_one_pen(link: bool) -> SceneFile {
    let mut s = SceneFile::empty("claims", 3.0, 2.0);
    s.comms.link = link;
    s.pens.push(PenSpec { name: "pen".into(), pos: (1.5, 1.0), radius: 0.02 });
    s.boxes.push(BoxSpec { name: "box".into(), center: (2.7, 1.7), size: (0.4, 0.4), angle: 0.0 });
    let mut near = RobotSpec::new("near", 0.9, 1.0, 0.0);
    near.controller = ControllerSpec::network();
    let mut far = RobotSpec::new("far", 1.5, 0.2, 90.0);
    far.controller = ControllerSpec::network();
    s.robots = vec![near, far];
    s
}

/// With the radio, the farther of two collectors hears the nearer one's claim and gives the pen
/// up; with the link off both go for it until one has it.
#[test]
fn collectors_announce_their_pen_and_others_pick_another() {
    let run = |link: bool| {
        let mut app = headless_app(two_after_one_pen(link), SceneSource::Generated);
        let far = named(&mut app, "far");
        run_steps(&mut app, 150);
        let duplicate = app.world().resource::<crsim::sim::PerEnv<CollectProgress>>().only().duplicate_steps;
        (controller(&app, far).stats, duplicate)
    };
    let (with_radio, dup_radio) = run(true);
    let (without, dup_off) = run(false);
    assert!(with_radio.yielded >= 1, "{with_radio:?}");
    assert_eq!(with_radio.contested, 0, "{with_radio:?}");
    assert_eq!(without.yielded, 0);
    assert_eq!(without.claims_sent.min(1), 1, "far claims the pen too, unheard");
    assert!(dup_off > dup_radio + 10, "duplicated pursuit: {dup_off} robot-steps without radio, {dup_radio} with");
}

/// A step in which two network robots go for the same pen (each robot's `Pursuing`) counts once
/// in the duplicated pursuit; a robot that no longer thinks with the network is not counted,
/// whatever its `Pursuing` last said.
#[test]
fn robots_after_the_same_pen_count_while_they_think_with_the_network() {
    let mut app = headless_app(two_after_one_pen(false), SceneSource::Generated);
    let (near, far, pen) = (named(&mut app, "near"), named(&mut app, "far"), named(&mut app, "pen"));
    let after = |app: &App, e: Entity| app.world().get::<Pursuing>(e).copied();
    let duplicate = |app: &App| app.world().resource::<crsim::sim::PerEnv<CollectProgress>>().only().duplicate_steps;
    let mut both = None;
    for step in 0..150 {
        let before = duplicate(&app);
        run_steps(&mut app, 1);
        let (a, b) = (after(&app, near), after(&app, far));
        let counted = duplicate(&app) - before;
        if a == Some(Pursuing(Some(pen))) && b == a {
            assert_eq!(counted, 1, "step {step}: both after the pen count once");
            both = Some(step);
            break;
        }
        assert_eq!(counted, 0, "step {step}: {a:?} {b:?}");
    }
    assert!(both.is_some(), "without the radio both go for the pen");
    app.world_mut().entity_mut(far).remove::<NetworkController>();
    let before = duplicate(&app);
    run_steps(&mut app, 1);
    assert_eq!(after(&app, far), Some(Pursuing(Some(pen))), "far's last word stays on it");
    assert_eq!(after(&app, near), Some(Pursuing(Some(pen))), "near still goes for it");
    assert_eq!(duplicate(&app), before, "but far thinks with the network no more");
}

#[test]
fn the_network_dump_is_in_the_seeds_format() {
    let (scene, _) = load_scene_file(&scene_path("pens.ron")).unwrap();
    let mut app = headless_app(scene, SceneSource::Generated);
    run_steps(&mut app, 200);
    let dump = dump_network(app.world_mut(), "gamma").unwrap();
    assert!(dump.starts_with("network of gamma after 200 ticks"), "{dump}");
    assert!(dump.contains("The Task Collection"), "{dump}");
    assert!(dump.lines().any(|l| l.starts_with("Charging (S:0.00)")), "{dump}");
    assert!(dump.lines().any(|l| l.starts_with("Leading Move: ")), "{dump}");
    assert!(dump_network(app.world_mut(), "nobody").is_none());
}

/// A scene naming a structure file with a bad entry does not load; the error names the
/// scene's `network` item, the structure file and the bad link.
#[test]
fn a_bad_structure_file_is_a_scene_error() {
    let dir = common::Scratch::new("structure");
    let shipped = shipped_network();
    std::fs::write(
        dir.join("net.ron"),
        shipped.replace("(from: \"Move\", to: \"Speed\"", "(from: \"Move\", to: \"Gripe\""),
    )
    .unwrap();
    let scene = "SceneFile(name: \"n\", arena: (width: 2.0, height: 2.0), network: \"net.ron\")";
    std::fs::write(dir.join("scene.ron"), scene).unwrap();
    let err = load_scene_file(&dir.join("scene.ron")).unwrap_err().to_string();
    assert!(err.contains("network:"), "{err}");
    assert!(err.contains("net.ron"), "{err}");
    assert!(err.contains("link \"Move\" -> \"Gripe\": \"Gripe\" is not a node"), "{err}");
    // A good one loads and is what the robots run.
    std::fs::write(dir.join("net.ron"), shipped.replace("weight: -2.0", "weight: -3.0")).unwrap();
    let (s, _) = load_scene_file(&dir.join("scene.ron")).unwrap();
    let structure = s.network_structure.unwrap();
    assert!(structure.links.iter().any(|l| l.weight == -3.0));
}

/// The app reloads the scene when the structure file it names is saved: a valid edit reaches the
/// robots, a bad one is shown and the running scene goes on.
#[test]
fn editing_the_structure_file_reloads_the_scene() {
    use crsim::control::network::SceneBlueprint;
    use crsim::run::hot_reload;
    use crsim::scene::{ActiveScene, SceneStatus};
    let dir = common::Scratch::new("structure-hot");
    let shipped = shipped_network();
    std::fs::write(dir.join("net.ron"), &shipped).unwrap();
    let path = dir.join("scene.ron");
    std::fs::write(
        &path,
        "(name: \"n\", arena: (width: 2.0, height: 2.0), network: \"net.ron\", \
         robots: [(name: \"r\", pose: (1.0, 1.0, 0.0), controller: Network())])",
    )
    .unwrap();
    let (scene, _) = load_scene_file(&path).unwrap();
    let mut app = headless_app(scene, SceneSource::File(path.clone()));
    hot_reload::plugin(&mut app);
    let wait_for_poll = |app: &mut App| {
        for _ in 0..8 {
            std::thread::sleep(std::time::Duration::from_millis(100));
            app.update();
        }
    };
    wait_for_poll(&mut app);
    let pen_weight = |app: &App| {
        let s = &app.world().resource::<SceneBlueprint>().0.catalog.structure;
        s.links.iter().find(|l| l.from == "GripSensor" && l.to == "Pen").unwrap().weight
    };
    assert_eq!(pen_weight(&app), -2.0);
    std::fs::write(dir.join("net.ron"), shipped.replace("weight: -2.0", "weight: -4.0")).unwrap();
    wait_for_poll(&mut app);
    assert_eq!(app.world().resource::<ActiveScene>().generation, 2);
    assert_eq!(pen_weight(&app), -4.0);
    run_steps(&mut app, 10);
    std::fs::write(dir.join("net.ron"), shipped.replace("kind: Drive, weight: 1.0", "kind: Drive, weight: inf"))
        .unwrap();
    wait_for_poll(&mut app);
    let err = app.world().resource::<SceneStatus>().error.clone().expect("error shown");
    assert!(err.contains("network:") && err.contains("weight must be a finite number"), "{err}");
    assert_eq!(app.world().resource::<ActiveScene>().generation, 2);
    assert_eq!(app.world().resource::<crsim::sim::SimTime>().step, 10);
}

/// The shipped lossy radio: claims are lost, arrive late, stay out of range, and one pair's
/// link is off; every message is accounted for under its cause.
#[test]
fn the_lossy_scene_shows_every_kind_of_drop() {
    let (scene, _) = load_scene_file(&scene_path("lossy.ron")).unwrap();
    let mut app = headless_app(scene, SceneSource::Generated);
    run_steps(&mut app, 3000);
    let report = build_report(app.world_mut(), 0.0);
    let c = &report.sections["comms"];
    let dropped = |cause: &str| c["dropped"][cause].as_u64().unwrap();
    assert!(dropped("lost") > 0, "{c}");
    assert!(dropped("out_of_range") > 0, "{c}");
    assert!(dropped("link_off") > 0, "{c}");
    assert!(c["mean_latency_steps"].as_f64().unwrap() >= 10.0, "{c}");
    assert!(c["max_latency_steps"].as_u64().unwrap() >= 50, "{c}");
    let sent = c["sent"].as_u64().unwrap();
    assert_eq!(
        sent,
        c["delivered"].as_u64().unwrap() + c["in_flight"].as_u64().unwrap() + c["dropped_total"].as_u64().unwrap()
    );
}

/// Twelve simulated minutes of the pens scene (all pens are boxed within the first minute, so
/// the robots then have nothing to collect): recharging keeps every robot alive.
#[test]
fn in_a_long_run_no_battery_runs_dry() {
    let (scene, _) = load_scene_file(&scene_path("pens.ron")).unwrap();
    let mut app = headless_app(scene, SceneSource::Generated);
    run_steps(&mut app, 36_000);
    let report = build_report(app.world_mut(), 0.0);
    assert_eq!(report.sections["collect"]["batteries_depleted"], 0, "{}", report.sections["collect"]);
    for r in &report.robots {
        assert_eq!(r.battery_depletions, 0, "{}", r.name);
    }
    assert!(report.sections["collect"]["charging_visits"].as_u64().unwrap() >= 6);
}

/// Two robots with nothing to collect share one station at the far end of a room, behind a
/// partition they must go round: both keep charging there, and neither battery runs dry.
#[test]
fn a_far_station_behind_a_partition_shared_by_two_robots_keeps_both_alive() {
    let mut s = SceneFile::empty("far", 10.0, 3.0);
    s.walls.push(WallSpec { name: "partition".into(), from: (5.0, 0.0), to: (5.0, 2.2), thickness: 0.1 });
    s.stations.push(StationSpec { name: "charger".into(), pos: (9.6, 0.5), radius: 0.3, rate: 2.0 });
    for (i, (x, y)) in [(0.5, 0.5), (0.5, 1.5)].into_iter().enumerate() {
        let mut r = RobotSpec::new(format!("r{i}"), x, y, 0.0);
        r.battery = BatterySpec { capacity: 20.0, initial: Some(10.0), ..BatterySpec::default() };
        r.controller = ControllerSpec::network();
        s.robots.push(r);
    }
    let mut app = headless_app(s, SceneSource::Generated);
    run_steps(&mut app, 45_000);
    let report = build_report(app.world_mut(), 0.0);
    for r in &report.robots {
        assert_eq!(r.battery_depletions, 0, "{} ran dry: {}", r.name, report.sections["collect"]);
    }
    for r in report.sections["collect"]["robots"].as_array().unwrap() {
        assert!(r["charging_visits"].as_u64().unwrap() >= 2, "{r}");
    }
}

/// A structure asking for two Pen nodes ("Pen 2" with the links of "Pen"): the robots track two
/// pens at once at times, and the pens scene is still collected.
#[test]
fn a_structure_with_two_pen_nodes_collects_the_pens_scene() {
    let (mut scene, _) = load_scene_file(&scene_path("pens.ron")).unwrap();
    let structure = crsim::scene::network::with_copy_of(crsim::scene::network::default_network(), "Pen", "Pen 2");
    scene.network_structure = Some(structure);
    let mut app = headless_app(scene, SceneSource::Generated);
    let robots: Vec<Entity> = ["alpha", "beta", "gamma"].iter().map(|n| named(&mut app, n)).collect();
    let mut both = false;
    for _ in 0..120 {
        run_steps(&mut app, 100);
        for &r in &robots {
            let net = &controller(&app, r).brain.net;
            net.check().unwrap();
            both |= net.get("Pen").is_some() && net.get("Pen 2").is_some();
        }
        if app.world().resource::<crsim::sim::PerEnv<CollectProgress>>().only().all_boxed_step.is_some() {
            break;
        }
    }
    assert!(both, "no robot had two pen nodes at once");
    let progress = app.world().resource::<crsim::sim::PerEnv<CollectProgress>>().only();
    assert_eq!((progress.pens_boxed, progress.pens_total), (8, 8));
}

/// Seed 001's walkthrough on `scenes/seed001.ron` (the seed's tables alone): the static nodes
/// unconnected at the start; the Camera's creating requests for the pen and the station it sees,
/// and the control and actuator nodes their managers create behind them; the station leaving
/// view and its subject removed; the pen gripped, no longer seen, and its subject removed with
/// the nodes only it fed; every command an actuator node's output, and none once nothing is seen.
#[test]
fn the_seeds_walkthrough_step_by_step() {
    use crsim::control::network::{Signal, SubjectRequest};
    let (scene, _) = load_scene_file(&scene_path("seed001.ron")).unwrap();
    let mut app = headless_app(scene, SceneSource::Generated);
    let walker = named(&mut app, "walker");
    let statics = vec!["Camera", "Charging", "Collecting", "GripSensor", "Power"];
    run_steps(&mut app, 1);
    {
        let nc = controller(&app, walker);
        let net = &nc.brain.net;
        assert_eq!(net.names(), statics, "the seed's incomplete network");
        assert!(net.links.is_empty());
        let id = |n: &str| net.catalog().id(n).unwrap();
        let asks = |n: &str| SubjectRequest::new(Some(id("Camera")), id(n));
        assert_eq!(nc.brain.sent, vec![asks("Pen"), asks("Station")], "the Camera sees a pen and a station");
    }
    run_steps(&mut app, 1);
    {
        let net = &controller(&app, walker).brain.net;
        let mut full = statics.clone();
        full.extend(["Angle", "Grip", "Gripper", "Move", "Pen", "Speed", "Station", "Turn"]);
        full.sort_unstable();
        assert_eq!(net.names(), full);
        net.check().unwrap();
        // The managers: Subject created two nodes; Control and Actuator three each, for requests;
        // Task forwarded Collecting's and Charging's, Perception four (Camera two, GripSensor, Power).
        let m = &net.managers;
        assert_eq!((m[2].created, m[3].created, m[4].created), (2, 3, 3));
        assert_eq!((m[0].forwarded, m[1].forwarded), (2, 4));
    }
    let (mut station_gone, mut gripped, mut pen_gone) = (None, None, None);
    let mut still_at = None;
    for step in 2..400u32 {
        run_steps(&mut app, 1);
        let nc = controller(&app, walker);
        let net = &nc.brain.net;
        // Every command is an actuator node's output.
        let level = |n: &str| match net.get(n).map(|n| n.signal) {
            Some(Signal::Level(x)) => Some(x),
            _ => None,
        };
        assert_eq!((nc.last.speed, nc.last.turn), (level("Speed"), level("Angle")), "step {step}");
        if station_gone.is_none() && net.get("Station").is_none() {
            assert!(net.get("Pen").is_some() && net.get("Move").is_some(), "Pen still feeds the control nodes");
            station_gone = Some(step);
        }
        let holding = app.world().get::<crsim::robot::GripSensor>(walker).unwrap().holding.is_some();
        if gripped.is_none() && holding {
            gripped = Some(step);
        }
        if gripped.is_some() && pen_gone.is_none() && net.get("Pen").is_none() {
            assert_eq!(net.names(), statics, "the nodes only Pen fed went with it");
            assert_eq!(nc.last.speed, None);
            pen_gone = Some(step);
        }
        if pen_gone.is_some() && still_at.is_none() {
            still_at = app.world().get::<Transform>(walker).map(|t| t.translation);
        }
    }
    let (station_gone, gripped, pen_gone) = (station_gone.unwrap(), gripped.unwrap(), pen_gone.unwrap());
    assert!(station_gone < gripped && gripped < pen_gone, "{station_gone} {gripped} {pen_gone}");
    let now = app.world().get::<Transform>(walker).unwrap().translation;
    assert!(now.distance(still_at.unwrap()) < 1e-3, "with nothing in view the seed's robot stands still");
}
