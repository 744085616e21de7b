//! A signal-strength sensor for crsim, registered by name from outside crsim's own code: each
//! robot that carries `"signal"` hears every other robot whose radio reaches it, at the power a
//! log-distance path-loss model gives for their distance (seed 000's range and link model decide
//! who is heard; this model decides how loud).
//!
//! Everything a sensor needs lives in this crate: the [`Sensor`] every reader goes through (the
//! program protocol's readings under `sensors.signal` and its `hello`, `crsim.VecEnv`-style
//! observations as the part `signal`, the app's inspector), the component its sense system keeps
//! up to date in crsim's sense stage, and the [`SignalPlugin`] that registers both. A scene asks
//! for it by name in a robot's or kind's `sensors` list; `crsim-signal` (this crate's binary) is
//! crsim's command line with the plugin added.

use bevy::ecs::world::FilteredEntityRef;
use bevy::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crsim::comms::model::{EffectiveLink, effective_link};
use crsim::comms::radio::Radio;
use crsim::robot::registry::{Around, Carried, Mark, ObsPart, RegisterSensor, Sensor, SensorReading, SensorRegistry};
use crsim::robot::{Robot, pose, wrap_angle};
use crsim::scene::schema::RobotSpec;
use crsim::sim::{Env, FixedSense, PerEnv, SenseSystems};

/// The name scenes and readers know the sensor by.
pub const NAME: &str = "signal";

/// Robots beyond which the `signal` part's count reads 1.
const HEARD_FULL: f32 = 10.0;

/// The log-distance path-loss model: a robot `d` metres away is received at
/// `tx_power_dbm - loss_at_1m_db - 10 · exponent · log10(d / 1 m)` dBm (at 1 m for anything
/// nearer), and heard when that is at least `sensitivity_dbm`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PathLoss {
    pub tx_power_dbm: f32,
    pub loss_at_1m_db: f32,
    /// 2 in free space; 2.7 to 3.5 indoors.
    pub exponent: f32,
    pub sensitivity_dbm: f32,
}

impl Default for PathLoss {
    /// A 0 dBm 2.4 GHz radio in free space (40 dB lost in the first metre), heard down to -90 dBm.
    fn default() -> Self {
        Self { tx_power_dbm: 0.0, loss_at_1m_db: 40.0, exponent: 2.0, sensitivity_dbm: -90.0 }
    }
}

impl PathLoss {
    /// The power received from a transmitter `distance` metres away, dBm.
    pub fn received_dbm(&self, distance: f32) -> f32 {
        self.tx_power_dbm - self.loss_at_1m_db - 10.0 * self.exponent * distance.max(1.0).log10()
    }

    /// The power a robot hears a transmitter at, over the radio's link from it: none when the
    /// link is down, the transmitter is beyond its range, or the signal is below the sensitivity.
    pub fn heard_dbm(&self, distance: f32, link: &EffectiveLink) -> Option<f32> {
        let in_range = link.range.is_none_or(|r| distance <= r);
        let dbm = self.received_dbm(distance);
        (link.up && in_range && dbm >= self.sensitivity_dbm).then_some(dbm)
    }

    /// `dbm` as a value in [0, 1]: 0 at the sensitivity, 1 at the power received at 1 m.
    pub fn unit(&self, dbm: f32) -> f32 {
        let top = self.tx_power_dbm - self.loss_at_1m_db;
        ((dbm - self.sensitivity_dbm) / (top - self.sensitivity_dbm)).clamp(0.0, 1.0)
    }
}

/// One robot heard: its name, the power it is received at, how far it is and where (radians from
/// the listener's heading, positive to the left, as crsim's camera gives bearings).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Heard {
    pub robot: String,
    pub dbm: f32,
    pub distance: f32,
    pub bearing: f32,
}

/// What a robot carrying the sensor heard in this step's sense stage, strongest first.
#[derive(Component, Debug, Clone, Default, PartialEq)]
pub struct SignalHeard(pub Vec<Heard>);

