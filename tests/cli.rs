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

fn temp_dir(name: &str) -> common::Scratch {
    common::Scratch::new(name)
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
    // Where the time went: every stage of the step, within the run's wall time.
    let stages: Vec<f64> = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("stage_ms_"))
        .map(|l| l.split_once(": ").expect("stage: ms").1.parse().unwrap())
        .collect();
    assert_eq!(stages.len(), crsim::sim::stages::STAGES.len(), "{stdout}");
    let wall_ms: f64 =
        stdout.lines().find_map(|l| l.strip_prefix("wall_time_s: ")).unwrap().parse::<f64>().unwrap() * 1e3;
    let per_step: f64 = stages.iter().sum();
    assert!(stages.iter().all(|&ms| ms >= 0.0) && per_step > 0.0, "{stdout}");
    assert!(per_step * 20.0 <= wall_ms + 0.5, "{per_step} ms a step over 20 steps in {wall_ms} ms");
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
    assert!(String::from_utf8_lossy(&out.stdout).contains("physics: rigid"), "{}", text(&out));
    let out = crsim(&["bench", "--robots", "40", "--steps", "10", "--network", "--kinematic"]);
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("robot_steps_per_s: ") && stdout.contains("physics: kinematic"), "{}", text(&out));
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

/// A run of the collectors far longer than any test waits, its metrics to `json`.
fn long_run(json: &Path) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_crsim"))
        .args(["run", "scenes/collectors.ron", "--steps", "100000000", "--out"])
        .arg(json)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn a_signal_stops_a_run_and_its_metrics_are_written_marked_interrupted() {
    use nix::sys::signal::{Signal, kill};
    use nix::unistd::Pid;
    let dir = temp_dir("signal");
    for signal in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP] {
        let json = dir.join(format!("{signal}.json"));
        let child = long_run(&json);
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

/// A launcher that dies can send its SIGTERM twice (from its main thread and its output reader's):
/// the second, arriving while the run winds down, must not end it before the metrics are written.
#[test]
fn a_repeated_signal_still_leaves_the_metrics_written() {
    use nix::sys::signal::{Signal, kill};
    use nix::unistd::Pid;
    let dir = temp_dir("signal-twice");
    let json = dir.join("m.json");
    let child = long_run(&json);
    std::thread::sleep(std::time::Duration::from_millis(2000));
    let pid = Pid::from_raw(child.id() as i32);
    for signal in [Signal::SIGTERM, Signal::SIGTERM, Signal::SIGINT, Signal::SIGHUP] {
        kill(pid, signal).unwrap();
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", text(&out));
    let m: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(m["interrupted"], true);
}

/// A remote robot whose name holds a NUL byte passed `check`, then `run` panicked naming a thread
/// after it: both refuse it now, naming the robot.
#[test]
fn a_robot_named_with_a_nul_byte_is_refused_by_check_and_run() {
    let dir = temp_dir("nul-name");
    let scene = dir.join("nul.ron");
    std::fs::write(
        &scene,
        "(name: \"x\", arena: (width: 2.0, height: 2.0), robots: [(name: \"r\u{0}1\", pose: (1.0, 1.0, 0.0), \
         controller: Remote(http: 0, ws: 0))])",
    )
    .unwrap();
    let path = scene.to_string_lossy();
    for args in [vec!["check", &path], vec!["run", &path, "--steps", "10"]] {
        let out = crsim(&args);
        assert!(matches!(out.status.code(), Some(1 | 2)), "{args:?}: {}", text(&out));
        assert!(
            text(&out).contains("robot number 1 in robots: name \"r\\01\" holds the control character U+0000"),
            "{}",
            text(&out)
        );
        assert!(!text(&out).contains("panicked"), "{}", text(&out));
    }
}

/// `--threads` was taken up to 65,535, and a thread the OS refused was a panic inside Bevy's task
/// pool: now more than four a core is refused, and a refused thread is an error. The OS refuses
/// here because the run's user may have only a few processes (`prlimit --nproc`; root is exempt
/// from that limit, so a root test runs crsim as `nobody`).
#[test]
fn too_many_threads_and_a_thread_the_os_refuses_are_errors() {
    let out = crsim(&["bench", "--robots", "10", "--steps", "1", "--threads", "65535"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("--threads 65535: this machine has"), "{}", text(&out));

    let dir = temp_dir("nproc");
    let bin = dir.join("crsim");
    std::fs::copy(env!("CARGO_BIN_EXE_crsim"), &bin).unwrap();
    for p in [&*dir, bin.as_path()] {
        std::fs::set_permissions(p, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    }
    let threads = crsim::sim::max_threads().to_string();
    let args = [bin.to_str().unwrap(), "bench", "--robots", "300", "--steps", "1", "--threads", &threads];
    let mut command = Command::new("prlimit");
    command.arg("--nproc=2");
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { nix::libc::geteuid() } == 0 {
        command.args(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]);
    }
    let out = command.args(args).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains(&format!("cannot start {threads} threads: the system refused one")), "{}", text(&out));
    assert!(!text(&out).contains("panicked"), "{}", text(&out));
}

/// `bench --robots 1000000` needed more than 4 GiB and died of a failed allocation where there
/// was less: it is refused before the arena is built, with both figures.
#[test]
fn an_arena_larger_than_the_memory_allowed_is_refused_with_the_figures() {
    let bin = env!("CARGO_BIN_EXE_crsim");
    let out = Command::new("prlimit")
        .args(["--as=2147483648", bin, "bench", "--robots", "1000000", "--steps", "1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("--robots 1000000: the arena needs about 5.3 GiB, and this process may take"),
        "{}",
        text(&out)
    );
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
    // The app's benchmark arena: checked before a window opens.
    let out = crsim(&["--bench", "2000000"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).contains("--bench 2000000: at most 1000000 robots"), "{}", text(&out));
    for args in
        [&["--bench", "0"][..], &["--bench-network"], &["scenes/pens.ron", "--bench", "5"], &["--frame-stats", "0"]]
    {
        let out = crsim(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
        assert!(text(&out).contains("error:"), "{args:?}: {}", text(&out));
    }
}

/// Runs the real app under Xvfb on `scene` (the built-in one when `None`), saving a screenshot.
fn run_app(scene: Option<&str>, png: &Path, frames: u32) -> Output {
    run_app_with(scene, png, frames, &[])
}

/// [`run_app`] with more arguments.
fn run_app_with(scene: Option<&str>, png: &Path, frames: u32, more: &[&str]) -> Output {
    let p = png.to_string_lossy().to_string();
    let frames = frames.to_string();
    let mut args = vec!["-a", "-s", "-screen 0 1280x800x24", env!("CARGO_BIN_EXE_crsim")];
    args.extend(scene);
    args.extend(more);
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
    // A recording rendered to frames without a person at the screen.
    let rec = dir.join("pens.mcap");
    let out = crsim(&["run", "scenes/pens.ron", "--steps", "120", "--record", &rec.to_string_lossy()]);
    assert!(out.status.success(), "{}", text(&out));
    let frames = dir.join("frames");
    let out = Command::new("xvfb-run")
        .args(["-a", "-s", "-screen 0 1280x800x24", env!("CARGO_BIN_EXE_crsim"), "replay", &rec.to_string_lossy()])
        .args(["--frames", &frames.to_string_lossy(), "--every", "40"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    // Steps 0, 40, 80 and the last one, 119.
    assert!(text(&out).contains("wrote 4 frames"), "{}", text(&out));
    let first = read_png(&frames.join("frame-000001.png"));
    let last = read_png(&frames.join("frame-000004.png"));
    assert!(first.0 >= 640 && first.2 != last.2, "the frames show different steps");
    assert!(!frames.join("frame-000005.png").exists());
    // Edit mode on the explorer's room with the table selected: the document's outlines (blue),
    // the selection (amber) and its handles (orange) are drawn over the world.
    let edit_png = dir.join("edit.png");
    let out = run_app_with(Some("scenes/explorer.ron"), &edit_png, 40, &["--edit", "--select", "table"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(app_stop(&out).0, 0, "edit mode pauses at step 0");
    let (_, _, pixels) = read_png(&edit_png);
    let count = |rgb: (u8, u8, u8)| {
        pixels
            .chunks(3)
            .filter(|p| p[0].abs_diff(rgb.0) < 24 && p[1].abs_diff(rgb.1) < 24 && p[2].abs_diff(rgb.2) < 24)
            .count()
    };
    assert!(count((0, 140, 217)) > 500, "outlines: {}", count((0, 140, 217)));
    assert!(count((255, 191, 0)) > 100, "selection: {}", count((255, 191, 0)));
    // The plots window over the pens scene in the dark theme: the pens-boxed curve (its own
    // blue, drawn nowhere else) rises once pens are boxed. (Seed 5 boxes its first pen within
    // 10 simulated seconds and three by 15, so the curve rises however slowly the frames come.)
    // Counted by the rows it is on: a line at zero and the legend's dot are on 8, and how
    // many pixels keep the exact colour depends on where the line falls between pixels.
    let plots_png = dir.join("plots.png");
    let out =
        run_app_with(Some("scenes/pens.ron"), &plots_png, 700, &["--plots", "--theme", "dark", "--set", "seed=5"]);
    assert!(out.status.success(), "{}", text(&out));
    let (width, _, pixels) = read_png(&plots_png);
    let near = |p: &[u8], rgb: [u8; 3], tol: u8| p.iter().zip(rgb).all(|(a, b)| a.abs_diff(b) <= tol);
    let rows: std::collections::BTreeSet<usize> = (pixels.chunks(3).enumerate())
        .filter(|(_, p)| near(p, [40, 90, 200], 6))
        .map(|(i, _)| i / width as usize)
        .collect();
    assert!(rows.len() > 40, "the pens-boxed curve: on {} rows", rows.len());
    let dark = pixels.chunks(3).filter(|p| near(p, [43, 46, 51], 6)).count();
    assert!(dark > pixels.len() / 3 / 10, "the dark floor: {dark} pixels");
    // Copies of the three screenshots where people look at them.
    if let Ok(keep) = std::env::var("CRSIM_SCREENSHOTS") {
        for name in ["shot.png", "edit.png", "plots.png"] {
            let _ = std::fs::copy(dir.join(name), Path::new(&keep).join(name));
        }
    }
    let out = run_app(Some("scenes/swarm.ron"), &dir.join("swarm.png"), 150);
    assert!(out.status.success(), "{}", text(&out));
    let (step, hash) = app_stop(&out);
    assert!(step > 100, "step {step}");
    let run = crsim(&["run", "scenes/swarm.ron", "--steps", &step.to_string()]);
    assert_eq!(hash, hash_line(&String::from_utf8_lossy(&run.stdout)), "app and headless differ on the swarm");
    // The benchmark arena in the app, its frames timed (what the README reports at 1,000 robots).
    let out = Command::new("xvfb-run")
        .args(["-a", "-s", "-screen 0 1280x800x24", env!("CARGO_BIN_EXE_crsim"), "--bench", "300"])
        .args(["--frame-stats", "30"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let report = text(&out);
    assert!(report.contains("frames: 30") && report.contains("frame_time_ms: mean "), "{report}");
    let steps: u64 = report
        .lines()
        .find_map(|l| l.strip_prefix("steps: ")?.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("{report}"));
    assert!(steps > 0, "{report}");
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

// ---- Experiments: overrides, stop conditions, sweeps, collection ----

fn json_file(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn set_overrides_change_one_run_and_the_metrics_record_them() {
    let dir = temp_dir("set");
    let json = dir.join("m.json");
    let plain = crsim(&["run", "scenes/pens.ron", "--steps", "300"]);
    let out = crsim(&[
        "run",
        "scenes/pens.ron",
        "--steps",
        "300",
        "--set",
        "robots[alpha].battery.initial=3",
        "--set",
        "comms.probability=0.5",
        "--out",
        json.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out));
    assert_ne!(hash_line(&text(&plain)), hash_line(&text(&out)), "the overrides change the run");
    let m = json_file(&json);
    assert_eq!(m["overrides"], serde_json::json!({"robots[alpha].battery.initial": 3, "comms.probability": 0.5}));
    let alpha = &m["robots"][0];
    assert_eq!(alpha["name"], "alpha");
    assert!(alpha["battery"].as_f64().unwrap() <= 3.0, "{alpha}");
    // Errors name the path and what it has, and the run does not start.
    let out = crsim(&["run", "scenes/pens.ron", "--steps", "10", "--set", "robots[zeta].battery.initial=3"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out).contains(
            "--set robots[zeta].battery.initial: `robots` has no item named \"zeta\" (its names: alpha, beta, gamma)"
        ),
        "{}",
        text(&out)
    );
    let out = crsim(&["run", "scenes/pens.ron", "--steps", "10", "--set", "arena.width=wide"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).contains("--set arena.width: `arena.width` takes a number, not \"wide\""), "{}", text(&out));
    let out = crsim(&["run", "scenes/pens.ron", "--steps", "10", "--set", "arena.width"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).contains("expected PATH=VALUE"), "{}", text(&out));
}

#[test]
fn until_ends_a_run_at_the_step_that_finishes_its_task() {
    let dir = temp_dir("until");
    let json = dir.join("m.json");
    let out = crsim(&[
        "run",
        "scenes/pens.ron",
        "--steps",
        "20000",
        "--until",
        "pens-boxed",
        "--out",
        json.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out));
    let m = json_file(&json);
    let boxed_at = m["collect"]["all_boxed_step"].as_u64().unwrap();
    assert_eq!(m["until"], serde_json::json!({"condition": "PensBoxed", "reached_step": boxed_at}));
    assert_eq!(m["steps"].as_u64(), Some(boxed_at + 1), "no step runs after the one that boxed the last pen");
    assert_eq!(m["pens"]["boxed"], 8);
    assert_eq!(m["interrupted"], false);
    // Not reached: all the steps run, and the report says so.
    let out = crsim(&["run", "scenes/pens.ron", "--steps", "200", "--until", "pens-boxed"]);
    assert!(text(&out).contains("until pens-boxed: not reached in 200 steps"), "{}", text(&out));
}

/// A sweep file in `dir` over the shipped pens scene.
fn write_sweep(dir: &Path, body: &str) -> PathBuf {
    let scene = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes");
    let path = dir.join("sweep.ron");
    std::fs::write(&path, body.replace("SCENES", scene.to_str().unwrap())).unwrap();
    path
}

#[test]
fn a_sweep_plans_for_parallel_and_slurm_runs_here_resumes_and_collects() {
    let dir = temp_dir("sweep");
    let sweep = write_sweep(
        &dir,
        r#"Sweep(scene: "SCENES/pens.ron", set: ["robots[gamma].battery.initial=15"],
            axes: [(path: "comms.probability", values: [1.0, 0.4])], seeds: List([1, 2]), steps: 300,
            metrics: ["steps", "comms.delivery_ratio", "robots[alpha].collisions", "collect.no_such_metric"])"#,
    );
    let plan = dir.join("plan");
    let out = crsim(&["sweep", sweep.to_str().unwrap(), "--plan", plan.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("planned 4 runs"), "{}", text(&out));
    let manifest = std::fs::read_to_string(plan.join("manifest.jsonl")).unwrap();
    let ids: Vec<String> = manifest
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["id"].as_str().unwrap().into())
        .collect();
    assert_eq!(ids, ["c00-s1", "c00-s2", "c01-s1", "c01-s2"]);
    let commands = std::fs::read_to_string(plan.join("commands.txt")).unwrap();
    let lines: Vec<&str> = commands.lines().collect();
    assert_eq!(lines.len(), 4);
    assert!(lines[2].contains(" run ") && lines[2].contains("--seed 1"), "{}", lines[2]);
    assert!(lines[2].contains("--set 'robots[gamma].battery.initial=15' --set comms.probability=0.4"), "{}", lines[2]);
    assert!(lines[2].ends_with("/runs/c01-s1.json"), "{}", lines[2]);
    assert!(lines[0].starts_with(&format!("{} run ", env!("CARGO_BIN_EXE_crsim"))), "crsim as started: {}", lines[0]);
    assert!(plan.join("logs").is_dir(), "SLURM opens a task's output file in logs/ before the task starts");
    let slurm = std::fs::read_to_string(plan.join("slurm.sh")).unwrap();
    assert!(slurm.contains(&format!("#SBATCH --output={}/logs/%A_%a.out", plan.canonicalize().unwrap().display())));
    // --bin names the crsim as the cluster's nodes see it.
    let other = dir.join("plan-bin");
    let out = crsim(&["sweep", sweep.to_str().unwrap(), "--plan", other.to_str().unwrap(), "--bin", "crsim"]);
    assert!(out.status.success(), "{}", text(&out));
    let first = std::fs::read_to_string(other.join("commands.txt")).unwrap();
    assert!(first.starts_with("crsim run "), "{first}");
    // The SLURM script runs line $SLURM_ARRAY_TASK_ID of the same file.
    let out = Command::new("bash").arg(plan.join("slurm.sh")).env("SLURM_ARRAY_TASK_ID", "2").output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let slurm_result = json_file(&plan.join("runs/c00-s2.json"));
    assert_eq!(slurm_result["seed"], 2);
    // A line run by hand, as GNU parallel runs it.
    let out = Command::new("sh").arg("-c").arg(lines[0]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    // Here: the two finished runs are skipped.
    let out = crsim(&["sweep", sweep.to_str().unwrap(), "--dir", plan.to_str().unwrap(), "--jobs", "2"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("4 runs: 2 done now, 2 done before, 0 failed"), "{}", text(&out));
    assert_eq!(json_file(&plan.join("runs/c00-s2.json")), slurm_result, "a finished run is not redone");
    // The same seed and parameters give the same run wherever it ran.
    let again = crsim(&["sweep", sweep.to_str().unwrap(), "--dir", plan.to_str().unwrap()]);
    assert!(text(&again).contains("4 runs: 0 done now, 4 done before"), "{}", text(&again));
    // A corrupt result is named by collect, and redone by the next sweep.
    std::fs::write(plan.join("runs/c01-s2.json"), "{\"steps\": 3").unwrap();
    let out = crsim(&["collect", plan.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(3), "a run without a result is not success: {}", text(&out));
    assert!(text(&out).contains("4 runs: 1 corrupt, 3 ok"), "{}", text(&out));
    assert!(text(&out).contains("runs/c01-s2.json: not a run's metrics"), "{}", text(&out));
    assert!(text(&out).contains("1 of 4 runs have no result to count"), "{}", text(&out));
    assert!(plan.join("results.csv").exists(), "the tables are written all the same");
    let out = crsim(&["collect", plan.to_str().unwrap(), "--partial"]);
    assert!(out.status.success(), "{}", text(&out));
    let out = crsim(&["sweep", sweep.to_str().unwrap(), "--dir", plan.to_str().unwrap()]);
    assert!(text(&out).contains("4 runs: 1 done now, 3 done before"), "{}", text(&out));
    let out = crsim(&["collect", plan.to_str().unwrap()]);
    assert!(text(&out).contains("4 runs: 4 ok"), "{}", text(&out));
    let results = std::fs::read_to_string(plan.join("results.csv")).unwrap();
    let rows: Vec<&str> = results.lines().collect();
    assert_eq!(
        rows[0],
        "id,condition,comms.probability,seed,status,steps,comms.delivery_ratio,robots[alpha].collisions,collect.no_such_metric"
    );
    assert_eq!(rows.len(), 5);
    assert!(rows[3].starts_with("c01-s1,1,0.4,1,ok,300,"), "{}", rows[3]);
    assert!(rows[3].ends_with(','), "a metric the run does not have is empty: {}", rows[3]);
    let summary = std::fs::read_to_string(plan.join("summary.csv")).unwrap();
    assert!(summary.contains("\n0,1.0,steps,2,0,300,0,300,300,300,300\n"), "{summary}");
    assert!(summary.contains("\n1,0.4,collect.no_such_metric,0,2,,,,,,\n"), "{summary}");
}

#[test]
fn a_failed_run_is_recorded_and_the_others_go_on() {
    let dir = temp_dir("sweep-fail");
    // Program robots that never come: each run gives up after its wait (exit code 2).
    let sweep = write_sweep(
        &dir,
        r#"Sweep(scene: "SCENES/programs.ron", set: ["programs.wait_for_robots=0.05", "programs.port=0"],
            seeds: Count(2), steps: 50, metrics: ["steps"])"#,
    );
    let out = crsim(&["sweep", sweep.to_str().unwrap(), "--dir", dir.join("plan").to_str().unwrap(), "--jobs", "2"]);
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(1), "{shown}");
    assert!(shown.contains("2 runs: 0 done now, 0 done before, 2 failed"), "{shown}");
    let record = json_file(&dir.join("plan/runs/c00-s1.failed.json"));
    assert!(record["error"].as_str().unwrap().starts_with("exit code 2: "), "{record}");
    assert!(record["error"].as_str().unwrap().contains("no program registered alpha"), "{record}");
    let out = crsim(&["collect", dir.join("plan").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    assert!(text(&out).contains("2 runs: 2 failed"), "{}", text(&out));
    assert!(text(&out).contains("c00-s2 failed: exit code 2"), "{}", text(&out));
}

#[test]
fn bad_sweeps_are_refused_with_the_file_and_the_reason() {
    let dir = temp_dir("sweep-bad");
    let cases = [
        (r#"Sweep(scene: "SCENES/nope.ron", seeds: Count(1), steps: 5, metrics: ["steps"])"#, "nope.ron: cannot read"),
        (
            r#"Sweep(scene: "SCENES/pens.ron", axes: [(path: "comms.probabilty", values: [0.5])], seeds: Count(1), steps: 5, metrics: ["steps"])"#,
            "--set comms.probabilty: `comms` has no field `probabilty`",
        ),
        (
            r#"Sweep(scene: "SCENES/pens.ron", axes: [(path: "comms.probability", values: [])], seeds: Count(1), steps: 5, metrics: ["steps"])"#,
            "axes[0] (comms.probability): no values",
        ),
        (
            r#"Sweep(scene: "SCENES/pens.ron", seeds: List([3, 4, 3]), steps: 5, metrics: ["steps"])"#,
            "seeds: 3 is listed twice",
        ),
        (r#"Sweep(scene: "SCENES/pens.ron", seeds: Count(1), steps: 5, metrics: ["steps"], extra: 1)"#, "sweep.ron:1:"),
    ];
    for (body, expected) in cases {
        let sweep = write_sweep(&dir, body);
        let out = crsim(&["sweep", sweep.to_str().unwrap(), "--plan", dir.join("p").to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2), "{body}: {}", text(&out));
        assert!(text(&out).contains("sweep.ron") && text(&out).contains(expected), "{body}: {}", text(&out));
    }
}

#[test]
fn an_interrupted_sweep_keeps_finished_results_and_leaves_no_half_run() {
    use nix::sys::signal::{Signal, kill};
    use nix::unistd::Pid;
    let dir = temp_dir("sweep-stop");
    let sweep =
        write_sweep(&dir, r#"Sweep(scene: "SCENES/pens.ron", seeds: Count(3), steps: 30000, metrics: ["steps"])"#);
    let plan = dir.join("plan");
    let child = Command::new(env!("CARGO_BIN_EXE_crsim"))
        .args(["sweep", sweep.to_str().unwrap(), "--dir", plan.to_str().unwrap(), "--jobs", "1"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let first = plan.join("runs/c00-s1.json");
    let start = std::time::Instant::now();
    while !first.exists() && start.elapsed().as_secs() < 120 {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::thread::sleep(std::time::Duration::from_millis(100));
    kill(Pid::from_raw(child.id() as i32), Signal::SIGINT).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", text(&out));
    assert!(text(&out).contains("resume with the same command"), "{}", text(&out));
    let names: Vec<String> = std::fs::read_dir(plan.join("runs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into())
        .collect();
    assert!(names.contains(&"c00-s1.json".to_string()), "{names:?}");
    assert!(names.len() < 3, "the run that was going is not kept: {names:?}");
    for name in &names {
        assert!(name.ends_with(".json") && !name.starts_with('.'), "nothing half-written: {names:?}");
        assert_eq!(json_file(&plan.join("runs").join(name))["interrupted"], false);
    }
    let out = crsim(&["sweep", sweep.to_str().unwrap(), "--dir", plan.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains(&format!("3 runs: {} done now, {} done before", 3 - names.len(), names.len())),
        "{}",
        text(&out)
    );
}

#[test]
fn collect_computes_means_and_intervals_and_draws_the_plot() {
    let dir = temp_dir("collect");
    std::fs::create_dir_all(dir.join("runs")).unwrap();
    let info = serde_json::json!({"sweep": "s.ron", "scene": "/x/pens.ron", "axes": ["comms.probability"],
        "metrics": ["collect.all_boxed_s"], "runs": 11});
    std::fs::write(dir.join("sweep.json"), info.to_string()).unwrap();
    let mut manifest = String::new();
    let values = [(0, 1.0, vec![2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]), (1, 0.5, vec![10.0, 12.0, 14.0])];
    for (c, p, vs) in &values {
        for (i, v) in vs.iter().enumerate() {
            let id = format!("c{c:02}-s{}", i + 1);
            manifest += &format!(
                "{}\n",
                serde_json::json!({"id": id, "condition": c, "params": [["comms.probability", p]], "seed": i + 1})
            );
            let result =
                serde_json::json!({"hash": "0123456789abcdef", "interrupted": false, "collect": {"all_boxed_s": v}});
            std::fs::write(dir.join("runs").join(format!("{id}.json")), result.to_string()).unwrap();
        }
    }
    std::fs::write(dir.join("manifest.jsonl"), manifest).unwrap();
    let png = dir.join("p.png");
    let out = crsim(&[
        "collect",
        dir.to_str().unwrap(),
        "--plot",
        "collect.all_boxed_s",
        "--by",
        "comms.probability",
        "--out",
        png.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("comms.probability=1.0  5.000 ± 1.787 (n=8)"), "{}", text(&out));
    let summary = std::fs::read_to_string(dir.join("summary.csv")).unwrap();
    let rows: Vec<Vec<f64>> =
        summary.lines().skip(1).map(|l| l.split(',').filter_map(|f| f.parse::<f64>().ok()).collect()).collect();
    // condition, probability, n, missing, mean, sd, ci low, ci high, min, max
    let a = &rows[0];
    assert_eq!((a[2], a[3], a[4]), (8.0, 0.0, 5.0));
    assert!((a[5] - (32.0f64 / 7.0).sqrt()).abs() < 1e-9);
    assert!((a[6] - (5.0 - 1.78750)).abs() < 1e-4 && (a[7] - (5.0 + 1.78750)).abs() < 1e-4, "{a:?}");
    assert_eq!((a[8], a[9]), (2.0, 9.0));
    // 10, 12, 14: mean 12, sd 2, t(0.975, 2) = 4.302653, half width 4.968275.
    let b = &rows[1];
    assert_eq!((b[2], b[4], b[5]), (3.0, 12.0, 2.0));
    assert!((b[7] - b[4] - 4.968_275).abs() < 1e-4, "{b:?}");
    let (w, h, pixels) = read_png(&png);
    assert_eq!((w, h), (900, 560));
    let coloured = pixels.chunks(3).filter(|p| p[0] < 100 && p[2] > 150).count();
    assert!(coloured > 200, "the series is drawn in its colour: {coloured} pixels");
    // A metric or a parameter the sweep does not have.
    let out = crsim(&["collect", dir.to_str().unwrap(), "--plot", "steps", "--by", "comms.probability"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out).contains("--plot steps: not a metric of this sweep (its metrics: collect.all_boxed_s)"),
        "{}",
        text(&out)
    );
    let out = crsim(&["collect", dir.join("nothing").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).contains("nothing/sweep.json: cannot read"), "{}", text(&out));
}

// ---- recording, replay, verify, the viewer stream ----

use crsim::record::Recording;
use crsim::record::format::*;

fn record(scene: &str, steps: u64, file: &Path, extra: &[&str]) -> String {
    let out =
        crsim(&[&["run", scene, "--steps", &steps.to_string(), "--record", &file.to_string_lossy()], extra].concat());
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    assert!(all.contains(&format!("recording: {}", file.display())), "{all}");
    assert_eq!(parts_beside(file), Vec::<String>::new(), "the .part file is renamed away");
    hash_line(&all)
}

/// The temporary recordings (`*.part`) in a file's folder.
fn parts_beside(file: &Path) -> Vec<String> {
    let dir = file.parent().unwrap();
    let names = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned());
    names.filter(|n| n.ends_with(".part")).collect()
}

/// A device or a folder as the recording: refused before the run (run as root, a rename onto
/// `/dev/null` replaced the device node and the run said it had recorded).
#[test]
fn a_recording_onto_a_device_or_a_folder_is_refused() {
    for target in ["/dev/null", "/dev/full", "tests"] {
        let out = crsim(&["run", "scenes/pens.ron", "--steps", "10", "--record", target]);
        assert_eq!(out.status.code(), Some(2), "{target}: {}", text(&out));
        assert!(text(&out).contains(&format!("cannot record to {target}: it is")), "{}", text(&out));
    }
    let t = std::fs::metadata("/dev/null").unwrap().file_type();
    assert!(std::os::unix::fs::FileTypeExt::is_char_device(&t));
}

/// Two runs recording to one path: each writes a temporary file of its own, and the path ends as
/// one of their complete recordings (both once wrote the same `F.part`, which ended corrupt).
#[test]
fn two_runs_recording_to_one_path_leave_a_whole_recording() {
    let dir = temp_dir("record-twice");
    let file = dir.join("run.mcap");
    let start = |seed: &str| {
        Command::new(env!("CARGO_BIN_EXE_crsim"))
            .args(["run", "scenes/collectors.ron", "--steps", "3000", "--seed", seed, "--record"])
            .arg(&file)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (start("1"), start("2"));
    let hashes: Vec<String> = [a, b]
        .into_iter()
        .map(|c| {
            let out = c.wait_with_output().unwrap();
            assert!(out.status.success(), "{}", text(&out));
            hash_line(&text(&out))
        })
        .collect();
    assert_eq!(parts_beside(&file), Vec::<String>::new());
    let r = Recording::open(&file).unwrap();
    let end = r.end.as_ref().expect("a finished recording");
    assert_eq!(end.steps, 3000);
    assert!(hashes.contains(&end.hash), "{} is one of {hashes:?}", end.hash);
}

/// A range sensor given on the command line: its scans recorded in `/range` (as the robot read
/// them, every `period` steps), a replay's frame carrying the latest, `crsim bench --range`
/// counting its beams, and an impossible sensor refused with the field named.
#[test]
fn range_scans_are_recorded_read_back_and_benchmarked() {
    let dir = temp_dir("range");
    let file = dir.join("pens.mcap");
    let set = "robots[alpha].range_sensor=(rays: 8, fov: 270.0, range: 2.0, period: 2)";
    record("scenes/pens.ron", 40, &file, &["--set", set]);
    let mut r = Recording::open(&file).unwrap();
    let scans: Vec<RangeRecord> = r.read(Channel::Range, 0, 39).unwrap();
    // alpha is robot 0; with a period of 2 it scans every other step.
    assert_eq!(scans.len(), 20, "{scans:?}");
    assert!(scans.iter().all(|s| s.robot == [0] && s.distances[0].len() == 8));
    assert!(scans.iter().flat_map(|s| &s.distances[0]).all(|&d| (0..=2000).contains(&d)));
    assert!(scans.iter().flat_map(|s| &s.distances[0]).any(|&d| d < 2000), "a wall within 2 m");
    let frame = r.frame(39).unwrap();
    assert_eq!(frame.ranges.get(&0), Some(&scans.last().unwrap().distances[0]));
    let out = crsim(&["bench", "--robots", "50", "--steps", "10", "--range", "8"]);
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let beams: f64 = stdout.lines().find_map(|l| l.strip_prefix("range_beams_per_s: ")).unwrap().parse().unwrap();
    let steps: f64 = stdout.lines().find_map(|l| l.strip_prefix("robot_steps_per_s: ")).unwrap().parse().unwrap();
    assert!((beams / steps - 8.0).abs() < 0.01, "{stdout}");
    let out = crsim(&["run", "scenes/pens.ron", "--steps", "1", "--set", "robots[alpha].range_sensor=(rays: 0)"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("range_sensor rays must be 1 to 1024, got 0"), "{}", text(&out));
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn a_recording_holds_every_channel_and_reads_back() {
    let dir = temp_dir("record");
    let file = dir.join("pens.mcap");
    let hash = record("scenes/pens.ron", 600, &file, &[]);
    let mut r = Recording::open(&file).unwrap();
    assert_eq!(r.steps(), (0, 599));
    assert_eq!(r.meta.seed, 1);
    assert_eq!(r.meta.robots, ["alpha", "beta", "gamma"]);
    assert!(r.meta.scene_text.contains("SceneFile("), "the scene file's text");
    let end = r.end.clone().expect("a finished recording has its end");
    assert_eq!((end.steps, end.last_step, end.hash.as_str(), end.interrupted), (600, 599, hash.as_str(), false));
    let steps: Vec<StepRecord> = r.read(Channel::Step, 0, 599).unwrap();
    assert_eq!(steps.len(), 600);
    assert_eq!(steps.last().unwrap().hash, hash, "the hash after the last step is the run's");
    let robots: Vec<RobotsRecord> = r.read(Channel::Robots, 0, 599).unwrap();
    assert_eq!(robots.len(), 600);
    assert!(robots.iter().all(|x| x.x.len() == 3 && x.battery.len() == 3 && x.flags.len() == 3));
    // alpha starts at (1.0, 0.25) facing up and drives off.
    assert!((robots[0].x[0] - 1000).abs() < 20 && (robots[0].y[0] - 250).abs() < 20, "{:?}", robots[0]);
    assert!(robots[599].x[0] != robots[0].x[0] || robots[599].y[0] != robots[0].y[0]);
    let pens: Vec<PensRecord> = r.read(Channel::Pens, 0, 599).unwrap();
    assert_eq!(pens.len(), 600);
    assert_eq!(pens[0].x.len(), r.meta.pens.len());
    let events: Vec<EventsRecord> = r.read(Channel::Events, 0, 599).unwrap();
    let all: Vec<&Event> = events.iter().flat_map(|e| &e.events).collect();
    assert!(all.iter().any(|e| matches!(e, Event::SkillStarted { .. })), "skills start");
    assert!(all.iter().any(|e| matches!(e, Event::Gripped { .. })), "a pen is gripped in 12 s");
    let radio: Vec<RadioRecord> = r.read(Channel::Radio, 0, 599).unwrap();
    assert!(radio.iter().any(|x| !x.sent.is_empty()), "collectors claim pens over the radio");
    assert!(radio.iter().any(|x| !x.delivered.is_empty()));
    let nets: Vec<NetworkRecord> = r.read(Channel::Network, 0, 599).unwrap();
    assert!(nets.len() > 3 && nets.iter().all(|n| !n.degrees.is_empty()));
    let keys: Vec<KeyframeRecord> = r.read(Channel::Keyframe, 0, 599).unwrap();
    assert_eq!(keys.iter().map(|k| k.step).collect::<Vec<_>>(), [0, 250, 500]);
    assert_eq!(keys[0].networks.len(), 3);
    let inputs: Vec<InputsRecord> = r.read(Channel::Inputs, 0, 599).unwrap();
    assert_eq!(inputs.len(), 1, "only the parameters at the start: nothing came from outside");
    // The explorer's channel, in its room.
    let file = dir.join("explorer.mcap");
    record("scenes/explorer.ron", 1500, &file, &[]);
    let mut r = Recording::open(&file).unwrap();
    let ex: Vec<ExplorerRecord> = r.read(Channel::Explorer, 1, 1499).unwrap();
    assert!(ex.iter().any(|e| !e.changed.is_empty()), "the map fills in");
    let f = r.frame(1499).unwrap();
    let known = &f.explorers.values().next().unwrap();
    assert!(known.map.as_ref().unwrap().iter().any(|row| row.contains('.')), "free cells in the map");
}

#[test]
fn replay_shows_the_recorded_state_at_any_step() {
    let dir = temp_dir("replay");
    let file = dir.join("pens.mcap");
    record("scenes/pens.ron", 400, &file, &[]);
    let mut r = Recording::open(&file).unwrap();
    let want: RobotsRecord = r.read(Channel::Robots, 321, 321).unwrap().remove(0);
    let scene = crsim::record::recorded_scene(&r.meta).unwrap();
    let mut replay = crsim::record::replay::Replay::file(r);
    if let crsim::record::replay::ReplaySource::File(t) = &mut replay.source {
        t.seek(321);
    }
    let mut app = crsim::run::headless::headless_app(scene, crsim::scene::SceneSource::Generated);
    crsim::record::replay::plugin(&mut app);
    app.insert_resource(replay);
    app.update();
    app.update();
    assert_eq!(app.world().resource::<crsim::sim::SimTime>().step, 321);
    for (i, name) in ["alpha", "beta", "gamma"].iter().enumerate() {
        let e = common::named(&mut app, name);
        let (p, h) = common::pose_of(&app, e);
        assert!((p.x - want.x[i] as f32 / 1000.0).abs() < 1e-4 && (p.y - want.y[i] as f32 / 1000.0).abs() < 1e-4);
        assert!((h - want.heading[i] as f32 / 1000.0).abs() < 1e-3, "{name}");
    }
}

#[test]
fn verify_says_identical_or_where_a_changed_scene_parts() {
    let dir = temp_dir("verify");
    let file = dir.join("pens.mcap");
    record("scenes/pens.ron", 500, &file, &[]);
    let out = crsim(&["verify", &file.to_string_lossy()]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("identical: 500 steps"), "{}", text(&out));
    // beta's battery starts a little higher: the runs part where its charge first matters.
    let scene = std::fs::read_to_string("scenes/pens.ron").unwrap().replace("initial: 14.0", "initial: 4.0");
    let altered = dir.join("altered.ron");
    std::fs::write(&altered, scene).unwrap();
    let out = crsim(&["verify", &file.to_string_lossy(), "--scene", &altered.to_string_lossy()]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(t.contains("differs: first at step "), "{t}");
    assert!(t.contains("robot beta is the first to move differently"), "{t}");
}

#[test]
fn runs_driven_by_programs_verify_from_their_recorded_inputs() {
    let dir = temp_dir("verify-programs");
    let file = dir.join("programs.mcap");
    let mut child = Command::new(env!("CARGO_BIN_EXE_crsim"))
        .args(["run", "scenes/programs.ron", "--steps", "400", "--program-port", "0", "--programs", "beta"])
        .args(["--record", &file.to_string_lossy()])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(child.stdout.take().unwrap()));
    let addr: std::net::SocketAddr = loop {
        let l = lines.next().expect("the run says where programs connect").unwrap();
        if let Some(a) = l.strip_prefix("programs: listening on ") {
            break a.trim().parse().unwrap();
        }
    };
    let served = std::thread::spawn(move || common::circles(addr, 400));
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    assert!(child.wait().unwrap().success(), "{rest:?}");
    assert!(served.join().unwrap() >= 400);
    let mut r = Recording::open(&file).unwrap();
    let inputs: Vec<InputsRecord> = r.read(Channel::Inputs, 0, 399).unwrap();
    assert!(
        inputs.iter().filter(|i| !i.commands.is_empty()).count() >= 4,
        "the program's drive commands (they change every 100 steps)"
    );
    assert!(inputs.iter().any(|i| !i.sends.is_empty()), "its radio claims");
    assert!(inputs[0].params.is_some());
    let out = crsim(&["verify", &file.to_string_lossy()]);
    assert!(text(&out).contains("identical: 400 steps"), "{}", text(&out));
}

#[test]
fn cut_short_foreign_and_old_recordings_give_clear_errors() {
    let dir = temp_dir("bad-recordings");
    let file = dir.join("swarm.mcap");
    record("scenes/swarm.ron", 3000, &file, &[]);
    let full = std::fs::read(&file).unwrap();
    // A run killed mid-way: the file stops in the middle.
    let cut = dir.join("cut.mcap");
    std::fs::write(&cut, &full[..full.len() * 2 / 3]).unwrap();
    let r = Recording::open(&cut).unwrap();
    let (first, last) = r.steps();
    assert!(first == 0 && last > 100 && last < 2999, "{last}");
    assert!(r.end.is_none());
    let note = r.describe_end().unwrap();
    assert!(note.contains("incomplete") && note.contains(&format!("up to step {last}")), "{note}");
    let out = crsim(&["verify", &cut.to_string_lossy()]);
    assert!(text(&out).contains(&format!("identical: {} steps", last + 1)), "{}", text(&out));
    // Not MCAP at all.
    let out = crsim(&["verify", "scenes/pens.ron"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).contains("scenes/pens.ron is not a crsim recording: it is not an MCAP file"), "{}", text(&out));
    let out = crsim(&["verify", &dir.join("missing.mcap").to_string_lossy()]);
    assert!(text(&out).contains("cannot open recording"), "{}", text(&out));
    // Only the magic bytes.
    let stub = dir.join("stub.mcap");
    std::fs::write(&stub, &full[..8]).unwrap();
    let e = Recording::open(&stub).err().unwrap();
    assert!(e.contains("stub.mcap"), "{e}");
    // An MCAP file of another program, and a crsim recording of another format version.
    let write = |path: &Path, profile: &str, meta: Option<std::collections::BTreeMap<String, String>>| {
        let mut w = mcap::WriteOptions::new()
            .profile(profile)
            .create(std::io::BufWriter::new(std::fs::File::create(path).unwrap()))
            .unwrap();
        if let Some(m) = meta {
            w.write_metadata(&mcap::records::Metadata { name: META_RUN.into(), metadata: m }).unwrap();
        }
        let s = w.add_schema("x", "jsonschema", b"{}").unwrap();
        let c = w.add_channel(s, "/robots", "json", &Default::default()).unwrap();
        let h = mcap::records::MessageHeader { channel_id: c, sequence: 0, log_time: 0, publish_time: 0 };
        w.write_to_known_channel(&h, b"{}").unwrap();
        w.finish().unwrap();
    };
    let ros = dir.join("ros.mcap");
    write(&ros, "ros2", None);
    let e = Recording::open(&ros).err().unwrap();
    assert!(e.contains("not a crsim recording (its profile is \"ros2\""), "{e}");
    let r = Recording::open(&file).unwrap();
    let mut old = r.meta.to_map();
    old.insert("format_version".into(), "0".into());
    let oldf = dir.join("old.mcap");
    write(&oldf, PROFILE, Some(old));
    let e = Recording::open(&oldf).err().unwrap();
    assert!(e.contains("old.mcap") && e.contains("format version 0"), "{e}");
    let mut blank = r.meta.to_map();
    blank.insert("scene".into(), String::new());
    let blankf = dir.join("blank.mcap");
    write(&blankf, PROFILE, Some(blank));
    let e = Recording::open(&blankf).err().unwrap();
    assert!(e.contains("scene text is empty"), "{e}");
}

#[test]
fn a_viewer_attaches_late_pauses_the_run_and_detaches_without_stopping_it() {
    use crsim::record::viewer::{ViewerClient, ViewerCommand};
    let mut child = Command::new(env!("CARGO_BIN_EXE_crsim"))
        .args(["run", "scenes/swarm.ron", "--steps", "10000000", "--serve-viewer", "0"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(child.stdout.take().unwrap()));
    let addr = loop {
        let l = lines.next().expect("the run says where viewers connect").unwrap();
        if let Some(a) = l.strip_prefix("viewers: listening on ") {
            break a.split_whitespace().next().unwrap().to_string();
        }
    };
    std::thread::sleep(std::time::Duration::from_millis(500));
    let poll_until = |c: &mut ViewerClient, ok: &dyn Fn(&ViewerClient) -> bool| {
        let start = std::time::Instant::now();
        while !ok(c) {
            assert!(start.elapsed().as_secs() < 20, "the viewer got nothing");
            c.poll();
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    };
    let mut v = ViewerClient::connect(&addr).unwrap();
    assert_eq!(v.meta.robots.len(), 64);
    poll_until(&mut v, &|c| c.frame.robots.x.len() == 64);
    let joined_at = v.frame.step.step;
    assert!(joined_at > 0, "a late viewer starts from the present");
    v.send(&ViewerCommand::Pause { paused: true });
    std::thread::sleep(std::time::Duration::from_millis(300));
    v.poll();
    let paused_at = v.frame.step.step;
    std::thread::sleep(std::time::Duration::from_millis(300));
    v.poll();
    assert_eq!(v.frame.step.step, paused_at, "paused");
    v.send(&ViewerCommand::Pause { paused: false });
    poll_until(&mut v, &|c| c.frame.step.step > paused_at + 10);
    drop(v);
    std::thread::sleep(std::time::Duration::from_millis(300));
    let mut again = ViewerClient::connect(&addr).unwrap();
    poll_until(&mut again, &|c| c.frame.step.step > paused_at + 100);
    drop(again);
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGINT).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
}

#[test]
fn crsims_explorer_drives_a_crsim_bot_process_over_udp_and_both_count_every_packet() {
    let dir = temp_dir("outside-bot");
    let bot_out = dir.join("bot.json");
    let mut bot = Command::new(env!("CARGO_BIN_EXE_crsim"))
        .args(["bot", "scenes/explorer-outside.ron", "--robot", "explorer", "--port", "0"])
        .args(["--out", &bot_out.to_string_lossy()])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(bot.stdout.take().unwrap()));
    let first = lines.next().expect("the bot says where it listens").unwrap();
    let address = first.rsplit(' ').next().unwrap().to_string();
    assert!(
        first.starts_with("bot explorer (id 0) of scenes/explorer-outside.ron: listening on UDP 127.0.0.1:"),
        "{first}"
    );
    let scene = std::fs::read_to_string("scenes/explorer-outside.ron").unwrap().replace("127.0.0.1:7001", &address);
    let scene_file = dir.join("explorer-outside.ron");
    std::fs::write(&scene_file, scene).unwrap();
    let run_out = dir.join("run.json");
    let out = crsim(&["run", &scene_file.to_string_lossy(), "--steps", "2000", "--out", &run_out.to_string_lossy()]);
    assert!(out.status.success(), "{}", text(&out));
    let kill = Command::new("kill").args(["-INT", &bot.id().to_string()]).status().unwrap();
    assert!(kill.success());
    assert!(bot.wait().unwrap().success());
    let summary: Vec<String> = lines.map_while(Result::ok).collect();
    assert!(summary.iter().any(|l| l.contains("0 malformed, 0 refused")), "{summary:?}");
    let run: serde_json::Value = serde_json::from_slice(&std::fs::read(&run_out).unwrap()).unwrap();
    let bot: serde_json::Value = serde_json::from_slice(&std::fs::read(&bot_out).unwrap()).unwrap();
    let manager = &run["botlink"]["bots"]["explorer"];
    assert_eq!(manager["state"], "online");
    let sent = ["unicast", "update_all_unicast", "multicast"]
        .iter()
        .map(|m| manager["sent"][m]["packets"].as_u64().unwrap())
        .sum::<u64>();
    assert_eq!(bot["received"]["packets"].as_u64().unwrap(), sent, "{manager} {bot}");
    assert_eq!(bot["statuses"]["packets"], manager["statuses"]);
    assert_eq!(bot["statuses"]["bytes"], manager["received"]["bytes"]);
    // In 40 s the explorer inside the process drives 8.0 m and maps 4.9% of the room; the bot
    // joins a few steps late.
    assert!(run["robots"][0]["distance_m"].as_f64().unwrap() > 5.0, "the explorer drove the bot: {}", run["robots"][0]);
    assert!(run["explore"]["coverage"].as_f64().unwrap() > 0.03, "{}", run["explore"]["coverage"]);
}

#[test]
fn a_bot_emulator_for_a_robot_the_scene_lacks_or_a_taken_port_is_a_clear_error() {
    let out = crsim(&["bot", "scenes/explorer-outside.ron", "--robot", "nobody", "--port", "0"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).contains("has no robot \"nobody\" (robots: explorer)"), "{}", text(&out));
    let taken = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let out = crsim(&["bot", "scenes/explorer-outside.ron", "--robot", "explorer", "--port", &port]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).contains(&format!("bot \"explorer\": cannot bind UDP 127.0.0.1:{port}")), "{}", text(&out));
}

#[test]
fn a_reader_that_goes_early_loses_nothing_and_a_metrics_file_that_cannot_be_written_is_an_error() {
    let dir = temp_dir("pipes");
    // `crsim run ... | true`: the reader is gone before anything is printed.
    let out = dir.join("m.json");
    let mut child = Command::new(env!("CARGO_BIN_EXE_crsim"))
        .args(["run", "scenes/swarm.ron", "--steps", "2000", "--out", &out.to_string_lossy()])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let done = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&done.stderr);
    assert!(done.status.success(), "{err}");
    assert!(!err.contains("panicked") && !err.contains("Broken pipe"), "{err}");
    assert_eq!(json_file(&out)["steps"], 2000, "the run finished and wrote its metrics");
    // `crsim collect DIR | head -1`: the tables are written before anything is printed.
    let sweep = write_sweep(&dir, r#"Sweep(scene: "SCENES/pens.ron", seeds: Count(2), steps: 50, metrics: ["steps"])"#);
    let plan = dir.join("plan");
    assert!(crsim(&["sweep", sweep.to_str().unwrap(), "--dir", plan.to_str().unwrap()]).status.success());
    let mut child = Command::new(env!("CARGO_BIN_EXE_crsim"))
        .args(["collect", plan.to_str().unwrap()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(child.stdout.take().unwrap()), &mut first).unwrap();
    assert_eq!(first.trim(), "2 runs: 2 ok");
    let done = child.wait_with_output().unwrap();
    assert!(done.status.success(), "{}", String::from_utf8_lossy(&done.stderr));
    assert!(plan.join("results.csv").exists() && plan.join("summary.csv").exists());
    // A metrics file that cannot be written is an error, and a device is not replaced.
    let full = crsim(&["run", "scenes/pens.ron", "--steps", "5", "--out", "/dev/full"]);
    assert_eq!(full.status.code(), Some(1), "{}", text(&full));
    assert!(text(&full).contains("/dev/full: cannot write:"), "{}", text(&full));
    let null = crsim(&["run", "scenes/pens.ron", "--steps", "5", "--out", "/dev/null"]);
    assert!(null.status.success(), "{}", text(&null));
    let t = std::fs::metadata("/dev/null").unwrap().file_type();
    assert!(std::os::unix::fs::FileTypeExt::is_char_device(&t));
}
