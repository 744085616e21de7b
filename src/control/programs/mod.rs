//! Robots driven by programs outside crsim, in lock-step (seeds 003 and 000): a robot of
//! controller kind `Program` is registered by a program connected to the scene's program
//! server, receives its readings every step and answers with its actions before the step goes
//! on. The protocol is in [`protocol`], the sockets in [`server`].
//!
//! The loop, as seed 003's environment runs it:
//! - `waitForRobots`: step 0 does not run until every program robot is registered (the step
//!   gate holds the loop; `crsim run` gives up after the scene's `wait_for_robots`);
//! - every step, in the think stage, each connection gets one `step` frame with the readings of
//!   its robots (what the sensors read this step, the messages delivered to them), and the step
//!   waits for each connection's `act` for that step, up to `step_timeout` (the double-stepped
//!   get: all events of the step are in before it advances);
//! - the actions become skills for the robots and messages for the communication model, with
//!   every level of parameters and every drop cause of seed 000.
//!
//! A program that closes its connection leaves its robots stopped and free to register again; a
//! `reset` frame restarts the scene (optionally with another seed) and keeps the registrations.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bevy::ecs::system::SystemParam;
use bevy::ecs::world::{EntityRefExcept, FilteredEntityRef};
use bevy::prelude::*;
use serde_json::json;

pub mod protocol;
pub mod server;

pub use protocol::{ClientFrame, Comm, ServerFrame};

use self::protocol::{
    GripAction, Offered, RangeBeams, Reading, Registration, RobotAction, RobotError, SkillAction, SonarReading,
};
use self::server::{Closed, Connection, Listener, wait_readable};
use crate::comms::{CommType, Payload, Radio, RadioOut, Target, register_robot, restore_pairs};
use crate::robot::registry::{Around, Carried, Layout, SensorFault, SensorFaults, SensorReading, SensorRegistry};
use crate::robot::{RangeSensor, Robot, pose};
use crate::scene::schema::{ControllerSpec, LatePolicy, ProgramsSpec};
use crate::scene::{ActiveScene, PendingScene, SceneLoaded};
use crate::sim::{Env, LoadSystems, PerEnv, RobotOrder, SimTime, StepGate, ThinkSystems, add_report_section};
use crate::skills::{
    Blink, Follow, Grip, Lamp, MoveAhead, MoveFor, MoveTo, Release, SkillFacade, SkillRequest, Stop, TurnBy, TurnFor,
    TurnTo, Velocity,
};
use crate::world::{Arena, SonarEcho};

/// A robot driven by an outside program.
#[derive(Component, Debug, Default)]
pub struct Program {
    /// The connection that registered it.
    pub connection: Option<u64>,
    pub comm: Comm,
    /// A program drove it before and is gone.
    pub disconnected: bool,
    /// Steps its program did not answer in time.
    pub late: u32,
    /// Steps whose actions arrived.
    pub answered: u64,
    pending: Option<RobotAction>,
    stop: bool,
    visited: HashSet<(i32, i32)>,
    /// Its observation's layout, when its program asked for observations.
    observation: Option<Arc<Layout>>,
}

impl Program {
    /// This step's action for the robot, given inside the process (an in-process environment
    /// drives its program robots this way instead of over the program server): taken in the act
    /// stage exactly as an action from a program is.
    pub fn set_action(&mut self, action: RobotAction) {
        self.answered += 1;
        self.pending = Some(action);
    }
}

/// Program robots driven inside the process (an environment): no server listens for them and
/// step 0 does not wait for programs to register them.
#[derive(Resource, Debug, Default, Clone, Copy)]
pub struct InProcess;

/// Counters of the program server, for the run metrics and the panel.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProgramStats {
    pub connections: u64,
    pub refused: u64,
    pub disconnects: u64,
    pub frames_in: u64,
    pub errors_sent: u64,
    pub late: u64,
    pub resets: u64,
    pub accept_errors: u64,
    /// Steps served and the wall seconds spent writing readings and waiting for actions.
    pub steps: u64,
    pub exchange_s: f64,
    /// Wall seconds of the exchange spent building and encoding readings.
    pub encode_s: f64,
}

/// The program server: its socket, connections and registrations. It outlives scene loads, so
/// programs stay connected across a reset or a reload.
#[derive(Resource, Default)]
pub struct ProgramServer {
    pub settings: ProgramsSpec,
    listener: Option<Listener>,
    /// Where it listens.
    pub local: Option<std::net::SocketAddr>,
    /// Why it cannot listen.
    pub error: Option<String>,
    conns: Vec<Connection>,
    /// Acts that came between steps, by connection: (step, actions).
    early: HashMap<u64, (u64, Vec<RobotAction>)>,
    next_id: u64,
    /// Registered robots: name → (connection, communication type).
    owners: BTreeMap<String, (u64, Comm)>,
    /// The registered robots whose readings carry their observation.
    observing: HashSet<String>,
    /// Every robot of the scene by name.
    entities: HashMap<String, Entity>,
    /// A reset asked for by a program, and the seed to announce once it is done.
    reset: Option<Option<u64>>,
    announce: Option<u64>,
    last_warning: Option<Instant>,
    /// Whether a program ever registered a robot here.
    registered_ever: bool,
    /// Whether every program answered the last step within `SPIN`.
    quick: bool,
    pub stats: ProgramStats,
}

impl ProgramServer {
    /// Whether programs drove robots here and none drives any now: a headless run that exists
    /// to serve them ends (`crsim run` without `--keep-serving`).
    pub fn abandoned(&self) -> bool {
        self.registered_ever && self.owners.is_empty()
    }

    /// The connections, for the panel: id, peer, robots, late steps.
    pub fn connections(&self) -> impl Iterator<Item = (u64, std::net::SocketAddr, &[String], u64)> {
        self.conns.iter().map(|c| (c.id, c.peer, c.robots.as_slice(), c.late))
    }
}

