//! `crsim bot`: one robot of a scene played as a bot outside crsim, for a bot manager to drive
//! over UDP — the manager of another crsim (a scene robot with `outside: Some("ADDR:PORT")`)
//! or any program speaking the packets.
//!
//! The emulator keeps the scene's walls, boxes, pens, dens and stations and only the named
//! robot, in its own physics world. It takes command packets on its port (and update-all packets
//! on the scene's multicast group, when there is one), and answers every valid packet with a
//! status: pose, battery, bump, held pen, under the robot's bot id in the scene (its index).
//! Its clock is the manager's: an update-all packet with its slot runs 20 ms of its world, so
//! it keeps step with the manager however fast or slow that runs. Like a real bot, it stops its
//! motors when no packet has come for the scene's watchdog period (wall clock).

use std::net::{SocketAddr, UdpSocket};
use std::path::Path;
use std::time::{Duration, Instant};

use bevy::prelude::*;
use serde::Serialize;

use super::headless::{headless_app, run_steps};
use crate::botlink::manager::{Traffic, UPDATE_ALL_PERIOD};
use crate::botlink::packet::{Command, EMPTY_SLOT, ErrorCode, Status, decode, encode};
use crate::botlink::transport::{join_group, obey, receive_all};
use crate::robot::{Battery, BumpSensor, DriveCommand, GripCommand, Gripper, LampState, Robot, pose};
use crate::scene::SceneSource;
use crate::scene::load::load_scene_file;
use crate::scene::schema::{ControllerSpec, SceneFile};

/// What the emulator received and sent.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize)]
pub struct BotStats {
    /// Datagrams received (on its port and from the group).
    pub received: Traffic,
    /// Of those, update-all packets with its slot: rounds of its world.
    pub rounds: u64,
    /// Update-all packets from the group for other bots only.
    pub not_mine: u64,
    pub malformed: u64,
    /// Valid packets a bot does not take (statuses, errors).
    pub refused: u64,
    /// Status packets sent back.
    pub statuses: Traffic,
    /// Error packets sent back.
    pub errors: Traffic,
    /// Times it stopped its motors because the manager went silent.
    pub watchdog_stops: u64,
}

/// One robot of a scene, played as an outside bot.
pub struct BotEmulator {
    app: App,
    entity: Entity,
    /// The robot's bot id: its index in the scene.
    pub id: u16,
    pub name: String,
    socket: UdpSocket,
    group: Option<UdpSocket>,
    pub local: SocketAddr,
    /// Why the scene's multicast group could not be joined.
    pub group_error: Option<String>,
    steps_per_round: u64,
    watchdog: Duration,
    last_packet: Instant,
    pub stats: BotStats,
}

impl BotEmulator {
    /// Plays `robot` of the scene file at `path` on UDP `address`:`port`.
    pub fn from_file(path: &Path, robot: &str, address: &str, port: u16) -> Result<Self, String> {
        let (scene, _) = load_scene_file(path).map_err(|e| e.to_string())?;
        Self::new(scene, SceneSource::File(path.to_path_buf()), robot, address, port)
    }

    pub fn new(
        mut scene: SceneFile,
        source: SceneSource,
        robot: &str,
        address: &str,
        port: u16,
    ) -> Result<Self, String> {
        let Some(index) = scene.robots.iter().position(|r| r.name == robot) else {
            let names: Vec<&str> = scene.robots.iter().map(|r| r.name.as_str()).collect();
            return Err(format!("scene \"{}\" has no robot \"{robot}\" (robots: {})", scene.name, names.join(", ")));
        };
        let id = u16::try_from(index)
            .ok()
            .filter(|&i| i != EMPTY_SLOT)
            .ok_or_else(|| format!("robot \"{robot}\" is number {index}; bot ids go up to 65,534"))?;
        let mut spec = scene.robots.swap_remove(index);
        spec.controller = ControllerSpec::Idle;
        spec.outside = None;
        scene.robots = vec![spec];
        // Its radio partners live in the other process; pairs naming them would not check.
        scene.comms.pairs.clear();
        scene.botlink.emulated = true;
        let group = scene.botlink.multicast.as_deref().and_then(|g| g.parse::<SocketAddr>().ok());
        let watchdog = Duration::from_secs_f32(scene.botlink.watchdog);
        let steps_per_round = ((f64::from(UPDATE_ALL_PERIOD) / scene.dt).round() as u64).max(1);
        let socket = UdpSocket::bind((address, port))
            .map_err(|e| format!("bot \"{robot}\": cannot bind UDP {address}:{port}: {e}"))?;
        let local = socket.local_addr().map_err(|e| format!("bot \"{robot}\": {e}"))?;
        socket.set_nonblocking(true).map_err(|e| format!("bot \"{robot}\": {e}"))?;
        let (group, group_error) = match group.map(|g| join_group(address, g)) {
            Some(Ok(s)) => (Some(s), None),
            Some(Err(e)) => (None, Some(e)),
            None => (None, None),
        };
        let mut app = headless_app(scene, source);
        let entity = app
            .world_mut()
            .query_filtered::<Entity, With<Robot>>()
            .iter(app.world())
            .next()
            .ok_or_else(|| format!("bot \"{robot}\": the scene did not load"))?;
        Ok(Self {
            app,
            entity,
            id,
            name: robot.to_string(),
            socket,
            group,
            local,
            group_error,
            steps_per_round,
            watchdog,
            last_packet: Instant::now(),
            stats: BotStats::default(),
        })
    }

