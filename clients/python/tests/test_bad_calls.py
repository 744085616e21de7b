"""Bad calls get Python errors naming the argument: ``TypeError`` for a value of the wrong kind,
``ValueError`` for one out of range, never a Rust panic (``pyo3_runtime.PanicException``, a
``BaseException`` that ``except Exception`` does not catch) and never a silent guess (a
truncated float, a parsed string, a reshaped or broadcast array)."""

import numpy as np
import pytest

from conftest import SCENES
from crsim import VecEnv

PENS = SCENES / "pens.ron"
ONE = dict(programs=["alpha"], max_steps=50)

gym = pytest.importorskip("gymnasium")
pytest.importorskip("pettingzoo")
pytest.importorskip("stable_baselines3")


def vec(**kwargs):
    return VecEnv(PENS, **{**dict(num_envs=2), **ONE, **kwargs})


# (what, the call, the error, a pattern its message matches)
CONSTRUCTION = [
    ("no worlds", lambda: vec(num_envs=0), ValueError, r"num_envs: expected 1 to 65,536, got 0"),
    ("negative worlds", lambda: vec(num_envs=-1), ValueError, r"num_envs: expected 1 to 65,536, got -1"),
    ("too many worlds", lambda: vec(num_envs=10**7), ValueError,
     r"num_envs: 10,000,000 worlds is more than the 65,536 one VecEnv holds \(they would need about 540 GiB"),
    ("a float of worlds", lambda: vec(num_envs=2.7), TypeError, r"num_envs: expected an int, got float 2.7"),
    ("a string of worlds", lambda: vec(num_envs="4"), TypeError, r"num_envs: expected an int, got str '4'"),
    ("a bool of worlds", lambda: vec(num_envs=True), TypeError, r"num_envs: expected an int, got bool"),
    ("no steps", lambda: vec(max_steps=0), ValueError, r"max_steps: expected at least 1, got 0"),
    ("a float of steps", lambda: vec(max_steps=10.5), TypeError, r"max_steps: expected an int"),
    ("no observation parts", lambda: vec(observation=[]), ValueError, r"observation: name at least one part"),
    ("an unknown part", lambda: vec(observation=["pose", "smell"]), ValueError, r"smell"),
    ("a part that is not a name", lambda: vec(observation=[1]), TypeError, r"observation\[0\]: expected a string"),
    ("a float seed", lambda: vec(seed=1.5), TypeError, r"seed: expected an int, got float 1.5"),
    ("a negative seed", lambda: vec(seed=-1), ValueError, r"seed: expected 0 to"),
    ("too big a seed", lambda: vec(seed=2**64), ValueError, r"seed: expected 0 to"),
    ("seeds of the wrong count", lambda: vec(seeds=[1, 2, 3]), ValueError, r"seeds: 3 seeds for 2 worlds"),
    ("a float among the seeds", lambda: vec(seeds=[1, 2.5]), TypeError, r"seeds\[1\]: expected an int"),
    ("seeds as one int", lambda: vec(seeds=3), TypeError, r"seeds: expected a list of 2 ints"),
    ("seed and seeds", lambda: vec(seed=1, seeds=[1, 2]), ValueError, r"give seed or seeds, not both"),
    ("no threads", lambda: vec(threads=0), ValueError, r"threads: expected 1 to 1,024, got 0"),
    ("a float of threads", lambda: vec(threads=1.5), TypeError, r"threads: expected an int"),
    ("a huge message", lambda: vec(message_size=65), ValueError, r"message_size: expected 0 to 64, got 65"),
    ("a negative message", lambda: vec(message_size=-1), ValueError, r"message_size: expected 0 to 64, got -1"),
    ("programs as a number", lambda: vec(programs=7), TypeError, r"programs: expected a string or a list of strings"),
    ("a program that is not a name", lambda: vec(programs=["alpha", 3]), TypeError, r"programs\[1\]: expected a string"),
    ("an unknown robot", lambda: vec(programs=["nobody"]), ValueError, r"nobody"),
    ("sets as a number", lambda: vec(sets=1), TypeError, r"sets: expected a string"),
    ("a bad set", lambda: vec(sets=["arena.width"]), ValueError, r"arena.width"),
    ("a set that is not a string", lambda: vec(sets=[b"arena.width=3"]), TypeError, r"sets\[0\]: expected a string"),
    ("world sets of the wrong count", lambda: vec(world_sets=[[]]), ValueError, r"world_sets has 1 lists for 2 worlds"),
    ("world sets as a number", lambda: vec(world_sets=5), TypeError, r"world_sets: expected a list"),
    ("a weight that is not a number", lambda: vec(reward_weights={"pens_boxed": "a lot"}), TypeError,
     r"reward_weights\['pens_boxed'\]: expected a number"),
    ("a weight that is not finite", lambda: vec(reward_weights={"pens_boxed": float("nan")}), ValueError,
     r"reward_weights\['pens_boxed'\]: nan is not a finite number"),
    ("an unknown count", lambda: vec(reward_weights={"smiles": 1.0}), ValueError, r"smiles"),
    ("weights as a list", lambda: vec(reward_weights=[1.0]), TypeError, r"reward_weights: expected a dict"),
    ("an unknown end", lambda: vec(until="forever"), ValueError, r"until: \"forever\" is not pens-boxed or explored"),
    ("an end that is not a name", lambda: vec(until=3), TypeError, r"until: expected"),
    ("a reward_fn that is not a function", lambda: vec(reward_fn=3), TypeError, r"reward_fn: expected a function"),
    ("a scene that is not a path", lambda: VecEnv(3, num_envs=1), TypeError, r"scene: expected a file path"),
    ("a scene that is not there", lambda: VecEnv(SCENES / "nothing.ron", num_envs=1, programs="all"), ValueError,
     r"nothing.ron: cannot read"),
    ("a folder as the scene", lambda: VecEnv(SCENES, num_envs=1, programs="all"), ValueError, r"not a regular file"),
]


