//! Remote control in the VirtualRobot protocol, tested with real HTTP (ureq) and WebSocket
//! (tungstenite) clients against a headless crsim on free ports: every move and reply shape,
//! collisions with target names, interruption by alarm, notallowed, sonar events, malformed
//! bodies, many clients at once, and the watchdog.

mod common;

use std::net::SocketAddr;
use std::thread;
use std::time::{Duration, Instant};

use bevy::prelude::*;
use serde_json::Value;

use crsim::control::remote::{Dialect, Remote};
use crsim::robot::pose;
use crsim::run::headless::{headless_app, run_steps};
use crsim::scene::schema::ControllerSpec;
use crsim::scene::{SceneSource, load_scene_file};
use crsim::sim::SimTime;

type Ws = tungstenite::WebSocket<tungstenite::stream::MaybeTlsStream<std::net::TcpStream>>;

/// The 2023 room with the robot's servers on free ports, in `dialect`.
fn wenv(dialect: Dialect) -> (App, SocketAddr, SocketAddr) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes").join("wenv.ron");
    let (mut scene, _) = load_scene_file(&path).unwrap();
    scene.robots[0].controller = ControllerSpec::Remote { http: 0, ws: 0, protocol: dialect };
    let mut app = headless_app(scene, SceneSource::Generated);
    let world = app.world_mut();
    let mut q = world.query::<&Remote>();
    let r = q.single(world).unwrap();
    let (http, ws) = (r.http.unwrap(), r.ws.unwrap());
    (app, http, ws)
}

/// Steps the simulation at about real-time speed while `client` runs on its own thread, and
/// returns what it returns.
fn drive<T: Send + 'static>(app: &mut App, client: impl FnOnce() -> T + Send + 'static) -> T {
    let handle = thread::spawn(client);
    let start = Instant::now();
    while !handle.is_finished() {
        run_steps(app, 1);
        thread::sleep(Duration::from_millis(2));
        assert!(start.elapsed() < Duration::from_secs(60), "client did not finish");
    }
    // Let the servers' last words reach the clients.
    for _ in 0..5 {
        run_steps(app, 1);
    }
    handle.join().unwrap()
}

fn post(http: SocketAddr, body: &str) -> (u16, Value) {
    let agent: ureq::Agent = ureq::Agent::config_builder().http_status_as_error(false).build().into();
    let mut response = agent
        .post(&format!("http://{http}/api/move"))
        .header("Content-Type", "application/json")
        .send(body)
        .expect("the server answers");
    let status = response.status().as_u16();
    let text = response.body_mut().read_to_string().unwrap();
    (status, serde_json::from_str(&text).unwrap_or_else(|e| panic!("{text:?}: {e}")))
}

fn connect(ws: SocketAddr) -> Ws {
    let (socket, _) = tungstenite::connect(format!("ws://{ws}")).expect("websocket connects");
    if let tungstenite::stream::MaybeTlsStream::Plain(s) = socket.get_ref() {
        s.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
    }
    socket
}

/// Messages received within `wait`.
fn receive(socket: &mut Ws, wait: Duration) -> Vec<Value> {
    let start = Instant::now();
    let mut out = Vec::new();
    while start.elapsed() < wait {
        match socket.read() {
            Ok(tungstenite::Message::Text(t)) => out.push(serde_json::from_str(&t).unwrap()),
            Ok(_) => {}
            Err(tungstenite::Error::Io(e))
                if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
            Err(e) => panic!("{e}"),
        }
    }
    out
}

fn send(socket: &mut Ws, text: &str) {
    socket.send(tungstenite::Message::text(text.to_string())).unwrap();
}

fn robot_y(app: &mut App) -> f32 {
    let world = app.world_mut();
    let mut q = world.query_filtered::<&Transform, With<Remote>>();
    pose(q.single(world).unwrap()).0.y
}

