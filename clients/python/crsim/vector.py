"""Many crsim worlds inside this process, stepped together into numpy arrays.

``VecEnv(scene, num_envs=E)`` holds E independent worlds of one scene, each with its own seed
(``seed + i`` unless ``seeds`` are given; world i's k-th episode after it ``seed + k·E + i``, so
no two episodes share one), and steps them together on ``threads`` threads with
the GIL released. The robots it drives are the scene's program robots (``programs``: names, or
``"all"``). Every robot observes ``observation_size`` float32 values (the layout is crsim's
``vecenv::observe``: position, heading, speeds, battery, contacts, gripper, the nearest pen, box,
station and robot the camera sees, messages heard, then the range sensor's beams) and acts with
3 values: linear and angular speed as fractions of its maxima, and the gripper (above 0.5
close, below -0.5 open), then, with ``message_size`` M > 0, M values broadcast over the radio
(each robot's observation then ends with the mean of the vectors delivered to it that step;
``action_size`` is 3 + M).

The arrays ``reset`` and ``step`` return are allocated once and overwritten by the next call
(``copy=True`` gives copies).

``observation`` names the parts each robot observes (``OBSERVATION_PARTS``: pose, motion,
battery, contact, gripper, camera, heard, range, message), kept in the layout's order; all of
them by default. The range sensor's beams come from the scene (``sets`` can change them:
``"robots[*].range_sensor=Some((rays: 8))"``).

Rewards weigh crsim's own counts for each robot (``counts``, (E, R, C) in the order of
``COUNT_NAMES``: pens boxed, pens picked up, cells visited, collisions, messages heard, battery
level) by ``reward_weights`` (a dict by count name), or come from ``reward_fn(counts_before,
counts, observations_before, observations)``, a function of arrays that returns (E, R) rewards.

Per-world settings (domain randomisation): ``sets`` are ``crsim run --set`` overrides for every
world; ``world_sets`` adds world i's own, as a list of E lists or a function of i, e.g.
``world_sets=lambda i: [f"comms.probability={1 - i / 100}"]``.

Episodes end per robot (terminated: empty battery or ``until``'s task done; truncated:
``max_steps``), and a world whose robots are all done resets itself at the next step, as Gymnasium 1.x's ``AutoresetMode.NEXT_STEP`` describes: that step returns the new
episode's first observation with zero rewards.
"""

import os

import numpy as np

from . import _checks as checks

try:
    from . import _native
except ImportError as e:  # a source checkout without the built module
    raise ImportError("crsim's native module is missing: install the package with "
                      "`pip install ./clients/python` (it builds the module with cargo)") from e

ACTION_SIZE = _native.ACTION_SIZE
#: The most threads one ``VecEnv`` steps on.
MAX_THREADS = 1024
COUNT_NAMES = tuple(_native.COUNT_NAMES)
OBSERVATION_PARTS = tuple(_native.OBSERVATION_PARTS)

try:  # Gymnasium's name for the mode, when it is installed
    from gymnasium.vector import AutoresetMode

    NEXT_STEP = AutoresetMode.NEXT_STEP
except ImportError:
    NEXT_STEP = "NextStep"


