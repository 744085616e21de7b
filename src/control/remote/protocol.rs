//! The VirtualRobot (WEnv) protocol as plain types: parsing a client's `{"robotmove":M,"time":T}`,
//! and the [`Session`] that runs one move at a time and says what to reply to whom, in the
//! dialect of 2023 (default), 2022 or 2021 (see `../shared/notes/virtualrobot-protocol.md`).
//!
//! The session never touches the world: it takes requests, collisions and the passing of
//! simulated time, and returns [`Effect`]s — a reply to a held HTTP request, a message for every
//! WebSocket client, or a motion for the robot.

use std::collections::VecDeque;

use serde_json::{Value, json};

pub use crate::scene::schema::Dialect;

/// The five move names of cril.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MoveName {
    MoveForward,
    MoveBackward,
    TurnLeft,
    TurnRight,
    Alarm,
}

impl MoveName {
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "moveForward" => Self::MoveForward,
            "moveBackward" => Self::MoveBackward,
            "turnLeft" => Self::TurnLeft,
            "turnRight" => Self::TurnRight,
            "alarm" => Self::Alarm,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::MoveForward => "moveForward",
            Self::MoveBackward => "moveBackward",
            Self::TurnLeft => "turnLeft",
            Self::TurnRight => "turnRight",
            Self::Alarm => "alarm",
        }
    }

    fn is_straight(self) -> bool {
        matches!(self, Self::MoveForward | Self::MoveBackward)
    }
}

/// A parsed request.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Request {
    pub mv: MoveName,
    /// Milliseconds; `None` for -1, until stopped.
    pub time_ms: Option<f64>,
}

/// Why a request was refused.
#[derive(Debug, Clone, PartialEq)]
pub enum RequestError {
    NotJson(String),
    BadField(String),
    UnknownMove(String),
    BadTime(String),
}

impl std::fmt::Display for RequestError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RequestError::NotJson(e) => write!(f, "the body is not JSON: {e}"),
            RequestError::BadField(e) => write!(f, "{e}"),
            RequestError::UnknownMove(m) => write!(
                f,
                "unknown move {m:?}: robotmove must be moveForward, moveBackward, turnLeft, turnRight or alarm"
            ),
            RequestError::BadTime(e) => write!(f, "bad time: {e}"),
        }
    }
}

impl RequestError {
    /// The reply to a refused request (HTTP and WebSocket), keeping the `endmove`/`move` keys
    /// clients look for and saying what was wrong.
    pub fn reply(&self) -> Value {
        let endmove = if matches!(self, RequestError::NotJson(_)) { "JSON error" } else { "false" };
        json!({"endmove": endmove, "move": "unknown", "error": self.to_string()})
    }
}

/// Parses a cril request. `time` may be a number or a numeric string (spaces allowed); -1 means
/// until stopped; it may be left out for `alarm`.
pub fn parse_request(body: &str) -> Result<Request, RequestError> {
    let v: Value = serde_json::from_str(body.trim()).map_err(|e| RequestError::NotJson(e.to_string()))?;
    let obj = v.as_object().ok_or_else(|| RequestError::BadField("the body must be a JSON object".into()))?;
    let name = match obj.get("robotmove") {
        Some(Value::String(s)) => s.trim(),
        Some(other) => return Err(RequestError::BadField(format!("robotmove must be a string, got {other}"))),
        None => return Err(RequestError::BadField("robotmove is missing".into())),
    };
    let mv = MoveName::parse(name).ok_or_else(|| RequestError::UnknownMove(name.to_string()))?;
    let time = match obj.get("time") {
        None | Some(Value::Null) if mv == MoveName::Alarm => 0.0,
        None => return Err(RequestError::BadTime("time is missing".into())),
        Some(Value::Number(n)) => n.as_f64().unwrap_or(f64::NAN),
        Some(Value::String(s)) => {
            s.trim().parse::<f64>().map_err(|_| RequestError::BadTime(format!("{s:?} is not a number")))?
        }
        Some(other) => return Err(RequestError::BadTime(format!("must be a number of milliseconds, got {other}"))),
    };
    if time == -1.0 {
        return Ok(Request { mv, time_ms: None });
    }
    if !time.is_finite() || time < 0.0 {
        return Err(RequestError::BadTime(format!(
            "{time} ms: must be zero or more milliseconds, or -1 for until stopped"
        )));
    }
    Ok(Request { mv, time_ms: Some(time) })
}

