//! The body's sensors on the [`SensorRegistry`]: pose (with the applied motion and odometry),
//! battery, bump, gripper, camera and range. Each reads the components its sense system keeps
//! (`sensors.rs`), and gives every reader what it gave before the registry, value for value.

use bevy::ecs::query::{QueryState, ROQueryItem, ReadOnlyQueryData};
use bevy::ecs::world::FilteredEntityRef;
use bevy::prelude::*;
use serde_json::json;

use super::registry::{
    Around, Detection, GripReading, Mark, ObsPart, Sensor, SensorObserver, SensorReading, SensorRegistry, Touch,
};
use super::{
    AppliedDrive, Battery, BumpSensor, CameraView, GripSensor, Gripper, Odometry, RangeScan, RangeSensor, Robot,
    RobotCamera, pose,
};
use crate::scene::schema::RobotSpec;
use crate::world::Seeable;

/// Registers the body's sensors.
pub fn register(registry: &mut SensorRegistry) -> Result<(), String> {
    registry.register(PoseSensor)?;
    registry.register(BatterySensor)?;
    registry.register(BumpContact)?;
    registry.register(GripperSensor)?;
    registry.register(Camera)?;
    registry.register(Range)?;
    Ok(())
}

/// A sensor's observation as a function of the components one query reads, so that the
/// observer `crsim.VecEnv` keeps and [`Sensor::observe`] give the same values.
trait Values: Send + Sync + 'static {
    type Data: ReadOnlyQueryData + 'static;
    fn values(item: ROQueryItem<'_, '_, Self::Data>, around: &Around, out: &mut [f32]);
}

/// The observer of a [`Values`] sensor: its query, kept.
struct Cached<V: Values>(QueryState<V::Data>);

impl<V: Values> SensorObserver for Cached<V>
where
    QueryState<V::Data>: Send + Sync,
{
    fn observe(&mut self, world: &World, robot: Entity, around: &Around, out: &mut [f32]) {
        match self.0.get(world, robot) {
            Ok(item) => V::values(item, around, out),
            Err(_) => out.fill(0.0),
        }
    }
}

/// The observer of a [`Values`] sensor in `world`.
fn cached<V: Values>(world: &mut World) -> Option<Box<dyn SensorObserver>>
where
    QueryState<V::Data>: Send + Sync,
{
    Some(Box::new(Cached::<V>(QueryState::new(world))))
}

fn flag(b: bool) -> f32 {
    if b { 1.0 } else { 0.0 }
}

/// The name a camera detection gives a kind of thing.
pub fn kind_name(kind: Seeable) -> &'static str {
    match kind {
        Seeable::Pen => "pen",
        Seeable::Box => "box",
        Seeable::Station => "station",
        Seeable::Robot => "robot",
    }
}

/// The kinds of thing the camera part reports, in order.
pub const CAMERA_KINDS: [Seeable; 4] = [Seeable::Pen, Seeable::Box, Seeable::Station, Seeable::Robot];

/// Where the robot is and how it moves: position, heading, applied speeds, odometry.
struct PoseSensor;

