"""Learning to reach a pen and pick it up, with Stable-Baselines3's PPO on many in-process crsim
worlds. Each world starts the robot at its own pose (``world_sets``: domain randomisation), so
the policy has to find pens with its camera and range sensor rather than learn one path; the
reward is a function of crsim's arrays (``reward_fn``): +1 for the first pen picked up in an
episode, and a potential-based term for closing in on the nearest pen the camera sees.

    pip install './clients/python[sb3]'
    python3 clients/python/examples/ppo.py --timesteps 300000 --plot docs/ppo-reach.png

prints the mean return of the last episodes as training goes, then the trained policy and a
random one on starts it never trained from; ``--plot`` draws the learning curve.
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np

SCENE = Path(__file__).resolve().parents[3] / "scenes" / "reach.ron"
PENS = np.array([(0.7, 0.8), (1.6, 2.3), (2.4, 0.9), (0.6, 2.2), (2.3, 2.1), (1.5, 1.3)])
PICKED, HOLDING, PEN_SEEN, PEN_DISTANCE = 1, 9, 11, 12  # crsim.vector.COUNT_NAMES; the layout


def starts(n, rng):
    """n robot poses in the 3 x 3 m room, at least 0.35 m from walls and pens."""
    out = []
    while len(out) < n:
        x, y = rng.uniform(0.35, 2.65, 2)
        if np.min(np.hypot(PENS[:, 0] - x, PENS[:, 1] - y)) > 0.35:
            out.append(f"robots[alpha].pose=({x:.2f}, {y:.2f}, {rng.uniform(0, 360):.0f})")
    return out


def potential(obs):
    """0 while holding a pen, else minus the distance to the nearest pen the camera sees over its
    range (-1 when it sees none)."""
    distance = np.where(obs[..., PEN_SEEN] > 0, obs[..., PEN_DISTANCE], 1.0)
    return np.where(obs[..., HOLDING] > 0, 0.0, -distance)


def reward(counts_before, counts, obs_before, obs):
    """+1 when the first pen of the episode is picked up, and half the change of ``potential``
    (shaping that a loop cannot farm: turning a pen out of view costs what seeing it gave)."""
    first_pick = (counts_before[..., PICKED] == 0) & (counts[..., PICKED] > 0)
    return first_pick.astype(np.float32) + 0.5 * (potential(obs) - potential(obs_before))


def make(worlds, steps, seed, poses):
    from crsim.sb3 import SB3VecEnv

    return SB3VecEnv(SCENE, num_envs=worlds, seed=seed, max_steps=steps, reward_fn=reward,
                     world_sets=[[p] for p in poses])


def evaluate(env, policy, episodes_per_world=1):
    """Mean return and the share of episodes with a pen picked up, over whole episodes."""
    obs = env.reset()
    returns, picked = [], []
    total = np.zeros(env.num_envs)
    target = env.num_envs * episodes_per_world
    while len(returns) < target:
        obs, rewards, dones, infos = env.step(policy(obs))
        total += rewards
        for i in np.flatnonzero(dones):
            returns.append(total[i])
            picked.append(total[i] >= 1.0)
            total[i] = 0.0
    return float(np.mean(returns)), float(np.mean(picked))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--timesteps", type=int, default=300_000)
    parser.add_argument("--worlds", type=int, default=32)
    parser.add_argument("--steps", type=int, default=200, help="steps per episode (4 s of simulated time)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--plot", type=Path, help="draw the learning curve into this PNG (needs matplotlib)")
    args = parser.parse_args()
    if args.plot:  # before training, so a missing matplotlib does not cost a run
        import matplotlib

        matplotlib.use("Agg")

    from stable_baselines3 import PPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.vec_env import VecMonitor

    rng = np.random.default_rng(args.seed)
    env = VecMonitor(make(args.worlds, args.steps, args.seed, starts(args.worlds, rng)))
    held_out = make(args.worlds, args.steps, args.seed + 1000, starts(args.worlds, rng))
    random_return, random_picked = evaluate(held_out, lambda o: rng.uniform(-1, 1, (len(o), 3)).astype(np.float32))
    print(f"random policy, held-out starts: mean return {random_return:.2f}, picked a pen in {random_picked:.0%}")

    curve = []

    class Curve(BaseCallback):
        def _on_rollout_end(self):
            buffer = self.model.ep_info_buffer
            if buffer:
                curve.append((self.num_timesteps, float(np.mean([e["r"] for e in buffer]))))
                print(f"{self.num_timesteps:8d} steps  mean return {curve[-1][1]:6.2f}", flush=True)

        def _on_step(self):
            return True

    model = PPO("MlpPolicy", env, n_steps=128, batch_size=512, n_epochs=4, gamma=0.98, learning_rate=3e-4,
                seed=args.seed, verbose=0)
    start = time.perf_counter()
    model.learn(total_timesteps=args.timesteps, callback=Curve())
    wall = time.perf_counter() - start
    print(f"trained {args.timesteps} steps on {args.worlds} worlds in {wall:.0f} s")
    trained_return, trained_picked = evaluate(held_out, lambda o: model.predict(o, deterministic=True)[0])
    print(f"trained policy, held-out starts: mean return {trained_return:.2f}, picked a pen in {trained_picked:.0%}")
    if args.plot:
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(6, 3.4), dpi=110)
        ax.plot(*zip(*curve), label="PPO, training episodes (mean of the last 100)")
        ax.axhline(random_return, color="grey", linestyle="--", label=f"random policy ({random_return:.2f})")
        ax.axhline(trained_return, color="green", linestyle=":", label=f"trained, held-out starts ({trained_return:.2f})")
        ax.set_xlabel("robot steps")
        ax.set_ylabel("episode return")
        ax.set_title(f"reach.ron: {args.worlds} worlds, {wall:.0f} s on {args.timesteps} steps")
        ax.legend(loc="lower right", fontsize=8)
        fig.tight_layout()
        fig.savefig(args.plot)
        print(f"learning curve: {args.plot}")
    env.close()
    held_out.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