class VecEnv:
    """E worlds of ``scene``: observations (E, R, D), rewards, terminations and truncations
    (E, R), actions (E, R, 3)."""

    metadata = {"autoreset_mode": NEXT_STEP, "render_modes": []}

    def __init__(self, scene, num_envs=1, seed=None, seeds=None, threads=None, programs=None, max_steps=1000,
                 until=None, reward_weights=None, reward_fn=None, sets=(), world_sets=None, message_size=0,
                 observation=None):
        self._args = (scene, dict(num_envs=num_envs, seed=seed, seeds=seeds, threads=threads, programs=programs,
                                  max_steps=max_steps, until=until, reward_weights=reward_weights,
                                  reward_fn=reward_fn, sets=sets, world_sets=world_sets,
                                  message_size=message_size, observation=observation))
        num_envs = checks.worlds("num_envs", num_envs)
        if seeds is None:
            base = 0 if seed is None else checks.seed("seed", seed)
            seeds = episode_seeds(base, num_envs)
        else:
            if seed is not None:
                raise ValueError("give seed or seeds, not both")
            if isinstance(seeds, (str, bytes)) or not hasattr(seeds, "__len__"):
                raise TypeError(f"seeds: expected a list of {num_envs} ints, got {type(seeds).__name__} {seeds!r}")
            seeds = checks.seeds("seeds", seeds, num_envs)
        programs = checks.names("programs", programs)
        sets = checks.names("sets", sets)
        weights = checks.weights(reward_weights)
        threads = (os.cpu_count() or 1) if threads is None else checks.integer("threads", threads, 1, MAX_THREADS)
        max_steps = checks.integer("max_steps", max_steps, 1)
        message_size = checks.integer("message_size", message_size, 0, 64)
        if until is not None and not isinstance(until, str):
            raise TypeError(f"until: expected 'pens-boxed', 'explored' or None, got {type(until).__name__} {until!r}")
        if reward_fn is not None and not callable(reward_fn):
            raise TypeError(f"reward_fn: expected a function, got {type(reward_fn).__name__}")
        self._worlds = _native.Worlds(checks.scene_path(scene), seeds, threads, programs,
                                      _settings(sets, world_sets, num_envs), max_steps, until, weights,
                                      message_size, checks.parts(observation))
        self.num_envs = self._worlds.num_envs
        self.robots = self._worlds.robots
        self._flat_obs, self._rewards, self._terminated, self._truncated, self._counts = self._worlds.buffers()
        self.action_size = self._worlds.action_size
        self._action_shape = (self.num_envs, len(self.robots), self.action_size)
        self._setup_observations(self._worlds.groups, self._worlds.observation_sizes)
        self._spaces = None
        self.render_mode = None
        self.reward_fn = reward_fn
        # What reward_fn compares with: the counts and observations before the step.
        self._before = None

    def _setup_observations(self, groups, sizes):
        """One (E, R, D) view of the flat observations: every robot observes D values."""
        if len(set(sizes)) != 1:
            self._worlds.close()
            found = ", ".join(f"{r} ({g}): {d}" for r, g, d in zip(self.robots, groups, sizes))
            raise ValueError(f"the driven robots observe different numbers of values ({found}); "
                             "crsim.groups.GroupedVecEnv gives each group its own arrays")
        self.observation_size = sizes[0]
        self._obs = self._flat_obs.reshape(self.num_envs, len(self.robots), self.observation_size)

    def __reduce__(self):
        # Worlds cannot be copied; a pickled environment is built again from its arguments (its
        # worlds start from their seeds), as vector wrappers that copy environments need.
        scene, kwargs = self._args
        return (_rebuild, (type(self), scene, kwargs))

    # -- spaces (gymnasium's, when it is installed) --------------------------------------------

    def _make_spaces(self):
        if self._spaces is None:
            from gymnasium import spaces
            single_obs = spaces.Box(-1.0, 1.0, (len(self.robots), self.observation_size), dtype=np.float32)
            single_act = spaces.Box(-1.0, 1.0, (len(self.robots), self.action_size), dtype=np.float32)
            batch = lambda s: spaces.Box(-1.0, 1.0, (self.num_envs, *s.shape), dtype=np.float32)  # noqa: E731
            self._spaces = (single_obs, single_act, batch(single_obs), batch(single_act))
        return self._spaces

    @property
    def single_observation_space(self):
        return self._make_spaces()[0]

    @property
    def single_action_space(self):
        return self._make_spaces()[1]

    @property
    def observation_space(self):
        return self._make_spaces()[2]

    @property
    def action_space(self):
        return self._make_spaces()[3]

    # -- the loop -------------------------------------------------------------------------------

    def reset(self, seed=None, options=None, copy=False):
        """Resets every world (world i with ``seed + i`` when ``seed`` is an int, ``seed[i]``
        when it is a list of E seeds, else each with its next seed); returns
        ``(observations, infos)``. ``options={"reset_mask": mask}`` resets only the worlds
        where the mask (E bools) is true, as Gymnasium 1.x's vector environments do."""
        if options is not None and not isinstance(options, dict):
            raise TypeError(f"options: expected a dict or None, got {type(options).__name__}")
        if options and "reset_mask" in options:
            return self.reset_at(options["reset_mask"], seed=seed, copy=copy)
        self._worlds.reset(self._seeds(seed))
        return self._out(self._obs, copy), {}

    def reset_at(self, mask, seed=None, copy=False):
        """Resets the worlds where ``mask`` (E bools) is true."""
        mask = checks.mask("mask", mask, self.num_envs)
        self._worlds.reset_at(mask.tolist(), self._seeds(seed))
        return self._out(self._obs, copy), {}

    def step(self, actions, copy=False):
        """Steps every world; returns ``(observations, rewards, terminated, truncated, infos)``."""
        a = self._check(actions)
        if self.reward_fn is not None:
            # A world whose robots were all done resets in this step (NEXT_STEP): no reward.
            resetting = (self._terminated | self._truncated).all(axis=1)
            self._before = (self._counts.copy(), self._obs.copy(), resetting)
        self._worlds.step(a)
        if self.reward_fn is not None:
            self._call_reward_fn()
        out = (self._obs, self._rewards, self._terminated, self._truncated)
        return (*(self._out(x, copy) for x in out), {})

    def _call_reward_fn(self):
        counts_before, obs_before, resetting = self._before
        rewards = np.asarray(self.reward_fn(counts_before, self._counts, obs_before, self._obs), dtype=np.float32)
        shape = self._rewards.shape
        if rewards.shape != shape:
            raise ValueError(f"reward_fn returned an array of shape {rewards.shape}; expected {shape} (worlds, robots)")
        if not np.isfinite(rewards).all():
            world, robot = (int(i) for i in np.argwhere(~np.isfinite(rewards))[0])
            raise ValueError(f"reward_fn gave robot {self.robots[robot]!r} in world {world} {rewards[world, robot]}")
        rewards[resetting] = 0.0
        self._rewards[...] = rewards

    @property
    def counts(self):
        """Each robot's counts in its episode so far, (E, R, C) float32 in the order of
        ``COUNT_NAMES`` (overwritten by the next call)."""
        return self._counts

    def _seeds(self, seed):
        seeds = checks.seeds("seed", seed, self.num_envs)
        return episode_seeds(seeds, self.num_envs) if isinstance(seeds, int) else seeds

    def _check(self, actions):
        """The actions as the native step takes them: float32, C-contiguous, of the batch's shape
        (it checks that they are finite, naming the first world and robot that is not)."""
        a = actions
        if not (type(a) is np.ndarray and a.dtype == np.float32 and a.flags.c_contiguous):
            a = np.asarray(actions)
            if a.dtype.kind not in "fiu":
                raise TypeError(f"actions of dtype {a.dtype}; expected float32")
            a = np.ascontiguousarray(a, dtype=np.float32)
        if a.shape != self._action_shape:
            raise ValueError(f"actions of shape {a.shape}; expected {self._action_shape} "
                             f"(worlds, robots {self.robots}, {self.action_size} values)")
        return a

    @staticmethod
    def _out(x, copy):
        return x.copy() if copy else x

    @property
    def hashes(self):
        """Each world's trajectory hash, in crsim's hex form."""
        return self._worlds.hashes()

    @property
    def episode_steps(self):
        return self._worlds.episode_steps()

    def close(self):
        self._worlds.close()

    @property
    def closed(self):
        return self._worlds.closed

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def episode_seeds(seed, num_envs):
    """The seeds of the first episodes of ``num_envs`` worlds from one seed: world i's is
    ``seed + i`` (as Gymnasium seeds its vector environments). Each world's next episode takes
    its last seed + ``num_envs``, so world i's k-th episode is ``seed + k * num_envs + i``: no two
    episodes of the batch share a seed (``seed + w + k`` once made world 0's second episode world
    1's first)."""
    return [(seed + i) % 2**64 for i in range(num_envs)]


def _rebuild(cls, scene, kwargs):
    return cls(scene, **kwargs)


def _settings(sets, world_sets, num_envs):
    """The native layer's settings: one list for every world, or a list per world."""
    common = list(sets)
    if world_sets is None:
        return [common]
    if callable(world_sets):
        each = [world_sets(i) for i in range(num_envs)]
    elif isinstance(world_sets, (str, bytes)) or not hasattr(world_sets, "__len__"):
        raise TypeError(f"world_sets: expected a list of {num_envs} lists or a function of the world, "
                        f"got {type(world_sets).__name__}")
    else:
        each = list(world_sets)
        if len(each) != num_envs:
            raise ValueError(f"world_sets has {len(each)} lists for {num_envs} worlds")
    return [common + checks.names(f"world_sets[{i}]", extra, allow_none=False) for i, extra in enumerate(each)]
