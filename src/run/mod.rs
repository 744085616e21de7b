//! Assembling a world from a scene and running it: scene loading and physics initialisation,
//! the headless runner, the benchmark, the run report and (in the app) hot reload. The top of the
//! simulation: it may use every subsystem, and none uses it.

use bevy::prelude::*;

pub mod bench;
pub mod bot;
pub mod check;
pub mod files;
pub mod headless;
pub mod hot_reload;
pub mod load;
pub mod physics;
pub mod physics_step;
pub mod report;
pub mod runner;
pub mod signals;
pub mod until;
pub mod verify;

pub use load::load_now;

/// The simulation without any presentation. Needs Bevy's time, task pool and transform plugins
/// (`MinimalPlugins` + `TransformPlugin`, or `DefaultPlugins`).
pub struct SimPlugin;

impl Plugin for SimPlugin {
    fn build(&self, app: &mut App) {
        crate::sim::plugin(app);
        physics::plugin(app);
        load::plugin(app);
        until::plugin(app);
        crate::world::plugin(app);
        crate::robot::plugin(app);
        crate::botlink::plugin(app);
        crate::comms::plugin(app);
        crate::skills::plugin(app);
        crate::control::plugin(app);
        crate::record::plugin(app);
    }
}

/// The sensors every crsim app registers, and those `setup` (an extension's plugins, as
/// [`crate::cli::main_with`] takes them) registers in an app: what `crsim check` looks a scene's
/// sensors up in.
pub fn sensors_with(setup: &dyn Fn(&mut App)) -> crate::robot::registry::SensorRegistry {
    let mut app = App::new();
    app.insert_resource(crsim_sensors());
    setup(&mut app);
    app.world_mut().remove_resource::<crate::robot::registry::SensorRegistry>().unwrap_or_default()
}

/// The sensors every crsim app registers (the body's and the radio's): the registry readers use
/// before a world is built, such as `crsim.VecEnv`'s observation sizes.
pub fn standard_sensors() -> &'static crate::robot::registry::SensorRegistry {
    static SENSORS: std::sync::OnceLock<crate::robot::registry::SensorRegistry> = std::sync::OnceLock::new();
    SENSORS.get_or_init(crsim_sensors)
}

/// A registry of crsim's own sensors (the body's and the radio's).
fn crsim_sensors() -> crate::robot::registry::SensorRegistry {
    let mut sensors = crate::robot::registry::SensorRegistry::default();
    sensors.register_or_refuse(crate::robot::builtin::register);
    sensors.register_or_refuse(crate::comms::sensor::register);
    sensors
}
