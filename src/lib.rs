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
//! | top | `cli.rs`, `window.rs`, `ui/`, `render/` | the command line (the binary's, and an extension's with its plugins); the app (`AppPlugin`) and opening its window; the control panel; drawing (presentation only) |
//! | 6 | `vecenv/` | many worlds in one process for learning: actions in, observations, rewards and episode ends out, in flat arrays |
//! | 5 | `run/`, `experiment/` | scene loading, physics initialisation, headless runner, bench, report, hot reload, verify; sweeps |
//! | 4 | `record/` | the record stream: capture, inputs from outside, MCAP writer and reader, viewer protocol, replay |
//! | 3 | `control/` | every controller: simple, explorer, behaviour network, remote |
//! | 2 | `skills/` | skill slots and executors between controllers and the bot link |
//! | 1 | `botlink/`, `comms/` | the bot manager and its packets; the radio |
//! | 0 | `world/`, `robot/` | the arena and its objects; the robot's body, sensors and actuators |
//! | ground | `scene/`, `sim/` | scene types and pure functions; system sets, clock, streams, hash |

pub mod botlink;
pub mod cli;
pub mod comms;
pub mod control;
pub mod experiment;
pub mod record;
#[cfg(feature = "app")]
pub mod render;
pub mod robot;
pub mod ros2;
pub mod run;
pub mod scene;
pub mod sim;
pub mod skills;
#[cfg(feature = "app")]
pub mod ui;
pub mod vecenv;
pub mod window;
pub mod world;

pub use run::SimPlugin;

#[cfg(feature = "app")]
pub use window::AppPlugin;
pub use window::StartView;
