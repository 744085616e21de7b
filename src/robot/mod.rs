//! Robots: a disc-shaped dynamic body with a differential or holonomic drive, a gripper that holds one pen,
//! a battery, a lamp, and four sensors (bump, camera, grip, power) and, when the scene gives it
//! one, a range sensor; every reader sees them through the sensor [`registry`] (declared in
//! [`builtin`]). This floor knows only the
//! body: controllers, skills, the bot link and the radio attach their own components when a
//! robot is added. Controllers never touch the actuators: they hand skills to the skill system,
//! whose commands reach [`DriveCommand`], [`GripCommand`] and [`LampState`] as packets through
//! the bot link; the act stage then turns them into motion.

use bevy::prelude::*;
use bevy_rapier2d::prelude::*;

use crate::scene::SceneEntity;
use crate::scene::schema::RobotSpec;
use crate::sim::{ActSystems, Env, FixedSense, Passes, RobotOrder, SenseSystems, SimSystems};
use crate::world::{DiscRadius, PendingPhysics, Seeable, groups, transform2d};

pub mod builtin;
mod drive;
mod gripper;
pub mod registry;
mod sensors;

pub use drive::{AppliedDrive, Battery};
pub use gripper::{Gripper, carry_point};
pub use sensors::{
    BumpEvent, BumpSensor, CameraView, GripSensor, PowerSensor, RangeScan, RangeScratch, RangeSensor, RobotCamera,
    Sighting, range_scan, ray_disc,
};

/// A robot's body and limits.
#[derive(Component, Debug, Clone)]
#[require(PoseCache)]
pub struct Robot {
    /// Position in the scene's robot list; the stable iteration order.
    pub index: u32,
    pub radius: f32,
    /// m/s.
    pub max_speed: f32,
    /// rad/s.
    pub max_turn: f32,
    /// m/s sideways: 0 for a differential drive, the holonomic drive's limit otherwise.
    pub max_lateral: f32,
}

/// A robot whose body lives outside crsim (an outside bot): its pose and battery come from its
/// status reports, the drive and the battery do not act on it, and its body here is kinematic
/// (other bodies meet it where it reports to be).
#[derive(Component, Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReportedPose;

/// What the controller wants from the wheels this step, before limits: m/s and rad/s.
#[derive(Component, Debug, Clone, Copy, Default, PartialEq)]
pub struct DriveCommand {
    /// Forward, m/s.
    pub linear: f32,
    /// Counter-clockwise, rad/s.
    pub angular: f32,
    /// Sideways, to the left, m/s (a holonomic drive's; a differential drive applies none).
    pub lateral: f32,
}

impl DriveCommand {
    /// Forward and turning, nothing sideways.
    pub const fn new(linear: f32, angular: f32) -> Self {
        Self { linear, angular, lateral: 0.0 }
    }
}

/// What the controller wants from the gripper: closed holds a pen, open releases it.
#[derive(Component, Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GripCommand {
    pub close: bool,
}

/// The robot's lamp, its third independent actuator (switched by lamp commands).
#[derive(Component, Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LampState {
    pub on: bool,
}

/// Mass density of a robot's body, kg/m² (a 0.1 m robot weighs about 4.7 kg).
pub const ROBOT_DENSITY: f32 = 150.0;

/// The den a robot belongs to, if any.
#[derive(Component, Debug, Clone, Copy)]
pub struct HomeDen(pub Option<Entity>);

/// Distance travelled and collisions so far, for the run metrics.
#[derive(Component, Debug, Clone, Copy, Default)]
pub struct Odometry {
    pub distance: f32,
    pub last: Vec2,
    pub collisions: u32,
}

/// Position and heading (radians, counter-clockwise from +x) of a transform.
pub fn pose(t: &Transform) -> (Vec2, f32) {
    let dir = (t.rotation * Vec3::X).truncate();
    (t.translation.truncate(), angle_of(dir))
}