/// Where a request came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// A held HTTP request, by id.
    Http(u64),
    /// A WebSocket client, by id.
    Ws(u64),
}

/// What the robot should do.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Motion {
    /// Straight at the robot's speed, forwards (+1) or backwards (-1).
    Straight(f32),
    /// A quarter turn, left (+1) or right (-1), lasting this many seconds.
    Turn(f32, f64),
    Stop,
    /// A straight move forwards (+1) or backwards (-1) hit something: go back to where the robot
    /// was a frame before. WEnv puts a robot that hits an obstacle back where it was a frame
    /// before, short of it, so a move that later comes back to that spot touches nothing; crsim's
    /// robot backs off by one step's travel at its speed (the step that took it into the
    /// obstacle), then stands.
    BackOff(f32),
}

/// What the session wants done.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// Answer the held HTTP request `id` with this JSON.
    Reply(u64, Value),
    /// Send this JSON to every WebSocket client.
    Broadcast(Value),
    Drive(Motion),
    /// Something worth a line in the log (watchdog stops).
    Note(String),
}

#[derive(Debug, Clone, PartialEq)]
enum State {
    Moving,
    /// Stopped by an obstacle; the end is reported when the time is up (VR21, VR23).
    Collided,
}

#[derive(Debug, Clone, PartialEq)]
struct Running {
    mv: MoveName,
    origin: Origin,
    started: f64,
    /// Seconds; `None` until stopped.
    duration: Option<f64>,
    state: State,
}

/// A turn asked for with time -1 or 0 takes this long, seconds.
pub const DEFAULT_TURN_S: f64 = 0.3;

/// One remote robot's protocol state: at most one move at a time.
#[derive(Debug, Clone)]
pub struct Session {
    pub dialect: Dialect,
    running: Option<Running>,
    /// Seconds of simulated time without clients after which an unbounded move is stopped.
    pub watchdog: f64,
    unattended_since: Option<f64>,
    /// The last requests and replies, newest last.
    pub log: VecDeque<String>,
    pub requests: u64,
    pub errors: u64,
    pub watchdog_stops: u64,
}

const LOG_LINES: usize = 40;

impl Session {
    pub fn new(dialect: Dialect, watchdog: f64) -> Self {
        Self {
            dialect,
            running: None,
            watchdog,
            unattended_since: None,
            log: VecDeque::new(),
            requests: 0,
            errors: 0,
            watchdog_stops: 0,
        }
    }

    /// The move running, if any, and whether it has collided.
    pub fn running(&self) -> Option<(MoveName, bool)> {
        self.running.as_ref().map(|r| (r.mv, r.state == State::Collided))
    }

    pub fn note(&mut self, line: String) {
        if self.log.len() == LOG_LINES {
            self.log.pop_front();
        }
        self.log.push_back(line);
    }

    fn endmove(&self, ok: bool, mv: &str) -> Value {
        match self.dialect {
            Dialect::Vr2022 => json!({"endmove": ok, "move": mv}),
            _ => json!({"endmove": if ok { "true" } else { "false" }, "move": mv}),
        }
    }

    /// Reply to the running move's origin (if HTTP) and tell every WebSocket client.
    fn finish(&mut self, message: Value, out: &mut Vec<Effect>) {
        if let Some(r) = self.running.take() {
            if let Origin::Http(id) = r.origin {
                out.push(Effect::Reply(id, message.clone()));
            }
            out.push(Effect::Broadcast(message));
        }
    }

    fn start(&mut self, req: Request, origin: Origin, now: f64, out: &mut Vec<Effect>) {
        let mut duration = req.time_ms.map(|t| t / 1000.0);
        let motion = match req.mv {
            MoveName::MoveForward => Motion::Straight(1.0),
            MoveName::MoveBackward => Motion::Straight(-1.0),
            MoveName::TurnLeft | MoveName::TurnRight => {
                // A turn always ends: -1 or 0 ms take the default time.
                let secs = duration.filter(|d| *d > 0.0).unwrap_or(DEFAULT_TURN_S);
                duration = Some(secs);
                Motion::Turn(if req.mv == MoveName::TurnLeft { 1.0 } else { -1.0 }, secs)
            }
            // `request` answers alarms itself; they never start a move.
            MoveName::Alarm => return,
        };
        self.running = Some(Running { mv: req.mv, origin, started: now, duration, state: State::Moving });
        out.push(Effect::Drive(motion));
    }

