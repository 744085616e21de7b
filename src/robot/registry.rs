//! Sensors declared once, read everywhere: the registry of sensors by name, as ARGoS registers
//! its plugins (`REGISTER_SENSOR`), so that a sensor a crate outside `src/` adds is seen by
//! every reader without a line of crsim changing.
//!
//! A [`Sensor`] says, for one robot that carries it: the parts of the observation vector it
//! gives (names, sizes, bounds) and their values; its reading, one record in what a program
//! robot reads each step; what the program protocol's `hello` says about it; the rows the app's
//! inspector shows; the [`Mark`]s the app draws of it; and, for a sensor with records of its
//! own, its record in recordings and how a replay puts it back. Each floor registers the sensors
//! it owns (the body's here, the radio's in `comms/`), and a user's plugin registers its own
//! with [`RegisterSensor::register_sensor`] (`extensions/signal/` is one).
//!
//! Every reader walks a robot's [`Carried`] sensors in order — `crsim.VecEnv`'s observation
//! ([`Layout`]), the program protocol's readings and `hello`, the inspector, the app's view,
//! recordings (`/sensors`) and replay — none lists sensors by hand. A robot of no kind carries [`DEFAULT_SENSORS`], in that order: that order
//! is the observation layout every trained policy has seen, so it does not change; a sensor
//! registered beside them comes after them, on the robots it says carry it.

use std::collections::BTreeMap;
use std::sync::Arc;

use bevy::ecs::world::FilteredEntityRef;
use bevy::prelude::*;
use serde::Serialize;

use crate::scene::SceneFile;
use crate::scene::error::SceneError;
use crate::scene::schema::RobotSpec;
use crate::world::Arena;

/// The sensors a robot of no kind carries, in the order of its observation: the body's pose
/// and motion, battery, bump, gripper, camera, the radio's count of messages heard, and the
/// range sensor when the scene gives it one.
pub const DEFAULT_SENSORS: [&str; 7] = ["pose", "battery", "bump", "gripper", "camera", "radio", "range"];

/// Sensor list errors [`SensorRegistry::check`] reports before it stops (a swarm of one kind
/// would repeat one mistake for every robot).
const MAX_SENSOR_ERRORS: usize = 20;

/// What a built-in sensor a robot cannot carry needs.
fn needs(sensor: &str) -> &'static str {
    match sensor {
        "range" => " (it has no range_sensor)",
        _ => "",
    }
}

/// One part of a robot's observation vector: what `observation=[...]` names, how many values it
/// has, and the bounds each value lies in.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ObsPart {
    pub name: &'static str,
    pub size: usize,
    pub low: f32,
    pub high: f32,
}

impl ObsPart {
    /// A part of `size` values, each in [-1, 1] (every built-in part).
    pub const fn unit(name: &'static str, size: usize) -> Self {
        Self { name, size, low: -1.0, high: 1.0 }
    }
}

/// What a sensor shows of itself in the app's view, in the arena's metres: a line or a dot, in a
/// colour (sRGB and alpha, each 0..1). The app draws the marks of the robots whose sensors it
/// shows (every robot in a small scene, the selected one in a large one).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Mark {
    Line { from: Vec2, to: Vec2, colour: [f32; 4] },
    Dot { at: Vec2, radius: f32, colour: [f32; 4] },
}

/// What a sensor reader has beside the robot: the arena, and the names of other entities.
pub struct Around<'a> {
    pub arena: Arena,
    /// The name of an entity (a pen, a box, another robot), as readings give it.
    pub name_of: &'a dyn Fn(Entity) -> String,
}

/// A body the robot touches.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Touch {
    pub with: String,
    /// Radians from the heading, positive to the left.
    pub bearing: f32,
}

/// Something the camera sees.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Detection {
    /// `pen`, `box`, `station` or `robot`.
    pub kind: &'static str,
    pub name: String,
    pub distance: f32,
    pub bearing: f32,
}

/// The grip sensor.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct GripReading {
    pub holding: Option<String>,
    pub in_reach: Option<String>,
}

/// A message the radio delivered to the robot.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InMessage {
    pub from: String,
    /// The step it was sent at.
    pub sent: u64,
    /// Broadcast (true) or to this robot alone.
    pub broadcast: bool,
    pub content: serde_json::Value,
}

