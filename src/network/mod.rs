//! The behaviour network of seed 001: task, perception, subject, control and actuator nodes that
//! grow and shrink with what the robot sees.
//!
//! So far: [`structure`], the basic network structure as data (`assets/network.ron`), loaded and
//! checked, and printed in the seed's table format; and [`graph`], the running network's
//! mechanics (static and dynamic nodes, managers and connection requests, structural changes
//! between ticks, double-buffered degrees). The functional units fed by the sensors, the
//! pen-collecting controller and the graph view are the rest of issue #4.

pub mod graph;
pub mod structure;

pub use graph::{Network, Node, weighted_mean};
pub use structure::{NetworkStructure, default_network, parse_network};