@pytest.mark.parametrize("what,call,error,pattern", CONSTRUCTION, ids=[c[0] for c in CONSTRUCTION])
def test_a_bad_construction_raises_a_python_error_naming_it(what, call, error, pattern):
    with pytest.raises(error, match=pattern):
        call()


def test_bad_calls_on_a_running_vecenv_raise_and_leave_it_working():
    env = vec()
    env.reset(seed=1)
    good = np.zeros((2, 1, 3), np.float32)
    for call, error, pattern in [
        (lambda: env.reset(seed=1.5), TypeError, r"seed: expected an int, got float 1.5"),
        (lambda: env.reset(seed="7"), TypeError, r"seed: expected an int, got str '7'"),
        (lambda: env.reset(seed=[1]), ValueError, r"seed: 1 seeds for 2 worlds"),
        (lambda: env.reset(options=[1]), TypeError, r"options: expected a dict"),
        (lambda: env.reset(options={"reset_mask": [1, 0]}), TypeError, r"reset_mask|mask: expected bools"),
        (lambda: env.reset_at([True]), ValueError, r"mask: shape \(1,\); expected \(2,\)"),
        (lambda: env.step(np.zeros((2, 3), np.float32)), ValueError, r"actions of shape \(2, 3\)"),
        (lambda: env.step(np.zeros((1, 2, 1, 3), np.float32)), ValueError, r"actions of shape"),
        (lambda: env.step("go"), TypeError, r"dtype"),
    ]:
        with pytest.raises(error, match=pattern):
            call()
    # The worlds were left as they were: they step on.
    obs, *_ = env.step(good)
    assert obs.shape == (2, 1, 28)
    env.close()


