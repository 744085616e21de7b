//! The drive and the battery. The drive clamps the commanded linear, angular and (a holonomic
//! drive's) sideways speed to the robot's maxima (zero when the battery is empty) and hands the
//! physics the velocity; walls and other bodies then stop the robot (rapier's contacts, or the kinematic
//! model's separation).

use bevy::prelude::*;
use bevy_rapier2d::plugin::context::systemparams::RapierContext;
use bevy_rapier2d::prelude::*;

use super::{DriveCommand, Odometry, PoseCache, ReportedPose, Robot};
use crate::scene::ActiveScene;
use crate::sim::{Env, Passes, PerEnv, RobotOrder, SimTime};
use crate::world::{Seeable, SpatialIndex, Station};

/// The command the drive actually applied this step, after limits.
#[derive(Component, Debug, Clone, Copy, Default, PartialEq)]
pub struct AppliedDrive {
    pub linear: f32,
    pub angular: f32,
    /// Sideways, to the left, m/s: always 0 for a differential drive.
    pub lateral: f32,
}

impl AppliedDrive {
    /// The speed over the floor, m/s.
    pub fn speed(&self) -> f32 {
        // Exactly |linear| without a sideways part, as before holonomic drives.
        if self.lateral == 0.0 { self.linear.abs() } else { self.linear.hypot(self.lateral) }
    }
}

/// A battery: drains with time and motion, charges on a station.
#[derive(Component, Debug, Clone, PartialEq)]
pub struct Battery {
    pub capacity: f32,
    pub charge: f32,
    pub idle_drain: f32,
    pub move_drain: f32,
    pub turn_drain: f32,
    /// True while overlapping a charging station.
    pub charging: bool,
    /// Times the charge reached zero.
    pub depletions: u32,
}

impl Battery {
    pub fn new(capacity: f32, charge: f32, idle_drain: f32, move_drain: f32, turn_drain: f32) -> Self {
        Self { capacity, charge, idle_drain, move_drain, turn_drain, charging: false, depletions: 0 }
    }

    /// Charge as a fraction of capacity.
    pub fn level(&self) -> f32 {
        self.charge / self.capacity
    }

    pub fn is_empty(&self) -> bool {
        self.charge <= 0.0
    }

    /// One step: drain for `dt` seconds at the applied speeds, then charge at `rate` (0 when not
    /// on a station).
    pub fn step(&mut self, dt: f32, linear: f32, angular: f32, rate: f32) {
        let was_empty = self.is_empty();
        let drain = self.idle_drain + self.move_drain * linear.abs() + self.turn_drain * angular.abs();
        self.charge = (self.charge - drain * dt + rate * dt).clamp(0.0, self.capacity);
        self.charging = rate > 0.0;
        if !was_empty && self.is_empty() {
            self.depletions += 1;
        }
    }
}

/// Clamps a command to a robot's limits.
pub fn limit(cmd: DriveCommand, robot: &Robot, battery: &Battery) -> AppliedDrive {
    if battery.is_empty() {
        return AppliedDrive::default();
    }
    let finite = |x: f32| if x.is_finite() { x } else { 0.0 };
    AppliedDrive {
        linear: finite(cmd.linear).clamp(-robot.max_speed, robot.max_speed),
        angular: finite(cmd.angular).clamp(-robot.max_turn, robot.max_turn),
        lateral: finite(cmd.lateral).clamp(-robot.max_lateral, robot.max_lateral),
    }
}

pub(super) fn apply_drive(
    passes: Res<Passes>,
    order: Res<RobotOrder>,
    mut robots: Query<
        (&Robot, &Transform, &PoseCache, &DriveCommand, &Battery, &mut AppliedDrive, &mut Velocity),
        Without<ReportedPose>,
    >,
) {
    passes.each_mut(order.0.len(), &mut robots, |item| {
        let (robot, transform, cache, cmd, battery, mut applied, mut velocity) = item;
        let a = limit(*cmd, robot, battery);
        let (_, facing) = cache.facing(transform);
        *applied = a;
        // Unchanged (a robot driving straight and free), the body is left alone: rapier then
        // has nothing to take from it before the step.
        // Sideways is the heading turned a quarter left: (-y, x).
        let linear = if a.lateral == 0.0 { facing * a.linear } else { facing * a.linear + facing.perp() * a.lateral };
        let v = Velocity { linear, angular: a.angular };
        if *velocity != v {
            *velocity = v;
        }
    });
}

/// How much closer than touching a charging pad must be in the spatial index before rapier is
/// asked whether the robot overlaps it, metres: the index holds the pads and robots where the
/// last physics step left them, as rapier's overlaps do, so this only absorbs rounding.
const PAD_MARGIN: f32 = 0.05;

