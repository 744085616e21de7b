//! Robot programs outside crsim, with a client written here: registration, waiting for robots,
//! lock-step order, every error case, disconnecting and coming back, late programs, the radio
//! with loss and delay, reset, and determinism run after run.

mod common;

use std::io::BufRead;
use std::net::SocketAddr;
use std::thread;
use std::time::{Duration, Instant};

use bevy::prelude::*;
use serde_json::{Value, json};

use common::{Prog, circles, named, position, robot, room, scene_path};
use crsim::control::programs::{Program, ProgramServer};
use crsim::run::headless::{headless_app, run_steps};
use crsim::run::report::build_report;
use crsim::scene::SceneSource;
use crsim::scene::schema::*;
use crsim::sim::{SimTime, StepGate};

/// A room with program robots `a`, `b` and `c`, and a wanderer `w`.
fn program_room() -> SceneFile {
    let mut s = room(4.0, 2.0);
    for (i, name) in ["a", "b", "c"].into_iter().enumerate() {
        s.robots.push(robot(name, 0.5 + i as f32, 0.5, 90.0, ControllerSpec::Program {}));
    }
    s.robots.push(robot("w", 3.5, 1.5, 0.0, ControllerSpec::Wander { speed: 0.5 }));
    s.programs.port = 0;
    s.programs.step_timeout = 2.0;
    s
}

fn server_addr(app: &App) -> SocketAddr {
    app.world().resource::<ProgramServer>().local.expect("the program server listens")
}

/// Steps the app, one step an update, while `client` runs on its own thread; returns what the
/// client returns.
fn drive<T: Send + 'static>(app: &mut App, client: impl FnOnce() -> T + Send + 'static) -> T {
    let handle = thread::spawn(client);
    let start = Instant::now();
    while !handle.is_finished() {
        run_steps(app, 1);
        thread::sleep(Duration::from_micros(200));
        assert!(start.elapsed() < Duration::from_secs(120), "the client did not finish");
    }
    handle.join().unwrap()
}

#[test]
fn robots_register_one_or_many_and_every_refusal_names_the_robot() {
    let mut app = headless_app(program_room(), SceneSource::Generated);
    let addr = server_addr(&app);
    let (hello, first, second) = drive(&mut app, move || {
        let (_p, hello, first) = Prog::register(addr, json!([{"name": "a"}, {"name": "b", "comm": "broadcast"}]));
        let (_q, _, second) =
            Prog::register(addr, json!([{"name": "a"}, {"name": "w"}, {"name": "ghost"}, {"name": "c"}]));
        (hello, first, second)
    });
    assert_eq!(hello["type"], "hello");
    assert_eq!(hello["protocol"], "crsim-programs");
    assert_eq!(hello["version"], 1);
    assert_eq!(hello["arena"], json!([4.0, 2.0]));
    let offered: Vec<&str> = hello["robots"].as_array().unwrap().iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert_eq!(offered, ["a", "b", "c"]);
    assert_eq!(first, json!({"type": "registered", "robots": ["a", "b"], "errors": []}));
    assert_eq!(second["robots"], json!(["c"]));
    let errors: Vec<String> =
        second["errors"].as_array().unwrap().iter().map(|e| e["error"].as_str().unwrap().to_string()).collect();
    assert_eq!(
        errors,
        [
            "robot \"a\" is already driven by another program",
            "robot \"w\" is not a program robot (its controller is Wander); give it controller: Program()",
            "robot \"ghost\" is not in the scene",
        ]
    );
}

#[test]
fn step_zero_waits_for_every_program_robot() {
    let mut app = headless_app(program_room(), SceneSource::Generated);
    let addr = server_addr(&app);
    for _ in 0..20 {
        run_steps(&mut app, 5);
    }
    assert_eq!(app.world().resource::<SimTime>().step, 0, "no step before the robots are registered");
    assert_eq!(app.world().resource::<StepGate>().waiting_for, ["a", "b", "c"]);
    let steps = drive(&mut app, move || {
        let (mut p, _, _) = Prog::register(addr, json!([{"name": "a"}, {"name": "b"}]));
        let (mut q, _, _) = Prog::register(addr, json!([{"name": "c"}]));
        let mut steps = Vec::new();
        for _ in 0..3 {
            for prog in [&mut p, &mut q] {
                let s = prog.step();
                prog.send(json!({"type": "act", "step": s["step"]}));
                steps.push(s["step"].as_u64().unwrap());
            }
        }
        steps
    });
    assert_eq!(steps, [0, 0, 1, 1, 2, 2]);
    assert!(!app.world().resource::<StepGate>().held());
}