/// The program server's exchange of a step (think stage), for ways in that also give program
/// robots their actions to order themselves after.
#[derive(SystemSet, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ProgramExchange;

/// The program port asked for on the command line, over the scene's.
#[derive(Resource, Debug, Default, Clone, Copy)]
pub struct ProgramPortOverride(pub Option<u16>);

pub(super) fn plugin(app: &mut App) {
    app.init_resource::<ProgramServer>()
        .init_resource::<ProgramPortOverride>()
        .add_systems(
            PreUpdate,
            (rejoin.run_if(on_message::<SceneLoaded>).in_set(LoadSystems::Rejoin), serve.in_set(LoadSystems::Serve)),
        )
        .add_systems(
            FixedUpdate,
            exchange.in_set(ThinkSystems::Receive).in_set(ProgramExchange).after(crate::botlink::udp::receive),
        );
    add_report_section(app, report_section);
}

/// What registering and dropping robots needs.
#[derive(SystemParam)]
struct Registry<'w, 's> {
    active: Res<'w, ActiveScene>,
    sensors: Res<'w, SensorRegistry>,
    faults: ResMut<'w, SensorFaults>,
    radios: ResMut<'w, PerEnv<Radio>>,
    robots: Query<'w, 's, (Entity, &'static Robot, &'static Name, Option<&'static mut Program>, &'static Env)>,
}

impl Registry<'_, '_> {
    /// registerRobot for each robot of a request from connection `conn`.
    fn register(&mut self, server: &mut ProgramServer, conn: u64, regs: Vec<Registration>) -> ServerFrame {
        let (mut done, mut errors) = (Vec::new(), Vec::new());
        for r in regs {
            let error = |e: String| RobotError { robot: r.name.clone(), error: e };
            let Some(&entity) = server.entities.get(&r.name) else {
                errors.push(error(format!("robot \"{}\" is not in the scene", r.name)));
                continue;
            };
            if let Some(&(other, _)) = server.owners.get(&r.name)
                && other != conn
            {
                errors.push(error(format!("robot \"{}\" is already driven by another program", r.name)));
                continue;
            }
            let Ok((_, robot, _, Some(mut program), env)) = self.robots.get_mut(entity) else {
                let kind = self.active.scene.robots.get(self.robots.get(entity).map_or(0, |r| r.1.index as usize));
                let what = kind.map_or("another kind".to_string(), |k| controller_name(&k.controller));
                errors.push(error(format!(
                    "robot \"{}\" is not a program robot (its controller is {what}); give it controller: Program()",
                    r.name
                )));
                continue;
            };
            let (broadcast, point_to_point) = r.comm.abilities();
            let spec = &self.active.scene.robots[robot.index as usize];
            let radio = &mut self.radios.reach(*env).0;
            let _ = radio.unregister(&r.name);
            if let Err(e) = register_robot(radio, &spec.comms, &r.name, CommType { broadcast, point_to_point }) {
                errors.push(error(e.to_string()));
                continue;
            }
            restore_pairs(radio, &self.active.scene, &r.name);
            program.connection = Some(conn);
            program.comm = r.comm;
            program.observation = r.observation.then(|| Arc::new(self.sensors.layout(spec)));
            if r.observation {
                server.observing.insert(r.name.clone());
            } else {
                server.observing.remove(&r.name);
            }
            program.disconnected = false;
            program.stop = false;
            if server.owners.insert(r.name.clone(), (conn, r.comm)).is_none()
                && let Some(c) = server.conns.iter_mut().find(|c| c.id == conn)
            {
                c.robots.push(r.name.clone());
            }
            done.push(r.name);
        }
        server.registered_ever |= !done.is_empty();
        ServerFrame::Registered { robots: done, errors }
    }

    /// Program robots driven inside the process join their environment's radio, in scene order,
    /// as a program registering them with the default abilities would have them join: those of
    /// the environments in `loaded`.
    fn join_in_process(&mut self, loaded: &[Env]) {
        let comm = Comm::default();
        let (broadcast, point_to_point) = comm.abilities();
        let mut robots: Vec<_> = self
            .robots
            .iter_mut()
            .filter(|(.., env)| loaded.contains(env))
            .filter_map(|(_, r, n, p, env)| Some((*env, r.index, n.to_string(), p?)))
            .collect();
        robots.sort_by_key(|(env, index, ..)| (*env, *index));
        for (env, index, name, mut program) in robots {
            let spec = &self.active.scene.robots[index as usize];
            let radio = &mut self.radios.reach(env).0;
            let _ = radio.unregister(&name);
            let kind = CommType { broadcast, point_to_point };
            match register_robot(radio, &spec.comms, &name, kind) {
                Ok(()) => restore_pairs(radio, &self.active.scene, &name),
                Err(e) => warn!("robot \"{name}\" cannot join the radio: {e}"),
            }
            program.comm = comm;
        }
    }

    /// A connection went away: its robots stop, leave the radio and are free to register again.
    fn drop_connection(&mut self, server: &mut ProgramServer, conn: u64) {
        let names: Vec<String> =
            server.owners.iter().filter(|(_, (c, _))| *c == conn).map(|(n, _)| n.clone()).collect();
        for name in names {
            server.owners.remove(&name);
            server.observing.remove(&name);
            if let Some(radio) = self.radios.0.first_mut() {
                let _ = radio.0.unregister(&name);
            }
            if let Some(&e) = server.entities.get(&name)
                && let Ok((_, _, _, Some(mut program), _)) = self.robots.get_mut(e)
            {
                program.connection = None;
                program.disconnected = true;
                program.stop = true;
                program.pending = None;
            }
        }
    }
}

fn controller_name(c: &ControllerSpec) -> String {
    let debug = format!("{c:?}");
    debug.split([' ', '{', '(']).next().unwrap_or_default().to_string()
}