impl Sensor for PoseSensor {
    fn name(&self) -> &'static str {
        "pose"
    }
    fn part_names(&self) -> &'static [&'static str] {
        &["pose", "motion"]
    }
    fn reading_fields(&self) -> &'static [&'static str] {
        &["pose", "speed", "odometry"]
    }
    fn carried_by(&self, _: &RobotSpec) -> bool {
        true
    }
    fn parts(&self, robot: &RobotSpec) -> Vec<ObsPart> {
        // A holonomic robot's motion has its sideways speed too.
        let motion = if robot.drive.max_lateral() > 0.0 { 3 } else { 2 };
        vec![ObsPart::unit("pose", 4), ObsPart::unit("motion", motion)]
    }
    fn observe(&self, r: &FilteredEntityRef, around: &Around, out: &mut [f32]) {
        match (r.get::<Transform>(), r.get::<Robot>(), r.get::<AppliedDrive>()) {
            (Some(t), Some(robot), Some(applied)) => Self::values((t, robot, applied), around, out),
            _ => out.fill(0.0),
        }
    }
    fn observer(&self, world: &mut World) -> Option<Box<dyn SensorObserver>> {
        cached::<Self>(world)
    }
    fn read(&self, r: &FilteredEntityRef, _: &Around, reading: &mut SensorReading) {
        if let Some(t) = r.get::<Transform>() {
            let (p, heading) = pose(t);
            reading.pose = [p.x, p.y, heading];
        }
        if let Some(a) = r.get::<AppliedDrive>() {
            reading.speed = [a.linear, a.angular];
        }
        if let (Some(a), Some(robot)) = (r.get::<AppliedDrive>(), r.get::<Robot>())
            && robot.max_lateral > 0.0
        {
            reading.lateral = Some(a.lateral);
        }
        if let Some(o) = r.get::<Odometry>() {
            reading.odometry = [o.distance, o.collisions as f32];
        }
    }
    fn describe(&self, robot: &RobotSpec) -> serde_json::Value {
        let mut about =
            json!({ "radius": robot.radius, "max_speed": robot.max_speed, "max_turn": robot.max_turn.to_radians() });
        if let crate::scene::schema::DriveSpec::Holonomic { max_lateral } = robot.drive {
            about["drive"] = json!("holonomic");
            about["max_lateral"] = json!(max_lateral);
        } else {
            about["drive"] = json!("differential");
        }
        about
    }
    fn inspect(&self, r: &FilteredEntityRef, _: &Around, rows: &mut Vec<(String, String)>) {
        if let Some(t) = r.get::<Transform>() {
            let (p, heading) = pose(t);
            rows.push(("pose".into(), format!("({:.2}, {:.2}) m, {:.0}°", p.x, p.y, heading.to_degrees())));
        }
        let omni = r.get::<Robot>().is_some_and(|robot| robot.max_lateral > 0.0);
        if let Some(a) = r.get::<AppliedDrive>() {
            let sideways = if omni { format!(", {:.2} m/s left", a.lateral) } else { String::new() };
            rows.push(("applied".into(), format!("{:.2} m/s{sideways}, {:.0}°/s", a.linear, a.angular.to_degrees())));
        }
        if let Some(robot) = r.get::<Robot>() {
            let sideways = if omni { format!(", {:.2} m/s sideways", robot.max_lateral) } else { String::new() };
            let limits = format!("{:.2} m/s{sideways}, {:.0}°/s", robot.max_speed, robot.max_turn.to_degrees());
            rows.push(("limits".into(), limits));
        }
        if let Some(o) = r.get::<Odometry>() {
            rows.push(("distance".into(), format!("{:.2} m", o.distance)));
            rows.push(("collisions".into(), o.collisions.to_string()));
        }
    }
}

impl Values for PoseSensor {
    type Data = (&'static Transform, &'static Robot, &'static AppliedDrive);
    fn values(item: ROQueryItem<'_, '_, Self::Data>, around: &Around, out: &mut [f32]) {
        let (t, robot, applied) = item;
        let (p, heading) = pose(t);
        out[0] = p.x / around.arena.width;
        out[1] = p.y / around.arena.height;
        out[2] = heading.cos();
        out[3] = heading.sin();
        out[4] = applied.linear / robot.max_speed.max(f32::EPSILON);
        out[5] = applied.angular / robot.max_turn.max(f32::EPSILON);
        if let Some(sideways) = out.get_mut(6) {
            *sideways = applied.lateral / robot.max_lateral.max(f32::EPSILON);
        }
    }
}

/// The battery's level and whether it charges.
struct BatterySensor;

impl Sensor for BatterySensor {
    fn name(&self) -> &'static str {
        "battery"
    }
    fn part_names(&self) -> &'static [&'static str] {
        &["battery"]
    }
    fn reading_fields(&self) -> &'static [&'static str] {
        &["battery", "charging"]
    }
    fn carried_by(&self, _: &RobotSpec) -> bool {
        true
    }
    fn parts(&self, _: &RobotSpec) -> Vec<ObsPart> {
        vec![ObsPart::unit("battery", 2)]
    }
    fn observe(&self, r: &FilteredEntityRef, around: &Around, out: &mut [f32]) {
        match r.get::<Battery>() {
            Some(b) => Self::values(b, around, out),
            None => out.fill(0.0),
        }
    }
    fn observer(&self, world: &mut World) -> Option<Box<dyn SensorObserver>> {
        cached::<Self>(world)
    }
    fn read(&self, r: &FilteredEntityRef, _: &Around, reading: &mut SensorReading) {
        if let Some(b) = r.get::<Battery>() {
            reading.battery = b.level();
            reading.charging = b.charging;
        }
    }
    fn describe(&self, robot: &RobotSpec) -> serde_json::Value {
        let b = &robot.battery;
        json!({ "capacity": b.capacity, "idle_drain": b.idle_drain, "move_drain": b.move_drain, "turn_drain": b.turn_drain })
    }
    fn inspect(&self, r: &FilteredEntityRef, _: &Around, rows: &mut Vec<(String, String)>) {
        if let Some(b) = r.get::<Battery>() {
            let charging = if b.charging { ", charging" } else { "" };
            let text = format!("{:.1} / {:.0} ({:.0}%){charging}", b.charge, b.capacity, b.level() * 100.0);
            rows.push(("battery".into(), text));
        }
    }
}

