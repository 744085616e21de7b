"""The libraries users train with, on crsim unchanged: Gymnasium's and Stable-Baselines3's
environment checkers, SB3's VecEnv and PPO, SuperSuit's vector wrappers, pickling; and the
per-world settings, counts and reward callback of crsim.VecEnv."""

import os
import pickle
import signal
import threading

import numpy as np
import pytest

from conftest import SCENES, TWO
from crsim import VecEnv
from crsim.vector import COUNT_NAMES

PENS = SCENES / "pens.ron"

sb3 = pytest.importorskip("stable_baselines3")
ss = pytest.importorskip("supersuit")


def test_the_in_process_env_passes_gymnasiums_and_sb3s_checkers():
    from gymnasium.utils.env_checker import check_env as gym_check
    from stable_baselines3.common.env_checker import check_env as sb3_check

    from crsim.gym import GymEnv

    env = GymEnv(PENS, programs=["alpha"], max_steps=50)
    gym_check(env, skip_render_check=True)
    sb3_check(env, warn=True)
    env.close()


def test_the_tcp_env_passes_both_checkers_with_its_flat_default_action(pens_scene):
    from gymnasium import spaces
    from gymnasium.utils.env_checker import check_env as gym_check
    from stable_baselines3.common.env_checker import check_env as sb3_check

    from crsim.env import CrsimEnv

    env = CrsimEnv(pens_scene, max_steps=40, programs=TWO)
    try:
        assert env.action_space == spaces.Box(-1.0, 1.0, (3,), dtype=np.float32)
        assert env.render_mode is None
        gym_check(env, skip_render_check=True)
        sb3_check(env, warn=True)
    finally:
        env.close()
    dict_env = CrsimEnv(pens_scene, max_steps=40, programs=TWO, action_format="dict", message_size=2)
    try:
        assert isinstance(dict_env.action_space, spaces.Dict)
        dict_env.reset(seed=1)
        dict_env.step({"drive": np.array([1.0, 0.0], dtype=np.float32), "grip": 1, "message": np.zeros(2)})
    finally:
        dict_env.close()


def test_sb3s_vec_env_resets_in_the_step_an_episode_ends_and_ppo_learns_on_it():
    from stable_baselines3 import PPO
    from stable_baselines3.common.vec_env import VecMonitor, VecNormalize

    from crsim.sb3 import SB3VecEnv

    env = SB3VecEnv(PENS, num_envs=3, programs=TWO, max_steps=5)
    assert env.num_envs == 6 and env.observation_space.shape == (28,)
    env.seed(7)
    assert env._world_seeds() == [7, 8, 9], "world w gets seed + w, as VecEnv(seed=7) gives it"
    obs = env.reset()
    assert env._world_seeds() is None, "a seed serves one reset"
    assert obs.shape == (6, 28)
    assert env.hashes == VecEnv(PENS, num_envs=3, seed=7, programs=TWO).hashes
    for step in range(1, 6):
        obs, rewards, dones, infos = env.step(np.full((6, 3), 0.5, dtype=np.float32))
        assert dones.all() == (step == 5) and rewards.shape == (6,)
    assert all(info["TimeLimit.truncated"] for info in infos)
    last = np.stack([info["terminal_observation"] for info in infos])
    assert not np.array_equal(last, obs), "the last observation of the episode, then the next one's first"
    first = VecEnv(PENS, num_envs=3, seed=10, programs=TWO).reset(seed=10)[0].reshape(6, 28)
    assert np.array_equal(obs, first), "each world reset with its next seed: its last + 3 (the worlds)"
    model = PPO("MlpPolicy", VecNormalize(VecMonitor(env)), n_steps=32, batch_size=64, n_epochs=1, seed=0)
    model.learn(total_timesteps=6 * 64)
    env.close()


def test_supersuits_vector_wrappers_run_the_in_process_and_tcp_parallel_envs(pens_scene):
    from stable_baselines3 import PPO

    from crsim.env import CrsimParallelEnv
    from crsim.parallel import WorldParallelEnv

    for make in (lambda: WorldParallelEnv(PENS, programs=TWO, max_steps=30),
                 lambda: CrsimParallelEnv(pens_scene, max_steps=30, programs=TWO)):
        par = make()
        vec = ss.pettingzoo_env_to_vec_env_v1(par)
        # Copies of the environment (pickled: each a world, or a crsim, of its own).
        envs = ss.concat_vec_envs_v1(vec, 2, num_cpus=0, base_class="stable_baselines3")
        assert envs.num_envs == 4
        # No seed= for PPO: SuperSuit 3.11's SB3 wrapper has no seed() for it to call.
        PPO("MlpPolicy", envs, n_steps=16, batch_size=32, n_epochs=1).learn(total_timesteps=64)
        envs.close()
        par.close()


