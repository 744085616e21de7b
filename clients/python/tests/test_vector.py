"""crsim.VecEnv: many worlds in this process, stepped together into numpy arrays."""

import json

import numpy as np
import pytest

from conftest import SCENES
from crsim import Client, VecEnv

PENS = SCENES / "pens.ron"


def constant(env, linear=0.8, angular=0.3):
    a = np.zeros((env.num_envs, len(env.robots), 3), dtype=np.float32)
    a[..., 0], a[..., 1] = linear, angular
    return a


def test_shapes_dtypes_and_buffers_reused():
    env = VecEnv(PENS, num_envs=3, programs=["alpha", "beta"], max_steps=100)
    obs, info = env.reset(seed=1)
    assert obs.shape == (3, 2, 28) and obs.dtype == np.float32 and info == {}
    assert env.single_observation_space.shape == (2, 28) and env.observation_space.shape == (3, 2, 28)
    assert env.single_action_space.shape == (2, 3) and env.action_space.shape == (3, 2, 3)
    obs2, rewards, terminated, truncated, _ = env.step(constant(env))
    assert obs2 is obs, "the same array, overwritten"
    assert rewards.shape == (3, 2) and rewards.dtype == np.float32
    assert terminated.dtype == bool and truncated.shape == (3, 2)
    kept = env.step(constant(env), copy=True)[0]
    assert kept is not obs and np.array_equal(kept, obs)
    assert np.all(np.abs(obs) <= 1.0)
    env.close()


def test_a_worlds_trajectory_does_not_depend_on_the_batch_its_place_or_the_threads():
    def run(seeds, threads):
        env = VecEnv(PENS, num_envs=len(seeds), seeds=seeds, threads=threads, programs=["alpha"], max_steps=10**6)
        a = constant(env)
        for s, row in zip(seeds, a):
            row[0, 1] = 0.1 * (s % 5)
        for _ in range(200):
            env.step(a)
        return env.hashes

    alone = {s: run([s], 1)[0] for s in (3, 4, 6)}
    assert run([3, 4, 6], 2) == [alone[3], alone[4], alone[6]]
    assert run([6, 3, 3, 4], 2) == [alone[6], alone[3], alone[3], alone[4]]
    assert len(set(alone.values())) == 3


def test_a_forked_process_steps_and_closes_the_worlds_it_inherited():
    """The worlds' threads are kept from step to step; a process forked after they were made
    (multiprocessing's fork) has none of them, and steps and closes its copy all the same."""
    import os
    import time

    env = VecEnv(PENS, num_envs=4, seeds=[1, 2, 3, 4], threads=2, programs=["alpha"], max_steps=10**6)
    a = constant(env)
    env.step(a)  # the threads are made
    read, write = os.pipe()
    child = os.fork()
    if child == 0:
        code = 1
        try:
            for _ in range(20):
                env.step(a)
            os.write(write, json.dumps(env.hashes).encode())
            env.close()
            code = 0
        finally:
            os._exit(code)
    os.close(write)
    for _ in range(20):
        env.step(a)
    deadline = time.monotonic() + 60
    while (done := os.waitpid(child, os.WNOHANG))[0] == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    if done[0] == 0:
        os.kill(child, 9)
        os.waitpid(child, 0)
        pytest.fail("the forked process hung on the worlds it inherited")
    assert os.waitstatus_to_exitcode(done[1]) == 0
    with os.fdopen(read) as r:
        assert json.loads(r.read()) == env.hashes, "the child's worlds went where the parent's did"
    env.close()


def test_a_world_gives_the_trajectory_of_a_program_sending_the_same_actions_over_tcp(run, tmp_path):
    steps = 300
    sim = run(PENS, programs=["alpha"], steps=steps)
    client = Client(sim.host, sim.port)
    body = {r["name"]: r for r in client.hello["robots"]}["alpha"]
    client.register(["alpha"])
    # The environment sends fractions of the maxima, multiplied in float32.
    linear = float(np.float32(0.8) * np.float32(body["max_speed"]))
    angular = float(np.float32(0.3) * np.float32(body["max_turn"]))
    for step in client.steps():
        client.drive("alpha", linear, angular)
    sim.process.wait(timeout=60)
    tcp_hash = json.loads((tmp_path / "m.json").read_text())["hash"]
    env = VecEnv(PENS, num_envs=1, seed=json.loads((tmp_path / "m.json").read_text())["seed"], programs=["alpha"],
                 max_steps=10**6)
    for _ in range(steps):
        env.step(constant(env))
    assert env.hashes == [tcp_hash]