/// Registers the sensor and its sense system.
#[derive(Debug, Clone, Default)]
pub struct SignalPlugin {
    pub model: PathLoss,
}

impl Plugin for SignalPlugin {
    fn build(&self, app: &mut App) {
        app.register_sensor(SignalSensor(self.model))
            .insert_resource(SignalModel(self.model))
            .add_systems(FixedSense, (attach, sense).chain().in_set(SenseSystems::Sensors));
    }
}

/// The model the sense system uses (the sensor's own copy describes it to readers).
#[derive(Resource, Debug, Clone, Copy)]
struct SignalModel(PathLoss);

/// Gives each robot that carries the sensor, when it appears, the component it reads.
fn attach(
    mut commands: Commands,
    registry: Res<SensorRegistry>,
    robots: Query<(Entity, &Carried), (With<Robot>, Added<Carried>)>,
) {
    let Some(id) = registry.id(NAME) else { return };
    for (robot, carried) in &robots {
        if carried.0.contains(&id) {
            commands.entity(robot).insert(SignalHeard::default());
        }
    }
}

/// Every carrier hears every other robot of its environment whose radio reaches it.
fn sense(
    model: Res<SignalModel>,
    radios: Res<PerEnv<Radio>>,
    robots: Query<(&Name, &Transform, Option<&Env>), With<Robot>>,
    mut carriers: Query<(&Name, &Transform, Option<&Env>, &mut SignalHeard)>,
) {
    for (name, at, env, mut heard) in &mut carriers {
        let env = env.copied().unwrap_or(Env::FIRST);
        heard.0.clear();
        let Some(radio) = radios.0.get(env.index()).map(|r| &r.0) else { continue };
        let Some(me) = radio.robot(name.as_str()) else { continue };
        for (other, there, other_env) in &robots {
            if other == name || other_env.copied().unwrap_or(Env::FIRST) != env {
                continue;
            }
            let Some(sender) = radio.robot(other.as_str()) else { continue };
            let link =
                effective_link(&radio.system, &sender.params, &me.params, radio.pair(other.as_str(), name.as_str()));
            let (here, heading) = pose(at);
            let to = there.translation.truncate() - here;
            if let Some(dbm) = model.0.heard_dbm(to.length(), &link) {
                let bearing = wrap_angle(to.to_angle() - heading);
                heard.0.push(Heard { robot: other.to_string(), dbm, distance: to.length(), bearing });
            }
        }
        heard.0.sort_by(|a, b| b.dbm.total_cmp(&a.dbm).then_with(|| a.robot.cmp(&b.robot)));
    }
}

/// The sensor as crsim's readers see it.
struct SignalSensor(PathLoss);

impl SignalSensor {
    fn heard<'a>(&self, robot: &'a FilteredEntityRef) -> &'a [Heard] {
        robot.get::<SignalHeard>().map_or(&[], |h| &h.0)
    }
}