/// The direction of `v`, radians in [-π, π]: `v.y.atan2(v.x)` to within 3.2e-7 rad (1.3 units
/// in the last place near π), computed with a polynomial rather than the C library's
/// `atan2f`, which took 6–10% of a large swarm's time in the camera and pose alone. Pure
/// arithmetic without fused operations: the same result on every machine and thread. Zero,
/// infinite and NaN components go to `atan2` itself.
pub fn angle_of(v: Vec2) -> f32 {
    use std::f32::consts::{FRAC_PI_2, PI};
    // atan(a) = a + a·s·P(s), s = a², for a in [0, 1] (the minimax polynomial of SLEEF's atanf).
    const P: [f32; 8] = [
        0.002_823_639,
        -0.015_956_903,
        0.042_504_99,
        -0.074_890_09,
        0.106_347_93,
        -0.142_027_36,
        0.199_926_96,
        -0.333_331_02,
    ];
    let (ax, ay) = (v.x.abs(), v.y.abs());
    let swap = ay > ax;
    let (num, den) = if swap { (ax, ay) } else { (ay, ax) };
    if !(den > 0.0 && den.is_finite()) {
        return v.y.atan2(v.x);
    }
    let a = num / den;
    let s = a * a;
    let p = P.iter().fold(0.0f32, |u, &c| u * s + c);
    let mut r = p * s * a + a;
    if swap {
        r = FRAC_PI_2 - r;
    }
    if v.x < 0.0 {
        r = PI - r;
    }
    if v.y.is_sign_negative() { -r } else { r }
}

/// A robot's heading and the unit vector it faces, computed once per step from its transform:
/// many systems need them, and each costs an atan2. [`PoseCache::pose`] gives exactly what
/// [`pose`] gives; a transform changed since the cache was filled is read afresh.
#[derive(Component, Debug, Clone, Copy)]
pub struct PoseCache {
    rotation: Quat,
    heading: f32,
    facing: Vec2,
}

impl Default for PoseCache {
    fn default() -> Self {
        // Matches no rotation: read afresh until filled.
        Self { rotation: Quat::from_xyzw(f32::NAN, 0.0, 0.0, 0.0), heading: 0.0, facing: Vec2::X }
    }
}

impl PoseCache {
    pub fn of(t: &Transform) -> Self {
        // The transform's x axis is the heading's unit vector already (to within rounding of
        // a unit quaternion): no sine and cosine of the angle just found.
        let dir = (t.rotation * Vec3::X).truncate();
        Self { rotation: t.rotation, heading: angle_of(dir), facing: dir.try_normalize().unwrap_or(Vec2::X) }
    }

    fn current(&self, t: &Transform) -> Self {
        if self.rotation == t.rotation { *self } else { Self::of(t) }
    }

    /// Position and heading, as [`pose`].
    pub fn pose(&self, t: &Transform) -> (Vec2, f32) {
        (t.translation.truncate(), self.current(t).heading)
    }

    /// Position and the unit vector of the heading: the transform's x axis, which is
    /// `Vec2::from_angle` of the heading to within 3.2e-7 (the error of [`angle_of`]).
    pub fn facing(&self, t: &Transform) -> (Vec2, Vec2) {
        (t.translation.truncate(), self.current(t).facing)
    }
}

/// Fills every moved robot's [`PoseCache`] before the sensors read it.
fn refresh_pose_cache(
    passes: Res<Passes>,
    order: Res<RobotOrder>,
    mut robots: Query<(&Transform, &mut PoseCache), Changed<Transform>>,
) {
    // A robot that only moved (drove straight) keeps its heading: no atan2, sine or cosine.
    passes.each_mut(order.0.len(), &mut robots, |(t, mut cache)| {
        if cache.rotation != t.rotation {
            *cache = PoseCache::of(t);
        }
    });
}

