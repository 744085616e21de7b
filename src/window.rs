//! Opening the app's window: what it shows first and what the command line says about robots
//! driven from outside. The window, drawing and panel come with the `app` feature; a crsim built
//! without it (`--no-default-features`, the headless core) says so instead of opening one.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use bevy::prelude::*;

#[cfg(feature = "app")]
use crate::scene::PendingScene;
use crate::scene::schema::Dialect;
use crate::scene::{SceneFile, SceneOverrides, SceneSource};

/// How the app's view starts (`crsim --edit`, `--plots`, `--theme dark`).
#[derive(Debug, Clone, Copy, Default)]
pub struct StartView {
    /// In the scene editor (with `select`, that item selected there).
    pub edit: bool,
    /// With the plots window open.
    pub plots: bool,
    /// In the dark theme.
    pub dark: bool,
}

/// What the app window shows first.
pub struct AppWindow {
    pub scene: SceneFile,
    pub source: SceneSource,
    /// Save a screenshot here after this many frames, then exit.
    pub screenshot: Option<(PathBuf, u32)>,
    /// Time this many frames, print the statistics and exit.
    pub frame_stats: Option<u32>,
    /// Select the robot (or, in edit mode, the item) of this name.
    pub select: Option<String>,
    pub start: StartView,
}

/// What the command line says about robots driven from outside, for the app and for `run`.
pub struct Outside {
    /// Remote robots speak this dialect whatever their scene says.
    pub protocol: Option<Dialect>,
    /// Serve robot programs on this port instead of the scene's.
    pub program_port: Option<u16>,
    pub overrides: SceneOverrides,
}

impl Outside {
    /// Nothing from outside (a replay, a viewer).
    pub fn none() -> Outside {
        Outside { protocol: None, program_port: None, overrides: SceneOverrides::default() }
    }
}

/// What `crsim [SCENE]` opens.
pub enum Opened {
    /// A scene file, or the built-in scene.
    Scene(Option<PathBuf>),
    /// The benchmark arena of `crsim --bench N`.
    Bench { robots: usize, options: crate::run::bench::BenchOptions },
}

/// What the app does besides showing the scene (`--screenshot`, `--frame-stats`, `--select`,
/// `--edit`, `--plots`, `--theme`).
#[derive(Default)]
pub struct View {
    pub screenshot: Option<(PathBuf, u32)>,
    pub frame_stats: Option<u32>,
    pub select: Option<String>,
    pub start: StartView,
}

/// `crsim [SCENE]`: the app on a scene file, the built-in scene or the benchmark arena.
pub fn open_app(what: Opened, view: View, outside: Outside, setup: &dyn Fn(&mut App)) -> ExitCode {
    let View { screenshot, frame_stats, select, start } = view;
    let (scene, source) = match what {
        Opened::Bench { robots, options } => {
            if robots > crate::run::bench::MAX_BENCH_ROBOTS {
                eprintln!("--bench {robots}: at most {} robots", crate::run::bench::MAX_BENCH_ROBOTS);
                return ExitCode::from(2);
            }
            (crate::run::bench::bench_arena(robots, 1, options), SceneSource::Generated)
        }
        Opened::Scene(Some(path)) => match crate::scene::load_scene_file_with(&path, &outside.overrides) {
            Ok((s, _)) => (s, SceneSource::File(path)),
            Err(e) => return bad_input(e),
        },
        Opened::Scene(None) => {
            let (text, name) = (crate::scene::load::DEFAULT_SCENE, crate::scene::load::DEFAULT_SCENE_NAME);
            match crate::scene::load::parse_scene_with(text, name, &outside.overrides) {
                Ok(s) => (s, SceneSource::BuiltIn),
                Err(e) => return bad_input(e),
            }
        }
    };
    // The pool is made once: a scene opened later with many more robots keeps this size.
    if let Err(e) = crate::sim::set_threads(crate::sim::default_threads(scene.robots.len())) {
        return bad_input(e);
    }
    open_window(AppWindow { scene, source, screenshot, frame_stats, select, start }, outside, setup)
}