impl Sensor for SignalSensor {
    fn name(&self) -> &'static str {
        NAME
    }
    fn part_names(&self) -> &'static [&'static str] {
        &["signal"]
    }
    fn reading_fields(&self) -> &'static [&'static str] {
        &[]
    }
    /// Only robots that list it: a robot of no sensors list keeps crsim's own layout.
    fn carried_by(&self, robot: &RobotSpec) -> bool {
        robot.sensors.as_ref().is_some_and(|s| s.iter().any(|n| n == NAME))
    }
    /// The strongest robot heard (0 at the sensitivity, 1 at a metre) and how many are heard.
    fn parts(&self, _: &RobotSpec) -> Vec<ObsPart> {
        vec![ObsPart { name: "signal", size: 2, low: 0.0, high: 1.0 }]
    }
    fn observe(&self, robot: &FilteredEntityRef, _: &Around, out: &mut [f32]) {
        let heard = self.heard(robot);
        out[0] = heard.first().map_or(0.0, |h| self.0.unit(h.dbm));
        out[1] = (heard.len() as f32 / HEARD_FULL).min(1.0);
    }
    fn read(&self, robot: &FilteredEntityRef, _: &Around, reading: &mut SensorReading) {
        reading.sensors.insert(NAME, json!(self.heard(robot)));
    }
    fn describe(&self, _: &RobotSpec) -> serde_json::Value {
        let m = &self.0;
        json!({
            "tx_power_dbm": m.tx_power_dbm,
            "loss_at_1m_db": m.loss_at_1m_db,
            "exponent": m.exponent,
            "sensitivity_dbm": m.sensitivity_dbm,
        })
    }
    fn inspect(&self, robot: &FilteredEntityRef, _: &Around, rows: &mut Vec<(String, String)>) {
        let heard = self.heard(robot);
        rows.push(("heard".into(), format!("{} robots", heard.len())));
        if let Some(h) = heard.first() {
            rows.push(("strongest".into(), format!("{} at {:.1} dBm, {:.1} m", h.robot, h.dbm, h.distance)));
        }
    }
    /// Recordings keep what it heard each step (`/sensors`), and a replay puts it back.
    fn recorded(&self) -> bool {
        true
    }
    fn record(&self, robot: &FilteredEntityRef, _: &Around) -> Option<serde_json::Value> {
        robot.get::<SignalHeard>().map(|h| json!(h.0))
    }
    fn replay(&self, record: &serde_json::Value, robot: &mut EntityWorldMut) -> Result<(), String> {
        let heard: Vec<Heard> = serde_json::from_value(record.clone()).map_err(|e| e.to_string())?;
        robot.insert(SignalHeard(heard));
        Ok(())
    }
    /// A line to each robot heard, the stronger the more opaque.
    fn marks(&self, robot: &FilteredEntityRef, _: &Around, marks: &mut Vec<Mark>) {
        let Some(t) = robot.get::<Transform>() else { return };
        let (p, heading) = pose(t);
        for h in self.heard(robot) {
            let to = p + Vec2::from_angle(heading + h.bearing) * h.distance;
            let strength = 0.25 + 0.75 * self.0.unit(h.dbm);
            marks.push(Mark::Line { from: p, to, colour: [0.05, 0.55, 0.95, strength] });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(up: bool, range: Option<f32>) -> EffectiveLink {
        EffectiveLink { up, range, delay: 0, probability: 1.0 }
    }

    #[test]
    fn the_power_falls_by_ten_times_the_exponent_in_db_for_every_tenfold_distance() {
        let m = PathLoss::default();
        assert_eq!(m.received_dbm(1.0), -40.0);
        assert_eq!(m.received_dbm(0.2), -40.0, "nearer than a metre is as at a metre");
        assert!((m.received_dbm(10.0) - -60.0).abs() < 1e-4);
        assert!((m.received_dbm(100.0) - -80.0).abs() < 1e-4);
        let indoors = PathLoss { exponent: 3.0, ..m };
        assert!((indoors.received_dbm(10.0) - -70.0).abs() < 1e-4);
        assert_eq!((m.unit(-40.0), m.unit(-90.0), m.unit(-65.0), m.unit(-120.0)), (1.0, 0.0, 0.5, 0.0));
    }

    #[test]
    fn a_robot_is_heard_only_over_a_link_that_is_up_in_range_and_above_the_sensitivity() {
        let m = PathLoss::default();
        assert_eq!(m.heard_dbm(1.0, &link(true, None)), Some(-40.0));
        assert_eq!(m.heard_dbm(1.0, &link(false, None)), None, "link down");
        assert_eq!(m.heard_dbm(5.0, &link(true, Some(4.0))), None, "beyond the radio's range");
        assert!(m.heard_dbm(4.0, &link(true, Some(4.0))).is_some(), "at the edge of it");
        // -90 dBm at 316 m in free space: beyond it the radio's range no longer decides.
        assert!(m.heard_dbm(300.0, &link(true, None)).is_some());
        assert_eq!(m.heard_dbm(400.0, &link(true, None)), None, "below the sensitivity");
    }
}
