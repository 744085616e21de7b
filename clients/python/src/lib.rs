//! `crsim._native`: crsim's in-process worlds ([`crsim::vecenv::VecWorlds`]) for Python. The
//! arrays it returns are allocated once and overwritten by every step; the GIL is released while
//! the worlds step. `crsim.VecEnv` (Python) wraps it with Gymnasium's vector API and checks what
//! it is given.

use std::path::PathBuf;
use std::sync::Mutex;

use numpy::{PyArray2, PyArray3, PyArrayMethods, PyReadonlyArray3, PyUntypedArrayMethods};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;

use crsim::run::until::Until;
use crsim::scene::{SceneOverrides, SceneSource, load_scene_file_with};
use crsim::vecenv::observe;
use crsim::vecenv::{ACTION_SIZE, Counts, EnvSpec, MAX_WORLDS, RewardWeights, VecWorlds};

/// The worlds' many small allocations through mimalloc: about 15% more steps a second at 256
/// worlds than the system allocator (docs/programs.md, "How fast").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// E worlds of one scene, stepped together.
#[pyclass(module = "crsim._native")]
struct Worlds {
    inner: Option<VecWorlds>,
    robot_names: Vec<String>,
    groups: Vec<String>,
    obs_sizes: Vec<usize>,
    observations: Py<PyArray2<f32>>,
    rewards: Py<PyArray2<f32>>,
    terminated: Py<PyArray2<bool>>,
    truncated: Py<PyArray2<bool>>,
    counts: Py<PyArray3<f32>>,
}

/// `max_steps`, `until`, reward weights, `message_size`, observation parts, as Python gives them.
type Settings = (u64, Option<String>, Vec<(String, f32)>, usize, Option<Vec<String>>);

/// Observations, rewards, terminated, truncated, counts.
type Buffers = (Py<PyArray2<f32>>, Py<PyArray2<f32>>, Py<PyArray2<bool>>, Py<PyArray2<bool>>, Py<PyArray3<f32>>);

/// Worlds reset between two looks at Ctrl-C.
const RESET_CHUNK: usize = 64;

fn value_error(e: impl std::fmt::Display) -> PyErr {
    PyValueError::new_err(e.to_string())
}

/// Runs `f`; a panic inside it (a bug in crsim) becomes the outer error, a `RuntimeError` naming
/// what failed: pyo3 would raise `PanicException`, a `BaseException` that `except Exception`
/// misses.
fn catch<T>(what: &str, f: impl FnOnce() -> PyResult<T>) -> Result<PyResult<T>, PyErr> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(|panic| {
        let message = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic without a message".into());
        PyRuntimeError::new_err(format!(
            "crsim: {what} failed inside the simulator ({message}); this is a bug in crsim, please report it"
        ))
    })
}

/// [`catch`], the panic as the error.
fn guarded<T>(what: &str, f: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    catch(what, f).unwrap_or_else(Err)
}