/// What a robot's sensors read in one step, as the program protocol sends it: the built-in
/// sensors' records in their fields (the protocol's fixed fields, which its binary encoding
/// packs), every other sensor's record under its name in `sensors`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SensorReading {
    /// `[x m, y m, heading rad]`.
    pub pose: [f32; 3],
    /// The applied `[linear m/s, angular rad/s]` of the last step.
    pub speed: [f32; 2],
    /// The applied sideways speed of the last step, m/s to the left (only for a holonomic robot).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lateral: Option<f32>,
    /// Battery level, 0..1.
    pub battery: f32,
    pub charging: bool,
    pub bump: Vec<Touch>,
    pub camera: Vec<Detection>,
    pub grip: GripReading,
    /// `[metres travelled, collisions]`.
    pub odometry: [f32; 2],
    /// Pens this robot dropped into boxes so far.
    pub boxed: u32,
    /// The messages the radio delivered to it this step.
    pub messages: Vec<InMessage>,
    /// The range sensor's beams, metres, in the order of its angles (only for a robot with one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub range: Option<Vec<f32>>,
    /// The records of sensors registered outside the built-in set, by sensor name.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub sensors: BTreeMap<&'static str, serde_json::Value>,
}

/// A sensor as every reader sees it. Its methods get the robot as a [`FilteredEntityRef`] (a
/// reader's query or `world.entity(e)` gives one) and read the components the sensor's own
/// systems keep up to date in the sense stage.
pub trait Sensor: Send + Sync + 'static {
    /// The name scenes and every reader call it by.
    fn name(&self) -> &'static str;

    /// The names of every observation part it can give, whichever robot carries it (what
    /// `observation=[...]` may name).
    fn part_names(&self) -> &'static [&'static str];

    /// The reading fields it writes (in [`SensorReading`]'s JSON), for the test that every
    /// reader sees every sensor.
    fn reading_fields(&self) -> &'static [&'static str];

    /// Whether a robot of this spec carries it when the robot lists no `sensors` of its own, and
    /// whether it can carry it when it does (a robot listing it that cannot is a scene error).
    fn carried_by(&self, robot: &RobotSpec) -> bool;

    /// The parts of the observation it gives a robot of this spec, in order.
    fn parts(&self, robot: &RobotSpec) -> Vec<ObsPart>;

    /// Writes its parts' values into `out` (exactly the sum of [`Sensor::parts`]' sizes).
    fn observe(&self, robot: &FilteredEntityRef, around: &Around, out: &mut [f32]);

    /// Writes its record into the robot's reading.
    fn read(&self, robot: &FilteredEntityRef, around: &Around, reading: &mut SensorReading);

    /// What the program protocol's `hello` says of it on a robot of this spec (its settings).
    fn describe(&self, robot: &RobotSpec) -> serde_json::Value;

    /// The rows the app's inspector shows for it: a label and a value each.
    fn inspect(&self, robot: &FilteredEntityRef, around: &Around, rows: &mut Vec<(String, String)>);

    /// What the app draws of it on the robot (nothing, by default).
    fn marks(&self, _robot: &FilteredEntityRef, _around: &Around, _marks: &mut Vec<Mark>) {}

    /// Whether recordings keep records of its own ([`Sensor::record`], [`Sensor::replay`]) on
    /// the `/sensors` channel. crsim's own sensors say no: their state has channels of its own
    /// (`/robots`, `/range`, `/radio`).
    fn recorded(&self) -> bool {
        false
    }

    /// Its record of this step for the recording (asked only when [`Sensor::recorded`]): what a
    /// replay needs to show what it read; `None` when there is nothing new.
    fn record(&self, _robot: &FilteredEntityRef, _around: &Around) -> Option<serde_json::Value> {
        None
    }

    /// Puts a recorded record back on the robot, so that a replay draws and inspects what the
    /// sensor read; an error says what in the record is wrong.
    fn replay(&self, _record: &serde_json::Value, _robot: &mut EntityWorldMut) -> Result<(), String> {
        Ok(())
    }

    /// A faster way to observe it in `world`, for readers that observe every step (`crsim.VecEnv`):
    /// `None` (the default) has them call [`Sensor::observe`].
    fn observer(&self, _world: &mut World) -> Option<Box<dyn SensorObserver>> {
        None
    }
}

/// What observes one sensor in one world step after step, made once by [`Sensor::observer`]: it
/// keeps a query of the components the sensor reads, since looking each one up by type every
/// step costs more than the reading itself. It gives exactly what [`Sensor::observe`] gives.
pub trait SensorObserver: Send + Sync {
    fn observe(&mut self, world: &World, robot: Entity, around: &Around, out: &mut [f32]);
}

/// Every registered sensor's observer for one world ([`SensorRegistry::observers`]).
pub struct Observers(Vec<Option<Box<dyn SensorObserver>>>);

/// Clamps each value of `out` to `[low, high]`; a value that is not finite becomes 0.
fn clamp(out: &mut [f32], low: f32, high: f32) {
    for v in out {
        *v = if v.is_finite() { v.clamp(low, high) } else { 0.0 };
    }
}

