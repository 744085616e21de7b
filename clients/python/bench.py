"""How fast robot programs run in lock-step: one Python robot, and one Python connection driving
a team of robots. Starts crsim itself (CRSIM_BIN, or see crsim.find_crsim) on a generated scene,
drives every robot with a constant command, and reports steps per second, robot-steps per
second, and where a step's time goes on each side.

    python3 clients/python/bench.py --robots 1 --steps 5000
    python3 clients/python/bench.py --robots 1000 --steps 300
"""

import argparse
import json
import math
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from crsim import Client, Crsim


def scene(robots):
    """A square room with `robots` program robots on a 1 m grid and a pen at every fourth."""
    side = max(1, math.ceil(math.sqrt(robots)))
    size = side + 1.0
    lines = [f'(name: "programs-bench", arena: (width: {size}, height: {size}), robots: [']
    for i in range(robots):
        x, y = i % side + 0.5, i // side + 0.5
        lines.append(f'(name: "r{i}", pose: ({x}, {y}, {(i * 37) % 360 - 180}.0), controller: Program()),')
    lines.append("], pens: [")
    for i in range(0, robots, 4):
        x, y = i % side + 1.0, i // side + 1.0
        lines.append(f'(name: "p{i}", pos: ({x}, {y})),')
    lines.append("], programs: (port: 0, wait_for_robots: 120.0, step_timeout: 30.0))")
    return "\n".join(lines)


class TimedClient(Client):
    """The client, with the time it spends waiting, parsing and encoding counted."""

    wait = parse = encode = 0.0

    def _recv(self):
        t0 = time.perf_counter()
        line = self._rfile.readline()
        t1 = time.perf_counter()
        frame = json.loads(line) if line else None
        t2 = time.perf_counter()
        self.wait += t1 - t0
        self.parse += t2 - t1
        return frame

    def get_step(self):
        # Reading the binary block and viewing it as arrays is parsing too.
        t0 = time.perf_counter()
        wait0, parse0 = self.wait, self.parse
        step = super().get_step()
        spent = time.perf_counter() - t0
        self.parse += spent - (self.wait - wait0) - (self.parse - parse0) - self._encoded
        self._encoded = 0.0
        return step

    _encoded = 0.0

    def act(self):
        t0 = time.perf_counter()
        super().act()
        self._encoded += time.perf_counter() - t0
        self.encode += time.perf_counter() - t0



def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--robots", type=int, default=1)
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--binary", help="the crsim binary (default: CRSIM_BIN or find_crsim())")
    parser.add_argument("--encoding", choices=("json", "binary"),
                        help="step frames as JSON or binary records (default: json for one robot, else binary)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.ron"
        path.write_text(scene(args.robots))
        out = Path(tmp) / "m.json"
        with Crsim(path, steps=args.steps, out=out, binary=args.binary) as sim:
            encoding = args.encoding or ("json" if args.robots == 1 else "binary")
            client = TimedClient(sim.host, sim.port, encoding=encoding)
            names = [r["name"] for r in client.hello["robots"]]
            client.register(names)
            linear = np.full(len(names), 0.3, dtype=np.float32)
            angular = np.full(len(names), 0.4, dtype=np.float32)
            first = client.get_step()
            client.wait = client.parse = client.encode = 0.0
            start = time.perf_counter()
            served = 0
            for step in client.steps():
                if encoding == "binary":
                    client.drive_all(linear, angular)
                else:
                    for name in names:
                        client.drive(name, 0.3, 0.4)
                served += 1
            wall = time.perf_counter() - start
            client.close()
            sim.close()
        metrics = json.loads(out.read_text())
    p = metrics["programs"]
    steps = served
    print(f"robots: {args.robots} ({encoding})")
    print(f"steps: {steps} (after step {first.step})")
    print(f"wall_s: {wall:.3f}")
    print(f"steps_per_s: {steps / wall:.0f}")
    print(f"robot_steps_per_s: {steps * args.robots / wall:.0f}")
    per = 1e6 / (steps / wall)
    print(f"us_per_step: {per:.1f}")
    print(f"python_parse_us: {1e6 * client.parse / steps:.1f}  python_encode_send_us: {1e6 * client.encode / steps:.1f}"
          f"  python_waiting_us: {1e6 * client.wait / steps:.1f}")
    crsim_exchange = 1e6 * p["exchange_s_per_step"]
    crsim_encode = 1e6 * p["encode_s"] / max(p["steps"], 1)
    print(f"crsim_readings_us: {crsim_encode:.1f}  crsim_exchange_us (readings, waiting, actions): {crsim_exchange:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