    /// A request from a client, at simulated time `now` (seconds).
    pub fn request(&mut self, req: Request, origin: Origin, now: f64) -> Vec<Effect> {
        self.requests += 1;
        let mut out = Vec::new();
        let name = req.mv.as_str();
        if req.mv == MoveName::Alarm {
            let was = self.running.as_ref().map(|r| r.mv);
            if let Some(mv) = was {
                out.push(Effect::Drive(Motion::Stop));
                let m = mv.as_str();
                let message = match (self.dialect, origin) {
                    (Dialect::Vr2023, _) => self.endmove(false, &format!("{m}-interrupted")),
                    (Dialect::Vr2022, Origin::Http(_)) => self.endmove(true, m),
                    (Dialect::Vr2022, Origin::Ws(_)) => {
                        out.push(Effect::Broadcast(self.endmove(false, &format!("{m}_halted"))));
                        let r = self.running.take();
                        if let Some(Running { origin: Origin::Http(id), .. }) = r {
                            out.push(Effect::Reply(id, self.endmove(false, "interrupted")));
                        }
                        return out;
                    }
                    (Dialect::Vr2021, _) => json!({"endmove": "halted", "move": m}),
                };
                self.finish(message, &mut out);
            }
            if let Origin::Http(id) = origin {
                let halt = if was.is_none() && self.dialect == Dialect::Vr2023 { "haltnoop" } else { "halt" };
                out.push(Effect::Reply(id, self.endmove(true, halt)));
            }
            return out;
        }
        match (&self.running, origin) {
            (None, _) => self.start(req, origin, now, &mut out),
            // VR23 accepts a new HTTP move once the running one has already collided.
            (Some(r), Origin::Http(_)) if self.dialect == Dialect::Vr2023 && r.state == State::Collided => {
                let m = r.mv.as_str();
                let message = self.endmove(false, &format!("{m}-collision"));
                self.finish(message, &mut out);
                self.start(req, origin, now, &mut out);
            }
            (Some(_), Origin::Http(id)) => {
                let message = json!({"endmove": "notallowed", "move": name});
                out.push(Effect::Reply(id, message.clone()));
                out.push(Effect::Broadcast(message));
            }
            (Some(r), Origin::Ws(_)) => match self.dialect {
                Dialect::Vr2023 => {
                    out.push(Effect::Broadcast(self.endmove(false, &format!("{name}_notallowed (asynch)"))));
                    // Since June 2023 the server also halts the running move.
                    let m = r.mv.as_str();
                    let message = self.endmove(false, &format!("{m}-interrupted"));
                    out.push(Effect::Drive(Motion::Stop));
                    self.finish(message, &mut out);
                }
                Dialect::Vr2022 => out.push(Effect::Broadcast(self.endmove(false, &format!("{name}_notallowed")))),
                Dialect::Vr2021 => out.push(Effect::Broadcast(json!({"endmove": "notallowed", "move": name}))),
            },
        }
        out
    }

    /// The robot's body touched `target` while moving straight.
    pub fn collision(&mut self, target: &str, _now: f64) -> Vec<Effect> {
        let mut out = Vec::new();
        let Some(r) = self.running.as_mut().filter(|r| r.state == State::Moving && r.mv.is_straight()) else {
            return out;
        };
        let m = r.mv.as_str();
        let ahead = if r.mv == MoveName::MoveForward { 1.0 } else { -1.0 };
        out.push(Effect::Drive(Motion::BackOff(ahead)));
        match self.dialect {
            Dialect::Vr2023 => {
                r.state = State::Collided;
                out.push(Effect::Broadcast(json!({"collision": m, "target": target})));
            }
            Dialect::Vr2022 => {
                let message = json!({"collision": m, "target": target});
                self.finish(message, &mut out);
            }
            Dialect::Vr2021 => {
                r.state = State::Collided;
                out.push(Effect::Broadcast(json!({"collision": true, "move": "unknown"})));
            }
        }
        out
    }