/// The robots of the scene that programs drive, in robot order.
fn program_robots(active: &ActiveScene) -> impl Iterator<Item = &str> {
    active.scene.robots.iter().filter(|r| matches!(r.controller, ControllerSpec::Program {})).map(|r| r.name.as_str())
}

/// A freshly loaded scene: listen where it says, keep the registrations of robots it still has.
fn rejoin(
    mut server: ResMut<ProgramServer>,
    port: Res<ProgramPortOverride>,
    in_process: Option<Res<InProcess>>,
    mut loaded: MessageReader<SceneLoaded>,
    mut registry: Registry,
) {
    let server = &mut *server;
    let loaded: Vec<Env> = loaded.read().map(|l| l.env).collect();
    // (Outside programs drive a world of one environment: its robots' names are its own.)
    server.entities = registry.robots.iter().map(|(e, _, n, ..)| (n.to_string(), e)).collect();
    let mut settings = registry.active.scene.programs.clone();
    if let Some(p) = port.0 {
        settings.port = p;
    }
    let wanted: HashSet<String> = if in_process.is_some() {
        registry.join_in_process(&loaded);
        HashSet::new()
    } else {
        program_robots(&registry.active).map(str::to_string).collect()
    };
    if wanted.is_empty() {
        let step = 0;
        for c in &mut server.conns {
            let end = ServerFrame::End { step, reason: "the scene has no program robots any more".into() };
            let _ = c.send(&end, Duration::from_millis(100));
        }
        server.conns.clear();
        server.owners.clear();
        server.listener = None;
        server.local = None;
        server.error = None;
        server.settings = settings;
        return;
    }
    let rebind = server.listener.is_none()
        || settings.address != server.settings.address
        || settings.port != server.settings.port;
    if rebind {
        match Listener::bind(&settings.address, settings.port) {
            Ok(l) => {
                info!("programs: listening on {}", l.local);
                server.local = Some(l.local);
                server.listener = Some(l);
                server.error = None;
            }
            Err(e) => {
                warn!("{e}");
                server.listener = None;
                server.local = None;
                server.error = Some(e);
            }
        }
    }
    server.settings = settings;
    // Registrations carry over to robots of the same name, in the order they were made.
    let owners = std::mem::take(&mut server.owners);
    let mut by_conn: BTreeMap<u64, Vec<Registration>> = BTreeMap::new();
    for c in &mut server.conns {
        for name in std::mem::take(&mut c.robots) {
            let Some(&(_, comm)) = owners.get(&name) else { continue };
            if wanted.contains(&name) {
                let observation = server.observing.contains(&name);
                by_conn.entry(c.id).or_default().push(Registration { name, comm, observation });
            } else {
                let error = format!("robot \"{name}\" is not in the new scene");
                let _ =
                    c.send(&ServerFrame::Error { error, step: None, robot: Some(name) }, Duration::from_millis(100));
            }
        }
    }
    for (conn, regs) in by_conn {
        registry.register(server, conn, regs);
    }
    if let Some(seed) = server.announce.take() {
        let timeout = Duration::from_secs_f32(server.settings.step_timeout);
        for c in &mut server.conns {
            let _ = c.send(&ServerFrame::Reset { seed }, timeout);
        }
    }
}

/// Every frame: new connections, and what programs send between steps (registrations, resets).
fn serve(
    mut server: ResMut<ProgramServer>,
    time: Res<SimTime>,
    mut gate: ResMut<StepGate>,
    mut pending: ResMut<PendingScene>,
    in_process: Option<Res<InProcess>>,
    mut registry: Registry,
) {
    let server = &mut *server;
    accept(server, &registry.active, &registry.sensors);
    let max = server.settings.max_frame_bytes;
    let mut closed: Vec<(u64, Closed)> = Vec::new();
    for i in 0..server.conns.len() {
        let lines = match server.conns[i].poll_lines(max) {
            Ok(lines) => lines,
            Err(e) => {
                closed.push((server.conns[i].id, e));
                continue;
            }
        };
        for line in lines {
            let id = server.conns[i].id;
            if let Some(reply) = between_steps(server, &mut registry, id, &line) {
                let timeout = Duration::from_secs_f32(server.settings.step_timeout);
                if let Err(e) = server.conns[i].send(&reply, timeout) {
                    closed.push((id, e));
                    break;
                }
            }
        }
    }
    close(server, &mut registry, closed);
    if let Some(seed) = server.reset.take() {
        let mut scene = registry.active.scene.clone();
        if let Some(s) = seed {
            scene.seed = s;
        }
        server.announce = Some(scene.seed);
        server.stats.resets += 1;
        pending.request(scene, registry.active.source.clone());
    }
    // waitForRobots: step 0 waits for every program robot of the scene; a reset asked for waits
    // for the scene to be loaded anew.
    let waiting: Vec<String> = if server.announce.is_some() {
        vec!["the scene to reset".to_string()]
    } else if time.step == 0 && in_process.is_none() {
        program_robots(&registry.active).filter(|n| !server.owners.contains_key(*n)).map(str::to_string).collect()
    } else {
        Vec::new()
    };
    if gate.waiting_for != waiting {
        gate.waiting_for = waiting;
    }
}

