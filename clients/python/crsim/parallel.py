"""One in-process crsim world as a PettingZoo ``ParallelEnv`` (its driven robots are the
agents). Needs pettingzoo and gymnasium.

    from crsim.parallel import WorldParallelEnv
    env = WorldParallelEnv("scenes/pens.ron", programs="all")
"""

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

from .vector import VecEnv


class WorldParallelEnv(ParallelEnv):
    """One in-process world as a PettingZoo ``ParallelEnv``: its driven robots are the agents,
    each observing (D,) float32 and acting with (3,) float32 (``VecEnv``'s layout). A robot whose
    battery empties leaves ``agents`` while the others go on; the episode ends at ``max_steps``
    or ``until``'s task. Needs pettingzoo."""

    metadata = {"name": "crsim_world_v0", "render_modes": [], "is_parallelizable": True}

    def __init__(self, scene, seed=None, programs=None, max_steps=1000, **kwargs):
        # A pickled copy (SuperSuit's vector wrappers make them) is a new world of the same
        # arguments: VecEnv pickles as its arguments.
        self.env = VecEnv(scene, num_envs=1, seed=seed, programs=programs, max_steps=max_steps, **kwargs)
        self.possible_agents = list(self.env.robots)
        self.agents = []
        self.render_mode = None
        d = self.env.observation_size
        self._obs_space = spaces.Box(-1.0, 1.0, (d,), dtype=np.float32)
        self._act_space = spaces.Box(-1.0, 1.0, (self.env.action_size,), dtype=np.float32)
        self._actions = np.zeros((1, len(self.possible_agents), self.env.action_size), dtype=np.float32)

    def observation_space(self, agent):
        return self._obs_space

    def action_space(self, agent):
        return self._act_space

    def _observations(self, obs):
        return {a: obs[0, i].copy() for i, a in enumerate(self.possible_agents) if a in self.agents}

    def reset(self, seed=None, options=None):
        obs, _ = self.env.reset(seed=seed)
        self.agents = list(self.possible_agents)
        return self._observations(obs), {a: {} for a in self.agents}

    def step(self, actions):
        self._actions[:] = 0.0
        for i, a in enumerate(self.possible_agents):
            if a in actions:
                self._actions[0, i] = np.asarray(actions[a], dtype=np.float32)
        obs, rewards, terminated, truncated, _ = self.env.step(self._actions)
        live = list(self.agents)
        index = {a: i for i, a in enumerate(self.possible_agents)}
        out_obs = {a: obs[0, index[a]].copy() for a in live}
        out_rewards = {a: float(rewards[0, index[a]]) for a in live}
        out_term = {a: bool(terminated[0, index[a]]) for a in live}
        out_trunc = {a: bool(truncated[0, index[a]]) for a in live}
        self.agents = [a for a in live if not (out_term[a] or out_trunc[a])]
        return out_obs, out_rewards, out_term, out_trunc, {a: {} for a in live}

    def state(self):
        return self.env._obs[0].reshape(-1).copy()

    @property
    def hashes(self):
        return self.env.hashes

    def close(self):
        self.env.close()