#[pymethods]
impl Worlds {
    /// `scene`: a scene file; `seeds`: one per world; `programs`: the robots the environment
    /// drives (the scene's program robots when empty, or names, or `all`); `sets`: `PATH=VALUE`
    /// overrides as `crsim run --set` takes them, one list for every world or a list per world;
    /// `until`: `pens-boxed`, `explored` or None; `weights`: reward weights by count name.
    #[new]
    #[pyo3(signature = (scene, seeds, threads, programs, sets, max_steps, until, weights, message_size=0, observation=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        scene: PathBuf,
        seeds: Vec<u64>,
        threads: usize,
        programs: Vec<String>,
        sets: Vec<Vec<String>>,
        max_steps: u64,
        until: Option<String>,
        weights: Vec<(String, f32)>,
        message_size: usize,
        observation: Option<Vec<String>>,
    ) -> PyResult<Self> {
        guarded("building the worlds", || {
            let each = (max_steps, until, weights, message_size, observation);
            Self::build(py, scene, seeds, threads, programs, sets, each)
        })
    }

    #[getter]
    fn num_envs(&self) -> PyResult<usize> {
        Ok(self.worlds()?.num_worlds())
    }

    #[getter]
    fn robots(&self) -> Vec<String> {
        self.robot_names.clone()
    }

    /// Each driven robot's group (robots of a group observe the same layout), in `robots`' order:
    /// the robots come group by group.
    #[getter]
    fn groups(&self) -> Vec<String> {
        self.groups.clone()
    }

    /// Values of each driven robot's observation, in `robots`' order.
    #[getter]
    fn observation_sizes(&self) -> Vec<usize> {
        self.obs_sizes.clone()
    }

    /// Values of each robot's action: drive and gripper, then its message vector's.
    #[getter]
    fn action_size(&self) -> PyResult<usize> {
        Ok(self.worlds()?.spec().action_size())
    }

    /// The arrays every call overwrites: observations (E, every robot's values one after the
    /// other) float32, rewards (E, R)
    /// float32, terminated and truncated (E, R) bool, counts (E, R, C) float32.
    fn buffers(&self, py: Python<'_>) -> Buffers {
        (
            self.observations.clone_ref(py),
            self.rewards.clone_ref(py),
            self.terminated.clone_ref(py),
            self.truncated.clone_ref(py),
            self.counts.clone_ref(py),
        )
    }

    /// Resets every world (each with `seeds[i]` when given, else its next seed).
    #[pyo3(signature = (seeds=None))]
    fn reset(&mut self, py: Python<'_>, seeds: Option<Vec<u64>>) -> PyResult<()> {
        let mask = vec![true; self.worlds()?.num_worlds()];
        self.reset_at(py, mask, seeds)
    }

    /// Resets the worlds where `mask` (E bools) is true, a few dozen at a time: Ctrl-C between
    /// them raises KeyboardInterrupt (the worlds reset so far are reset, the others as they were).
    #[pyo3(signature = (mask, seeds=None))]
    fn reset_at(&mut self, py: Python<'_>, mask: Vec<bool>, seeds: Option<Vec<u64>>) -> PyResult<()> {
        let caught = catch("a reset", || self.reset_worlds(py, mask, seeds));
        self.unless_panicked(caught)
    }

    /// One step of every world with `actions`, (E, R, A) float32, C-contiguous (the caller
    /// converts other arrays); a value that is not finite is an error naming its world and robot.
    fn step(&mut self, py: Python<'_>, actions: PyReadonlyArray3<'_, f32>) -> PyResult<()> {
        let caught = catch("a step", || self.step_worlds(py, actions));
        self.unless_panicked(caught)
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
    /// [`Worlds::new`]'s work: the settings checked, the worlds built (Ctrl-C between them raises
    /// KeyboardInterrupt), the arrays made.
    fn build(
        py: Python<'_>,
        scene: PathBuf,
        seeds: Vec<u64>,
        threads: usize,
        programs: Vec<String>,
        sets: Vec<Vec<String>>,
        (max_steps, until, weights, message_size, observation): Settings,
    ) -> PyResult<Self> {
        // Before anything is made for them: a million worlds' specs alone would take gigabytes.
        if seeds.is_empty() || seeds.len() > MAX_WORLDS {
            return Err(value_error(format!("{} worlds: give 1 to {MAX_WORLDS}", seeds.len())));
        }
        if max_steps == 0 {
            return Err(value_error("max_steps: give at least 1"));
        }
        let parts = observation
            .map(|names| observe::parse_parts(crsim::run::standard_sensors(), names.iter().map(String::as_str)))
            .transpose()
            .map_err(value_error)?;
        if message_size > 64 {
            return Err(value_error(format!("message_size: {message_size} values is more than 64")));
        }
        let until = match until.as_deref() {
            None => None,
            Some("pens-boxed") => Some(Until::PensBoxed),
            Some("explored") => Some(Until::Explored),
            Some(other) => return Err(value_error(format!("until: {other:?} is not pens-boxed or explored"))),
        };
        let rewards = RewardWeights::from_named(weights.iter().map(|(n, w)| (n.as_str(), *w))).map_err(value_error)?;
        if sets.len() != 1 && sets.len() != seeds.len() {
            return Err(value_error(format!(
                "{} lists of settings for {} worlds (give one, or one a world)",
                sets.len(),
                seeds.len()
            )));
        }
        let each = WorldSettings { max_steps, until, rewards, message_size, parts };
        let specs = py.detach(|| world_specs(&scene, &programs, &sets, seeds.len(), each)).map_err(value_error)?;
        let (obs_sizes, robot_names, groups) = (specs[0].observation_sizes(), specs[0].robots(), specs[0].groups());
        let interrupt = Mutex::new(None);
        let stop = || {
            let err = Python::attach(|py| py.check_signals().err())?;
            let reason = err.to_string();
            *interrupt.lock().unwrap_or_else(|p| p.into_inner()) = Some(err);
            Some(reason)
        };
        let built = py.detach(|| VecWorlds::varied_until(specs, &seeds, threads, stop));
        if let Some(err) = interrupt.into_inner().unwrap_or_else(|p| p.into_inner()) {
            return Err(err);
        }
        let inner = built.map_err(value_error)?;
        let (e, r) = (inner.num_worlds(), inner.robots());
        let observations = PyArray2::<f32>::zeros(py, [e, inner.observation_len()], false).unbind();
        let rewards = PyArray2::<f32>::zeros(py, [e, r], false).unbind();
        let terminated = PyArray2::<bool>::zeros(py, [e, r], false).unbind();
        let truncated = PyArray2::<bool>::zeros(py, [e, r], false).unbind();
        let counts = PyArray3::<f32>::zeros(py, [e, r, Counts::NAMES.len()], false).unbind();
        let worlds = Worlds {
            inner: Some(inner),
            robot_names,
            groups,
            obs_sizes,
            observations,
            rewards,
            terminated,
            truncated,
            counts,
        };
        worlds.publish(py)?;
        Ok(worlds)
    }

    /// [`Worlds::reset_at`]'s work.
    fn reset_worlds(&mut self, py: Python<'_>, mask: Vec<bool>, seeds: Option<Vec<u64>>) -> PyResult<()> {
        let inner = self.worlds_mut()?;
        if mask.len() != inner.num_worlds() {
            return Err(value_error(format!("a mask of {} values for {} worlds", mask.len(), inner.num_worlds())));
        }
        let mut part = vec![false; mask.len()];
        for start in (0..mask.len()).step_by(RESET_CHUNK) {
            let end = (start + RESET_CHUNK).min(mask.len());
            part.fill(false);
            part[start..end].copy_from_slice(&mask[start..end]);
            if part.iter().any(|&m| m) {
                py.detach(|| inner.reset_at(&part, seeds.as_deref())).map_err(value_error)?;
            }
            if let Err(e) = py.check_signals() {
                self.publish(py)?;
                return Err(e);
            }
        }
        self.publish(py)
    }

    /// [`Worlds::step`]'s work.
    fn step_worlds(&mut self, py: Python<'_>, actions: PyReadonlyArray3<'_, f32>) -> PyResult<()> {
        let inner = self.worlds()?;
        let expected = [inner.num_worlds(), inner.robots(), inner.spec().action_size()];
        if actions.shape() != expected {
            return Err(value_error(format!("actions of shape {:?}; expected {expected:?}", actions.shape())));
        }
        let values = actions.as_slice().map_err(value_error)?;
        if let Some(i) = values.iter().position(|v| !v.is_finite()) {
            let (world, rest) = (i / (expected[1] * expected[2]), i % (expected[1] * expected[2]));
            let (robot, value) = (rest / expected[2], rest % expected[2]);
            let x = values[i];
            let x = if x.is_nan() {
                "nan".to_string()
            } else if x > 0.0 {
                "inf".to_string()
            } else {
                "-inf".to_string()
            };
            let name = &self.robot_names[robot];
            return Err(value_error(format!("action value {value} of robot '{name}' in world {world} is {x}")));
        }
        let actions: Vec<f32> = values.to_vec();
        let inner = self.worlds_mut()?;
        py.detach(|| inner.step(&actions)).map_err(value_error)?;
        self.publish(py)
    }

    /// What a call returned; after a panic the worlds may be half-stepped, so they are closed
    /// (every later call raises "the environment is closed").
    fn unless_panicked(&mut self, caught: Result<PyResult<()>, PyErr>) -> PyResult<()> {
        caught.unwrap_or_else(|panic| {
            self.inner = None;
            Err(panic)
        })
    }

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
        let mut counts = self.counts.bind(py).readwrite();
        copy(counts.as_slice_mut().map_err(value_error)?, &inner.counts);
        Ok(())
    }
}