/// Takes new connections: each gets `hello`, or an error when there are too many.
fn accept(server: &mut ProgramServer, active: &ActiveScene, sensors: &SensorRegistry) {
    if let Some(listener) = &server.listener {
        let (accepted, errors) = listener.accept_all();
        if let Some(e) = errors.first() {
            server.stats.accept_errors += errors.len() as u64;
            // Out of file descriptors, say: once a second is enough to say so.
            if server.last_warning.is_none_or(|t| t.elapsed() >= Duration::from_secs(1)) {
                warn!("programs: cannot accept a connection ({e}); still listening");
                server.last_warning = Some(Instant::now());
            }
        }
        for (stream, peer) in accepted {
            server.next_id += 1;
            let mut conn = Connection::new(server.next_id, stream, peer);
            let timeout = Duration::from_secs_f32(server.settings.step_timeout);
            if server.conns.len() >= server.settings.max_connections {
                server.stats.refused += 1;
                let e = format!("too many programs: {} are connected", server.settings.max_connections);
                warn!("programs: {peer} refused: {e}");
                let _ = conn.send(&ServerFrame::error(e), Duration::from_millis(100));
                continue;
            }
            let scene = &active.scene;
            let offered = scene
                .robots
                .iter()
                .filter(|r| matches!(r.controller, ControllerSpec::Program {}))
                .map(|r| Offered {
                    name: r.name.clone(),
                    taken: server.owners.contains_key(&r.name),
                    radius: r.radius,
                    max_speed: r.max_speed,
                    max_turn: r.max_turn.to_radians(),
                    camera_range: r.camera.range,
                    camera_fov: r.camera.fov.to_radians(),
                    range_sensor: r.range_sensor.as_ref().map(|s| {
                        let sensor = RangeSensor::from(s);
                        let (angle_min, angle_increment) = sensor.angles();
                        RangeBeams {
                            rays: sensor.rays,
                            angle_min,
                            angle_increment,
                            range_max: sensor.range,
                            period: sensor.period,
                        }
                    }),
                    sensors: sensors.describe(r),
                })
                .collect();
            let hello = ServerFrame::Hello {
                protocol: protocol::PROTOCOL,
                version: protocol::VERSION,
                scene: scene.name.clone(),
                seed: scene.seed,
                dt: scene.dt,
                arena: [scene.arena.width, scene.arena.height],
                robots: offered,
            };
            if conn.send(&hello, timeout).is_ok() {
                info!("programs: {peer} connected");
                server.stats.connections += 1;
                server.conns.push(conn);
            }
        }
    }
}

/// Handles a frame that came between steps; the reply to send, if any.
fn between_steps(server: &mut ProgramServer, registry: &mut Registry, conn: u64, line: &str) -> Option<ServerFrame> {
    server.stats.frames_in += 1;
    match protocol::parse_frame(line) {
        Err(e) => Some(ServerFrame::error(e)),
        Ok(ClientFrame::Register { robots, encoding }) => {
            set_encoding(server, conn, encoding);
            Some(registry.register(server, conn, robots))
        }
        Ok(ClientFrame::Reset { seed }) if server.owners.values().any(|(c, _)| *c == conn) => {
            server.reset = Some(seed);
            None
        }
        Ok(ClientFrame::Reset { .. }) => {
            Some(ServerFrame::error("reset refused: only a program that drives robots may reset the scene"))
        }
        Ok(ClientFrame::Act { step, .. }) if !server.owners.values().any(|(c, _)| *c == conn) => {
            // Kept, it would answer for robots this program registers later, in their first step.
            Some(ServerFrame::Error {
                error: format!(
                    "act for step {step} before register: this program drives no robots yet; register first"
                ),
                step: Some(step),
                robot: None,
            })
        }
        Ok(ClientFrame::Act { step, robots, drives }) => {
            // Early: kept for the exchange of its step.
            let deadline = Instant::now() + Duration::from_secs_f32(server.settings.step_timeout);
            match with_drives(server, conn, robots, drives, deadline) {
                Ok(acts) => {
                    server.early.insert(conn, (step, acts));
                    None
                }
                Err(e) => Some(ServerFrame::Error { error: e, step: Some(step), robot: None }),
            }
        }
    }
}

fn set_encoding(server: &mut ProgramServer, conn: u64, encoding: Option<protocol::Encoding>) {
    if let Some(e) = encoding
        && let Some(c) = server.conns.iter_mut().find(|c| c.id == conn)
    {
        c.encoding = e;
    }
}

/// An act's actions with its binary drive records (if it announced any) read from the
/// connection and put first: a robot with a JSON action as well gets the JSON one.
fn with_drives(
    server: &mut ProgramServer,
    conn: u64,
    robots: Vec<RobotAction>,
    drives: Option<usize>,
    deadline: Instant,
) -> Result<Vec<RobotAction>, String> {
    let Some(n) = drives.filter(|n| *n > 0) else { return Ok(robots) };
    let max = server.settings.max_frame_bytes;
    let Some(c) = server.conns.iter_mut().find(|c| c.id == conn) else { return Ok(robots) };
    let bytes = n
        .checked_mul(protocol::DRIVE_RECORD)
        .filter(|b| *b <= max)
        .ok_or_else(|| format!("{n} drive records are more than the scene's max_frame_bytes of {max}"))?;
    let block = c
        .read_bytes(bytes, deadline)
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("the {n} drive records announced did not arrive in time"))?;
    let mut acts = Vec::with_capacity(n + robots.len());
    for d in protocol::parse_drives(&block) {
        let name = c.robots.get(d.robot as usize).ok_or_else(|| {
            format!("drive record for robot {}, but this program registered {} robots", d.robot, c.robots.len())
        })?;
        acts.push(RobotAction {
            name: name.clone(),
            drive: Some([d.linear, d.angular, 0.0]),
            skill: None,
            grip: match d.grip {
                1 => Some(GripAction::Close),
                2 => Some(GripAction::Open),
                _ => None,
            },
            lamp: None,
            send: Vec::new(),
        });
    }
    acts.extend(robots);
    Ok(acts)
}

fn close(server: &mut ProgramServer, registry: &mut Registry, closed: Vec<(u64, Closed)>) {
    for (id, why) in closed {
        if let Some(i) = server.conns.iter().position(|c| c.id == id) {
            let mut c = server.conns.remove(i);
            if matches!(why, Closed::ByPeer) {
                info!("programs: {} disconnected", c.peer);
            } else {
                warn!("programs: {} closed: {why}", c.peer);
                let _ =
                    c.send(&ServerFrame::error(format!("closing the connection: {why}")), Duration::from_millis(100));
            }
            server.stats.disconnects += 1;
            server.stats.errors_sent += c.errors_sent;
        }
        server.early.remove(&id);
        registry.drop_connection(server, id);
    }
}