/// Charges and drains every simulated robot's battery. A robot charges at the best rate of the
/// charging pads it overlaps: as rapier found them in its last step with rigid bodies (so from
/// the second step of a scene on), as the spatial index has them in the kinematic model (whose
/// robots are not in rapier).
pub(super) fn update_battery(
    contexts: Query<RapierContext<'static>>,
    active: Option<Res<ActiveScene>>,
    time: Res<SimTime>,
    indices: Res<PerEnv<SpatialIndex>>,
    passes: Res<Passes>,
    order: Res<RobotOrder>,
    stations: Query<&Station>,
    mut robots: Query<BatteryItem, Without<ReportedPose>>,
) {
    let kinematic = crate::scene::kinematic(active);
    let margin = if kinematic { 0.0 } else { PAD_MARGIN };
    passes.each_mut(order.0.len(), &mut robots, |(entity, robot, transform, applied, mut battery, env, link)| {
        let (mut near_pad, mut touching_rate) = (false, 0.0f32);
        indices[*env].discs_touching(transform.translation.truncate(), robot.radius + margin, |d| {
            if d.kind == Some(Seeable::Station) {
                near_pad = true;
                touching_rate = touching_rate.max(stations.get(d.entity).map_or(0.0, |s| s.rate));
            }
        });
        // Overlaps with station sensors as of the last physics step, in the robot's context.
        let context = link.filter(|_| !kinematic && near_pad).and_then(|link| contexts.get(link.0).ok());
        let rate = match context {
            Some(ctx) => crate::world::context_of(ctx)
                .intersection_pairs_with(entity)
                .filter(|(_, _, touching)| *touching)
                .filter_map(|(a, b, _)| stations.get(if a == entity { b } else { a }).ok())
                .map(|s| s.rate)
                .fold(0.0, f32::max),
            None => touching_rate,
        };
        battery.step(time.dt, applied.speed(), applied.angular, rate);
    });
}

type BatteryItem<'a> = (
    Entity,
    &'a Robot,
    &'a Transform,
    &'a AppliedDrive,
    Mut<'a, Battery>,
    &'a Env,
    Option<&'a RapierContextEntityLink>,
);

/// On the simulation's thread: a distance per robot is less than handing the pass to the pool
/// costs (the record stage 0.31 -> 0.28 ms at 10,000 robots in parallel chunks against in turn).
pub(super) fn update_odometry(mut robots: Query<(&Transform, &mut Odometry), With<Robot>>) {
    for (transform, mut odo) in &mut robots {
        let p = transform.translation.truncate();
        odo.distance += p.distance(odo.last);
        odo.last = p;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn robot() -> Robot {
        Robot { index: 0, radius: 0.1, max_speed: 0.5, max_turn: 2.0, max_lateral: 0.0 }
    }

    #[test]
    fn commands_are_clamped_to_the_maxima() {
        let b = Battery::new(10.0, 10.0, 0.0, 0.0, 0.0);
        let a = limit(DriveCommand::new(3.0, -9.0), &robot(), &b);
        assert_eq!(a, AppliedDrive { linear: 0.5, angular: -2.0, lateral: 0.0 });
        let a = limit(DriveCommand::new(f32::NAN, 1.0), &robot(), &b);
        assert_eq!(a, AppliedDrive { linear: 0.0, angular: 1.0, lateral: 0.0 });
        // A differential drive applies nothing sideways; a holonomic one up to its own limit.
        let sideways = DriveCommand { linear: 0.1, angular: 0.0, lateral: -0.4 };
        assert_eq!(limit(sideways, &robot(), &b).lateral, 0.0);
        let omni = Robot { max_lateral: 0.25, ..robot() };
        assert_eq!(limit(sideways, &omni, &b), AppliedDrive { linear: 0.1, angular: 0.0, lateral: -0.25 });
        let nan = DriveCommand { lateral: f32::NAN, ..sideways };
        assert_eq!(limit(nan, &omni, &b).lateral, 0.0);
        assert_eq!(AppliedDrive { linear: 0.3, angular: 0.0, lateral: -0.4 }.speed(), 0.5);
        assert_eq!(AppliedDrive { linear: -0.3, angular: 1.0, lateral: 0.0 }.speed(), 0.3);
    }

    #[test]
    fn an_empty_battery_stops_the_drive() {
        let b = Battery::new(10.0, 0.0, 0.0, 0.0, 0.0);
        assert_eq!(limit(DriveCommand::new(0.3, 1.0), &robot(), &b), AppliedDrive::default());
    }

    #[test]
    fn battery_drains_with_motion_and_charges_on_a_station() {
        let mut b = Battery::new(10.0, 5.0, 0.1, 1.0, 0.5);
        b.step(1.0, 0.5, 2.0, 0.0);
        // 0.1 idle + 0.5 moving + 1.0 turning.
        assert!((b.charge - 3.4).abs() < 1e-5, "{}", b.charge);
        b.step(1.0, 0.0, 0.0, 2.0);
        assert!((b.charge - 5.3).abs() < 1e-5, "{}", b.charge);
        assert!(b.charging);
    }

    #[test]
    fn depletion_is_counted_once() {
        let mut b = Battery::new(1.0, 0.5, 1.0, 0.0, 0.0);
        b.step(1.0, 0.0, 0.0, 0.0);
        b.step(1.0, 0.0, 0.0, 0.0);
        assert_eq!(b.charge, 0.0);
        assert_eq!(b.depletions, 1);
    }
}
