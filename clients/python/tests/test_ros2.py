"""crsim's ROS 2 bridge against an independent DDS: Eclipse Cyclone DDS through its Python
package (`crsim.ros2`), with no ROS installed on either side. The peer finds crsim's topics by
their ROS 2 names and types, decodes every message, drives one robot through `cmd_vel` and sees
only that one move, sees `/clock` advance by `dt` a step, and in lock-step gets the trajectory
hash of the same commands sent by a program over TCP."""

import itertools
import json
import math
import os
import random
import subprocess
import time

from dataclasses import dataclass, field

import pytest
from cyclonedds.domain import DomainParticipant
from cyclonedds.idl import IdlStruct
from cyclonedds.idl.types import array, float64, uint8
from cyclonedds.internal import InvalidSample
from cyclonedds.pub import DataWriter
from cyclonedds.sub import DataReader
from cyclonedds.topic import Topic

from conftest import SCENES
from crsim import Client, Crsim
from crsim import ros2
from crsim.launch import find_crsim


SCENE = SCENES / "ros2.ron"
DT = 0.02
NS_PER_STEP = 20_000_000


def _domains():
    """The DDS domains this test process's runs take, one after another: each pytest-xdist
    worker has its own share of 100..229, so that two tests running at once never meet on one
    domain (two did, and one saw the other's /clock); where in its share a process starts is
    random, for other test sessions on the machine."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    workers = max(int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")), 1)
    index = int(worker[2:]) if worker[2:].isdigit() else 0
    size = 130 // workers
    first = 100 + (index % workers) * size
    start = random.Random(os.getpid() ^ time.time_ns()).randrange(size)
    return itertools.cycle([first + (start + k) % size for k in range(size)])


_DOMAINS = _domains()


def free_domain():
    """A DDS domain no other test of this session uses at the same time (ROS's default is 0)."""
    return next(_DOMAINS)


class Run:
    """`crsim run scenes/ros2.ron` serving ROS 2 on its own domain, metrics to `out`."""

    def __init__(self, tmp_path, steps, *args, domain=None, name="ros"):
        self.domain = domain if domain is not None else free_domain()
        self.out = tmp_path / f"{name}.json"
        command = [find_crsim(), "run", str(SCENE), "--steps", str(steps), "--ros2-domain", str(self.domain),
                   "--out", str(self.out), *args]
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def metrics(self, timeout=60):
        out, err = self.process.communicate(timeout=timeout)
        assert self.process.returncode == 0, (out, err)
        return json.loads(self.out.read_text())

    def close(self):
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


@pytest.fixture
def ros_run(tmp_path):
    started = []

    def start(steps, *args, **kwargs):
        run = Run(tmp_path, steps, *args, **kwargs)
        started.append(run)
        return run

    yield start
    for run in started:
        run.close()


def yaw(q):
    return math.atan2(2 * (q.w * q.z + q.x * q.y), 1 - 2 * (q.y * q.y + q.z * q.z))


def take_all(reader):
    """Every sample waiting, without the notices of writers gone (InvalidSample)."""
    samples = []
    while batch := reader.take(N=1000):
        samples += [s for s in batch if not isinstance(s, InvalidSample)]
    return samples


def test_topics_by_ros_names_and_types_values_decoded_and_cmd_vel_drives_one_robot(ros_run):
    run = ros_run(350, "--realtime")
    peer = ros2.Peer(run.domain)
    topics = {f"rt/{r}/{t}" for r in ("alpha", "beta", "gamma") for t in ("odom", "battery", "bump", "gripper")}
    topics |= {"rt/alpha/scan", "rt/beta/scan", "rt/tf", "rt/clock", "rt/alpha/cmd_vel", "rt/beta/cmd_vel"}
    peer.discover(topics)
    # Every name and type as rmw writes them; gamma (crsim's own network) has no cmd_vel, and no
    # scan (no range sensor).
    assert peer.publications["rt/alpha/odom"] == "nav_msgs::msg::dds_::Odometry_"
    assert peer.publications["rt/alpha/scan"] == "sensor_msgs::msg::dds_::LaserScan_"
    assert peer.publications["rt/alpha/battery"] == "sensor_msgs::msg::dds_::BatteryState_"
    assert peer.publications["rt/alpha/bump"] == "std_msgs::msg::dds_::Bool_"
    assert peer.publications["rt/tf"] == "tf2_msgs::msg::dds_::TFMessage_"
    assert peer.publications["rt/clock"] == "rosgraph_msgs::msg::dds_::Clock_"
    assert peer.subscriptions["rt/alpha/cmd_vel"] == "geometry_msgs::msg::dds_::Twist_"
    assert "rt/gamma/cmd_vel" not in peer.subscriptions and "rt/gamma/scan" not in peer.publications

    odom = {r: peer.reader(f"/{r}/odom", "nav_msgs/msg/Odometry") for r in ("alpha", "beta")}
    clock = peer.reader("/clock", "rosgraph_msgs/msg/Clock")
    scan = peer.reader("/alpha/scan", "sensor_msgs/msg/LaserScan", ros2.best_effort())
    tf = peer.reader("/tf", "tf2_msgs/msg/TFMessage")
    cmd = peer.writer("/alpha/cmd_vel", "geometry_msgs/msg/Twist")
    time.sleep(1.0)
    before = {r: take_all(odom[r])[-1] for r in odom}
    a = before["alpha"]
    assert (a.header.frame_id, a.child_frame_id) == ("alpha/odom", "alpha/base_link")
    assert (a.pose.pose.position.x, a.pose.pose.position.y) == pytest.approx((1.0, 0.6), abs=1e-6)
    assert yaw(a.pose.pose.orientation) == pytest.approx(math.pi / 2, abs=1e-6)

    ticks = [c.clock.sec * 10**9 + c.clock.nanosec for c in take_all(clock)]
    assert len(ticks) > 10
    assert all(b - a == NS_PER_STEP for a, b in zip(ticks, ticks[1:])), ticks[:20]

    s = take_all(scan)[-1]
    assert (len(s.ranges), s.range_max, s.header.frame_id) == (16, pytest.approx(3.0), "alpha/range")
    assert s.angle_min == pytest.approx(-math.pi / 2) and s.angle_max == pytest.approx(math.pi / 2)
    assert all(0 < r < 3.0 or r == math.inf for r in s.ranges)
    frames = {t.child_frame_id for t in take_all(tf)[-1].transforms}
    assert frames == {"alpha/base_link", "beta/base_link", "gamma/base_link"}

    # alpha faces +y: 0.2 m/s forward for a second moves it about 0.2 m up; beta stays.
    for _ in range(10):
        cmd.write(ros2.Twist(linear=ros2.Vector3(x=0.2)))
        time.sleep(0.1)
    time.sleep(0.3)
    after = {r: take_all(odom[r])[-1] for r in odom}
    moved = after["alpha"].pose.pose.position.y - before["alpha"].pose.pose.position.y
    assert 0.15 < moved < 0.4, moved
    assert after["alpha"].pose.pose.position.x == pytest.approx(1.0, abs=0.01)
    assert after["alpha"].twist.twist.linear.x == pytest.approx(0.2, abs=1e-6)
    assert after["beta"].pose.pose.position == before["beta"].pose.pose.position
    metrics = run.metrics()
    assert metrics["ros2"]["commands"] >= 10 and metrics["ros2"]["malformed"] == 0, metrics["ros2"]
    # Stopping, crsim announces its participant's departure.
    assert peer.wait_for_departure()


def test_a_domain_with_other_traffic_two_simulators_and_a_chatty_node(ros_run):
    """Two crsim runs on one domain, one under the prefix `other`, and a node flooding a topic of
    its own: commands to `/alpha/cmd_vel` move only the first run's alpha, the second's robots
    hear nothing, neither counts a malformed sample, and both finish every step."""
    first = ros_run(250, "--realtime")
    second = ros_run(250, "--realtime", "--set", "ros2.prefix=other", domain=first.domain, name="other")
    peer = ros2.Peer(first.domain)
    peer.discover({"rt/alpha/cmd_vel", "rt/other/alpha/cmd_vel", "rt/alpha/odom", "rt/other/alpha/odom"})
    odom = {ns: peer.reader(f"{ns}/alpha/odom", "nav_msgs/msg/Odometry") for ns in ("", "/other")}
    cmd = peer.writer("/alpha/cmd_vel", "geometry_msgs/msg/Twist")
    chatter = peer.writer("/chatter", "std_msgs/msg/String")
    time.sleep(0.5)
    before = {ns: take_all(r)[-1].pose.pose.position.y for ns, r in odom.items()}
    for k in range(10):
        cmd.write(ros2.Twist(linear=ros2.Vector3(x=0.2)))
        for j in range(200):
            chatter.write(ros2.String(data=f"chatter {k} {j} " + "x" * 500))
        time.sleep(0.1)
    time.sleep(0.3)
    after = {ns: take_all(r)[-1].pose.pose.position.y for ns, r in odom.items()}
    assert after[""] - before[""] > 0.15 and after["/other"] == before["/other"], (before, after)
    mine, other = first.metrics(), second.metrics()
    assert mine["steps"] == other["steps"] == 250
    assert mine["ros2"]["commands"] >= 10 and other["ros2"]["commands"] == 0
    assert other["ros2"]["namespaces"] == ["/other/alpha", "/other/beta", "/other/gamma"]
    assert mine["ros2"]["malformed"] == other["ros2"]["malformed"] == 0


@dataclass
class TruncatedTwist(IdlStruct, typename="geometry_msgs::msg::dds_::Twist_"):
    """A `Twist` cut short: five of its six doubles and 7 bytes of the sixth, 47 bytes. Sent as a
    writer that follows DDS-XTypes 7.6.3.1.2 sends it (Cyclone DDS's C core does): padded to 48
    on the wire, with the padding's length in the low bits of the options (Python's serializer
    leaves them 0)."""

    x: float64 = 0.0
    y: float64 = 0.0
    z: float64 = 0.0
    ax: float64 = 0.0
    ay: float64 = 0.0
    rest: array[uint8, 7] = field(default_factory=lambda: [0] * 7)

    def serialize(self, *args, **kwargs):
        data = super().serialize(*args, **kwargs)
        padding = (4 - len(data) % 4) % 4
        return data[:3] + bytes([padding]) + data[4:]


#: The radius of scenes/ros2.ron's robots (the default body).
ROBOT_RADIUS = 0.1


@dataclass
class ShortTwist(IdlStruct, typename="geometry_msgs::msg::dds_::Twist_"):
    """A sample of Twist's type name that is not a Twist: 8 bytes where a Twist has 48."""

    x: float64 = 0.0


def test_bad_samples_and_a_flood_are_counted_and_the_run_goes_on(ros_run):
    steps = 150
    run = ros_run(steps, "--realtime")
    peer = ros2.Peer(run.domain)
    peer.discover({"rt/alpha/cmd_vel", "rt/beta/cmd_vel"})
    cmd = peer.writer("/alpha/cmd_vel", "geometry_msgs/msg/Twist")
    # Another participant writes the wrong layout under the right type name.
    other = DomainParticipant(run.domain)
    short = DataWriter(other, Topic(other, "rt/beta/cmd_vel", ShortTwist), qos=ros2.reliable(10))
    time.sleep(0.5)
    nan = ros2.Twist(linear=ros2.Vector3(x=float("nan")))
    for _ in range(5):
        cmd.write(nan)
        short.write(ShortTwist(x=1.0))
        time.sleep(0.02)
    # A flood: 5,000 commands as fast as Python writes them.
    flood_started = time.monotonic()
    for i in range(5000):
        cmd.write(ros2.Twist(linear=ros2.Vector3(x=0.1), angular=ros2.Vector3(z=0.001 * i)))
    flood_s = time.monotonic() - flood_started
    started = time.monotonic()
    metrics = run.metrics()
    r = metrics["ros2"]
    assert metrics["steps"] == steps and metrics["interrupted"] is False
    assert r["malformed"] >= 10, r
    assert r["commands"] >= 1 and r["publish_errors"] == 0, r
    # In real time, 150 steps take 3 s: the flood did not hold the steps back.
    assert metrics["wall_time_s"] < 3.0 + flood_s + 2.0, (metrics["wall_time_s"], flood_s)
    assert time.monotonic() - started < 10


def alpha_command(k):
    return 0.25, 1.2 * math.sin(k / 15)


def beta_command(k):
    return 0.15 * (k % 40 < 30), -0.4


STEPS = 200


def test_lockstep_gives_the_hash_of_the_same_commands_over_the_program_protocol(ros_run, tmp_path):
    run = ros_run(STEPS, "--set", "ros2.lockstep=true")
    peer = ros2.Peer(run.domain)
    peer.discover({"rt/alpha/cmd_vel", "rt/beta/cmd_vel", "rt/clock", "rt/alpha/odom"})
    clock = peer.reader("/clock", "rosgraph_msgs/msg/Clock")
    odom = peer.reader("/alpha/odom", "nav_msgs/msg/Odometry")
    cmd = {r: peer.writer(f"/{r}/cmd_vel", "geometry_msgs/msg/Twist") for r in ("alpha", "beta")}

    def send(k):
        for robot, command in (("alpha", alpha_command), ("beta", beta_command)):
            v, w = command(k)
            cmd[robot].write(ros2.Twist(linear=ros2.Vector3(x=v), angular=ros2.Vector3(z=w)))

    # The command of step k goes out once /clock says step k - 1 ended.
    time.sleep(0.5)  # the writers matched crsim's readers
    send(0)
    sent, deadline, odoms = 1, time.monotonic() + 60, []
    while sent < STEPS and time.monotonic() < deadline:
        for c in clock.take(N=100):
            step = round((c.clock.sec * 10**9 + c.clock.nanosec) / NS_PER_STEP)
            assert step == sent, (step, sent)
            send(step)
            sent += 1
        odoms += odom.take(N=100)
        time.sleep(0.0005)
    metrics = run.metrics()
    odoms += take_all(odom)
    assert metrics["steps"] == STEPS and metrics["ros2"]["late"] == 0, metrics["ros2"]
    assert metrics["ros2"]["commands"] == 2 * STEPS

    # The decoded odometry of the last step is crsim's own report of it, to the last bit of f32.
    last = next(o for o in reversed(odoms) if o.header.stamp.sec * 10**9 + o.header.stamp.nanosec == STEPS * NS_PER_STEP)
    alpha = next(r for r in metrics["robots"] if r["name"] == "alpha")
    f32 = lambda x: struct_f32(x)  # noqa: E731
    assert (f32(last.pose.pose.position.x), f32(last.pose.pose.position.y)) == (f32(alpha["x"]), f32(alpha["y"]))

    # The same commands through the program protocol over TCP, the bridge off.
    tcp_out = tmp_path / "tcp.json"
    with Crsim(SCENE, steps=STEPS, out=tcp_out, args=["--set", "ros2.enabled=false"]) as sim:
        client = Client(sim.host, sim.port)
        client.register(["alpha", "beta"])
        for step in client.steps():
            for robot, command in (("alpha", alpha_command), ("beta", beta_command)):
                client.drive(robot, *command(step.step))
    tcp = json.loads(tcp_out.read_text())
    assert tcp["steps"] == STEPS
    assert metrics["hash"] == tcp["hash"]


def struct_f32(x):
    import struct

    return struct.unpack("f", struct.pack("f", x))[0]


def test_the_example_drives_two_namespaced_robots(ros_run):
    import sys

    from conftest import EXAMPLES

    run = ros_run(400, "--realtime")
    out = subprocess.run([sys.executable, str(EXAMPLES / "ros2_drive.py"), "--domain", str(run.domain), "--seconds",
                          "4"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    ys = {r: [float(line.split()[6]) for line in lines if line.split()[2] == r] for r in ("alpha", "beta")}
    assert len(ys["alpha"]) >= 4 and len(ys["beta"]) >= 4, out.stdout
    # beta drives straight up from y = 0.6 at 0.1 m/s.
    assert ys["beta"][-1] - ys["beta"][0] > 0.15, ys["beta"]
    run.metrics()


def test_radio_messages_cross_a_lossy_link_counted_on_both_sides(ros_run):
    run = ros_run(400, "--realtime", "--set", "comms.probability=0.5")
    peer = ros2.Peer(run.domain)
    peer.discover({"rt/alpha/radio/send", "rt/beta/radio/received"})
    send = peer.writer("/alpha/radio/send", "std_msgs/msg/String", ros2.reliable(100))
    heard = peer.reader("/beta/radio/received", "std_msgs/msg/String", ros2.reliable(1000))
    time.sleep(0.5)
    for k in range(100):
        send.write(ros2.String(data=json.dumps({"to": "beta", "content": {"k": k}})))
        time.sleep(0.03)
    send.write(ros2.String(data="not a message"))
    time.sleep(0.5)
    received = [json.loads(s.data) for s in take_all(heard)]
    metrics = run.metrics()
    received += [json.loads(s.data) for s in take_all(heard)]
    from_alpha = [m for m in received if m["from"] == "alpha"]
    alpha = next(r for r in metrics["comms"]["robots"] if r["name"] == "alpha")
    assert metrics["ros2"]["radio_sent"] == 100 and alpha["sent"] == 100, (metrics["ros2"], alpha)
    assert metrics["ros2"]["radio_malformed"] == 1
    # Half lost on the way, as the link's probability says; what crsim counts as dropped is
    # exactly what the peer never heard, and what it heard came in order, to beta alone.
    assert 20 < len(from_alpha) < 80, len(from_alpha)
    assert len(from_alpha) == 100 - alpha["dropped"], alpha
    ks = [m["content"]["k"] for m in from_alpha]
    assert ks == sorted(ks) and all(not m["broadcast"] for m in from_alpha)


def test_in_lockstep_a_peer_that_vanishes_leaves_its_robots_late_and_the_run_goes_on(ros_run):
    steps = 60
    run = ros_run(steps, "--set", "ros2.lockstep=true", "--set", "programs.step_timeout=0.2", "--set",
                  "programs.late=Stop")
    peer = ros2.Peer(run.domain)
    peer.discover({"rt/alpha/cmd_vel", "rt/beta/cmd_vel", "rt/clock"})
    clock = peer.reader("/clock", "rosgraph_msgs/msg/Clock")
    cmd = {r: peer.writer(f"/{r}/cmd_vel", "geometry_msgs/msg/Twist") for r in ("alpha", "beta")}
    time.sleep(0.5)

    def send():
        for w in cmd.values():
            w.write(ros2.Twist(linear=ros2.Vector3(x=0.2)))

    send()
    sent, deadline = 1, time.monotonic() + 30
    while sent < 20 and time.monotonic() < deadline:
        for _ in clock.take(N=100):
            send()
            sent += 1
        time.sleep(0.0005)
    # The peer is gone: its participant and writers with it, mid-run.
    del cmd, clock, peer
    metrics = run.metrics(timeout=60)
    r = metrics["ros2"]
    assert metrics["steps"] == steps and r["commands"] == 2 * 20, r
    # Every later step waited 0.2 s for the robots, counted both late, and stopped them.
    assert r["late"] == 2 * (steps - 20), r


def test_the_ros2_bag_of_a_run_opens_in_rosbags_with_every_topic_counted_and_valued(ros_run, tmp_path):
    """`--record-ros2`: a ROS 2 bag (MCAP, profile ros2) that rosbags — an independent reader of
    ROS 2 bags — opens: every topic under its ROS 2 name and type, schemas exactly as ROS 2's
    own definitions, QoS as the bridge offers it, counts at the scene's rates, and the last
    step's values those of crsim's report. crsim's own recording beside it still verifies."""
    from pathlib import Path

    from rosbags.interfaces import QosDurability, QosReliability
    from rosbags.rosbag2 import Reader
    from rosbags.typesys import Stores, get_typestore

    steps = 200
    bag, recording = tmp_path / "run.bag.mcap", tmp_path / "run.mcap"
    metrics = ros_run(steps, "--record-ros2", str(bag), "--record", str(recording)).metrics()
    typestore = get_typestore(Stores.ROS2_HUMBLE)
    with Reader(Path(bag)) as reader:
        connections = {c.topic: c for c in reader.connections}
        messages = {}
        for c, log_time, raw in reader.messages():
            messages.setdefault(c.topic, []).append((log_time, typestore.deserialize_cdr(raw, c.msgtype)))

    kinds = {"odom": "nav_msgs/msg/Odometry", "battery": "sensor_msgs/msg/BatteryState",
             "bump": "std_msgs/msg/Bool", "gripper": "std_msgs/msg/Bool"}
    expected = {f"/{r}/{t}": kind for r in ("alpha", "beta", "gamma") for t, kind in kinds.items()}
    expected |= {"/alpha/scan": "sensor_msgs/msg/LaserScan", "/beta/scan": "sensor_msgs/msg/LaserScan",
                 "/tf": "tf2_msgs/msg/TFMessage", "/clock": "rosgraph_msgs/msg/Clock"}
    assert expected.items() <= {t: c.msgtype for t, c in connections.items()}.items(), sorted(connections)
    for topic, c in connections.items():
        assert c.msgdef.data == typestore.generate_msgdef(c.msgtype, ros_version=2)[0], topic
    scan_qos, bump_qos = connections["/alpha/scan"].ext.offered_qos_profiles[0], connections["/alpha/bump"].ext.offered_qos_profiles[0]
    assert scan_qos.reliability == QosReliability.BEST_EFFORT
    assert bump_qos.durability == QosDurability.TRANSIENT_LOCAL

    # At dt 0.02: odom, /tf and /clock every step (50 Hz), scan at 10 Hz, battery at 1 Hz;
    # bump and gripper at the first step and then only when they change.
    count = {t: len(m) for t, m in messages.items()}
    assert count["/clock"] == count["/tf"] == count["/gamma/odom"] == steps and count["/tf_static"] == 1
    assert count["/alpha/scan"] == steps // 5 and count["/gamma/battery"] == steps // 50
    for topic in (f"/{r}/{t}" for r in ("alpha", "beta", "gamma") for t in ("bump", "gripper")):
        values = [m.data for _, m in messages[topic]]
        assert messages[topic][0][0] == NS_PER_STEP and all(a != b for a, b in zip(values, values[1:])), topic
    assert metrics["ros2_recording"]["messages"] == sum(count.values())

    # Each message is logged at the simulated time it is stamped with; the clock ends at 4 s.
    for topic, ms in messages.items():
        for log_time, m in ms:
            stamp = m.clock if topic == "/clock" else getattr(m, "header", None) and m.header.stamp
            if stamp:
                assert log_time == stamp.sec * 10**9 + stamp.nanosec, topic
    assert messages["/clock"][-1][0] == steps * NS_PER_STEP

    # The last odometry is crsim's report of gamma (the behaviour network drove it), to f32.
    gamma = next(r for r in metrics["robots"] if r["name"] == "gamma")
    last = messages["/gamma/odom"][-1][1]
    assert last.header.frame_id == "gamma/odom" and last.child_frame_id == "gamma/base_link"
    p = last.pose.pose.position
    assert (struct_f32(p.x), struct_f32(p.y)) == (struct_f32(gamma["x"]), struct_f32(gamma["y"]))
    assert math.degrees(yaw(last.pose.pose.orientation)) == pytest.approx(gamma["heading_deg"], abs=1e-3)
    assert messages["/gamma/battery"][-1][1].percentage == pytest.approx(gamma["battery_fraction"], abs=1e-3)
    scan = messages["/alpha/scan"][-1][1]
    assert len(scan.ranges) == 16 and scan.header.frame_id == "alpha/range"
    assert (scan.scan_time, scan.range_min) == (pytest.approx(0.1), pytest.approx(ROBOT_RADIUS))
    # The fixed transforms once, at the first step, latched; each channel with its type's hash as
    # rosbag2 records it from Jazzy on (rosbags computes the same).
    (fixed,) = messages["/tf_static"]
    assert {(t.header.frame_id, t.child_frame_id) for t in fixed[1].transforms} >= {("map", "alpha/odom")}
    assert connections["/tf_static"].ext.offered_qos_profiles[0].durability == QosDurability.TRANSIENT_LOCAL
    with open(bag, "rb") as f:
        from mcap.reader import make_reader

        summary = make_reader(f).get_summary()
    hashes = get_typestore(Stores.ROS2_JAZZY)
    for c in summary.channels.values():
        assert c.metadata["topic_type_hash"] == hashes.hash_rihs01(summary.schemas[c.schema_id].name), c.topic

    verify = subprocess.run([find_crsim(), "verify", str(recording)], capture_output=True, text=True, timeout=120)
    assert verify.returncode == 0 and "identical" in verify.stdout, verify


def latched(depth=1):
    """A late joiner's QoS for a transient-local topic (`/tf_static`), as tf2 subscribes."""
    from cyclonedds.core import Policy, Qos
    from cyclonedds.util import duration

    return Qos(Policy.Reliability.Reliable(max_blocking_time=duration(milliseconds=100)),
               Policy.Durability.TransientLocal, Policy.History.KeepLast(depth))


def transforms(sample):
    return {(t.header.frame_id, t.child_frame_id): t.transform for t in sample.transforms}


def test_one_tf_tree_with_its_fixed_frame_on_tf_static_and_the_namespaced_layout(ros_run):
    """Every robot's odom under the scene's fixed frame (`map`) and each range sensor's mount on
    `/tf_static`, for a late joiner too (transient local); and in the `Namespaced` layout each
    robot's own `/<ns>/tf` and `/<ns>/tf_static` with unprefixed frames, no `/tf` at all."""
    run = ros_run(400, "--realtime")
    peer = ros2.Peer(run.domain)
    peer.discover({"rt/tf_static", "rt/tf"})
    time.sleep(0.5)  # join late: the fixed transforms went out at the first step
    static = peer.reader("/tf_static", "tf2_msgs/msg/TFMessage", latched())
    tf = peer.reader("/tf", "tf2_msgs/msg/TFMessage")
    time.sleep(1.0)
    fixed = take_all(static)
    assert len(fixed) == 1, "one message holds every fixed transform (tf2 keeps the last)"
    t = transforms(fixed[0])
    assert set(t) == {("map", "alpha/odom"), ("map", "beta/odom"), ("map", "gamma/odom"),
                      ("alpha/base_link", "alpha/range"), ("beta/base_link", "beta/range")}
    assert all(x.translation.x == 0 and x.rotation.w == 1 for x in t.values()), "the identity"
    moving = transforms(take_all(tf)[-1])
    assert set(moving) == {("alpha/odom", "alpha/base_link"), ("beta/odom", "beta/base_link"),
                           ("gamma/odom", "gamma/base_link")}
    run.metrics()

    run = ros_run(400, "--realtime", "--set", "ros2.tf=Namespaced", "--set", 'ros2.frame="world"')
    peer = ros2.Peer(run.domain)
    peer.discover({"rt/alpha/tf", "rt/alpha/tf_static", "rt/gamma/tf"})
    static = peer.reader("/alpha/tf_static", "tf2_msgs/msg/TFMessage", latched())
    tf = peer.reader("/alpha/tf", "tf2_msgs/msg/TFMessage")
    odom = peer.reader("/alpha/odom", "nav_msgs/msg/Odometry")
    time.sleep(1.0)
    assert set(transforms(take_all(static)[-1])) == {("world", "odom"), ("base_link", "range")}
    assert set(transforms(take_all(tf)[-1])) == {("odom", "base_link")}
    o = take_all(odom)[-1]
    assert (o.header.frame_id, o.child_frame_id) == ("odom", "base_link")
    assert "rt/tf" not in peer.publications and "rt/tf_static" not in peer.publications
    run.metrics()


def test_a_robot_whose_commands_stop_coming_stops(ros_run):
    """A peer that stops sending (it died) left its robot driving forever: after
    `ros2.cmd_vel_timeout` (0.5 s of simulated time) the robot stops, counted in the metrics."""
    run = ros_run(250, "--realtime")
    peer = ros2.Peer(run.domain)
    peer.discover({"rt/alpha/cmd_vel", "rt/alpha/odom"})
    cmd = peer.writer("/alpha/cmd_vel", "geometry_msgs/msg/Twist")
    odom = peer.reader("/alpha/odom", "nav_msgs/msg/Odometry")
    time.sleep(0.5)
    for _ in range(10):
        cmd.write(ros2.Twist(linear=ros2.Vector3(x=0.2)))
        time.sleep(0.05)
    driving = take_all(odom)[-1]
    assert driving.twist.twist.linear.x == pytest.approx(0.2, abs=1e-6)
    time.sleep(1.5)  # silent: the peer has gone quiet
    stopped = take_all(odom)[-1]
    assert stopped.twist.twist.linear.x == 0.0
    metrics = run.metrics()
    assert metrics["ros2"]["timeouts"] == 1, metrics["ros2"]


def test_a_truncated_twist_is_malformed_and_drives_nothing(ros_run):
    """A `Twist` cut to 47 of its 48 bytes (the writer pads it to 48 and says so in the sample's
    options) was taken as a command; it is counted as malformed now."""
    run = ros_run(150, "--realtime")
    peer = ros2.Peer(run.domain)
    peer.discover({"rt/beta/cmd_vel", "rt/beta/odom"})
    other = DomainParticipant(run.domain)
    short = DataWriter(other, Topic(other, "rt/beta/cmd_vel", TruncatedTwist), qos=ros2.reliable(10))
    odom = peer.reader("/beta/odom", "nav_msgs/msg/Odometry")
    time.sleep(0.5)
    for _ in range(10):
        short.write(TruncatedTwist(x=0.2))
        time.sleep(0.05)
    time.sleep(0.3)
    assert take_all(odom)[-1].twist.twist.linear.x == 0.0
    r = run.metrics()["ros2"]
    assert (r["malformed"], r["commands"]) == (10, 0), r


def test_scans_rviz2_sees_by_default_with_their_period_and_nearest_reading(ros_run):
    """rviz2's LaserScan display subscribes reliable, which a best-effort `scan` does not match:
    `ros2.scan_reliable` offers it reliable. `scan_time` is the time between two scans on the topic
    (10 Hz: 0.1 s, not the sensor's 0.02), `range_min` the robot's radius."""
    run = ros_run(300, "--realtime", "--set", "ros2.scan_reliable=true")
    peer = ros2.Peer(run.domain)
    peer.discover({"rt/alpha/scan"})
    scan = peer.reader("/alpha/scan", "sensor_msgs/msg/LaserScan", ros2.reliable(10))
    time.sleep(1.5)
    scans = take_all(scan)
    assert len(scans) >= 5, "a reliable subscriber gets them"
    s = scans[-1]
    assert s.scan_time == pytest.approx(0.1) and s.range_min == pytest.approx(ROBOT_RADIUS)
    stamps = [x.header.stamp.sec + x.header.stamp.nanosec * 1e-9 for x in scans]
    assert all(b - a == pytest.approx(0.1) for a, b in zip(stamps, stamps[1:])), stamps
    run.metrics()


def discovery_samples(domain, kind, timeout=10.0):
    """crsim's `ros_discovery_info` samples on `domain`, decoded with `kind` (Humble's or Jazzy's
    layout), from a participant of their own."""
    dp = DomainParticipant(domain)
    reader = DataReader(dp, Topic(dp, "ros_discovery_info", kind), qos=latched())
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        found = [s for s in reader.take(N=100) if not isinstance(s, InvalidSample)]
        found = [s for s in found if any(n.node_name == "crsim" for n in s.node_entities_info_seq)]
        if found:
            return found
        time.sleep(0.1)
    return []


@pytest.mark.parametrize("distro,kind,gid_bytes", [("Humble", ros2.ParticipantEntitiesInfoHumble, 24),
                                                    ("Jazzy", ros2.ParticipantEntitiesInfoJazzy, 16)])
def test_ros_discovery_info_in_the_layout_of_the_peers_release(ros_run, distro, kind, gid_bytes):
    """`ros2 node list` reads the node from `ros_discovery_info`, whose GIDs are 24 bytes in Humble
    and 16 from Iron on: a Humble peer decoded every sample of the Iron layout as an error. The
    node lists every endpoint crsim made, by the GUIDs discovery announced for them."""
    run = ros_run(300, "--realtime", "--set", f"ros2.distro={distro}")
    peer = ros2.Peer(run.domain)
    peer.discover({"rt/alpha/odom", "rt/alpha/cmd_vel", "rt/clock"})
    samples = discovery_samples(run.domain, kind)
    assert samples, f"no ros_discovery_info of crsim's node decodes in {distro}'s layout"
    (node,) = [n for n in samples[-1].node_entities_info_seq if n.node_name == "crsim"]
    assert node.node_namespace == "/"
    writers = {bytes(g.data) for g in node.writer_gid_seq}
    readers = {bytes(g.data) for g in node.reader_gid_seq}
    assert all(len(g) == gid_bytes and g[16:] == bytes(gid_bytes - 16) for g in writers | readers)
    for topic in ("rt/alpha/odom", "rt/clock"):
        assert peer.endpoint_keys[topic] + bytes(gid_bytes - 16) in writers, topic
    assert peer.endpoint_keys["rt/alpha/cmd_vel"] + bytes(gid_bytes - 16) in readers
    # 3 robots × 6 writers, 2 scans, /clock, /tf, /tf_static, and ros_discovery_info's own.
    assert len(writers) == 3 * 5 + 2 + 3 + 1 and len(readers) == 2 * 2
    run.metrics()


def test_jazzy_endpoints_announce_their_type_hash_and_the_participant_its_enclave(ros_run):
    """As rmw does from Jazzy on: `typehash=RIHS01_…;` in each endpoint's USER_DATA (the hash
    rosbags computes for the type) and `enclave=/;` in the participant's; Humble announces none."""
    from rosbags.typesys import Stores, get_typestore

    hashes = get_typestore(Stores.ROS2_JAZZY)
    run = ros_run(200, "--realtime")
    peer = ros2.Peer(run.domain)
    wanted = {"rt/alpha/odom": "nav_msgs/msg/Odometry", "rt/alpha/scan": "sensor_msgs/msg/LaserScan",
              "rt/alpha/cmd_vel": "geometry_msgs/msg/Twist", "rt/tf": "tf2_msgs/msg/TFMessage",
              "rt/clock": "rosgraph_msgs/msg/Clock", "rt/alpha/radio/send": "std_msgs/msg/String"}
    peer.discover(set(wanted))
    for topic, kind in wanted.items():
        assert peer.user_data[topic] == f"typehash={hashes.hash_rihs01(kind)};".encode(), topic
    assert b"enclave=/;" in peer.participant_user_data.values()
    run.metrics()

    run = ros_run(200, "--realtime", "--set", "ros2.distro=Humble")
    peer = ros2.Peer(run.domain)
    peer.discover(set(wanted))
    assert all(peer.user_data[t] == b"" for t in wanted)
    run.metrics()
