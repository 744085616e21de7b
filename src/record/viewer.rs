//! The viewer protocol (seed 003's viewer ↔ environment): a running simulation streams its
//! records over TCP to any number of viewers, and a viewer sends back pause, speed and radio
//! parameters.
//!
//! Lines of JSON, both ways. The environment sends `{"type":"hello","version":1,"meta":{..}}`
//! (the recording's run metadata: the scene as it runs), then the current state as one
//! `"state"` line (so a viewer attaching late starts from the present), then
//! `{"type":"record","channel":"/robots","step":12,"data":{..}}` for every record, exactly as
//! they go into a recording. A viewer that falls behind skips steps and gets the state again
//! when it has caught up; one that goes away is forgotten. The run never waits for a viewer.
//!
//! A viewer sends `{"type":"pause","paused":true}`, `{"type":"speed","factor":2.0}` (or
//! `"factor":null` for as fast as possible) and `{"type":"radio","system":{"link":true,
//! "range":null,"delay":0,"probability":0.9}}`.

use std::collections::BTreeMap;
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use bevy::prelude::*;
use serde::{Deserialize, Serialize};

use super::capture::Sink;
use super::format::*;
use super::reader::{Frame, apply_explorer};
use crate::comms::Radio;
use crate::comms::model::SystemParams;
use crate::sim::PerEnv;

/// Version of the line protocol.
pub const VIEWER_PROTOCOL: u32 = 1;
/// Bytes a viewer may have waiting before it skips steps.
const BEHIND: usize = 256 * 1024;
/// Bytes a viewer's command line may have.
const MAX_LINE: usize = 64 * 1024;

/// What a viewer sends back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ViewerCommand {
    Pause { paused: bool },
    Speed { factor: Option<f64> },
    Radio { system: SystemParams },
}

/// What the environment sends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ViewerLine {
    Hello { version: u32, meta: BTreeMap<String, String> },
    State { frame: Box<StateLine> },
    Record { channel: String, step: u64, data: serde_json::Value },
    End { hash: String, steps: u64 },
}

/// The whole state at a step, for a viewer that starts or catches up.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StateLine {
    pub step: StepRecord,
    pub robots: RobotsRecord,
    pub pens: PensRecord,
    pub networks: BTreeMap<String, Vec<i8>>,
    pub explorers: BTreeMap<String, ExplorerRecord>,
}

impl StateLine {
    pub fn into_frame(self) -> Frame {
        Frame {
            step: self.step,
            robots: self.robots,
            pens: self.pens,
            networks: self.networks,
            explorers: self.explorers,
            ..Frame::default()
        }
    }
}

/// Applies one streamed record to a viewer's frame.
pub fn apply_record(frame: &mut Frame, channel: Channel, data: serde_json::Value) -> Result<(), String> {
    apply_body(frame, &Body::decode(channel, data)?);
    Ok(())
}

/// Brings `frame` to the state after `body`, as a viewer keeps it.
pub fn apply_body(frame: &mut Frame, body: &Body) {
    match body {
        Body::Step(s) => {
            frame.step = s.clone();
            frame.events.clear();
            let now = frame.step.step;
            frame.deliveries.retain(|(s, _)| s + super::reader::DELIVERY_WINDOW >= now);
        }
        Body::Robots(r) => frame.robots = r.clone(),
        Body::Pens(p) => frame.pens = p.clone(),
        Body::Events(e) => frame.events.extend(e.events.iter().cloned()),
        Body::Radio(r) => frame.deliveries.extend(r.delivered.iter().map(|d| (r.step, d.clone()))),
        Body::Network(n) => {
            frame.networks.insert(n.robot.clone(), n.degrees.clone());
        }
        Body::Explorer(e) => {
            if let Some(known) = frame.explorers.get_mut(&e.robot) {
                apply_explorer(known, e.clone());
            }
        }
        Body::Keyframe(k) => {
            frame.networks = k.networks.iter().map(|n| (n.robot.clone(), n.degrees.clone())).collect();
            frame.explorers = k.explorers.iter().map(|e| (e.robot.clone(), e.clone())).collect();
            frame.ranges = k.ranges.robot.iter().copied().zip(k.ranges.distances.iter().cloned()).collect();
            frame.sensors.clear();
            frame.add_sensors(&k.sensors);
        }
        Body::Sensors(r) => frame.add_sensors(r),
        Body::Inputs(_) => {}
        Body::Range(r) => {
            for (&robot, distances) in r.robot.iter().zip(&r.distances) {
                frame.ranges.insert(robot, distances.clone());
            }
        }
    }
}

