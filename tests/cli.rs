//! The `crsim` binary as a user runs it: `check`, `run`, `bench`, bad arguments, and the GUI
//! smoke test (ignored by default; `.ci/run` runs it under Xvfb).

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn crsim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_crsim"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("crsim runs")
}

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("crsim-test-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn hash_line(out: &str) -> String {
    let line = out.lines().find(|l| l.starts_with("hash: ")).unwrap_or_else(|| panic!("no hash line in\n{out}"));
    let hash = line["hash: ".len()..].trim().to_string();
    assert_eq!(hash.len(), 16, "{line}");
    assert!(hash.chars().all(|c| c.is_ascii_hexdigit()), "{line}");
    hash
}

#[test]
fn check_accepts_the_shipped_scenes() {
    let out = crsim(&[
        "check",
        "scenes/explorer.ron",
        "scenes/explorers.ron",
        "scenes/pens.ron",
        "scenes/collectors.ron",
        "scenes/swarm.ron",
        "scenes/wenv.ron",
        "scenes/lossy.ron",
        "assets/network.ron",
    ]);
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout.lines().filter(|l| l.ends_with(": ok")).count(), 8, "{stdout}");
}

#[test]
fn check_reports_every_bad_file_and_fails() {
    let dir = temp_dir("check");
    let syntax = dir.join("syntax.ron");
    std::fs::write(&syntax, "(\n  name: \"x\",\n  arena: (width: 2.0 height: 1.0),\n)\n").unwrap();
    let semantic = dir.join("semantic.ron");
    std::fs::write(
        &semantic,
        "(name: \"x\", arena: (width: 2.0, height: 1.0), dens: [(name: \"d\", pos: (1.0, 0.5))],
          robots: [(name: \"a\", pose: (0.5, 0.5, 0.0)), (name: \"a\", pose: (1.5, 0.5, 0.0), den: \"nest\")])",
    )
    .unwrap();
    let network = dir.join("network.ron");
    let shipped = std::fs::read_to_string("assets/network.ron").unwrap();
    std::fs::write(&network, shipped.replace("(from: \"Turn\", to: \"Angle\"", "(from: \"Turn\", to: \"Angel\""))
        .unwrap();
    let s = syntax.to_string_lossy().to_string();
    let m = semantic.to_string_lossy().to_string();
    let n = network.to_string_lossy().to_string();
    let out = crsim(&["check", &s, "scenes/pens.ron", &m, "/no/such.ron", &n]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let all = text(&out);
    assert!(all.contains(&format!("{s}:3:")), "{all}");
    assert!(all.contains("scenes/pens.ron: ok"), "{all}");
    assert!(all.contains(&format!("{m}: robot \"a\": duplicate name")), "{all}");
    assert!(all.contains(&format!("{m}: robot \"a\": den \"nest\" does not exist")), "{all}");
    assert!(all.contains(&format!("{m}: den \"d\": not near a wall")), "{all}");
    assert!(all.contains("/no/such.ron: cannot read"), "{all}");
    assert!(all.contains(&format!("{n}: link \"Turn\" -> \"Angel\": \"Angel\" is not a node")), "{all}");
    assert!(all.contains("4 of 5 files have errors"), "{all}");
}

#[test]
fn run_prints_a_summary_and_writes_metrics() {
    let dir = temp_dir("run");
    let json = dir.join("m.json");
    let j = json.to_string_lossy().to_string();
    let out = crsim(&["run", "scenes/explorer.ron", "--steps", "300", "--out", &j]);
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let hash = hash_line(&stdout);
    assert!(stdout.contains("steps: 300"), "{stdout}");
    let m: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(m["steps"], 300);
    assert_eq!(m["hash"], hash.as_str());
    assert!((m["sim_time_s"].as_f64().unwrap() - 6.0).abs() < 1e-9);
    assert!(m["wall_time_s"].as_f64().unwrap() > 0.0);
    assert_eq!(m["robots"][0]["name"], "explorer");
    for key in ["distance_m", "collisions", "battery"] {
        assert!(m["robots"][0].get(key).is_some(), "{key}");
    }
    assert!(m["explore"]["map"].as_array().is_some_and(|rows| rows.len() == 17), "{}", m["explore"]);
    assert_eq!(m["explore"]["repeat_collisions"], 0);
    // Same again: same hash. Another seed: the wanderers of the pens scene take other turns.
    let again = crsim(&["run", "scenes/explorer.ron", "--steps", "300"]);
    assert_eq!(hash_line(&String::from_utf8_lossy(&again.stdout)), hash);
    let seeded = crsim(&["run", "scenes/pens.ron", "--steps", "1000", "--seed", "5"]);
    let base = crsim(&["run", "scenes/pens.ron", "--steps", "1000"]);
    assert_ne!(hash_line(&String::from_utf8_lossy(&seeded.stdout)), hash_line(&String::from_utf8_lossy(&base.stdout)));
}

#[test]
fn bad_arguments_are_clear_errors() {
    let out = crsim(&["run", "scenes/nope.ron", "--steps", "10"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).contains("scenes/nope.ron: cannot read"), "{}", text(&out));
    let out = crsim(&["run", "scenes/pens.ron", "--steps", "ten"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).contains("invalid value 'ten'"), "{}", text(&out));
    let out = crsim(&["bench", "--robots", "0"]);
    assert_eq!(out.status.code(), Some(2));
    let out = crsim(&["check"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(!text(&out).contains("panicked"));
}

#[test]
fn bench_reports_robot_steps_per_second() {
    let out = crsim(&["bench", "--robots", "50", "--steps", "20"]);
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().find(|l| l.starts_with("robot_steps_per_s: ")).expect("rate line");
    let rate: f64 = line["robot_steps_per_s: ".len()..].trim().parse().unwrap();
    assert!(rate > 0.0);
    let out = crsim(&["bench", "--robots", "50", "--steps", "10", "--comms"]);
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let value = |key: &str| -> f64 {
        let line = stdout.lines().find(|l| l.starts_with(key)).unwrap_or_else(|| panic!("{key} in {stdout}"));
        line[key.len()..].trim().parse().unwrap()
    };
    // Every robot broadcasts each step and its neighbours within 2 m hear it.
    assert!(value("deliveries: ") >= 50.0 * 10.0, "{stdout}");
    assert!(value("deliveries_per_s: ") > 0.0);
    let out = crsim(&["bench", "--robots", "40", "--steps", "10", "--network"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("robot_steps_per_s: "), "{}", text(&out));
}

#[test]
fn run_serves_remote_robots_in_the_protocol_asked_for() {
    let dir = temp_dir("protocol");
    let scene = std::fs::read_to_string("scenes/wenv.ron").unwrap().replace("http: 8090, ws: 8091", "http: 0, ws: 0");
    let path = dir.join("wenv.ron");
    std::fs::write(&path, scene).unwrap();
    let json = dir.join("m.json");
    let (p, j) = (path.to_string_lossy().to_string(), json.to_string_lossy().to_string());
    let out = crsim(&["run", &p, "--steps", "20", "--protocol", "2022", "--out", &j]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("remote robot wenvbot: http://127.0.0.1:"), "{}", text(&out));
    let m: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(m["remote"]["robots"][0]["protocol"], "Vr2022");
    let out = crsim(&["run", &p, "--steps", "20", "--protocol", "2031"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).contains("unknown protocol \"2031\": use 2021, 2022 or 2023"), "{}", text(&out));
}

#[test]
fn run_dumps_a_robots_network() {
    let out = crsim(&["run", "scenes/pens.ron", "--steps", "100", "--dump-network", "beta"]);
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("network of beta after 100 ticks"), "{stdout}");
    assert!(stdout.contains("The Actuator Collection"), "{stdout}");
    assert!(stdout.lines().any(|l| l.starts_with("Collecting (S:1.00)")), "{stdout}");
    let out = crsim(&["run", "scenes/pens.ron", "--steps", "10", "--dump-network", "zed"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out).contains("no robot \"zed\" of controller kind Network (those it has: alpha, beta, gamma)"),
        "{}",
        text(&out)
    );
}

#[test]
fn a_signal_stops_a_run_and_its_metrics_are_written_marked_interrupted() {
    use nix::sys::signal::{Signal, kill};
    use nix::unistd::Pid;
    let dir = temp_dir("signal");
    for signal in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP] {
        let json = dir.join(format!("{signal}.json"));
        let child = Command::new(env!("CARGO_BIN_EXE_crsim"))
            .args(["run", "scenes/collectors.ron", "--steps", "100000000", "--out"])
            .arg(&json)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(2000));
        kill(Pid::from_raw(child.id() as i32), signal).unwrap();
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(130), "{signal}: {}", text(&out));
        assert!(text(&out).contains("interrupted: these are the metrics of the"), "{}", text(&out));
        let m: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        assert_eq!(m["interrupted"], true);
        let steps = m["steps"].as_u64().unwrap();
        assert!(steps > 0 && steps < 100_000_000 && steps.is_multiple_of(100), "{steps}");
        assert_eq!(m["hash"], hash_line(&String::from_utf8_lossy(&out.stdout)).as_str());
    }
    // Only the metrics files: no temporary left behind.
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 3);
}

#[test]
fn ports_that_cannot_be_opened_stop_a_run_with_their_names() {
    let dir = temp_dir("ports");
    let taken = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let scene = dir.join("external.ron");
    std::fs::write(
        &scene,
        format!(
            "(name: \"x\", arena: (width: 2.0, height: 2.0), robots: [(name: \"r1\", pose: (1.0, 1.0, 0.0), \
             controller: External(port: {port}))])"
        ),
    )
    .unwrap();
    let out = crsim(&["run", &scene.to_string_lossy(), "--steps", "10"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains(&format!("robot \"r1\": cannot bind UDP 127.0.0.1:{port}")), "{}", text(&out));
}

#[test]
fn the_app_without_a_display_and_an_absurd_bench_are_refused_with_a_message() {
    let out = Command::new(env!("CARGO_BIN_EXE_crsim"))
        .arg("scenes/pens.ron")
        .env_remove("DISPLAY")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("no display to open the app's window on"), "{}", text(&out));
    let out = Command::new(env!("CARGO_BIN_EXE_crsim"))
        .arg("scenes/pens.ron")
        .env("DISPLAY", ":4711")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("the app cannot open its window on display \":4711\""), "{}", text(&out));
    assert!(!text(&out).contains("panicked"), "{}", text(&out));
    let out = crsim(&["bench", "--robots", "1000000000000"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).contains("--robots 1000000000000: at most 1000000 robots"), "{}", text(&out));
}

