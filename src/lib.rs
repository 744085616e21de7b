//! crsim: a cooperative multi-robot simulator.
//!
//! [`SimPlugin`] is the headless core: scenes, the fixed-step environment loop, the physical
//! world and the robots. [`AppPlugin`] adds the window, drawing and the egui control panel on
//! top; the simulation never depends on them.
//!
//! The folders are floors, and a folder imports only folders below it:
//!
//! | floor | folders | what lives there |
//! |---|---|---|
//! | top | `ui/`, `render/` | the control panel; drawing (presentation only) |
//! | 5 | `run/`, `experiment/` | scene loading, physics initialisation, headless runner, bench, report, hot reload, verify; sweeps |
//! | 4 | `record/` | the record stream: capture, inputs from outside, MCAP writer and reader, viewer protocol, replay |
//! | 3 | `control/` | every controller: simple, explorer, behaviour network, remote |
//! | 2 | `skills/` | skill slots and executors between controllers and the bot link |
//! | 1 | `botlink/`, `comms/` | the bot manager and its packets; the radio |
//! | 0 | `world/`, `robot/` | the arena and its objects; the robot's body, sensors and actuators |
//! | ground | `scene/`, `sim/` | scene types and pure functions; system sets, clock, streams, hash |

#[cfg(feature = "app")]
use bevy::prelude::*;

pub mod botlink;
pub mod comms;
pub mod control;
pub mod experiment;
pub mod record;
#[cfg(feature = "app")]
pub mod render;
pub mod robot;
pub mod run;
pub mod scene;
pub mod sim;
pub mod skills;
#[cfg(feature = "app")]
pub mod ui;
pub mod window;
pub mod world;

pub use run::SimPlugin;
#[cfg(feature = "app")]
use scene::{PendingScene, SceneFile, SceneSource};

pub use window::StartView;

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
    pub protocol: Option<scene::schema::Dialect>,
    /// Serve robot programs on this port instead of the scene's.
    pub program_port: Option<u16>,
    /// Changes to every scene read from a file (already applied to `scene`).
    pub overrides: scene::SceneOverrides,
}

#[cfg(feature = "app")]
impl Plugin for AppPlugin {
    fn build(&self, app: &mut App) {
        app.add_plugins(DefaultPlugins.set(WindowPlugin {
            primary_window: Some(Window { title: "crsim".into(), resolution: (1280, 800).into(), ..default() }),
            ..default()
        }))
        .add_plugins(bevy_egui::EguiPlugin::default())
        .add_plugins(SimPlugin)
        .insert_resource(sim::SimClock::real_time())
        .insert_resource(control::remote::DialectOverride(self.protocol))
        .insert_resource(control::programs::ProgramPortOverride(self.program_port))
        .insert_resource(self.overrides.clone());
        app.world_mut().resource_mut::<PendingScene>().request(self.scene.clone(), self.source.clone());
        run::hot_reload::plugin(app);
        render::plugin(app);
        record::replay::plugin(app);
        if let Some(name) = &self.select {
            render::select_on_load(app, name.clone());
        }
        ui::plugin(app);
        if self.start.edit {
            ui::editor::edit_on_load(app, self.select.clone());
        }
        app.world_mut().resource_mut::<ui::plots::PlotsOpen>().0 = self.start.plots;
        if self.start.dark {
            app.world_mut().resource_mut::<render::picture::ViewOptions>().theme = render::picture::Theme::Dark;
        }
        if let Some((path, frames)) = &self.screenshot {
            render::screenshot::plugin(app, path.clone(), *frames);
        }
        if let Some(frames) = self.frame_stats {
            render::frame_stats::plugin(app, frames);
        }
    }
}
