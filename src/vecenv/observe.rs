//! What an environment's robot observes, defined once: each sensor it carries gives its parts,
//! through the sensor registry ([`crate::robot::registry`]) — the same code a program robot's
//! `observation` comes from — then, in an environment with message vectors, the mean message
//! heard.
//!
//! Layout of a robot of no kind (float32, each in [-1, 1]), [`BASE`] values:
//!
//! | index | part | value |
//! |---|---|---|
//! | 0, 1 | pose | position over the arena's width and height |
//! | 2, 3 | pose | heading: cos, sin |
//! | 4, 5 | motion | applied linear and angular speed over the robot's maxima |
//! | 6, 7 | battery | battery level, 0..1; charging (0 or 1) |
//! | 8 | contact | touching something (0 or 1) |
//! | 9, 10 | gripper | holding a pen, a pen in reach (0 or 1) |
//! | 11 + 4k .. 14 + 4k | camera | for k = pen, box, station, robot: the nearest the camera sees — seen (0 or 1), distance over the camera's range, sin and cos of its bearing |
//! | 27 | heard | messages delivered to it this step, over 10 (at most 1) |
//!
//! then, for a robot with a range sensor of K beams, K values (`range`): each beam's distance
//! over the sensor's range, in the order of its angles; then, in an environment with message
//! vectors of M values, M values (`message`): the mean of the vectors delivered to it this step
//! (zeros when none). An environment may observe some parts only: they are taken from this
//! layout, in its order.

use std::ops::Range;

use bevy::prelude::*;

use crate::comms::{Payload, RadioIn};
use crate::robot::registry::{Around, Layout, Observers, SensorFault, SensorRegistry};
use crate::scene::schema::RobotSpec;

/// Values of a robot of no kind before its range beams.
pub const BASE: usize = 28;

/// The part that is no sensor's: the mean message vector heard.
pub const MESSAGE: &str = "message";

/// Every part name an environment may observe: each registered sensor's, then `message`.
pub fn part_names(sensors: &SensorRegistry) -> Vec<&'static str> {
    let mut names = sensors.part_names();
    names.push(MESSAGE);
    names
}

/// The parts named, each once, sorted; an unknown name is an error listing the known ones.
pub fn parse_parts<'a>(
    sensors: &SensorRegistry,
    names: impl IntoIterator<Item = &'a str>,
) -> Result<Vec<String>, String> {
    let known = part_names(sensors);
    let mut parts = Vec::new();
    for name in names {
        if !known.contains(&name) {
            return Err(format!("observation part \"{name}\" is not one of {}", known.join(", ")));
        }
        parts.push(name.to_string());
    }
    parts.sort_unstable();
    parts.dedup();
    Ok(parts)
}

/// How one driven robot's observation is made: its sensors' layout, the spans of it observed,
/// and whether the message part is.
#[derive(Debug, Clone, PartialEq)]
pub struct RobotView {
    pub layout: Layout,
    /// The spans of `layout` observed, in layout order (all of it without parts named).
    spans: Vec<Range<usize>>,
    /// Whether all of `layout` is observed, in one span.
    whole: bool,
    /// Values of the message part observed (0: none).
    pub message: usize,
}

impl RobotView {
    /// The view of a robot of `spec` in an environment observing `parts` (all when `None`) with
    /// message vectors of `message` values.
    pub fn new(sensors: &SensorRegistry, spec: &RobotSpec, parts: Option<&[String]>, message: usize) -> Self {
        let layout = sensors.layout(spec);
        let spans = layout.spans(parts);
        let whole = parts.is_none();
        let message = if parts.is_none_or(|p| p.iter().any(|p| p == MESSAGE)) { message } else { 0 };
        Self { layout, spans, whole, message }
    }

    /// Values it observes.
    pub fn size(&self) -> usize {
        self.spans.iter().map(|s| s.len()).sum::<usize>() + self.message
    }

