//! crsim: a cooperative multi-robot simulator.
//!
//! [`SimPlugin`] is the headless core: scenes, the fixed-step environment loop, the physical
//! world and the robots. [`AppPlugin`] adds the window, drawing and the egui control panel on
//! top; the simulation never depends on them.

use bevy::prelude::*;

pub mod botlink;
pub mod comms;
pub mod explore;
pub mod network;
pub mod render;
pub mod robot;
pub mod scene;
pub mod sim;
pub mod skills;
pub mod ui;
pub mod world;

use scene::{PendingScene, SceneFile, SceneSource};

/// The simulation without any presentation. Needs Bevy's time, task pool and transform plugins
/// (`MinimalPlugins` + `TransformPlugin`, or `DefaultPlugins`).
pub struct SimPlugin;

impl Plugin for SimPlugin {
    fn build(&self, app: &mut App) {
        app.init_resource::<sim::report::ReportSections>();
        sim::plugin(app);
        scene::plugin(app);
        world::plugin(app);
        robot::plugin(app);
        skills::plugin(app);
        botlink::plugin(app);
        comms::plugin(app);
        explore::plugin(app);
        network::plugin(app);
    }
}

/// The desktop app: a window on `scene`, drawn, with the control panel and hot reload.
pub struct AppPlugin {
    pub scene: SceneFile,
    pub source: SceneSource,
    /// Save a screenshot here after this many frames, then exit (the GUI smoke test).
    pub screenshot: Option<(std::path::PathBuf, u32)>,
    /// Select the robot of this name whenever a scene loads.
    pub select: Option<String>,
    /// Remote robots speak this VirtualRobot dialect instead of their scene's.
    pub protocol: Option<botlink::remote::Dialect>,
}

impl Plugin for AppPlugin {
    fn build(&self, app: &mut App) {
        app.add_plugins(DefaultPlugins.set(WindowPlugin {
            primary_window: Some(Window { title: "crsim".into(), resolution: (1280, 800).into(), ..default() }),
            ..default()
        }))
        .add_plugins(bevy_egui::EguiPlugin::default())
        .add_plugins(SimPlugin)
        .insert_resource(sim::SimClock::real_time())
        .insert_resource(botlink::remote::DialectOverride(self.protocol));
        app.world_mut().resource_mut::<PendingScene>().request(self.scene.clone(), self.source.clone());
        scene::hot_reload::plugin(app);
        render::plugin(app);
        if let Some(name) = &self.select {
            render::select_on_load(app, name.clone());
        }
        ui::plugin(app);
        if let Some((path, frames)) = &self.screenshot {
            render::screenshot::plugin(app, path.clone(), *frames);
        }
    }
}