/// What a program robot's readings are read from: every component of the robot but its
/// [`Program`] (the registry's sensors read what they need). Resources are components too: those
/// the exchange changes are left out as well, or the query would read them.
type Sensed<'w, 's> = Query<
    'w,
    's,
    EntityRefExcept<'static, 'static, (Program, ProgramServer, Time<Fixed>, PerEnv<Radio>, SensorFaults)>,
    With<Robot>,
>;

/// The think stage's exchange, as seed 003's double-stepped get: each connection's readings out,
/// the acts that came early taken, the others waited for (serving everyone else meanwhile), the
/// actions handed to their robots, and the late programs' robots treated as the scene says.
fn exchange(
    mut server: ResMut<ProgramServer>,
    time: Res<SimTime>,
    order: Res<RobotOrder>,
    mut fixed: ResMut<Time<Fixed>>,
    mut echoes: MessageReader<SonarEcho>,
    sensed: Sensed,
    names: Query<&Name>,
    arena: Res<Arena>,
    mut registry: Registry,
) {
    let server = &mut *server;
    let echoes: Vec<SonarEcho> = echoes.read().copied().collect();
    if server.owners.is_empty() {
        return;
    }
    let started = Instant::now();
    let name_of = |e: Entity| names.get(e).map_or_else(|_| e.to_string(), |n| n.to_string());
    let around = Around { arena: *arena, name_of: &name_of };
    let frames = readings(&order, &mut registry, &sensed, &echoes, &around);
    let mut closed: Vec<(u64, Closed)> = Vec::new();
    let waiting = send_steps(server, frames, time.step, time.seconds(), &mut closed);
    server.stats.encode_s += started.elapsed().as_secs_f64();
    let (mut actions, early_refused, unanswered) = take_early(&mut server.early, waiting, time.step);
    let timeout = Duration::from_secs_f32(server.settings.step_timeout);
    for (id, frame) in early_refused {
        if let Some(c) = server.conns.iter_mut().find(|c| c.id == id) {
            let _ = c.send(&frame, timeout);
        }
    }
    let late = wait_for_answers(server, &mut registry, &mut fixed, unanswered, &mut actions, &mut closed, time.step);
    hand_out(server, &mut registry, actions, time.step, &mut closed);
    treat_late(server, &mut registry, late, time.step, &mut closed);
    close(server, &mut registry, closed);
    server.stats.steps += 1;
    server.stats.exchange_s += started.elapsed().as_secs_f64();
}

/// Each connection's readings for this step, its robots in robot order. A robot whose sensor
/// fails has no reading: the fault is noted, and the run stops after this step.
fn readings(
    order: &RobotOrder,
    registry: &mut Registry,
    sensed: &Sensed,
    echoes: &[SonarEcho],
    around: &Around,
) -> BTreeMap<u64, Vec<Reading>> {
    let mut frames: BTreeMap<u64, Vec<Reading>> = BTreeMap::new();
    for &e in &order.0 {
        let Ok((_, _, _, Some(mut program), _)) = registry.robots.get_mut(e) else { continue };
        let Some(conn) = program.connection else { continue };
        let Ok(r) = sensed.get(e) else { continue };
        match reading(&registry.sensors, &FilteredEntityRef::from(&r), &mut program, echoes, around) {
            Ok(reading) => frames.entry(conn).or_default().push(reading),
            Err(fault) => {
                // Changed only by a new fault: the clock pauses on each new one.
                if registry.faults.bypass_change_detection().note(&fault, &(around.name_of)(e)) {
                    registry.faults.set_changed();
                }
            }
        }
    }
    frames
}

/// One robot's readings: what each sensor it carries reads this step (and its observation, when
/// asked for), the sonars that saw it, the cells it has visited.
fn reading(
    sensors: &SensorRegistry,
    r: &FilteredEntityRef,
    program: &mut Program,
    echoes: &[SonarEcho],
    around: &Around,
) -> Result<Reading, SensorFault> {
    if let (Some(t), Some(robot)) = (r.get::<Transform>(), r.get::<Robot>()) {
        let (p, _) = pose(t);
        let cell = 2.0 * robot.radius;
        program.visited.insert(((p.x / cell).floor() as i32, (p.y / cell).floor() as i32));
    }
    let observation = match program.observation.as_ref() {
        Some(layout) => {
            let mut values = vec![0.0; layout.size];
            sensors.observe(layout, r, around, &mut values)?;
            Some(values)
        }
        None => None,
    };
    Ok(Reading {
        name: r.get::<Name>().map_or_else(|| r.id().to_string(), |n| n.to_string()),
        sensors: match r.get::<Carried>() {
            Some(c) => sensors.read(c, r, around)?,
            None => SensorReading::default(),
        },
        sonar: echoes
            .iter()
            .filter(|x| x.robot == r.id())
            .map(|x| SonarReading { sonar: (around.name_of)(x.sonar), distance: x.distance })
            .collect(),
        visited: program.visited.len() as u32,
        observation,
    })
}

/// Sends each connection its `step` frame (JSON or binary, as it registered); the connections
/// now awaited. One that cannot be written to is closed.
fn send_steps(
    server: &mut ProgramServer,
    mut frames: BTreeMap<u64, Vec<Reading>>,
    step: u64,
    now_s: f64,
    closed: &mut Vec<(u64, Closed)>,
) -> Vec<u64> {
    let timeout = Duration::from_secs_f32(server.settings.step_timeout);
    let mut waiting = Vec::new();
    for c in &mut server.conns {
        let Some(readings) = frames.remove(&c.id) else { continue };
        let sent = match c.encoding {
            protocol::Encoding::Binary => c.send_bytes(&protocol::binary_step(step, now_s, &readings), timeout),
            protocol::Encoding::Json => c.send(&ServerFrame::Step { step, time: now_s, robots: readings }, timeout),
        };
        match sent {
            Ok(()) => waiting.push(c.id),
            Err(e) => closed.push((c.id, e)),
        }
    }
    waiting
}

