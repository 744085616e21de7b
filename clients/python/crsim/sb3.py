"""``crsim.VecEnv`` as a Stable-Baselines3 ``VecEnv``: every driven robot of every world is one
of SB3's environments (``num_envs`` = worlds × robots, world-major), observing (D,) float32 and
acting with (3,) float32 in [-1, 1]. Needs stable-baselines3.

    from stable_baselines3 import PPO
    from crsim.sb3 import SB3VecEnv
    env = SB3VecEnv("scenes/pens.ron", num_envs=16, programs=["alpha"])
    PPO("MlpPolicy", env).learn(100_000)

SB3 resets an environment in the step that ends its episode and passes the last observation in
``infos[i]["terminal_observation"]``; here a world resets in the step in which any of its robots'
episodes ends, and each of its robots reports done: the ones whose own episode did not end
(terminated) report ``infos[i]["TimeLimit.truncated"] = True``, so SB3 bootstraps their value as
it does for a time limit.
"""

import numpy as np
from gymnasium import spaces
from stable_baselines3.common.vec_env.base_vec_env import VecEnv as _SB3VecEnv

from . import _checks as checks
from .vector import VecEnv


class SB3VecEnv(_SB3VecEnv):
    """E worlds of ``scene`` with R driven robots each, as E × R environments for SB3; the
    arguments are ``crsim.VecEnv``'s."""

    def __init__(self, scene, num_envs=1, **kwargs):
        self.env = VecEnv(scene, num_envs=num_envs, **kwargs)
        self.worlds, self.robots = self.env.num_envs, len(self.env.robots)
        self.render_mode = None
        d = self.env.observation_size
        super().__init__(self.worlds * self.robots, spaces.Box(-1.0, 1.0, (d,), dtype=np.float32),
                         spaces.Box(-1.0, 1.0, (self.env.action_size,), dtype=np.float32))
        self._actions = None

    def reset(self):
        obs, _ = self.env.reset(seed=self._world_seeds())
        self._reset_seeds()
        self._reset_options()
        return obs.reshape(self.num_envs, -1).copy()

    def _world_seeds(self):
        """The seeds of the next reset: after ``seed(s)``, world w's is s + w (as ``crsim.VecEnv``
        seeds its worlds); else None (each world its next seed)."""
        if self._seeds[0] is None:
            return None
        return [int(self._seeds[0]) + w for w in range(self.worlds)]

    def step_async(self, actions):
        # Exactly (E·R, A), as SB3 passes them: anything else is an error, not reshaped.
        a = checks.actions("actions", actions, (self.num_envs, self.env.action_size))
        self._actions = a.reshape(self.worlds, self.robots, self.env.action_size)

    def step_wait(self):
        if self._actions is None:
            raise RuntimeError("step_wait without step_async")
        obs, rewards, terminated, truncated, _ = self.env.step(self._actions)
        self._actions = None
        rewards = rewards.reshape(-1).copy()
        ended = (terminated | truncated).any(axis=1)
        dones = np.repeat(ended, self.robots)
        infos = [{} for _ in range(self.num_envs)]
        if ended.any():
            for w in np.flatnonzero(ended):
                for r in range(self.robots):
                    info = infos[w * self.robots + r]
                    info["terminal_observation"] = obs[w, r].copy()
                    info["TimeLimit.truncated"] = not bool(terminated[w, r])
            obs, _ = self.env.reset_at(ended)
        return obs.reshape(self.num_envs, -1).copy(), rewards, dones, infos

    def close(self):
        self.env.close()

    def _targets(self, indices):
        return [self.env] * len(self._get_indices(indices))

    def has_attr(self, attr_name):
        return hasattr(self.env, attr_name) or hasattr(self, attr_name)

    def get_attr(self, attr_name, indices=None):
        if attr_name == "render_mode":
            return [None] * len(self._get_indices(indices))
        return [getattr(t, attr_name) for t in self._targets(indices)]

    def set_attr(self, attr_name, value, indices=None):
        for t in self._targets(indices):
            setattr(t, attr_name, value)

    def env_method(self, method_name, *method_args, indices=None, **method_kwargs):
        return [getattr(t, method_name)(*method_args, **method_kwargs) for t in self._targets(indices)]

    def env_is_wrapped(self, wrapper_class, indices=None):
        return [False] * len(self._get_indices(indices))

    @property
    def hashes(self):
        return self.env.hashes
