//! Helpers the integration tests share: finding entities, reading poses, building scenes.
//! Each test binary uses some of them.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

use bevy::prelude::*;

use crsim::robot::pose;
use crsim::scene::load_scene_file;
use crsim::scene::schema::{ControllerSpec, RobotSpec, SceneFile};
use serde_json::{Value, json};

/// The entity called `name`.
pub fn named(app: &mut App, name: &str) -> Entity {
    let world = app.world_mut();
    let mut q = world.query::<(Entity, &Name)>();
    q.iter(world).find(|(_, n)| n.as_str() == name).map(|(e, _)| e).unwrap_or_else(|| panic!("no entity {name}"))
}

/// A copy of one of an entity's components.
pub fn get<C: Component + Clone>(app: &App, e: Entity) -> C {
    app.world().get::<C>(e).cloned().expect("component present")
}

/// Position and heading (radians) of an entity.
pub fn pose_of(app: &App, e: Entity) -> (Vec2, f32) {
    pose(app.world().get::<Transform>(e).expect("a transform"))
}

/// Position of an entity.
pub fn position(app: &App, e: Entity) -> Vec2 {
    pose_of(app, e).0
}

/// An empty walled room.
pub fn room(w: f32, h: f32) -> SceneFile {
    SceneFile::empty("test", w, h)
}

/// A robot with defaults and a controller.
pub fn robot(name: &str, x: f32, y: f32, heading: f32, controller: ControllerSpec) -> RobotSpec {
    let mut r = RobotSpec::new(name, x, y, heading);
    r.controller = controller;
    r
}

/// A shipped scene file's path.
pub fn scene_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes").join(name)
}

/// A shipped scene, loaded and checked.
pub fn shipped_scene(name: &str) -> SceneFile {
    load_scene_file(&scene_path(name)).unwrap_or_else(|e| panic!("{e}")).0
}

/// A program's end of a connection.
pub struct Prog {
    pub reader: BufReader<TcpStream>,
    pub writer: TcpStream,
}

impl Prog {
    pub fn connect(addr: SocketAddr) -> Self {
        let stream = TcpStream::connect(addr).expect("the program server accepts");
        stream.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        // Small frames go out at once (no waiting for the last one's acknowledgement).
        stream.set_nodelay(true).unwrap();
        Self { reader: BufReader::new(stream.try_clone().unwrap()), writer: stream }
    }

    /// The next frame, or `None` once the connection closed.
    pub fn try_recv(&mut self) -> Option<Value> {
        let mut line = String::new();
        match self.reader.read_line(&mut line) {
            Ok(0) | Err(_) => None,
            Ok(_) => Some(serde_json::from_str(&line).unwrap_or_else(|e| panic!("{line:?}: {e}"))),
        }
    }

    pub fn recv(&mut self) -> Value {
        let mut line = String::new();
        self.reader.read_line(&mut line).expect("a frame");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{line:?}: {e}"))
    }

    pub fn send(&mut self, v: Value) {
        self.send_raw(&v.to_string());
    }

    pub fn send_raw(&mut self, line: &str) {
        // One write per frame.
        self.writer.write_all(format!("{line}\n").as_bytes()).unwrap();
    }

    /// Connects, reads `hello` and registers `robots`; returns the `registered` reply.
    pub fn register(addr: SocketAddr, robots: Value) -> (Self, Value, Value) {
        let mut p = Self::connect(addr);
        let hello = p.recv();
        p.send(json!({"type": "register", "robots": robots}));
        let reply = p.recv();
        (p, hello, reply)
    }

    /// The next `step` frame, skipping nothing: anything else is an error of the test.
    pub fn step(&mut self) -> Value {
        let f = self.recv();
        assert_eq!(f["type"], "step", "{f}");
        f
    }
}

impl Prog {
    /// Connects and registers every robot the server offers.
    pub fn register_offered(addr: SocketAddr) -> Self {
        let mut p = Prog::connect(addr);
        let hello = p.recv();
        let robots: Vec<Value> =
            hello["robots"].as_array().unwrap().iter().map(|r| json!({"name": r["name"].clone()})).collect();
        p.send(json!({"type": "register", "robots": robots}));
        assert_eq!(p.recv()["type"], "registered");
        p
    }
}

/// A `crsim run` serving programs on a free port: the process, its output after the first line,
/// and where programs connect.
pub fn serving_run(args: &[&str]) -> (std::process::Child, BufReader<std::process::ChildStdout>, SocketAddr) {
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_crsim"))
        .arg("run")
        .args(args)
        .args(["--program-port", "0"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    let addr = line.trim().strip_prefix("programs: listening on ").expect(&line).parse().unwrap();
    (child, out, addr)
}

/// A deterministic program: every program robot the server offers drives in circles of its own
/// and claims whatever pen it sees; returns the steps it served.
pub fn circles(addr: SocketAddr, steps: u64) -> u64 {
    let mut p = Prog::register_offered(addr);
    let mut served = 0;
    loop {
        let Some(f) = p.try_recv() else { return served };
        if f["type"] != "step" {
            return served;
        }
        let step = f["step"].as_u64().unwrap();
        let mut acts = Vec::new();
        for (i, r) in f["robots"].as_array().unwrap().iter().enumerate() {
            let turn = if step % 200 < 100 { 0.8 } else { -0.5 } * (i as f64 + 1.0);
            let mut act = json!({"name": r["name"], "drive": [0.3, turn]});
            if let Some(pen) = r["camera"].as_array().unwrap().iter().find(|d| d["kind"] == "pen") {
                act["send"] = json!([{"content": {"claim": {"pen": pen["name"], "distance": pen["distance"]}}}]);
            }
            acts.push(act);
        }
        p.send(json!({"type": "act", "step": step, "robots": acts}));
        served += 1;
        if served > steps + 10 {
            return served;
        }
    }
}

/// A fresh directory under the system's temp dir for one test's files. It is removed when the
/// test passes and kept (its path printed) when the test fails or `CRSIM_KEEP_TEST_FILES` is
/// set (to look at the GUI test's screenshots), so a failure can be inspected.
pub struct Scratch(PathBuf);

impl Scratch {
    pub fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("crsim-test-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }
}

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for Scratch {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if std::thread::panicking() || std::env::var_os("CRSIM_KEEP_TEST_FILES").is_some() {
            eprintln!("kept the test's files in {}", self.0.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}
