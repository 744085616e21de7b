//! Inputs from outside the process, so that runs driven from outside can be verified: the live
//! parameters a person or a viewer changes between steps (radio, emergency stop, the explorers'
//! sonar option, radio registrations of program robots), the actuator commands the bot manager
//! transmitted to robots driven from outside (UDP, VirtualRobot and program robots), and their
//! radio sends.
//!
//! Recording compares the live parameters with the last step's at the start of every step and
//! takes the commands right after the bot manager transmitted them; `crsim verify` runs the
//! same scene with those robots idle and puts the recorded values back at the same points of the
//! same steps.

use std::collections::BTreeMap;

use bevy::prelude::*;

pub use super::format::LiveParams;
use super::format::{CommandInput, InputsRecord, SendInput};
use crate::botlink::{BotLink, EmergencyStop};
use crate::comms::{CommType, Payload, Radio, RadioOut, Target};
use crate::control::ControllerKind;
use crate::control::explore::Explorer;
use crate::robot::{DriveCommand, GripCommand, LampState, Robot};
use crate::scene::schema::ControllerSpec;
use crate::sim::{PerEnv, RobotOrder, SimTime};

/// Whether a robot of this controller is driven from outside the process.
pub fn driven_from_outside(c: &ControllerSpec) -> bool {
    matches!(c, ControllerSpec::External { .. } | ControllerSpec::Remote { .. } | ControllerSpec::Program {})
}

/// What the live parameters are now.
pub fn snapshot(world_radio: &Radio, estop: bool, names: &[String], explorers: &[(u32, bool)]) -> LiveParams {
    let model = &world_radio.0;
    LiveParams {
        radio: model.system,
        robots: names.iter().map(|n| model.robot(n).map(|r| r.params)).collect(),
        pairs: model.pairs(),
        estop,
        sonar: explorers.iter().copied().collect(),
    }
}

/// Makes the radio match recorded parameters: registrations, robot and pair parameters.
pub fn apply_radio(radio: &mut Radio, names: &[String], params: &LiveParams) {
    let model = &mut radio.0;
    model.system = params.radio;
    for (name, want) in names.iter().zip(&params.robots) {
        let registered = model.robot(name).is_some();
        match want {
            Some(p) => {
                if !registered {
                    let kind = CommType { broadcast: p.kind.broadcast, point_to_point: p.kind.point_to_point };
                    let _ = model.register(name, kind);
                }
                if let Some(q) = model.robot_params_mut(name) {
                    *q = *p;
                }
            }
            None if registered => {
                let _ = model.unregister(name);
            }
            None => {}
        }
    }
    model.replace_pairs(&params.pairs);
}

/// Where recording and verification keep the inputs of the step being run.
#[derive(Resource, Debug, Default)]
pub struct InputLog {
    /// The inputs of the step being run (recording), or still to be applied (verifying).
    pub current: InputsRecord,
    /// Recording: the live parameters as last recorded.
    last_params: Option<LiveParams>,
    /// Recording: each outside robot's command as last recorded.
    last_command: BTreeMap<u32, CommandInput>,
    /// Verifying: the recorded inputs by step, applied as their steps come.
    pub script: BTreeMap<u64, InputsRecord>,
    pub mode: InputMode,
}

impl InputLog {
    /// A log that takes inputs as they come (`Record`) or does nothing (`Off`).
    pub fn new(mode: InputMode) -> InputLog {
        InputLog { mode, ..default() }
    }

    /// A log that puts `script`'s inputs back at their steps (verify).
    pub fn replaying(script: BTreeMap<u64, InputsRecord>) -> InputLog {
        InputLog { mode: InputMode::Replay, script, ..default() }
    }
}

/// What the input log does.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub enum InputMode {
    #[default]
    Off,
    /// Take the inputs as they come.
    Record,
    /// Put recorded inputs back (verify).
    Replay,
}

fn robot_names(order: &RobotOrder, names: &Query<&Name>) -> Vec<String> {
    order.0.iter().map(|&e| names.get(e).map(|n| n.to_string()).unwrap_or_default()).collect()
}

/// Whether the live parameters are still `last`, checked without building a snapshot.
fn unchanged(
    last: &LiveParams,
    radio: &Radio,
    estop: bool,
    order: &RobotOrder,
    names: &Query<&Name>,
    explorers: &Query<(&Robot, &mut Explorer)>,
) -> bool {
    let model = &radio.0;
    let robot = |e: Entity| names.get(e).ok().and_then(|n| model.robot(n.as_str())).map(|r| r.params);
    last.radio == model.system
        && last.estop == estop
        && last.robots.len() == order.0.len()
        && order.0.iter().zip(&last.robots).all(|(&e, p)| robot(e) == *p)
        && model.pairs_are(&last.pairs)
        && last.sonar.len() == explorers.iter().len()
        && explorers.iter().all(|(r, e)| last.sonar.get(&r.index) == Some(&e.sonar_alarm))
}