impl Values for BatterySensor {
    type Data = &'static Battery;
    fn values(b: ROQueryItem<'_, '_, Self::Data>, _: &Around, out: &mut [f32]) {
        out[0] = b.level();
        out[1] = flag(b.charging);
    }
}

/// The bodies the robot touches.
struct BumpContact;

impl Sensor for BumpContact {
    fn name(&self) -> &'static str {
        "bump"
    }
    fn part_names(&self) -> &'static [&'static str] {
        &["contact"]
    }
    fn reading_fields(&self) -> &'static [&'static str] {
        &["bump"]
    }
    fn carried_by(&self, _: &RobotSpec) -> bool {
        true
    }
    fn parts(&self, _: &RobotSpec) -> Vec<ObsPart> {
        vec![ObsPart::unit("contact", 1)]
    }
    fn observe(&self, r: &FilteredEntityRef, around: &Around, out: &mut [f32]) {
        match r.get::<BumpSensor>() {
            Some(b) => Self::values(b, around, out),
            None => out.fill(0.0),
        }
    }
    fn observer(&self, world: &mut World) -> Option<Box<dyn SensorObserver>> {
        cached::<Self>(world)
    }
    fn read(&self, r: &FilteredEntityRef, around: &Around, reading: &mut SensorReading) {
        if let Some(b) = r.get::<BumpSensor>() {
            reading.bump = b
                .touching
                .iter()
                .zip(&b.bearings)
                .map(|(o, b)| Touch { with: (around.name_of)(*o), bearing: *b })
                .collect();
        }
    }
    fn describe(&self, _: &RobotSpec) -> serde_json::Value {
        json!({})
    }
    fn inspect(&self, r: &FilteredEntityRef, around: &Around, rows: &mut Vec<(String, String)>) {
        if let Some(b) = r.get::<BumpSensor>() {
            let touching: Vec<String> = b.touching.iter().map(|&e| (around.name_of)(e)).collect();
            rows.push(("bump".into(), if touching.is_empty() { "clear".into() } else { touching.join(", ") }));
        }
    }
}

impl Values for BumpContact {
    type Data = &'static BumpSensor;
    fn values(b: ROQueryItem<'_, '_, Self::Data>, _: &Around, out: &mut [f32]) {
        out[0] = flag(b.is_touching());
    }
}

/// What the gripper holds, the nearest free pen in reach, and the pens boxed.
struct GripperSensor;

