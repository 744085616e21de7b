//! Opening the app's window: what it shows first and what the command line says about robots
//! driven from outside. The window, drawing and panel come with the `app` feature; a crsim built
//! without it (`--no-default-features`, the headless core) says so instead of opening one.

use std::path::PathBuf;
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
                    filter: format!("{}rustdds=warn,ros2_client=warn", bevy::log::DEFAULT_FILTER),
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
