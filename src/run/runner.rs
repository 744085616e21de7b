//! `crsim run`: a scene run headless from the command line, in named steps — the scene as the
//! command line asks for it, the app with its recording and servers, the servers announced, the
//! wait for robot programs and UDP controllers (seed 003's waitForRobots), the steps (as fast as
//! they go, paced by viewers, or in real time), and the end (report, recording, metrics file).
//! `main.rs` only parses the command line and calls [`run`].

use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use bevy::prelude::*;
use indicatif::{ProgressBar, ProgressStyle};

use super::files::write_atomic;
use super::headless::{headless_app_with, run_steps};
use super::report::{RunReport, build_report};
use super::signals;
use super::until::{RunUntil, Until};
use crate::botlink::transport::{BotSocket, CentralSocket};
use crate::botlink::udp::{UdpEndpoint, UdpLockstep, UpdateAllSocket};
use crate::control::programs::{ProgramPortOverride, ProgramServer};
use crate::control::remote::Remote;
use crate::record::Recorder;
use crate::record::format::RunMeta;
use crate::record::viewer::{ViewerControl, ViewerServer};
use crate::record::writer::FileSink;
use crate::robot::registry::{SensorFaults, SensorRegistry};
use crate::say;
use crate::scene::schema::{ControllerSpec, Dialect};
use crate::scene::{SceneFile, SceneOverrides, SceneSource, load_scene_file_with};
use crate::sim::{SimTime, StepGate};

/// Steps between checks for a stop request (and progress updates) in a headless run.
pub const RUN_CHUNK: u64 = 100;
/// The exit code of a run stopped by a signal (as a shell reports Ctrl-C).
pub const INTERRUPTED: u8 = 130;
/// The exit code of bad input: a scene, an argument, a port that cannot be opened.
pub const BAD_INPUT: u8 = 2;

/// What `crsim run` was asked for.
pub struct RunRequest<'a> {
    pub scene: &'a Path,
    pub steps: u64,
    pub seed: Option<u64>,
    pub out: Option<&'a Path>,
    pub no_radio: bool,
    pub dump_network: Option<&'a str>,
    pub realtime: bool,
    pub until: Option<Until>,
    /// Remote robots speak this dialect whatever their scene says.
    pub protocol: Option<Dialect>,
    pub program_port: Option<u16>,
    pub overrides: SceneOverrides,
    pub record: Option<&'a Path>,
    /// A ROS 2 bag of the run: the ROS 2 topics of the scene's robots, written by the floor
    /// that knows them (the ROS 2 bridge, added through `setup`).
    pub record_ros2: Option<&'a Path>,
    pub serve_viewer: Option<u16>,
    pub threads: Option<u16>,
    pub keep_serving: bool,
    /// More ways in, from the floors above `run/` (the ROS 2 bridge): called on the app before
    /// its scene loads.
    pub setup: Option<&'a dyn Fn(&mut App)>,
}

/// Why a way in added through [`RunRequest::setup`] cannot serve the loaded scene: a run stops
/// before step 0 on any, as on a port it cannot open.
#[derive(Resource, Debug, Default, Clone)]
pub struct OpeningErrors(pub Vec<String>);

/// Runs the request to its end; the process's exit code. Errors are printed to stderr, naming
/// what is wrong.
pub fn run(request: RunRequest) -> ExitCode {
    if let Err(e) = signals::install() {
        eprintln!("{e}");
    }
    let (scene, text) = match scene_as_asked(&request) {
        Ok(s) => s,
        Err(e) => return bad_input(&e),
    };
    let threads = request.threads.map_or_else(|| crate::sim::default_threads(scene.robots.len()), usize::from);
    if let Err(e) = crate::sim::set_threads(threads) {
        return bad_input(&e);
    }
    let mut app = match app_with_servers(scene, &text, &request) {
        Ok(app) => app,
        Err(e) => return bad_input(&e),
    };
    announce_servers(&mut app, request.realtime);
    if let Err(e) = wait_for_robots(&mut app) {
        return bad_input(&e);
    }
    let stepped = match step_until_done(&mut app, &request) {
        Ok(s) => s,
        Err(e) => return bad_input(&e),
    };
    finish(&mut app, &request, stepped)
}

