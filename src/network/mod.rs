//! The behaviour network of seed 001: task, perception, subject, control and actuator nodes that
//! grow and shrink with what the robot sees.
//!
//! So far: [`structure`], the basic network structure as data (`assets/network.ron`), loaded and
//! checked, and printed in the seed's table format. The running network (nodes with degrees of
//! execution, managers and connection requests, double-buffered ticks) and the pen-collecting
//! controller are the rest of issue #4.

pub mod structure;

pub use structure::{NetworkStructure, default_network, parse_network};