/// A sensor that panicked while it sensed a robot: a reader gets this in place of the reading
/// or observation, and the run stops with it (`crsim run` keeps every output finished so far).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SensorFault {
    pub sensor: &'static str,
    pub robot: Entity,
    /// What the panic said.
    pub message: String,
}

impl SensorFault {
    /// The fault in words, with the robot's name as the reader knows it.
    pub fn describe(&self, robot: &str) -> String {
        format!("sensor \"{}\" failed while sensing robot {robot}: {}", self.sensor, self.message)
    }
}

/// Runs one sensor's part of a reader's work: a panic in it (a sensor from outside crsim) is the
/// fault it names, and the reader goes on without unwinding through the app.
fn guarded<T>(sensor: &'static str, robot: Entity, work: impl FnOnce() -> T) -> Result<T, SensorFault> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)).map_err(|payload| SensorFault {
        sensor,
        robot,
        message: payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "it panicked".to_string()),
    })
}

/// The sensor faults of a run, each sensor and robot once, in the words
/// [`SensorFault::describe`] gives: the run's loop stops at the end of the step of the first.
#[derive(Resource, Debug, Default, Clone)]
pub struct SensorFaults(pub Vec<String>);

impl SensorFaults {
    /// Notes `fault` of the robot called `robot` (once); whether it is new.
    pub fn note(&mut self, fault: &SensorFault, robot: &str) -> bool {
        let said = fault.describe(robot);
        let new = !self.0.contains(&said);
        if new {
            error!("{said}");
            self.0.push(said);
        }
        new
    }
}

/// A sensor's place in the [`SensorRegistry`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SensorId(pub u16);

/// Every sensor registered, by name, in the order registered.
#[derive(Resource, Clone, Default)]
pub struct SensorRegistry {
    sensors: Vec<Arc<dyn Sensor>>,
    /// Each set of sensors robots carry, once: robots of one set share it.
    sets: Vec<Arc<[SensorId]>>,
    /// Registrations refused (a name used twice), each with its reason.
    refused: Vec<String>,
}

impl std::fmt::Debug for SensorRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.sensors.iter().map(|s| s.name())).finish()
    }
}

