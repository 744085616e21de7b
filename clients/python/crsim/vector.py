"""Many crsim worlds inside this process, stepped together into numpy arrays.

``VecEnv(scene, num_envs=E)`` holds E independent worlds of one scene, each with its own seed
(``seed + i`` unless ``seeds`` are given), and steps them together on ``threads`` threads with
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

try:
    from . import _native
except ImportError as e:  # a source checkout without the built module
    raise ImportError("crsim's native module is missing: install the package with "
                      "`pip install ./clients/python` (it builds the module with cargo)") from e

ACTION_SIZE = _native.ACTION_SIZE
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
        num_envs = int(num_envs)
        if seeds is None:
            base = 0 if seed is None else int(seed)
            seeds = [base + i for i in range(num_envs)]
        elif len(seeds) != num_envs:
            raise ValueError(f"{len(seeds)} seeds for {num_envs} worlds")
        if programs is None:
            programs = []
        elif isinstance(programs, str):
            programs = [programs]
        if isinstance(sets, str):
            sets = [sets]
        weights = [(str(k), float(v)) for k, v in (reward_weights or {}).items()]
        threads = (os.cpu_count() or 1) if threads is None else int(threads)
        self._worlds = _native.Worlds(os.fspath(scene), [int(s) for s in seeds], threads, list(programs),
                                      _settings(sets, world_sets, num_envs), int(max_steps), until, weights,
                                      int(message_size), None if observation is None else [str(p) for p in observation])
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
        ``(observations, infos)``."""
        self._worlds.reset(self._seeds(seed))
        return self._out(self._obs, copy), {}

    def reset_at(self, mask, seed=None, copy=False):
        """Resets the worlds where ``mask`` (E bools) is true."""
        mask = np.asarray(mask, dtype=bool)
        if mask.shape != (self.num_envs,):
            raise ValueError(f"mask of shape {mask.shape}; expected ({self.num_envs},)")
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
        if seed is None:
            return None
        if isinstance(seed, (list, tuple, np.ndarray)):
            if len(seed) != self.num_envs:
                raise ValueError(f"{len(seed)} seeds for {self.num_envs} worlds")
            return [int(s) for s in seed]
        return [int(seed) + i for i in range(self.num_envs)]

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


def _rebuild(cls, scene, kwargs):
    return cls(scene, **kwargs)


def _settings(sets, world_sets, num_envs):
    """The native layer's settings: one list for every world, or a list per world."""
    common = [str(s) for s in sets]
    if world_sets is None:
        return [common]
    if callable(world_sets):
        each = [world_sets(i) for i in range(num_envs)]
    else:
        each = list(world_sets)
        if len(each) != num_envs:
            raise ValueError(f"world_sets has {len(each)} lists for {num_envs} worlds")
    out = []
    for i, extra in enumerate(each):
        if isinstance(extra, str):
            extra = [extra]
        out.append(common + [str(s) for s in extra])
    return out
