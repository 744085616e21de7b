//! Systems a world runs only for some of what it may hold: a recorder, controllers of a kind,
//! sonars. Each subsystem registers such systems with a test of whether a world uses them; a
//! world that will hold nothing new — an environment's world, one scene reset again and again,
//! with no recorder and no panel — drops those it does not use, so its steps no longer schedule
//! them. Results are the same: a dropped system would have found nothing to do.

use bevy::ecs::schedule::{InternedScheduleLabel, InternedSystemSet, ScheduleCleanupPolicy, ScheduleLabel, Schedules};
use bevy::prelude::*;

/// Whether a world uses a set of systems now.
pub type InUse = fn(&mut World) -> bool;

/// The optional systems registered, each a set in a schedule with its test.
#[derive(Resource, Default)]
pub struct OptionalSystems(Vec<(InternedScheduleLabel, InternedSystemSet, InUse)>);

/// Registers the systems of `set` in `schedule` as used only when `in_use` says so.
pub fn add_optional_systems<M>(app: &mut App, schedule: impl ScheduleLabel, set: impl IntoSystemSet<M>, in_use: InUse) {
    let entry = (schedule.intern(), set.into_system_set().intern(), in_use);
    app.world_mut().get_resource_or_init::<OptionalSystems>().0.push(entry);
}

/// Drops from `world`'s schedules the optional systems it does not use now, for a world that
/// will hold nothing new; how many systems went. What remains keeps its order: an ordering that
/// ran through a dropped system (`a` before it, it before `b`) becomes `a` before `b`.
pub fn drop_unused_systems(world: &mut World) -> usize {
    let Some(optional) = world.remove_resource::<OptionalSystems>() else { return 0 };
    let unused: Vec<_> = optional.0.iter().filter(|(_, _, in_use)| !in_use(world)).copied().collect();
    world.insert_resource(optional);
    let mut dropped = 0;
    for (label, set, _) in unused {
        if world.resource::<Schedules>().contains(label) {
            dropped += world
                .schedule_scope(label, |world, schedule| {
                    schedule.remove_systems_in_set(set, world, ScheduleCleanupPolicy::RemoveSystemsOnly)
                })
                .unwrap_or(0);
        }
    }
    dropped
}

/// The test of systems that work on entities with a `C`: whether any exists.
pub fn any_with<C: Component>(world: &mut World) -> bool {
    world.query_filtered::<(), With<C>>().iter(world).next().is_some()
}