fn bad_input(e: &str) -> ExitCode {
    eprintln!("{e}");
    ExitCode::from(BAD_INPUT)
}

/// The scene file with the command line's overrides, seed, radio switch and dialect, and the
/// file's text as it was read (the file is read once: a recording holds the text that ran, even
/// when the file is saved again while the run starts).
pub fn scene_as_asked(r: &RunRequest) -> Result<(SceneFile, String), String> {
    let (mut scene, text) = load_scene_file_with(r.scene, &r.overrides).map_err(|e| e.to_string())?;
    if let Some(robot) = r.dump_network {
        let networked = |s: &&crate::scene::schema::RobotSpec| matches!(s.controller, ControllerSpec::Network { .. });
        if !scene.robots.iter().filter(networked).any(|s| s.name == robot) {
            let names: Vec<&str> = scene.robots.iter().filter(networked).map(|s| s.name.as_str()).collect();
            return Err(format!(
                "--dump-network: {} has no robot {robot:?} of controller kind Network (those it has: {})",
                r.scene.display(),
                if names.is_empty() { "none".to_string() } else { names.join(", ") }
            ));
        }
    }
    if let Some(seed) = r.seed {
        scene.seed = seed;
    }
    if r.no_radio {
        scene.comms.link = false;
    }
    if let Some(dialect) = r.protocol {
        for s in &mut scene.robots {
            if let ControllerSpec::Remote { protocol, .. } = &mut s.controller {
                *protocol = dialect;
            }
        }
    }
    Ok((scene, text))
}

/// The headless app of `scene`, recording and serving viewers if asked; an error when a port the
/// scene needs cannot be opened (the run would go on without the robots it serves).
fn app_with_servers(scene: SceneFile, text: &str, r: &RunRequest) -> Result<App, String> {
    let meta = (r.record.is_some() || r.serve_viewer.is_some()).then(|| {
        let dir = r.scene.parent().unwrap_or(Path::new("."));
        crate::record::run_meta(&scene, text, &r.scene.display().to_string(), dir, &r.overrides, r.no_radio, 0)
    });
    let address = scene.botlink.address.clone();
    let (overrides, until, realtime, port) = (r.overrides.clone(), r.until, r.realtime, r.program_port);
    let mut app = headless_app_with(scene, SceneSource::File(r.scene.to_path_buf()), |app| {
        if let Some(setup) = r.setup {
            setup(app);
        }
        app.init_resource::<OpeningErrors>()
            .insert_resource(ProgramPortOverride(port))
            // As fast as it goes, robots driven over UDP wait for their controllers each step.
            .insert_resource(UdpLockstep(!realtime))
            .insert_resource(overrides)
            .insert_resource(RunUntil { until, reached_at: None });
    });
    if let Some(meta) = &meta {
        start_recording(&mut app, meta, r.record, r.serve_viewer.map(|p| (address.as_str(), p)))?;
    }
    if let Some(bag) = r.record_ros2 {
        let sink = FileSink::foreign(bag, "ros2")?;
        app.world_mut().resource_mut::<Recorder>().add_sink(Box::new(sink));
    }
    let problems = port_problems(&mut app);
    if problems.is_empty() { Ok(app) } else { Err(problems.join("\n")) }
}

/// Starts the recording to `file` and the viewer server on `viewer` (address, port).
pub fn start_recording(
    app: &mut App,
    meta: &RunMeta,
    file: Option<&Path>,
    viewer: Option<(&str, u16)>,
) -> Result<(), String> {
    if let Some(file) = file {
        let sink = FileSink::create(file, meta)?;
        app.world_mut().resource_mut::<Recorder>().add_sink(Box::new(sink));
    }
    if let Some((address, port)) = viewer {
        let server = ViewerServer::open(address, port, meta)?;
        say!("viewers: listening on {}  (crsim view {})", server.local, server.local);
        app.world_mut().resource_mut::<Recorder>().add_sink(server.sink());
        app.insert_resource(server);
    }
    Ok(())
}