impl Sensor for GripperSensor {
    fn name(&self) -> &'static str {
        "gripper"
    }
    fn part_names(&self) -> &'static [&'static str] {
        &["gripper"]
    }
    fn reading_fields(&self) -> &'static [&'static str] {
        &["grip", "boxed"]
    }
    fn carried_by(&self, _: &RobotSpec) -> bool {
        true
    }
    fn parts(&self, _: &RobotSpec) -> Vec<ObsPart> {
        vec![ObsPart::unit("gripper", 2)]
    }
    fn observe(&self, r: &FilteredEntityRef, around: &Around, out: &mut [f32]) {
        match r.get::<GripSensor>() {
            Some(g) => Self::values(g, around, out),
            None => out.fill(0.0),
        }
    }
    fn observer(&self, world: &mut World) -> Option<Box<dyn SensorObserver>> {
        cached::<Self>(world)
    }
    fn read(&self, r: &FilteredEntityRef, around: &Around, reading: &mut SensorReading) {
        if let Some(g) = r.get::<GripSensor>() {
            reading.grip =
                GripReading { holding: g.holding.map(around.name_of), in_reach: g.pen_in_reach.map(around.name_of) };
        }
        if let Some(g) = r.get::<Gripper>() {
            reading.boxed = g.boxed;
        }
    }
    fn describe(&self, robot: &RobotSpec) -> serde_json::Value {
        json!({ "reach": robot.grip_reach })
    }
    fn inspect(&self, r: &FilteredEntityRef, around: &Around, rows: &mut Vec<(String, String)>) {
        if let Some(g) = r.get::<GripSensor>() {
            rows.push(("holding".into(), g.holding.map_or("nothing".into(), around.name_of)));
            rows.push(("pen in reach".into(), g.pen_in_reach.map_or("none".into(), around.name_of)));
        }
        if let Some(g) = r.get::<Gripper>() {
            rows.push(("boxed".into(), g.boxed.to_string()));
        }
    }
}

impl Values for GripperSensor {
    type Data = &'static GripSensor;
    fn values(grip: ROQueryItem<'_, '_, Self::Data>, _: &Around, out: &mut [f32]) {
        out[0] = flag(grip.holding.is_some());
        out[1] = flag(grip.pen_in_reach.is_some());
    }
}

/// Pens, boxes, stations and robots inside the camera's cone.
struct Camera;

impl Sensor for Camera {
    fn name(&self) -> &'static str {
        "camera"
    }
    fn part_names(&self) -> &'static [&'static str] {
        &["camera"]
    }
    fn reading_fields(&self) -> &'static [&'static str] {
        &["camera"]
    }
    fn carried_by(&self, _: &RobotSpec) -> bool {
        true
    }
    fn parts(&self, _: &RobotSpec) -> Vec<ObsPart> {
        vec![ObsPart::unit("camera", 4 * CAMERA_KINDS.len())]
    }
    fn observe(&self, r: &FilteredEntityRef, around: &Around, out: &mut [f32]) {
        match (r.get::<CameraView>(), r.get::<RobotCamera>()) {
            (Some(view), Some(optics)) => Self::values((view, optics), around, out),
            _ => out.fill(0.0),
        }
    }
    fn observer(&self, world: &mut World) -> Option<Box<dyn SensorObserver>> {
        cached::<Self>(world)
    }
    fn read(&self, r: &FilteredEntityRef, around: &Around, reading: &mut SensorReading) {
        if let Some(view) = r.get::<CameraView>() {
            reading.camera = view
                .seen
                .iter()
                .map(|s| Detection {
                    kind: kind_name(s.kind),
                    name: (around.name_of)(s.entity),
                    distance: s.distance,
                    bearing: s.bearing,
                })
                .collect();
        }
    }
    fn describe(&self, robot: &RobotSpec) -> serde_json::Value {
        let c = &robot.camera;
        json!({ "range": c.range, "fov": c.fov.to_radians(), "period": c.period })
    }
    fn inspect(&self, r: &FilteredEntityRef, around: &Around, rows: &mut Vec<(String, String)>) {
        let Some(view) = r.get::<CameraView>() else { return };
        rows.push(("camera".into(), format!("{} seen (step {})", view.seen.len(), view.step)));
        for s in view.seen.iter().take(12) {
            let what = format!("{} {}", kind_name(s.kind), (around.name_of)(s.entity));
            rows.push((what, format!("{:5.2} m {:+5.0}°", s.distance, s.bearing.to_degrees())));
        }
    }
}

impl Values for Camera {
    type Data = (&'static CameraView, &'static RobotCamera);
    fn values(item: ROQueryItem<'_, '_, Self::Data>, _: &Around, out: &mut [f32]) {
        let (view, optics) = item;
        for (k, kind) in CAMERA_KINDS.iter().enumerate() {
            out[4 * k..4 * k + 4].copy_from_slice(&match view.nearest(*kind) {
                Some(s) => [1.0, (s.distance / optics.range).min(1.0), s.bearing.sin(), s.bearing.cos()],
                None => [0.0; 4],
            });
        }
    }
}

