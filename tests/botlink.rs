//! Skills and the bot manager (seed 004) in a running headless simulation: observers, the
//! executor period, the emergency stop, link states with the watchdog, a real UDP client
//! driving a robot with command packets; and the manager's own side: update-all rounds, the
//! duplicate rule, connecting and disconnecting by hand, the transports, outside bots driven
//! through the bot emulator over UDP, and the `botlink` metrics.

use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

mod common;

use bevy::prelude::*;

use common::{named, pose_of, robot, shipped_scene};
use crsim::botlink::packet::{Command, ErrorCode, UPDATE_ALL_SLOTS, UpdateSlot, decode, encode, id};
use crsim::botlink::udp::{UdpEndpoint, UpdateAllSocket};
use crsim::botlink::{
    BotAdded, BotLink, BotManager, BotRemoved, BotRenamed, LinkAction, LinkChanged, LinkRequest, LinkState, LinkStats,
};
use crsim::robot::{Gripper, LampState};
use crsim::run::bot::{BotEmulator, BotStats};
use crsim::run::headless::{headless_app, run_steps};
use crsim::run::report::build_report;
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
    // The entry's move waited for the first update-all round (the 4th step: rounds come every
    // 20 ms), and the exit's stop went out with the round of the 20th step: the drive ran 16
    // steps, 0.08 s at 0.2 m/s.
    let (p, _) = pose_of(&app, r);
    assert!((p.x - 0.516).abs() < 0.0005, "x = {}", p.x);
}

