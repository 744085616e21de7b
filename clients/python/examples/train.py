"""Training against crsim: the cross-entropy method on a linear policy for one robot of the pens
room (Gymnasium's single-agent wrapper), rewarded by crsim's own counts — new cells visited, pens
boxed, collisions. Pure numpy; every episode is a reset of the same crsim process.

    python3 clients/python/examples/train.py --iterations 8

prints the mean and best episode return of each iteration's candidates.
"""

import argparse
import sys
from pathlib import Path

import numpy as np

from crsim.env import CrsimEnv

SCENE = Path(__file__).resolve().parents[3] / "scenes" / "pens.ron"


def episode(env, weights, seed):
    """One episode with the policy drive = tanh(W · [obs, 1]), never gripping; its return."""
    obs, _ = env.reset(seed=seed)
    total, done = 0.0, False
    while not done:
        drive = np.tanh(weights @ np.append(obs, 1.0)).astype(np.float32)
        obs, reward, terminated, truncated, _ = env.step(np.append(drive, np.float32(0.0)))
        total += reward
        done = terminated or truncated
    return total


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--iterations", type=int, default=8)
    parser.add_argument("--population", type=int, default=12)
    parser.add_argument("--steps", type=int, default=400, help="steps per episode")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    env = CrsimEnv(SCENE, robot="alpha", programs=["alpha"], max_steps=args.steps,
                   reward_weights={"visited": 1.0, "boxed": 10.0, "collisions": -1.0})
    try:
        shape = (2, env.observation_space.shape[0] + 1)
        mean, std = np.zeros(shape), np.full(shape, 0.5)
        elite = max(2, args.population // 4)
        for it in range(args.iterations):
            candidates = mean + std * rng.standard_normal((args.population, *shape))
            # The same scene seed for every candidate of an iteration: they are compared fairly.
            returns = np.array([episode(env, w, seed=it + 1) for w in candidates])
            best = candidates[np.argsort(returns)[-elite:]]
            mean, std = best.mean(axis=0), best.std(axis=0) + 0.05
            print(f"iteration {it}: mean return {returns.mean():6.1f}  best {returns.max():6.1f}", flush=True)
        print(f"the mean policy: {episode(env, mean, seed=args.iterations + 1):.1f}")
    finally:
        env.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
