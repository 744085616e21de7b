//! Recording, replay, verification and the live viewer, on one record stream (seed 003's
//! "viewer updates": the state of every object at every step).
//!
//! - [`format`](mod@format): the channels and their records, plain types with JSON schemas.
//! - [`capture`]: systems that take the records from the world after every step and hand them
//!   to sinks; [`inputs`]: what came from outside the process, recorded and put back.
//! - [`writer`]: the MCAP file sink; [`reader`]: the chunk index and the state at any step.
//! - [`viewer`]: the TCP stream of records to viewers, and a viewer's side of it.
//! - [`replay`]: shows a recording in the world without running a step.
//!
//! It sits below `run/` (which runs recordings again: `run::verify`) and above every
//! subsystem it records.

use bevy::ecs::schedule::ScheduleLabel;
use bevy::prelude::*;

pub mod capture;
pub mod format;
pub mod inputs;
pub mod inspect;
pub mod mcap_records;
pub mod reader;
pub mod replay;
pub mod viewer;
pub mod writer;

pub use capture::{PenOrder, Recorder, Sink};
pub use inputs::{InputLog, InputMode};
pub use reader::{Frame, Recording};

use crate::scene::{ActiveScene, SceneLoaded};
use crate::sim::{ActSystems, LoadSystems, SimSystems};
use crate::world::Pen;

/// The recorder, the input log and their systems (part of [`crate::SimPlugin`]).
pub(crate) fn plugin(app: &mut App) {
    app.init_resource::<Recorder>()
        .init_resource::<InputLog>()
        .init_resource::<PenOrder>()
        .add_systems(PreUpdate, on_scene_loaded.run_if(on_message::<SceneLoaded>).in_set(LoadSystems::React))
        .add_systems(FixedFirst, (follow_recorder, inputs::params_at_step_start).chain())
        .add_systems(FixedFirst, observe_skills_while_recording)
        .add_systems(
            FixedUpdate,
            (
                inputs::commands_after_transmit
                    .in_set(SimSystems::Act)
                    .after(ActSystems::Transmit)
                    .before(ActSystems::Actuate),
                inputs::sends_before_delivery.after(SimSystems::Act).before(SimSystems::Communicate),
            ),
        )
        .init_resource::<viewer::ViewerControl>()
        .add_systems(PreUpdate, viewer::serve_viewers.in_set(LoadSystems::Serve))
        .add_systems(FixedPostUpdate, (capture::capture, capture::capture_sensors).chain());
    // Recording's systems work while the recorder has sinks or the input log records or replays.
    for (schedule, set) in [
        (FixedFirst.intern(), follow_recorder.into_system_set().intern()),
        (FixedFirst.intern(), inputs::params_at_step_start.into_system_set().intern()),
        (FixedFirst.intern(), observe_skills_while_recording.into_system_set().intern()),
        (FixedUpdate.intern(), inputs::commands_after_transmit.into_system_set().intern()),
        (FixedUpdate.intern(), inputs::sends_before_delivery.into_system_set().intern()),
        (FixedPostUpdate.intern(), capture::capture.into_system_set().intern()),
        (FixedPostUpdate.intern(), capture::capture_sensors.into_system_set().intern()),
    ] {
        crate::sim::add_optional_systems(app, schedule, set, recording);
    }
}

/// Whether the world records or replays now.
fn recording(world: &mut World) -> bool {
    world.resource::<Recorder>().active() || world.resource::<InputLog>().mode != InputMode::Off
}

/// What a recording of `scene` says about its run. `text` is the scene file's text as read,
/// `dir` its folder (for the network structure file it names).
pub fn run_meta(
    scene: &crate::scene::SceneFile,
    text: &str,
    path: &str,
    dir: &std::path::Path,
    overrides: &crate::scene::SceneOverrides,
    no_radio: bool,
    first_step: u64,
) -> format::RunMeta {
    let network = crate::scene::load::network_path(scene, dir).and_then(|p| std::fs::read_to_string(p).ok());
    format::RunMeta {
        format_version: format::FORMAT_VERSION,
        crsim_version: env!("CARGO_PKG_VERSION").to_string(),
        scene_text: text.to_string(),
        scene_path: path.to_string(),
        scene_resolved: crate::scene::load::to_ron(scene),
        network,
        seed: scene.seed,
        dt: scene.dt,
        overrides: overrides.to_json(),
        no_radio,
        first_step,
        robots: scene.robots.iter().map(|r| r.name.clone()).collect(),
        pens: scene.pens.iter().map(|p| p.name.clone()).collect(),
    }
}

/// The scene a recording ran, as it ran it (overrides, seed and switches applied).
pub fn recorded_scene(meta: &format::RunMeta) -> Result<crate::scene::SceneFile, String> {
    let mut scene = crate::scene::load::parse_scene(&meta.scene_resolved, &meta.scene_path)
        .map_err(|e| format!("the recording's scene does not load: {e}"))?;
    if let Some(text) = &meta.network {
        let structure = crate::scene::network::parse_network(text, "the recording's network structure")
            .map_err(|e| format!("the recording's network structure does not load: {e}"))?;
        scene.network_structure = Some(structure);
    }
    Ok(scene)
}

/// A scene with every robot driven from outside made idle: their recorded commands drive them.
pub fn without_outside_drivers(mut scene: crate::scene::SceneFile) -> crate::scene::SceneFile {
    for r in &mut scene.robots {
        if inputs::driven_from_outside(&r.controller) {
            r.controller = crate::scene::schema::ControllerSpec::Idle;
        }
    }
    scene
}

/// The input log records while the recorder has sinks (unless it replays for verify).
fn follow_recorder(rec: Res<Recorder>, mut log: ResMut<InputLog>) {
    // Inputs are kept for crsim's own recordings (verify runs them again); a ROS 2 bag alone
    // needs none.
    let want = if rec.wants_records() { InputMode::Record } else { InputMode::Off };
    if log.mode != InputMode::Replay && log.mode != want {
        *log = InputLog::new(want);
    }
}

/// Marks the recorder's observers of skills.
#[derive(Component)]
pub struct SkillObserver;

/// The recorder observes skills only while it records, from the first step it records: with no
/// observer, the skills' notes are not announced at all (see `skills::announce`).
fn observe_skills_while_recording(
    rec: Res<Recorder>,
    observers: Query<Entity, With<SkillObserver>>,
    mut commands: Commands,
) {
    match (rec.active(), observers.is_empty()) {
        (true, true) => {
            commands.spawn((Observer::new(capture::skill_started), SkillObserver));
            commands.spawn((Observer::new(capture::skill_completed), SkillObserver));
        }
        (false, false) => observers.iter().for_each(|e| commands.entity(e).despawn()),
        _ => {}
    }
}

/// A new scene: pens in scene order; a recording of the old scene ends (its steps would not
/// continue the new one's).
fn on_scene_loaded(
    active: Res<ActiveScene>,
    pens: Query<(Entity, &Name), With<Pen>>,
    mut order: ResMut<PenOrder>,
    mut rec: ResMut<Recorder>,
) {
    let mut v: Vec<(usize, Entity)> = pens
        .iter()
        .map(|(e, n)| (active.scene.pens.iter().position(|p| p.name == n.as_str()).unwrap_or(usize::MAX), e))
        .collect();
    v.sort();
    order.0 = v.into_iter().map(|(_, e)| e).collect();
    if rec.active() && rec.steps > 0 {
        info!("recording: the scene was loaded again; the recording ends here");
        rec.finish(false);
    }
}