/// `crsim replay FILE`: the recording in the app with a timeline from `step`, or (`frames`) its
/// steps written as PNG frames, one every `every`.
/// `setup` is what an extension adds to the app (its sensors, to show the scene that ran).
pub fn replay_command(
    path: &Path,
    frames: Option<PathBuf>,
    every: u64,
    step: Option<u64>,
    setup: &dyn Fn(&mut App),
) -> ExitCode {
    use crate::record::replay::{Replay, ReplaySource};
    if every == 0 {
        return bad_input("--every must be at least 1");
    }
    let recording = match crate::record::Recording::open(path) {
        Ok(r) => r,
        Err(e) => return bad_input(e),
    };
    if let Some(note) = recording.describe_end() {
        eprintln!("{note}");
    }
    let scene = match crate::record::recorded_scene(&recording.meta) {
        Ok(s) => crate::record::without_outside_drivers(s),
        Err(e) => return bad_input(format!("{}: {e}", path.display())),
    };
    if let Some(dir) = &frames
        && let Err(e) = std::fs::create_dir_all(dir)
    {
        return bad_input(format!("--frames: cannot create {}: {e}", dir.display()));
    }
    let source = SceneSource::Recorded { scene: recording.meta.scene_path.clone(), from: path.display().to_string() };
    let mut replay = Replay::file(recording);
    if let (Some(s), ReplaySource::File(t)) = (step, &mut replay.source) {
        t.seek(s as i64);
    }
    let window = AppWindow { scene, source, screenshot: None, frame_stats: None, select: None, start: default() };
    open_window(window, Outside::none(), move |app| {
        setup(app);
        app.insert_resource(replay);
        if let Some(dir) = frames {
            export_frames(app, dir, every);
        }
    })
}

/// `crsim view ADDR`: the app attached to a run that serves viewers there.
pub fn view_command(addr: &str, setup: &dyn Fn(&mut App)) -> ExitCode {
    let client = match crate::record::viewer::ViewerClient::connect(addr) {
        Ok(c) => c,
        Err(e) => return bad_input(e),
    };
    let scene = match crate::record::recorded_scene(&client.meta) {
        Ok(s) => crate::record::without_outside_drivers(s),
        Err(e) => return bad_input(format!("{addr}: {e}")),
    };
    let source = SceneSource::Recorded { scene: client.meta.scene_path.clone(), from: addr.to_string() };
    let window = AppWindow { scene, source, screenshot: None, frame_stats: None, select: None, start: default() };
    open_window(window, Outside::none(), move |app| {
        setup(app);
        app.insert_resource(crate::record::replay::Replay::live(client));
    })
}

/// Says `e` on stderr; the exit code of bad input.
fn bad_input(e: impl std::fmt::Display) -> ExitCode {
    eprintln!("{e}");
    ExitCode::from(crate::run::runner::BAD_INPUT)
}

/// Opens the app on `window`; `setup` adds to it (a replay, the frames exporter). The exit code.
#[cfg(feature = "app")]
pub fn open_window(window: AppWindow, outside: Outside, setup: impl FnOnce(&mut App)) -> ExitCode {
    let AppWindow { scene, source, screenshot, frame_stats, select, start } = window;
    let Outside { protocol, program_port, overrides } = outside;
    if std::env::var_os("DISPLAY").is_none_or(|d| d.is_empty()) {
        eprintln!(
            "crsim: no display to open the app's window on (DISPLAY is not set). Run a scene headless \
             with `crsim run SCENE --steps N`, or start the app under an X server, for example \
             `xvfb-run -a crsim SCENE`."
        );
        return ExitCode::from(2);
    }
    // Opening the window happens while the plugins are built; a display that cannot be reached
    // makes winit panic there. Say so plainly instead.
    let message = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let previous = std::panic::take_hook();
    let store = std::sync::Arc::clone(&message);
    std::panic::set_hook(Box::new(move |info| {
        if let Ok(mut m) = store.lock() {
            *m = info.payload_as_str().unwrap_or("a panic").to_string();
        }
    }));
    let built = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut app = App::new();
        app.add_plugins(AppPlugin {
            scene,
            source,
            screenshot,
            frame_stats,
            select,
            start,
            protocol,
            program_port,
            overrides,
        });
        app
    }));
    std::panic::set_hook(previous);
    let mut app = match built {
        Ok(app) => app,
        Err(_) => {
            let why = message.lock().map(|m| m.clone()).unwrap_or_default();
            eprintln!(
                "crsim: the app cannot open its window on display {:?}: {why}. Check that the X server \
                 is running, or run the scene headless with `crsim run SCENE --steps N`.",
                std::env::var_os("DISPLAY").unwrap_or_default()
            );
            return ExitCode::from(2);
        }
    };
    setup(&mut app);
    let exit = app.run();
    if exit.is_success() { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}