def test_an_ended_episode_resets_at_the_next_step():
    env = VecEnv(PENS, num_envs=2, seed=7, programs=["alpha"], max_steps=5)
    # Each world's next episode is seeded its last + 2 (the worlds): 7 + 2 and 8 + 2.
    fresh = VecEnv(PENS, num_envs=2, seeds=[9, 10], programs=["alpha"], max_steps=5)
    for _ in range(5):
        _, _, _, truncated, _ = env.step(constant(env))
    assert truncated.all() and env.episode_steps == [5, 5]
    obs, rewards, terminated, truncated, _ = env.step(constant(env, 1.0, 1.0))
    assert not truncated.any() and not terminated.any() and not rewards.any()
    assert env.episode_steps == [0, 0]
    first, _ = fresh.reset(seed=9)
    assert np.array_equal(obs, first)
    assert env.hashes == fresh.hashes


def test_bad_use_gets_a_clear_error():
    env = VecEnv(PENS, num_envs=2, programs=["alpha"])
    with pytest.raises(ValueError, match=r"actions of shape \(2, 3\); expected \(2, 1, 3\)"):
        env.step(np.zeros((2, 3), dtype=np.float32))
    a = constant(env)
    a[1, 0, 2] = np.nan
    with pytest.raises(ValueError, match=r"action value 2 of robot 'alpha' in world 1 is nan"):
        env.step(a)
    with pytest.raises(TypeError, match="dtype"):
        env.step(np.full((2, 1, 3), "x"))
    with pytest.raises(ValueError, match=r"mask: shape \(1,\); expected \(2,\)"):
        env.reset_at([True])
    env.close()
    with pytest.raises(RuntimeError, match="closed"):
        env.step(constant(env))
    with pytest.raises(ValueError, match="robots\\[nobody\\]|nobody"):
        VecEnv(PENS, num_envs=1, programs=["nobody"])
    with pytest.raises(ValueError, match="no program robots"):
        VecEnv(PENS, num_envs=1)
    with pytest.raises(ValueError, match="arena"):
        VecEnv(PENS, num_envs=1, programs=["alpha"], sets=["arena.width=-1"])
    with pytest.raises(ValueError, match="cannot read|No such file"):
        VecEnv(SCENES / "no-such.ron", num_envs=1)


def test_gymnasiums_vector_wrappers_run_on_it_unchanged():
    from gymnasium.vector import AutoresetMode
    from gymnasium.wrappers.vector import RecordEpisodeStatistics

    from crsim.gym import GymVectorEnv

    envs = RecordEpisodeStatistics(GymVectorEnv(PENS, num_envs=4, programs=["alpha"], max_steps=20))
    assert envs.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP
    obs, info = envs.reset(seed=2)
    assert obs.shape == (4, 28) and envs.observation_space.contains(obs)
    finished = []
    for _ in range(45):
        obs, rewards, terminated, truncated, info = envs.step(envs.action_space.sample())
        assert envs.observation_space.contains(obs) and rewards.shape == (4,)
        if "episode" in info:
            finished.extend(info["episode"]["l"][info["_episode"]])
    # Episodes of 20 steps, a reset step between them: two ended in each world.
    assert finished == [20] * 8
    envs.close()
    with pytest.raises(ValueError, match="one robot a world"):
        GymVectorEnv(PENS, num_envs=1, programs="all")


def test_one_world_is_a_pettingzoo_parallel_env_that_passes_its_api_test():
    from pettingzoo.test import parallel_api_test

    from crsim.parallel import WorldParallelEnv

    env = WorldParallelEnv(PENS, seed=1, programs="all", max_steps=60)
    assert env.possible_agents == ["alpha", "beta", "gamma"]
    parallel_api_test(env, num_cycles=200)
    obs, _ = env.reset(seed=4)
    assert set(obs) == {"alpha", "beta", "gamma"} and obs["alpha"].shape == (28,)
    for _ in range(60):
        obs, rewards, terminated, truncated, _ = env.step({a: env.action_space(a).sample() for a in env.agents})
    assert env.agents == [] and all(truncated.values())
    env.close()


def test_the_numpy_training_example_runs_on_the_vectorised_worlds():
    import subprocess
    import sys

    from conftest import EXAMPLES

    out = subprocess.run([sys.executable, str(EXAMPLES / "train_vector.py"), "--iterations", "2", "--population", "4",
                          "--steps", "50"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert [line.split(":")[0] for line in lines[:2]] == ["iteration 0", "iteration 1"], out.stdout
    assert lines[2].startswith("the mean policy: "), out.stdout