impl SensorRegistry {
    /// Adds a sensor; a name registered before is an error naming it.
    pub fn register(&mut self, sensor: impl Sensor) -> Result<SensorId, String> {
        let name = sensor.name();
        if self.id(name).is_some() {
            return Err(format!("a sensor named \"{name}\" is registered already"));
        }
        let valid = !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            return Err(format!("sensor name \"{name}\": use letters, digits and _ only"));
        }
        if self.sensors.len() >= usize::from(u16::MAX) {
            return Err(format!("sensor \"{name}\": the registry holds {} sensors already", self.sensors.len()));
        }
        self.sensors.push(Arc::new(sensor));
        Ok(SensorId(self.sensors.len() as u16 - 1))
    }

    /// Registers the sensors `register` adds; one refused is kept in [`SensorRegistry::refused`]
    /// (a floor's plugin registers its own sensors this way).
    pub fn register_or_refuse(&mut self, register: impl FnOnce(&mut Self) -> Result<(), String>) {
        if let Err(e) = register(self) {
            error!("{e}");
            self.refused.push(e);
        }
    }

    /// The registrations an app's plugins made that were refused, each with its reason (each is
    /// logged as an error too: [`RegisterSensor`] cannot return them).
    pub fn refused(&self) -> &[String] {
        &self.refused
    }

    /// What is wrong with a scene's sensor lists for this registry, robot by robot: a name not
    /// registered (with the names that are), or a sensor the robot cannot carry (a `range` with
    /// no `range_sensor`, say).
    pub fn check(&self, scene: &SceneFile) -> Vec<SceneError> {
        let mut errors = Vec::new();
        for r in &scene.robots {
            let Some(names) = &r.sensors else { continue };
            let item = || format!("robot \"{}\"", r.name);
            for name in names {
                let message = match self.id(name) {
                    None => format!(
                        "sensors names {name:?}, which is not a registered sensor (registered: {})",
                        self.names().join(", ")
                    ),
                    Some(id) if !self.get(id).carried_by(r) => {
                        format!("sensors names {name:?}, which this robot cannot carry{}", needs(name))
                    }
                    Some(_) => continue,
                };
                errors.push(SceneError { item: item(), message });
                if errors.len() >= MAX_SENSOR_ERRORS {
                    return errors;
                }
            }
        }
        errors
    }

    /// The sensor registered under `name`.
    pub fn id(&self, name: &str) -> Option<SensorId> {
        self.sensors.iter().position(|s| s.name() == name).map(|i| SensorId(i as u16))
    }

    pub fn get(&self, id: SensorId) -> &dyn Sensor {
        &*self.sensors[usize::from(id.0)]
    }

    /// Every sensor, in the order registered.
    pub fn iter(&self) -> impl Iterator<Item = (SensorId, &dyn Sensor)> {
        self.sensors.iter().enumerate().map(|(i, s)| (SensorId(i as u16), &**s))
    }

    /// The names of the sensors registered.
    pub fn names(&self) -> Vec<&'static str> {
        self.sensors.iter().map(|s| s.name()).collect()
    }

    /// Every observation part name some sensor gives, each once: the default sensors' in the
    /// order of a default robot's layout, then the others' in registration order.
    pub fn part_names(&self) -> Vec<&'static str> {
        let mut names: Vec<&'static str> = Vec::new();
        let defaults = DEFAULT_SENSORS.iter().filter_map(|n| self.id(n)).map(|id| self.get(id));
        let others = self.sensors.iter().map(|s| &**s).filter(|s| !DEFAULT_SENSORS.contains(&s.name()));
        for s in defaults.chain(others) {
            for n in s.part_names() {
                if !names.contains(n) {
                    names.push(n);
                }
            }
        }
        names
    }

    /// The sensors a robot of this spec carries, in the order its readers walk them: those its
    /// `sensors` names, in that order (a name not registered is skipped: [`SensorRegistry::check`]
    /// reports it); without that list, the [`DEFAULT_SENSORS`] it has, in their order, then every
    /// other sensor that [`Sensor::carried_by`] gives it, in the order they were registered.
    pub fn carried(&self, robot: &RobotSpec) -> Carried {
        if let Some(names) = &robot.sensors {
            return Carried(names.iter().filter_map(|n| self.id(n)).collect());
        }
        let defaults = DEFAULT_SENSORS.iter().filter_map(|n| self.id(n));
        let others = self.iter().map(|(id, _)| id).filter(|&id| !DEFAULT_SENSORS.contains(&self.get(id).name()));
        Carried(defaults.chain(others).filter(|&id| self.get(id).carried_by(robot)).collect())
    }

    /// [`SensorRegistry::carried`], shared with every robot that carries the same sensors (a
    /// scene has a few such sets, and a world may hold a million robots).
    pub fn carried_shared(&mut self, robot: &RobotSpec) -> Carried {
        let carried = self.carried(robot);
        match self.sets.iter().find(|s| s[..] == carried.0[..]) {
            Some(set) => Carried(set.clone()),
            None => {
                self.sets.push(carried.0.clone());
                carried
            }
        }
    }

    /// A robot's observation layout: its carried sensors' parts, one after the other.
    pub fn layout(&self, robot: &RobotSpec) -> Layout {
        let mut layout = Layout::default();
        for &id in self.carried(robot).0.iter() {
            let parts = self.get(id).parts(robot);
            let size: usize = parts.iter().map(|p| p.size).sum();
            layout.sensors.push((id, layout.size..layout.size + size));
            for part in parts {
                layout.parts.push((part.clone(), layout.size..layout.size + part.size));
                layout.size += part.size;
            }
        }
        layout
    }

    /// Writes a robot's observation (exactly `layout.size` values) into `out`, each sensor its
    /// span, each value then clamped to its part's bounds (a value that is not finite is 0). A
    /// sensor that panics is the fault returned, its span zeros.
    pub fn observe(
        &self,
        layout: &Layout,
        robot: &FilteredEntityRef,
        around: &Around,
        out: &mut [f32],
    ) -> Result<(), SensorFault> {
        for (id, span) in &layout.sensors {
            let (sensor, out) = (self.get(*id), &mut out[span.clone()]);
            guarded(sensor.name(), robot.id(), || sensor.observe(robot, around, out)).inspect_err(|_| out.fill(0.0))?;
        }
        layout.clamp(out);
        Ok(())
    }

    /// Every sensor's observer in `world`, for [`SensorRegistry::observe_in`].
    pub fn observers(&self, world: &mut World) -> Observers {
        Observers(self.sensors.iter().map(|s| s.observer(world)).collect())
    }

    /// [`SensorRegistry::observe`] through the sensors' `observers` of `world` (each sensor
    /// without one read by type).
    pub fn observe_in(
        &self,
        observers: &mut Observers,
        layout: &Layout,
        world: &World,
        robot: Entity,
        around: &Around,
        out: &mut [f32],
    ) -> Result<(), SensorFault> {
        for (id, span) in &layout.sensors {
            let (sensor, out) = (self.get(*id), &mut out[span.clone()]);
            let observer = observers.0.get_mut(usize::from(id.0)).and_then(Option::as_mut);
            guarded(sensor.name(), robot, || match observer {
                Some(observer) => observer.observe(world, robot, around, out),
                None => match world.get_entity(robot) {
                    Ok(r) => sensor.observe(&r.into(), around, out),
                    Err(_) => out.fill(0.0),
                },
            })
            .inspect_err(|_| out.fill(0.0))?;
        }
        layout.clamp(out);
        Ok(())
    }

    /// A robot's reading: each sensor it carries writes its record; a sensor that panics is the
    /// fault returned.
    pub fn read(
        &self,
        carried: &Carried,
        robot: &FilteredEntityRef,
        around: &Around,
    ) -> Result<SensorReading, SensorFault> {
        let mut reading = SensorReading::default();
        for &id in carried.0.iter() {
            let sensor = self.get(id);
            guarded(sensor.name(), robot.id(), || sensor.read(robot, around, &mut reading))?;
        }
        Ok(reading)
    }

    /// The inspector's rows for a robot, each sensor's under its name.
    pub fn inspect(
        &self,
        carried: &Carried,
        robot: &FilteredEntityRef,
        around: &Around,
    ) -> Vec<(String, Vec<(String, String)>)> {
        let mut out = Vec::new();
        for &id in carried.0.iter() {
            let sensor = self.get(id);
            let mut rows = Vec::new();
            if let Err(fault) = guarded(sensor.name(), robot.id(), || sensor.inspect(robot, around, &mut rows)) {
                rows = vec![("failed".to_string(), fault.message)];
            }
            out.push((sensor.name().to_string(), rows));
        }
        out
    }

    /// The marks every sensor a robot carries draws, in order, added to `marks`. A sensor that
    /// panics adds none and is the fault returned, after the others have drawn theirs.
    pub fn marks(
        &self,
        carried: &Carried,
        robot: &FilteredEntityRef,
        around: &Around,
        marks: &mut Vec<Mark>,
    ) -> Result<(), SensorFault> {
        let mut failed = None;
        for &id in carried.0.iter() {
            let sensor = self.get(id);
            let before = marks.len();
            if let Err(fault) = guarded(sensor.name(), robot.id(), || sensor.marks(robot, around, marks)) {
                marks.truncate(before);
                failed.get_or_insert(fault);
            }
        }
        failed.map_or(Ok(()), Err)
    }

    /// Whether any sensor registered has records of its own in recordings.
    pub fn any_recorded(&self) -> bool {
        self.sensors.iter().any(|s| s.recorded())
    }

    /// A robot's records for a recording's `/sensors`, by sensor name: those of its sensors that
    /// have records of their own and something to say this step. A sensor that panics is the
    /// fault returned.
    pub fn record(
        &self,
        carried: &Carried,
        robot: &FilteredEntityRef,
        around: &Around,
    ) -> Result<BTreeMap<String, serde_json::Value>, SensorFault> {
        let mut out = BTreeMap::new();
        for &id in carried.0.iter() {
            let sensor = self.get(id);
            if sensor.recorded()
                && let Some(record) = guarded(sensor.name(), robot.id(), || sensor.record(robot, around))?
            {
                out.insert(sensor.name().to_string(), record);
            }
        }
        Ok(out)
    }

    /// Puts a robot's recorded records back, each through its sensor's [`Sensor::replay`]. The
    /// error names a sensor this registry does not have, or the sensor and what it refused.
    pub fn replay(
        &self,
        records: &BTreeMap<String, serde_json::Value>,
        robot: &mut EntityWorldMut,
    ) -> Result<(), String> {
        for (name, record) in records {
            let Some(id) = self.id(name) else {
                return Err(format!(
                    "the recording has records of sensor {name:?}, which this crsim does not have (it has {})",
                    self.names().join(", ")
                ));
            };
            let sensor = self.get(id);
            let who = robot.id();
            guarded(sensor.name(), who, || sensor.replay(record, robot))
                .map_err(|f| format!("sensor {name:?} failed to replay a record: {}", f.message))?
                .map_err(|e| format!("sensor {name:?} refused its recorded record: {e}"))?;
        }
        Ok(())
    }

    /// What the program protocol's `hello` says of a robot's sensors: each one's name, its
    /// observation parts and its settings, in order.
    pub fn describe(&self, robot: &RobotSpec) -> Vec<SensorInfo> {
        let carried = self.carried(robot);
        carried
            .0
            .iter()
            .map(|&id| {
                let s = self.get(id);
                SensorInfo { name: s.name(), parts: s.parts(robot), settings: s.describe(robot) }
            })
            .collect()
    }
}

