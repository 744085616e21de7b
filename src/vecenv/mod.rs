//! crsim inside a program: many independent worlds of one scene, stepped together, with every
//! world's observations, rewards, terminations and truncations in flat arrays that are allocated
//! once and overwritten by every step. The Python module is a thin layer over this.
//!
//! - Each world is a copy of the scene with its own seed, whose program robots the caller drives
//!   ([`ACTION_SIZE`] values each: drive and gripper, then a message vector's when the
//!   environment has one). Worlds of one scene share a Bevy world as its environments
//!   ([`EnvBatch`], [`crate::sim::Env`]): one schedule steps them all, and each has its own
//!   physics context, radio, random streams, hash and step count, so its trajectory is the one
//!   it has alone. A step runs in two parts ([`crate::sim::StepSchedules`]): the rest of the
//!   current step with the actions, then the next step's sense stage, so a world observes what a
//!   program in lock-step reads and its trajectory is the one the program server gives for the
//!   same actions.
//! - [`VecWorlds`] holds E worlds and steps them on up to `threads` threads (the caller's and a
//!   pool of its own, kept from step to step), a share of the worlds each, in one batch (a
//!   world's own passes stay on one thread: many small worlds want their parallelism across
//!   worlds). Which thread or batch runs a world changes nothing in it.
//! - Episodes reset automatically in Gymnasium 1.x's next-step mode: the step after a world's
//!   episode ended resets it instead of stepping it, returning the first observation of the new
//!   episode with zero reward and neither terminated nor truncated.

pub mod bench;
pub mod observe;
pub mod world;

pub use world::{ACTION_SIZE, Counts, EnvBatch, EnvSpec, RewardWeights, RobotOutcome, Turn, batchable};

use std::mem::ManuallyDrop;

use bevy::tasks::{TaskPool, TaskPoolBuilder};

/// The most worlds one environment holds: a world of envbench's one-robot room takes about 58 KB
/// in its batch (`bench_vector.py --worlds 4096 --robots 1`: 298 MiB peak for the whole Python
/// process, 65 MiB with one world), a scene of many robots and pens more, so more than this
/// could ask for more memory than a workstation has (an error says so instead of the allocator
/// failing).
pub const MAX_WORLDS: usize = 65_536;

/// E worlds of one [`EnvSpec`] (or of one spec each, alike in the robots they drive), and the
/// arrays they write into.
pub struct VecWorlds {
    spec: EnvSpec,
    /// The worlds, in order, in batches that each share a Bevy world ([`EnvBatch`]).
    batches: Vec<EnvBatch>,
    /// How many batches each thread steps, in order.
    shares: Vec<usize>,
    /// Worlds in all.
    worlds: usize,
    /// Each world's next seed: its first is the seed given for it, each reset E (the worlds) more.
    seeds: Vec<u64>,
    /// Worlds whose episode ended at the last step (reset by the next one).
    ended: Vec<bool>,
    threads: usize,
    /// The threads besides the caller's that step the worlds, made at the first step that needs
    /// them and kept: a thread started for every step cost more than stepping 16 small worlds.
    pool: Option<Pool>,
    obs_len: usize,
    robots: usize,
    /// (E, values of every robot's observation), flat.
    pub observations: Vec<f32>,
    /// (E, R) each.
    pub rewards: Vec<f32>,
    pub terminated: Vec<bool>,
    pub truncated: Vec<bool>,
    /// (E, R, [`Counts::NAMES`]) each robot's counts in its episode so far.
    pub counts: Vec<f32>,
    outcomes: Vec<RobotOutcome>,
}

impl VecWorlds {
    /// `seeds.len()` worlds of `spec`, world `i` with `seeds[i]`, stepped on up to `threads`
    /// threads; every world reset.
    pub fn new(spec: EnvSpec, seeds: &[u64], threads: usize) -> Result<VecWorlds, String> {
        Self::varied(vec![spec; seeds.len()], seeds, threads)
    }

    /// A world of each of `specs` (domain randomisation: the same scene with other settings),
    /// world `i` with `seeds[i]`. Every spec must drive the same robots with observations of the
    /// same sizes: the arrays have one shape.
    pub fn varied(specs: Vec<EnvSpec>, seeds: &[u64], threads: usize) -> Result<VecWorlds, String> {
        Self::varied_until(specs, seeds, threads, || None)
    }

