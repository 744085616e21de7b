//! The extension as a user meets it: its own binary (crsim's command line with the plugin)
//! checks and runs a scene whose robots carry `"signal"`, and a program robot reads what it
//! hears over crsim's program protocol, described in `hello` beside crsim's own sensors.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use bevy::prelude::*;
use crsim::record::format::{Channel, KeyframeRecord};
use crsim::record::reader::Recording;
use crsim::record::replay::{Replay, ReplaySource};
use crsim::run::headless::headless_app_with;
use crsim::scene::SceneSource;
use crsim_signal::{SignalHeard, SignalPlugin};
use serde_json::{Value, json};

fn crate_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn scene() -> PathBuf {
    crate_dir().join("scenes/signal.ron")
}

fn crsim_signal() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_crsim-signal"));
    c.current_dir(crate_dir());
    c
}

/// A fresh folder for one test's files.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("crsim-signal-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn its_binary_checks_a_scene_naming_the_sensor_and_names_it_among_the_sensors_there_are() {
    let out = crsim_signal().arg("check").arg(scene()).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
    assert!(String::from_utf8_lossy(&out.stdout).ends_with(": ok\n"));

    let dir = scratch("check");
    let typo = dir.join("typo.ron");
    let text = std::fs::read_to_string(scene()).unwrap().replace("\"signal\"]", "\"signl\"]");
    std::fs::write(&typo, text).unwrap();
    let out = crsim_signal().arg("check").arg(&typo).output().unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success());
    assert!(said.contains("\"signl\"") && said.contains("listener"), "{said}");
    assert!(said.contains("signal"), "the registered names are listed, the extension's among them: {said}");
    std::fs::remove_dir_all(dir).unwrap();
}

/// One JSON line from the program server.
fn recv(reader: &mut BufReader<TcpStream>) -> Value {
    let mut line = String::new();
    reader.read_line(&mut line).expect("a frame");
    serde_json::from_str(&line).unwrap_or_else(|e| panic!("{line:?}: {e}"))
}

#[test]
fn a_program_robot_reads_the_robots_it_hears_strongest_first_and_its_hello_describes_the_sensor() {
    let dir = scratch("run");
    let (metrics, record) = (dir.join("metrics.json"), dir.join("run.mcap"));
    let mut run = crsim_signal()
        .args(["run", "scenes/signal.ron", "--steps", "260", "--programs", "listener", "--program-port", "0"])
        .arg("--out")
        .arg(&metrics)
        .arg("--record")
        .arg(&record)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(run.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    let addr = line.trim().strip_prefix("programs: listening on ").expect(&line).to_string();

    let stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut writer = stream.try_clone().unwrap();
    let mut reader = BufReader::new(stream);
    let hello = recv(&mut reader);
    let sensors = &hello["robots"][0]["sensors"];
    let names: Vec<&str> = sensors.as_array().unwrap().iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["pose", "battery", "bump", "radio", "signal"], "its list, in its order");
    assert_eq!(sensors[4]["parts"], json!([{"name": "signal", "size": 2, "low": 0.0, "high": 1.0}]));
    assert_eq!(sensors[4]["settings"]["exponent"], 2.0);

    writeln!(writer, "{}", json!({"type": "register", "robots": [{"name": "listener"}]})).unwrap();
    assert_eq!(recv(&mut reader)["type"], "registered");
    let mut readings = Vec::new();
    loop {
        let frame = recv(&mut reader);
        if frame["type"] != "step" {
            assert_eq!(frame["type"], "end", "{frame}");
            break;
        }
        readings.push(frame["robots"][0]["sensors"]["signal"].clone());
        let act = json!({"type": "act", "step": frame["step"], "robots": [{"name": "listener", "drive": [0.0, 0.0]}]});
        writeln!(writer, "{act}").unwrap();
    }
    assert!(run.wait().unwrap().success());
    assert_eq!(readings.len(), 260);
    // Near at 2 m and mid at 6 m; far is beyond its own radio's 5 m, quiet sends nothing.
    let heard = readings.last().unwrap().as_array().unwrap();
    let who: Vec<&str> = heard.iter().map(|h| h["robot"].as_str().unwrap()).collect();
    assert_eq!(who, ["near", "mid"], "{heard:?}");
    let dbm = |i: usize| heard[i]["dbm"].as_f64().unwrap();
    assert!((dbm(0) - -46.0206).abs() < 1e-3 && (dbm(1) - -55.563).abs() < 1e-3, "{heard:?}");
    assert!((heard[1]["distance"].as_f64().unwrap() - 6.0).abs() < 1e-4);
    assert!(heard[0]["bearing"].as_f64().unwrap().abs() < 1e-4, "straight ahead: {heard:?}");
    assert!(metrics.exists(), "the run's metrics are written");

    // The recording keeps what the listener heard (`/sensors`, and in the keyframe of step 250
    // what it heard before), and a replay puts it back on the listener, where the app's
    // inspector and drawing read it.
    let mut recording = Recording::open(&record).unwrap();
    let keyframes: Vec<KeyframeRecord> = recording.read(Channel::Keyframe, 250, 250).unwrap();
    assert_eq!(keyframes[0].sensors.robot, [0], "the listener, robot 0");
    assert_eq!(keyframes[0].sensors.records[0]["signal"], *readings.last().unwrap());
    for step in [4, 250, 255] {
        let frame = recording.frame(step).unwrap();
        assert_eq!(frame.sensors[&0]["signal"], *readings.last().unwrap(), "step {step}");
    }
    let scene = crsim::record::recorded_scene(&recording.meta).unwrap();
    let mut replay = Replay::file(recording);
    if let ReplaySource::File(t) = &mut replay.source {
        t.seek(255);
    }
    let mut app = headless_app_with(scene, SceneSource::Generated, |app| {
        app.add_plugins(SignalPlugin::default());
    });
    crsim::record::replay::plugin(&mut app);
    app.insert_resource(replay);
    app.update();
    app.update();
    let mut listeners = app.world_mut().query::<(&Name, &SignalHeard)>();
    let (_, heard) = listeners.iter(app.world()).find(|(n, _)| n.as_str() == "listener").expect("shown");
    assert_eq!(heard.0.iter().map(|h| h.robot.as_str()).collect::<Vec<_>>(), ["near", "mid"]);
    std::fs::remove_dir_all(dir).unwrap();
}
