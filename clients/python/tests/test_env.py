"""The PettingZoo and Gymnasium environments: the libraries' own API checks, observations,
rewards, and the example collectors boxing every pen."""

import json

import numpy as np
from gymnasium.utils.env_checker import check_env
from pettingzoo.test import parallel_api_test

from conftest import TWO
from crsim import Client, Crsim
from crsim.env import BASE_SIZE, CrsimEnv, CrsimParallelEnv


def test_pettingzoo_parallel_api(pens_scene):
    env = CrsimParallelEnv(pens_scene, max_steps=150, message_size=4, programs=TWO)
    try:
        parallel_api_test(env, num_cycles=200)
    finally:
        env.close()


def test_gymnasium_env_checker(pens_scene):
    env = CrsimEnv(pens_scene, max_steps=100, programs=TWO)
    try:
        check_env(env, skip_render_check=True)
    finally:
        env.close()


def test_observations_actions_and_a_reward_hook(pens_scene):
    calls = []

    def reward(agent, previous, reading):
        calls.append(agent)
        return reading["odometry"][0] - (previous["odometry"][0] if previous else 0.0)

    env = CrsimParallelEnv(pens_scene, max_steps=50, reward_fn=reward, programs=TWO)
    try:
        obs, infos = env.reset()
        assert set(obs) == {"alpha", "beta"}
        assert obs["alpha"].shape == (BASE_SIZE,) and obs["alpha"].dtype == np.float32
        total = 0.0
        while env.agents:
            actions = {a: np.array([1.0, 0.0, 0.0], dtype=np.float32) for a in env.agents}
            obs, rewards, terminations, truncations, infos = env.step(actions)
            total += rewards.get("alpha", 0.0)
        # Fifty steps at full speed (0.4 m/s): about 0.4 m, the distance the hook rewarded.
        assert 0.3 < total < 0.45, total
        assert calls.count("alpha") == 50
        assert all(truncations.values())
    finally:
        env.close()


def test_the_example_collectors_box_every_pen(pens_scene, tmp_path):
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "examples" / "collectors.py"
    spec = importlib.util.spec_from_file_location("collectors", path)
    collectors = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(collectors)
    out = tmp_path / "m.json"
    with Crsim(pens_scene, steps=20000, out=out, programs="all") as sim:
        client = Client(sim.host, sim.port)
        done = collectors.collect(client, steps=20000, pens_total=8)
        client.close()
        sim.close()
    assert done is not None
    metrics = json.loads(out.read_text())
    assert metrics["collect"]["pens_boxed"] == 8, metrics["collect"]
    # They claimed pens over the radio.
    assert metrics["comms"]["sent"] > 0, metrics["comms"]
