"""Reinforcement learning on crsim: a PettingZoo ``ParallelEnv`` over a scene's program robots,
and a Gymnasium ``Env`` for a single robot. Both start crsim themselves (headless, on a free
port) and step it in lock-step.

Observation (float32): the robot's observation as crsim makes it for ``crsim.VecEnv``, from
its sensors through crsim's sensor registry (``reading["observation"]``: its parts and their
bounds are what ``hello`` lists in each robot's ``sensors``; a robot of no kind has position,
heading, speeds, battery, contact, gripper, the camera's nearest pen, box, station and robot, the
messages heard, then its range beams if it has a range sensor), then, with ``message_size`` > 0,
the mean of the message vectors heard this step. Each robot's space is its own: robots with and
without a range sensor observe vectors of different sizes.

Action (``action_format="box"``, the default): a float32 vector in [-1, 1] of 3 +
``message_size`` values — linear and angular speed as fractions of the maxima, the gripper
(above 0.5 close, below -0.5 open, between them leave it; as ``crsim.VecEnv`` takes it), then,
with ``message_size`` > 0, a vector broadcast to the robots in radio range (it arrives as
``{"v": [...]}``). With ``action_format="dict"``: a dict with ``drive`` (the two speeds),
``grip`` (0 leave, 1 close, 2 open) and ``message``.

The environments can be pickled (SuperSuit's and SB3's vector wrappers copy them): a copy starts
its own crsim with the same arguments.

Reward: from crsim's own counts for the robot — pens it boxed, cells of its size it visited for
the first time, collisions — weighted by ``reward_weights``, or your own ``reward_fn(agent,
previous_reading, reading)``.
"""

import functools

import gymnasium
import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

from .client import Client
from .launch import Crsim

#: Values a robot of no kind observes without a range sensor (and without messages).
BASE_SIZE = 28


def layout(robot):
    """The parts of a robot's observation, from its ``hello`` entry: a list of (sensor, part
    name, size, low, high), in the vector's order."""
    return [(s["name"], p["name"], p["size"], p["low"], p["high"]) for s in robot["sensors"] for p in s["parts"]]


def observe(reading, message_size=0):
    """The observation vector of one reading: the robot's observation as crsim sent it, then the
    mean of the message vectors of ``message_size`` values heard (zeros when none)."""
    own = np.asarray(reading["observation"], dtype=np.float32)
    if not message_size:
        return own
    heard = np.zeros(message_size, dtype=np.float32)
    vectors = [m["content"]["v"] for m in reading["messages"]
               if isinstance(m["content"], dict) and len(m["content"].get("v", ())) == message_size]
    if vectors:
        heard = np.clip(np.mean(np.asarray(vectors, dtype=np.float32), axis=0), -1.0, 1.0)
    return np.concatenate((own, np.nan_to_num(heard, nan=0.0, posinf=0.0, neginf=0.0)))


DEFAULT_WEIGHTS = {"boxed": 1.0, "visited": 0.01, "collisions": -0.1}


def crsim_reward(previous, reading, weights=None):
    """crsim's own counts for a robot, between two readings, weighted."""
    w = DEFAULT_WEIGHTS if weights is None else weights
    if previous is None:
        return 0.0
    return (w.get("boxed", 0.0) * (reading["boxed"] - previous["boxed"])
            + w.get("visited", 0.0) * (reading["visited"] - previous["visited"])
            + w.get("collisions", 0.0) * (reading["odometry"][1] - previous["odometry"][1]))