    /// The robot's status as it stands.
    pub fn status(&mut self) -> Status {
        let world = self.app.world_mut();
        let e = world.entity(self.entity);
        let (p, heading) = pose(e.get::<Transform>().expect("robot transform"));
        let held = e.get::<Gripper>().and_then(|g| g.holding);
        let held = held.and_then(|h| world.get::<Name>(h)).map(|n| n.to_string());
        let e = world.entity(self.entity);
        Status {
            bot: self.id,
            x: p.x,
            y: p.y,
            heading,
            battery: e.get::<Battery>().map_or(0.0, Battery::level),
            bump: e.get::<BumpSensor>().is_some_and(BumpSensor::is_touching),
            held,
        }
    }

    /// Takes one datagram; returns the answer for its sender, if any.
    pub fn take(&mut self, bytes: &[u8]) -> Option<Command> {
        self.stats.received.add(bytes.len());
        self.last_packet = Instant::now();
        let command = match decode(bytes) {
            Ok(c) => c,
            Err(e) => {
                self.stats.malformed += 1;
                return Some(Command::Error { code: e.code(), reason: e.to_string() });
            }
        };
        match &command {
            Command::Status(_) | Command::Error { .. } => {
                self.stats.refused += 1;
                return Some(Command::Error {
                    code: ErrorCode::NotAllowed,
                    reason: format!("a bot does not take {} packets", command.name()),
                });
            }
            Command::UpdateAll(slots) if !slots.iter().any(|s| s.bot == self.id) => {
                self.stats.not_mine += 1;
                return None;
            }
            _ => {}
        }
        self.obey(&command);
        if matches!(command, Command::UpdateAll(_)) {
            self.stats.rounds += 1;
            run_steps(&mut self.app, self.steps_per_round);
        }
        Some(Command::Status(self.status()))
    }

    fn obey(&mut self, command: &Command) {
        let world = self.app.world_mut();
        let mut e = world.entity_mut(self.entity);
        let Some(mut robot) = e.get::<Robot>().cloned() else { return };
        let mut drive = e.get::<DriveCommand>().copied().unwrap_or_default();
        let mut grip = e.get::<GripCommand>().copied().unwrap_or_default();
        let mut lamp = e.get::<LampState>().copied().unwrap_or_default();
        obey(u32::from(self.id), command, &mut robot, &mut drive, &mut grip, &mut lamp);
        e.insert((robot, drive, grip, lamp));
    }

    fn reply(&mut self, to: SocketAddr, answer: &Command) {
        let bytes = encode(answer);
        let sent = match answer {
            Command::Status(_) => &mut self.stats.statuses,
            _ => &mut self.stats.errors,
        };
        sent.add(bytes.len());
        if let Err(e) = self.socket.send_to(&bytes, to) {
            warn!("bot {}: cannot answer {to}: {e}", self.name);
        }
    }

    /// Serves packets until `stop` says so, waiting at most `poll` between checks.
    pub fn serve(&mut self, stop: impl Fn() -> bool) {
        let mut datagrams: Vec<(SocketAddr, Vec<u8>)> = Vec::new();
        let mut stopped_for_silence = false;
        while !stop() {
            datagrams.clear();
            receive_all(&self.socket, |from, b| datagrams.push((from, b.to_vec())));
            if let Some(group) = &self.group {
                receive_all(group, |from, b| datagrams.push((from, b.to_vec())));
            }
            if datagrams.is_empty() {
                if !stopped_for_silence && self.last_packet.elapsed() > self.watchdog {
                    self.obey(&Command::Move { linear: 0.0, angular: 0.0 });
                    self.stats.watchdog_stops += 1;
                    stopped_for_silence = true;
                }
                std::thread::sleep(Duration::from_micros(100));
                continue;
            }
            stopped_for_silence = false;
            for (from, bytes) in std::mem::take(&mut datagrams) {
                if let Some(answer) = self.take(&bytes) {
                    self.reply(from, &answer);
                }
            }
        }
    }
}