    /// The parts it observes, in order, each with its size (and the message part's last): robots
    /// whose lists are equal observe alike.
    pub fn observed_parts(&self) -> Vec<(&'static str, usize)> {
        let observed = |span: &Range<usize>| self.spans.contains(span);
        let parts = self.layout.parts.iter().filter(|(_, s)| observed(s)).map(|(p, s)| (p.name, s.len()));
        parts.chain((self.message > 0).then_some(("message", self.message))).collect()
    }

    /// Values of the part named in what it observes (0 when not observed or not carried).
    pub fn part_size(&self, name: &str) -> usize {
        let observed = |span: &Range<usize>| self.spans.contains(span);
        self.layout.parts.iter().filter(|(p, s)| p.name == name && observed(s)).map(|(_, s)| s.len()).sum()
    }

    /// Writes the robot's observation (exactly [`RobotView::size`] values) into `out`, through
    /// the sensors' `observers` of `world`; `full` is room for its whole layout when only some
    /// parts are observed. A sensor that panics is the fault returned.
    #[allow(clippy::too_many_arguments)]
    pub fn observe(
        &self,
        sensors: &SensorRegistry,
        observers: &mut Observers,
        world: &World,
        robot: Entity,
        around: &Around,
        full: &mut Vec<f32>,
        out: &mut [f32],
    ) -> Result<(), SensorFault> {
        let n = self.layout.size;
        if self.whole {
            sensors.observe_in(observers, &self.layout, world, robot, around, &mut out[..n])?;
        } else {
            full.resize(n, 0.0);
            sensors.observe_in(observers, &self.layout, world, robot, around, full)?;
            let mut at = 0;
            for span in &self.spans {
                out[at..at + span.len()].copy_from_slice(&full[span.clone()]);
                at += span.len();
            }
        }
        let at = out.len() - self.message;
        let message = &mut out[at..];
        if !message.is_empty() {
            mean_message(world.get::<RadioIn>(robot), message);
        }
        Ok(())
    }
}

/// The mean of the message vectors of `out.len()` values in `inbox`, clamped to [-1, 1] (zeros
/// when none).
fn mean_message(inbox: Option<&RadioIn>, out: &mut [f32]) {
    out.fill(0.0);
    let heard = inbox.map_or(0, |m| m.0.iter().filter(|m| add_message(m.content(), out)).count());
    if heard > 0 {
        out.iter_mut().for_each(|v| *v /= heard as f32);
    }
    for v in out.iter_mut() {
        *v = if v.is_finite() { v.clamp(-1.0, 1.0) } else { 0.0 };
    }
}

/// A message vector as it travels: `{"v": [values]}`, what the Python environments send.
pub fn message_payload(values: &[f32]) -> serde_json::Value {
    serde_json::json!({ "v": values })
}

