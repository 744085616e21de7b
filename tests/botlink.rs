//! Skills and the bot manager (seed 004) in a running headless simulation: observers, the
//! executor period, the emergency stop, link states with the watchdog, and a real UDP client
//! driving a robot with command packets.

use std::net::{SocketAddr, UdpSocket};
use std::sync::{Arc, Mutex};
use std::time::Duration;

mod common;

use bevy::prelude::*;

use common::{named, pose_of, robot};
use crsim::botlink::packet::{Command, ErrorCode, UPDATE_ALL_SLOTS, UpdateSlot, decode, encode, id};
use crsim::botlink::udp::{UdpEndpoint, UpdateAllSocket};
use crsim::botlink::{BotAdded, BotLink, BotRemoved, BotRenamed, LinkChanged, LinkState, LinkStats};
use crsim::robot::{Gripper, LampState};
use crsim::run::headless::{headless_app, run_steps};
use crsim::scene::schema::*;
use crsim::scene::{PendingScene, SceneSource};
use crsim::sim::SimTime;
use crsim::skills::{
    Blink, EmergencyStop, Executor, Grip, MoveAhead, MoveFor, SkillCompleted, SkillFacade, SkillGroup, SkillRequest,
    SkillStarted, TurnBy, Velocity,
};

/// Records every observer event of the skill system and the bot manager.
#[derive(Resource, Default, Clone)]
struct Log(Arc<Mutex<Vec<String>>>);

fn with_log(app: &mut App) -> Log {
    let log = Log::default();
    let push = |log: &Log, s: String| log.0.lock().unwrap().push(s);
    let l = log.clone();
    app.add_observer(move |e: On<SkillStarted>| push(&l, format!("started {} {:?}", e.skill, e.group)));
    let l = log.clone();
    app.add_observer(move |e: On<SkillCompleted>| push(&l, format!("completed {} replaced={}", e.skill, e.replaced)));
    let l = log.clone();
    app.add_observer(move |e: On<BotAdded>| push(&l, format!("added {}", e.name)));
    let l = log.clone();
    app.add_observer(move |e: On<BotRemoved>| push(&l, format!("removed {}", e.name)));
    let l = log.clone();
    app.add_observer(move |e: On<BotRenamed>| push(&l, format!("renamed {} -> {}", e.old, e.new)));
    let l = log.clone();
    app.add_observer(move |e: On<LinkChanged>| push(&l, format!("link {:?} -> {:?}", e.from, e.to)));
    log
}