class CrsimParallelEnv(ParallelEnv):
    """Every program robot of ``scene`` is an agent (``programs``, robot names or ``"all"``,
    makes robots of any scene program robots). ``max_steps`` ends an episode (truncation);
    ``reset(seed)`` restarts the scene in the same crsim process."""

    metadata = {"name": "crsim_v0", "render_modes": [], "is_parallelizable": True}

    def __init__(self, scene, max_steps=1000, message_size=0, reward_fn=None, reward_weights=None,
                 binary=None, args=(), programs=None, action_format="box"):
        if action_format not in ("box", "dict"):
            raise ValueError(f"action_format {action_format!r}: \"box\" or \"dict\"")
        self._args = dict(scene=scene, max_steps=max_steps, message_size=message_size, reward_fn=reward_fn,
                          reward_weights=reward_weights, binary=binary, args=args, programs=programs,
                          action_format=action_format)
        self.action_format = action_format
        self.render_mode = None
        self.scene = scene
        self.max_steps = max_steps
        self.message_size = message_size
        self.reward_fn = reward_fn
        self.reward_weights = reward_weights
        self.crsim = Crsim(scene, binary=binary, args=args, programs=programs)
        self.client = Client(self.crsim.host, self.crsim.port)
        hello = self.client.hello
        self.arena = hello["arena"]
        self.bodies = {r["name"]: r for r in hello["robots"]}
        self.possible_agents = [r["name"] for r in hello["robots"]]
        self.layouts = {r["name"]: layout(r) for r in hello["robots"]}
        self.client.register(self.possible_agents, observation=True)
        self.agents = []
        self._step = None
        self._fresh = True
        self._previous = {}

    def __getstate__(self):
        return self._args

    def __setstate__(self, args):
        self.__init__(**args)

    @functools.lru_cache(maxsize=None)
    def observation_space(self, agent):
        parts = self.layouts[agent]
        low = [p[3] for p in parts for _ in range(p[2])] + [-1.0] * self.message_size
        high = [p[4] for p in parts for _ in range(p[2])] + [1.0] * self.message_size
        return spaces.Box(np.asarray(low, dtype=np.float32), np.asarray(high, dtype=np.float32), dtype=np.float32)

    @functools.lru_cache(maxsize=None)
    def action_space(self, agent):
        if self.action_format == "box":
            return spaces.Box(-1.0, 1.0, (3 + self.message_size,), dtype=np.float32)
        parts = {"drive": spaces.Box(-1.0, 1.0, (2,), dtype=np.float32), "grip": spaces.Discrete(3)}
        if self.message_size:
            parts["message"] = spaces.Box(-1.0, 1.0, (self.message_size,), dtype=np.float32)
        return spaces.Dict(parts)

    def _parts(self, action):
        """(drive, grip: 0 leave, 1 close, 2 open, message or None) of an action."""
        if self.action_format == "dict":
            return action["drive"], int(action.get("grip", 0)), action.get("message")
        a = np.asarray(action, dtype=np.float64).reshape(-1)
        if a.shape != (3 + self.message_size,):
            raise ValueError(f"action of shape {a.shape}; expected ({3 + self.message_size},)")
        grip = 1 if a[2] > 0.5 else 2 if a[2] < -0.5 else 0
        return a[:2], grip, (a[3:] if self.message_size else None)

    def _observations(self):
        return {a: observe(self._step[a], self.message_size) for a in self.agents}

    def reset(self, seed=None, options=None):
        if self._fresh and seed is None:
            self._step = self.client.get_step()
        else:
            self._step = self.client.reset(seed)
        self._fresh = False
        self.agents = list(self.possible_agents)
        self._previous = {a: self._step[a] for a in self.agents}
        return self._observations(), {a: {"step": self._step.step} for a in self.agents}

    def step(self, actions):
        for agent, action in actions.items():
            body = self.bodies[agent]
            drive, grip, message = self._parts(action)
            drive = np.clip(np.asarray(drive, dtype=np.float64), -1.0, 1.0)
            if not np.isfinite(drive).all():
                raise ValueError(f"the drive of {agent!r} is {drive}")
            self.client.drive(agent, drive[0] * body["max_speed"], drive[1] * body["max_turn"])
            if grip in (1, 2):
                self.client.grip(agent, grip == 1)
            if self.message_size and message is not None:
                vector = [float(v) for v in np.clip(np.nan_to_num(message), -1.0, 1.0)]
                self.client.send_message(agent, None, {"v": vector})
        self._step = self.client.get_step()
        if self._step is None:
            raise RuntimeError(f"crsim ended: {self.client.ended}")
        observations = self._observations()
        rewards = {}
        for a in self.agents:
            reading = self._step[a]
            if self.reward_fn is not None:
                rewards[a] = float(self.reward_fn(a, self._previous.get(a), reading))
            else:
                rewards[a] = crsim_reward(self._previous.get(a), reading, self.reward_weights)
            self._previous[a] = reading
        done = self._step.step >= self.max_steps
        terminations = {a: False for a in self.agents}
        truncations = {a: done for a in self.agents}
        infos = {a: {"step": self._step.step} for a in self.agents}
        if done:
            self.agents = []
        return observations, rewards, terminations, truncations, infos

    def close(self):
        self.client.close()
        self.crsim.close()


class CrsimEnv(gymnasium.Env):
    """One program robot of ``scene`` as a Gymnasium environment; the scene's other program
    robots (if any) stand still."""

    metadata = {"render_modes": []}

    def __init__(self, scene, robot=None, **kwargs):
        self.render_mode = None
        self.parallel = CrsimParallelEnv(scene, **kwargs)
        self.robot = robot or self.parallel.possible_agents[0]
        self.observation_space = self.parallel.observation_space(self.robot)
        self.action_space = self.parallel.action_space(self.robot)

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        obs, infos = self.parallel.reset(seed=seed, options=options)
        return obs[self.robot], infos[self.robot]

    def step(self, action):
        obs, rewards, terminations, truncations, infos = self.parallel.step({self.robot: action})
        return obs[self.robot], rewards[self.robot], terminations[self.robot], truncations[self.robot], infos[self.robot]

    def close(self):
        self.parallel.close()