#[test]
fn in_lock_step_readings_come_every_step_and_actions_drive_the_robot() {
    let mut app = headless_app(program_room(), SceneSource::Generated);
    let addr = server_addr(&app);
    let frames = drive(&mut app, move || {
        let (mut p, _, _) = Prog::register(addr, json!([{"name": "a"}, {"name": "b"}, {"name": "c"}]));
        let mut frames = Vec::new();
        for _ in 0..60 {
            let s = p.step();
            let step = s["step"].clone();
            frames.push(s);
            p.send(json!({"type": "act", "step": step, "robots": [{"name": "a", "drive": [0.3, 0.0]}]}));
        }
        frames
    });
    for (i, f) in frames.iter().enumerate() {
        assert_eq!(f["step"], i as u64);
        assert!((f["time"].as_f64().unwrap() - i as f64 * 0.02).abs() < 1e-9);
        let names: Vec<&str> = f["robots"].as_array().unwrap().iter().map(|r| r["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["a", "b", "c"], "robot order");
    }
    // a drives up at 0.3 m/s from step 0 on: 0.006 m a step once going; b stands still.
    let y = |f: &Value, i: usize| f["robots"][i]["pose"][1].as_f64().unwrap();
    let moved = y(&frames[59], 0) - y(&frames[10], 0);
    assert!((moved - 49.0 * 0.006).abs() < 0.01, "moved {moved}");
    assert_eq!(y(&frames[59], 1), 0.5);
    assert_eq!(frames[59]["robots"][0]["speed"], json!([0.3, 0.0]));
    let r = &frames[30]["robots"][0];
    for key in ["battery", "charging", "bump", "camera", "grip", "odometry", "sonar", "messages", "boxed", "visited"] {
        assert!(r.get(key).is_some(), "{key} in {r}");
    }
    let e = named(&mut app, "a");
    assert!(app.world().get::<Program>(e).unwrap().answered >= 60);
}

#[test]
fn bad_frames_get_error_replies_naming_the_problem_and_the_run_goes_on() {
    let mut scene = program_room();
    scene.programs.max_frame_bytes = 4096;
    scene.programs.max_message_bytes = 64;
    scene.programs.max_connections = 2;
    let mut app = headless_app(scene, SceneSource::Generated);
    let addr = server_addr(&app);
    let replies = drive(&mut app, move || {
        let (mut p, _, _) = Prog::register(addr, json!([{"name": "a"}, {"name": "b"}, {"name": "c"}]));
        let mut replies = Vec::new();
        let s = p.step();
        assert_eq!(s["step"], 0);
        p.send_raw("this is not json");
        replies.push(p.recv());
        p.send(json!({"type": "act", "step": 0, "robotz": []}));
        replies.push(p.recv());
        p.send(json!({"type": "act", "step": 5}));
        replies.push(p.recv());
        p.send(json!({"type": "act", "step": 0, "robots": [
            {"name": "w", "drive": [0.1, 0.0]},
            {"name": "a", "drive": [0.1, 0.0], "skill": {"kind": "stop"}},
            {"name": "b", "send": [{"content": "x".repeat(100)}]},
            {"name": "c", "drive": [0.1, 0.0]}
        ]}));
        for _ in 0..3 {
            replies.push(p.recv());
        }
        // The step goes on: step 1 comes.
        let s = p.step();
        assert_eq!(s["step"], 1);
        // A third connection is one too many.
        let _second = Prog::connect(addr);
        let mut third = Prog::connect(addr);
        replies.push(third.recv());
        // An oversized frame closes the connection with an error.
        p.send_raw(&"y".repeat(5000));
        let mut last = Value::Null;
        loop {
            let mut line = String::new();
            if p.reader.read_line(&mut line).unwrap_or(0) == 0 {
                break;
            }
            last = serde_json::from_str(&line).unwrap();
        }
        replies.push(last);
        replies
    });
    let error = |i: usize| replies[i]["error"].as_str().unwrap().to_string();
    assert!(error(0).starts_with("bad frame at column 2: expected ident"), "{}", error(0));
    assert!(error(1).contains("unknown field `robotz`"), "{}", error(1));
    assert_eq!(error(2), "actions for step 5, but the step now is 0");
    assert_eq!(error(3), "robot \"w\" is not registered by this program");
    assert_eq!(error(4), "robot \"a\": drive and a move skill in one action; send one of them");
    assert_eq!(error(5), "robot \"b\": a message of 102 bytes is longer than the scene's limit of 64");
    assert_eq!(replies[6], json!({"type": "error", "error": "too many programs: 2 are connected"}));
    assert_eq!(error(7), "closing the connection: a frame longer than 4096 bytes");
    let report = build_report(app.world_mut(), 0.0);
    assert_eq!(report.sections["programs"]["refused"], 1);
    assert!(report.sections["programs"]["disconnects"].as_u64().unwrap() >= 1);
    // c got its drive command although its neighbours' were refused.
    let c = named(&mut app, "c");
    assert!(position(&app, c).y > 0.5);
}

#[test]
fn a_program_that_leaves_stops_its_robots_and_may_register_them_again() {
    let mut app = headless_app(program_room(), SceneSource::Generated);
    let addr = server_addr(&app);
    let a = named(&mut app, "a");
    drive(&mut app, move || {
        let (mut p, _, _) = Prog::register(addr, json!([{"name": "a"}, {"name": "b"}, {"name": "c"}]));
        for _ in 0..20 {
            let s = p.step();
            p.send(json!({"type": "act", "step": s["step"], "robots": [{"name": "a", "drive": [0.3, 0.0]}]}));
        }
    });
    run_steps(&mut app, 30);
    let program = app.world().get::<Program>(a).unwrap();
    assert!(program.disconnected && program.connection.is_none());
    let stopped_at = position(&app, a);
    run_steps(&mut app, 30);
    assert_eq!(position(&app, a), stopped_at, "a stands still without its program");
    // It comes back and drives on.
    drive(&mut app, move || {
        let (mut p, _, reply) = Prog::register(addr, json!([{"name": "a"}]));
        assert_eq!(reply["robots"], json!(["a"]));
        for _ in 0..20 {
            let s = p.step();
            p.send(json!({"type": "act", "step": s["step"], "robots": [{"name": "a", "drive": [0.3, 0.0]}]}));
        }
    });
    assert!(position(&app, a).y > stopped_at.y + 0.05);
}

#[test]
fn a_program_that_does_not_answer_is_late_as_the_scene_says() {
    for (late, moves_on) in [(LatePolicy::Keep, true), (LatePolicy::Stop, false)] {
        let mut scene = program_room();
        scene.programs.step_timeout = 0.05;
        scene.programs.late = late;
        let mut app = headless_app(scene, SceneSource::Generated);
        let addr = server_addr(&app);
        let a = named(&mut app, "a");
        let ys = drive(&mut app, move || {
            let (mut p, _, _) = Prog::register(addr, json!([{"name": "a"}, {"name": "b"}, {"name": "c"}]));
            let s = p.step();
            p.send(json!({"type": "act", "step": s["step"], "robots": [{"name": "a", "drive": [0.3, 0.0]}]}));
            // Then silence: it reads on but never answers.
            (0..12).map(|_| p.step()["robots"][0]["pose"][1].as_f64().unwrap()).collect::<Vec<f64>>()
        });
        let program = app.world().get::<Program>(a).unwrap();
        assert!(program.late >= 11, "{late:?}: late {}", program.late);
        // Keep: it drives on with its last command; Stop: it stops.
        assert_eq!(ys[11] > ys[4] + 0.01, moves_on, "{late:?}: {ys:?}");
    }
}

#[test]
fn messages_go_through_the_radio_with_its_delay_and_loss_both_ways() {
    let mut scene = program_room();
    scene.robots[3] = robot("w", 3.5, 1.5, 0.0, ControllerSpec::network());
    scene.comms.delay = 5;
    scene.comms.probability = 0.5;
    let mut app = headless_app(scene, SceneSource::Generated);
    let addr = server_addr(&app);
    let heard = drive(&mut app, move || {
        let (mut p, _, _) = Prog::register(addr, json!([{"name": "a"}, {"name": "b"}, {"name": "c"}]));
        let mut heard = Vec::new();
        for _ in 0..400 {
            let s = p.step();
            let step = s["step"].as_u64().unwrap();
            for m in s["robots"][1]["messages"].as_array().unwrap() {
                heard.push((step, m.clone()));
            }
            p.send(json!({"type": "act", "step": step, "robots": [
                {"name": "a", "send": [{"to": "b", "content": {"n": step}}]},
                {"name": "c", "send": [{"content": {"claim": {"pen": "nothing", "distance": 0.1}}}]}
            ]}));
        }
        heard
    });
    // b hears a's messages 5 steps later (delivered in the communicate stage of the step they
    // are due, read in the next), about half of them.
    let from_a: Vec<&(u64, Value)> = heard.iter().filter(|(_, m)| m["from"] == "a").collect();
    assert!((150..=250).contains(&from_a.len()), "{}", from_a.len());
    for (step, m) in &from_a {
        assert_eq!(m["content"]["n"], m["sent"]);
        assert_eq!(step - m["sent"].as_u64().unwrap(), 6, "{m}");
        assert_eq!(m["broadcast"], false);
    }
    let report = build_report(app.world_mut(), 0.0);
    let c = &report.sections["comms"];
    assert!(c["dropped"]["lost"].as_u64().unwrap() > 100, "{c}");
    // c's claims are broadcasts: to a, b and the network robot w, which reads them as claims.
    let per_robot = c["robots"].as_array().unwrap();
    assert_eq!(per_robot.iter().find(|r| r["name"] == "c").unwrap()["sent"], 1200);
    assert!(per_robot.iter().find(|r| r["name"] == "w").unwrap()["received"].as_u64().unwrap() > 100);
    assert_eq!(
        c["sent"].as_u64().unwrap(),
        c["delivered"].as_u64().unwrap() + c["in_flight"].as_u64().unwrap() + c["dropped_total"].as_u64().unwrap()
    );
}

#[test]
fn reset_restarts_the_scene_with_the_registrations_kept() {
    let mut app = headless_app(program_room(), SceneSource::Generated);
    let addr = server_addr(&app);
    let (before, after, seed) = drive(&mut app, move || {
        let (mut p, _, _) = Prog::register(addr, json!([{"name": "a"}, {"name": "b"}, {"name": "c"}]));
        let mut first = Value::Null;
        for _ in 0..50 {
            let s = p.step();
            if s["step"] == 0 {
                first = s["robots"][0]["pose"].clone();
            }
            p.send(json!({"type": "act", "step": s["step"], "robots": [{"name": "a", "drive": [0.3, 1.0]}]}));
        }
        let s = p.step();
        assert_eq!(s["step"], 50);
        // A connection that drives no robot may not reset the others' scene.
        let mut stranger = Prog::connect(addr);
        assert_eq!(stranger.recv()["type"], "hello");
        stranger.send(json!({"type": "reset", "seed": 5}));
        let refused = stranger.recv();
        assert_eq!(refused["error"], "reset refused: only a program that drives robots may reset the scene");
        p.send(json!({"type": "reset", "seed": 77}));
        let reset = p.recv();
        assert_eq!(reset, json!({"type": "reset", "seed": 77}));
        let s = p.step();
        assert_eq!(s["step"], 0);
        (first, s["robots"][0]["pose"].clone(), reset["seed"].clone())
    });
    assert_eq!(before, after, "back where it started");
    assert_eq!(seed, 77);
    assert_eq!(build_report(app.world_mut(), 0.0).seed, 77);
}

#[test]
fn deterministic_programs_give_the_same_hash_run_after_run() {
    let run = || {
        let (mut child, mut out, addr) =
            common::serving_run(&["scenes/pens.ron", "--steps", "400", "--programs", "alpha,beta"]);
        let served = circles(addr, 400);
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut out, &mut rest).unwrap();
        assert!(child.wait().unwrap().success(), "{rest}");
        assert_eq!(served, 400);
        rest.lines().find(|l| l.starts_with("hash: ")).expect(&rest).to_string()
    };
    let first = run();
    assert_eq!(run(), first);
}

#[test]
fn a_headless_run_gives_up_on_programs_that_never_come() {
    let dir = common::Scratch::new("programs-wait");
    let scene = dir.join("wait.ron");
    let text = std::fs::read_to_string(scene_path("programs.ron")).unwrap();
    std::fs::write(&scene, text.replace("wait_for_robots: 120.0", "wait_for_robots: 0.5")).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_crsim"))
        .args(["run", &scene.to_string_lossy(), "--steps", "10", "--program-port", "0", "--programs", "beta"])
        .output()
        .unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(text.contains("programs: waiting for alpha, beta"), "{text}");
    assert!(text.contains("programs: no program registered alpha, beta within 0.5 s; giving up"), "{text}");
}

#[test]
fn an_act_before_register_is_an_error_and_answers_for_no_robot_registered_later() {
    let mut app = headless_app(program_room(), SceneSource::Generated);
    let addr = server_addr(&app);
    let (refused, first) = drive(&mut app, move || {
        let mut p = Prog::connect(addr);
        p.recv();
        p.send(json!({"type": "act", "step": 0, "robots": [{"name": "a", "drive": [0.5, 0.0]}]}));
        let refused = p.recv();
        p.send(json!({"type": "register", "robots": [{"name": "a"}, {"name": "b"}, {"name": "c"}]}));
        assert_eq!(p.recv()["type"], "registered");
        // The real answer for step 0 is taken, not refused as coming after a step it already had.
        let s = p.step();
        p.send(json!({"type": "act", "step": 0, "robots": [{"name": "a", "drive": [0.1, 0.0]}]}));
        let next = p.step();
        (refused, (s["step"].clone(), next["step"].clone()))
    });
    assert_eq!(refused["type"], "error", "{refused}");
    assert_eq!(refused["step"], 0);
    assert!(refused["error"].as_str().unwrap().contains("before register"), "{refused}");
    // (No error about step 0's answer came before step 1: `step` takes only a step frame.)
    assert_eq!(first, (json!(0), json!(1)));
    let mut programs = app.world_mut().query::<(&Name, &Program)>();
    let a = programs.iter(app.world()).find(|(n, _)| n.as_str() == "a").unwrap().1;
    assert_eq!(a.answered, 1);
}

#[test]
fn a_stop_does_not_wait_on_a_program_that_stays_silent() {
    let dir = common::Scratch::new("programs-stop");
    let scene = dir.join("slow.ron");
    let text = std::fs::read_to_string(scene_path("programs.ron")).unwrap();
    assert!(text.contains("step_timeout: "), "the scene sets its step timeout");
    let text = text.replace("step_timeout: 5.0", "step_timeout: 30.0");
    std::fs::write(&scene, text).unwrap();
    let (mut child, mut out, addr) =
        common::serving_run(&[&scene.to_string_lossy(), "--steps", "1000", "--programs", "all"]);
    let mut p = Prog::register_offered(addr);
    assert_eq!(p.step()["step"], 0, "the run waits for this silent program's answer");
    let asked = Instant::now();
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGTERM).unwrap();
    let status = child.wait().unwrap();
    assert!(asked.elapsed() < Duration::from_secs(10), "stopped in {:?}, not 100 steps of 30 s", asked.elapsed());
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut out, &mut rest).unwrap();
    assert_eq!(status.code(), Some(130), "an interrupted run: {rest}");
    assert!(rest.contains("hash: "), "the run's summary is printed: {rest}");
}