/// Every port of the loaded scene that could not be opened, naming the robot and the port.
pub fn port_problems(app: &mut App) -> Vec<String> {
    let world = app.world_mut();
    let mut problems: Vec<String> = world.query::<&UdpEndpoint>().iter(world).filter_map(|e| e.error.clone()).collect();
    if let Some(e) = &world.resource::<UpdateAllSocket>().error {
        problems.push(format!("the update-all port: {e}"));
    }
    problems.extend(world.query::<&Remote>().iter(world).filter_map(|r| r.error.clone()));
    problems.extend(world.query::<&BotSocket>().iter(world).filter_map(|s| s.error.clone()));
    problems.extend(world.resource::<CentralSocket>().error.clone());
    problems.extend(world.resource::<ProgramServer>().error.clone());
    problems.extend(world.get_resource::<OpeningErrors>().map_or_else(Vec::new, |e| e.0.clone()));
    // A plugin's sensor refused (its name taken): robots would run without what the scene's
    // author asked for.
    let refused = world.get_resource::<SensorRegistry>().map_or(&[][..], |r| r.refused());
    problems.extend(refused.iter().map(|e| format!("the sensor registry refused a sensor: {e}")));
    problems
}

/// Says where outside clients connect (the first line a launcher reads is the programs' address
/// when there is one), and what stepping headless means for VirtualRobot clients.
fn announce_servers(app: &mut App, realtime: bool) {
    let mut remotes = app.world_mut().query::<(&Name, &Remote)>();
    let mut any_remote = false;
    for (name, remote) in remotes.iter(app.world()) {
        if let (Some(http), Some(ws)) = (remote.http, remote.ws) {
            say!("remote robot {name}: http://{http}/api/move  ws://{ws}");
            any_remote = true;
        }
    }
    if any_remote && !realtime {
        eprintln!(
            "note: without --realtime this run steps as fast as it can, thousands of steps between two requests \
             of a VirtualRobot client (a move of 300 ms is over before the client has read its reply); add \
             --realtime to keep simulated time with the wall clock, as WEnv does"
        );
    }
    if let Some(addr) = app.world().resource::<ProgramServer>().local {
        say!("programs: listening on {addr}");
    }
}

/// waitForRobots: while program robots are still to register (or UDP controllers to speak),
/// serve them; after the scene's `wait_for_robots` give up, naming those that never came.
pub fn wait_for_robots(app: &mut App) -> Result<(), String> {
    if !app.world().resource::<StepGate>().held() {
        return Ok(());
    }
    let wait = app.world().resource::<ProgramServer>().settings.wait_for_robots;
    let start = Instant::now();
    let gate = app.world().resource::<StepGate>();
    let who = if gate.waiting_for.is_empty() { "udp" } else { "programs" };
    say!("{who}: waiting for {}", gate.describe());
    while app.world().resource::<StepGate>().held() {
        if signals::requested() {
            return Ok(());
        }
        if start.elapsed().as_secs_f32() > wait {
            return Err(gave_up(app.world().resource::<StepGate>(), wait));
        }
        app.update();
        std::thread::sleep(Duration::from_millis(1));
    }
    Ok(())
}

/// What a run that gave up waiting says.
fn gave_up(gate: &StepGate, wait: f32) -> String {
    let mut lines = Vec::new();
    if !gate.waiting_for.is_empty() {
        lines.push(format!(
            "programs: no program registered {} within {wait} s; giving up",
            gate.waiting_for.join(", ")
        ));
    }
    if !gate.outside.is_empty() {
        lines.push(format!(
            "udp: no controller sent a packet to {} within {wait} s (programs.wait_for_robots); giving up",
            gate.outside.join(", ")
        ));
    }
    lines.join("\n")
}

/// How the steps ended.
pub struct Stepped {
    /// Steps run.
    pub done: u64,
    /// Wall seconds since stepping began.
    pub started: Instant,
    /// The task's end was reached (`--until`) or the run's programs all left.
    pub finished: bool,
    /// The run's programs all left.
    pub programs_gone: bool,
}

