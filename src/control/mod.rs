//! Every controller, in one wing: what decides a robot's next move. A controller reads the
//! robot's sensors and radio and hands skills to its skill system; it never touches actuators.
//!
//! - [`simple`]: a constant command (`Drive`) and the seeded random wanderer (`Wander`);
//! - [`explore`]: the cautious explorer of seed 002 (`Explorer`);
//! - [`network`]: the behaviour network of seed 001 (`Network`);
//! - [`remote`]: a robot driven in the VirtualRobot protocol by outside clients (`Remote`);
//! - [`programs`]: robots driven in lock-step by programs outside crsim (`Program`).
//!
//! Robots of kind `Idle` have none, and `External` robots are driven by packets straight into
//! the bot manager. Every controller is attached the same way: `attach_controller` observes
//! each robot being added, reads its controller in the scene and inserts that kind's component.
//! A new controller kind adds one arm there and one system to the chain in `plugin`.

use bevy::ecs::system::SystemParam;
use bevy::prelude::*;

pub mod explore;
pub mod network;
pub mod programs;
pub mod remote;
pub mod simple;

use crate::robot::Robot;
use crate::scene::ActiveScene;
use crate::scene::schema::ControllerSpec;
use crate::sim::rng::{SimSeed, stream};
use crate::sim::{Env, PerEnv, ThinkSystems, add_optional_systems, any_with};
use crate::world::Arena;

/// Which controller drives the robot, as written in the scene.
#[derive(Component, Debug, Clone, PartialEq)]
pub struct ControllerKind(pub ControllerSpec);

pub(super) fn plugin(app: &mut App) {
    explore::plugin(app);
    network::plugin(app);
    programs::plugin(app);
    remote::plugin(app);
    use ControllerSystems as C;
    app.add_observer(attach_controller)
        // Each controller kind drives its own robots; the fixed order keeps every step the same.
        .configure_sets(
            FixedUpdate,
            (C::Constant, C::Wander, C::Explore, C::Network, C::Remote, C::Programs)
                .chain()
                .in_set(ThinkSystems::Control),
        )
        .add_systems(
            FixedUpdate,
            (
                simple::constant_drive.in_set(C::Constant),
                simple::wander.in_set(C::Wander),
                explore::explore.in_set(C::Explore),
                network::controller::think.in_set(C::Network),
                remote::drive_remote_robots.in_set(C::Remote),
                programs::act.in_set(C::Programs),
            ),
        );
    // A world without robots of a kind needs not schedule its controller.
    add_optional_systems(app, FixedUpdate, C::Constant, any_with::<simple::ConstantDrive>);
    add_optional_systems(app, FixedUpdate, C::Wander, any_with::<simple::Wander>);
    add_optional_systems(app, FixedUpdate, C::Explore, any_with::<explore::Explorer>);
    add_optional_systems(app, FixedUpdate, C::Network, any_with::<network::NetworkController>);
    add_optional_systems(app, FixedUpdate, C::Remote, any_with::<remote::Remote>);
}

/// The controllers of each kind, in the order they think in a step.
#[derive(SystemSet, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ControllerSystems {
    Constant,
    Wander,
    Explore,
    Network,
    Remote,
    Programs,
}

/// What attaching any controller may need.
#[derive(SystemParam)]
struct AttachParams<'w, 's> {
    active: Res<'w, ActiveScene>,
    arena: Res<'w, Arena>,
    seeds: Res<'w, PerEnv<SimSeed>>,
    robots: Query<'w, 's, (&'static Robot, &'static Transform, &'static Name, &'static Env)>,
    network: network::NetworkAttach<'w, 's>,
    remote: remote::RemoteAttach<'w>,
}

/// Gives every robot the controller its scene names, as it is added.
fn attach_controller(add: On<Add, Robot>, mut commands: Commands, mut p: AttachParams) {
    let Ok((robot, transform, name, env)) = p.robots.get(add.entity) else { return };
    let Some(spec) = p.active.scene.robots.get(robot.index as usize) else { return };
    // Its environment's seed: environments of one scene differ in it.
    let seed = p.seeds.0.get(env.index()).map_or(p.active.scene.seed, |s| s.0);
    let controller = spec.controller.clone();
    let kind = ControllerKind(controller.clone());
    match controller {
        ControllerSpec::Idle | ControllerSpec::External { .. } => {
            commands.entity(add.entity).insert(kind);
        }
        ControllerSpec::Program {} => {
            commands.entity(add.entity).insert((kind, programs::Program::default()));
        }
        ControllerSpec::Drive { linear, angular, lateral } => {
            let drive = simple::ConstantDrive { linear, angular: angular.to_radians(), lateral };
            commands.entity(add.entity).insert((kind, drive));
        }
        ControllerSpec::Wander { speed } => {
            let rng = stream(seed, "wander", u64::from(robot.index));
            commands.entity(add.entity).insert((kind, simple::Wander::new(speed, rng)));
        }
        ControllerSpec::Explorer { strategy, sonar } => {
            let explorer = explore::attach(robot, transform, &p.arena, seed, strategy, sonar);
            commands.entity(add.entity).insert((kind, explorer));
        }
        ControllerSpec::Network { forget_after, low_power, full_power } => {
            let nc = network::controller::attach(
                &mut p.network,
                &mut commands,
                &p.active,
                robot,
                seed,
                (forget_after, low_power, full_power),
            );
            commands.entity(add.entity).insert((kind, nc));
        }
        ControllerSpec::Remote { http, ws, protocol } => {
            let remote = remote::attach(&mut p.remote, &p.active, name.as_str(), (http, ws, protocol));
            commands.entity(add.entity).insert((kind, remote));
        }
    }
}