#[test]
fn a_run_that_serves_programs_ends_when_its_last_program_has_gone() {
    let run = |extra: &[&str]| {
        let args = [&["scenes/pens.ron", "--steps", "1000000000000", "--programs", "alpha,beta"], extra].concat();
        let (child, out, addr) = common::serving_run(&args);
        let (mut p, _, reply) = Prog::register(addr, json!([{"name": "alpha"}, {"name": "beta"}]));
        assert_eq!(reply["robots"], json!(["alpha", "beta"]));
        for _ in 0..5 {
            let s = p.step();
            p.send(json!({"type": "act", "step": s["step"]}));
        }
        drop(p);
        (child, out)
    };
    let (mut child, mut out) = run(&[]);
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(start.elapsed() < Duration::from_secs(30), "the run goes on without its programs");
        thread::sleep(Duration::from_millis(20));
    };
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut out, &mut rest).unwrap();
    assert!(status.success(), "{rest}");
    assert!(rest.contains("programs: the last program has gone; the run ends at step "), "{rest}");
    // --keep-serving keeps it for programs to come back.
    let (mut child, _out) = run(&["--keep-serving"]);
    thread::sleep(Duration::from_millis(1500));
    assert!(child.try_wait().unwrap().is_none(), "--keep-serving keeps the run going");
    child.kill().unwrap();
    child.wait().unwrap();
}

