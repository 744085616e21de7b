//! `crsim._native`: crsim's in-process worlds ([`crsim::vecenv::VecWorlds`]) for Python. The
//! arrays it returns are allocated once and overwritten by every step; the GIL is released while
//! the worlds step. `crsim.VecEnv` (Python) wraps it with Gymnasium's vector API and checks what
//! it is given.

use std::path::PathBuf;

use numpy::{PyArray2, PyArray3, PyArrayMethods, PyReadonlyArray1};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;

use crsim::run::until::Until;
use crsim::scene::{SceneOverrides, SceneSource, load_scene_file_with};
use crsim::vecenv::{ACTION_SIZE, EnvSpec, RewardWeights, VecWorlds};

/// E worlds of one scene, stepped together.
#[pyclass(module = "crsim._native")]
struct Worlds {
    inner: Option<VecWorlds>,
    robot_names: Vec<String>,
    obs_size: usize,
    observations: Py<PyArray3<f32>>,
    rewards: Py<PyArray2<f32>>,
    terminated: Py<PyArray2<bool>>,
    truncated: Py<PyArray2<bool>>,
}

/// Observations, rewards, terminated, truncated.
type Buffers = (Py<PyArray3<f32>>, Py<PyArray2<f32>>, Py<PyArray2<bool>>, Py<PyArray2<bool>>);

fn value_error(e: impl std::fmt::Display) -> PyErr {
    PyValueError::new_err(e.to_string())
}

#[pymethods]
impl Worlds {
    /// `scene`: a scene file; `seeds`: one per world; `programs`: the robots the environment
    /// drives (the scene's program robots when empty, or names, or `all`); `sets`: `PATH=VALUE`
    /// overrides as `crsim run --set` takes them; `until`: `pens-boxed`, `explored` or None.
    #[new]
    #[pyo3(signature = (scene, seeds, threads, programs, sets, max_steps, until, reward_boxed, reward_visited, reward_collisions))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        scene: PathBuf,
        seeds: Vec<u64>,
        threads: usize,
        programs: Vec<String>,
        sets: Vec<String>,
        max_steps: u64,
        until: Option<String>,
        reward_boxed: f32,
        reward_visited: f32,
        reward_collisions: f32,
    ) -> PyResult<Self> {
        let sets = sets.iter().map(|s| s.parse()).collect::<Result<Vec<_>, String>>().map_err(value_error)?;
        let overrides = SceneOverrides { programs, sets };
        let (file, _) = load_scene_file_with(&scene, &overrides).map_err(value_error)?;
        let until = match until.as_deref() {
            None => None,
            Some("pens-boxed") => Some(Until::PensBoxed),
            Some("explored") => Some(Until::Explored),
            Some(other) => return Err(value_error(format!("until: {other:?} is not pens-boxed or explored"))),
        };
        let spec = EnvSpec {
            scene: file,
            source: SceneSource::File(scene),
            max_steps,
            until,
            rewards: RewardWeights { boxed: reward_boxed, visited: reward_visited, collisions: reward_collisions },
        };
        let sizes = spec.observation_sizes();
        let robot_names = spec.robots();
        if sizes.windows(2).any(|w| w[0] != w[1]) {
            let list: Vec<String> = robot_names.iter().zip(&sizes).map(|(n, s)| format!("{n}: {s}")).collect();
            return Err(value_error(format!(
                "the driven robots observe different numbers of values ({}); give them the same sensors",
                list.join(", ")
            )));
        }
        let inner = py.detach(|| VecWorlds::new(spec, &seeds, threads)).map_err(value_error)?;
        let (e, r) = (inner.num_worlds(), inner.robots());
        let obs_size = inner.observation_len() / r;
        let observations = PyArray3::<f32>::zeros(py, [e, r, obs_size], false).unbind();
        let rewards = PyArray2::<f32>::zeros(py, [e, r], false).unbind();
        let terminated = PyArray2::<bool>::zeros(py, [e, r], false).unbind();
        let truncated = PyArray2::<bool>::zeros(py, [e, r], false).unbind();
        let worlds = Worlds { inner: Some(inner), robot_names, obs_size, observations, rewards, terminated, truncated };
        worlds.publish(py)?;
        Ok(worlds)
    }

    #[getter]
    fn num_envs(&self) -> PyResult<usize> {
        Ok(self.worlds()?.num_worlds())
    }

    #[getter]
    fn robots(&self) -> Vec<String> {
        self.robot_names.clone()
    }

    #[getter]
    fn observation_size(&self) -> usize {
        self.obs_size
    }

    #[getter]
    fn action_size(&self) -> usize {
        ACTION_SIZE
    }

    /// The arrays every call overwrites: observations (E, R, D) float32, rewards (E, R)
    /// float32, terminated and truncated (E, R) bool.
    fn buffers(&self, py: Python<'_>) -> Buffers {
        (
            self.observations.clone_ref(py),
            self.rewards.clone_ref(py),
            self.terminated.clone_ref(py),
            self.truncated.clone_ref(py),
        )
    }

    /// Resets every world (each with `seeds[i]` when given, else its next seed).
    #[pyo3(signature = (seeds=None))]
    fn reset(&mut self, py: Python<'_>, seeds: Option<Vec<u64>>) -> PyResult<()> {
        let inner = self.worlds_mut()?;
        py.detach(|| inner.reset(seeds.as_deref())).map_err(value_error)?;
        self.publish(py)
    }

    /// Resets the worlds where `mask` (E bools) is true.
    #[pyo3(signature = (mask, seeds=None))]
    fn reset_at(&mut self, py: Python<'_>, mask: Vec<bool>, seeds: Option<Vec<u64>>) -> PyResult<()> {
        let inner = self.worlds_mut()?;
        py.detach(|| inner.reset_at(&mask, seeds.as_deref())).map_err(value_error)?;
        self.publish(py)
    }

    /// One step of every world with `actions`, (E * R * 3) float32 values, contiguous and
    /// finite (checked by the caller).
    fn step(&mut self, py: Python<'_>, actions: PyReadonlyArray1<'_, f32>) -> PyResult<()> {
        let actions: Vec<f32> = actions.as_slice().map_err(value_error)?.to_vec();
        let inner = self.worlds_mut()?;
        py.detach(|| inner.step(&actions)).map_err(value_error)?;
        self.publish(py)
    }

    /// Every world's trajectory hash, in crsim's hex form.
    fn hashes(&self) -> PyResult<Vec<String>> {
        Ok(self.worlds()?.hashes())
    }

    /// Each world's steps in its current episode.
    fn episode_steps(&self) -> PyResult<Vec<u64>> {
        Ok(self.worlds()?.episode_steps())
    }

    /// Frees the worlds; any later call raises.
    fn close(&mut self) {
        self.inner = None;
    }

    #[getter]
    fn closed(&self) -> bool {
        self.inner.is_none()
    }
}

