//! The communication model (seed 000): robots talk to each other only through a simulated radio
//! with link, range, delay and delivery probability.
//!
//! [`model`] holds the seed's model as plain types with its tests (records, queues, parameter
//! levels, the checks in the seed's order); [`delivery`] is the planner that applies a step's
//! sends together on several threads without changing what the model decides; [`radio`] runs
//! them in the loop (registration, delivery in the communicate stage, the `comms` metrics).
//! Explorers share the obstacles they find through it.

pub mod delivery;
pub mod model;
pub mod radio;
pub mod sensor;

pub use radio::{CommAbilities, Payload, Radio, RadioIn, RadioLog, RadioOut, register_robot, restore_pairs};

pub(super) fn plugin(app: &mut bevy::prelude::App) {
    radio::plugin(app);
    let mut sensors = app.world_mut().get_resource_or_init::<crate::robot::registry::SensorRegistry>();
    sensors.register_or_refuse(sensor::register);
}

pub use delivery::PlannedChunk;
pub use model::{
    CommType, CommsError, CommsModel, CommsStats, DropCause, Drops, EffectiveLink, Message, Nearby, PairParams,
    RobotId, RobotParams, Sent, SystemParams, Target, To, effective_link,
};
