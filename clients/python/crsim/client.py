"""The client side of crsim's robot-program protocol, mirroring seed 000's interface.

A program connects to the scene's program server, registers its robots (``register``, seed 000's
registerRobot, with a communication type), and then, step by step in lock-step with the
simulation, reads its robots' readings (``get_step``), decides, and answers with their actions:
a drive command or a skill, the gripper, the lamp, and messages (``send_message``, seed 000's
sendMessage). The messages delivered to a robot come with its readings (``get_messages``, seed
000's getMessage).

Frames are one JSON object per line; the client uses only the standard library.
"""

import json
import socket
import warnings

import numpy as np

PROTOCOL = "crsim-programs"
VERSION = 1

# The records of binary step frames and drive blocks (little-endian, as crsim writes them).
ROBOT = np.dtype([("name", "<i4"), ("x", "<f4"), ("y", "<f4"), ("heading", "<f4"), ("linear", "<f4"),
                  ("angular", "<f4"), ("battery", "<f4"), ("charging", "<u4"), ("holding", "<i4"),
                  ("in_reach", "<i4"), ("distance", "<f4"), ("collisions", "<u4"), ("boxed", "<u4"),
                  ("visited", "<u4"), ("contacts", "<u4"), ("beams", "<u4")])
CONTACT = np.dtype([("robot", "<u4"), ("with", "<i4"), ("bearing", "<f4")])
DETECTION = np.dtype([("robot", "<u4"), ("kind", "<u4"), ("name", "<i4"), ("distance", "<f4"), ("bearing", "<f4")])
SONAR = np.dtype([("robot", "<u4"), ("sonar", "<i4"), ("distance", "<f4")])
RANGE = np.dtype("<f4")
DRIVE = np.dtype([("robot", "<u4"), ("linear", "<f4"), ("angular", "<f4"), ("grip", "<i4")])
KIND_NAMES = ("pen", "box", "station", "robot")

# One encoder for every frame: json.dumps with options builds a new one each call.
_encode = json.JSONEncoder(separators=(",", ":")).encode
_decode = json.JSONDecoder().decode


class ProtocolError(Exception):
    """crsim refused something, or answered what the client did not expect."""


class Step:
    """One step's readings: ``step``, ``time`` (simulated seconds) and ``readings`` by robot."""

    __slots__ = ("step", "time", "readings")

    def __init__(self, frame):
        self.step = frame["step"]
        self.time = frame["time"]
        self.readings = {r["name"]: r for r in frame["robots"]}

    def __getitem__(self, robot):
        return self.readings[robot]

    def __iter__(self):
        return iter(self.readings)

    def __repr__(self):
        return f"Step({self.step}, t={self.time:.3f}, robots={list(self.readings)})"