def test_the_adapters_take_their_own_shapes_only():
    from crsim.gym import GymEnv, GymVectorEnv
    from crsim.parallel import WorldParallelEnv
    from crsim.sb3 import SB3VecEnv

    # Four worlds: their (E, 3) actions transposed, flattened, with a robot axis, or a scalar.
    g = GymVectorEnv(PENS, num_envs=4, **ONE)
    g.reset(seed=1)
    for wrong in [np.zeros((3, 4), np.float32), np.zeros(12, np.float32), np.zeros((4, 1, 3), np.float32), 0.5]:
        with pytest.raises(ValueError, match=r"actions: shape .*; expected \(4, 3\)"):
            g.step(wrong)
    g.step(np.zeros((4, 3), np.float32))
    g.close()

    e = GymEnv(PENS, **ONE)
    e.reset(seed=1)
    with pytest.raises(ValueError, match=r"action: shape \(\); expected \(3,\)"):
        e.step(0.5)
    e.close()

    s = SB3VecEnv(PENS, num_envs=2, programs=["alpha", "beta"], max_steps=50)
    s.reset()
    for wrong in [np.zeros((3, 4), np.float32), np.zeros(12, np.float32), np.zeros((2, 2, 3), np.float32)]:
        with pytest.raises(ValueError, match=r"actions: shape .*; expected \(4, 3\)"):
            s.step_async(wrong)
    s.step_async(np.zeros((4, 3), np.float32))
    s.step_wait()
    s.close()

    p = WorldParallelEnv(PENS, programs=["alpha", "beta"], max_steps=50)
    p.reset(seed=1)
    with pytest.raises(ValueError, match=r"actions\['alpha'\]: shape \(\); expected \(3,\)"):
        p.step({"alpha": 0.5})
    with pytest.raises(ValueError, match=r"actions for agents that are not in this world: \['zed'\]"):
        p.step({"alpha": np.zeros(3), "zed": np.zeros(3)})
    with pytest.raises(TypeError, match=r"actions: expected a dict"):
        p.step([np.zeros(3)])
    p.step({"alpha": np.zeros(3), "beta": np.zeros(3)})
    p.close()


def test_no_panic_escapes_the_native_module():
    """Every bad construction above ends in an ``Exception``: none is a ``PanicException``."""
    for what, call, _, _ in CONSTRUCTION:
        try:
            call()
        except Exception:  # noqa: BLE001 - what matters is that it is an Exception at all
            pass
        except BaseException as e:  # a PanicException lands here
            pytest.fail(f"{what}: {type(e).__name__} escaped: {e}")


def test_a_panic_inside_the_native_module_is_a_runtime_error():
    from crsim import _native

    with pytest.raises(RuntimeError, match=r"crsim: a deliberate panic failed inside the simulator \(as the test asked\)"):
        _native._panic_in_guard()


def test_no_two_episodes_of_a_batch_share_a_seed():
    """World w's k-th episode is seeded seed + k·E + w: 64 worlds × 100 episodes, 6,400 seeds (``seed +
    w + k`` gave 163, and world 0's second episode replayed world 1's first)."""
    from crsim.vector import episode_seeds

    worlds, episodes = 64, 100
    first = episode_seeds(5, worlds)
    seeds = {s + k * worlds for s in first for k in range(episodes)}
    assert len(seeds) == worlds * episodes

    # And so the worlds do: two worlds, episodes of 5 steps. World 0's second episode is a fresh
    # world of seed 7 + 2 (its trajectory's hash after four steps), not world 1's first (seed 8).
    a = np.zeros((1, 1, 3), np.float32)
    a[..., 0] = 0.8

    def hash_after(steps, seed):
        fresh = VecEnv(PENS, num_envs=1, seed=seed, **ONE)
        for _ in range(steps):
            fresh.step(a)
        return fresh.hashes[0]

    env = VecEnv(PENS, num_envs=2, seed=7, **{**ONE, "max_steps": 5})
    both = np.repeat(a, 2, axis=0)
    for _ in range(5 + 1 + 4):  # an episode, the reset, four steps of the next
        env.step(both)
    assert env.episode_steps == [4, 4]
    assert env.hashes == [hash_after(4, 9), hash_after(4, 10)]
    assert hash_after(4, 9) != hash_after(4, 8)


def test_a_partial_reset_resets_the_masked_worlds_only():
    from crsim.gym import GymVectorEnv

    env = GymVectorEnv(PENS, num_envs=3, **ONE)
    env.reset(seed=1)
    a = np.zeros((3, 3), np.float32)
    a[:, 0] = 0.8
    for _ in range(20):
        moved, *_ = env.step(a)
    moved = moved.copy()
    obs, info = env.reset(seed=1, options={"reset_mask": np.array([False, True, False])})
    fresh, _ = GymVectorEnv(PENS, num_envs=3, **ONE).reset(seed=1)
    assert info == {}
    assert np.array_equal(obs[1], fresh[1]), "the masked world starts afresh"
    assert np.array_equal(obs[0], moved[0]) and np.array_equal(obs[2], moved[2]), "the others keep their state"
    assert env.env.episode_steps == [20, 0, 20]