impl Worlds {
    fn worlds(&self) -> PyResult<&VecWorlds> {
        self.inner.as_ref().ok_or_else(|| PyRuntimeError::new_err("the environment is closed"))
    }

    fn worlds_mut(&mut self) -> PyResult<&mut VecWorlds> {
        self.inner.as_mut().ok_or_else(|| PyRuntimeError::new_err("the environment is closed"))
    }

    /// Copies the worlds' results into the arrays Python holds.
    fn publish(&self, py: Python<'_>) -> PyResult<()> {
        let inner = self.worlds()?;
        let copy = |dst: &mut [f32], src: &[f32]| dst.copy_from_slice(src);
        let mut obs = self.observations.bind(py).readwrite();
        copy(obs.as_slice_mut().map_err(value_error)?, &inner.observations);
        let mut rewards = self.rewards.bind(py).readwrite();
        copy(rewards.as_slice_mut().map_err(value_error)?, &inner.rewards);
        let mut terminated = self.terminated.bind(py).readwrite();
        terminated.as_slice_mut().map_err(value_error)?.copy_from_slice(&inner.terminated);
        let mut truncated = self.truncated.bind(py).readwrite();
        truncated.as_slice_mut().map_err(value_error)?.copy_from_slice(&inner.truncated);
        Ok(())
    }
}

/// The scene text of `crsim envbench`'s room for `robots` program robots (camera and a 16-beam
/// range sensor each).
#[pyfunction]
fn bench_scene(robots: usize) -> PyResult<String> {
    if !(1..=10_000).contains(&robots) {
        return Err(value_error(format!("robots: {robots} is not 1 to 10,000")));
    }
    Ok(crsim::scene::load::to_ron(&crsim::vecenv::bench::bench_room(robots)))
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Worlds>()?;
    m.add_function(wrap_pyfunction!(bench_scene, m)?)?;
    m.add("ACTION_SIZE", ACTION_SIZE)?;
    m.add("OBSERVATION_BASE", crsim::vecenv::observe::BASE)?;
    Ok(())
}