/// The acts that came before this step's frame was read: an act for this step answers it; one
/// for another step is refused (the error to send) and its connection still awaited. Returns
/// (the answers, the refusals, the connections still to answer), each in the order awaited.
fn take_early(
    early: &mut HashMap<u64, (u64, Vec<RobotAction>)>,
    waiting: Vec<u64>,
    step: u64,
) -> (Vec<(u64, Vec<RobotAction>)>, Vec<(u64, ServerFrame)>, Vec<u64>) {
    let (mut answers, mut refused, mut unanswered) = (Vec::new(), Vec::new(), Vec::new());
    for id in waiting {
        match early.remove(&id) {
            Some((at, acts)) if at == step => answers.push((id, acts)),
            Some((at, _)) => {
                refused.push((id, wrong_step(at, step)));
                unanswered.push(id);
            }
            None => unanswered.push(id),
        }
    }
    (answers, refused, unanswered)
}

/// Waits for the actions of the `unanswered` connections, up to the step timeout (or until a
/// stop is asked for), serving new and other programs meanwhile; the connections still late.
/// Programs that answered the last step quickly are waited for by spinning first: see `SPIN`.
fn wait_for_answers(
    server: &mut ProgramServer,
    registry: &mut Registry,
    fixed: &mut Time<Fixed>,
    mut unanswered: Vec<u64>,
    actions: &mut Vec<(u64, Vec<RobotAction>)>,
    closed: &mut Vec<(u64, Closed)>,
    step: u64,
) -> Vec<u64> {
    let timeout = Duration::from_secs_f32(server.settings.step_timeout);
    let deadline = Instant::now() + timeout;
    let max = server.settings.max_frame_bytes;
    let waiting_since = Instant::now();
    let spin_until = if server.quick { waiting_since + SPIN } else { waiting_since };
    let mut served_at = waiting_since;
    loop {
        // Read what every awaited program has sent.
        let mut still = Vec::new();
        for id in unanswered {
            if !server.conns.iter().any(|c| c.id == id) {
                continue;
            }
            match answer(server, registry, fixed, id, step, max) {
                Err(e) => closed.push((id, e)),
                Ok(Some(acts)) => actions.push((id, acts)),
                Ok(None) => still.push(id),
            }
        }
        unanswered = still;
        let now = Instant::now();
        // A stop asked for (SIGTERM, Ctrl-C) does not wait on programs: the step goes on with
        // the late ones late, and the run ends after it.
        if unanswered.is_empty() || now >= deadline || crate::sim::stop::requested() {
            break;
        }
        // New programs and those registering are served during a long wait too.
        if now.duration_since(served_at) >= SERVE_EVERY {
            accept(server, &registry.active, &registry.sensors);
            serve_others(server, registry, &unanswered, actions, closed, max, timeout);
            served_at = now;
        }
        if now < spin_until {
            std::hint::spin_loop();
            continue;
        }
        // Then sleep until one of them has something to read.
        let awaited: Vec<&Connection> = server.conns.iter().filter(|c| unanswered.contains(&c.id)).collect();
        if awaited.is_empty() {
            break;
        }
        wait_readable(&awaited, deadline.min(now + SERVE_EVERY));
    }
    server.quick = unanswered.is_empty() && waiting_since.elapsed() <= SPIN;
    unanswered
}

/// The actions to their robots (for the skills and the radio next in the step); an action that
/// is not valid goes back to its program as an error naming the robot.
fn hand_out(
    server: &mut ProgramServer,
    registry: &mut Registry,
    actions: Vec<(u64, Vec<RobotAction>)>,
    step: u64,
    closed: &mut Vec<(u64, Closed)>,
) {
    let timeout = Duration::from_secs_f32(server.settings.step_timeout);
    let max_message = server.settings.max_message_bytes;
    for (id, acts) in actions {
        let mut errors = Vec::new();
        for a in acts {
            match check_action(server, id, &a, max_message) {
                Err(error) => errors.push(ServerFrame::Error { error, step: Some(step), robot: Some(a.name.clone()) }),
                Ok(entity) => {
                    if let Ok((_, _, _, Some(mut program), _)) = registry.robots.get_mut(entity) {
                        program.answered += 1;
                        program.pending = Some(a);
                    }
                }
            }
        }
        if let Some(c) = server.conns.iter_mut().find(|c| c.id == id) {
            for e in errors {
                if let Err(why) = c.send(&e, timeout) {
                    closed.push((id, why));
                    break;
                }
            }
        }
    }
}

/// What the scene's late policy does to a late program's robots: (stop them, drop the program).
fn late_policy(late: LatePolicy) -> (bool, bool) {
    (late != LatePolicy::Keep, late == LatePolicy::Drop)
}

/// Late programs: counted, and their robots treated as the scene's `late` says.
fn treat_late(
    server: &mut ProgramServer,
    registry: &mut Registry,
    late: Vec<u64>,
    step: u64,
    closed: &mut Vec<(u64, Closed)>,
) {
    let (stop, drop) = late_policy(server.settings.late);
    for id in late {
        server.stats.late += 1;
        if let Some(c) = server.conns.iter_mut().find(|c| c.id == id) {
            c.late += 1;
        }
        for (name, _) in server.owners.iter().filter(|(_, (c, _))| *c == id) {
            if let Some(&e) = server.entities.get(name)
                && let Ok((_, _, _, Some(mut program), _)) = registry.robots.get_mut(e)
            {
                program.late += 1;
                program.stop |= stop;
            }
        }
        if drop {
            warn!("programs: connection {id} did not answer step {step} in time: dropped");
            closed.push((id, Closed::Failed("no answer in time".into())));
        }
    }
}

/// How often a long wait for answers stops to accept new programs and serve the others.
const SERVE_EVERY: Duration = Duration::from_millis(50);