/// The actions of the in-process test program at `step`: [linear, angular] as fractions of the
/// robot's maxima and the gripper (1 close, -1 open, 0 leave).
fn pattern(step: u64) -> [f32; 3] {
    let turn = if step % 120 < 60 { 0.7 } else { -0.4 };
    let grip = match step % 100 {
        50 => 1.0,
        99 => -1.0,
        _ => 0.0,
    };
    [0.8, turn, grip]
}

/// An in-process environment world (`crsim::vecenv`) driven with the same actions as a program
/// over TCP gives the same trajectory, step for step, as `crsim run` with that program: the
/// environment's two-part step is the program server's lock-step.
#[test]
fn an_in_process_world_driven_like_a_program_gives_the_programs_trajectory() {
    use crsim::scene::SceneOverrides;
    use crsim::vecenv::{EnvBatch, EnvSpec, RewardWeights, RobotOutcome, Turn};
    let steps = 400u64;
    // Over TCP.
    let (mut child, mut out, addr) =
        common::serving_run(&["scenes/pens.ron", "--steps", &steps.to_string(), "--programs", "alpha"]);
    let (mut p, hello, reply) = Prog::register(addr, json!([{"name": "alpha", "observation": true}]));
    assert_eq!(reply["robots"], json!(["alpha"]), "{reply}");
    let body = &hello["robots"][0];
    let (max_speed, max_turn) = (body["max_speed"].as_f64().unwrap() as f32, body["max_turn"].as_f64().unwrap() as f32);
    let mut tcp_observations: Vec<Vec<f32>> = Vec::new();
    for _ in 0..steps {
        let f = p.step();
        let step = f["step"].as_u64().unwrap();
        let values = f["robots"][0]["observation"].as_array().expect("an observation, as registered");
        tcp_observations.push(values.iter().map(|v| v.as_f64().unwrap() as f32).collect());
        let [l, a, g] = pattern(step);
        let mut act = json!({"name": "alpha", "drive": [l * max_speed, a * max_turn]});
        if g != 0.0 {
            act["grip"] = json!(if g > 0.0 { "close" } else { "open" });
        }
        p.send(json!({"type": "act", "step": step, "robots": [act]}));
    }
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut out, &mut rest).unwrap();
    assert!(child.wait().unwrap().success(), "{rest}");
    let tcp_hash = rest.lines().find_map(|l| l.strip_prefix("hash: ")).expect(&rest).to_string();
    // In the process.
    let overrides = SceneOverrides { programs: vec!["alpha".into()], ..Default::default() };
    let (scene, _) = crsim::scene::load_scene_file_with(&scene_path("pens.ron"), &overrides).unwrap();
    let source = crsim::scene::SceneSource::File(scene_path("pens.ron"));
    let seed = scene.seed;
    let spec = EnvSpec {
        scene,
        source,
        max_steps: u64::MAX,
        until: None,
        rewards: RewardWeights::default(),
        message_size: 0,
        parts: None,
    };
    // Alone in its world, and second of three environments sharing one world.
    for seeds in [vec![seed], vec![seed + 1, seed, seed + 2]] {
        let at = seeds.iter().position(|&s| s == seed).unwrap();
        let mut batch = EnvBatch::new(&spec, &seeds).unwrap();
        let mut outcomes = vec![RobotOutcome::default(); seeds.len()];
        let turns = vec![Turn::Step; seeds.len()];
        let mut observation = vec![0.0; spec.observation_sizes().iter().sum()];
        for step in 0..steps {
            // What the environment observes before each step is what the program read at it,
            // value for value: both come from the sensor registry.
            batch.observe(at, &mut observation).unwrap();
            assert_eq!(observation, tcp_observations[step as usize], "step {step}");
            let actions: Vec<f32> = seeds.iter().flat_map(|_| pattern(step)).collect();
            batch.advance(&turns, &actions, &mut outcomes).unwrap();
        }
        assert_eq!(batch.step_count(at), steps);
        assert_eq!(batch.hash(at), tcp_hash, "environment {at} of {}", seeds.len());
    }
}