def test_a_pickled_vec_env_is_the_same_worlds_again():
    env = VecEnv(PENS, num_envs=2, seed=4, programs=["alpha"], sets=["robots[alpha].max_speed=0.2"])
    copy = pickle.loads(pickle.dumps(env))
    a = np.full((2, 1, 3), 0.7, dtype=np.float32)
    for _ in range(30):
        env.step(a)
        copy.step(a)
    assert copy.hashes == env.hashes
    env.close()
    copy.close()


def test_settings_per_world_vary_the_worlds_and_are_checked():
    def hashes(**kwargs):
        env = VecEnv(PENS, num_envs=3, seed=1, programs=["alpha"], **kwargs)
        a = np.full((3, 1, 3), 0.9, dtype=np.float32)
        for _ in range(60):
            env.step(a)
        return env.hashes

    same = hashes()
    speeds = [0.1, 0.2, 0.3]
    varied = hashes(world_sets=lambda i: [f"robots[alpha].max_speed={speeds[i]}"])
    assert hashes(world_sets=[[f"robots[alpha].max_speed={s}"] for s in speeds]) == varied
    assert len(set(varied)) == 3 and varied != same
    # World 1 alone at its speed: the same trajectory.
    alone = VecEnv(PENS, num_envs=1, seed=2, programs=["alpha"], sets=["robots[alpha].max_speed=0.2"])
    for _ in range(60):
        alone.step(np.full((1, 1, 3), 0.9, dtype=np.float32))
    assert alone.hashes[0] == varied[1]
    with pytest.raises(ValueError, match=r"world 2: .*max_speed"):
        VecEnv(PENS, num_envs=3, programs=["alpha"], world_sets=lambda i: [f"robots[alpha].max_speed={[0.2, 0.1, 0.0][i]}"])
    with pytest.raises(ValueError, match="world_sets has 2 lists for 3 worlds"):
        VecEnv(PENS, num_envs=3, programs=["alpha"], world_sets=[[], []])


def test_counts_weights_by_name_and_a_reward_callback_on_arrays():
    env = VecEnv(PENS, num_envs=2, programs=TWO, max_steps=3, reward_weights={"visited": 0.0, "battery": 10.0})
    env.reset(seed=1)
    assert COUNT_NAMES == ("boxed", "picked", "visited", "collisions", "heard", "battery")
    assert env.counts.shape == (2, 2, 6)
    before = env.counts[..., 5].copy()
    _, rewards, *_ = env.step(np.full((2, 2, 3), 1.0, dtype=np.float32))
    # Driving drains the battery: the reward is its change, weighted by 10.
    assert np.allclose(rewards, 10.0 * (env.counts[..., 5] - before), atol=1e-6) and (rewards < 0).all()
    with pytest.raises(ValueError, match='reward weight "pens" is not one of boxed, picked'):
        VecEnv(PENS, programs=TWO, reward_weights={"pens": 1.0})

    calls = []

    def moved(counts_before, counts, obs_before, obs):
        calls.append(counts.shape)
        return np.linalg.norm(obs[..., :2] - obs_before[..., :2], axis=-1) * 100.0

    env = VecEnv(PENS, num_envs=2, programs=TWO, max_steps=2, reward_fn=moved)
    env.reset(seed=1)
    a = np.zeros((2, 2, 3), dtype=np.float32)
    a[..., 0] = 1.0
    rewards = [env.step(a, copy=True)[1] for _ in range(3)]
    assert (rewards[0] > 0).all() and (rewards[1] > 0).all()
    assert (rewards[2] == 0).all(), "the autoreset step has no reward"
    assert calls == [(2, 2, 6)] * 3
    env.reward_fn = lambda *arrays: np.zeros(3)
    with pytest.raises(ValueError, match=r"shape \(3,\); expected \(2, 2\)"):
        env.step(a)


def test_ctrl_c_while_thousands_of_worlds_are_built_raises_keyboard_interrupt():
    # Python's own handler, installed here: a process started as a background job inherits
    # SIGINT ignored, and Python then leaves it ignored (the test would depend on how it was run).
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            VecEnv(PENS, num_envs=4096, programs=["alpha"])
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)


def test_the_ppo_example_runs(monkeypatch, capsys):
    import importlib.util

    from conftest import EXAMPLES

    spec = importlib.util.spec_from_file_location("ppo", EXAMPLES / "ppo.py")
    ppo = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ppo)
    monkeypatch.setattr("sys.argv", ["ppo.py", "--timesteps", "2048", "--worlds", "4", "--steps", "50"])
    assert ppo.main() == 0
    out = capsys.readouterr().out
    assert "random policy, held-out starts: mean return" in out and "trained policy" in out