/// How long the exchange spins, reading without sleeping, before it sleeps until an answer comes.
/// A program that answers within it is read the moment its answer arrives and its `send` wakes
/// no one: one Python robot on loopback runs 4,900 steps/s when crsim sleeps at once and
/// 7,000-7,300 when it spins (`python3 clients/python/bench.py --robots 1`, release build, two
/// cores). Only programs that answered the last step within it are spun for, so a slow program
/// (a team of 1,000 robots, a learner) costs no spinning.
const SPIN: Duration = Duration::from_micros(250);

/// Connection `id`'s actions for `step` if they have come, answering every other frame read on
/// the way; `None` while they have not.
fn answer(
    server: &mut ProgramServer,
    registry: &mut Registry,
    fixed: &mut Time<Fixed>,
    id: u64,
    step: u64,
    max: usize,
) -> Result<Option<Vec<RobotAction>>, Closed> {
    loop {
        let Some(conn) = server.conns.iter_mut().find(|c| c.id == id) else { return Ok(None) };
        let Some(line) = conn.try_line(max)? else { return Ok(None) };
        if let Some(acts) = in_exchange(server, registry, fixed, id, &line, step)? {
            return Ok(Some(acts));
        }
    }
}

/// Serves the connections not awaited in this step's exchange (programs registering, say).
fn serve_others(
    server: &mut ProgramServer,
    registry: &mut Registry,
    unanswered: &[u64],
    actions: &[(u64, Vec<RobotAction>)],
    closed: &mut Vec<(u64, Closed)>,
    max: usize,
    timeout: Duration,
) {
    let others: Vec<u64> = server
        .conns
        .iter()
        .map(|c| c.id)
        .filter(|id| !unanswered.contains(id) && !actions.iter().any(|(a, _)| a == id))
        .collect();
    for id in others {
        let Some(i) = server.conns.iter().position(|c| c.id == id) else { continue };
        match server.conns[i].poll_lines(max) {
            Err(e) => closed.push((id, e)),
            Ok(lines) => {
                for line in lines {
                    if let Some(reply) = between_steps(server, registry, id, &line)
                        && let Some(c) = server.conns.iter_mut().find(|c| c.id == id)
                        && let Err(e) = c.send(&reply, timeout)
                    {
                        closed.push((id, e));
                        break;
                    }
                }
            }
        }
    }
}

/// A line from connection `id` while the exchange waits for its actions for `step`: the actions
/// when it is this step's `act` (or a reset, which ends this step with none); anything else is
/// answered and the wait goes on.
fn in_exchange(
    server: &mut ProgramServer,
    registry: &mut Registry,
    fixed: &mut Time<Fixed>,
    id: u64,
    line: &str,
    step: u64,
) -> Result<Option<Vec<RobotAction>>, Closed> {
    server.stats.frames_in += 1;
    let deadline = Instant::now() + Duration::from_secs_f32(server.settings.step_timeout);
    let reply = match protocol::parse_frame(line) {
        Ok(ClientFrame::Act { step: s, robots, drives }) if s == step => {
            match with_drives(server, id, robots, drives, deadline) {
                Ok(acts) => return Ok(Some(acts)),
                Err(e) => ServerFrame::Error { error: e, step: Some(step), robot: None },
            }
        }
        Ok(ClientFrame::Act { step: s, robots, drives }) => {
            // Its drive records are read and dropped with it.
            let _ = with_drives(server, id, robots, drives, deadline);
            wrong_step(s, step)
        }
        Ok(ClientFrame::Register { robots, encoding }) => {
            set_encoding(server, id, encoding);
            registry.register(server, id, robots)
        }
        Ok(ClientFrame::Reset { seed }) => {
            // The reset happens before the next step: this one is its last.
            server.reset = Some(seed);
            fixed.discard_overstep(Duration::MAX);
            return Ok(Some(Vec::new()));
        }
        Err(e) => ServerFrame::Error { error: e, step: Some(step), robot: None },
    };
    let timeout = Duration::from_secs_f32(server.settings.step_timeout);
    match server.conns.iter_mut().find(|c| c.id == id) {
        Some(c) => c.send(&reply, timeout).map(|()| None),
        None => Ok(None),
    }
}

fn wrong_step(got: u64, now: u64) -> ServerFrame {
    ServerFrame::Error {
        error: format!("actions for step {got}, but the step now is {now}"),
        step: Some(now),
        robot: None,
    }
}

/// A program's action for one robot: its robot (registered by this connection), checked.
fn check_action(server: &ProgramServer, conn: u64, a: &RobotAction, max_message: usize) -> Result<Entity, String> {
    match server.owners.get(&a.name) {
        Some((c, _)) if *c == conn => {}
        _ => return Err(format!("robot \"{}\" is not registered by this program", a.name)),
    }
    a.check(max_message)?;
    if let Some(SkillAction::Follow { target, .. }) = &a.skill
        && !server.entities.contains_key(target)
    {
        return Err(format!("robot \"{}\": Follow names {target:?}, which is not a robot of the scene", a.name));
    }
    if a.lamp.is_some() && matches!(a.skill, Some(SkillAction::Blink { .. })) {
        return Err(format!("robot \"{}\": lamp and blink in one action; send one of them", a.name));
    }
    server.entities.get(&a.name).copied().ok_or_else(|| format!("robot \"{}\" is not in the scene", a.name))
}