    /// [`VecWorlds::varied`], asking `stop` after each world it builds (a world takes
    /// milliseconds, thousands take seconds): when it gives a reason, building stops with it as
    /// the error.
    pub fn varied_until(
        specs: Vec<EnvSpec>,
        seeds: &[u64],
        threads: usize,
        mut stop: impl FnMut() -> Option<String>,
    ) -> Result<VecWorlds, String> {
        if specs.len() != seeds.len() {
            return Err(format!("{} world settings for {} seeds", specs.len(), seeds.len()));
        }
        if seeds.is_empty() {
            return Err("an environment needs at least one world".into());
        }
        if seeds.len() > MAX_WORLDS {
            return Err(format!("{} worlds is more than the {MAX_WORLDS} one environment holds", seeds.len()));
        }
        let spec = specs[0].clone();
        let robots = spec.robots().len();
        if robots == 0 {
            return Err(format!(
                "the scene \"{}\" has no program robots for the environment to drive (name some, or all)",
                spec.scene.name
            ));
        }
        alike(&specs)?;
        observes_something(&spec)?;
        drives_differentially(&spec)?;
        spec.groups_alike()?;
        let unknown = crate::run::standard_sensors().check(&spec.scene);
        if !unknown.is_empty() {
            return Err(unknown.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "));
        }
        let obs_len: usize = spec.observation_sizes().iter().sum();
        // Worlds step on threads of their own, a share each; Bevy's compute pool (which its
        // parallel queries use) is made with one thread, or the worlds' systems would queue for
        // it (measured: two threads no faster than one while the pool had two). A pool made
        // before, by other work in the process, is kept.
        bevy::tasks::ComputeTaskPool::get_or_init(|| bevy::tasks::TaskPoolBuilder::new().num_threads(1).build());
        let e = specs.len();
        let threads = threads.max(1).min(e);
        let share = e.div_ceil(threads);
        let (mut batches, mut shares) = (Vec::new(), Vec::new());
        for first in (0..e).step_by(share) {
            let before = batches.len();
            let end = (first + share).min(e);
            // Worlds of one spec share a world, as many as the thread's share has in a row.
            let mut start = first;
            while start < end {
                let alone = batchable(&specs[start].scene).is_err();
                let run = if alone { 1 } else { (start..end).take_while(|&i| specs[i] == specs[start]).count() };
                let mut stopped = None;
                let mut ask = || {
                    stopped = stop();
                    stopped.clone()
                };
                let batch = EnvBatch::new_until(&specs[start], &seeds[start..start + run], &mut ask);
                if let Some(reason) = stopped.or_else(&mut stop) {
                    return Err(reason);
                }
                batches.push(batch.map_err(|e| format!("world {start}: {e}"))?);
                start += run;
            }
            shares.push(batches.len() - before);
        }
        let mut v = VecWorlds {
            spec,
            batches,
            shares,
            worlds: e,
            // World i's k-th episode is seeded `seeds[i] + k·E`: no two episodes of a batch whose
            // first seeds are consecutive share a seed (a step of 1 made world 0's second episode
            // world 1's first).
            seeds: seeds.iter().map(|s| s.wrapping_add(e as u64)).collect(),
            ended: vec![false; e],
            threads,
            pool: None,
            obs_len,
            robots,
            observations: vec![0.0; e * obs_len],
            rewards: vec![0.0; e * robots],
            terminated: vec![false; e * robots],
            truncated: vec![false; e * robots],
            counts: vec![0.0; e * robots * Counts::NAMES.len()],
            outcomes: vec![RobotOutcome::default(); e * robots],
        };
        v.observe_all()?;
        Ok(v)
    }

    pub fn spec(&self) -> &EnvSpec {
        &self.spec
    }

    pub fn num_worlds(&self) -> usize {
        self.worlds
    }

    /// Robots each world's caller drives.
    pub fn robots(&self) -> usize {
        self.robots
    }

    /// Values of one world's observation (every robot's, one after the other).
    pub fn observation_len(&self) -> usize {
        self.obs_len
    }

    /// Resets every world, with `seeds[i]` for world `i` when given (then each later reset of a
    /// world takes its seed + E, + 2E, ... for E worlds), else each with its next seed.
    pub fn reset(&mut self, seeds: Option<&[u64]>) -> Result<(), String> {
        let all = vec![true; self.worlds];
        self.reset_at(&all, seeds)
    }

    /// Resets the worlds where `mask` is true (seeds as [`VecWorlds::reset`] takes them, one per
    /// world, used where the mask is true).
    pub fn reset_at(&mut self, mask: &[bool], seeds: Option<&[u64]>) -> Result<(), String> {
        if mask.len() != self.worlds {
            return Err(format!("a mask of {} values for {} worlds", mask.len(), self.worlds));
        }
        if let Some(s) = seeds {
            if s.len() != self.worlds {
                return Err(format!("{} seeds for {} worlds", s.len(), self.worlds));
            }
            for (i, &seed) in s.iter().enumerate() {
                if mask[i] {
                    self.seeds[i] = seed;
                }
            }
        }
        let turns: Vec<Turn> =
            mask.iter().zip(&self.seeds).map(|(&m, &seed)| if m { Turn::Reset(seed) } else { Turn::Keep }).collect();
        for r in self.for_each_batch(&turns, &[]) {
            r?;
        }
        let robots = self.robots;
        for (i, _) in mask.iter().enumerate().filter(|(_, m)| **m) {
            self.seeds[i] = self.seeds[i].wrapping_add(self.worlds as u64);
            self.ended[i] = false;
            self.rewards[i * robots..(i + 1) * robots].fill(0.0);
            self.terminated[i * robots..(i + 1) * robots].fill(false);
            self.truncated[i * robots..(i + 1) * robots].fill(false);
        }
        Ok(())
    }

    /// Steps every world with `actions` ((E, R, [`EnvSpec::action_size`]) values, flat; the caller
    /// checks their shape and that they are finite). A world whose episode ended at the last
    /// step is reset instead (next-step autoreset). The arrays then hold the step's results.
    pub fn step(&mut self, actions: &[f32]) -> Result<(), String> {
        let per_robot = self.spec.action_size();
        let per_world = self.robots * per_robot;
        if actions.len() != self.worlds * per_world {
            return Err(format!(
                "{} action values for {} worlds of {} robots with {per_robot} values each",
                actions.len(),
                self.worlds,
                self.robots
            ));
        }
        let robots = self.robots;
        let turns: Vec<Turn> = self
            .ended
            .iter()
            .zip(&self.seeds)
            .map(|(&e, &seed)| if e { Turn::Reset(seed) } else { Turn::Step })
            .collect();
        for (i, turn) in turns.iter().enumerate() {
            if *turn != Turn::Step {
                self.outcomes[i * robots..(i + 1) * robots].fill(RobotOutcome::default());
            }
        }
        for r in self.for_each_batch(&turns, actions) {
            r?;
        }
        for (i, turn) in turns.iter().enumerate() {
            if matches!(turn, Turn::Reset(_)) {
                self.seeds[i] = self.seeds[i].wrapping_add(self.worlds as u64);
            }
            let o = &self.outcomes[i * robots..(i + 1) * robots];
            for (k, outcome) in o.iter().enumerate() {
                self.rewards[i * robots + k] = outcome.reward;
                self.terminated[i * robots + k] = outcome.terminated;
                self.truncated[i * robots + k] = outcome.truncated;
            }
            // A world's episode ends when every robot's has (all terminated, or truncated).
            self.ended[i] = o.iter().all(|x| x.terminated || x.truncated);
        }
        Ok(())
    }

    /// Every world's trajectory hash, in crsim's hex form.
    pub fn hashes(&self) -> Vec<String> {
        self.batches.iter().flat_map(|b| (0..b.len()).map(|i| b.hash(i))).collect()
    }

    /// Each world's steps in its current episode.
    pub fn episode_steps(&self) -> Vec<u64> {
        self.batches.iter().flat_map(|b| (0..b.len()).map(|i| b.episode_steps(i))).collect()
    }

    /// Writes every world's observations and counts into the arrays (a step or reset does it on
    /// the worlds' threads); a sensor that panics is an error naming it, the robot and the world.
    fn observe_all(&mut self) -> Result<(), String> {
        let per_world = self.robots * Counts::NAMES.len();
        let mut worlds = self.observations.chunks_mut(self.obs_len).zip(self.counts.chunks_mut(per_world));
        let mut world = 0;
        for b in &mut self.batches {
            for (i, (out, counts)) in (0..b.len()).zip(worlds.by_ref()) {
                b.observe(i, out).map_err(|e| format!("world {world}: {e}"))?;
                b.write_counts(i, counts);
                world += 1;
            }
        }
        Ok(())
    }

    /// Advances every batch as `turns` says (one for each world; `actions` for every world, or
    /// none when no world steps) on up to `threads` threads, a contiguous share of the batches
    /// each, then writes each world's observations and counts into the arrays on the same
    /// thread; the batches' results in order.
    fn for_each_batch(&mut self, turns: &[Turn], actions: &[f32]) -> Vec<Result<(), String>> {
        let (obs_len, per_counts) = (self.obs_len, self.robots * Counts::NAMES.len());
        self.for_each_batch_with(turns, actions, |w| {
            let first = w.first;
            w.batch.advance(w.turns, w.actions, w.outcomes).map_err(|e| format!("worlds from {first}: {e}"))?;
            for i in 0..w.batch.len() {
                w.batch
                    .observe(i, &mut w.obs[i * obs_len..(i + 1) * obs_len])
                    .map_err(|e| format!("world {}: {e}", first + i))?;
                w.batch.write_counts(i, &mut w.counts[i * per_counts..(i + 1) * per_counts]);
            }
            Ok(())
        })
    }

    /// [`VecWorlds::for_each_batch`] with `run` doing each batch's part.
    fn for_each_batch_with(
        &mut self,
        turns: &[Turn],
        actions: &[f32],
        run: impl Fn(&mut Work<'_>) -> Result<(), String> + Sync,
    ) -> Vec<Result<(), String>> {
        let (robots, obs_len) = (self.robots, self.obs_len);
        let per_action = robots * self.spec.action_size();
        let per_counts = robots * Counts::NAMES.len();
        // Each batch with its worlds' turns, actions and parts of the arrays.
        let mut work: Vec<Work<'_>> = Vec::with_capacity(self.batches.len());
        let (mut outcomes, mut obs, mut counts) =
            (&mut self.outcomes[..], &mut self.observations[..], &mut self.counts[..]);
        let mut first = 0;
        for batch in &mut self.batches {
            let n = batch.len();
            let (o, rest) = std::mem::take(&mut outcomes).split_at_mut(n * robots);
            outcomes = rest;
            let (v, rest) = std::mem::take(&mut obs).split_at_mut(n * obs_len);
            obs = rest;
            let (c, rest) = std::mem::take(&mut counts).split_at_mut(n * per_counts);
            counts = rest;
            let a = actions.get(first * per_action..(first + n) * per_action).unwrap_or(&[]);
            work.push(Work {
                batch,
                first,
                turns: &turns[first..first + n],
                actions: a,
                outcomes: o,
                obs: v,
                counts: c,
            });
            first += n;
        }
        if self.threads == 1 || work.len() == 1 {
            return work.iter_mut().map(run).collect();
        }
        let threads = self.threads;
        let pool = Pool::of_this_process(&mut self.pool, threads - 1);
        // Each thread its share of the batches; the caller's thread takes shares too while it
        // waits; results come in the order the shares were spawned, and a panic in one is
        // raised again here.
        let mut parts: Vec<&mut [Work<'_>]> = Vec::with_capacity(self.shares.len());
        let mut rest = &mut work[..];
        for &n in &self.shares {
            let (part, tail) = std::mem::take(&mut rest).split_at_mut(n);
            parts.push(part);
            rest = tail;
        }
        let run = &run;
        pool.scope(|s| {
            for part in parts {
                s.spawn(async move { part.iter_mut().map(run).collect::<Vec<_>>() });
            }
        })
        .into_iter()
        .flatten()
        .collect()
    }
}

/// One batch's part of a call: its worlds' turns and actions, and its parts of the arrays.
struct Work<'a> {
    batch: &'a mut EnvBatch,
    /// Its first world's place in the environment.
    first: usize,
    turns: &'a [Turn],
    actions: &'a [f32],
    outcomes: &'a mut [RobotOutcome],
    obs: &'a mut [f32],
    counts: &'a mut [f32],
}

/// The worlds' threads, with the process that made them. A process forked from the one that made
/// them (Python's multiprocessing, a fork server) has none of them: it makes its own, and leaves
/// the copy it inherited alone rather than wait for threads that are not there.
struct Pool {
    process: u32,
    threads: ManuallyDrop<TaskPool>,
}

impl Pool {
    /// `slot`'s pool if this process made it, else a new one of `workers` threads.
    fn of_this_process(slot: &mut Option<Pool>, workers: usize) -> &TaskPool {
        let here = std::process::id();
        if slot.as_ref().is_some_and(|p| p.process != here) {
            *slot = None;
        }
        let pool = slot.get_or_insert_with(|| Pool {
            process: here,
            threads: ManuallyDrop::new(
                TaskPoolBuilder::new().num_threads(workers).thread_name("crsim worlds".into()).build(),
            ),
        });
        &pool.threads
    }
}

impl Drop for Pool {
    /// Dropping a task pool joins its threads: only the process that made them can.
    fn drop(&mut self) {
        if self.process == std::process::id() {
            // SAFETY: dropped once, here, and never used after.
            unsafe { ManuallyDrop::drop(&mut self.threads) }
        }
    }
}

/// Checks that every driven robot observes at least one value: the parts asked for may give a
/// robot none (`range` without a range sensor, `message` without a message size, or no parts).
/// The environment's actions are a differential drive's (forward, turning, gripper): a
/// holonomic robot it drives would never use its sideways wheels, so it is refused, named.
fn drives_differentially(spec: &EnvSpec) -> Result<(), String> {
    let driven = spec.robots();
    match spec.scene.robots.iter().find(|r| driven.contains(&r.name) && r.drive.max_lateral() > 0.0) {
        None => Ok(()),
        Some(r) => Err(format!(
            "robot {} has a holonomic drive: crsim.VecEnv's actions are a differential drive's (linear, angular, \
             grip), so it would never move sideways; drive it over the program protocol (drive: [linear, angular, \
             lateral]), or give the environment differential robots",
            r.name
        )),
    }
}

fn observes_something(spec: &EnvSpec) -> Result<(), String> {
    let Some((name, _)) = spec.robots().into_iter().zip(spec.observation_sizes()).find(|(_, size)| *size == 0) else {
        return Ok(());
    };
    let parts: Vec<&str> = spec.parts.iter().flatten().map(String::as_str).collect();
    Err(format!(
        "robot {name} observes no values with the observation parts [{}]: name at least one part it has \
         (range needs a range sensor, message a message_size above 0)",
        parts.join(", ")
    ))
}

/// Checks that every world of `specs` drives the robots of the first, with the same observation
/// sizes; the error names the first world that does not.
fn alike(specs: &[EnvSpec]) -> Result<(), String> {
    let (robots, sizes) = (specs[0].robots(), specs[0].observation_sizes());
    for (i, spec) in specs.iter().enumerate().skip(1) {
        let (r, s) = (spec.robots(), spec.observation_sizes());
        if r != robots {
            return Err(format!("world {i} drives the robots {r:?}; world 0 drives {robots:?}"));
        }
        if s != sizes {
            return Err(format!("world {i}'s robots observe {s:?} values; world 0's observe {sizes:?}"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scene::SceneSource;
    use crate::scene::schema::{ControllerSpec, PenSpec, RangeSensorSpec, RobotSpec, SceneFile};

    fn parse<const N: usize>(names: [&str; N]) -> Result<Vec<String>, String> {
        observe::parse_parts(crate::run::standard_sensors(), names)
    }

    /// A 4 x 3 m room with two program robots (one with a range sensor), an idle robot and pens.
    fn spec(max_steps: u64) -> EnvSpec {
        let mut scene = SceneFile::empty("vec", 4.0, 3.0);
        let mut a = RobotSpec::new("a", 1.0, 1.0, 0.0);
        a.controller = ControllerSpec::Program {};
        a.range_sensor = Some(RangeSensorSpec { rays: 5, ..Default::default() });
        let mut b = RobotSpec::new("b", 3.0, 2.0, 90.0);
        b.controller = ControllerSpec::Program {};
        scene.robots = vec![a, b, RobotSpec::new("idle", 2.0, 0.5, 0.0)];
        scene.pens =
            (0..4).map(|i| PenSpec { name: format!("p{i}"), pos: (0.5 + i as f32, 2.5), radius: 0.03 }).collect();
        EnvSpec {
            scene,
            source: SceneSource::Generated,
            max_steps,
            until: None,
            rewards: RewardWeights::default(),
            message_size: 0,
            parts: None,
        }
    }

    /// The actions of the world with `seed` at `step`: its own, wherever it sits in the batch.
    fn actions_for(seed: u64, step: u64) -> [f32; 6] {
        let turn = if (step / 25).is_multiple_of(2) { 0.2 + seed as f32 * 0.05 } else { -0.6 };
        [0.9, turn, 0.0, 0.5, -turn, if step % 40 == 20 { 1.0 } else { 0.0 }]
    }

    fn run(seeds: &[u64], threads: usize, steps: u64) -> Vec<String> {
        let mut v = VecWorlds::new(spec(10_000), seeds, threads).unwrap();
        for step in 0..steps {
            let actions: Vec<f32> = seeds.iter().flat_map(|&s| actions_for(s, step)).collect();
            v.step(&actions).unwrap();
        }
        v.hashes()
    }

    #[test]
    fn a_worlds_trajectory_is_the_same_whatever_the_batch_its_place_and_the_threads() {
        bevy::tasks::ComputeTaskPool::get_or_init(bevy::tasks::TaskPool::new);
        let alone: Vec<String> = [5, 7, 9].iter().map(|&s| run(&[s], 1, 150).remove(0)).collect();
        assert_eq!(run(&[5, 7, 9], 1, 150), alone);
        assert_eq!(run(&[9, 5, 7], 2, 150), vec![alone[2].clone(), alone[0].clone(), alone[1].clone()]);
        assert_eq!(
            run(&[7, 7, 5, 9, 9], 3, 150),
            vec![alone[1].clone(), alone[1].clone(), alone[0].clone(), alone[2].clone(), alone[2].clone()]
        );
        assert_ne!(alone[0], alone[1], "other seeds and actions, other trajectories");
    }

    /// Steps `batch` `n` times, each environment with its seed's actions at its own step.
    fn drive(batch: &mut EnvBatch, seeds: &[u64], from: &mut [u64], n: u64) {
        let mut out = vec![RobotOutcome::default(); 2 * seeds.len()];
        for _ in 0..n {
            let actions: Vec<f32> = seeds.iter().zip(from.iter()).flat_map(|(&s, &k)| actions_for(s, k)).collect();
            batch.advance(&vec![Turn::Step; seeds.len()], &actions, &mut out).unwrap();
            from.iter_mut().for_each(|k| *k += 1);
        }
    }

    /// An environment reset beside others that step, or beside others kept as they are, runs
    /// from there as a fresh world of its seed; the others go on as if nothing happened, their
    /// counts (collisions among them: the bump sensor senses once a step) included.
    #[test]
    fn an_environment_reset_beside_others_leaves_them_alone_and_starts_afresh() {
        let spec = spec(10_000);
        let state = |b: &EnvBatch, i: usize| {
            let mut c = vec![0.0; 2 * Counts::NAMES.len()];
            b.write_counts(i, &mut c);
            (b.hash(i), c)
        };
        let fresh = |seed: u64, n: u64| {
            let mut b = EnvBatch::new(&spec, &[seed]).unwrap();
            drive(&mut b, &[seed], &mut [0], n);
            state(&b, 0)
        };
        let mut batch = EnvBatch::new(&spec, &[1, 2]).unwrap();
        drive(&mut batch, &[1, 2], &mut [0, 0], 60);
        // Environment 1 loaded again with seed 7 while environment 0 is kept as it is.
        let mut out = vec![RobotOutcome::default(); 4];
        batch.advance(&[Turn::Keep, Turn::Reset(7)], &[], &mut out).unwrap();
        assert_eq!((batch.episode_steps(0), batch.episode_steps(1), batch.step_count(1)), (60, 0, 0));
        drive(&mut batch, &[1, 7], &mut [60, 0], 90);
        assert_eq!(state(&batch, 0), fresh(1, 150));
        assert_eq!(state(&batch, 1), fresh(7, 90));
        // Environment 0 loaded again with seed 8 while environment 1 steps.
        let actions: Vec<f32> = [actions_for(1, 150), actions_for(7, 90)].concat();
        batch.advance(&[Turn::Reset(8), Turn::Step], &actions, &mut out).unwrap();
        drive(&mut batch, &[8, 7], &mut [0, 91], 40);
        assert_eq!(state(&batch, 0), fresh(8, 40));
        assert_eq!(state(&batch, 1), fresh(7, 131));
        assert_ne!(fresh(1, 40), fresh(8, 40), "another seed, another trajectory");
    }

    /// The worlds' threads are kept from step to step; a panic in one thread's share comes back
    /// to the caller (the Python module makes it an exception), and the worlds step on after it.
    #[test]
    fn a_panic_in_a_share_reaches_the_caller_and_the_pool_steps_on() {
        let mut v = VecWorlds::new(spec(3), &[1, 2, 3, 4], 2).unwrap();
        let still = [0.0f32; 4 * 2 * ACTION_SIZE];
        v.step(&still).unwrap();
        assert!(v.pool.is_some(), "the pool is made at the first step on two threads");
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let keep = vec![Turn::Keep; 4];
            v.for_each_batch_with(&keep, &[], |w| {
                if let Some(i) = (w.first..w.first + w.batch.len()).find(|&i| i == 3) {
                    panic!("world {i} broke")
                }
                Ok(())
            })
        }));
        let payload = caught.expect_err("the panic is raised on the caller");
        assert_eq!(payload.downcast_ref::<String>().map(String::as_str), Some("world 3 broke"));
        let steps = v.episode_steps();
        v.step(&still).unwrap();
        assert_eq!(v.episode_steps(), steps.iter().map(|s| s + 1).collect::<Vec<_>>());
    }

    #[test]
    fn shapes_follow_the_robots_and_their_sensors() {
        let v = VecWorlds::new(spec(100), &[1, 2], 1).unwrap();
        assert_eq!((v.num_worlds(), v.robots(), v.observation_len()), (2, 2, observe::BASE + 5 + observe::BASE));
        assert_eq!((v.observations.len(), v.rewards.len(), v.terminated.len()), (2 * (2 * 28 + 5), 4, 4));
        // a sees the room's walls within its sensor's 3 m in some direction; every value in range.
        let beams = &v.observations[observe::BASE..observe::BASE + 5];
        assert!(beams.iter().any(|&d| d < 1.0) && beams.iter().all(|&d| (0.0..=1.0).contains(&d)), "{beams:?}");
        assert!(v.observations.iter().all(|x| (-1.0..=1.0).contains(x)));
    }

    #[test]
    fn an_ended_episode_resets_at_the_next_step_with_the_worlds_next_seed() {
        let mut v = VecWorlds::new(spec(3), &[11, 20], 1).unwrap();
        let first = v.observations.clone();
        let still = [0.0f32; 12];
        for _ in 0..2 {
            v.step(&still).unwrap();
            assert!(v.truncated.iter().all(|t| !t));
        }
        v.step(&still).unwrap();
        assert!(v.truncated.iter().all(|&t| t), "the third step reaches max_steps");
        assert_eq!(v.episode_steps(), vec![3, 3]);
        // Next step: reset instead of a step; the actions are not used.
        let moving = [1.0f32; 12];
        v.step(&moving).unwrap();
        assert!(v.truncated.iter().chain(&v.terminated).all(|t| !t));
        assert!(v.rewards.iter().all(|&r| r == 0.0));
        assert_eq!(v.episode_steps(), vec![0, 0]);
        // The new episodes' seeds are 11 + 2 and 20 + 2 (two worlds: each world's next is its
        // last + 2, so no two episodes share one): the first observation of those worlds.
        let fresh = VecWorlds::new(spec(3), &[13, 22], 1).unwrap();
        assert_eq!(v.observations, fresh.observations);
        assert_eq!(first.len(), v.observations.len());
        assert_eq!(v.hashes(), fresh.hashes());
    }

    #[test]
    fn rewards_count_new_cells_and_a_reset_at_a_mask_resets_only_those_worlds() {
        let mut v = VecWorlds::new(spec(1000), &[1, 2], 1).unwrap();
        let ahead = [1.0f32, 0.0, 0.0, 1.0, 0.0, 0.0];
        let mut total = [0.0f32; 4];
        for _ in 0..100 {
            v.step(&[ahead, ahead].concat()).unwrap();
            for (t, r) in total.iter_mut().zip(&v.rewards) {
                *t += r;
            }
        }
        // Driving 100 steps straight on enters new cells of 0.2 m (0.01 each) and maybe a wall.
        assert!(total.iter().all(|&t| t != 0.0), "{total:?}");
        let before = v.hashes();
        v.reset_at(&[false, true], None).unwrap();
        assert_eq!(v.hashes()[0], before[0]);
        assert_eq!(v.episode_steps(), vec![100, 0]);
    }

    #[test]
    fn bad_calls_are_errors_naming_what_is_wrong() {
        let mut v = VecWorlds::new(spec(10), &[1], 1).unwrap();
        let e = v.step(&[0.0; 5]).unwrap_err();
        assert_eq!(e, "5 action values for 1 worlds of 2 robots with 3 values each");
        assert!(v.reset_at(&[true, false], None).unwrap_err().contains("a mask of 2 values for 1 worlds"));
        let mut none = spec(10);
        none.scene.robots.iter_mut().for_each(|r| r.controller = ControllerSpec::Idle);
        let e = VecWorlds::new(none, &[1], 1).err().unwrap();
        assert!(e.contains("has no program robots"), "{e}");
        assert!(VecWorlds::new(spec(10), &[], 1).err().unwrap().contains("at least one world"));
        // Parts that give a robot nothing to observe (once a panic on a chunk size of 0).
        let mut none = spec(10);
        none.parts = Some(parse(["range"]).unwrap());
        let e = VecWorlds::new(none.clone(), &[1], 1).err().unwrap();
        assert!(e.contains("observes no values with the observation parts [range]"), "{e}");
        none.parts = Some(vec![]);
        let e = VecWorlds::new(none, &[1], 1).err().unwrap();
        assert!(e.contains("observes no values with the observation parts []"), "{e}");
        let e = VecWorlds::new(spec(10), &vec![0; MAX_WORLDS + 1], 1).err().unwrap();
        assert_eq!(e, "65537 worlds is more than the 65536 one environment holds");
    }

    #[test]
    fn counts_are_written_and_a_picked_pen_is_rewarded_by_its_weight() {
        // a faces a pen 0.2 m ahead: driving to it with the gripper closing picks it up.
        let mut sp = spec(1000);
        sp.scene.pens[0].pos = (1.3, 1.0);
        sp.rewards = RewardWeights::from_named([("picked", 5.0), ("visited", 0.0), ("collisions", 0.0)]).unwrap();
        let mut v = VecWorlds::new(sp, &[1], 1).unwrap();
        let n = Counts::NAMES.len();
        assert_eq!(v.counts.len(), 2 * n);
        assert_eq!(v.counts[2], 1.0, "a has visited its first cell");
        assert!(v.counts[5] > 0.9 && v.counts[5] <= 1.0, "a full battery: {}", v.counts[5]);
        let mut total = 0.0;
        for _ in 0..60 {
            v.step(&[0.3, 0.0, 1.0, 0.0, 0.0, 0.0]).unwrap();
            total += v.rewards[0];
        }
        assert_eq!(v.counts[1], 1.0, "a picked the pen up: {:?}", &v.counts[..n]);
        assert_eq!(total, 5.0);
        assert_eq!(v.counts[n + 1], 0.0, "b picked nothing");
    }

    #[test]
    fn reward_weights_are_named_as_the_counts_are() {
        let w = RewardWeights::from_named([("battery", 2.0), ("heard", 0.5)]).unwrap();
        assert_eq!(w.values(), [1.0, 0.0, 0.01, -0.1, 0.5, 2.0]);
        let before = Counts { battery: 0.5, ..Default::default() };
        let now = Counts { boxed: 1, heard: 2, battery: 0.25, ..before };
        assert_eq!(w.reward(&before, &now), 1.0 + 1.0 - 0.5);
        let e = RewardWeights::from_named([("pens", 1.0)]).unwrap_err();
        assert_eq!(e, "reward weight \"pens\" is not one of boxed, picked, visited, collisions, heard, battery");
        assert!(RewardWeights::from_named([("boxed", f32::NAN)]).unwrap_err().contains("finite"));
    }

    #[test]
    fn worlds_of_varied_settings_step_together_each_as_it_would_alone() {
        let mut slow = spec(10_000);
        slow.scene.robots[0].max_speed = 0.1;
        let specs = vec![spec(10_000), slow.clone()];
        let mut v = VecWorlds::varied(specs, &[3, 3], 2).unwrap();
        let mut alone = VecWorlds::new(slow, &[3], 1).unwrap();
        for step in 0..60 {
            let a = actions_for(3, step);
            v.step(&[a, a].concat()).unwrap();
            alone.step(&a).unwrap();
        }
        let hashes = v.hashes();
        assert_ne!(hashes[0], hashes[1], "another top speed, another trajectory");
        assert_eq!(hashes[1], alone.hashes()[0]);
        // Worlds that drive other robots, or observe other sizes, cannot share the arrays.
        let mut other = spec(10);
        other.scene.robots[1].controller = ControllerSpec::Idle;
        let e = VecWorlds::varied(vec![spec(10), other], &[1, 2], 1).err().unwrap();
        assert_eq!(e, "world 1 drives the robots [\"a\"]; world 0 drives [\"a\", \"b\"]");
        let mut wider = spec(10);
        wider.scene.robots[0].range_sensor = Some(RangeSensorSpec { rays: 9, ..Default::default() });
        let e = VecWorlds::varied(vec![spec(10), wider], &[1, 2], 1).err().unwrap();
        assert_eq!(e, "world 1's robots observe [37, 28] values; world 0's observe [33, 28]");
    }

    #[test]
    fn driven_robots_come_group_by_group_each_group_in_scene_order() {
        let mut sp = spec(10);
        let mut c = RobotSpec::new("c", 2.0, 2.5, 0.0);
        c.controller = ControllerSpec::Program {};
        c.range_sensor = Some(RangeSensorSpec { rays: 5, ..Default::default() });
        sp.scene.robots.push(c);
        assert_eq!(sp.robots(), ["a", "c", "b"]);
        assert_eq!(sp.groups(), ["range5", "range5", "camera"]);
        assert_eq!(sp.observation_sizes(), [33, 33, 28]);
        let v = VecWorlds::new(sp, &[1], 1).unwrap();
        // c's beams are the second block of range values, b's base values the last 28.
        assert_eq!(v.observation_len(), 33 + 33 + 28);
    }

    #[test]
    fn message_vectors_travel_by_radio_and_arrive_as_the_mean_heard() {
        let mut sp = spec(100);
        sp.message_size = 2;
        assert_eq!((sp.action_size(), sp.observation_sizes()), (5, vec![28 + 5 + 2, 28 + 2]));
        let mut v = VecWorlds::new(sp, &[1], 1).unwrap();
        let (a_len, b_len) = (35, 30);
        for _ in 0..3 {
            // a says (0.5, -0.25), b says (3, 0.1): clamped to 1.
            v.step(&[0.0, 0.0, 0.0, 0.5, -0.25, 0.0, 0.0, 0.0, 3.0, 0.1]).unwrap();
        }
        let (a, b) = (&v.observations[..a_len], &v.observations[a_len..a_len + b_len]);
        assert_eq!(&a[33..], &[1.0, 0.1], "a hears b's vector");
        assert_eq!(&b[28..], &[0.5, -0.25], "b hears a's");
        assert_eq!(a[27], 0.1, "one message heard this step");
        let heard = v.counts[4];
        assert!(heard >= 2.0, "a's count of messages heard: {heard}");
        let e = v.step(&[0.0; 6]).unwrap_err();
        assert_eq!(e, "6 action values for 1 worlds of 2 robots with 5 values each");
    }

    #[test]
    fn an_environment_observes_the_parts_it_names_in_layout_order() {
        let full = VecWorlds::new(spec(10), &[4], 1).unwrap();
        let mut sp = spec(10);
        sp.parts = Some(parse(["range", "pose", "camera"]).unwrap());
        assert_eq!(sp.observation_sizes(), [4 + 16 + 5, 4 + 16]);
        assert_eq!(sp.groups(), ["range5", "camera"]);
        let v = VecWorlds::new(sp, &[4], 1).unwrap();
        let (a, b) = (&full.observations[..33], &full.observations[33..]);
        let want: Vec<f32> = [&a[0..4], &a[11..27], &a[28..33], &b[0..4], &b[11..27]].concat();
        assert_eq!(v.observations, want);
        // Without the range part, a and b observe one layout: one group.
        let mut sp = spec(10);
        sp.parts = Some(parse(["pose"]).unwrap());
        assert_eq!(
            (sp.observation_sizes(), sp.groups()),
            (vec![4, 4], vec!["camera".to_string(), "camera".to_string()])
        );
        let e = parse(["pose", "lidar"]).unwrap_err();
        assert_eq!(
            e,
            "observation part \"lidar\" is not one of pose, motion, battery, contact, gripper, camera, heard, range, message"
        );
    }

    #[test]
    fn the_task_ending_terminates_every_robots_episode() {
        use crate::scene::schema::BoxSpec;
        // a faces a pen and, beyond it, a box: driving on with the gripper closed carries the
        // pen to the box's wall; opening drops it in: every pen is boxed.
        let mut scene = SceneFile::empty("task", 3.0, 2.0);
        let mut a = RobotSpec::new("a", 0.8, 1.0, 0.0);
        a.controller = ControllerSpec::Program {};
        scene.robots = vec![a];
        scene.pens = vec![PenSpec { name: "p".into(), pos: (1.1, 1.0), radius: 0.03 }];
        scene.boxes = vec![BoxSpec { name: "b".into(), center: (2.0, 1.0), size: (0.4, 0.4), angle: 0.0 }];
        let mut sp = EnvSpec {
            scene,
            source: SceneSource::Generated,
            max_steps: 1000,
            until: Some(crate::run::until::Until::PensBoxed),
            rewards: RewardWeights::default(),
            message_size: 0,
            parts: None,
        };
        sp.rewards.visited = 0.0;
        sp.rewards.collisions = 0.0;
        let mut v = VecWorlds::new(sp, &[1], 1).unwrap();
        let mut total = 0.0;
        for _ in 0..250 {
            v.step(&[0.6, 0.0, 1.0]).unwrap();
            total += v.rewards[0];
            assert!(!v.terminated[0], "not done while the pen is carried");
        }
        assert_eq!(v.counts[1], 1.0, "a carries the pen");
        v.step(&[0.0, 0.0, -1.0]).unwrap();
        total += v.rewards[0];
        assert!(v.terminated[0] && !v.truncated[0], "the pen is boxed: the task is done");
        assert_eq!(total, 1.0, "one pen boxed");
        v.step(&[0.0, 0.0, 0.0]).unwrap();
        assert_eq!(v.episode_steps(), vec![0], "the next step reset the world");
    }

    #[test]
    fn robots_of_a_kind_are_one_group_and_a_holonomic_robot_is_refused_by_name() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/kinds.ron");
        let with = |programs: &[&str]| {
            let overrides = crate::scene::SceneOverrides {
                programs: programs.iter().map(|p| p.to_string()).collect(),
                sets: vec![],
            };
            let scene = crate::scene::load_scene_file_with(&path, &overrides).unwrap().0;
            EnvSpec { scene, ..spec(100) }
        };
        let scouts = with(&["scout1", "scout2"]);
        assert_eq!(scouts.groups(), ["scout", "scout"]);
        let v = VecWorlds::new(scouts.clone(), &[1, 2], 1).unwrap();
        // pose 6, bump 1, range 16, radio 1, battery 2: the kind's sensors in its order.
        assert_eq!(v.spec().observation_sizes(), vec![26, 26]);
        let Err(e) = VecWorlds::new(with(&["scout1", "carrier"]), &[1], 1) else { panic!("a holonomic robot") };
        assert!(e.starts_with("robot carrier has a holonomic drive"), "{e}");
        // A scout that overrides its kind's sensors does not observe as its group does.
        let mut odd = scouts;
        odd.scene.robots[1].sensors = Some(vec!["pose".into()]);
        let Err(e) = VecWorlds::new(odd, &[1], 1) else { panic!("two layouts in one group") };
        assert!(e.starts_with("robots scout1 and scout2 are of one group (scout) but observe different parts"), "{e}");
    }
}