/// What every world's spec has besides its scene.
#[derive(Clone)]
struct WorldSettings {
    max_steps: u64,
    until: Option<Until>,
    rewards: RewardWeights,
    message_size: usize,
    parts: Option<Vec<String>>,
}

/// Each world's spec: the scene file read with `programs` and its list of `sets` (the one list
/// for every world, or world i's); an error names the world whose settings are wrong.
fn world_specs(
    scene: &std::path::Path,
    programs: &[String],
    sets: &[Vec<String>],
    worlds: usize,
    each: WorldSettings,
) -> Result<Vec<EnvSpec>, String> {
    let spec = |list: &[String]| -> Result<EnvSpec, String> {
        let sets = list.iter().map(|s| s.parse()).collect::<Result<Vec<_>, String>>()?;
        let overrides = SceneOverrides { programs: programs.to_vec(), sets };
        let (file, _) = load_scene_file_with(scene, &overrides).map_err(|e| e.to_string())?;
        let WorldSettings { max_steps, until, rewards, message_size, parts } = each.clone();
        let source = SceneSource::File(scene.to_path_buf());
        Ok(EnvSpec { scene: file, source, max_steps, until, rewards, message_size, parts })
    };
    if let [one] = sets {
        return Ok(vec![spec(one)?; worlds]);
    }
    let each = sets.iter().enumerate().map(|(i, list)| spec(list).map_err(|e| format!("world {i}: {e}")));
    each.collect()
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

/// Panics inside the guard every method runs in, for the tests that check a panic reaches
/// Python as a `RuntimeError` (an `Exception`), not as pyo3's `PanicException`.
#[pyfunction]
fn _panic_in_guard() -> PyResult<()> {
    guarded("a deliberate panic", || panic!("as the test asked"))
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Worlds>()?;
    m.add_function(wrap_pyfunction!(_panic_in_guard, m)?)?;
    m.add_function(wrap_pyfunction!(bench_scene, m)?)?;
    m.add("ACTION_SIZE", ACTION_SIZE)?;
    m.add("OBSERVATION_BASE", crsim::vecenv::observe::BASE)?;
    m.add("COUNT_NAMES", Counts::NAMES.to_vec())?;
    m.add("OBSERVATION_PARTS", observe::part_names(crsim::run::standard_sensors()))?;
    Ok(())
}