/// Wraps an angle to (-π, π].
pub fn wrap_angle(a: f32) -> f32 {
    let mut a = a % std::f32::consts::TAU;
    if a > std::f32::consts::PI {
        a -= std::f32::consts::TAU;
    } else if a <= -std::f32::consts::PI {
        a += std::f32::consts::TAU;
    }
    a
}

pub(super) fn plugin(app: &mut App) {
    app.world_mut().get_resource_or_init::<registry::SensorRegistry>().register_or_refuse(builtin::register);
    app.init_resource::<registry::SensorFaults>();
    app.add_message::<BumpEvent>()
        .add_systems(
            FixedSense,
            (
                (refresh_pose_cache, gripper::carry_held_pens).chain().in_set(SenseSystems::Bodies),
                (
                    sensors::sense_bump,
                    sensors::sense_camera,
                    sensors::sense_range,
                    sensors::sense_grip,
                    sensors::sense_power,
                )
                    .chain()
                    .in_set(SenseSystems::Sensors),
            ),
        )
        .add_systems(
            FixedUpdate,
            (
                (gripper::apply_gripper, drive::apply_drive, drive::update_battery).chain().in_set(ActSystems::Actuate),
                drive::update_odometry.in_set(SimSystems::Record),
            ),
        );
}

/// Spawns the body of robot number `index` of a scene, with its den. Subsystems attach their
/// own components (skills, bot link, radio, controller) in observers of the robot being added;
/// it belongs to `env`.
pub fn spawn_robot(world: &mut World, spec: &RobotSpec, index: u32, den: Option<Entity>, env: Env) -> Entity {
    let pos = Vec2::new(spec.pose.0, spec.pose.1);
    let b = &spec.battery;
    let body = if spec.outside.is_some() { RigidBody::KinematicPositionBased } else { RigidBody::Dynamic };
    let carried =
        world.get_resource_mut::<registry::SensorRegistry>().map(|mut r| r.carried_shared(spec)).unwrap_or_default();
    // Its environment first: the observers of the parts below read it.
    let mut robot = world.spawn(env);
    if spec.outside.is_some() {
        robot.insert(ReportedPose);
    }
    robot.insert((
        Name::new(spec.name.clone()),
        SceneEntity,
        Robot {
            index,
            radius: spec.radius,
            max_speed: spec.max_speed,
            max_turn: spec.max_turn.to_radians(),
            max_lateral: spec.drive.max_lateral(),
        },
        Seeable::Robot,
        DiscRadius(spec.radius),
        transform2d(pos, spec.pose.2.to_radians()),
        (
            PendingPhysics::new(Some(body), Collider::ball(spec.radius)),
            ColliderMassProperties::Density(ROBOT_DENSITY),
            Friction::coefficient(0.0),
            Restitution::coefficient(0.0),
            Velocity::zero(),
            Sleeping::disabled(),
            CollisionGroups::new(groups::ROBOT, Group::ALL),
        ),
        (DriveCommand::default(), GripCommand::default(), LampState::default(), AppliedDrive::default()),
        Gripper { reach: spec.grip_reach, holding: None, boxed: 0, picked: 0 },
        Battery::new(b.capacity, b.initial.unwrap_or(b.capacity), b.idle_drain, b.move_drain, b.turn_drain),
        (
            BumpSensor::default(),
            RobotCamera { fov: spec.camera.fov.to_radians(), range: spec.camera.range, period: spec.camera.period },
            CameraView::default(),
            GripSensor::default(),
            PowerSensor::default(),
        ),
        HomeDen(den),
        Odometry { last: pos, ..default() },
        carried,
    ));
    if let Some(s) = &spec.range_sensor {
        robot.insert((RangeSensor::from(s), RangeScan::default()));
    }
    robot.id()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::f32::consts::{PI, TAU};

    #[test]
    fn wrap_angle_stays_in_range() {
        assert!((wrap_angle(3.0 * PI) - PI).abs() < 1e-5);
        assert!((wrap_angle(-3.0 * PI / 2.0) - PI / 2.0).abs() < 1e-5);
        assert_eq!(wrap_angle(0.5), 0.5);
    }

    #[test]
    fn the_cached_facing_is_the_headings_unit_vector_at_every_angle() {
        let mut worst = 0.0f32;
        for i in 0..=20_000 {
            let a = -PI + TAU * i as f32 / 20_000.0;
            let t = transform2d(Vec2::ZERO, a);
            let (_, facing) = PoseCache::of(&t).facing(&t);
            worst = worst.max((facing - Vec2::from_angle(pose(&t).1)).length());
            assert!((facing.length() - 1.0).abs() < 1.2e-7, "{a}: {facing}");
        }
        assert!(worst < 3.2e-7, "{worst}");
    }

    #[test]
    fn the_pose_cache_gives_what_pose_gives_and_notices_a_new_rotation() {
        let t = transform2d(Vec2::new(1.0, 2.0), 2.5);
        let cache = PoseCache::of(&t);
        assert_eq!(cache.pose(&t), pose(&t));
        let (at, facing) = cache.facing(&t);
        assert_eq!(at, Vec2::new(1.0, 2.0));
        assert!((facing - Vec2::from_angle(pose(&t).1)).length() < 3.2e-7, "{facing}");
        let turned = transform2d(Vec2::new(3.0, 2.0), -1.0);
        assert_eq!(cache.pose(&turned), pose(&turned));
        assert_eq!(PoseCache::default().pose(&turned), pose(&turned));
    }

    #[test]
    fn angle_of_is_atan2_to_a_third_of_a_microradian_or_better() {
        let exact = |v: Vec2| f64::from(v.y).atan2(f64::from(v.x));
        let mut worst = 0.0f64;
        let mut check = |v: Vec2| {
            let got = angle_of(v);
            worst = worst.max((f64::from(got) - exact(v)).abs());
            assert!((-PI..=PI).contains(&got), "{v}: {got}");
        };
        // Every direction in steps of a thousandth of a degree, at three lengths.
        for k in 0..360_000 {
            let a = (k as f64 / 1000.0 - 180.0).to_radians();
            for r in [1e-3, 1.0, 1e4] {
                check(Vec2::new((r * a.cos()) as f32, (r * a.sin()) as f32));
            }
        }
        // The axes, the diagonals and near them.
        for (x, y) in [(1.0, 0.0), (0.0, 1.0), (-1.0, 0.0), (0.0, -1.0), (1.0, 1.0), (-1.0, -1.0), (1.0, 1.000_001)] {
            check(Vec2::new(x, y));
        }
        assert!(worst < 3.2e-7, "worst error {worst} rad");
    }

    #[test]
    fn angle_of_keeps_atan2s_zeros_infinities_and_nan() {
        for v in [
            Vec2::ZERO,
            Vec2::new(-0.0, 0.0),
            Vec2::new(0.0, -0.0),
            Vec2::new(-0.0, -0.0),
            Vec2::new(-1.0, 0.0),
            Vec2::new(-1.0, -0.0),
            Vec2::new(1.0, -0.0),
            Vec2::new(f32::INFINITY, 1.0),
            Vec2::new(f32::INFINITY, f32::NEG_INFINITY),
            Vec2::new(2.0, f32::INFINITY),
        ] {
            assert_eq!(angle_of(v).to_bits(), v.y.atan2(v.x).to_bits(), "{v:?}");
        }
        assert!(angle_of(Vec2::new(f32::NAN, 1.0)).is_nan());
        assert!(angle_of(Vec2::new(1.0, f32::NAN)).is_nan());
    }

    #[test]
    fn pose_reads_heading() {
        let t = transform2d(Vec2::new(1.0, 2.0), 1.0);
        let (p, h) = pose(&t);
        assert_eq!(p, Vec2::new(1.0, 2.0));
        assert!((h - 1.0).abs() < 1e-6);
    }
}