/// Without the `app` feature there is no window to open: the error says how to get one.
#[cfg(not(feature = "app"))]
pub fn open_window(_: AppWindow, _: Outside, _: impl FnOnce(&mut App)) -> ExitCode {
    eprintln!(
        "crsim: this crsim was built without its window (the `app` feature is off); build it with \
         `cargo build --release` (the feature is on by default), or run scenes headless with \
         `crsim run SCENE --steps N`"
    );
    ExitCode::from(2)
}

/// Writes the replayed steps as PNG frames into `dir`, every `every` steps.
#[cfg(feature = "app")]
pub fn export_frames(app: &mut App, dir: PathBuf, every: u64) {
    crate::render::frames::plugin(app, dir, every);
}

/// Without the `app` feature nothing draws frames; `open_window` has said so already.
#[cfg(not(feature = "app"))]
pub fn export_frames(_: &mut App, _: PathBuf, _: u64) {}

/// The desktop app: a window on `scene`, drawn, with the control panel and hot reload (the
/// `app` feature).
#[cfg(feature = "app")]
pub struct AppPlugin {
    pub scene: SceneFile,
    pub source: SceneSource,
    /// Save a screenshot here after this many frames, then exit (the GUI smoke test).
    pub screenshot: Option<(std::path::PathBuf, u32)>,
    /// Time this many frames after a warm-up, print the frame-time statistics and exit.
    pub frame_stats: Option<u32>,
    /// Select the robot of this name whenever a scene loads.
    pub select: Option<String>,
    /// Edit mode, the plots window and the theme at start.
    pub start: StartView,
    /// Remote robots speak this VirtualRobot dialect instead of their scene's.
    pub protocol: Option<Dialect>,
    /// Serve robot programs on this port instead of the scene's.
    pub program_port: Option<u16>,
    /// Changes to every scene read from a file (already applied to `scene`).
    pub overrides: SceneOverrides,
}

#[cfg(feature = "app")]
impl Plugin for AppPlugin {
    fn build(&self, app: &mut App) {
        app.add_plugins(
            DefaultPlugins
                .set(WindowPlugin {
                    primary_window: Some(Window { title: "crsim".into(), resolution: (1280, 800).into(), ..default() }),
                    ..default()
                })
                // The DDS stack's own chatter (every socket it closes at exit) stays out.
                .set(bevy::log::LogPlugin {
                    filter: format!("{}rustdds=warn", bevy::log::DEFAULT_FILTER),
                    ..default()
                }),
        )
        .add_plugins(bevy_egui::EguiPlugin::default())
        .add_plugins(crate::run::SimPlugin)
        .insert_resource(crate::sim::SimClock::real_time())
        .insert_resource(crate::control::remote::DialectOverride(self.protocol))
        .insert_resource(crate::control::programs::ProgramPortOverride(self.program_port))
        .insert_resource(self.overrides.clone());
        app.world_mut().resource_mut::<PendingScene>().request(self.scene.clone(), self.source.clone());
        // Serves ROS 2 when the scene's `ros2.enabled` says so.
        crate::ros2::plugin(app);
        crate::run::hot_reload::plugin(app);
        crate::render::plugin(app);
        crate::record::replay::plugin(app);
        if let Some(name) = &self.select {
            crate::render::select_on_load(app, name.clone());
        }
        crate::ui::plugin(app);
        if self.start.edit {
            crate::ui::editor::edit_on_load(app, self.select.clone());
        }
        app.world_mut().resource_mut::<crate::ui::plots::PlotsOpen>().0 = self.start.plots;
        if self.start.dark {
            app.world_mut().resource_mut::<crate::render::picture::ViewOptions>().theme =
                crate::render::picture::Theme::Dark;
        }
        if let Some((path, frames)) = &self.screenshot {
            crate::render::screenshot::plugin(app, path.clone(), *frames);
        }
        if let Some(frames) = self.frame_stats {
            crate::render::frame_stats::plugin(app, frames);
        }
    }
}