/// The control stage: each program robot's actions become skills and messages.
pub(super) fn act(
    mut robots: Query<(&mut Program, &mut SkillRequest, &mut RadioOut, &Env)>,
    names: Query<(Entity, &Name, &Env), With<Robot>>,
) {
    for (mut program, mut request, mut out, env) in &mut robots {
        if std::mem::take(&mut program.stop) {
            request.set(Stop);
        }
        let Some(a) = program.pending.take() else { continue };
        let mut facade = SkillFacade::new();
        let moving = match (a.drive, a.skill) {
            (Some([linear, angular, lateral]), skill) => {
                let _ = facade.set(Velocity { linear, angular, lateral });
                skill.filter(|s| matches!(s, SkillAction::Blink { .. }))
            }
            (None, skill) => skill,
        };
        match moving {
            Some(SkillAction::Stop) => drop(facade.set(Stop)),
            Some(SkillAction::Velocity { linear, angular, lateral }) => {
                drop(facade.set(Velocity { linear, angular, lateral }))
            }
            Some(SkillAction::MoveFor { linear, angular, seconds }) => {
                drop(facade.set(MoveFor::new(linear, angular, seconds)))
            }
            Some(SkillAction::MoveAhead { distance, speed }) => {
                drop(facade.set(MoveAhead::new(distance, speed.unwrap_or(f32::INFINITY))))
            }
            Some(SkillAction::MoveTo { x, y, speed, tolerance }) => drop(facade.set(MoveTo {
                point: Vec2::new(x, y),
                speed: speed.unwrap_or(f32::INFINITY),
                tolerance: tolerance.unwrap_or(MOVE_TO_TOLERANCE),
            })),
            Some(SkillAction::TurnTo { heading }) => drop(facade.set(TurnTo { heading })),
            Some(SkillAction::TurnBy { angle }) => drop(facade.set(TurnBy::new(angle))),
            Some(SkillAction::TurnFor { angle, seconds }) => drop(facade.set(TurnFor::new(angle, seconds))),
            Some(SkillAction::Follow { target, distance, speed }) => {
                // The robot of that name in its own environment.
                if let Some((e, ..)) = names.iter().find(|(_, n, in_env)| n.as_str() == target && *in_env == env) {
                    let _ = facade.set(Follow { target: e, distance, speed: speed.unwrap_or(f32::INFINITY) });
                }
            }
            Some(SkillAction::Blink { period }) => drop(facade.set(Blink::new(period))),
            None => {}
        }
        match a.grip {
            Some(GripAction::Close) => drop(facade.set(Grip)),
            Some(GripAction::Open) => drop(facade.set(Release)),
            None => {}
        }
        if let Some(on) = a.lamp {
            let _ = facade.set(Lamp { on });
        }
        if !facade.is_empty() {
            request.0 = Some(facade);
        }
        for m in a.send {
            let target = m.to.map_or(Target::Broadcast, Target::Robot);
            out.0.push((target, Payload::from_json(m.content)));
        }
    }
}

/// Tells every connected program the run is over, then closes the connections.
pub fn finish(world: &mut World, reason: &str) {
    let step = world.resource::<SimTime>().step;
    let mut server = world.resource_mut::<ProgramServer>();
    for c in &mut server.conns {
        let _ = c.send(&ServerFrame::End { step, reason: reason.to_string() }, Duration::from_millis(500));
    }
    server.conns.clear();
}

/// How close a program's `move_to` comes to its point when it gives no tolerance, metres.
const MOVE_TO_TOLERANCE: f32 = 0.01;

fn report_section(world: &mut World) -> Option<(String, serde_json::Value)> {
    let server = world.get_resource::<ProgramServer>()?;
    if server.local.is_none() && server.stats.connections == 0 {
        return None;
    }
    let stats = server.stats.clone();
    let local = server.local.map(|a| a.to_string());
    let order = world.resource::<RobotOrder>().0.clone();
    let mut q = world.query::<(&Name, &Program)>();
    let robots: Vec<serde_json::Value> = order
        .iter()
        .filter_map(|&e| q.get(world, e).ok())
        .map(|(n, p)| {
            json!({"name": n.as_str(), "connected": p.connection.is_some(), "answered": p.answered, "late": p.late})
        })
        .collect();
    let share = if stats.steps > 0 { stats.exchange_s / stats.steps as f64 } else { 0.0 };
    Some((
        "programs".into(),
        json!({
            "listening": local,
            "connections": stats.connections,
            "refused": stats.refused,
            "disconnects": stats.disconnects,
            "frames_in": stats.frames_in,
            "late": stats.late,
            "resets": stats.resets,
            "accept_errors": stats.accept_errors,
            "steps": stats.steps,
            "exchange_s": stats.exchange_s,
            "encode_s": stats.encode_s,
            "exchange_s_per_step": share,
            "robots": robots,
        }),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn act(name: &str) -> RobotAction {
        RobotAction {
            name: name.into(),
            drive: Some([0.1, 0.0, 0.0]),
            skill: None,
            grip: None,
            lamp: None,
            send: vec![],
        }
    }

    #[test]
    fn an_early_act_answers_its_own_step_and_one_for_another_step_is_refused() {
        let mut early = HashMap::new();
        early.insert(1, (7, vec![act("a")]));
        early.insert(2, (6, vec![act("b")]));
        early.insert(9, (7, vec![act("z")]));
        let (answers, refused, unanswered) = take_early(&mut early, vec![1, 2, 3], 7);
        assert_eq!(answers, vec![(1, vec![act("a")])]);
        assert_eq!(refused.len(), 1);
        assert_eq!(refused[0].0, 2);
        let ServerFrame::Error { error, step, .. } = &refused[0].1 else { panic!("an error frame") };
        assert_eq!((error.as_str(), *step), ("actions for step 6, but the step now is 7", Some(7)));
        assert_eq!(unanswered, vec![2, 3], "the refused one is still awaited, in the order awaited");
        // Early acts of connections not awaited this step stay for their step.
        assert_eq!(early.keys().copied().collect::<Vec<_>>(), vec![9]);
    }

    #[test]
    fn the_late_policy_keeps_stops_or_drops() {
        assert_eq!(late_policy(LatePolicy::Keep), (false, false));
        assert_eq!(late_policy(LatePolicy::Stop), (true, false));
        assert_eq!(late_policy(LatePolicy::Drop), (true, true));
    }
}
