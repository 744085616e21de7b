"""Training on many worlds at once: the cross-entropy method on a linear policy for alpha of the
pens room, where each of the population's candidates drives its own in-process world
(``crsim.VecEnv``) and the whole population's episodes run together, one batched step at a time.
Rewarded by crsim's own counts — new cells visited, pens boxed, collisions. Pure numpy.

    python3 clients/python/examples/train_vector.py --iterations 8 --population 32

prints the mean and best episode return of each iteration's candidates and the time it took.
"""

import argparse
import time
from pathlib import Path

import numpy as np

from crsim import VecEnv

SCENE = Path(__file__).resolve().parents[3] / "scenes" / "pens.ron"


def episodes(env, candidates, seed):
    """One episode of every candidate (world i drives with candidate i: drive = tanh(W · [obs,
    1]), never gripping), all from the same scene seed; their returns."""
    n = env.num_envs
    # Every world starts from the same seed, so every candidate meets the same room.
    obs, _ = env.reset(seed=[seed] * n)
    totals, running = np.zeros(n), np.ones(n, dtype=bool)
    actions = np.zeros((n, 1, 3), dtype=np.float32)
    while running.any():
        features = np.concatenate([obs[:, 0, :], np.ones((n, 1), dtype=np.float32)], axis=1)
        actions[:, 0, :2] = np.tanh(np.einsum("nij,nj->ni", candidates, features))
        obs, rewards, terminated, truncated, _ = env.step(actions)
        totals += np.where(running, rewards[:, 0], 0.0)
        running &= ~(terminated[:, 0] | truncated[:, 0])
    return totals


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--iterations", type=int, default=8)
    parser.add_argument("--population", type=int, default=32)
    parser.add_argument("--steps", type=int, default=400, help="steps per episode")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    env = VecEnv(SCENE, num_envs=args.population, programs=["alpha"], max_steps=args.steps,
                 reward_weights={"visited": 1.0, "boxed": 10.0, "collisions": -1.0})
    started = time.perf_counter()
    shape = (2, env.observation_size + 1)
    mean, std = np.zeros(shape), np.full(shape, 0.5)
    elite = max(2, args.population // 4)
    for it in range(args.iterations):
        candidates = mean + std * rng.standard_normal((args.population, *shape))
        returns = episodes(env, candidates, seed=it + 1)
        best = candidates[np.argsort(returns)[-elite:]]
        mean, std = best.mean(axis=0), best.std(axis=0) + 0.05
        print(f"iteration {it}: mean return {returns.mean():6.1f}  best {returns.max():6.1f}", flush=True)
    final = episodes(env, np.repeat(mean[None], args.population, axis=0), seed=args.iterations + 1)[0]
    print(f"the mean policy: {final:.1f}  ({args.iterations} iterations of {args.population} episodes of "
          f"{args.steps} steps in {time.perf_counter() - started:.1f} s)")
    env.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
