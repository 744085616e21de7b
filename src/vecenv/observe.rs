//! What an environment's robot observes, defined once: the vector the Python environments have
//! built from a program's readings, here built from the robot's own components, plus its range
//! sensor's beams when it has one.
//!
//! Layout (float32, each in [-1, 1]), [`BASE`] values:
//!
//! | index | value |
//! |---|---|
//! | 0, 1 | position over the arena's width and height |
//! | 2, 3 | heading: cos, sin |
//! | 4, 5 | applied linear and angular speed over the robot's maxima |
//! | 6 | battery level, 0..1 |
//! | 7, 8, 9, 10 | charging, touching something, holding a pen, a pen in reach (0 or 1) |
//! | 11 + 4k .. 14 + 4k | for k = pen, box, station, robot: the nearest the camera sees — seen (0 or 1), distance over the camera's range, sin and cos of its bearing |
//! | 27 | messages delivered to it this step, over 10 (at most 1) |
//!
//! then, for a robot with a range sensor of K beams, K values: each beam's distance over the
//! sensor's range, in the order of its angles; then, in an environment with message vectors of
//! M values, M values: the mean of the vectors delivered to it this step (zeros when none). An
//! environment may observe some [`Part`]s only: they are taken from this layout, in its order.

use bevy::prelude::*;

use crate::comms::{Payload, RadioIn};
use crate::robot::{
    AppliedDrive, Battery, BumpSensor, CameraView, GripSensor, RangeScan, RangeSensor, Robot, RobotCamera, pose,
};
use crate::world::{Arena, Seeable};

/// Values before the range beams.
pub const BASE: usize = 28;

/// The kinds of thing the camera part reports, in order.
pub const KINDS: [Seeable; 4] = [Seeable::Pen, Seeable::Box, Seeable::Station, Seeable::Robot];

/// The components an observation is made of.
pub type ObservedItem<'a> = (
    &'a Robot,
    &'a Transform,
    &'a AppliedDrive,
    &'a Battery,
    &'a BumpSensor,
    &'a GripSensor,
    &'a CameraView,
    &'a RobotCamera,
    Option<&'a RadioIn>,
    Option<(&'a RangeSensor, &'a RangeScan)>,
);

/// Values of one robot's observation: [`BASE`], its range sensor's beams, `message` values.
pub fn size(range: Option<&RangeSensor>, message: usize) -> usize {
    BASE + range.map_or(0, |s| s.rays as usize) + message
}

/// The parts of the layout, in its order; an environment observes some or all of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Part {
    /// Position and heading (4 values).
    Pose,
    /// Applied speeds (2).
    Motion,
    /// Battery level and charging (2).
    Battery,
    /// Touching something (1).
    Contact,
    /// Holding a pen, a pen in reach (2).
    Gripper,
    /// The nearest pen, box, station and robot the camera sees (16).
    Camera,
    /// Messages delivered this step (1).
    Heard,
    /// The range sensor's beams (K).
    Range,
    /// The mean message vector heard (M).
    Message,
}

impl Part {
    /// Every part, in layout order, by the names the Python environments take.
    pub const ALL: [(&'static str, Part); 9] = [
        ("pose", Part::Pose),
        ("motion", Part::Motion),
        ("battery", Part::Battery),
        ("contact", Part::Contact),
        ("gripper", Part::Gripper),
        ("camera", Part::Camera),
        ("heard", Part::Heard),
        ("range", Part::Range),
        ("message", Part::Message),
    ];

    /// The part's name, as the Python environments take it.
    pub fn name(self) -> &'static str {
        Self::ALL.iter().find(|(_, p)| *p == self).map_or("?", |(n, _)| n)
    }

    /// The parts named, in layout order; an unknown name is an error listing the known ones.
    pub fn parse_list<'a>(names: impl IntoIterator<Item = &'a str>) -> Result<Vec<Part>, String> {
        let mut parts = Vec::new();
        for name in names {
            let Some(&(_, part)) = Self::ALL.iter().find(|(n, _)| *n == name) else {
                let known: Vec<&str> = Self::ALL.iter().map(|(n, _)| *n).collect();
                return Err(format!("observation part \"{name}\" is not one of {}", known.join(", ")));
            };
            parts.push(part);
        }
        parts.sort_unstable();
        parts.dedup();
        Ok(parts)
    }

    /// Where the part lies in the full layout of a robot with `beams` range beams and `message`
    /// message values.
    pub fn span(self, beams: usize, message: usize) -> std::ops::Range<usize> {
        match self {
            Part::Pose => 0..4,
            Part::Motion => 4..6,
            Part::Battery => 6..8,
            Part::Contact => 8..9,
            Part::Gripper => 9..11,
            Part::Camera => 11..27,
            Part::Heard => 27..28,
            Part::Range => BASE..BASE + beams,
            Part::Message => BASE + beams..BASE + beams + message,
        }
    }
}

/// Values of an observation of `parts` (all of them when `None`) for a robot with `beams` range
/// beams and `message` message values.
pub fn parts_size(parts: Option<&[Part]>, beams: usize, message: usize) -> usize {
    match parts {
        None => BASE + beams + message,
        Some(parts) => parts.iter().map(|p| p.span(beams, message).len()).sum(),
    }
}