/// Runs the real app under Xvfb on `scene` (the built-in one when `None`), saving a screenshot.
fn run_app(scene: Option<&str>, png: &Path, frames: u32) -> Output {
    let p = png.to_string_lossy().to_string();
    let frames = frames.to_string();
    let mut args = vec!["-a", "-s", "-screen 0 1280x800x24", env!("CARGO_BIN_EXE_crsim")];
    args.extend(scene);
    args.extend(["--screenshot", &p, "--frames", &frames]);
    Command::new("xvfb-run").args(args).current_dir(env!("CARGO_MANIFEST_DIR")).output().expect("xvfb-run is installed")
}

/// The step the app stopped at and its hash, from its output.
fn app_stop(out: &Output) -> (u64, String) {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().find(|l| l.starts_with("app stopped at step ")).expect("step line");
    let step = line["app stopped at step ".len()..].split_whitespace().next().unwrap().parse().unwrap();
    (step, hash_line(&stdout))
}

/// Launches the real app under Xvfb (software rendering), renders the default scene, saves a
/// screenshot and checks it is a real picture: the arena and the panel, not a blank window.
/// Then checks the app's trajectory equals a headless run of the same number of steps, for the
/// default scene and for the 64-robot swarm (many contacts).
#[test]
#[ignore = "needs Xvfb and Mesa; run by .ci/run"]
fn gui_smoke_screenshot() {
    let dir = temp_dir("gui");
    let png = dir.join("shot.png");
    let out = run_app(None, &png, 60);
    assert!(out.status.success(), "{}", text(&out));
    let (w, h, pixels) = read_png(&png);
    assert!(w >= 640 && h >= 400, "{w}x{h}");
    // Not blank: many distinct colours, the floor's colour over a large area, the panel's dark
    // grey on the left.
    let mut colours = std::collections::BTreeSet::new();
    let mut floor = 0usize;
    for px in pixels.chunks(3) {
        colours.insert((px[0], px[1], px[2]));
        if px[0] > 200 && px[1] > 200 && px[2] > 180 {
            floor += 1;
        }
    }
    assert!(colours.len() > 50, "only {} colours", colours.len());
    assert!(floor > pixels.len() / 3 / 5, "floor covers too little: {floor}");
    let (step, hash) = app_stop(&out);
    assert!(step > 0);
    let run = crsim(&["run", "scenes/pens.ron", "--steps", &step.to_string()]);
    assert_eq!(hash, hash_line(&String::from_utf8_lossy(&run.stdout)), "app and headless differ on the default scene");
    let out = run_app(Some("scenes/swarm.ron"), &dir.join("swarm.png"), 150);
    assert!(out.status.success(), "{}", text(&out));
    let (step, hash) = app_stop(&out);
    assert!(step > 100, "step {step}");
    let run = crsim(&["run", "scenes/swarm.ron", "--steps", &step.to_string()]);
    assert_eq!(hash, hash_line(&String::from_utf8_lossy(&run.stdout)), "app and headless differ on the swarm");
    // Robots driven by a program in lock-step: the app and a headless run agree too.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let addr: std::net::SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let client = std::thread::spawn(move || {
        let start = std::time::Instant::now();
        while std::net::TcpStream::connect(addr).is_err() {
            assert!(start.elapsed().as_secs() < 60, "the app's program server never came up");
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        common::circles(addr, u64::MAX / 2)
    });
    let png = dir.join("programs.png");
    let out = Command::new("xvfb-run")
        .args(["-a", "-s", "-screen 0 1280x800x24", env!("CARGO_BIN_EXE_crsim"), "scenes/programs.ron"])
        .args(["--program-port", &port.to_string(), "--programs", "beta"])
        .args(["--screenshot", &png.to_string_lossy(), "--frames", "150"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let served = client.join().unwrap();
    let (step, hash) = app_stop(&out);
    assert!(step > 50 && served >= step, "step {step}, served {served}");
    let mut child = Command::new(env!("CARGO_BIN_EXE_crsim"))
        .args(["run", "scenes/programs.ron", "--steps", &step.to_string(), "--program-port", "0", "--programs", "beta"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    std::io::BufRead::read_line(&mut stdout, &mut line).unwrap();
    let addr = line.trim().strip_prefix("programs: listening on ").expect(&line).parse().unwrap();
    common::circles(addr, u64::MAX / 2);
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).unwrap();
    child.wait().unwrap();
    assert_eq!(hash, hash_line(&rest), "app and headless differ with program robots");
}

fn read_png(path: &Path) -> (u32, u32, Vec<u8>) {
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(path).expect("screenshot written")));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    buf.truncate(info.buffer_size());
    let rgb = match info.color_type {
        png::ColorType::Rgb => buf,
        png::ColorType::Rgba => buf.chunks(4).flat_map(|p| [p[0], p[1], p[2]]).collect(),
        other => panic!("unexpected colour type {other:?}"),
    };
    (info.width, info.height, rgb)
}
