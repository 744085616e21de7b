//! Environments: independent copies of a scene that share one world. The app and `crsim run`
//! hold one; the in-process environments (`crate::vecenv`) put many into a world, so that Bevy's
//! schedule, its query states and the systems' own state are kept once for all of them rather
//! than once per copy.
//!
//! Every scene entity carries its environment ([`Env`]); state that belongs to one copy of the
//! scene — its step count, trajectory hash, spatial index, radio queues, random streams — is
//! kept per environment ([`PerEnv`]), and each environment's robots have their own slice of the
//! robot order. Environments never see each other: each has its own physics context, and every
//! sensor, controller and the radio look only at their own environment's entities. An
//! environment's trajectory is therefore the one it would have alone in a world, bit for bit.

use std::ops::{Index, IndexMut};

use bevy::ecs::query::QueryFilter;
use bevy::prelude::*;

/// The environment an entity belongs to: an index into every [`PerEnv`] of its world. A scene
/// entity spawned without one belongs to the first, [`Env::FIRST`].
#[derive(Component, Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Env(pub u32);

impl Env {
    /// The first environment of a world: the only one of the app's and of `crsim run`'s.
    pub const FIRST: Env = Env(0);

    /// Its position in a [`PerEnv`].
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// One `T` for each environment of the world, in environment order.
#[derive(Resource, Debug, Clone, PartialEq)]
pub struct PerEnv<T: Send + Sync + 'static>(pub Vec<T>);

impl<T: Send + Sync + 'static> Default for PerEnv<T> {
    fn default() -> Self {
        PerEnv(Vec::new())
    }
}

impl<T: Send + Sync + 'static + Default> PerEnv<T> {
    /// One default `T` for a world of one environment.
    pub fn one() -> Self {
        PerEnv(vec![T::default()])
    }

    /// Room for `env`: defaults up to and including it.
    pub fn reach(&mut self, env: Env) -> &mut T {
        if self.0.len() <= env.index() {
            self.0.resize_with(env.index() + 1, T::default);
        }
        &mut self.0[env.index()]
    }
}

impl<T: Send + Sync + 'static> PerEnv<T> {
    /// The value of a world that holds one environment (the app's, `crsim run`'s): the first.
    ///
    /// # Panics
    /// When the world holds none (its scene is not loaded yet).
    pub fn only(&self) -> &T {
        &self.0[0]
    }

    /// As [`PerEnv::only`], to change it.
    pub fn only_mut(&mut self) -> &mut T {
        &mut self.0[0]
    }

    /// Each environment with its value, in order.
    pub fn iter(&self) -> impl Iterator<Item = (Env, &T)> {
        self.0.iter().enumerate().map(|(i, v)| (Env(i as u32), v))
    }

    /// Each environment with its value to change, in order.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = (Env, &mut T)> {
        self.0.iter_mut().enumerate().map(|(i, v)| (Env(i as u32), v))
    }

    /// How many environments.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl<T: Send + Sync + 'static> Index<Env> for PerEnv<T> {
    type Output = T;
    fn index(&self, env: Env) -> &T {
        &self.0[env.index()]
    }
}

impl<T: Send + Sync + 'static> IndexMut<Env> for PerEnv<T> {
    fn index_mut(&mut self, env: Env) -> &mut T {
        &mut self.0[env.index()]
    }
}

/// Despawns every entity of environment `env` that the filter `F` lets through (its scene
/// entities, its physics context) and leaves the other environments' alone.
pub fn despawn_in<F: QueryFilter>(world: &mut World, env: Env) {
    let old: Vec<Entity> =
        world.query_filtered::<(Entity, &Env), F>().iter(world).filter(|(_, e)| **e == env).map(|(e, _)| e).collect();
    for e in old {
        world.despawn(e);
    }
}

/// The world step at which an environment's scene was loaded: its own step count is the world's
/// ([`crate::sim::SimTime`]) less this, so an environment loaded again while others run counts
/// its steps from 0 as a world of its own would.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EnvStart(pub u64);

impl PerEnv<EnvStart> {
    /// `env`'s own step when the world is at `world_step` (an environment not loaded yet counts
    /// from the world's start).
    pub fn step_of(&self, env: Env, world_step: u64) -> u64 {
        world_step - self.0.get(env.index()).map_or(0, |s| s.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_env_values_are_reached_indexed_and_listed_in_order() {
        let mut v = PerEnv::<u32>::default();
        assert!(v.is_empty());
        *v.reach(Env(2)) = 7;
        assert_eq!(v.0, vec![0, 0, 7]);
        v[Env(1)] = 5;
        assert_eq!(v.iter().map(|(e, x)| (e.0, *x)).collect::<Vec<_>>(), vec![(0, 0), (1, 5), (2, 7)]);
        for (e, x) in v.iter_mut() {
            *x += e.0;
        }
        assert_eq!((*v.only(), v[Env(2)], v.len()), (0, 9, 3));
    }
}
