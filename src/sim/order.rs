//! The stable order of robots: environment by environment ([`crate::sim::Env`]), each
//! environment's robots in their position in its scene's robot list. Every per-robot pass whose
//! result depends on order (the hash, the gripper's ties, the radio's loss draws) walks robots in
//! this order, never in Bevy's query order, which differs between the app and a headless run.

use std::ops::Range;

use bevy::prelude::*;

use super::env::Env;

/// All robots of the world: environment 0's in scene order, then environment 1's, and so on.
#[derive(Resource, Debug, Clone, Default)]
pub struct RobotOrder(pub Vec<Entity>, Vec<Range<usize>>);

impl RobotOrder {
    /// The order of a world of one environment.
    pub fn single(robots: Vec<Entity>) -> RobotOrder {
        let all = 0..robots.len();
        RobotOrder(robots, vec![all])
    }

    /// `env`'s robots in scene order (none for an environment not loaded).
    pub fn of(&self, env: Env) -> &[Entity] {
        self.1.get(env.index()).map_or(&[], |r| &self.0[r.clone()])
    }

    /// Each environment with its robots, in order.
    pub fn envs(&self) -> impl Iterator<Item = (Env, &[Entity])> {
        self.1.iter().enumerate().map(|(i, r)| (Env(i as u32), &self.0[r.clone()]))
    }

    /// Makes `robots` `env`'s, in place of those it had: the others keep their places when it
    /// has as many as before (an environment loaded again with its own scene).
    pub fn set(&mut self, env: Env, robots: Vec<Entity>) {
        while self.1.len() <= env.index() {
            let end = self.0.len();
            self.1.push(end..end);
        }
        let range = self.1[env.index()].clone();
        if range.len() == robots.len() {
            self.0[range].copy_from_slice(&robots);
            return;
        }
        let grown = robots.len() as isize - range.len() as isize;
        self.0.splice(range.clone(), robots);
        self.1[env.index()] = range.start..(range.end as isize + grown) as usize;
        for r in &mut self.1[env.index() + 1..] {
            *r = (r.start as isize + grown) as usize..(r.end as isize + grown) as usize;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_environment_set_again_keeps_the_others_in_place() {
        let e = |i: u32| Entity::from_raw_u32(i + 1).unwrap();
        let mut order = RobotOrder::default();
        order.set(Env(1), vec![e(10), e(11)]);
        assert_eq!((order.of(Env(0)), order.of(Env(1))), (&[][..], &[e(10), e(11)][..]));
        order.set(Env(0), vec![e(1)]);
        order.set(Env(2), vec![e(20)]);
        assert_eq!(order.0, vec![e(1), e(10), e(11), e(20)]);
        // As many as before: in place.
        order.set(Env(1), vec![e(12), e(13)]);
        assert_eq!(order.0, vec![e(1), e(12), e(13), e(20)]);
        // Fewer, then more: the later ones move.
        order.set(Env(1), vec![e(14)]);
        assert_eq!((order.of(Env(1)), order.of(Env(2))), (&[e(14)][..], &[e(20)][..]));
        order.set(Env(0), vec![e(2), e(3), e(4)]);
        let envs: Vec<(u32, Vec<Entity>)> = order.envs().map(|(env, r)| (env.0, r.to_vec())).collect();
        assert_eq!(envs, vec![(0, vec![e(2), e(3), e(4)]), (1, vec![e(14)]), (2, vec![e(20)])]);
        assert_eq!(order.of(Env(5)), &[][..]);
        assert_eq!(RobotOrder::single(vec![e(1)]).of(Env::FIRST), &[e(1)][..]);
    }
}
