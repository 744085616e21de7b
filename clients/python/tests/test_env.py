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


def test_the_tcp_environment_observes_what_vecenv_observes_range_beams_included():
    """The TCP environment takes its layout and values from crsim (no copy of its own): a robot
    with a 16-beam range sensor observes 28 + 16 values, equal to crsim.VecEnv's step by step."""
    from conftest import SCENES
    from crsim import VecEnv

    reach = SCENES / "reach.ron"
    env = CrsimParallelEnv(reach, max_steps=30)
    vec = VecEnv(reach, num_envs=1, max_steps=30)
    try:
        parts = [(s["name"], [p["name"] for p in s["parts"]]) for s in env.client.hello["robots"][0]["sensors"]]
        assert parts == [("pose", ["pose", "motion"]), ("battery", ["battery"]), ("bump", ["contact"]),
                         ("gripper", ["gripper"]), ("camera", ["camera"]), ("radio", ["heard"]),
                         ("range", ["range"])]
        assert env.observation_space("alpha").shape == (BASE_SIZE + 16,)
        obs, _ = env.reset(seed=5)
        vobs, _ = vec.reset(seed=5)
        assert env.observation_space("alpha").contains(obs["alpha"])
        np.testing.assert_array_equal(obs["alpha"], vobs[0, 0])
        for step in range(25):
            # Powers of two: the speeds they ask for are exact both ways.
            action = np.array([0.5, 0.25 if step < 12 else -0.5, 0.0], dtype=np.float32)
            obs, *_ = env.step({"alpha": action})
            vobs, *_ = vec.step(action.reshape(1, 1, 3))
            np.testing.assert_array_equal(obs["alpha"], vobs[0, 0], err_msg=f"step {step}")
    finally:
        env.close()
        vec.close()