/// `crsim bot SCENE --robot NAME --port P`: plays the robot for a bot manager until stopped
/// (Ctrl-C), then prints its counters and writes them to `out`; the exit code.
pub fn bot_command(scene: &Path, robot: &str, address: &str, port: u16, out: Option<&Path>) -> std::process::ExitCode {
    use std::process::ExitCode;
    let mut bot = match BotEmulator::from_file(scene, robot, address, port) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(super::runner::BAD_INPUT);
        }
    };
    if let Err(e) = super::signals::install() {
        eprintln!("{e}");
    }
    crate::say!("bot {} (id {}) of {}: listening on UDP {}", bot.name, bot.id, scene.display(), bot.local);
    if let Some(e) = &bot.group_error {
        crate::say!("{e}; update-all packets are taken on the port only");
    }
    bot.serve(super::signals::requested);
    let s = &bot.stats;
    crate::say!(
        "bot {}: received {} packets ({} bytes), {} rounds, {} for other bots, {} malformed, {} refused; \
         sent {} statuses, {} errors; {} watchdog stops",
        bot.name,
        s.received.packets,
        s.received.bytes,
        s.rounds,
        s.not_mine,
        s.malformed,
        s.refused,
        s.statuses.packets,
        s.errors.packets,
        s.watchdog_stops
    );
    if let Some(out) = out {
        let json = serde_json::to_vec_pretty(s).unwrap_or_default();
        if let Err(e) = super::files::write_atomic(out, &json) {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::botlink::packet::UpdateSlot;
    use crate::scene::schema::RobotSpec;

    fn emulator() -> BotEmulator {
        let mut scene = SceneFile::empty("t", 4.0, 3.0);
        scene.robots.push(RobotSpec::new("a", 1.0, 1.5, 0.0));
        scene.robots.push(RobotSpec::new("b", 2.0, 1.5, 0.0));
        BotEmulator::new(scene, SceneSource::Generated, "b", "127.0.0.1", 0).unwrap()
    }

    #[test]
    fn an_update_all_slot_drives_the_bot_one_round_and_gets_a_status() {
        let mut bot = emulator();
        assert_eq!(bot.id, 1);
        let mut slots = [UpdateSlot::EMPTY; 5];
        slots[2] = UpdateSlot { bot: 1, linear: 0.5, angular: 0.0, lateral: 0.0, grip: false, lamp: true };
        let mut x = 2.0;
        for _ in 0..10 {
            let Some(Command::Status(s)) = bot.take(&encode(&Command::UpdateAll(slots))) else { panic!() };
            assert_eq!(s.bot, 1);
            assert!(s.x > x, "moves forward every round: {} then {}", x, s.x);
            x = s.x;
        }
        assert_eq!(bot.stats.rounds, 10);
        assert_eq!(bot.app.world().resource::<crate::sim::SimTime>().step, 10, "one step of 20 ms a round");
        // 0.2 s at the robot's top speed of 0.4 m/s ("a" is not in this world to block it).
        assert!((x - 2.08).abs() < 1e-3, "{x}");
        // Another bot's packet is not answered and runs no round.
        slots[2].bot = 0;
        assert_eq!(bot.take(&encode(&Command::UpdateAll(slots))), None);
        assert_eq!((bot.stats.rounds, bot.stats.not_mine), (10, 1));
    }

    #[test]
    fn garbage_and_wrong_packets_are_answered_with_errors_and_counted() {
        let mut bot = emulator();
        assert!(matches!(bot.take(&[1, 2]), Some(Command::Error { code: ErrorCode::Malformed, .. })));
        let status = bot.status();
        assert!(matches!(bot.take(&encode(&Command::Status(status))), Some(Command::Error { .. })));
        assert!(matches!(bot.take(&encode(&Command::Ping)), Some(Command::Status(_))));
        assert_eq!((bot.stats.malformed, bot.stats.refused, bot.stats.received.packets), (1, 1, 3));
    }

    #[test]
    fn thousands_of_random_and_mangled_datagrams_never_panic_and_are_all_counted() {
        use rand::RngExt;
        let mut bot = emulator();
        let mut rng = crate::sim::rng::stream(4, "bot-fuzz", 0);
        let mut slots = [UpdateSlot::EMPTY; 5];
        slots[0] = UpdateSlot { bot: 1, linear: 0.1, angular: 0.2, lateral: 0.0, grip: true, lamp: false };
        let valid = [
            encode(&Command::UpdateAll(slots)),
            encode(&Command::Move { linear: 0.2, angular: 0.0 }),
            encode(&Command::MotorParams { max_speed: 0.3, max_turn: 2.0 }),
            encode(&Command::Ping),
        ];
        let n = 3000;
        for i in 0..n {
            let bytes: Vec<u8> = if i % 2 == 0 {
                let len = rng.random_range(0..80);
                (0..len).map(|_| rng.random()).collect()
            } else {
                let mut p = valid[i % valid.len()].clone();
                let at = rng.random_range(0..p.len());
                p[at] = rng.random();
                p
            };
            let answer = bot.take(&bytes);
            assert!(answer.is_some() || matches!(decode(&bytes), Ok(Command::UpdateAll(_))), "{bytes:?}");
        }
        let s = &bot.stats;
        assert_eq!(s.received.packets, n as u64);
        assert!(s.malformed > 1000, "{s:?}");
        let status = bot.status();
        assert!(status.x.is_finite() && status.y.is_finite() && status.heading.is_finite(), "{status:?}");
    }

    #[test]
    fn an_unknown_robot_is_named_in_the_error() {
        let scene = SceneFile::empty("room", 4.0, 3.0);
        let e = BotEmulator::new(scene, SceneSource::Generated, "zed", "127.0.0.1", 0).err().unwrap();
        assert!(e.contains("no robot \"zed\""), "{e}");
    }
}
