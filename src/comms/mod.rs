//! The communication model (seed 000): robots talk to each other only through a simulated radio
//! with link, range, delay and delivery probability.
//!
//! [`model`] holds the whole model as plain types with its tests. Wiring it into the loop (a
//! resource, registration as robots spawn, delivery in the communicate stage, the panel and the
//! live plot, robots sharing what they find) is the rest of issue #3.

pub mod model;

pub use model::{
    CommType, CommsError, CommsModel, CommsStats, DropCause, EffectiveLink, Message, PairParams, RobotParams,
    SystemParams, Target, effective_link,
};