class BinaryStep(Step):
    """A step frame in the binary encoding: ``robots``, ``contacts``, ``detections`` and
    ``sonar`` are numpy record arrays (see ROBOT, CONTACT, DETECTION, SONAR), ``ranges`` the
    range sensors' beams (float32, each robot's ``beams`` of them in robot order), ``names`` what
    their name fields index, ``messages`` the delivered messages (``robot`` indexes ``robots``).
    ``step[name]`` gives one robot's readings in the JSON encoding's shape."""

    __slots__ = ("robots", "contacts", "detections", "sonar", "ranges", "names", "messages", "_rows", "_range_at",
                 "_extra", "_observations", "_lateral")

    def __init__(self, head, block):
        self.step = head["step"]
        self.time = head["time"]
        at = 0
        parts = []
        for dtype, count in ((ROBOT, head["robots"]), (CONTACT, head["contacts"]),
                             (DETECTION, head["detections"]), (SONAR, head["sonar"]),
                             (RANGE, head.get("ranges", 0))):
            parts.append(np.frombuffer(block, dtype=dtype, count=count, offset=at))
            at += dtype.itemsize * count
        self.robots, self.contacts, self.detections, self.sonar, self.ranges = parts
        self._range_at = None
        tail = json.loads(block[at:]) if head["tail"] else {"names": [], "messages": []}
        self.names = tail["names"]
        self.messages = tail["messages"]
        self._extra = {e["robot"]: e["sensors"] for e in tail.get("sensors", ())}
        self._observations = {o["robot"]: o["values"] for o in tail.get("observations", ())}
        self._lateral = {e["robot"]: e["speed"] for e in tail.get("lateral", ())}
        self._rows = None

    @property
    def readings(self):
        return {self.names[n]: self[self.names[n]] for n in self.robots["name"]}

    def __iter__(self):
        return (self.names[n] for n in self.robots["name"])

    def __getitem__(self, robot):
        if self._rows is None:
            self._rows = {self.names[n]: i for i, n in enumerate(self.robots["name"])}
        i = self._rows[robot]
        r = self.robots[i]
        name = lambda k: None if k < 0 else self.names[k]  # noqa: E731
        return {
            "name": robot,
            "pose": [float(r["x"]), float(r["y"]), float(r["heading"])],
            "speed": [float(r["linear"]), float(r["angular"])],
            **({"lateral": self._lateral[i]} if i in self._lateral else {}),
            "battery": float(r["battery"]),
            "charging": bool(r["charging"]),
            "bump": [{"with": self.names[c["with"]], "bearing": float(c["bearing"])}
                     for c in self.contacts[self.contacts["robot"] == i]],
            "camera": [{"kind": KIND_NAMES[d["kind"]], "name": self.names[d["name"]],
                        "distance": float(d["distance"]), "bearing": float(d["bearing"])}
                       for d in self.detections[self.detections["robot"] == i]],
            "grip": {"holding": name(r["holding"]), "in_reach": name(r["in_reach"])},
            "odometry": [float(r["distance"]), float(r["collisions"])],
            "sonar": [{"sonar": self.names[e["sonar"]], "distance": float(e["distance"])}
                      for e in self.sonar[self.sonar["robot"] == i]],
            "messages": [{k: m[k] for k in ("from", "sent", "broadcast", "content")}
                         for m in self.messages if m["robot"] == i],
            "boxed": int(r["boxed"]),
            "visited": int(r["visited"]),
            **({"range": self.range_of(i).tolist()} if r["beams"] else {}),
            **({"sensors": self._extra[i]} if i in self._extra else {}),
            **({"observation": self._observations[i]} if i in self._observations else {}),
        }

    def range_of(self, i):
        """The range beams of the robot at row ``i`` (empty without a range sensor)."""
        if self._range_at is None:
            self._range_at = np.concatenate(([0], np.cumsum(self.robots["beams"], dtype=np.int64)))
        return self.ranges[self._range_at[i]:self._range_at[i + 1]]

    def __repr__(self):
        return f"BinaryStep({self.step}, t={self.time:.3f}, robots={len(self.robots)})"