struct Client {
    stream: TcpStream,
    peer: SocketAddr,
    out: Vec<u8>,
    input: Vec<u8>,
    /// Skipping steps until it catches up; then it gets the state again.
    behind: bool,
}

/// What the server shares between the record sink and the systems that serve viewers.
#[derive(Default)]
struct Shared {
    clients: Vec<Client>,
    hello: Vec<u8>,
    /// The current state, kept from the records as a viewer would.
    state: Frame,
    commands: Vec<ViewerCommand>,
    log: Vec<String>,
}

/// The viewer server of a running simulation.
#[derive(Resource, Clone)]
pub struct ViewerServer {
    pub local: SocketAddr,
    listener: Arc<TcpListener>,
    shared: Arc<Mutex<Shared>>,
}

/// Pause and speed as the viewers set them, for the headless run's loop.
#[derive(Resource, Debug, Clone, Copy, Default, PartialEq)]
pub struct ViewerControl {
    pub paused: bool,
    /// Times real time; `None` as fast as possible.
    pub speed: Option<f64>,
}

impl ViewerServer {
    /// Listens on `address:port` for viewers of the run `meta`.
    pub fn open(address: &str, port: u16, meta: &RunMeta) -> Result<ViewerServer, String> {
        let listener = TcpListener::bind((address, port))
            .map_err(|e| format!("--serve-viewer: cannot listen on {address}:{port}: {e}"))?;
        listener.set_nonblocking(true).map_err(|e| format!("--serve-viewer: {e}"))?;
        let local = listener.local_addr().map_err(|e| format!("--serve-viewer: {e}"))?;
        let hello = ViewerLine::Hello { version: VIEWER_PROTOCOL, meta: meta.to_map() };
        let mut line = serde_json::to_vec(&hello).map_err(|e| e.to_string())?;
        line.push(b'\n');
        let shared = Shared { hello: line, ..default() };
        Ok(ViewerServer { local, listener: Arc::new(listener), shared: Arc::new(Mutex::new(shared)) })
    }

    /// The sink that feeds the viewers (add it to the [`super::Recorder`]).
    pub fn sink(&self) -> Box<dyn Sink> {
        Box::new(ViewerSink(Arc::clone(&self.shared)))
    }

    /// Viewers connected now.
    pub fn viewers(&self) -> usize {
        self.shared.lock().map_or(0, |s| s.clients.len())
    }