def test_robots_of_different_sensors_get_a_dict_of_arrays_per_group():
    from crsim.groups import GroupedVecEnv

    sets = ["robots[beta].range_sensor=Some((rays: 16))"]
    with pytest.raises(ValueError, match=r"beta \(range16\): 44.*GroupedVecEnv"):
        VecEnv(PENS, num_envs=2, programs="all", sets=sets)
    env = GroupedVecEnv(PENS, num_envs=2, programs="all", sets=sets, max_steps=10)
    assert env.groups == {"camera": ["alpha", "gamma"], "range16": ["beta"]}
    assert env.robots == ["alpha", "gamma", "beta"]
    obs, _ = env.reset(seed=1)
    assert obs["camera"].shape == (2, 2, 28) and obs["range16"].shape == (2, 1, 44)
    assert env.single_observation_space["range16"].shape == (1, 44)
    assert (obs["range16"][..., 28:] < 1.0).any(), "beta's beams see the room"
    start = {g: o[..., :2].copy() for g, o in obs.items()}
    # Only the range16 group (beta) drives.
    actions = {"camera": np.zeros((2, 2, 3), np.float32), "range16": np.full((2, 1, 3), 0.8, np.float32)}
    for _ in range(20):
        out = env.step(actions)
    assert not np.allclose(out["range16"]["observation"][..., :2], start["range16"])
    assert np.allclose(out["camera"]["observation"][..., :2], start["camera"], atol=1e-3)
    assert out["camera"]["reward"].shape == (2, 2) and out["range16"]["truncated"].shape == (2, 1)
    with pytest.raises(ValueError, match=r"group 'camera' of shape \(2, 3\)"):
        env.step({"camera": np.zeros((2, 3)), "range16": actions["range16"]})
    with pytest.raises(ValueError, match="a dict with the groups"):
        env.step(np.zeros((2, 3, 3), np.float32))
    copy = pickle.loads(pickle.dumps(env))
    assert isinstance(copy, GroupedVecEnv) and copy.groups == env.groups
    copy.close()
    env.close()


def test_message_vectors_go_through_crsims_radio():
    env = VecEnv(PENS, num_envs=1, programs=TWO, message_size=2, sets=["comms.probability=1.0"])
    assert env.action_size == 5 and env.observation_size == 30
    env.reset(seed=1)
    a = np.zeros((1, 2, 5), np.float32)
    a[0, 0, 3:] = (0.5, -0.25)          # alpha says this; beta says (1, 1), clamped from 7
    a[0, 1, 3:] = 7.0
    for _ in range(2):
        obs, *_ = env.step(a)
    # gamma (crsim's own network robot) talks too, in claims: only vectors of 2 values count.
    assert np.allclose(obs[0, 1, 28:], (0.5, -0.25)), obs[0, 1, 28:]
    assert np.allclose(obs[0, 0, 28:], (1.0, 1.0)), obs[0, 0, 28:]
    assert env.counts[0, :, COUNT_NAMES.index("heard")].min() >= 1


def test_stepping_from_two_threads_at_once_raises_in_the_second():
    env = VecEnv(PENS, num_envs=64, programs=["alpha"], max_steps=10**6)
    a = np.full((64, 1, 3), 0.5, np.float32)
    errors, done = [], threading.Event()

    def busy():
        for _ in range(100):
            env.step(a)
        done.set()

    worker = threading.Thread(target=busy)
    worker.start()
    while not done.is_set():
        try:
            env.step(a)
        except RuntimeError as e:
            errors.append(str(e))
    worker.join()
    assert errors and all("borrowed" in e for e in errors), errors[:3]
    env.step(a)  # both threads done: it steps again
    env.close()


def test_the_observation_is_the_parts_named_with_the_beams_the_settings_give():
    from crsim.vector import OBSERVATION_PARTS

    assert OBSERVATION_PARTS[0] == "pose" and OBSERVATION_PARTS[-1] == "message"
    sets = ["robots[*].range_sensor=Some((rays: 8))"]
    full = VecEnv(PENS, num_envs=2, programs=TWO, sets=sets)
    env = VecEnv(PENS, num_envs=2, programs=TWO, sets=sets, observation=["range", "pose"])
    assert env.observation_size == 4 + 8 and env.single_observation_space.shape == (2, 12)
    obs, _ = env.reset(seed=1)
    whole, _ = full.reset(seed=1)
    assert np.array_equal(obs, np.concatenate([whole[..., :4], whole[..., 28:36]], axis=-1))
    with pytest.raises(ValueError, match='observation part "lidar" is not one of pose, motion'):
        VecEnv(PENS, programs=TWO, observation=["lidar"])