/// One sensor of a robot, as `hello` lists it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SensorInfo {
    pub name: &'static str,
    /// Its parts of the robot's observation vector, in order.
    pub parts: Vec<ObsPart>,
    pub settings: serde_json::Value,
}

/// The sensors a robot carries, in the order its readers walk them.
#[derive(Component, Debug, Clone, Default, PartialEq, Eq)]
pub struct Carried(pub Arc<[SensorId]>);

/// A robot's observation vector: each part and each sensor with the values it spans.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Layout {
    pub parts: Vec<(ObsPart, std::ops::Range<usize>)>,
    pub sensors: Vec<(SensorId, std::ops::Range<usize>)>,
    pub size: usize,
}

impl Layout {
    /// Clamps an observation to its parts' bounds (a value that is not finite becomes 0): in one
    /// pass when every part is in [-1, 1], as every built-in part is.
    pub fn clamp(&self, out: &mut [f32]) {
        if self.parts.iter().all(|(p, _)| p.low == -1.0 && p.high == 1.0) {
            return clamp(&mut out[..self.size], -1.0, 1.0);
        }
        for (part, span) in &self.parts {
            clamp(&mut out[span.clone()], part.low, part.high);
        }
    }

    /// The spans of the parts named (all of them when `None`), in layout order.
    pub fn spans(&self, names: Option<&[String]>) -> Vec<std::ops::Range<usize>> {
        let wanted = |p: &ObsPart| names.is_none_or(|n| n.iter().any(|n| n == p.name));
        self.parts.iter().filter(|(p, _)| wanted(p)).map(|(_, s)| s.clone()).collect()
    }

