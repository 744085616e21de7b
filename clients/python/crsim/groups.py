"""Worlds whose driven robots differ — some with a range sensor of K beams, some without — as a
dict of arrays per group, the form TorchRL and RLlib take for heterogeneous agents.

    from crsim.groups import GroupedVecEnv
    env = GroupedVecEnv("scenes/pens.ron", num_envs=64, programs="all",
                        sets=["robots[alpha].range_sensor=Some((rays: 16))"])
    obs, _ = env.reset(seed=1)          # {"range16": (64, 1, 44), "camera": (64, 2, 28)}
    out = env.step({g: np.zeros((64, len(env.groups[g]), 3), np.float32) for g in env.groups})
    out["camera"]["reward"]             # (64, 2)

A group is the robots whose observations have one layout: ``camera`` for robots without a range
sensor, ``range16`` for robots with 16 beams. ``env.groups`` maps each group to its robots (in
scene order); ``env.robots`` lists them group by group, the order of the rewards and counts
``reward_fn`` gets (its observations are (E, every robot's values one after the other)). Every
array is a view of the arrays ``crsim.VecEnv`` overwrites at each call
(``copy=True`` for copies); ``torch.from_numpy`` turns one into a tensor without a copy.
"""

import numpy as np

from .vector import VecEnv


class GroupedVecEnv(VecEnv):
    """``crsim.VecEnv`` with a dict per group: ``reset`` returns ``({group: observations (E,
    R_g, D_g)}, {})``; ``step({group: actions (E, R_g, 3)})`` returns ``{group: {"observation",
    "reward", "terminated", "truncated"}}``. The arguments are ``VecEnv``'s."""

    def _setup_observations(self, groups, sizes):
        self.groups = {}
        self._slices = {}
        column = robot = 0
        for g, d in zip(groups, sizes):
            if g not in self.groups:
                self.groups[g] = []
                self._slices[g] = (robot, column, d)
            self.groups[g].append(self.robots[robot])
            robot += 1
            column += d
        self._views = {}
        for g, (r0, c0, d) in self._slices.items():
            n = len(self.groups[g])
            self._views[g] = {
                "observation": self._flat_obs[:, c0:c0 + n * d].reshape(self.num_envs, n, d),
                "reward": self._rewards[:, r0:r0 + n],
                "terminated": self._terminated[:, r0:r0 + n],
                "truncated": self._truncated[:, r0:r0 + n],
            }
        self.observation_sizes = {g: self._slices[g][2] for g in self.groups}
        # What reward_fn sees: every robot's values one after the other, (E, sum of sizes).
        self._obs = self._flat_obs
        self._actions = np.zeros(self._action_shape, dtype=np.float32)

    def _make_spaces(self):
        if self._spaces is None:
            from gymnasium import spaces

            def box(*shape):
                return spaces.Box(-1.0, 1.0, shape, dtype=np.float32)

            n = {g: len(r) for g, r in self.groups.items()}
            d = self.observation_sizes
            self._spaces = (
                spaces.Dict({g: box(n[g], d[g]) for g in self.groups}),
                spaces.Dict({g: box(n[g], self.action_size) for g in self.groups}),
                spaces.Dict({g: box(self.num_envs, n[g], d[g]) for g in self.groups}),
                spaces.Dict({g: box(self.num_envs, n[g], self.action_size) for g in self.groups}),
            )
        return self._spaces

    def _observations(self, copy):
        return {g: self._out(v["observation"], copy) for g, v in self._views.items()}

    def reset(self, seed=None, options=None, copy=False):
        super().reset(seed=seed, options=options)
        return self._observations(copy), {}

    def reset_at(self, mask, seed=None, copy=False):
        super().reset_at(mask, seed=seed)
        return self._observations(copy), {}

    def step(self, actions, copy=False):
        """Steps every world with ``actions``, a dict of (E, R_g, 3) arrays, one per group."""
        if not isinstance(actions, dict) or set(actions) != set(self.groups):
            got = sorted(actions) if isinstance(actions, dict) else type(actions).__name__
            raise ValueError(f"actions: a dict with the groups {sorted(self.groups)}; got {got}")
        for g, (r0, _, _) in self._slices.items():
            n = len(self.groups[g])
            a = np.asarray(actions[g])
            if a.shape != (self.num_envs, n, self.action_size):
                raise ValueError(f"actions of group {g!r} of shape {a.shape}; expected "
                                 f"{(self.num_envs, n, self.action_size)} (worlds, robots {self.groups[g]}, values)")
            self._actions[:, r0:r0 + n] = a
        super().step(self._actions)
        return {g: {k: self._out(v, copy) for k, v in views.items()} for g, views in self._views.items()}