#[test]
fn forward_from_home_ends_in_the_open_or_hits_wall_down() {
    let (mut app, http, ws) = wenv(Dialect::Vr2023);
    let y0 = robot_y(&mut app);
    let (reply, events) = drive(&mut app, move || {
        let mut socket = connect(ws);
        let reply = post(http, r#"{"robotmove":"moveForward","time":"1300"}"#);
        (reply, receive(&mut socket, Duration::from_millis(200)))
    });
    assert_eq!(reply, (200, serde_json::json!({"endmove":"true","move":"moveForward"})));
    assert!(events.contains(&serde_json::json!({"endmove":"true","move":"moveForward"})), "{events:?}");
    // 1.3 s at 12 units/s.
    let moved = y0 - robot_y(&mut app);
    assert!((moved - 15.6).abs() < 0.3, "moved {moved}");
    // Back to HOME's row is not needed: 2200 ms from HOME is longer than the way to wallDown.
    let (mut app, http, ws) = wenv(Dialect::Vr2023);
    let started = app.world().resource::<SimTime>().seconds();
    let (reply, events) = drive(&mut app, move || {
        let mut socket = connect(ws);
        let reply = post(http, r#"{"robotmove":"moveForward","time":2200}"#);
        (reply, receive(&mut socket, Duration::from_millis(200)))
    });
    assert_eq!(reply, (200, serde_json::json!({"endmove":"false","move":"moveForward-collision"})));
    assert_eq!(events[0], serde_json::json!({"collision":"moveForward","target":"wallDown"}), "{events:?}");
    let y = robot_y(&mut app);
    // Where it was the frame before it touched the wall (which it touches at 2.36): its frames
    // are 0.24 apart from 19.68, so the last one short of the wall is 2.40.
    assert!((y - LAST_FRAME_SHORT).abs() < 0.01, "stopped a frame short of the wall, y = {y}");
    let _ = started;
}

fn heading_deg(app: &mut App) -> f32 {
    let world = app.world_mut();
    let mut q = world.query_filtered::<&Transform, With<Remote>>();
    pose(q.single(world).unwrap()).1.to_degrees()
}

/// Where WEnv leaves the robot of the 2023 room after it drove from HOME into wallDown: where it
/// was the frame before it touched (19.68 - 72 frames of 0.24).
const LAST_FRAME_SHORT: f32 = 19.68 - 72.0 * 0.24;

/// After a collision the robot stands a frame short of the obstacle. A move away from it
/// succeeds; a move into it collides after that frame (the original server stops a blocked
/// robot short of the obstacle and tests every next position). Course clients run their tests
/// one after another and depend on both.
#[test]
fn from_an_obstacle_a_move_away_succeeds_and_a_move_into_it_collides_at_once() {
    let (mut app, http, ws) = wenv(Dialect::Vr2023);
    let (first, into, away) = drive(&mut app, move || {
        let mut socket = connect(ws);
        let first = post(http, r#"{"robotmove":"moveForward","time":2200}"#);
        receive(&mut socket, Duration::from_millis(100));
        let start = Instant::now();
        let into = post(http, r#"{"robotmove":"moveForward","time":300}"#);
        let events = receive(&mut socket, Duration::from_millis(100));
        let away = post(http, r#"{"robotmove":"moveBackward","time":300}"#);
        (first, (into, events, start.elapsed()), away)
    });
    assert_eq!(first.1, serde_json::json!({"endmove":"false","move":"moveForward-collision"}));
    let (reply, events, _) = into;
    assert_eq!(reply.1, serde_json::json!({"endmove":"false","move":"moveForward-collision"}));
    assert!(
        events.contains(&serde_json::json!({"collision":"moveForward","target":"wallDown"})),
        "the collision is reported: {events:?}"
    );
    assert_eq!(away.1, serde_json::json!({"endmove":"true","move":"moveBackward"}));
    // 300 ms backwards at 12 units/s from a frame short of the wall.
    let y = robot_y(&mut app);
    assert!((y - (LAST_FRAME_SHORT + 3.6)).abs() < 0.2, "y = {y}");
}

/// The course's boundary walk, as its clients do it in each dialect: forward into the far wall,
/// backward into the wall behind home, then 100 ms forward and 100 ms back. WEnv leaves a robot
/// that hit something a frame short of it, so the last move comes back to that spot and touches
/// nothing.
#[test]
fn the_courses_boundary_walk_ends_its_last_short_move_without_a_collision() {
    for dialect in [Dialect::Vr2021, Dialect::Vr2022, Dialect::Vr2023] {
        let (mut app, http, ws) = wenv(dialect);
        let replies = drive(&mut app, move || {
            let _socket = connect(ws);
            [("moveForward", 2000), ("moveBackward", 2000), ("moveForward", 100), ("moveBackward", 100)]
                .map(|(m, t)| post(http, &format!(r#"{{"robotmove":"{m}","time":{t}}}"#)).1)
        });
        let ok = |v: &Value| v["endmove"] == "true" || v["endmove"] == true;
        assert!(!ok(&replies[0]) && !ok(&replies[1]), "{dialect:?}: both walls are hit: {replies:?}");
        assert!(ok(&replies[2]) && ok(&replies[3]), "{dialect:?}: the short moves end normally: {replies:?}");
    }
}

#[test]
fn turns_are_quarter_turns_and_reply_when_done() {
    let (mut app, http, _) = wenv(Dialect::Vr2023);
    assert!((heading_deg(&mut app) + 90.0).abs() < 0.01);
    let reply = drive(&mut app, move || post(http, r#"{"robotmove":"turnLeft","time":300}"#));
    assert_eq!(reply, (200, serde_json::json!({"endmove":"true","move":"turnLeft"})));
    assert!(heading_deg(&mut app).abs() < 0.5, "facing east after a left turn: {}", heading_deg(&mut app));
    let reply = drive(&mut app, move || {
        post(http, r#"{"robotmove":"turnRight","time":"400"}"#);
        post(http, r#"{"robotmove":"turnRight","time":"400"}"#)
    });
    assert_eq!(reply.1["move"], "turnRight");
    assert!((heading_deg(&mut app).abs() - 180.0).abs() < 0.5, "{}", heading_deg(&mut app));
    // Backward from facing west moves east.
    let x0 = {
        let world = app.world_mut();
        let mut q = world.query_filtered::<&Transform, With<Remote>>();
        pose(q.single(world).unwrap()).0.x
    };
    let reply = drive(&mut app, move || post(http, r#"{"robotmove":"moveBackward","time":250}"#));
    assert_eq!(reply.1, serde_json::json!({"endmove":"true","move":"moveBackward"}));
    let world = app.world_mut();
    let mut q = world.query_filtered::<&Transform, With<Remote>>();
    let x = pose(q.single(world).unwrap()).0.x;
    assert!((x - x0 - 3.0).abs() < 0.2, "moved {}", x - x0);
}

#[test]
fn alarm_interrupts_and_a_second_move_is_not_allowed() {
    let (mut app, http, ws) = wenv(Dialect::Vr2023);
    let (first, second, third, alarm, events) = drive(&mut app, move || {
        let mut socket = connect(ws);
        // Turn towards the open room first, then move until stopped.
        post(http, r#"{"robotmove":"turnLeft","time":300}"#);
        let mover = thread::spawn(move || post(http, r#"{"robotmove":"moveForward","time":-1}"#));
        thread::sleep(Duration::from_millis(150));
        let second = post(http, r#"{"robotmove":"turnLeft","time":300}"#);
        send(&mut socket, r#"{"robotmove":"turnRight","time":300}"#);
        // The WebSocket move was refused and halted the running one (VR23 since June 2023).
        let first = mover.join().unwrap();
        let third = thread::spawn(move || post(http, r#"{"robotmove":"moveForward","time":-1}"#));
        thread::sleep(Duration::from_millis(150));
        let alarm = post(http, r#"{"robotmove":"alarm","time":10}"#);
        (first, second, third.join().unwrap(), alarm, receive(&mut socket, Duration::from_millis(200)))
    });
    assert_eq!(second, (200, serde_json::json!({"endmove":"notallowed","move":"turnLeft"})));
    assert_eq!(first.1, serde_json::json!({"endmove":"false","move":"moveForward-interrupted"}));
    assert_eq!(third.1, serde_json::json!({"endmove":"false","move":"moveForward-interrupted"}));
    assert_eq!(alarm.1, serde_json::json!({"endmove":"true","move":"halt"}));
    let expect = [
        r#"{"endmove":"true","move":"turnLeft"}"#,
        r#"{"endmove":"notallowed","move":"turnLeft"}"#,
        r#"{"endmove":"false","move":"turnRight_notallowed (asynch)"}"#,
        r#"{"endmove":"false","move":"moveForward-interrupted"}"#,
    ];
    let got: Vec<String> = events.iter().map(|e| e.to_string()).collect();
    for e in expect {
        assert!(got.contains(&e.to_string()), "{e} not in {got:#?}");
    }
    // Every result went to the WebSocket client, the halt reply only to its request.
    assert!(!got.iter().any(|g| g.contains("\"halt\"")), "{got:#?}");
}

#[test]
fn sonar_events_while_in_the_beam() {
    let (mut app, http, ws) = wenv(Dialect::Vr2023);
    let (outside, inside) = drive(&mut app, move || {
        let mut socket = connect(ws);
        post(http, r#"{"robotmove":"turnLeft","time":300}"#);
        // 200 ms east: from x = 3.1 to 5.5. The robot's edge is in sonar1's beam (x from 6.25 to
        // 9.25 round its axis at 7.75), its centre is not: no event, as in WEnv.
        post(http, r#"{"robotmove":"moveForward","time":200}"#);
        let outside = receive(&mut socket, Duration::from_millis(900));
        // 100 ms more, to x = 6.7: the centre is in the beam.
        post(http, r#"{"robotmove":"moveForward","time":100}"#);
        (outside, receive(&mut socket, Duration::from_millis(1200)))
    });
    let sonar =
        |events: &[Value]| -> Vec<Value> { events.iter().filter(|e| e.get("sonarName").is_some()).cloned().collect() };
    assert!(sonar(&outside).is_empty(), "{outside:?}");
    let inside = sonar(&inside);
    assert!(!inside.is_empty(), "{inside:?}");
    // trunc(19.68 - 24.0): WEnv's y points down, the robot is below the sonar, which sits on
    // the floor's top edge.
    assert_eq!(inside[0], serde_json::json!({"sonarName":"sonar1","distance":-4,"axis":"y"}));
}

#[test]
fn bad_requests_get_clear_json_errors_and_the_robot_carries_on() {
    let (mut app, http, ws) = wenv(Dialect::Vr2023);
    let (replies, ws_errors, after, not_found) = drive(&mut app, move || {
        let mut socket = connect(ws);
        let replies: Vec<(u16, Value)> = [
            "this is not json",
            r#"{"robotmove":"jump","time":100}"#,
            r#"{"robotmove":"moveForward","time":"soon"}"#,
            r#"{"robotmove":"moveForward","time":-20}"#,
            r#"{"time":100}"#,
        ]
        .iter()
        .map(|b| post(http, b))
        .collect();
        let long = format!("{{\"robotmove\":\"turnLeft\",\"time\":100,\"pad\":\"{}\"}}", "x".repeat(100_000));
        let too_long = post(http, &long);
        assert_eq!(too_long.0, 413, "{too_long:?}");
        send(&mut socket, "{broken");
        let ws_errors = receive(&mut socket, Duration::from_millis(200));
        let after = post(http, r#"{"robotmove":"turnLeft","time":100}"#);
        let agent: ureq::Agent = ureq::Agent::config_builder().http_status_as_error(false).build().into();
        let mut r = agent.get(&format!("http://{http}/")).call().unwrap();
        let not_found = (r.status().as_u16(), r.body_mut().read_to_string().unwrap());
        (replies, ws_errors, after, not_found)
    });
    for (status, reply) in &replies {
        assert_eq!(*status, 400, "{reply}");
        assert_eq!(reply["move"], "unknown");
    }
    assert_eq!(replies[0].1["endmove"], "JSON error");
    assert!(replies[1].1["error"].as_str().unwrap().contains("unknown move \"jump\""), "{:?}", replies[1]);
    assert!(replies[2].1["error"].as_str().unwrap().contains("bad time"), "{:?}", replies[2]);
    assert!(replies[3].1["error"].as_str().unwrap().contains("-20"), "{:?}", replies[3]);
    assert!(replies[4].1["error"].as_str().unwrap().contains("robotmove is missing"), "{:?}", replies[4]);
    assert_eq!(ws_errors.len(), 1, "{ws_errors:?}");
    assert_eq!(ws_errors[0]["endmove"], "JSON error");
    assert_eq!(after.1, serde_json::json!({"endmove":"true","move":"turnLeft"}));
    assert_eq!(not_found.0, 404);
    assert!(not_found.1.contains("POST /api/move"), "{}", not_found.1);
    let world = app.world_mut();
    let mut q = world.query::<&Remote>();
    assert_eq!(q.single(world).unwrap().session.errors, 6);
}

#[test]
fn a_hundred_websocket_clients_and_a_thousand_requests() {
    let (mut app, http, ws) = wenv(Dialect::Vr2023);
    let (halts, seen) = drive(&mut app, move || {
        let mut sockets: Vec<Ws> = (0..100).map(|_| connect(ws)).collect();
        thread::sleep(Duration::from_millis(300));
        // 1,000 requests from 20 threads at once: alarms, answered at once.
        let workers: Vec<_> = (0..20)
            .map(|_| {
                thread::spawn(move || {
                    (0..50).map(|_| post(http, r#"{"robotmove":"alarm","time":10}"#)).filter(|r| r.0 == 200).count()
                })
            })
            .collect();
        let halts: usize = workers.into_iter().map(|w| w.join().unwrap()).sum();
        // One move, seen by every client.
        post(http, r#"{"robotmove":"turnLeft","time":100}"#);
        let end = serde_json::json!({"endmove":"true","move":"turnLeft"});
        let seen = sockets
            .iter_mut()
            .filter_map(|s| receive(s, Duration::from_millis(20)).contains(&end).then_some(()))
            .count();
        (halts, seen)
    });
    assert_eq!(halts, 1000);
    assert_eq!(seen, 100);
}

#[test]
fn the_watchdog_stops_an_unbounded_move_when_the_last_client_leaves() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes").join("wenv.ron");
    let (mut scene, _) = load_scene_file(&path).unwrap();
    scene.robots[0].controller = ControllerSpec::Remote { http: 0, ws: 0, protocol: Dialect::Vr2023 };
    scene.botlink.watchdog = 0.5;
    // Facing east along the top of the room: a long way to go.
    scene.robots[0].pose.2 = 0.0;
    let mut app = headless_app(scene, SceneSource::Generated);
    let ws = {
        let world = app.world_mut();
        let mut q = world.query::<&Remote>();
        q.single(world).unwrap().ws.unwrap()
    };
    drive(&mut app, move || {
        let mut socket = connect(ws);
        send(&mut socket, r#"{"robotmove":"moveForward","time":-1}"#);
        thread::sleep(Duration::from_millis(100));
        socket.close(None).unwrap();
        // Read until the server has seen the close.
        while socket.read().is_ok() {}
    });
    let start = app.world().resource::<SimTime>().seconds();
    for _ in 0..100 {
        run_steps(&mut app, 1);
        thread::sleep(Duration::from_millis(1));
    }
    let world = app.world_mut();
    let mut q = world.query::<(&Remote, &Transform)>();
    let (remote, t) = q.single(world).unwrap();
    assert_eq!(remote.session.watchdog_stops, 1, "{:#?}", remote.session.log);
    assert_eq!(remote.session.running(), None);
    assert!(remote.session.log.iter().any(|l| l.contains("watchdog: no client for 0.5 s, moveForward stopped")));
    let x = pose(t).0.x;
    assert!(x < 29.0, "stopped in the open, x = {x}, {} s after the client left", start);
}

#[test]
fn the_2022_dialect_answers_a_collision_at_once() {
    let (mut app, http, _) = wenv(Dialect::Vr2022);
    let reply = drive(&mut app, move || post(http, r#"{"robotmove":"moveForward","time":5000}"#));
    assert_eq!(reply, (200, serde_json::json!({"collision":"moveForward","target":"wallDown"})));
    assert!(app.world().resource::<SimTime>().seconds() < 2.0);
    let reply = drive(&mut app, move || post(http, r#"{"robotmove":"turnLeft","time":300}"#));
    assert_eq!(reply.1, serde_json::json!({"endmove":true,"move":"turnLeft"}));
}

/// A flood of idle connections, with the server short of file descriptors (`ulimit -n 100`):
/// connections beyond the limit are answered "busy", failed accepts are logged, and once the
/// flood goes the listeners serve again; the run goes on throughout.
#[test]
fn floods_of_idle_connections_never_kill_the_listeners() {
    use std::io::{BufRead, BufReader};
    use std::net::TcpStream;
    let dir = common::Scratch::new("flood");
    let scene = dir.join("wenv.ron");
    let text =
        std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/wenv.ron")).unwrap();
    std::fs::write(&scene, text.replace("http: 8090, ws: 8091", "http: 0, ws: 0")).unwrap();
    let json = dir.join("m.json");
    let mut child = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -n 100 && exec {} run {} --steps 10000000 --realtime --out {}",
            env!("CARGO_BIN_EXE_crsim"),
            scene.display(),
            json.display()
        ))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.as_mut().unwrap()).read_line(&mut line).unwrap();
    // remote robot wenvbot: http://127.0.0.1:P/api/move  ws://127.0.0.1:Q
    let addr = |prefix: &str| -> SocketAddr {
        let at = line.find(prefix).unwrap_or_else(|| panic!("{line}")) + prefix.len();
        line[at..].split(['/', ' ', '\n']).next().unwrap().parse().unwrap()
    };
    let (http, ws) = (addr("http://"), addr("ws://"));
    for port in [http, ws] {
        let flood: Vec<TcpStream> = (0..300).filter_map(|_| TcpStream::connect(port).ok()).collect();
        assert!(flood.len() > 150, "{}", flood.len());
        thread::sleep(Duration::from_millis(1500));
        drop(flood);
    }
    // Served again: a move over HTTP and a WebSocket client.
    let start = Instant::now();
    let reply = loop {
        let agent: ureq::Agent = ureq::Agent::config_builder().http_status_as_error(false).build().into();
        if let Ok(mut r) = agent.post(&format!("http://{http}/api/move")).send(r#"{"robotmove":"alarm"}"#)
            && r.status() == 200
        {
            break r.body_mut().read_to_string().unwrap();
        }
        assert!(start.elapsed() < Duration::from_secs(20), "the HTTP listener never came back");
        thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(reply, r#"{"endmove":"true","move":"haltnoop"}"#);
    let (_socket, _) = tungstenite::connect(format!("ws://{ws}")).expect("the WebSocket listener serves again");
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGTERM).unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("cannot accept a connection"), "{stderr}");
    assert!(stderr.contains("still listening"), "{stderr}");
    let m: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let r = &m["remote"]["robots"][0];
    assert!(r["accept_errors"].as_u64().unwrap() > 0, "{r}");
    assert!(r["bad_requests"].as_u64().unwrap() > 0, "{r}");
    assert!(m["steps"].as_u64().unwrap() > 100, "the run went on");
}
