"""The client against a real crsim: registration, lock-step, the radio both ways, reset."""

import json
import math

import pytest

from conftest import SCENES, TWO
from crsim import Client, ProtocolError


def test_hello_registration_and_refusals(run, pens_scene):
    sim = run(pens_scene, programs=TWO)
    client = Client(sim.host, sim.port)
    assert client.hello["protocol"] == "crsim-programs" and client.hello["version"] == 1
    assert [r["name"] for r in client.hello["robots"]] == ["alpha", "beta"]
    assert client.register({"alpha": "both", "beta": "broadcast"}) == ["alpha", "beta"]
    other = Client(sim.host, sim.port)
    with pytest.raises(ProtocolError) as refused:
        other.register(["alpha", "gamma"])
    assert 'robot "alpha" is already driven by another program' in str(refused.value)
    assert 'robot "gamma" is not a program robot' in str(refused.value)


def test_lock_step_drives_the_robot(run, pens_scene):
    sim = run(pens_scene, programs=TWO)
    client = Client(sim.host, sim.port)
    client.register(["alpha", "beta"])
    seen = []
    for step in client.steps():
        seen.append((step.step, step["alpha"]["pose"]))
        client.drive("alpha", 0.3, 0.0)
        if step.step == 100:
            break
    assert [s for s, _ in seen] == list(range(101))
    y0, y1 = seen[10][1][1], seen[100][1][1]
    assert math.isclose(y1 - y0, 90 * 0.3 * 0.02, abs_tol=0.01)


def test_messages_reach_crsims_own_robot_and_back(run, pens_scene, tmp_path):
    sim = run(pens_scene, steps=1500, programs=TWO)
    client = Client(sim.host, sim.port)
    client.register(["alpha", "beta"])
    heard = []
    for step in client.steps():
        client.drive("alpha", 0.2, 0.3)
        client.send_message("alpha", "gamma", {"claim": {"pen": "pen9", "distance": 1.0}})
        heard += [m for m in client.get_messages("alpha") if m["from"] == "gamma"]
    client.close()
    sim.close()
    metrics = json.loads((tmp_path / "m.json").read_text())
    gamma = next(r for r in metrics["comms"]["robots"] if r["name"] == "gamma")
    assert gamma["received"] >= 1400, gamma
    # gamma claims the pens it goes for: broadcasts alpha hears.
    assert heard and all("claim" in m["content"] for m in heard), heard[:3]
    assert metrics["steps"] == 1500


def test_reset_goes_back_to_step_zero(run, pens_scene):
    sim = run(pens_scene, programs=TWO)
    client = Client(sim.host, sim.port)
    client.register(["alpha", "beta"])
    start = client.get_step()
    for _ in range(30):
        client.drive("alpha", 0.3, 1.0)
        client.get_step()
    again = client.reset(seed=9)
    assert again.step == 0
    assert again["alpha"]["pose"] == start["alpha"]["pose"]


