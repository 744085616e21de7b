//! The communication model (seed 000): robots talk to each other only through a simulated radio
//! with link, range, delay and delivery probability.
//!
//! [`model`] holds the whole model as plain types with its tests; [`radio`] runs it in the loop
//! (registration, delivery in the communicate stage, the `comms` metrics). Explorers share the
//! obstacles they find through it.

pub mod model;
pub mod radio;

pub use radio::{CommAbilities, Payload, Radio, RadioIn, RadioLog, RadioOut, register_robot, restore_pairs};

pub(super) fn plugin(app: &mut bevy::prelude::App) {
    radio::plugin(app);
}

pub use model::{
    CommType, CommsError, CommsModel, CommsStats, DropCause, Drops, EffectiveLink, Message, Nearby, PairParams,
    PlannedChunk, RobotId, RobotParams, Sent, SystemParams, Target, To, effective_link,
};