#[test]
fn every_registered_sensor_reaches_the_readings_hello_the_observation_and_the_inspector() {
    use crsim::robot::registry::{Around, Carried, SensorRegistry};
    use crsim::vecenv::observe::RobotView;
    let mut scene = program_room();
    scene.robots[0].range_sensor = Some(RangeSensorSpec { rays: 6, ..Default::default() });
    let spec = scene.robots[0].clone();
    let mut app = headless_app(scene, SceneSource::Generated);
    let addr = server_addr(&app);
    let (hello, step) = drive(&mut app, move || {
        // Step 0 waits for every program robot.
        let regs = json!([{"name": "a", "observation": true}, {"name": "b"}, {"name": "c"}]);
        let (mut p, hello, _) = Prog::register(addr, regs);
        (hello, p.step())
    });
    let sensors = app.world().resource::<SensorRegistry>().clone();
    // The app's sensors are those readers use before a world is built.
    assert_eq!(sensors.names(), crsim::run::standard_sensors().names());
    let a = named(&mut app, "a");
    let carried = app.world().get::<Carried>(a).expect("a robot carries its sensors").clone();
    let offered = &hello["robots"][0]["sensors"];
    let reading = &step["robots"][0];
    assert!(step["robots"][1].get("observation").is_none(), "b did not ask for its observation");
    let view = RobotView::new(&sensors, &spec, None, 0);
    let name_of = |e: Entity| e.to_string();
    let around = Around { arena: crsim::world::Arena { width: 4.0, height: 2.0 }, name_of: &name_of };
    let inspected = sensors.inspect(&carried, &app.world().entity(a).into(), &around);
    for (id, sensor) in sensors.iter() {
        let name = sensor.name();
        assert!(carried.0.contains(&id), "robot a does not carry {name}");
        let listed = offered.as_array().unwrap().iter().find(|s| s["name"] == name);
        let listed = listed.unwrap_or_else(|| panic!("hello does not list {name}: {offered}"));
        for part in sensor.part_names() {
            assert!(listed["parts"].as_array().unwrap().iter().any(|p| p["name"] == *part), "{name}: {listed}");
            assert!(view.part_size(part) > 0, "the environment's observation has no {part} of {name}");
        }
        for field in sensor.reading_fields() {
            assert!(reading.get(field).is_some(), "the reading has no {field} of {name}: {reading}");
        }
        let rows = inspected.iter().find(|(n, _)| n == name).map(|(_, rows)| rows.len());
        assert!(rows.is_some_and(|n| n > 0), "the inspector shows nothing of {name}");
    }
    // The observation's size is the sum of the parts hello lists.
    let listed: u64 = offered
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["parts"].as_array().unwrap().clone())
        .map(|p| p["size"].as_u64().unwrap())
        .sum();
    assert_eq!(reading["observation"].as_array().unwrap().len() as u64, listed);
    assert_eq!(listed as usize, view.size());
    assert_eq!(view.size(), crsim::vecenv::observe::BASE + 6);
}

