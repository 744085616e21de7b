//! Remote control in the VirtualRobot (WEnv) protocol: a robot of controller kind `Remote` is
//! driven by outside clients over HTTP (`POST /api/move`, port 8090 by default) and WebSocket
//! (port 8091), unchanged from the clients written for the course's virtual robot.
//!
//! [`server`] runs the two servers on their own threads; [`protocol`] parses requests and keeps
//! the one-move-at-a-time session of each robot as plain types. The think-stage system here
//! feeds the session with what clients sent, the bump sensor's new contacts and the sonars'
//! beams, and carries out its effects: replies, broadcasts, and motions through the skill system
//! (`Velocity` at the robot's speed for straight moves, a timed `TurnFor` quarter turn, `Stop`,
//! and after a collision a `MoveAhead` of one step's travel back, so the robot stands a frame
//! short of the obstacle as WEnv leaves it).
//!
//! Servers outlive a scene reload when the new scene keeps the robot's ports, so clients stay
//! connected; port 0 picks a free port (tests).

use std::collections::HashMap;
use std::sync::mpsc::Sender;

use bevy::prelude::*;
use serde_json::{Value, json};

pub mod http;
pub mod protocol;
pub mod server;

pub use protocol::{Dialect, Effect, Motion, MoveName, Origin, Request, RequestError, Session, parse_request};
pub use server::{Endpoint, Inbound};

use crate::robot::{BumpEvent, BumpSensor, Robot, pose};
use crate::scene::{ActiveScene, SceneLoaded};
use crate::sim::{LoadSystems, SimTime, add_report_section};
use crate::skills::{MoveAhead, SkillRequest, Stop, TurnFor, Velocity};
use crate::world::Sonar;

/// Sonar events for one robot and sonar come at most this often, simulated seconds (as WEnv).
pub const SONAR_EVENT_PERIOD: f64 = 0.8;
/// Contacts within this angle of the direction of motion stop a straight move.
const AHEAD: f32 = std::f32::consts::FRAC_PI_3;

/// The running servers, by (address, HTTP port, WebSocket port) as the scene asked for them, with
/// the generation of the scene whose robot uses each.
#[derive(Resource, Default)]
pub struct RemoteServers(pub Vec<ServerEntry>);

/// One robot's running servers.
pub struct ServerEntry {
    pub key: (String, u16, u16),
    pub endpoint: Endpoint,
    /// The scene generation whose robot took these servers.
    pub generation: u64,
}

/// Every remote robot speaks this dialect, whatever its scene says (`--protocol`); kept across
/// scene reloads.
#[derive(Resource, Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct DialectOverride(pub Option<Dialect>);

/// A remote-controlled robot.
#[derive(Component, Debug)]
pub struct Remote {
    pub session: Session,
    /// The scene's request: address, HTTP port, WebSocket port.
    pub key: (String, u16, u16),
    /// Where the servers listen, once open.
    pub http: Option<std::net::SocketAddr>,
    pub ws: Option<std::net::SocketAddr>,
    /// Why the servers could not be opened.
    pub error: Option<String>,
    pending: HashMap<u64, Sender<Value>>,
    pub ws_clients: usize,
    pub held_requests: usize,
    last_sonar: HashMap<Entity, f64>,
}

pub(super) fn plugin(app: &mut App) {
    app.init_resource::<RemoteServers>()
        .init_resource::<DialectOverride>()
        .add_systems(PreUpdate, close_unused_servers.run_if(on_message::<SceneLoaded>).in_set(LoadSystems::React));
    add_report_section(app, report_section);
}

/// What attaching a remote robot needs.
#[derive(bevy::ecs::system::SystemParam)]
pub struct RemoteAttach<'w> {
    servers: ResMut<'w, RemoteServers>,
    forced: Res<'w, DialectOverride>,
}

/// A remote robot of the scene being loaded: its servers, reusing those of the previous scene
/// when it asks for the same ports (so clients stay connected), or fresh ones.
pub(super) fn attach(
    params: &mut RemoteAttach,
    active: &ActiveScene,
    name: &str,
    (http, ws, protocol): (u16, u16, Dialect),
) -> Remote {
    let address = active.scene.botlink.address.clone();
    let watchdog = f64::from(active.scene.botlink.watchdog);
    let dialect = params.forced.0.unwrap_or(protocol);
    let key = (address.clone(), http, ws);
    let mut remote = Remote {
        session: Session::new(dialect, watchdog),
        key: key.clone(),
        http: None,
        ws: None,
        error: None,
        pending: HashMap::new(),
        ws_clients: 0,
        held_requests: 0,
        last_sonar: HashMap::new(),
    };
    let servers = &mut params.servers.0;
    let reuse = (http != 0 && ws != 0)
        .then(|| servers.iter().position(|s| s.key == key && s.generation != active.generation))
        .flatten();
    let endpoint = match reuse {
        Some(i) => Ok(servers.swap_remove(i).endpoint),
        None => Endpoint::open(&address, http, ws, name),
    };
    match endpoint {
        Ok(endpoint) => {
            remote.http = Some(endpoint.http);
            remote.ws = Some(endpoint.ws);
            info!("remote robot {name}: http://{}/api/move, ws://{}", endpoint.http, endpoint.ws);
            // Whatever clients sent to the robot of the old scene is not for this one.
            let _ = endpoint.drain();
            remote.ws_clients = endpoint.ws_clients();
            servers.push(ServerEntry { key, endpoint, generation: active.generation });
        }
        Err(e) => {
            warn!("{e}");
            remote.error = Some(e);
        }
    }
    remote
}