/// Adds the values of a delivered message vector of `out.len()` values to `out`; whether it was
/// one (anything else heard is not).
fn add_message(payload: &Payload, out: &mut [f32]) -> bool {
    let Payload::Json(v) = payload else { return false };
    let Some(values) = v.get("v").and_then(|v| v.as_array()).filter(|a| a.len() == out.len()) else {
        return false;
    };
    for (o, x) in out.iter_mut().zip(values) {
        *o += x.as_f64().unwrap_or(0.0) as f32;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::robot::{
        AppliedDrive, Battery, BumpSensor, CameraView, GripSensor, RangeScan, RangeSensor, Robot, RobotCamera, Sighting,
    };
    use crate::scene::schema::RangeSensorSpec;
    use crate::world::{Arena, Seeable};

    #[test]
    fn a_robots_observation_follows_the_documented_layout() {
        let sensors = crate::run::standard_sensors();
        let mut spec = RobotSpec::new("a", 1.0, 0.5, 90.0);
        spec.range_sensor = Some(RangeSensorSpec { rays: 3, fov: 171.9, range: 2.0, ..Default::default() });
        let mut world = World::new();
        let mut battery = Battery::new(10.0, 4.0, 0.0, 0.0, 0.0);
        battery.charging = true;
        let camera = CameraView {
            seen: vec![Sighting { entity: Entity::PLACEHOLDER, kind: Seeable::Box, distance: 0.75, bearing: 0.5 }],
            step: 0,
        };
        let e = world
            .spawn((
                Robot { index: 0, radius: 0.1, max_speed: 0.5, max_turn: 2.0, max_lateral: 0.0 },
                Transform::from_xyz(1.0, 0.5, 0.0).with_rotation(Quat::from_rotation_z(std::f32::consts::FRAC_PI_2)),
                AppliedDrive { linear: 0.25, angular: -1.0, lateral: 0.0 },
                battery,
                BumpSensor::default(),
                GripSensor { holding: None, pen_in_reach: Some(Entity::PLACEHOLDER) },
                camera,
                RobotCamera { fov: 1.5, range: 1.5, period: 1 },
                (
                    RangeSensor { rays: 3, fov: 3.0, range: 2.0, period: 1 },
                    RangeScan { distances: vec![0.5, 2.0, 1.0], step: 0 },
                ),
            ))
            .id();
        let view = RobotView::new(sensors, &spec, None, 0);
        let names: Vec<&str> = view.layout.parts.iter().map(|(p, _)| p.name).collect();
        assert_eq!(names, ["pose", "motion", "battery", "contact", "gripper", "camera", "heard", "range"]);
        assert_eq!(view.size(), BASE + 3);
        let name_of = |e: Entity| e.to_string();
        let around = Around { arena: Arena { width: 4.0, height: 2.0 }, name_of: &name_of };
        let mut observers = sensors.observers(&mut world);
        let mut out = vec![9.0; view.size()];
        view.observe(sensors, &mut observers, &world, e, &around, &mut Vec::new(), &mut out).unwrap();
        // The same values read by type, as the program protocol's `observation` reads them.
        let mut by_type = vec![9.0; view.size()];
        let robot = bevy::ecs::world::FilteredEntityRef::from(world.entity(e));
        sensors.observe(&view.layout, &robot, &around, &mut by_type).unwrap();
        assert_eq!(by_type, out);
        let near = |a: f32, b: f32| (a - b).abs() < 1e-6;
        assert!(near(out[0], 0.25) && near(out[1], 0.25), "{out:?}");
        assert!(near(out[2], 0.0) && near(out[3], 1.0), "facing up: {out:?}");
        assert!(near(out[4], 0.5) && near(out[5], -0.5) && near(out[6], 0.4), "{out:?}");
        assert_eq!(&out[7..11], &[1.0, 0.0, 0.0, 1.0]);
        assert_eq!(&out[11..15], &[0.0; 4], "no pen seen");
        assert!(near(out[15], 1.0) && near(out[16], 0.5) && near(out[17], 0.5f32.sin()) && near(out[18], 0.5f32.cos()));
        assert_eq!(&out[19..27], &[0.0; 8]);
        assert_eq!(out[27], 0.0, "no radio inbox: nothing heard");
        assert_eq!(&out[28..], &[0.25, 1.0, 0.5]);

        // Some parts, in layout order whatever order they are named in, and the message part.
        let parts = parse_parts(sensors, ["range", "pose", "message"]).unwrap();
        let view = RobotView::new(sensors, &spec, Some(&parts), 2);
        assert_eq!((view.size(), view.part_size("range"), view.part_size("camera")), (4 + 3 + 2, 3, 0));
        let mut some = vec![9.0; view.size()];
        view.observe(sensors, &mut observers, &world, e, &around, &mut Vec::new(), &mut some).unwrap();
        assert_eq!(&some[..4], &out[..4]);
        assert_eq!(&some[4..7], &out[28..]);
        assert_eq!(&some[7..], &[0.0, 0.0], "no messages heard");
        let e = parse_parts(sensors, ["pose", "lidar"]).unwrap_err();
        assert!(e.starts_with("observation part \"lidar\" is not one of pose, motion, battery"), "{e}");
    }
}