/// A sensor from outside crsim, as a user's plugin registers it: every robot carries it, and it
/// fails at its `fails_at`-th reading when it has one.
struct Plugged {
    name: &'static str,
    fails_at: Option<u32>,
    reads: std::sync::atomic::AtomicU32,
}

impl Plugged {
    fn new(name: &'static str, fails_at: Option<u32>) -> Self {
        Self { name, fails_at, reads: Default::default() }
    }
}

impl crsim::robot::registry::Sensor for Plugged {
    fn name(&self) -> &'static str {
        self.name
    }
    fn part_names(&self) -> &'static [&'static str] {
        &["plugged"]
    }
    fn reading_fields(&self) -> &'static [&'static str] {
        &[]
    }
    fn carried_by(&self, _: &RobotSpec) -> bool {
        true
    }
    fn parts(&self, _: &RobotSpec) -> Vec<crsim::robot::registry::ObsPart> {
        vec![crsim::robot::registry::ObsPart::unit("plugged", 1)]
    }
    fn observe(&self, _: &bevy::ecs::world::FilteredEntityRef, _: &crsim::robot::registry::Around, out: &mut [f32]) {
        out[0] = 1.0;
    }
    fn read(
        &self,
        _: &bevy::ecs::world::FilteredEntityRef,
        _: &crsim::robot::registry::Around,
        reading: &mut crsim::robot::registry::SensorReading,
    ) {
        let n = self.reads.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        assert!(self.fails_at.is_none_or(|at| n < at), "{} gave up at reading {n}", self.name);
        reading.sensors.insert(self.name, json!(n));
    }
    fn describe(&self, _: &RobotSpec) -> Value {
        json!({})
    }
    fn inspect(
        &self,
        _: &bevy::ecs::world::FilteredEntityRef,
        _: &crsim::robot::registry::Around,
        _: &mut Vec<(String, String)>,
    ) {
    }
}