/// Closes the servers of the previous scene that no robot of the new one took.
fn close_unused_servers(active: Res<ActiveScene>, mut servers: ResMut<RemoteServers>) {
    servers.0.retain(|s| s.generation == active.generation);
}

pub(super) fn drive_remote_robots(
    time: Res<SimTime>,
    servers: Res<RemoteServers>,
    mut robots: Query<(Entity, &Robot, &Transform, &BumpSensor, &mut Remote, &mut SkillRequest)>,
    mut bumps: MessageReader<BumpEvent>,
    names: Query<&Name>,
    sonars: Query<(Entity, &Name, &Transform, &Sonar)>,
) {
    if robots.is_empty() {
        bumps.clear();
        return;
    }
    let now = time.seconds();
    let bumped: Vec<BumpEvent> = bumps.read().copied().collect();
    for (entity, robot, transform, bump, mut remote, mut request) in &mut robots {
        let remote = &mut *remote;
        let endpoint = servers.0.iter().find(|s| s.key == remote.key).map(|s| &s.endpoint);
        let mut effects = Vec::new();
        if let Some(ep) = endpoint {
            for inbound in ep.drain() {
                match inbound {
                    Inbound::Http { id, body, reply } => {
                        remote.session.note(format!("{:>8.2} s  http #{id}  {}", now, body.trim()));
                        match parse_request(&body) {
                            Ok(req) => {
                                remote.pending.insert(id, reply);
                                effects.extend(remote.session.request(req, Origin::Http(id), now));
                            }
                            Err(e) => {
                                remote.session.errors += 1;
                                warn!("remote {}: http #{id}: {e}", remote.key.1);
                                remote.session.note(format!("{:>8.2} s  http #{id}  error: {e}", now));
                                let _ = reply.send(e.reply());
                            }
                        }
                    }
                    Inbound::Ws { client, text } => {
                        remote.session.note(format!("{:>8.2} s  ws {client}  {}", now, text.trim()));
                        match parse_request(&text) {
                            Ok(req) => effects.extend(remote.session.request(req, Origin::Ws(client), now)),
                            Err(e) => {
                                remote.session.errors += 1;
                                warn!("remote {}: ws client {client}: {e}", remote.key.2);
                                remote.session.note(format!("{:>8.2} s  ws {client}  error: {e}", now));
                                ep.send_to(client, &e.reply());
                            }
                        }
                    }
                    Inbound::WsOpened(c) => remote.session.note(format!("{:>8.2} s  ws {c} connected", now)),
                    Inbound::WsClosed(c) => remote.session.note(format!("{:>8.2} s  ws {c} disconnected", now)),
                }
            }
            remote.ws_clients = ep.ws_clients();
            remote.held_requests = ep.held_requests();
        }

        // Anything touching the robot in the direction of a straight move stops it: a new
        // contact, or one the robot already had when the move began (a move into an obstacle it
        // stands at collides at once; a move away from it goes).
        if let Some((mv, false)) = remote.session.running()
            && matches!(mv, MoveName::MoveForward | MoveName::MoveBackward)
        {
            let backwards = mv == MoveName::MoveBackward;
            let fresh = bumped.iter().filter(|b| b.robot == entity).map(|b| b.other);
            let ahead: Vec<Entity> = bump.touching_towards(AHEAD, backwards).collect();
            // A new contact names the obstacle when there is one; else the first one ahead.
            let hit = fresh.filter(|o| ahead.contains(o)).chain(ahead.iter().copied()).next();
            if let Some(other) = hit {
                let target = names.get(other).map_or_else(|_| format!("{other}"), |n| target_name(n.as_str()));
                effects.extend(remote.session.collision(&target, now));
            }
        }
        effects.extend(remote.session.tick(now, remote.ws_clients + remote.held_requests));

        // Sonars that see the robot, at most every 0.8 s each, also while it stands still.
        if let Some(ep) = endpoint {
            let (p, _) = pose(transform);
            for (sonar_entity, sonar_name, st, sonar) in &sonars {
                if !sonar.inside.iter().any(|(r, _)| *r == entity) {
                    continue;
                }
                let last = remote.last_sonar.get(&sonar_entity).copied();
                if last.is_some_and(|t| now - t < SONAR_EVENT_PERIOD - 1e-9) {
                    continue;
                }
                remote.last_sonar.insert(sonar_entity, now);
                let event = sonar_event(sonar_name.as_str(), st.translation.truncate(), sonar.axis, p);
                ep.broadcast(&event);
            }
        }

        for effect in effects {
            match effect {
                Effect::Reply(id, v) => {
                    remote.session.note(format!("{:>8.2} s  reply #{id}  {v}", now));
                    if let Some(tx) = remote.pending.remove(&id) {
                        let _ = tx.send(v);
                    }
                }
                Effect::Broadcast(v) => {
                    remote.session.note(format!("{:>8.2} s  to all  {v}", now));
                    if let Some(ep) = endpoint {
                        ep.broadcast(&v);
                    }
                }
                Effect::Drive(m) => match m {
                    Motion::Straight(dir) => {
                        request.set(Velocity { linear: dir * robot.max_speed, angular: 0.0, lateral: 0.0 })
                    }
                    Motion::Turn(side, secs) => {
                        request.set(TurnFor::new(side * std::f32::consts::FRAC_PI_2, secs as f32));
                    }
                    Motion::Stop => request.set(Stop),
                    Motion::BackOff(ahead) => {
                        request.set(MoveAhead::new(-ahead * robot.max_speed * time.dt, robot.max_speed));
                    }
                },
                Effect::Note(line) => {
                    warn!("remote robot on port {}: {line}", remote.key.1);
                    remote.session.note(format!("{:>8.2} s  {line}", now));
                }
            }
        }
    }
}