/// Copies `parts` of a full observation `full` (of a robot with `beams` beams and `message`
/// message values) into `out`, one after the other.
pub fn select(full: &[f32], parts: &[Part], beams: usize, message: usize, out: &mut [f32]) {
    let mut at = 0;
    for part in parts {
        let span = part.span(beams, message);
        let n = span.len();
        out[at..at + n].copy_from_slice(&full[span]);
        at += n;
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

/// Writes one robot's observation into `out` (exactly [`size`] values).
pub fn observe(item: ObservedItem, arena: &Arena, out: &mut [f32]) {
    let (robot, transform, applied, battery, bump, grip, camera, optics, inbox, range) = item;
    let (p, heading) = pose(transform);
    let flag = |b: bool| if b { 1.0 } else { 0.0 };
    out[0] = p.x / arena.width;
    out[1] = p.y / arena.height;
    out[2] = heading.cos();
    out[3] = heading.sin();
    out[4] = applied.linear / robot.max_speed.max(f32::EPSILON);
    out[5] = applied.angular / robot.max_turn.max(f32::EPSILON);
    out[6] = battery.level();
    out[7] = flag(battery.charging);
    out[8] = flag(bump.is_touching());
    out[9] = flag(grip.holding.is_some());
    out[10] = flag(grip.pen_in_reach.is_some());
    for (k, kind) in KINDS.iter().enumerate() {
        let at = 11 + 4 * k;
        out[at..at + 4].copy_from_slice(&match camera.nearest(*kind) {
            Some(s) => [1.0, (s.distance / optics.range).min(1.0), s.bearing.sin(), s.bearing.cos()],
            None => [0.0; 4],
        });
    }
    out[27] = (inbox.map_or(0, |m| m.0.len()) as f32 / 10.0).min(1.0);
    let mut at = BASE;
    if let Some((sensor, scan)) = range {
        for (o, d) in out[BASE..].iter_mut().zip(&scan.distances) {
            *o = d / sensor.range;
        }
        at += sensor.rays as usize;
    }
    let message = &mut out[at..];
    if !message.is_empty() {
        message.fill(0.0);
        let heard = inbox.map_or(0, |m| m.0.iter().filter(|m| add_message(m.content(), message)).count());
        if heard > 0 {
            message.iter_mut().for_each(|v| *v /= heard as f32);
        }
    }
    for v in out.iter_mut() {
        *v = if v.is_finite() { v.clamp(-1.0, 1.0) } else { 0.0 };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::robot::Sighting;

    #[test]
    fn a_robots_observation_follows_the_documented_layout() {
        let robot = Robot { index: 0, radius: 0.1, max_speed: 0.5, max_turn: 2.0 };
        let transform =
            Transform::from_xyz(1.0, 0.5, 0.0).with_rotation(Quat::from_rotation_z(std::f32::consts::FRAC_PI_2));
        let applied = AppliedDrive { linear: 0.25, angular: -1.0 };
        let mut battery = Battery::new(10.0, 4.0, 0.0, 0.0, 0.0);
        battery.charging = true;
        let bump = BumpSensor::default();
        let grip = GripSensor { holding: None, pen_in_reach: Some(Entity::PLACEHOLDER) };
        let camera = CameraView {
            seen: vec![Sighting { entity: Entity::PLACEHOLDER, kind: Seeable::Box, distance: 0.75, bearing: 0.5 }],
            step: 0,
        };
        let optics = RobotCamera { fov: 1.5, range: 1.5, period: 1 };
        let sensor = RangeSensor { rays: 3, fov: 3.0, range: 2.0, period: 1 };
        let scan = RangeScan { distances: vec![0.5, 2.0, 1.0], step: 0 };
        let arena = Arena { width: 4.0, height: 2.0 };
        let mut out = vec![9.0; size(Some(&sensor), 0)];
        observe(
            (&robot, &transform, &applied, &battery, &bump, &grip, &camera, &optics, None, Some((&sensor, &scan))),
            &arena,
            &mut out,
        );
        let near = |a: f32, b: f32| (a - b).abs() < 1e-6;
        assert_eq!(out.len(), BASE + 3);
        assert!(near(out[0], 0.25) && near(out[1], 0.25), "{out:?}");
        assert!(near(out[2], 0.0) && near(out[3], 1.0), "facing up: {out:?}");
        assert!(near(out[4], 0.5) && near(out[5], -0.5) && near(out[6], 0.4), "{out:?}");
        assert_eq!(&out[7..11], &[1.0, 0.0, 0.0, 1.0]);
        assert_eq!(&out[11..15], &[0.0; 4], "no pen seen");
        assert!(near(out[15], 1.0) && near(out[16], 0.5) && near(out[17], 0.5f32.sin()) && near(out[18], 0.5f32.cos()));
        assert_eq!(&out[19..27], &[0.0; 8]);
        assert_eq!(out[27], 0.0);
        assert_eq!(&out[28..], &[0.25, 1.0, 0.5]);
    }
}