def test_the_ten_line_robot_talks_with_crsims_own_robots(run, tmp_path):
    import subprocess
    import sys

    from conftest import EXAMPLES, SCENES

    sim = run(SCENES / "programs.ron", steps=400)
    out = subprocess.run([sys.executable, str(EXAMPLES / "hello.py"), str(sim.port)], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    sim.close()
    heard = [line.split() for line in out.stdout.splitlines()]
    # beta and gamma claim the pens they go for, by broadcast: alpha hears them.
    assert {words[3] for words in heard} <= {"beta", "gamma"} and heard, out.stdout[:500]
    metrics = json.loads((tmp_path / "m.json").read_text())
    gamma = next(r for r in metrics["comms"]["robots"] if r["name"] == "gamma")
    alpha = next(r for r in metrics["comms"]["robots"] if r["name"] == "alpha")
    # One greeting every 50 steps, steps 0 to 350; each delivered to gamma.
    assert alpha["sent"] == 8, alpha
    assert gamma["received"] >= 8, gamma


def test_a_range_sensor_reads_the_same_in_json_and_binary_frames(run, pens_scene):
    # alpha gets an 8-beam lidar over the full circle; beta has none.
    sim = run(pens_scene, programs=TWO, args=["--set", "robots[alpha].range_sensor=(rays: 8, fov: 360.0, range: 2.5)"])
    json_client = Client(sim.host, sim.port)
    offered = {r["name"]: r for r in json_client.hello["robots"]}
    beams = offered["alpha"]["range_sensor"]
    assert beams["rays"] == 8 and math.isclose(beams["angle_min"], -math.pi, abs_tol=1e-6)
    assert math.isclose(beams["angle_increment"], math.pi / 4, abs_tol=1e-6) and beams["range_max"] == 2.5
    assert "range_sensor" not in offered["beta"]
    json_client.register(["alpha"])
    binary_client = Client(sim.host, sim.port, encoding="binary")
    binary_client.register(["beta"])
    json_steps, binary_steps = json_client.steps(), binary_client.steps()
    for _ in range(5):
        a, b = next(json_steps), next(binary_steps)
        assert a.step == b.step
        scan = a["alpha"]["range"]
        assert len(scan) == 8 and all(0.0 <= d <= 2.5 for d in scan)
        # The room's walls are within 2.5 m of alpha in some direction.
        assert min(scan) < 2.5
        assert "range" not in b["beta"] and b.ranges.size == 0
        json_client.act()
        binary_client.act()


def test_an_observation_asked_for_comes_the_same_in_json_and_binary_frames(run, pens_scene):
    """A robot registered with observation=True reads its observation vector (the layout hello's
    sensors give), in both encodings; one registered without does not."""
    sim = run(pens_scene, programs=TWO, args=["--set", "robots[alpha].range_sensor=(rays: 8, fov: 360.0, range: 2.5)"])
    json_client = Client(sim.host, sim.port)
    offered = {r["name"]: r for r in json_client.hello["robots"]}
    size = {name: sum(p["size"] for s in r["sensors"] for p in s["parts"]) for name, r in offered.items()}
    assert size == {"alpha": 28 + 8, "beta": 28}
    json_client.register(["alpha"], observation=True)
    binary_client = Client(sim.host, sim.port, encoding="binary")
    binary_client.register(["beta"], observation=True)
    plain_client = Client(sim.host, sim.port)
    json_steps, binary_steps = json_client.steps(), binary_client.steps()
    for _ in range(5):
        a, b = next(json_steps), next(binary_steps)
        assert a.step == b.step
        alpha, beta = a["alpha"]["observation"], b["beta"]["observation"]
        assert len(alpha) == size["alpha"] and len(beta) == size["beta"]
        assert all(-1.0 <= v <= 1.0 for v in alpha + beta)
        # The observation's pose part is the reading's pose over the arena's size.
        x, y, _ = a["alpha"]["pose"]
        width, height = json_client.hello["arena"]
        assert math.isclose(alpha[0], x / width, rel_tol=1e-6) and math.isclose(alpha[1], y / height, rel_tol=1e-6)
        json_client.act()
        binary_client.act()
    plain_client.close()


@pytest.mark.parametrize("encoding", ["json", "binary"])
def test_a_holonomic_robot_drives_sideways_and_reads_its_sideways_speed(run, encoding):
    # The carrier of scenes/kinds.ron has omni wheels (max_lateral 0.2 m/s); it faces up.
    sim = run(SCENES / "kinds.ron", programs=["carrier", "scout1"])
    client = Client(sim.host, sim.port, encoding=encoding)
    client.register(["carrier", "scout1"])
    seen = []
    for step in client.steps():
        seen.append(step["carrier"])
        client.drive("carrier", 0.0, 0.0, 0.15)
        client.drive("scout1", 0.0, 0.0)
        if step.step == 60:
            break
    x0, x1 = seen[10]["pose"][0], seen[60]["pose"][0]
    assert math.isclose(x1 - x0, -50 * 0.15 * 0.02, abs_tol=0.01), (x0, x1)
    assert math.isclose(seen[60]["lateral"], 0.15, abs_tol=1e-6)
    assert "lateral" not in step["scout1"], "a differential scout has no sideways speed"
