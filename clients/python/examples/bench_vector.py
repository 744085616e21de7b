"""Speed of crsim.VecEnv: environment steps and robot steps per second for E worlds of R program
robots (crsim envbench's pens room: camera and a 16-beam range sensor each), and peak memory.

    python3 clients/python/examples/bench_vector.py [--worlds 1 16 64 256] [--robots 1 4 16] [--steps N]
"""

import argparse
import resource
import tempfile
import time
from pathlib import Path

import numpy as np

from crsim import _native
from crsim.vector import VecEnv


def run(worlds, robots, steps, threads, folder):
    scene = Path(folder) / f"bench-{robots}.ron"
    scene.write_text(_native.bench_scene(robots))
    env = VecEnv(scene, num_envs=worlds, threads=threads, max_steps=10**9)
    actions = np.zeros((worlds, robots, 3), dtype=np.float32)
    actions[..., 0] = 0.8
    actions[..., 1] = 0.5
    env.step(actions)
    started = time.perf_counter()
    for _ in range(steps):
        env.step(actions)
    wall = time.perf_counter() - started
    env.close()
    return worlds * steps / wall


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--worlds", type=int, nargs="*", default=[1, 16, 64, 256])
    p.add_argument("--robots", type=int, nargs="*", default=[1, 4, 16])
    p.add_argument("--steps", type=int, default=0, help="steps per run (default: about 20,000 robot-steps a world count)")
    p.add_argument("--threads", type=int, default=None)
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        print("worlds robots env_steps_per_s robot_steps_per_s")
        for e in a.worlds:
            for r in a.robots:
                steps = a.steps or max(50, 40_000 // (e * r))
                rate = run(e, r, steps, a.threads, folder)
                print(f"{e:6d} {r:6d} {rate:15.0f} {rate * r:17.0f}", flush=True)
    print(f"peak RSS: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.1f} MiB")


if __name__ == "__main__":
    main()