class Client:
    """A connection to crsim's program server. With ``encoding="binary"`` step frames come as
    numpy record arrays (``BinaryStep``), for programs that drive many robots."""

    def __init__(self, host="127.0.0.1", port=9400, timeout=60.0, encoding="json"):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._rfile = self.sock.makefile("rb", buffering=1 << 20)
        self.hello = self._recv()
        if self.hello.get("type") != "hello":
            raise ProtocolError(f"expected hello, got {self.hello}")
        if self.hello.get("protocol") != PROTOCOL or self.hello.get("version") != VERSION:
            raise ProtocolError(f"crsim speaks {self.hello.get('protocol')} {self.hello.get('version')}, "
                                f"this client {PROTOCOL} {VERSION}")
        self.encoding = encoding
        self.robots = []
        self.errors = []
        self.current = None
        self.ended = None
        self._actions = {}
        self._drives = None
        self._acted = True

    # -- frames -------------------------------------------------------------------------------

    def _send(self, frame):
        self.sock.sendall((_encode(frame) + "\n").encode())

    def _recv(self):
        line = self._rfile.readline()
        if not line:
            return None
        return _decode(line.decode())

    def _next(self, wanted, skip=()):
        """The next frame of a type in ``wanted``, passing over those in ``skip``; error frames
        are kept in ``errors``."""
        while True:
            frame = self._recv()
            if frame is None:
                self.ended = self.ended or {"type": "end", "reason": "the connection closed"}
                return None
            kind = frame.get("type")
            if kind == "step" and frame.get("encoding") == "binary":
                size = (ROBOT.itemsize * frame["robots"] + CONTACT.itemsize * frame["contacts"]
                        + DETECTION.itemsize * frame["detections"] + SONAR.itemsize * frame["sonar"]
                        + RANGE.itemsize * frame.get("ranges", 0) + frame["tail"])
                frame["block"] = self._rfile.read(size)
            if kind in wanted:
                return frame
            if kind in skip:
                continue
            if kind == "error":
                self.errors.append(frame)
                warnings.warn(f"crsim: {frame.get('error')}", stacklevel=3)
            elif kind == "end":
                self.ended = frame
                return None
            else:
                raise ProtocolError(f"unexpected frame {frame}")

    # -- seed 000 -----------------------------------------------------------------------------

    def register(self, robots, comm="both", observation=False):
        """registerRobot: ``robots`` is a name, a list of names, or a dict name -> comm
        (``"broadcast"``, ``"point_to_point"`` or ``"both"``). With ``observation=True`` each
        reading carries the robot's observation vector (``reading["observation"]``), laid out as
        ``hello``'s ``sensors`` list their parts: what ``crsim.VecEnv`` observes, made by the same
        code. Returns the names registered; raises ProtocolError naming every robot refused."""
        if isinstance(robots, str):
            robots = [robots]
        if not isinstance(robots, dict):
            robots = {name: comm for name in robots}
        regs = [{"name": n, "comm": c, **({"observation": True} if observation else {})} for n, c in robots.items()]
        self._send({"type": "register", "robots": regs, "encoding": self.encoding})
        reply = self._next({"registered"})
        if reply is None:
            raise ProtocolError(f"crsim ended: {self.ended}")
        self.robots.extend(n for n in reply["robots"] if n not in self.robots)
        if reply["errors"]:
            raise ProtocolError("; ".join(e["error"] for e in reply["errors"]))
        return reply["robots"]

    def send_message(self, robot, to, content):
        """sendMessage: ``robot`` sends ``content`` (any JSON value) to the robot ``to``, or to
        every robot in range when ``to`` is None. It leaves with this step's actions."""
        message = {"content": content}
        if to is not None:
            message["to"] = to
        self._action(robot).setdefault("send", []).append(message)

    def get_messages(self, robot):
        """getMessage: the messages delivered to ``robot`` for this step, each with ``from``,
        ``sent`` (the step), ``broadcast`` and ``content``."""
        return self.current[robot]["messages"] if self.current else []

    # -- actions ------------------------------------------------------------------------------

    def _action(self, robot):
        return self._actions.setdefault(robot, {"name": robot})

    def drive(self, robot, linear, angular, lateral=None):
        """Drive with ``linear`` m/s and ``angular`` rad/s until told otherwise, and a holonomic
        robot ``lateral`` m/s sideways (to its left when positive)."""
        a = self._action(robot)
        a.pop("skill", None)
        a["drive"] = [float(linear), float(angular)] + ([] if lateral is None else [float(lateral)])

    def skill(self, robot, kind, **params):
        """Hand the robot one of crsim's skills: ``stop``, ``velocity``, ``move_for``,
        ``move_ahead``, ``move_to``, ``turn_to``, ``turn_by``, ``turn_for``, ``follow``,
        ``blink`` (see the README for their parameters)."""
        a = self._action(robot)
        a.pop("drive", None)
        a["skill"] = dict(kind=kind, **params)

    def grip(self, robot, close):
        """Close the gripper (take the pen in reach) or open it (put the pen down)."""
        self._action(robot)["grip"] = "close" if close else "open"

    def lamp(self, robot, on):
        self._action(robot)["lamp"] = bool(on)

    def drive_all(self, linear, angular, grip=None):
        """Drive commands for every registered robot at once (arrays in the order the robots
        were registered: m/s, rad/s, and 0 leave / 1 close / 2 open for the gripper), sent as
        one binary block."""
        n = len(self.robots)
        block = np.zeros(n, dtype=DRIVE)
        block["robot"] = np.arange(n, dtype=np.uint32)
        block["linear"] = linear
        block["angular"] = angular
        if grip is not None:
            block["grip"] = grip
        self._drives = block

    def act(self):
        """Sends this step's actions (done for you by ``get_step`` and ``steps``)."""
        if self.current is None or self._acted:
            return
        frame = {"type": "act", "step": self.current.step, "robots": list(self._actions.values())}
        if self._drives is not None:
            frame["drives"] = len(self._drives)
            data = (_encode(frame) + "\n").encode() + self._drives.tobytes()
            self.sock.sendall(data)
        else:
            self._send(frame)
        self._actions = {}
        self._drives = None
        self._acted = True

    # -- the loop -----------------------------------------------------------------------------

    def get_step(self):
        """Answers the current step (with whatever actions were given) and waits for the next
        one's readings; None once the run is over."""
        self.act()
        frame = self._next({"step"})
        if frame is None:
            self.current = None
            return None
        self.current = BinaryStep(frame, frame["block"]) if "block" in frame else Step(frame)
        self._acted = False
        return self.current

    def steps(self):
        """The steps one after another, until the run ends; each is answered when the next is
        asked for."""
        while True:
            step = self.get_step()
            if step is None:
                return
            yield step

    def reset(self, seed=None):
        """Restarts the scene (with another seed if given), keeping the registrations; returns
        step 0's readings."""
        self._actions = {}
        self._drives = None
        self._acted = True
        self._send({"type": "reset"} if seed is None else {"type": "reset", "seed": int(seed)})
        # A step sent before crsim read the reset is answered by the reset itself.
        if self._next({"reset"}, skip={"step"}) is None:
            raise ProtocolError(f"crsim ended: {self.ended}")
        return self.get_step()

    def close(self):
        try:
            self._rfile.close()
            self.sock.close()
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
