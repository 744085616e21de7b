"""Speed of crsim.VecEnv: environment steps and robot steps per second for E worlds of R program
robots (crsim envbench's pens room: camera and a 16-beam range sensor each), and peak memory;
with ``--tcp``, before each R the same room stepped by the TCP client (one world, binary frames,
a crsim process of its own), and each row's ratio to it.

    python3 clients/python/examples/bench_vector.py [--worlds 1 16 64 256] [--robots 1 4 16] [--steps N] [--tcp]
"""

import argparse
import resource
import tempfile
import time
from pathlib import Path

import numpy as np

from crsim import Client, Crsim, _native
from crsim.vector import VecEnv


def run_tcp(robots, steps, folder):
    """The same room, one world, driven over TCP by this process: env-steps per second."""
    scene = Path(folder) / f"bench-{robots}.ron"
    scene.write_text(_native.bench_scene(robots))
    with Crsim(scene, steps=steps + 10, programs="all") as sim:
        client = Client(sim.host, sim.port, encoding="binary")
        bodies = client.hello["robots"]
        names = [r["name"] for r in bodies]
        client.register(names)
        # The commands VecEnv's actions (0.8, 0.5) give: fractions of each robot's maxima.
        linear = np.array([0.8 * r["max_speed"] for r in bodies], dtype=np.float32)
        angular = np.array([0.5 * r["max_turn"] for r in bodies], dtype=np.float32)
        client.get_step()
        client.drive_all(linear, angular)
        client.get_step()
        started = time.perf_counter()
        for _ in range(steps):
            client.drive_all(linear, angular)
            client.get_step()
        wall = time.perf_counter() - started
        client.close()
    return steps / wall


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
    p.add_argument(
        "--steps", type=int, default=0, help="steps per run (default: 100,000 robot-steps a run, at least 200 steps)"
    )
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--tcp", action="store_true", help="also the TCP client on the same room, and the ratio")
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        print("worlds robots env_steps_per_s robot_steps_per_s" + ("  vs_tcp" if a.tcp else ""))
        for r in a.robots:
            tcp = None
            if a.tcp:
                tcp = run_tcp(r, a.steps or max(200, 20_000 // r), folder)
                print(f"{'tcp':>6s} {r:6d} {tcp:15.0f} {tcp * r:17.0f}", flush=True)
            for e in a.worlds:
                steps = a.steps or max(200, 100_000 // (e * r))
                rate = run(e, r, steps, a.threads, folder)
                ratio = f"  {rate / tcp:6.1f}" if tcp else ""
                print(f"{e:6d} {r:6d} {rate:15.0f} {rate * r:17.0f}{ratio}", flush=True)
    print(f"peak RSS: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.1f} MiB")


if __name__ == "__main__":
    main()