/// A 2D lidar's beams, for a robot the scene gives a range sensor.
struct Range;

impl Sensor for Range {
    fn name(&self) -> &'static str {
        "range"
    }
    fn part_names(&self) -> &'static [&'static str] {
        &["range"]
    }
    fn reading_fields(&self) -> &'static [&'static str] {
        &["range"]
    }
    fn carried_by(&self, robot: &RobotSpec) -> bool {
        robot.range_sensor.is_some()
    }
    fn parts(&self, robot: &RobotSpec) -> Vec<ObsPart> {
        let rays = robot.range_sensor.as_ref().map_or(0, |s| s.rays as usize);
        vec![ObsPart::unit("range", rays)]
    }
    fn observe(&self, r: &FilteredEntityRef, around: &Around, out: &mut [f32]) {
        match (r.get::<RangeSensor>(), r.get::<RangeScan>()) {
            (Some(sensor), Some(scan)) => Self::values((sensor, scan), around, out),
            _ => out.fill(0.0),
        }
    }
    fn observer(&self, world: &mut World) -> Option<Box<dyn SensorObserver>> {
        cached::<Self>(world)
    }
    fn read(&self, r: &FilteredEntityRef, _: &Around, reading: &mut SensorReading) {
        reading.range = r.get::<RangeScan>().map(|scan| scan.distances.clone());
    }
    fn describe(&self, robot: &RobotSpec) -> serde_json::Value {
        let Some(spec) = &robot.range_sensor else { return json!({}) };
        let s = RangeSensor::from(spec);
        let (angle_min, angle_increment) = s.angles();
        json!({
            "rays": s.rays, "angle_min": angle_min, "angle_increment": angle_increment, "range_max": s.range,
            "period": s.period,
        })
    }
    fn inspect(&self, r: &FilteredEntityRef, _: &Around, rows: &mut Vec<(String, String)>) {
        let (Some(sensor), Some(scan)) = (r.get::<RangeSensor>(), r.get::<RangeScan>()) else { return };
        rows.push((
            "range sensor".into(),
            format!("{} beams, {:.0}°, {:.1} m", sensor.rays, sensor.fov.to_degrees(), sensor.range),
        ));
        let (first, step) = sensor.angles();
        let nearest = scan.distances.iter().enumerate().min_by(|a, b| a.1.total_cmp(b.1));
        if let Some((k, d)) = nearest {
            let angle = (first + step * k as f32).to_degrees();
            rows.push(("nearest beam".into(), format!("{d:.2} m at {angle:+.0}° (step {})", scan.step)));
        }
    }
    /// Each beam to where it ended, with a dot where it met something.
    fn marks(&self, r: &FilteredEntityRef, _: &Around, marks: &mut Vec<Mark>) {
        let (Some(sensor), Some(scan), Some(t)) = (r.get::<RangeSensor>(), r.get::<RangeScan>(), r.get::<Transform>())
        else {
            return;
        };
        let (p, heading) = pose(t);
        for (end, hit) in sensor.beam_ends(p, heading, &scan.distances) {
            marks.push(Mark::Line { from: p, to: end, colour: RANGE_BEAM });
            if hit {
                marks.push(Mark::Dot { at: end, radius: 0.015, colour: RANGE_HIT });
            }
        }
    }
}

/// A range sensor's beams in the app, and the points where they met something.
const RANGE_BEAM: [f32; 4] = [0.75, 0.10, 0.65, 0.35];
const RANGE_HIT: [f32; 4] = [0.75, 0.10, 0.65, 1.0];

impl Values for Range {
    type Data = (&'static RangeSensor, &'static RangeScan);
    fn values(item: ROQueryItem<'_, '_, Self::Data>, _: &Around, out: &mut [f32]) {
        let (sensor, scan) = item;
        let mut beams = scan.distances.iter();
        for o in out.iter_mut() {
            // A scan not taken yet reads as nothing met.
            *o = beams.next().map_or(1.0, |d| d / sensor.range);
        }
    }
}