/// The obstacle's name as WEnv reports it: the scene name, with crsim's `floor-border…` walls
/// reported as `floor-border`.
pub fn target_name(name: &str) -> String {
    if name.starts_with("floor-border") { "floor-border".to_string() } else { name.to_string() }
}

/// WEnv's sonar event: `distance` truncated to whole scene units along the sonar's axis, with
/// WEnv's signs (x: sonar − robot; y: in WEnv's y-down frame, sonar − robot).
pub fn sonar_event(name: &str, sonar: Vec2, axis: Vec2, robot: Vec2) -> Value {
    let (distance, axis) = if axis.x.abs() >= axis.y.abs() {
        ((sonar.x - robot.x).trunc(), "x")
    } else {
        ((robot.y - sonar.y).trunc(), "y")
    };
    json!({"sonarName": name, "distance": distance as i64, "axis": axis})
}

fn report_section(world: &mut World) -> Option<(String, Value)> {
    let counters: Vec<(String, [u64; 3])> = world
        .resource::<RemoteServers>()
        .0
        .iter()
        .map(|s| {
            let c = &s.endpoint.counters;
            let load = |a: &std::sync::atomic::AtomicU64| a.load(std::sync::atomic::Ordering::Relaxed);
            (format!("{:?}", s.key), [load(&c.refused_busy), load(&c.bad_requests), load(&c.accept_errors)])
        })
        .collect();
    let mut q = world.query::<(&Name, &Remote)>();
    let robots: Vec<Value> = q
        .iter(world)
        .map(|(n, r)| {
            let [busy, bad, accept] =
                counters.iter().find(|(k, _)| *k == format!("{:?}", r.key)).map_or([0; 3], |(_, c)| *c);
            json!({
                "name": n.as_str(),
                "protocol": format!("{:?}", r.session.dialect),
                "http": r.http.map(|a| a.to_string()),
                "ws": r.ws.map(|a| a.to_string()),
                "requests": r.session.requests,
                "errors": r.session.errors,
                "watchdog_stops": r.session.watchdog_stops,
                "refused_busy": busy,
                "bad_requests": bad,
                "accept_errors": accept,
            })
        })
        .collect();
    (!robots.is_empty()).then(|| ("remote".to_string(), json!({ "robots": robots })))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sonar_events_use_wenvs_units_and_signs() {
        // sonar1 of the 2023 room: on the top wall, looking down; the robot below it.
        let e = sonar_event("sonar1", Vec2::new(7.75, 24.0), Vec2::new(0.0, -1.0), Vec2::new(8.0, 17.7));
        assert_eq!(e.to_string(), r#"{"axis":"y","distance":-6,"sonarName":"sonar1"}"#);
        let e = sonar_event("sonar2", Vec2::new(23.5, 2.4), Vec2::new(-1.0, 0.0), Vec2::new(4.2, 2.0));
        assert_eq!(e["distance"], 19);
        assert_eq!(e["axis"], "x");
        assert_eq!(target_name("floor-border-down"), "floor-border");
        assert_eq!(target_name("wallDown"), "wallDown");
    }
}