    /// Takes new viewers, reads what viewers sent, writes what is waiting. Never blocks.
    pub fn serve(&self) -> Vec<ViewerCommand> {
        let Ok(mut shared) = self.shared.lock() else { return Vec::new() };
        let shared = &mut *shared;
        loop {
            match self.listener.accept() {
                Ok((stream, peer)) => {
                    if stream.set_nonblocking(true).is_err() {
                        continue;
                    }
                    let _ = stream.set_nodelay(true);
                    let mut out = shared.hello.clone();
                    out.extend(state_line(&shared.state));
                    shared.log.push(format!("viewer {peer} attached at step {}", shared.state.step.step));
                    shared.clients.push(Client { stream, peer, out, input: Vec::new(), behind: false });
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(_) => break,
            }
        }
        let mut commands = std::mem::take(&mut shared.commands);
        let state = &shared.state;
        let log = &mut shared.log;
        shared.clients.retain_mut(|c| {
            let alive = pump(c, &mut commands, log);
            if alive && c.behind && c.out.is_empty() {
                c.behind = false;
                c.out.extend(state_line(state));
            }
            if !alive {
                log.push(format!("viewer {} detached", c.peer));
            }
            alive
        });
        for l in shared.log.drain(..) {
            info!("{l}");
        }
        commands
    }
}

fn state_line(f: &Frame) -> Vec<u8> {
    let line = ViewerLine::State {
        frame: Box::new(StateLine {
            step: f.step.clone(),
            robots: f.robots.clone(),
            pens: f.pens.clone(),
            networks: f.networks.clone(),
            explorers: f.explorers.clone(),
        }),
    };
    let mut v = serde_json::to_vec(&line).unwrap_or_default();
    v.push(b'\n');
    v
}

/// Reads and writes what a viewer's socket takes now; false when the viewer is gone or broke
/// the protocol.
fn pump(c: &mut Client, commands: &mut Vec<ViewerCommand>, log: &mut Vec<String>) -> bool {
    let mut buf = [0u8; 4096];
    loop {
        match c.stream.read(&mut buf) {
            Ok(0) => return false,
            Ok(n) => c.input.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(_) => return false,
        }
    }
    while let Some(end) = c.input.iter().position(|&b| b == b'\n') {
        let line: Vec<u8> = c.input.drain(..=end).collect();
        let text = String::from_utf8_lossy(&line);
        if text.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<ViewerCommand>(text.trim()) {
            Ok(cmd) => commands.push(cmd),
            Err(e) => log.push(format!("viewer {}: ignored a line that is not a command: {e}", c.peer)),
        }
    }
    if c.input.len() > MAX_LINE {
        log.push(format!("viewer {}: a line longer than {MAX_LINE} bytes; disconnected", c.peer));
        return false;
    }
    while !c.out.is_empty() {
        match c.stream.write(&c.out) {
            Ok(0) => return false,
            Ok(n) => {
                c.out.drain(..n);
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(_) => return false,
        }
    }
    true
}

struct ViewerSink(Arc<Mutex<Shared>>);

impl Sink for ViewerSink {
    fn write(&mut self, record: &std::sync::Arc<Record>) -> Result<(), String> {
        let Ok(mut shared) = self.0.lock() else { return Err("the viewer server failed".into()) };
        let shared = &mut *shared;
        apply_body(&mut shared.state, &record.body);
        if shared.clients.is_empty() {
            return Ok(());
        }
        let mut line =
            format!(r#"{{"type":"record","channel":"{}","step":{},"data":"#, record.channel.topic(), record.step)
                .into_bytes();
        line.extend_from_slice(&record.body.encode());
        line.extend_from_slice(b"}\n");
        let mut log = Vec::new();
        let mut none = Vec::new();
        shared.clients.retain_mut(|c| {
            if c.out.len() > BEHIND {
                c.behind = true;
            }
            if !c.behind {
                c.out.extend_from_slice(&line);
            }
            // Write as much as the socket takes now, so a fast viewer sees every step.
            let alive = pump(c, &mut none, &mut log);
            if !alive {
                log.push(format!("viewer {} detached", c.peer));
            }
            alive
        });
        shared.commands.extend(none);
        shared.log.extend(log);
        Ok(())
    }

    fn finish(&mut self, end: &EndMeta) -> Result<(), String> {
        let Ok(mut shared) = self.0.lock() else { return Ok(()) };
        let mut line =
            serde_json::to_vec(&ViewerLine::End { hash: end.hash.clone(), steps: end.steps }).unwrap_or_default();
        line.push(b'\n');
        for c in &mut shared.clients {
            c.out.extend_from_slice(&line);
            let _ = c.stream.set_nonblocking(false);
            let _ = c.stream.set_write_timeout(Some(std::time::Duration::from_millis(500)));
            let _ = c.stream.write_all(&c.out);
            c.out.clear();
        }
        Ok(())
    }

    fn name(&self) -> String {
        "viewer server".into()
    }
}

/// Every frame: serve viewers and apply what they sent.
pub fn serve_viewers(
    server: Option<Res<ViewerServer>>,
    mut control: ResMut<ViewerControl>,
    mut radio: ResMut<PerEnv<Radio>>,
) {
    let Some(server) = server else { return };
    for cmd in server.serve() {
        match cmd {
            ViewerCommand::Pause { paused } => control.paused = paused,
            ViewerCommand::Speed { factor } => control.speed = factor.filter(|f| f.is_finite() && *f > 0.0),
            ViewerCommand::Radio { system } => {
                radio.only_mut().0.system = system;
            }
        }
    }
}

/// A viewer's connection to a running simulation.
pub struct ViewerClient {
    stream: TcpStream,
    input: Vec<u8>,
    pub meta: RunMeta,
    pub frame: Frame,
    /// The run ended: its trajectory hash and steps.
    pub ended: Option<(String, u64)>,
    pub closed: Option<String>,
}

impl ViewerClient {
    /// Connects to `addr` and reads the hello; the error says what went wrong.
    pub fn connect(addr: &str) -> Result<ViewerClient, String> {
        let mut stream =
            TcpStream::connect(addr).map_err(|e| format!("cannot connect to a simulation at {addr}: {e}"))?;
        stream.set_read_timeout(Some(std::time::Duration::from_secs(5))).map_err(|e| format!("{addr}: {e}"))?;
        let mut input = Vec::new();
        let mut buf = [0u8; 8192];
        let hello = loop {
            if let Some(end) = input.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = input.drain(..=end).collect();
                break line;
            }
            if input.len() > 64 << 20 {
                return Err(format!("{addr} is not a crsim viewer server: no hello line"));
            }
            let n = stream.read(&mut buf).map_err(|e| format!("{addr}: no hello from the simulation: {e}"))?;
            if n == 0 {
                return Err(format!("{addr} closed the connection before saying hello"));
            }
            input.extend_from_slice(&buf[..n]);
        };
        let meta = match serde_json::from_slice::<ViewerLine>(&hello) {
            Ok(ViewerLine::Hello { version, meta }) if version == VIEWER_PROTOCOL => {
                RunMeta::from_map(&meta).map_err(|e| format!("{addr}: {e}"))?
            }
            Ok(ViewerLine::Hello { version, .. }) => {
                return Err(format!("{addr} speaks viewer protocol {version}; this crsim speaks {VIEWER_PROTOCOL}"));
            }
            _ => return Err(format!("{addr} is not a crsim viewer server: its first line is not a hello")),
        };
        stream.set_nonblocking(true).map_err(|e| format!("{addr}: {e}"))?;
        Ok(ViewerClient { stream, input, meta, frame: Frame::default(), ended: None, closed: None })
    }

    /// Reads everything that arrived; the frame holds the newest state.
    pub fn poll(&mut self) {
        if self.closed.is_some() {
            return;
        }
        let mut buf = [0u8; 65536];
        loop {
            match self.stream.read(&mut buf) {
                Ok(0) => {
                    self.closed = Some("the simulation closed the connection".into());
                    break;
                }
                Ok(n) => self.input.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => {
                    self.closed = Some(format!("the connection failed: {e}"));
                    break;
                }
            }
        }
        let mut start = 0;
        while let Some(end) = self.input[start..].iter().position(|&b| b == b'\n') {
            let line = &self.input[start..start + end];
            start += end + 1;
            match serde_json::from_slice::<ViewerLine>(line) {
                Ok(ViewerLine::State { frame }) => self.frame = frame.into_frame(),
                Ok(ViewerLine::Record { channel, data, .. }) => {
                    if let Some(c) = Channel::from_topic(&channel)
                        && let Err(e) = apply_record(&mut self.frame, c, data)
                    {
                        warn!("viewer: {e}");
                    }
                }
                Ok(ViewerLine::End { hash, steps }) => self.ended = Some((hash, steps)),
                Ok(ViewerLine::Hello { .. }) => {}
                Err(e) => warn!("viewer: a line that is not of the protocol: {e}"),
            }
        }
        self.input.drain(..start);
    }

    /// Sends a command to the simulation.
    pub fn send(&mut self, cmd: &ViewerCommand) {
        let mut line = serde_json::to_vec(cmd).unwrap_or_default();
        line.push(b'\n');
        let _ = self.stream.set_nonblocking(false);
        if let Err(e) = self.stream.write_all(&line) {
            self.closed = Some(format!("cannot send to the simulation: {e}"));
        }
        let _ = self.stream.set_nonblocking(true);
    }
}