impl Log {
    fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

fn request(app: &mut App, e: Entity, facade: SkillFacade) {
    app.world_mut().get_mut::<SkillRequest>(e).unwrap().0 = Some(facade);
}

#[test]
fn bots_are_announced_added_removed_and_renamed() {
    let mut s = SceneFile::empty("t", 3.0, 2.0);
    s.robots.push(robot("a", 0.5, 1.0, 0.0, ControllerSpec::Idle));
    s.robots.push(robot("b", 1.5, 1.0, 0.0, ControllerSpec::Idle));
    // Observers must exist before the scene loads: build the app by hand.
    let mut app = App::new();
    app.add_plugins((MinimalPlugins, TransformPlugin, crsim::SimPlugin));
    let log = with_log(&mut app);
    app.world_mut().resource_mut::<PendingScene>().request(s.clone(), SceneSource::Generated);
    app.finish();
    app.cleanup();
    app.update();
    assert_eq!(log.take(), vec!["added a", "added b"]);
    let a = named(&mut app, "a");
    app.world_mut().entity_mut(a).insert(Name::new("alpha"));
    run_steps(&mut app, 1);
    assert_eq!(log.take(), vec!["renamed a -> alpha"]);
    app.world_mut().resource_mut::<PendingScene>().request(s, SceneSource::Generated);
    app.update();
    let events = log.take();
    assert_eq!(events, vec!["removed alpha", "removed b", "added a", "added b"]);
}

#[test]
fn skills_start_complete_and_replace_with_observer_events() {
    let mut s = SceneFile::empty("t", 3.0, 2.0);
    s.robots.push(robot("r", 0.5, 1.0, 0.0, ControllerSpec::Idle));
    let mut app = headless_app(s, SceneSource::Generated);
    let log = with_log(&mut app);
    let r = named(&mut app, "r");
    let mut facade = SkillFacade::new();
    facade.set(MoveAhead::new(0.3, 0.3)).unwrap().set(Blink::new(0.2)).unwrap();
    request(&mut app, r, facade);
    run_steps(&mut app, 1);
    assert_eq!(log.take(), vec!["started MoveAhead Move", "started Blink Lamp"]);
    assert!(app.world().get::<LampState>(r).unwrap().on);
    run_steps(&mut app, 100);
    // 0.3 m at 0.3 m/s: done after about 1 s, with its exit action stopping the drive.
    assert_eq!(log.take(), vec!["completed MoveAhead replaced=false"]);
    let (p, _) = pose_of(&app, r);
    assert!((p.x - 0.8).abs() < 0.005, "x = {}", p.x);
    assert!(app.world().get::<Executor>(r).unwrap().0.running(SkillGroup::Move).is_none());
    // The same skill again is ignored; a different one replaces it at once.
    request(&mut app, r, SkillFacade::with(Blink::new(0.2)));
    run_steps(&mut app, 1);
    assert_eq!(log.take(), Vec::<String>::new());
    request(&mut app, r, SkillFacade::with(Blink::new(0.5)));
    run_steps(&mut app, 1);
    assert_eq!(log.take(), vec!["completed Blink replaced=true", "started Blink Lamp"]);
    // Turning 90° through the skill system.
    request(&mut app, r, SkillFacade::with(TurnBy::new(std::f32::consts::FRAC_PI_2)));
    run_steps(&mut app, 60);
    let (_, heading) = pose_of(&app, r);
    assert!((heading.to_degrees() - 90.0).abs() < 1.0, "heading {}", heading.to_degrees());
    assert_eq!(log.take(), vec!["started TurnBy Move", "completed TurnBy replaced=false"]);
}

#[test]
fn the_executor_ticks_every_20_ms_of_simulated_time() {
    let mut s = SceneFile::empty("t", 3.0, 2.0);
    s.dt = 0.005;
    s.robots.push(robot("r", 0.5, 1.0, 0.0, ControllerSpec::Idle));
    let mut app = headless_app(s, SceneSource::Generated);
    let log = with_log(&mut app);
    let r = named(&mut app, "r");
    // 0.1 s of driving is five executor ticks: with 5 ms steps, 20 steps.
    request(&mut app, r, SkillFacade::with(MoveFor::new(0.2, 0.0, 0.1)));
    run_steps(&mut app, 19);
    assert_eq!(log.take(), vec!["started MoveFor Move"]);
    run_steps(&mut app, 1);
    assert_eq!(log.take(), vec!["completed MoveFor replaced=false"]);
    // The drive ran for the 20 steps between entry and exit: 0.1 s at 0.2 m/s.
    let (p, _) = pose_of(&app, r);
    assert!((p.x - 0.52).abs() < 0.002, "x = {}", p.x);
}

#[test]
fn emergency_stop_stops_every_robot_and_opens_every_gripper() {
    let mut s = SceneFile::empty("t", 4.0, 2.0);
    s.pens.push(PenSpec { name: "pen".into(), pos: (0.65, 1.5), radius: 0.03 });
    s.robots.push(robot("holder", 0.5, 1.5, 0.0, ControllerSpec::Idle));
    s.robots.push(robot("runner", 0.5, 0.5, 0.0, ControllerSpec::Drive { linear: 0.3, angular: 0.0 }));
    let mut app = headless_app(s, SceneSource::Generated);
    let (holder, runner) = (named(&mut app, "holder"), named(&mut app, "runner"));
    let mut f = SkillFacade::new();
    f.set(Velocity { linear: 0.1, angular: 0.0 }).unwrap().set(Grip).unwrap();
    request(&mut app, holder, f);
    run_steps(&mut app, 20);
    assert!(app.world().get::<Gripper>(holder).unwrap().holding.is_some());
    app.world_mut().resource_mut::<EmergencyStop>().engaged = true;
    run_steps(&mut app, 2);
    let before = (pose_of(&app, holder).0, pose_of(&app, runner).0);
    run_steps(&mut app, 50);
    assert!(pose_of(&app, holder).0.distance(before.0) < 1e-4);
    assert!(pose_of(&app, runner).0.distance(before.1) < 1e-4, "the Drive controller is held off too");
    assert!(app.world().get::<Gripper>(holder).unwrap().holding.is_none());
    app.world_mut().resource_mut::<EmergencyStop>().engaged = false;
    run_steps(&mut app, 25);
    assert!(pose_of(&app, runner).0.x > before.1.x + 0.1, "released: the controller drives again");
}

/// A UDP client in the test, talking to a headless scene stepped between packets.
struct Client {
    socket: UdpSocket,
}

impl Client {
    fn new() -> Self {
        let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
        socket.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        Self { socket }
    }