    /// Values in the parts named (all of them when `None`).
    pub fn size_of(&self, names: Option<&[String]>) -> usize {
        self.spans(names).iter().map(|s| s.len()).sum()
    }
}

/// Registering a sensor in an app: what a plugin outside crsim calls.
pub trait RegisterSensor {
    /// Registers `sensor`. A name registered before is refused: the first sensor is kept, and
    /// the refusal is logged as an error and kept in [`SensorRegistry::refused`].
    fn register_sensor(&mut self, sensor: impl Sensor) -> &mut Self;
}

impl RegisterSensor for App {
    fn register_sensor(&mut self, sensor: impl Sensor) -> &mut Self {
        let mut registry = self.world_mut().get_resource_or_init::<SensorRegistry>();
        if let Err(e) = registry.register(sensor) {
            error!("{e}");
            registry.refused.push(e);
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sensor of `n` values, all 7.0 (clamped to its bounds, [0, 5]).
    struct Sevens(&'static str, usize);

    impl Sensor for Sevens {
        fn name(&self) -> &'static str {
            self.0
        }
        fn part_names(&self) -> &'static [&'static str] {
            &["sevens"]
        }
        fn reading_fields(&self) -> &'static [&'static str] {
            &[]
        }
        fn carried_by(&self, _: &RobotSpec) -> bool {
            true
        }
        fn parts(&self, _: &RobotSpec) -> Vec<ObsPart> {
            vec![ObsPart { name: "sevens", size: self.1, low: 0.0, high: 5.0 }]
        }
        fn observe(&self, _: &FilteredEntityRef, _: &Around, out: &mut [f32]) {
            out.fill(7.0);
        }
        fn read(&self, _: &FilteredEntityRef, _: &Around, reading: &mut SensorReading) {
            reading.sensors.insert(self.0, serde_json::json!(7));
        }
        fn describe(&self, _: &RobotSpec) -> serde_json::Value {
            serde_json::json!({})
        }
        fn inspect(&self, _: &FilteredEntityRef, _: &Around, rows: &mut Vec<(String, String)>) {
            rows.push(("sevens".into(), "7".into()));
        }
        fn marks(&self, _: &FilteredEntityRef, _: &Around, marks: &mut Vec<Mark>) {
            marks.push(Mark::Dot { at: Vec2::splat(7.0), radius: 0.5, colour: [1.0; 4] });
        }
    }

    #[test]
    fn a_name_registered_twice_or_not_a_word_is_refused_and_the_first_kept() {
        let mut r = SensorRegistry::default();
        assert_eq!(r.register(Sevens("camera", 2)), Ok(SensorId(0)));
        assert_eq!(r.register(Sevens("camera", 3)).unwrap_err(), "a sensor named \"camera\" is registered already");
        assert!(r.register(Sevens("two words", 1)).unwrap_err().contains("letters, digits and _ only"));
        assert!(r.register(Sevens("", 1)).is_err());
        assert_eq!(r.names(), ["camera"]);
        let mut app = App::new();
        app.register_sensor(Sevens("pose", 1)).register_sensor(Sevens("pose", 2));
        let registry = app.world().resource::<SensorRegistry>();
        assert_eq!((registry.names(), registry.refused().len()), (vec!["pose"], 1));
    }