/// `crsim run` as a user's binary calls it, with `setup` adding what a user's plugin adds.
fn run_with(
    scene: &std::path::Path,
    port: u16,
    record: &std::path::Path,
    metrics: &std::path::Path,
    setup: &dyn Fn(&mut App),
) -> std::process::ExitCode {
    crsim::run::runner::run(crsim::run::runner::RunRequest {
        scene,
        steps: 1000,
        seed: None,
        out: Some(metrics),
        no_radio: false,
        dump_network: None,
        realtime: false,
        until: None,
        protocol: None,
        program_port: Some(port),
        overrides: Default::default(),
        record: Some(record),
        record_ros2: None,
        serve_viewer: None,
        threads: Some(1),
        keep_serving: false,
        setup: Some(setup),
    })
}

/// A port no one listens on now.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

#[test]
fn a_sensor_that_fails_stops_the_run_naming_it_and_the_robot_and_keeps_what_was_done() {
    use crsim::robot::registry::RegisterSensor;
    let dir = common::Scratch::new("programs-fault");
    let (record, metrics) = (dir.join("run.mcap"), dir.join("metrics.json"));
    let port = free_port();
    let program = thread::spawn(move || {
        let addr: SocketAddr = ([127, 0, 0, 1], port).into();
        let start = Instant::now();
        let mut p = loop {
            if std::net::TcpStream::connect(addr).is_ok() {
                break Prog::register_offered(addr);
            }
            assert!(start.elapsed() < Duration::from_secs(60), "the run never served programs");
            thread::sleep(Duration::from_millis(20));
        };
        let mut flaky = Vec::new();
        loop {
            let f = p.recv();
            if f["type"] != "step" {
                return (flaky, f);
            }
            flaky.extend(f["robots"].as_array().unwrap().iter().map(|r| r["sensors"]["flaky"].clone()));
            p.send(json!({"type": "act", "step": f["step"]}));
        }
    });
    let code = run_with(&scene_path("programs.ron"), port, &record, &metrics, &|app| {
        app.register_sensor(Plugged::new("flaky", Some(4)));
    });
    let (flaky, end) = program.join().unwrap();
    assert_eq!(code, std::process::ExitCode::FAILURE);
    // Its three good readings reached the program; the step it failed in sent none of alpha's.
    assert_eq!(flaky, [json!(1), json!(2), json!(3)]);
    assert_eq!(end["type"], "end", "{end}");
    let reason = end["reason"].as_str().unwrap();
    assert_eq!(
        reason,
        "the run stopped: sensor \"flaky\" failed while sensing robot alpha: flaky gave up at reading 4"
    );
    // The metrics and the recording of the four steps run are written and whole.
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&metrics).unwrap()).unwrap();
    assert_eq!(report["steps"], 4, "{report}");
    let recording = crsim::record::reader::Recording::open(&record).unwrap();
    assert!(recording.truncated.is_none() && recording.end.is_some(), "{:?}", recording.truncated);
    assert_eq!(recording.steps().1, 3, "steps 0 to 3 recorded");
}

#[test]
fn a_sensor_registered_under_a_taken_name_stops_the_run_before_step_zero() {
    use crsim::robot::registry::RegisterSensor;
    let dir = common::Scratch::new("programs-refused");
    let (record, metrics) = (dir.join("run.mcap"), dir.join("metrics.json"));
    let code = run_with(&scene_path("programs.ron"), free_port(), &record, &metrics, &|app| {
        app.register_sensor(Plugged::new("camera", None));
    });
    assert_eq!(code, std::process::ExitCode::from(2), "bad input, before any step");
    assert!(!metrics.exists(), "no step ran, so no metrics");
}

