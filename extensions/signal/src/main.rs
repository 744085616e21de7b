//! `crsim-signal`: crsim's command line with the signal sensor registered, so scenes whose
//! robots carry `"signal"` run, check and open in the app (`crsim-signal run SCENE --steps N`,
//! `crsim-signal check SCENE`, `crsim-signal SCENE`).

use bevy::prelude::*;

fn main() -> std::process::ExitCode {
    crsim::cli::main_with(&|app: &mut App| {
        app.add_plugins(crsim_signal::SignalPlugin::default());
    })
}
