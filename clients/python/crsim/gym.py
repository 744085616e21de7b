"""``crsim.VecEnv`` as Gymnasium environments: ``GymEnv``, one in-process world with one driven
robot as a ``gymnasium.Env`` (for ``check_env`` and single-environment code), and
``GymVectorEnv``, a Gymnasium 1.x ``VectorEnv``, one driven robot a world: observations
(E, D), actions (E, 3), rewards, terminations and truncations (E,). Needs gymnasium.

    from crsim.gym import GymVectorEnv
    envs = GymVectorEnv("scenes/pens.ron", num_envs=64, programs=["alpha"])

It autoresets in next-step mode (``metadata["autoreset_mode"]`` is ``AutoresetMode.NEXT_STEP``),
as Gymnasium's own vector environments do by default, so its wrappers and training loops written
for them use it unchanged.
"""

import gymnasium
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode

from . import _checks as checks
from .vector import VecEnv


class GymEnv(gymnasium.Env):
    """One in-process world of ``scene`` with one driven robot (``programs``: its name, or the
    scene's single program robot); observation (D,) float32, action (3,) float32 in [-1, 1]
    (linear and angular speed as fractions of the maxima, gripper above 0.5 close, below -0.5
    open). The other arguments are ``VecEnv``'s."""

    metadata = {"render_modes": []}

    def __init__(self, scene, seed=None, **kwargs):
        self.env = VecEnv(scene, num_envs=1, seed=seed, **kwargs)
        if len(self.env.robots) != 1:
            self.env.close()
            raise ValueError(f"GymEnv drives one robot; the scene's program robots are {self.env.robots} "
                             f"(name one with programs=[...], or use crsim.parallel.WorldParallelEnv)")
        d = self.env.observation_size
        self.observation_space = spaces.Box(-1.0, 1.0, (d,), dtype=np.float32)
        self.action_space = spaces.Box(-1.0, 1.0, (self.env.action_size,), dtype=np.float32)
        self.render_mode = None
        self._actions = np.zeros((1, 1, self.env.action_size), dtype=np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        obs, _ = self.env.reset(seed=seed)
        return obs[0, 0].copy(), {}

    def step(self, action):
        self._actions[0, 0] = checks.actions("action", action, (self.env.action_size,))
        obs, rewards, terminated, truncated, _ = self.env.step(self._actions)
        return obs[0, 0].copy(), float(rewards[0, 0]), bool(terminated[0, 0]), bool(truncated[0, 0]), {}

    @property
    def hash(self):
        return self.env.hashes[0]

    def close(self):
        self.env.close()


class GymVectorEnv(gymnasium.vector.VectorEnv):
    """E worlds of ``scene``, each with one driven robot (``programs``: its name, or the scene's
    single program robot); the other arguments are ``VecEnv``'s."""

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP, "render_modes": []}

    def __init__(self, scene, num_envs=1, **kwargs):
        self.env = VecEnv(scene, num_envs=num_envs, **kwargs)
        if len(self.env.robots) != 1:
            self.env.close()
            raise ValueError(f"GymVectorEnv drives one robot a world; the scene's program robots are "
                             f"{self.env.robots} (name one with programs=[...], or use crsim.VecEnv)")
        self.num_envs = self.env.num_envs
        d = self.env.observation_size
        self.single_observation_space = spaces.Box(-1.0, 1.0, (d,), dtype=np.float32)
        self.single_action_space = spaces.Box(-1.0, 1.0, (self.env.action_size,), dtype=np.float32)
        self.observation_space = spaces.Box(-1.0, 1.0, (self.num_envs, d), dtype=np.float32)
        self.action_space = spaces.Box(-1.0, 1.0, (self.num_envs, self.env.action_size), dtype=np.float32)
        self.render_mode = None

    def reset(self, *, seed=None, options=None):
        """Resets every world, or with ``options={"reset_mask": mask}`` (Gymnasium 1.x's partial
        reset) only those where the mask (E bools) is true; the others keep their state."""
        obs, _ = self.env.reset(seed=seed, options=options)
        if isinstance(seed, int):
            self.single_action_space.seed(seed)
            self.action_space.seed(seed)
        return obs[:, 0, :].copy(), {}

    def step(self, actions):
        # Exactly (E, A): a (A, E) or flat (E·A,) array is an error, not silently reshaped.
        a = checks.actions("actions", actions, (self.num_envs, self.env.action_size))
        obs, rewards, terminated, truncated, _ = self.env.step(a[:, None, :])
        return obs[:, 0, :].copy(), rewards[:, 0].astype(np.float64), terminated[:, 0].copy(), truncated[:, 0].copy(), {}

    @property
    def hashes(self):
        return self.env.hashes

    def close_extras(self, **kwargs):
        self.env.close()