/// Whether the run is over before its steps are: `--until` reached, or (without
/// `--keep-serving`) every program that drove robots here has gone.
fn over(app: &App, keep_serving: bool) -> (bool, bool) {
    let gone = !keep_serving && app.world().resource::<ProgramServer>().abandoned();
    (app.world().resource::<RunUntil>().reached_at.is_some() || gone, gone)
}

/// The sensors that failed in this run, each naming the robot (the run stops after the step of
/// the first).
fn sensor_faults(app: &App) -> &[String] {
    app.world().get_resource::<SensorFaults>().map_or(&[], |f| &f.0)
}

/// Runs the steps: in real time with `--realtime`, else as fast as they go (or as viewers pace
/// them), in chunks of [`RUN_CHUNK`] between checks for a stop, an end or late robots.
fn step_until_done(app: &mut App, r: &RunRequest) -> Result<Stepped, String> {
    let bar = progress_bar(r.steps);
    let started = Instant::now();
    let mut done = 0;
    let mut paced = Pacing::default();
    while done < r.steps && !signals::requested() && !over(app, r.keep_serving).0 && sensor_faults(app).is_empty() {
        let n = if r.realtime {
            due_in_real_time(app, started, done, r.steps)
        } else {
            wait_for_robots(app)?;
            paced.due(app, done, r.steps)
        };
        if n == 0 {
            // Updates without steps keep the servers' replies flowing.
            app.update();
            std::thread::sleep(Duration::from_millis(2));
            continue;
        }
        run_steps(app, n);
        done += n;
        bar.set_position(done);
    }
    bar.finish_and_clear();
    let (finished, programs_gone) = over(app, r.keep_serving);
    Ok(Stepped { done, started, finished, programs_gone })
}

/// `--realtime`: the steps due by the wall clock since `started`.
fn due_in_real_time(app: &App, started: Instant, done: u64, steps: u64) -> u64 {
    let dt = app.world().resource::<SimTime>().dt_exact;
    ((started.elapsed().as_secs_f64() / dt) as u64).min(steps).saturating_sub(done)
}

/// Viewers may pause a headless run or set its speed; without them it runs as fast as it goes.
#[derive(Default)]
struct Pacing {
    /// Since when, from which step, at which speed factor the run is paced.
    since: Option<(Instant, u64, f64)>,
}

impl Pacing {
    /// The steps to run now.
    fn due(&mut self, app: &App, done: u64, steps: u64) -> u64 {
        let control = *app.world().resource::<ViewerControl>();
        let n = if control.paused {
            self.since = None;
            0
        } else if let Some(factor) = control.speed {
            let dt = app.world().resource::<SimTime>().dt_exact;
            if self.since.is_some_and(|(_, _, f)| f != factor) {
                self.since = None;
            }
            let (since, at, _) = *self.since.get_or_insert((Instant::now(), done, factor));
            (at + (since.elapsed().as_secs_f64() * factor / dt) as u64).saturating_sub(done)
        } else {
            self.since = None;
            RUN_CHUNK
        };
        n.min(RUN_CHUNK).min(steps - done)
    }
}