#[test]
fn emergency_stop_stops_every_robot_and_opens_every_gripper() {
    let mut s = SceneFile::empty("t", 4.0, 2.0);
    s.pens.push(PenSpec { name: "pen".into(), pos: (0.65, 1.5), radius: 0.03 });
    s.robots.push(robot("holder", 0.5, 1.5, 0.0, ControllerSpec::Idle));
    s.robots.push(robot("runner", 0.5, 0.5, 0.0, ControllerSpec::Drive { linear: 0.3, angular: 0.0, lateral: 0.0 }));
    let mut app = headless_app(s, SceneSource::Generated);
    let (holder, runner) = (named(&mut app, "holder"), named(&mut app, "runner"));
    let mut f = SkillFacade::new();
    f.set(Velocity { linear: 0.1, angular: 0.0, lateral: 0.0 }).unwrap().set(Grip).unwrap();
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
    let ids: Vec<u16> = link.recent.iter().map(|c| c.command().id()).collect();
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
    slots[0] = UpdateSlot { bot: 0, linear: 0.2, angular: 0.0, lateral: 0.0, grip: false, lamp: true };
    slots[3] = UpdateSlot { bot: 2, linear: 0.0, angular: 1.0, lateral: 0.0, grip: false, lamp: false };
    slots[4] = UpdateSlot { bot: 1, linear: 0.5, angular: 0.0, lateral: 0.0, grip: false, lamp: false };
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

// ---- The bot manager's own side ----

fn link(app: &App, e: Entity) -> BotLink {
    app.world().get::<BotLink>(e).unwrap().clone()
}

fn ask(app: &mut App, bot: Entity, action: LinkAction) {
    app.world_mut().write_message(LinkRequest { bot, action });
}

fn drivers(n: usize) -> SceneFile {
    let mut s = SceneFile::empty("drivers", 10.0, 6.0);
    for i in 0..n {
        let (x, y) = (0.5 + (i % 6) as f32 * 1.5, 0.5 + (i / 6) as f32 * 1.0);
        s.robots.push(robot(
            &format!("d{i}"),
            x,
            y,
            0.0,
            ControllerSpec::Drive { linear: 0.1, angular: 0.0, lateral: 0.0 },
        ));
    }
    s
}

#[test]
fn moving_commands_go_out_in_update_all_rounds_of_five_bots() {
    let mut s = drivers(12);
    s.botlink.status_period = 0.1;
    let mut app = headless_app(s, SceneSource::Generated);
    run_steps(&mut app, 10);
    let m = app.world().resource::<crsim::sim::PerEnv<BotManager>>().only();
    // dt is the 20 ms period: a round every step, three packets of 5, 5 and 2 bots.
    assert_eq!(m.rounds, 10);
    let carried: Vec<Vec<u32>> = m.round.iter().map(|p| p.bots()).collect();
    assert_eq!(carried, vec![vec![0, 1, 2, 3, 4], vec![5, 6, 7, 8, 9], vec![10, 11]]);
    assert_eq!(m.totals.sent.update_all.packets, 30);
    assert_eq!(m.totals.sent.update_all.bytes, 30 * (4 + 5 * 11));
    // Every bot was in every round, and only status requests went by unicast (every 5th step).
    let d3 = named(&mut app, "d3");
    let l = link(&app, d3);
    assert_eq!(l.counters.sent.update_all.packets, 10);
    assert_eq!(l.counters.sent.unicast.packets, 2);
    assert_eq!(l.counters.statuses, 2, "each status request was answered");
    assert_eq!(l.state, LinkState::Online);
    // The robots took their commands from those packets, from the first step: 0.2 s at 0.1 m/s.
    assert!((pose_of(&app, d3).0.x - 5.02).abs() < 1e-4, "{:?}", pose_of(&app, d3));
}

#[test]
fn a_duplicate_unicast_within_1_ms_is_held_back_and_sent_the_step_after() {
    // No status requests in the way of the count.
    let mut s = drivers(2);
    s.botlink.status_period = 100.0;
    let mut app = headless_app(s, SceneSource::Generated);
    run_steps(&mut app, 3);
    let d1 = named(&mut app, "d1");
    let before = link(&app, d1).counters.sent.unicast.packets;
    ask(&mut app, d1, LinkAction::Motor { max_speed: 0.05, max_turn: 1.0 });
    ask(&mut app, d1, LinkAction::Motor { max_speed: 0.05, max_turn: 1.0 });
    run_steps(&mut app, 1);
    let l = link(&app, d1);
    assert_eq!(l.counters.duplicates_held, 1);
    assert_eq!(l.counters.sent.unicast.packets, before + 1);
    assert_eq!(app.world().get::<crsim::robot::Robot>(d1).unwrap().max_speed, 0.05, "the bot took its parameters");
    run_steps(&mut app, 1);
    let l = link(&app, d1);
    assert_eq!(l.counters.sent.unicast.packets, before + 2, "the held copy left a step later");
    assert_eq!(app.world().resource::<crsim::sim::PerEnv<BotManager>>().only().totals.duplicates_held, 1);
    // A third copy while one waits deletes the waiting one.
    for _ in 0..3 {
        ask(&mut app, d1, LinkAction::Motor { max_speed: 0.06, max_turn: 1.0 });
    }
    run_steps(&mut app, 2);
    let l = link(&app, d1);
    assert_eq!((l.counters.duplicates_held, l.counters.duplicates_dropped), (3, 1));
    assert_eq!(l.counters.sent.unicast.packets, before + 4);
}

#[test]
fn a_bot_disconnected_by_hand_stops_and_comes_back_when_connected() {
    let mut app = headless_app(drivers(2), SceneSource::Generated);
    let log = with_log(&mut app);
    let d0 = named(&mut app, "d0");
    run_steps(&mut app, 10);
    ask(&mut app, d0, LinkAction::Disconnect);
    run_steps(&mut app, 1);
    assert_eq!(state(&app, d0), LinkState::Offline);
    let stopped = pose_of(&app, d0).0;
    run_steps(&mut app, 20);
    assert_eq!(pose_of(&app, d0).0, stopped, "no command reaches a disconnected bot");
    let l = link(&app, d0);
    assert_eq!(l.counters.sent.update_all.packets, 10, "it left the rounds");
    ask(&mut app, d0, LinkAction::Connect);
    run_steps(&mut app, 1);
    // The ping sent on connecting was answered within the step.
    assert_eq!(state(&app, d0), LinkState::Online);
    run_steps(&mut app, 10);
    assert!(pose_of(&app, d0).0.x > stopped.x + 0.009, "driving again");
    let events: Vec<String> = log.take().into_iter().filter(|e| e.starts_with("link")).collect();
    assert_eq!(events, vec!["link Online -> Offline", "link Offline -> Connecting", "link Connecting -> Online"]);
    let l = link(&app, d0);
    assert_eq!(l.counters.state_changes, 3);
    // The disconnect, the ping, the motor parameters on connecting, and the status requests.
    assert!(l.counters.sent.unicast.packets >= 3);
    // Reconnect goes through offline and connecting again.
    ask(&mut app, d0, LinkAction::Reconnect);
    run_steps(&mut app, 1);
    assert_eq!(state(&app, d0), LinkState::Online);
    assert_eq!(link(&app, d0).counters.state_changes, 6);
    // The other bot never noticed.
    let d1 = named(&mut app, "d1");
    assert_eq!(link(&app, d1).counters.state_changes, 0);
}

#[test]
fn the_udp_transport_gives_the_same_run_as_in_process_with_and_without_multicast() {
    let run = |transport: Transport, multicast: Option<&str>| {
        let mut s = shipped_scene("collectors.ron");
        s.botlink.transport = transport;
        s.botlink.multicast = multicast.map(str::to_string);
        let mut app = headless_app(s, SceneSource::Generated);
        run_steps(&mut app, 300);
        let report = build_report(app.world_mut(), 0.0);
        (report.hash, report.sections["botlink"].clone())
    };
    let (here, b_here) = run(Transport::InProcess, None);
    let (udp, b_udp) = run(Transport::Udp, None);
    let (group, b_group) = run(Transport::Udp, Some("239.255.42.98:10098"));
    assert_eq!(udp, here);
    assert_eq!(group, here);
    let packets = |b: &serde_json::Value, method: &str| b["total"]["sent"][method]["packets"].as_u64().unwrap();
    let rounds = b_here["rounds"].as_u64().unwrap();
    assert_eq!(rounds, 300);
    assert!(packets(&b_here, "update_all") >= 300);
    assert_eq!(packets(&b_udp, "update_all"), 0);
    // Without a group every packet goes to each of its bots.
    let bots = b_here["bots"].as_object().unwrap().len() as u64;
    assert_eq!(packets(&b_udp, "update_all_unicast"), rounds * bots);
    if b_group["multicast"].is_string() {
        assert_eq!(packets(&b_group, "multicast"), packets(&b_here, "update_all"));
    } else {
        assert!(b_group["multicast_fallback"].as_str().unwrap().contains("unicast"));
    }
    for b in [&b_here, &b_udp, &b_group] {
        assert_eq!(b["total"]["statuses"], b_here["total"]["statuses"], "{b}");
        assert_eq!(b["total"]["replies_missed"], 0, "{b}");
    }
}

/// A bot emulator serving on its own thread until stopped; returns its counters.
struct Emulated {
    address: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<BotStats>,
}

impl Emulated {
    fn start(scene: SceneFile, robot: &str) -> Emulated {
        let (tx, rx) = std::sync::mpsc::channel();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let robot = robot.to_string();
        let thread = std::thread::spawn(move || {
            let mut bot = BotEmulator::new(scene, SceneSource::Generated, &robot, "127.0.0.1", 0).unwrap();
            tx.send(bot.local).unwrap();
            bot.serve(|| flag.load(Ordering::Relaxed));
            bot.stats
        });
        let address = rx.recv_timeout(Duration::from_secs(30)).expect("the emulator starts");
        Emulated { address, stop, thread }
    }

    fn stop(self) -> BotStats {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().unwrap()
    }
}

#[test]
fn the_explorer_drives_an_outside_bot_emulator_around_its_room_over_udp() {
    let room = shipped_scene("explorer.ron");
    let bot = Emulated::start(room.clone(), "explorer");
    let mut outside = room.clone();
    outside.robots[0].outside = Some(bot.address.to_string());
    outside.botlink.reply_timeout = 1.0;
    let mut app = headless_app(outside, SceneSource::Generated);
    let e = named(&mut app, "explorer");
    assert_eq!(state(&app, e), LinkState::Connecting);
    until_online(&mut app, e);
    let connected_at = app.world().resource::<SimTime>().step;
    run_steps(&mut app, 5000 - connected_at);
    let l = link(&app, e);
    assert_eq!(l.state, LinkState::Online);
    let report = build_report(app.world_mut(), 0.0);
    let stats = bot.stop();

    // The same explorer inside the process, for comparison.
    let mut here = headless_app(room, SceneSource::Generated);
    run_steps(&mut here, 5000);
    let inside = build_report(here.world_mut(), 0.0);
    let coverage = |r: &crsim::run::report::RunReport| r.sections["explore"]["coverage"].as_f64().unwrap();
    let (far, near) = (coverage(&report), coverage(&inside));
    assert!(far > 0.03, "the outside bot explored: {far}");
    assert!((far - near).abs() < 0.5 * near, "outside {far}, inside {near}");
    let (distance, inside) = (report.robots[0].distance_m, inside.robots[0].distance_m);
    eprintln!("coverage outside {far} inside {near}; distance outside {distance} inside {inside}");
    assert!(distance > 3.0, "it drove around: {distance} m");

    // Every packet is accounted for: what the manager sent the bot reached it, and every status
    // it sent back was taken.
    let c = &l.counters;
    let sent = c.sent.unicast.packets + c.sent.update_all_unicast.packets + c.sent.multicast.packets;
    assert_eq!(stats.received.packets, sent, "{stats:?} {c:?}");
    assert_eq!(stats.malformed + stats.refused, 0);
    assert_eq!(c.statuses, stats.statuses.packets);
    assert_eq!(c.received.packets, stats.statuses.packets + stats.errors.packets);
    assert_eq!(stats.rounds, c.sent.update_all_unicast.packets, "one round of its world per update-all packet");
    assert_eq!(c.replies_missed, 0);
    let b = &report.sections["botlink"]["bots"]["explorer"];
    assert_eq!(b["state"], "online");
    assert_eq!(b["outside"], bot_address(&l));
}

/// Steps until the outside bot `e` is online (its emulator answers on its own thread).
fn until_online(app: &mut App, e: Entity) {
    for _ in 0..2000 {
        if state(app, e) == LinkState::Online {
            return;
        }
        run_steps(app, 1);
        std::thread::sleep(Duration::from_millis(1));
    }
    panic!("the outside bot did not connect");
}

fn bot_address(l: &BotLink) -> String {
    l.outside.unwrap().to_string()
}

#[test]
fn the_manager_watchdog_drops_a_silent_outside_bot_to_connecting() {
    let mut room = SceneFile::empty("room", 4.0, 3.0);
    room.robots.push(robot("far", 2.0, 1.5, 0.0, ControllerSpec::Drive { linear: 0.1, angular: 0.0, lateral: 0.0 }));
    room.botlink.watchdog = 0.5;
    room.botlink.reply_timeout = 0.01;
    let bot = Emulated::start(room.clone(), "far");
    room.robots[0].outside = Some(bot.address.to_string());
    let mut app = headless_app(room, SceneSource::Generated);
    let e = named(&mut app, "far");
    until_online(&mut app, e);
    run_steps(&mut app, 20);
    assert_eq!(state(&app, e), LinkState::Online);
    let moved = pose_of(&app, e).0.x;
    assert!(moved > 2.01, "its reported pose moved: {moved}");
    bot.stop();
    // 0.5 s of silence: 25 steps.
    run_steps(&mut app, 30);
    let l = link(&app, e);
    assert_eq!(l.state, LinkState::Connecting);
    assert_eq!(l.counters.watchdog_stops, 1);
    assert!(l.counters.replies_missed > 0);
    // Connecting, it gets the stop commands every round and a ping every status period.
    let before = l.counters.sent.unicast.packets;
    run_steps(&mut app, 10);
    assert!(link(&app, e).counters.sent.unicast.packets >= before + 20);
    assert_eq!(state(&app, e), LinkState::Connecting, "a bot that never answers stays connecting");
}

#[test]
fn an_outside_bot_answering_garbage_is_counted_and_stays_connecting() {
    let liar = UdpSocket::bind("127.0.0.1:0").unwrap();
    liar.set_read_timeout(Some(Duration::from_millis(5))).unwrap();
    let mut room = SceneFile::empty("room", 4.0, 3.0);
    let mut r = robot("liar", 2.0, 1.5, 0.0, ControllerSpec::Idle);
    r.outside = Some(liar.local_addr().unwrap().to_string());
    room.robots.push(r);
    let mut unreachable = robot("v6", 1.0, 1.5, 0.0, ControllerSpec::Idle);
    unreachable.outside = Some("[::1]:7001".into());
    room.robots.push(unreachable);
    room.botlink.reply_timeout = 0.0;
    let mut app = headless_app(room, SceneSource::Generated);
    let e = named(&mut app, "liar");
    let mut buf = [0u8; 256];
    for _ in 0..20 {
        run_steps(&mut app, 1);
        while let Ok((_, from)) = liar.recv_from(&mut buf) {
            liar.send_to(&[0xde, 0xad, 0xbe], from).unwrap();
        }
    }
    run_steps(&mut app, 1);
    let l = link(&app, e);
    assert_eq!(l.state, LinkState::Connecting);
    assert!(l.counters.malformed >= 10, "{:?}", l.counters);
    assert!(l.last_error.as_deref().unwrap_or("").contains("short packet"), "{:?}", l.last_error);
    // An address the manager's socket cannot send to is an error naming the bot, not a panic.
    let v6 = named(&mut app, "v6");
    let v6 = link(&app, v6);
    assert!(v6.counters.send_errors > 0);
    assert!(v6.last_error.as_deref().unwrap_or("").contains("UDP to [::1]:7001"), "{:?}", v6.last_error);
    assert_eq!(v6.state, LinkState::Connecting);
}

#[test]
fn without_a_reply_timeout_the_manager_does_not_wait_and_counts_no_missed_replies() {
    let mut room = SceneFile::empty("room", 4.0, 3.0);
    room.robots.push(robot("far", 2.0, 1.5, 0.0, ControllerSpec::Drive { linear: 0.1, angular: 0.0, lateral: 0.0 }));
    room.botlink.reply_timeout = 0.0;
    let bot = Emulated::start(room.clone(), "far");
    room.robots[0].outside = Some(bot.address.to_string());
    let mut app = headless_app(room, SceneSource::Generated);
    let e = named(&mut app, "far");
    until_online(&mut app, e);
    // At least 50 steps, and on until 40 answers were taken (a loaded machine may keep the bot's
    // thread waiting; the manager never does).
    let start = std::time::Instant::now();
    let mut steps = 0;
    while steps < 50 || (link(&app, e).counters.statuses < 40 && start.elapsed() < Duration::from_secs(20)) {
        run_steps(&mut app, 1);
        std::thread::sleep(Duration::from_millis(1));
        steps += 1;
    }
    let stats = bot.stop();
    run_steps(&mut app, 1);
    let l = link(&app, e);
    assert_eq!(l.counters.replies_missed, 0);
    assert!(stats.rounds >= 50, "{stats:?}");
    assert!(l.counters.statuses >= 40, "answers are taken when they come: {:?}", l.counters);
}

#[test]
fn an_outside_bot_that_never_answers_falls_back_to_offline_and_is_sent_nothing_more() {
    // scenes/explorer-outside.ron with no `crsim bot` playing its explorer.
    let mut app = headless_app(shipped_scene("explorer-outside.ron"), SceneSource::Generated);
    let e = named(&mut app, "explorer");
    assert_eq!(state(&app, e), LinkState::Connecting);
    let timeout = app.world().resource::<crsim::scene::ActiveScene>().scene.botlink.connect_timeout;
    let dt = app.world().resource::<SimTime>().dt_exact;
    let steps = (f64::from(timeout) / dt).round() as u64;
    run_steps(&mut app, steps - 2);
    assert_eq!(state(&app, e), LinkState::Connecting, "it has the connect timeout to answer");
    run_steps(&mut app, 4);
    let l = link(&app, e);
    assert_eq!(l.state, LinkState::Offline, "seed 004: a connection that fails falls back to disconnected");
    assert_eq!((l.counters.connect_failures, l.counters.state_changes), (1, 1));
    assert!(l.last_error.as_deref().unwrap_or("").contains("connect timeout"), "{:?}", l.last_error);
    let sent = l.packets_sent;
    run_steps(&mut app, 3000);
    assert_eq!(link(&app, e).packets_sent, sent, "nothing more goes to a bot that is offline");
    // Connected by hand, it gets the same time again.
    ask(&mut app, e, LinkAction::Connect);
    run_steps(&mut app, 1);
    assert_eq!(state(&app, e), LinkState::Connecting);
    run_steps(&mut app, steps + 2);
    let l = link(&app, e);
    assert_eq!((l.state, l.counters.connect_failures, l.counters.state_changes), (LinkState::Offline, 2, 3));
    let report = build_report(app.world_mut(), 0.0);
    assert_eq!(report.sections["botlink"]["total"]["connect_failures"], 2);
}

/// A deterministic UDP controller for robot `name`: drives with a turn that depends on the pose
/// in each status it gets back, for `steps` packets, sleeping up to `jitter` ms (varied) between
/// a status and its next packet.
fn steering(addr: SocketAddr, steps: u32, jitter: u64) -> std::thread::JoinHandle<Vec<(f32, f32)>> {
    std::thread::spawn(move || {
        let client = Client::new();
        let mut seen = Vec::new();
        let mut command = Command::Move { linear: 0.3, angular: 0.0 };
        for i in 0..steps {
            if jitter > 0 {
                std::thread::sleep(Duration::from_micros(u64::from(i * 7919) % (jitter * 1000)));
            }
            client.send(addr, &encode(&command));
            let Command::Status(s) = client.reply() else { panic!("status expected") };
            seen.push((s.x, s.y));
            let angular = if s.y > 1.5 { -0.6 } else { 0.6 };
            command = Command::Move { linear: 0.3, angular };
        }
        seen
    })
}

/// Runs two steering controllers against a lock-step headless scene for `steps` steps; the
/// trajectory hash and what the first controller saw.
fn lockstep_run(steps: u32, jitter: u64) -> (String, Vec<(f32, f32)>) {
    let mut scene = external_scene();
    scene.programs.step_timeout = 10.0;
    let mut app = crsim::run::headless::headless_app_with(scene, SceneSource::Generated, |app| {
        app.insert_resource(crsim::botlink::udp::UdpLockstep(true));
    });
    let (a, b) = (named(&mut app, "udp"), named(&mut app, "udp2"));
    let (a, b) = (steering(endpoint(&app, a), steps, jitter), steering(endpoint(&app, b), steps, jitter * 2));
    // waitForRobots: no step until both controllers have spoken.
    let start = std::time::Instant::now();
    while app.world().resource::<crsim::sim::StepGate>().held() {
        app.update();
        assert!(start.elapsed() < Duration::from_secs(20), "the controllers never spoke");
    }
    assert_eq!(app.world().resource::<SimTime>().step, 0);
    run_steps(&mut app, u64::from(steps));
    let seen = a.join().unwrap();
    b.join().unwrap();
    assert_eq!(app.world().resource::<crsim::botlink::LinkStats>().late, 0);
    (app.world().resource::<crsim::sim::PerEnv<crsim::sim::TrajectoryHash>>().only().hex(), seen)
}

#[test]
fn robots_driven_over_udp_in_lock_step_give_the_same_run_whatever_the_controllers_timing() {
    let (hash, seen) = lockstep_run(150, 0);
    assert_eq!(seen.len(), 150);
    assert!(seen[149].0 > seen[0].0 + 0.5, "it drove: {:?}", seen[149]);
    let (again, seen_again) = lockstep_run(150, 3);
    assert_eq!(again, hash, "a controller's timing does not change the run");
    assert_eq!(seen_again, seen);
}

#[test]
fn a_late_udp_controller_is_treated_as_the_scenes_late_policy_says() {
    let mut scene = external_scene();
    scene.programs.step_timeout = 0.05;
    scene.programs.late = LatePolicy::Stop;
    scene.robots.retain(|r| r.name != "udp2");
    let mut app = crsim::run::headless::headless_app_with(scene, SceneSource::Generated, |app| {
        app.insert_resource(crsim::botlink::udp::UdpLockstep(true));
    });
    let r = named(&mut app, "udp");
    let controller = steering(endpoint(&app, r), 10, 0);
    while app.world().resource::<crsim::sim::StepGate>().held() {
        app.update();
    }
    run_steps(&mut app, 10);
    controller.join().unwrap();
    let moving = pose_of(&app, r).0;
    run_steps(&mut app, 10);
    assert_eq!(app.world().resource::<crsim::botlink::LinkStats>().late, 10);
    let x = pose_of(&app, r).0.x;
    assert!((x - moving.x).abs() < 0.01, "a late controller's robot stops: {moving} -> {x}");
}
