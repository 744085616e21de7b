"""The peer users compare crsim.VecEnv with: VMAS (PyTorch, CPU) stepping a room shaped like
crsim envbench's — R disc robots on a grid in a walled square room (2 m of floor per robot, at
least 3 m), a movable pen per robot, two boxes, and an 8-beam lidar per robot — for E worlds,
reporting env-steps and robot-steps per second as bench_vector.py does. Needs vmas (and torch).

    python3 clients/python/examples/bench_vmas.py [--worlds 1 16 64 256] [--robots 1 4 16]

crsim's room has more than this one: rigid bodies with friction, a camera as well as a 16-beam
range sensor, a battery, a gripper and a radio; VMAS's has point-mass agents and its lidar only.
"""

import argparse
import math
import resource
import time

import torch
from vmas import make_env
from vmas.simulator.core import Agent, Box, Landmark, Line, Sphere, World
from vmas.simulator.scenario import BaseScenario
from vmas.simulator.sensors import Lidar


class Room(BaseScenario):
    """crsim envbench's pens room in VMAS: robots, pens, two boxes, four walls."""

    def make_world(self, batch_dim, device, robots=1, **kwargs):
        self.robots = robots
        self.side = max(2.0 * math.sqrt(robots) + 1.0, 3.0)
        half = self.side / 2
        world = World(batch_dim, device, x_semidim=half, y_semidim=half, substeps=1, dt=0.02)
        for i in range(robots):
            world.add_agent(Agent(name=f"r{i}", shape=Sphere(radius=0.1), collide=True,
                                  sensors=[Lidar(world, n_rays=8, max_range=3.0)]))
        for i in range(robots):
            world.add_landmark(Landmark(name=f"p{i}", shape=Sphere(radius=0.03), collide=True, movable=True))
        for k in range(2):
            world.add_landmark(Landmark(name=f"box{k}", shape=Box(length=0.4, width=0.4), collide=True))
        for k in range(4):
            world.add_landmark(Landmark(name=f"wall{k}", shape=Line(length=self.side), collide=True))
        return world

    def reset_world_at(self, env_index=None):
        per_row = math.ceil(math.sqrt(self.robots))
        gap = self.side / (per_row + 1)
        half = self.side / 2
        world = self.world
        for i, agent in enumerate(world.agents):
            x, y = (i % per_row + 1) * gap - half, (i // per_row + 1) * gap - half
            agent.set_pos(torch.tensor([x, y - 0.3 * gap], device=world.device), batch_index=env_index)
            world.landmarks[i].set_pos(torch.tensor([x, y + 0.3 * gap], device=world.device), batch_index=env_index)
        n = self.robots
        for k, x in enumerate((-half + 0.4, half - 0.4)):
            world.landmarks[n + k].set_pos(torch.tensor([x, half - 0.4], device=world.device), batch_index=env_index)
        walls = [((0.0, half), 0.0), ((0.0, -half), 0.0), ((half, 0.0), math.pi / 2), ((-half, 0.0), math.pi / 2)]
        for k, ((x, y), angle) in enumerate(walls):
            wall = world.landmarks[n + 2 + k]
            wall.set_pos(torch.tensor([x, y], device=world.device), batch_index=env_index)
            wall.set_rot(torch.tensor([angle], device=world.device), batch_index=env_index)

    def observation(self, agent):
        return torch.cat([agent.state.pos, agent.state.vel, agent.sensors[0].measure()], dim=-1)

    def reward(self, agent):
        return torch.zeros(self.world.batch_dim, device=self.world.device)


def run(worlds, robots, steps):
    env = make_env(Room(), num_envs=worlds, device="cpu", continuous_actions=True, robots=robots, seed=0)
    actions = [torch.tensor([[0.8, 0.5]]).repeat(worlds, 1) for _ in range(robots)]
    env.step(actions)
    started = time.perf_counter()
    for _ in range(steps):
        env.step(actions)
    return worlds * steps / (time.perf_counter() - started)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--worlds", type=int, nargs="*", default=[1, 16, 64, 256])
    p.add_argument("--robots", type=int, nargs="*", default=[1, 4, 16])
    p.add_argument("--steps", type=int, default=0)
    a = p.parse_args()
    print(f"vmas on torch {torch.__version__}, {torch.get_num_threads()} threads")
    print("worlds robots env_steps_per_s robot_steps_per_s")
    for r in a.robots:
        for e in a.worlds:
            steps = a.steps or max(50, min(2000, 100_000 // (e * r)))
            rate = run(e, r, steps)
            print(f"{e:6d} {r:6d} {rate:15.0f} {rate * r:17.0f}", flush=True)
    print(f"peak RSS: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.1f} MiB")


if __name__ == "__main__":
    main()