/// The end: the programs told, the summary printed, the recording closed, the network dumped
/// and the metrics written; the exit code.
fn finish(app: &mut App, r: &RunRequest, stepped: Stepped) -> ExitCode {
    if stepped.programs_gone {
        say!(
            "programs: the last program has gone; the run ends at step {} (--keep-serving keeps it running)",
            app.world().resource::<SimTime>().step
        );
    }
    let interrupted = stepped.done < r.steps && !stepped.finished;
    let faults = sensor_faults(app).to_vec();
    let reason = match faults.first() {
        Some(fault) => format!("the run stopped: {fault}"),
        None if interrupted => "the run was stopped".to_string(),
        None => "the run's steps are done".to_string(),
    };
    crate::control::programs::finish(app.world_mut(), &reason);
    let mut report = build_report(app.world_mut(), stepped.started.elapsed().as_secs_f64());
    report.interrupted = interrupted;
    say!("{}", report.summary());
    let recorder_errors = {
        let mut rec = app.world_mut().resource_mut::<Recorder>();
        rec.finish(interrupted);
        std::mem::take(&mut rec.errors)
    };
    if recorder_errors.is_empty() {
        if let Some(file) = r.record {
            say!("recording: {}", file.display());
        }
        if let Some(bag) = r.record_ros2 {
            say!("ROS 2 bag: {}", bag.display());
        }
    }
    for e in &recorder_errors {
        eprintln!("{e}");
    }
    if let Some(robot) = r.dump_network
        && let Some(dump) = crate::control::network::dump_network(app.world_mut(), robot)
    {
        say!("\n{dump}");
    }
    if let Some(out) = r.out
        && let Err(e) = write_metrics(&report, out)
    {
        eprintln!("{e}");
        return ExitCode::FAILURE;
    }
    if !faults.is_empty() {
        // What the run did up to the step it failed in is kept above; the failure is the last
        // word.
        for fault in &faults {
            eprintln!("the run stopped at step {}: {fault}", app.world().resource::<SimTime>().step);
        }
        ExitCode::FAILURE
    } else if interrupted {
        ExitCode::from(INTERRUPTED)
    } else if (r.record.is_some() || r.record_ros2.is_some()) && !recorder_errors.is_empty() {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// The run metrics as JSON in `out`, written atomically.
fn write_metrics(report: &RunReport, out: &Path) -> Result<(), String> {
    let json = serde_json::to_string_pretty(report).map_err(|e| format!("cannot encode the metrics: {e}"))?;
    write_atomic(out, (json + "\n").as_bytes())?;
    say!("metrics: {}", out.display());
    Ok(())
}

/// A progress bar of `len` steps, hidden when stderr is not a terminal.
pub fn progress_bar(len: u64) -> ProgressBar {
    let bar = ProgressBar::new(len);
    if let Ok(style) = ProgressStyle::with_template("{bar:40} {pos}/{len} steps  {per_sec}  eta {eta}") {
        bar.set_style(style);
    }
    bar
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn giving_up_names_the_programs_and_the_controllers_that_never_came() {
        let gate = StepGate { waiting_for: vec!["alpha".into(), "beta".into()], outside: vec!["udp".into()] };
        assert_eq!(
            gave_up(&gate, 0.5),
            "programs: no program registered alpha, beta within 0.5 s; giving up\n\
             udp: no controller sent a packet to udp within 0.5 s (programs.wait_for_robots); giving up"
        );
    }

    #[test]
    fn the_scene_as_asked_takes_the_seed_the_radio_and_the_dialect_and_checks_the_dump() {
        let dir = std::env::temp_dir().join(format!("crsim-runner-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("wenv.ron");
        std::fs::copy(concat!(env!("CARGO_MANIFEST_DIR"), "/scenes/wenv.ron"), &path).unwrap();
        let mut r = RunRequest {
            scene: &path,
            steps: 1,
            seed: Some(42),
            out: None,
            no_radio: true,
            dump_network: None,
            realtime: false,
            until: None,
            protocol: Some(Dialect::Vr2021),
            program_port: None,
            overrides: SceneOverrides::default(),
            record: None,
            record_ros2: None,
            serve_viewer: None,
            threads: None,
            keep_serving: false,
            setup: None,
        };
        let (scene, text) = scene_as_asked(&r).unwrap();
        assert_eq!(text, std::fs::read_to_string(r.scene).unwrap(), "the text the scene was read from");
        assert_eq!((scene.seed, scene.comms.link), (42, false));
        assert!(matches!(scene.robots[0].controller, ControllerSpec::Remote { protocol: Dialect::Vr2021, .. }));
        r.dump_network = Some("wenvbot");
        let e = scene_as_asked(&r).unwrap_err();
        assert!(e.contains("has no robot \"wenvbot\" of controller kind Network (those it has: none)"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