#[test]
fn a_holonomic_program_robot_drives_sideways_and_reads_its_sideways_speed_in_both_encodings() {
    let mut s = program_room();
    let omni = s.robots.iter_mut().find(|r| r.name == "b").unwrap();
    omni.drive = DriveSpec::Holonomic { max_lateral: 0.2 };
    let mut app = headless_app(s, SceneSource::Generated);
    let addr = server_addr(&app);
    let (hello, frames) = drive(&mut app, move || {
        let (mut p, hello, _) = Prog::register(addr, json!([{"name": "a"}, {"name": "b"}, {"name": "c"}]));
        let mut frames = Vec::new();
        for _ in 0..50 {
            let s = p.step();
            let step = s["step"].clone();
            frames.push(s);
            // Both asked to move sideways; only b has the wheels for it (and a cap of 0.2 m/s).
            let robots = json!([{"name": "a", "drive": [0.0, 0.0, 0.1]}, {"name": "b", "drive": [0.0, 0.0, 0.5]}]);
            p.send(json!({"type": "act", "step": step, "robots": robots}));
        }
        let _ = p.step();
        p.send(json!({"type": "act", "step": 50, "robots": [{"name": "b", "drive": [0.1, 0.0, 0.2, 9.0]}]}));
        frames.push(p.recv());
        (hello, frames)
    });
    let about = |name: &str| hello["robots"].as_array().unwrap().iter().find(|r| r["name"] == name).unwrap().clone();
    let pose = |r: &Value| r["sensors"].as_array().unwrap().iter().find(|s| s["name"] == "pose").unwrap().clone();
    assert_eq!(pose(&about("b"))["settings"]["drive"], "holonomic", "{}", about("b"));
    assert!((pose(&about("b"))["settings"]["max_lateral"].as_f64().unwrap() - 0.2).abs() < 1e-6);
    assert_eq!(pose(&about("a"))["settings"]["drive"], "differential");
    // b's motion has its sideways speed too.
    let motion =
        |r: &Value| pose(r)["parts"].as_array().unwrap().iter().find(|p| p["name"] == "motion").unwrap().clone();
    assert_eq!((motion(&about("a"))["size"].as_u64(), motion(&about("b"))["size"].as_u64()), (Some(2), Some(3)));
    // b faces up (heading 90°): its left is -x.
    let x = |f: &Value, i: usize| f["robots"][i]["pose"][0].as_f64().unwrap();
    let moved = x(&frames[49], 1) - x(&frames[9], 1);
    assert!((moved + 40.0 * 0.2 * 0.02).abs() < 0.01, "b moved {moved} in x");
    assert_eq!(x(&frames[49], 0), 0.5, "a differential robot does not move sideways");
    assert!((frames[49]["robots"][1]["lateral"].as_f64().unwrap() - 0.2).abs() < 1e-6);
    assert!(frames[49]["robots"][0].get("lateral").is_none(), "a differential robot has no sideways reading");
    // Four numbers are not a drive.
    let error = frames[50]["message"].as_str().unwrap_or_default().to_string() + &frames[50].to_string();
    assert!(
        error.contains("drive takes [linear, angular] or, for a holonomic robot, [linear, angular, lateral]; got 4")
    );
    // The binary encoding carries the sideways speed in its tail.
    let reading = crsim::robot::registry::SensorReading { lateral: Some(0.25), ..Default::default() };
    let frame = crsim::control::programs::protocol::binary_step(
        3,
        0.06,
        &[crsim::control::programs::protocol::Reading {
            name: "b".into(),
            sensors: reading,
            sonar: vec![],
            visited: 0,
            observation: None,
        }],
    );
    let text = String::from_utf8_lossy(&frame);
    assert!(text.contains(r#""lateral":[{"robot":0,"speed":0.25}]"#), "{text}");
}

#[test]
fn a_robot_lists_the_sensors_it_carries_in_the_order_it_observes_them() {
    let mut s = program_room();
    s.robots[0].sensors = Some(vec!["radio".into(), "pose".into()]);
    let mut app = headless_app(s, SceneSource::Generated);
    let addr = server_addr(&app);
    let hello = drive(&mut app, move || Prog::register(addr, json!([{"name": "a"}])).1);
    let a = &hello["robots"][0];
    let names: Vec<&str> = a["sensors"].as_array().unwrap().iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["radio", "pose"]);
    let b = &hello["robots"][1];
    assert_eq!(b["sensors"].as_array().unwrap().len(), 6, "b carries every built-in sensor but range: {b}");
}

#[test]
fn a_sensor_no_one_registered_or_a_robot_cannot_carry_stops_the_run_before_step_zero_naming_it() {
    let dir = common::Scratch::new("programs-unknown-sensor");
    let text = std::fs::read_to_string(scene_path("programs.ron")).unwrap();
    let scene = dir.join("scene.ron");
    let first = text.find("controller: Program").expect("a program robot");
    let bad = format!("{}sensors: [\"pose\", \"sonarr\", \"range\"], {}", &text[..first], &text[first..]);
    std::fs::write(&scene, bad).unwrap();
    let (record, metrics) = (dir.join("run.mcap"), dir.join("metrics.json"));
    let code = run_with(&scene, free_port(), &record, &metrics, &|_| {});
    assert_eq!(code, std::process::ExitCode::from(2), "bad input, before any step");
    assert!(!metrics.exists());
    let problems = crsim::run::standard_sensors().check(&crsim::scene::load_scene_file(&scene).unwrap().0);
    let said: Vec<String> = problems.iter().map(ToString::to_string).collect();
    assert_eq!(said.len(), 2, "{said:?}");
    assert!(
        said[0].contains(r#"sensors names "sonarr", which is not a registered sensor (registered: pose, "#),
        "{said:?}"
    );
    assert!(said[1].contains(r#"sensors names "range", which this robot cannot carry (it has no range_sensor)"#));
}
