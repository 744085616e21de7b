"""One in-process crsim world as a PettingZoo ``ParallelEnv`` (its driven robots are the
agents). Needs pettingzoo and gymnasium.

    from crsim.parallel import WorldParallelEnv
    env = WorldParallelEnv("scenes/pens.ron", programs="all")
"""

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

from . import _checks as checks
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
        self._index = {a: i for i, a in enumerate(self.possible_agents)}
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
        """Steps the world with ``actions``, a dict of (A,) arrays by agent. An agent that is not
        in this world is an error; an agent left out (or no longer in ``agents``) stands still."""
        if not isinstance(actions, dict):
            raise TypeError(f"actions: expected a dict of actions by agent, got {type(actions).__name__}")
        unknown = sorted(str(a) for a in actions if a not in self._index)
        if unknown:
            raise ValueError(f"actions for agents that are not in this world: {unknown} (its agents: {self.possible_agents})")
        self._actions[:] = 0.0
        for a, action in actions.items():
            self._actions[0, self._index[a]] = checks.actions(f"actions[{a!r}]", action, (self.env.action_size,))
        obs, rewards, terminated, truncated, _ = self.env.step(self._actions)
        live = list(self.agents)
        index = self._index
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