    #[test]
    fn a_layout_lays_the_default_sensors_out_in_their_order_and_clamps_to_each_parts_bounds() {
        let mut r = SensorRegistry::default();
        // Registered out of order, laid out in DEFAULT_SENSORS' order, then "extra" (no default).
        r.register(Sevens("bump", 2)).unwrap();
        r.register(Sevens("extra", 1)).unwrap();
        r.register(Sevens("pose", 3)).unwrap();
        let spec = RobotSpec::new("a", 1.0, 1.0, 0.0);
        let layout = r.layout(&spec);
        assert_eq!(layout.sensors, vec![(SensorId(2), 0..3), (SensorId(0), 3..5), (SensorId(1), 5..6)]);
        assert_eq!(layout.size, 6);
        assert_eq!(layout.size_of(Some(&["sevens".to_string()])), 6);
        assert_eq!(layout.size_of(Some(&["other".to_string()])), 0);
        let mut world = World::new();
        let e = world.spawn_empty().id();
        let name_of = |e: Entity| e.to_string();
        let around = Around { arena: Arena { width: 1.0, height: 1.0 }, name_of: &name_of };
        let mut out = vec![0.0; layout.size];
        let robot = FilteredEntityRef::from(world.entity(e));
        r.observe(&layout, &robot, &around, &mut out).unwrap();
        assert_eq!(out, [5.0; 6], "clamped to the part's bounds");
        let reading = r.read(&r.carried(&spec), &robot, &around).unwrap();
        assert_eq!(reading.sensors.keys().copied().collect::<Vec<_>>(), ["bump", "extra", "pose"]);
        assert_eq!(r.part_names(), ["sevens"]);
        // Robots that carry the same sensors share one list.
        let (a, b) = (r.carried_shared(&spec), r.carried_shared(&RobotSpec::new("b", 2.0, 1.0, 0.0)));
        assert!(Arc::ptr_eq(&a.0, &b.0) && a == r.carried(&spec));
    }

    /// A sensor that panics in every reader's call, as a broken sensor from outside crsim would.
    struct Broken;