/// The start of a step: record changed live parameters, or apply the recorded ones.
pub(super) fn params_at_step_start(
    time: Res<SimTime>,
    order: Res<RobotOrder>,
    names: Query<&Name>,
    mut log: ResMut<InputLog>,
    mut radios: ResMut<PerEnv<Radio>>,
    mut estop: ResMut<EmergencyStop>,
    mut explorers: Query<(&Robot, &mut Explorer)>,
) {
    let log = &mut *log;
    let radio = radios.only_mut();
    match log.mode {
        InputMode::Off => {}
        InputMode::Record => {
            log.current = InputsRecord { step: time.step, ..default() };
            // Most steps change nothing: compare in place before building a snapshot.
            if let Some(last) = &log.last_params
                && unchanged(last, radio, estop.engaged, &order, &names, &explorers)
            {
                return;
            }
            let sonar: Vec<(u32, bool)> = explorers.iter().map(|(r, e)| (r.index, e.sonar_alarm)).collect();
            let now = snapshot(radio, estop.engaged, &robot_names(&order, &names), &sonar);
            if log.last_params.as_ref() != Some(&now) {
                log.current.params = Some(now.clone());
                log.last_params = Some(now);
            }
        }
        InputMode::Replay => {
            let Some(params) = log.script.get(&time.step).and_then(|r| r.params.clone()) else { return };
            apply_radio(radio, &robot_names(&order, &names), &params);
            estop.engaged = params.estop;
            for (robot, mut ex) in &mut explorers {
                if let Some(&on) = params.sonar.get(&robot.index) {
                    ex.sonar_alarm = on;
                }
            }
        }
    }
}

/// Right after the bot manager transmitted: the commands of robots driven from outside.
pub(super) fn commands_after_transmit(
    time: Res<SimTime>,
    mut log: ResMut<InputLog>,
    mut robots: Query<(
        &Robot,
        &ControllerKind,
        &mut DriveCommand,
        &mut GripCommand,
        &mut LampState,
        Option<&mut BotLink>,
    )>,
) {
    let log = &mut *log;
    match log.mode {
        InputMode::Off => {}
        InputMode::Record => {
            let mut changed: Vec<CommandInput> = Vec::new();
            for (robot, kind, drive, grip, lamp, _) in &robots {
                if !driven_from_outside(&kind.0) {
                    continue;
                }
                let now = CommandInput {
                    robot: robot.index,
                    linear: drive.linear,
                    angular: drive.angular,
                    lateral: drive.lateral,
                    grip: grip.close,
                    lamp: lamp.on,
                };
                if log.last_command.get(&robot.index) != Some(&now) {
                    log.last_command.insert(robot.index, now);
                    changed.push(now);
                }
            }
            changed.sort_by_key(|c| c.robot);
            log.current.commands = changed;
        }
        InputMode::Replay => {
            let Some(record) = log.script.get(&time.step) else { return };
            if record.commands.is_empty() {
                return;
            }
            for (robot, _, mut drive, mut grip, mut lamp, link) in &mut robots {
                if let Some(c) = record.commands.iter().find(|c| c.robot == robot.index) {
                    *drive = DriveCommand { linear: c.linear, angular: c.angular, lateral: c.lateral };
                    grip.close = c.grip;
                    lamp.on = c.lamp;
                    // The bot manager's next rounds carry the same commands, as they did live.
                    if let Some(mut link) = link {
                        let slot = &mut link.command;
                        (slot.linear, slot.angular, slot.lateral, slot.grip, slot.lamp) =
                            (c.linear, c.angular, c.lateral, c.grip, c.lamp);
                    }
                }
            }
        }
    }
}

/// Before the radio delivers: what robots driven from outside sent this step.
pub(super) fn sends_before_delivery(
    time: Res<SimTime>,
    mut log: ResMut<InputLog>,
    order: Res<RobotOrder>,
    mut robots: Query<(&Robot, &ControllerKind, &mut RadioOut)>,
) {
    let log = &mut *log;
    match log.mode {
        InputMode::Off => {}
        InputMode::Record => {
            let mut sends = Vec::new();
            for &e in &order.0 {
                let Ok((robot, kind, out)) = robots.get(e) else { continue };
                if !driven_from_outside(&kind.0) {
                    continue;
                }
                for (target, payload) in &out.0 {
                    sends.push(SendInput {
                        robot: robot.index,
                        to: match target {
                            Target::Robot(n) => Some(n.clone()),
                            Target::Broadcast => None,
                        },
                        payload: payload.to_json(),
                    });
                }
            }
            log.current.sends = sends;
        }
        InputMode::Replay => {
            let Some(record) = log.script.get(&time.step) else { return };
            for s in &record.sends {
                let Some(&e) = order.0.get(s.robot as usize) else { continue };
                if let Ok((_, _, mut out)) = robots.get_mut(e) {
                    let target = s.to.clone().map_or(Target::Broadcast, Target::Robot);
                    out.0.push((target, Payload::from_json(s.payload.clone())));
                }
            }
        }
    }
}
