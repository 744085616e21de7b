//! The radio's sensor on the [`SensorRegistry`]: the messages delivered to the robot this step,
//! counted in its observation (`heard`) and listed in its reading.

use bevy::ecs::query::QueryState;
use bevy::ecs::world::FilteredEntityRef;
use bevy::prelude::{Entity, World};
use serde_json::json;

use super::RadioIn;
use crate::robot::registry::{Around, InMessage, ObsPart, Sensor, SensorObserver, SensorReading, SensorRegistry};
use crate::scene::schema::RobotSpec;

/// Messages beyond which the `heard` part reads 1.
const HEARD_FULL: f32 = 10.0;

/// Registers the radio's sensor.
pub fn register(registry: &mut SensorRegistry) -> Result<(), String> {
    registry.register(RadioSensor).map(|_| ())
}

impl InMessage {
    /// A message the radio delivered, as programs (and ROS 2 nodes) read it.
    pub fn delivered(m: &super::Message<super::Payload>) -> Self {
        InMessage {
            from: m.sender().to_string(),
            sent: m.sent_step,
            broadcast: m.receiver().is_none(),
            content: m.content().to_json(),
        }
    }
}

/// The messages the radio delivered to the robot in the last communicate stage.
struct RadioSensor;

impl Sensor for RadioSensor {
    fn name(&self) -> &'static str {
        "radio"
    }
    fn part_names(&self) -> &'static [&'static str] {
        &["heard"]
    }
    fn reading_fields(&self) -> &'static [&'static str] {
        &["messages"]
    }
    fn carried_by(&self, _: &RobotSpec) -> bool {
        true
    }
    fn parts(&self, _: &RobotSpec) -> Vec<ObsPart> {
        vec![ObsPart::unit("heard", 1)]
    }
    fn observe(&self, r: &FilteredEntityRef, _: &Around, out: &mut [f32]) {
        out[0] = heard(r.get::<RadioIn>());
    }
    fn observer(&self, world: &mut World) -> Option<Box<dyn SensorObserver>> {
        Some(Box::new(HeardObserver(QueryState::new(world))))
    }
    fn read(&self, r: &FilteredEntityRef, _: &Around, reading: &mut SensorReading) {
        if let Some(inbox) = r.get::<RadioIn>() {
            reading.messages = inbox.0.iter().map(InMessage::delivered).collect();
        }
    }
    fn describe(&self, robot: &RobotSpec) -> serde_json::Value {
        let c = &robot.comms;
        json!({ "range": c.range, "delay": c.delay, "probability": c.probability })
    }
    fn inspect(&self, r: &FilteredEntityRef, _: &Around, rows: &mut Vec<(String, String)>) {
        let heard = r.get::<RadioIn>().map_or(0, |m| m.0.len());
        rows.push(("heard".into(), format!("{heard} messages this step")));
    }
}

/// The `heard` value of an inbox (none: nothing heard).
fn heard(inbox: Option<&RadioIn>) -> f32 {
    (inbox.map_or(0, |m| m.0.len()) as f32 / HEARD_FULL).min(1.0)
}

/// The radio sensor's observer: its query of the inboxes, kept.
struct HeardObserver(QueryState<Option<&'static RadioIn>>);

impl SensorObserver for HeardObserver {
    fn observe(&mut self, world: &World, robot: Entity, _: &Around, out: &mut [f32]) {
        out[0] = heard(self.0.get(world, robot).ok().flatten());
    }
}