    impl Sensor for Broken {
        fn name(&self) -> &'static str {
            "broken"
        }
        fn part_names(&self) -> &'static [&'static str] {
            &["broken"]
        }
        fn reading_fields(&self) -> &'static [&'static str] {
            &[]
        }
        fn carried_by(&self, _: &RobotSpec) -> bool {
            true
        }
        fn parts(&self, _: &RobotSpec) -> Vec<ObsPart> {
            vec![ObsPart::unit("broken", 2)]
        }
        fn observe(&self, _: &FilteredEntityRef, _: &Around, out: &mut [f32]) {
            out[0] = 0.5;
            panic!("no signal on {} values", out.len());
        }
        fn read(&self, _: &FilteredEntityRef, _: &Around, _: &mut SensorReading) {
            panic!("the read failed");
        }
        fn describe(&self, _: &RobotSpec) -> serde_json::Value {
            serde_json::json!({})
        }
        fn inspect(&self, _: &FilteredEntityRef, _: &Around, _: &mut Vec<(String, String)>) {
            panic!("nothing to show");
        }
        fn marks(&self, _: &FilteredEntityRef, _: &Around, marks: &mut Vec<Mark>) {
            marks.push(Mark::Line { from: Vec2::ZERO, to: Vec2::ONE, colour: [0.0; 4] });
            panic!("nothing to draw");
        }
    }

    /// A number kept on the robot, which [`Memos`] records and replays.
    #[derive(Component, Debug, PartialEq)]
    struct Memo(i64);

    /// A sensor with records of its own.
    struct Memos;

    impl Sensor for Memos {
        fn name(&self) -> &'static str {
            "memo"
        }
        fn part_names(&self) -> &'static [&'static str] {
            &[]
        }
        fn reading_fields(&self) -> &'static [&'static str] {
            &[]
        }
        fn carried_by(&self, _: &RobotSpec) -> bool {
            true
        }
        fn parts(&self, _: &RobotSpec) -> Vec<ObsPart> {
            Vec::new()
        }
        fn observe(&self, _: &FilteredEntityRef, _: &Around, _: &mut [f32]) {}
        fn read(&self, _: &FilteredEntityRef, _: &Around, _: &mut SensorReading) {}
        fn describe(&self, _: &RobotSpec) -> serde_json::Value {
            serde_json::json!({})
        }
        fn inspect(&self, _: &FilteredEntityRef, _: &Around, _: &mut Vec<(String, String)>) {}
        fn recorded(&self) -> bool {
            true
        }
        fn record(&self, robot: &FilteredEntityRef, _: &Around) -> Option<serde_json::Value> {
            robot.get::<Memo>().map(|m| serde_json::json!(m.0))
        }
        fn replay(&self, record: &serde_json::Value, robot: &mut EntityWorldMut) -> Result<(), String> {
            robot.insert(Memo(record.as_i64().ok_or("not a number")?));
            Ok(())
        }
    }

    #[test]
    fn a_sensor_with_records_of_its_own_is_recorded_and_replayed_and_the_others_are_not() {
        let mut r = SensorRegistry::default();
        r.register(Sevens("pose", 1)).unwrap();
        assert!(!r.any_recorded(), "crsim's own sensors have channels of their own");
        r.register(Memos).unwrap();
        assert!(r.any_recorded());
        let carried = r.carried(&RobotSpec::new("a", 1.0, 1.0, 0.0));
        let mut world = World::new();
        let (a, b) = (world.spawn(Memo(42)).id(), world.spawn_empty().id());
        let name_of = |e: Entity| e.to_string();
        let around = Around { arena: Arena { width: 1.0, height: 1.0 }, name_of: &name_of };
        let records = r.record(&carried, &FilteredEntityRef::from(world.entity(a)), &around).unwrap();
        assert_eq!(records, BTreeMap::from([("memo".to_string(), serde_json::json!(42))]));
        assert!(r.record(&carried, &FilteredEntityRef::from(world.entity(b)), &around).unwrap().is_empty());
        r.replay(&records, &mut world.entity_mut(b)).unwrap();
        assert_eq!(world.get::<Memo>(b), Some(&Memo(42)));

        let bad = BTreeMap::from([("memo".to_string(), serde_json::json!("x"))]);
        let e = r.replay(&bad, &mut world.entity_mut(b)).unwrap_err();
        assert_eq!(e, "sensor \"memo\" refused its recorded record: not a number");
        let unknown = BTreeMap::from([("lamp".to_string(), serde_json::json!(1))]);
        let e = r.replay(&unknown, &mut world.entity_mut(b)).unwrap_err();
        assert!(e.contains("\"lamp\"") && e.contains("pose, memo"), "{e}");
    }

    #[test]
    fn each_sensor_adds_its_marks_and_one_that_panics_adds_none_of_its_own() {
        let mut r = SensorRegistry::default();
        r.register(Sevens("pose", 1)).unwrap();
        r.register(Broken).unwrap();
        r.register(Sevens("extra", 1)).unwrap();
        let carried = r.carried(&RobotSpec::new("a", 1.0, 1.0, 0.0));
        let mut world = World::new();
        let e = world.spawn(Name::new("a")).id();
        let name_of = |e: Entity| e.to_string();
        let around = Around { arena: Arena { width: 1.0, height: 1.0 }, name_of: &name_of };
        let mut marks = Vec::new();
        let fault = r.marks(&carried, &FilteredEntityRef::from(world.entity(e)), &around, &mut marks).unwrap_err();
        assert_eq!((fault.sensor, fault.message.as_str()), ("broken", "nothing to draw"));
        let dot = Mark::Dot { at: Vec2::splat(7.0), radius: 0.5, colour: [1.0; 4] };
        assert_eq!(marks, [dot, dot], "pose's and extra's; broken's line before it panicked is gone");
    }

    #[test]
    fn a_sensor_that_panics_is_a_fault_naming_it_and_the_robot_and_the_others_still_read() {
        let mut r = SensorRegistry::default();
        r.register(Sevens("pose", 1)).unwrap();
        r.register(Broken).unwrap();
        let spec = RobotSpec::new("a", 1.0, 1.0, 0.0);
        let (layout, carried) = (r.layout(&spec), r.carried(&spec));
        let mut world = World::new();
        let e = world.spawn(Name::new("a")).id();
        let name_of = |e: Entity| e.to_string();
        let around = Around { arena: Arena { width: 1.0, height: 1.0 }, name_of: &name_of };
        let robot = FilteredEntityRef::from(world.entity(e));
        let mut out = vec![9.0; layout.size];
        let fault = r.observe(&layout, &robot, &around, &mut out).unwrap_err();
        assert_eq!(fault, SensorFault { sensor: "broken", robot: e, message: "no signal on 2 values".into() });
        assert_eq!(out[1..], [0.0, 0.0], "the broken sensor's span is zeros, not what it left");
        let fault = r.read(&carried, &robot, &around).unwrap_err();
        assert_eq!(fault.describe("a"), "sensor \"broken\" failed while sensing robot a: the read failed");
        let rows = r.inspect(&carried, &robot, &around);
        assert_eq!(rows[0].1, [("sevens".to_string(), "7".to_string())]);
        assert_eq!(rows[1], ("broken".to_string(), vec![("failed".to_string(), "nothing to show".to_string())]));
        let mut observers = r.observers(&mut world);
        let fault = r.observe_in(&mut observers, &layout, &world, e, &around, &mut out).unwrap_err();
        assert_eq!(fault.sensor, "broken");
        // A run notes each fault once.
        let mut faults = SensorFaults::default();
        assert!(faults.note(&fault, "a") && !faults.note(&fault, "a"));
        assert_eq!(faults.0.len(), 1);
    }
}