    /// Simulated time has reached `now`; `clients` are connected (WebSocket clients and held
    /// HTTP requests).
    pub fn tick(&mut self, now: f64, clients: usize) -> Vec<Effect> {
        let mut out = Vec::new();
        let Some(r) = &self.running else {
            self.unattended_since = None;
            return out;
        };
        if let Some(d) = r.duration {
            if now - r.started >= d - 1e-9 {
                let m = r.mv.as_str();
                let message = match r.state {
                    State::Moving => self.endmove(true, m),
                    State::Collided if self.dialect == Dialect::Vr2023 => {
                        self.endmove(false, &format!("{m}-collision"))
                    }
                    State::Collided => self.endmove(false, m),
                };
                if r.mv.is_straight() {
                    out.push(Effect::Drive(Motion::Stop));
                }
                self.finish(message, &mut out);
            }
            self.unattended_since = None;
            return out;
        }
        // An unbounded move with nobody left to stop it: the watchdog.
        if clients > 0 {
            self.unattended_since = None;
            return out;
        }
        let since = *self.unattended_since.get_or_insert(now);
        if now - since >= self.watchdog {
            let m = r.mv.as_str();
            out.push(Effect::Drive(Motion::Stop));
            let message = self.endmove(false, &format!("{m}-interrupted"));
            self.finish(message, &mut out);
            self.watchdog_stops += 1;
            self.unattended_since = None;
            out.push(Effect::Note(format!("watchdog: no client for {:.1} s, {m} stopped", self.watchdog)));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(body: &str) -> Request {
        parse_request(body).unwrap()
    }

    fn replies(effects: &[Effect]) -> Vec<(u64, String)> {
        effects
            .iter()
            .filter_map(|e| match e {
                Effect::Reply(id, v) => Some((*id, v.to_string())),
                _ => None,
            })
            .collect()
    }

    fn broadcasts(effects: &[Effect]) -> Vec<String> {
        effects
            .iter()
            .filter_map(|e| match e {
                Effect::Broadcast(v) => Some(v.to_string()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn requests_parse_with_numbers_strings_and_spaces() {
        assert_eq!(
            req(r#"{"robotmove":"moveForward","time":300}"#),
            Request { mv: MoveName::MoveForward, time_ms: Some(300.0) }
        );
        assert_eq!(req("{\"robotmove\":\"turnLeft\"     , \"time\": \"300\"}").time_ms, Some(300.0));
        assert_eq!(req(r#"{"robotmove":"moveForward","time":"-1"}"#).time_ms, None);
        assert_eq!(req(r#"{"robotmove":"alarm"}"#).mv, MoveName::Alarm);
        let err = |b: &str| parse_request(b).unwrap_err();
        assert!(matches!(err("move forward"), RequestError::NotJson(_)));
        assert_eq!(err(r#"{"robotmove":"jump","time":1}"#), RequestError::UnknownMove("jump".into()));
        assert!(matches!(err(r#"{"robotmove":"turnLeft","time":"soon"}"#), RequestError::BadTime(_)));
        assert!(matches!(err(r#"{"robotmove":"turnLeft","time":-5}"#), RequestError::BadTime(_)));
        assert!(matches!(err(r#"{"robotmove":"turnLeft"}"#), RequestError::BadTime(_)));
        assert!(matches!(err(r#"[1,2]"#), RequestError::BadField(_)));
        assert_eq!(err("{").reply()["endmove"], "JSON error");
        assert!(err(r#"{"robotmove":"jump","time":1}"#).reply()["error"].as_str().unwrap().contains("jump"));
    }

    #[test]
    fn a_move_ends_after_its_time_and_is_told_to_everyone() {
        let mut s = Session::new(Dialect::Vr2023, 2.0);
        let e = s.request(req(r#"{"robotmove":"moveForward","time":"1000"}"#), Origin::Http(1), 0.0);
        assert_eq!(e, vec![Effect::Drive(Motion::Straight(1.0))]);
        assert!(s.tick(0.98, 1).is_empty());
        let e = s.tick(1.0, 1);
        assert_eq!(replies(&e), vec![(1, r#"{"endmove":"true","move":"moveForward"}"#.to_string())]);
        assert_eq!(broadcasts(&e), vec![r#"{"endmove":"true","move":"moveForward"}"#]);
        assert!(e.contains(&Effect::Drive(Motion::Stop)));
        assert_eq!(s.running(), None);
    }

    #[test]
    fn vr2023_collision_is_told_at_impact_and_the_end_after_the_full_time() {
        let mut s = Session::new(Dialect::Vr2023, 2.0);
        s.request(req(r#"{"robotmove":"moveForward","time":3000}"#), Origin::Http(7), 0.0);
        let e = s.collision("wallDown", 0.84);
        assert_eq!(broadcasts(&e), vec![r#"{"collision":"moveForward","target":"wallDown"}"#]);
        assert!(replies(&e).is_empty());
        assert!(e.contains(&Effect::Drive(Motion::BackOff(1.0))), "one frame short of the wall, as WEnv: {e:?}");
        // A new HTTP move is accepted once the running one has collided; the old one ends now.
        let e = s.tick(2.0, 1);
        assert!(e.is_empty());
        let e = s.tick(3.0, 1);
        assert_eq!(replies(&e), vec![(7, r#"{"endmove":"false","move":"moveForward-collision"}"#.to_string())]);
    }

    #[test]
    fn alarm_interrupts_and_halts_or_does_nothing() {
        let mut s = Session::new(Dialect::Vr2023, 2.0);
        let e = s.request(req(r#"{"robotmove":"alarm","time":10}"#), Origin::Http(1), 0.0);
        assert_eq!(replies(&e), vec![(1, r#"{"endmove":"true","move":"haltnoop"}"#.to_string())]);
        s.request(req(r#"{"robotmove":"moveBackward","time":-1}"#), Origin::Http(2), 0.0);
        let e = s.request(req(r#"{"robotmove":"alarm","time":10}"#), Origin::Http(3), 5.0);
        assert_eq!(
            replies(&e),
            vec![
                (2, r#"{"endmove":"false","move":"moveBackward-interrupted"}"#.to_string()),
                (3, r#"{"endmove":"true","move":"halt"}"#.to_string())
            ]
        );
        assert_eq!(broadcasts(&e), vec![r#"{"endmove":"false","move":"moveBackward-interrupted"}"#]);
    }

    #[test]
    fn one_move_at_a_time() {
        let mut s = Session::new(Dialect::Vr2023, 2.0);
        s.request(req(r#"{"robotmove":"turnLeft","time":300}"#), Origin::Ws(1), 0.0);
        let e = s.request(req(r#"{"robotmove":"moveForward","time":300}"#), Origin::Http(5), 0.1);
        assert_eq!(replies(&e), vec![(5, r#"{"endmove":"notallowed","move":"moveForward"}"#.to_string())]);
        assert_eq!(broadcasts(&e), vec![r#"{"endmove":"notallowed","move":"moveForward"}"#]);
        let e = s.request(req(r#"{"robotmove":"turnRight","time":300}"#), Origin::Ws(2), 0.1);
        assert_eq!(
            broadcasts(&e),
            vec![
                r#"{"endmove":"false","move":"turnRight_notallowed (asynch)"}"#,
                r#"{"endmove":"false","move":"turnLeft-interrupted"}"#
            ]
        );
    }

    #[test]
    fn older_dialects() {
        let mut s = Session::new(Dialect::Vr2022, 2.0);
        s.request(req(r#"{"robotmove":"moveForward","time":3000}"#), Origin::Http(1), 0.0);
        let e = s.collision("wallDown", 0.5);
        assert_eq!(replies(&e), vec![(1, r#"{"collision":"moveForward","target":"wallDown"}"#.to_string())]);
        s.request(req(r#"{"robotmove":"turnLeft","time":300}"#), Origin::Http(2), 1.0);
        let e = s.tick(1.3, 1);
        assert_eq!(replies(&e), vec![(2, r#"{"endmove":true,"move":"turnLeft"}"#.to_string())]);
        let mut s = Session::new(Dialect::Vr2021, 2.0);
        s.request(req(r#"{"robotmove":"moveForward","time":1000}"#), Origin::Ws(1), 0.0);
        let e = s.collision("wallDown", 0.5);
        assert_eq!(broadcasts(&e), vec![r#"{"collision":true,"move":"unknown"}"#]);
        let e = s.tick(1.0, 1);
        assert_eq!(broadcasts(&e), vec![r#"{"endmove":"false","move":"moveForward"}"#]);
    }

    #[test]
    fn the_watchdog_stops_an_unbounded_move_without_clients() {
        let mut s = Session::new(Dialect::Vr2023, 2.0);
        s.request(req(r#"{"robotmove":"moveForward","time":-1}"#), Origin::Ws(1), 0.0);
        assert!(s.tick(10.0, 1).is_empty(), "a client is connected");
        assert!(s.tick(10.5, 0).is_empty());
        assert!(s.tick(12.0, 0).is_empty());
        let e = s.tick(12.5, 0);
        assert!(e.contains(&Effect::Drive(Motion::Stop)));
        assert_eq!(broadcasts(&e), vec![r#"{"endmove":"false","move":"moveForward-interrupted"}"#]);
        assert_eq!(s.watchdog_stops, 1);
        assert_eq!(s.running(), None);
    }
}