    fn send(&self, to: SocketAddr, bytes: &[u8]) {
        self.socket.send_to(bytes, to).unwrap();
    }

    fn reply(&self) -> Command {
        let mut buf = [0u8; 2048];
        let (n, _) = self.socket.recv_from(&mut buf).expect("a reply");
        decode(&buf[..n]).expect("a valid reply packet")
    }
}

fn external_scene() -> SceneFile {
    let mut s = SceneFile::empty("remote", 6.0, 3.0);
    s.botlink.update_all_port = Some(0);
    s.pens.push(PenSpec { name: "pen".into(), pos: (4.2, 1.5), radius: 0.03 });
    s.robots.push(robot("udp", 0.5, 1.5, 0.0, ControllerSpec::External { port: 0 }));
    s.robots.push(robot("local", 0.5, 0.5, 0.0, ControllerSpec::Idle));
    s.robots.push(robot("udp2", 0.5, 2.5, 0.0, ControllerSpec::External { port: 0 }));
    s
}

fn endpoint(app: &App, e: Entity) -> SocketAddr {
    app.world().get::<UdpEndpoint>(e).and_then(|ep| ep.local).expect("bound")
}

fn state(app: &App, e: Entity) -> LinkState {
    app.world().get::<BotLink>(e).unwrap().state
}

#[test]
fn a_udp_client_drives_a_robot_across_the_arena_and_reads_its_status() {
    let mut app = headless_app(external_scene(), SceneSource::Generated);
    let log = with_log(&mut app);
    let (r, local) = (named(&mut app, "udp"), named(&mut app, "local"));
    let addr = endpoint(&app, r);
    assert_eq!(state(&app, r), LinkState::Connecting);
    assert_eq!(state(&app, local), LinkState::Online);
    let client = Client::new();
    // Ask for status: the first packet makes the link online.
    client.send(addr, &encode(&Command::StatusRequest));
    run_steps(&mut app, 1);
    let Command::Status(s) = client.reply() else { panic!("status expected") };
    assert_eq!((s.bot, s.x, s.y, s.held.clone()), (0, 0.5, 1.5, None));
    assert_eq!(state(&app, r), LinkState::Online);
    assert_eq!(log.take(), vec!["link Connecting -> Online"]);
    // Drive east at 0.4 m/s, re-sending the command as a controller does (the watchdog is 2 s).
    let mut last = None;
    for _ in 0..20 {
        client.send(addr, &encode(&Command::Move { linear: 0.4, angular: 0.0 }));
        run_steps(&mut app, 22);
        last = Some(client.reply());
    }
    let Some(Command::Status(s)) = last else { panic!("status expected") };
    // Commands act in the step they arrive: 440 steps of 20 ms at 0.4 m/s is 3.52 m east. The
    // last status was taken when the last command arrived, 22 steps before the end.
    assert!((s.x - (0.5 + 418.0 * 0.008)).abs() < 0.005, "status x = {}", s.x);
    assert!((pose_of(&app, r).0.x - 4.02).abs() < 0.005, "x = {}", pose_of(&app, r).0.x);
    // Stop at the pen, grip it, and read it back in the status.
    client.send(addr, &encode(&Command::Move { linear: 0.0, angular: 0.0 }));
    run_steps(&mut app, 1);
    client.reply();
    client.send(addr, &encode(&Command::Grip { close: true }));
    run_steps(&mut app, 2);
    client.reply();
    client.send(addr, &encode(&Command::Lamp { on: true }));
    run_steps(&mut app, 1);
    let Command::Status(s) = client.reply() else { panic!() };
    assert_eq!(s.held.as_deref(), Some("pen"));
    assert!(app.world().get::<LampState>(r).unwrap().on);
    // Every command reached the robot as a packet and is listed in its link.
    let link = app.world().get::<BotLink>(r).unwrap();
    let ids: Vec<u16> = link.recent.iter().map(|c| c.command.id()).collect();
    assert!(ids.ends_with(&[id::MOVE, id::GRIP, id::LAMP]), "{ids:?}");
    // The robot driven from inside never noticed any of it.
    assert_eq!(pose_of(&app, local).0, Vec2::new(0.5, 0.5));
}

#[test]
fn the_watchdog_drops_a_silent_robot_to_connecting_and_stops_it() {
    let mut app = headless_app(external_scene(), SceneSource::Generated);
    let log = with_log(&mut app);
    let r = named(&mut app, "udp");
    let addr = endpoint(&app, r);
    let client = Client::new();
    client.send(addr, &encode(&Command::Move { linear: 0.3, angular: 0.0 }));
    run_steps(&mut app, 1);
    client.reply();
    assert_eq!(state(&app, r), LinkState::Online);
    // Silence: after 2 s of simulated time (100 steps) the link drops, never to offline.
    run_steps(&mut app, 99);
    assert_eq!(state(&app, r), LinkState::Online);
    let moving = pose_of(&app, r).0.x;
    assert!(moving > 0.9);
    run_steps(&mut app, 2);
    assert_eq!(state(&app, r), LinkState::Connecting);
    assert_eq!(log.take(), vec!["link Connecting -> Online", "link Online -> Connecting"]);
    let stopped = pose_of(&app, r).0.x;
    run_steps(&mut app, 50);
    assert!((pose_of(&app, r).0.x - stopped).abs() < 0.01, "stopped safely");
    // A packet brings it back online; an explicit disconnect makes it offline.
    client.send(addr, &encode(&Command::Ping));
    run_steps(&mut app, 1);
    client.reply();
    client.send(addr, &encode(&Command::Disconnect));
    run_steps(&mut app, 1);
    client.reply();
    assert_eq!(state(&app, r), LinkState::Offline);
    // From offline, a packet goes through connecting to online.
    client.send(addr, &encode(&Command::Ping));
    run_steps(&mut app, 1);
    client.reply();
    assert_eq!(
        log.take(),
        vec![
            "link Connecting -> Online",
            "link Online -> Offline",
            "link Offline -> Connecting",
            "link Connecting -> Online"
        ]
    );
}

#[test]
fn malformed_datagrams_are_answered_with_errors_and_counted() {
    let mut app = headless_app(external_scene(), SceneSource::Generated);
    let r = named(&mut app, "udp");
    let addr = endpoint(&app, r);
    let client = Client::new();
    let cases: Vec<(Vec<u8>, ErrorCode, &str)> = vec![
        (vec![1, 2], ErrorCode::Malformed, "short packet"),
        (vec![0x77, 0x07, 0, 0], ErrorCode::UnknownCommand, "unknown command id 0x0777"),
        (vec![0x01, 0x05, 8, 0, 0, 0], ErrorCode::Malformed, "declares 8 payload bytes but 2 follow"),
        (vec![0x01, 0x05, 0xff, 0x7f], ErrorCode::Malformed, "exceeds the maximum"),
        (encode(&Command::UpdateAll([UpdateSlot::EMPTY; UPDATE_ALL_SLOTS])), ErrorCode::NotAllowed, "not accepted"),
    ];
    for (bytes, code, reason) in &cases {
        client.send(addr, bytes);
        run_steps(&mut app, 1);
        match client.reply() {
            Command::Error { code: c, reason: r } => {
                assert_eq!(c, *code, "{r}");
                assert!(r.contains(reason), "{r} should mention {reason}");
            }
            other => panic!("expected an error, got {other:?}"),
        }
    }
    let stats = app.world().resource::<LinkStats>().clone();
    assert_eq!((stats.packets_received, stats.malformed, stats.refused, stats.errors_sent), (5, 4, 1, 5));
    // The simulation goes on and the robot still answers.
    client.send(addr, &encode(&Command::Ping));
    run_steps(&mut app, 1);
    assert!(matches!(client.reply(), Command::Status(_)));
    assert_eq!(app.world().resource::<SimTime>().step, 6);
}

#[test]
fn update_all_drives_several_robots_and_refuses_a_sixth_slot() {
    let mut app = headless_app(external_scene(), SceneSource::Generated);
    let (r0, r2) = (named(&mut app, "udp"), named(&mut app, "udp2"));
    let addr = app.world().resource::<UpdateAllSocket>().local.expect("update-all bound");
    let client = Client::new();
    let mut slots = [UpdateSlot::EMPTY; UPDATE_ALL_SLOTS];
    slots[0] = UpdateSlot { bot: 0, linear: 0.2, angular: 0.0, grip: false, lamp: true };
    slots[3] = UpdateSlot { bot: 2, linear: 0.0, angular: 1.0, grip: false, lamp: false };
    slots[4] = UpdateSlot { bot: 1, linear: 0.5, angular: 0.0, grip: false, lamp: false };
    client.send(addr, &encode(&Command::UpdateAll(slots)));
    run_steps(&mut app, 50);
    let mut replies = vec![client.reply(), client.reply(), client.reply()];
    replies.sort_by_key(|c| format!("{c:?}"));
    let statuses: Vec<u16> =
        replies.iter().filter_map(|c| if let Command::Status(s) = c { Some(s.bot) } else { None }).collect();
    assert_eq!(statuses, vec![0, 2]);
    assert!(
        replies
            .iter()
            .any(|c| matches!(c, Command::Error { code: ErrorCode::UnknownBot, reason } if reason.contains("slot 4"))),
        "robot 1 is driven from inside: {replies:?}"
    );
    assert!((pose_of(&app, r0).0.x - 0.5 - 0.2 * 0.98).abs() < 0.01);
    assert!((pose_of(&app, r2).1 - 0.98).abs() < 0.02, "turned 1 rad/s for 0.98 s");
    assert!(app.world().get::<LampState>(r0).unwrap().on);
    // Six slots are refused with an error packet; nothing moves.
    let mut six = encode(&Command::UpdateAll(slots));
    six.extend(six[4..15].to_vec());
    six[2] = 66;
    client.send(addr, &six);
    let before = pose_of(&app, r2).1;
    run_steps(&mut app, 1);
    match client.reply() {
        Command::Error { code, reason } => {
            assert_eq!(code, ErrorCode::TooManySlots);
            assert!(reason.contains("6 slots"), "{reason}");
        }
        other => panic!("expected an error, got {other:?}"),
    }
    // The turn command of the earlier packet still runs; the refused one changed nothing.
    assert!((pose_of(&app, r2).1 - before - 0.02).abs() < 0.005);
}
