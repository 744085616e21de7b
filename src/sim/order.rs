//! The stable order of robots: their position in the scene's robot list. Every per-robot pass
//! whose result depends on order (the hash, the gripper's ties, the radio's loss draws) walks
//! robots in this order, never in Bevy's query order, which differs between the app and a
//! headless run.

use bevy::prelude::*;

/// All robots of the running scene in index order.
#[derive(Resource, Debug, Clone, Default)]
pub struct RobotOrder(pub Vec<Entity>);
