"""Pen collectors in Python: every robot the program registers finds pens with its camera,
claims the one it goes for over the radio (as crsim's own collectors do, so they understand it),
gives a pen up to a robot that claims it from closer, carries it to the nearest box it has seen,
and recharges at the station when its battery runs low.

    crsim run scenes/pens.ron --programs all --steps 12000 &
    python3 clients/python/examples/collectors.py

drives every robot crsim offers (--robots to choose). With --launch SCENE it starts crsim itself,
with every robot of the scene a program robot, and says when every pen is boxed.
"""

import argparse
import math
import random
import sys

from crsim import Client, Crsim

CLAIM_EVERY = 50
CLAIM_LIFETIME = 100
LOW, FULL = 0.3, 0.95


def wrap(a):
    return (a + math.pi) % (2 * math.pi) - math.pi


class Collector:
    """One robot's mind: what it goes for, what it remembers, what it heard."""

    def __init__(self, name, body, seed):
        self.name = name
        self.body = body
        self.rng = random.Random(seed)
        self.boxes = {}  # name -> (x, y)
        self.stations = {}
        self.claims = {}  # pen -> (by, distance, step)
        self.target = None
        self.claimed_at = -CLAIM_EVERY
        self.charging = False
        self.turn_left = 0
        self.cruise = self.rng.uniform(-0.3, 0.3)

    def where(self, r, d):
        x, y, h = r["pose"]
        a = h + d["bearing"]
        return (x + d["distance"] * math.cos(a), y + d["distance"] * math.sin(a))

    def steer(self, r, goal, slow=0.4):
        x, y, h = r["pose"]
        dx, dy = goal[0] - x, goal[1] - y
        bearing = wrap(math.atan2(dy, dx) - h)
        distance = math.hypot(dx, dy)
        speed = self.body["max_speed"] * min(1.0, max(0.25, distance / slow)) * max(0.0, math.cos(bearing))
        if abs(bearing) > 0.6:
            speed = 0.0
        return speed, max(-1.0, min(1.0, 1.5 * bearing)) * self.body["max_turn"]

    def decide(self, client, step, r):
        """The robot's actions for this step."""
        for m in r["messages"]:
            c = m["content"]
            if isinstance(c, dict) and isinstance(c.get("claim"), dict):
                self.claims[c["claim"]["pen"]] = (m["from"], c["claim"]["distance"], step)
        self.claims = {p: c for p, c in self.claims.items() if step - c[2] <= CLAIM_LIFETIME}
        for d in r["camera"]:
            if d["kind"] == "box":
                self.boxes[d["name"]] = self.where(r, d)
            elif d["kind"] == "station":
                self.stations[d["name"]] = self.where(r, d)
        battery = r["battery"]
        self.charging = battery < FULL if self.charging else battery <= LOW
        holding = r["grip"]["holding"]
        if r["bump"] and self.turn_left == 0 and not (holding and any(t["with"] in self.boxes for t in r["bump"])):
            self.turn_left = self.rng.randint(20, 50)
            self.cruise = self.rng.choice((-1.0, 1.0))
        if self.turn_left > 0:
            self.turn_left -= 1
            client.drive(self.name, -0.05, self.cruise * self.body["max_turn"])
            return
        x, y, _ = r["pose"]
        if self.charging:
            if r["charging"]:
                client.drive(self.name, 0.0, 0.0)
                return
            if self.stations:
                goal = min(self.stations.values(), key=lambda s: math.hypot(s[0] - x, s[1] - y))
                client.drive(self.name, *self.steer(r, goal))
                return
        elif holding:
            if self.boxes:
                name, goal = min(self.boxes.items(), key=lambda b: math.hypot(b[1][0] - x, b[1][1] - y))
                near = [d for d in r["camera"] if d["kind"] == "box" and d["name"] == name]
                if near and near[0]["distance"] < 0.36 and abs(near[0]["bearing"]) < 0.3:
                    client.grip(self.name, False)
                    client.drive(self.name, 0.0, 0.0)
                    return
                touching_box = any(t["with"] in self.boxes for t in r["bump"])
                if touching_box:
                    client.grip(self.name, False)
                    return
                client.drive(self.name, *self.steer(r, goal, slow=0.6))
                return
        else:
            pens = [d for d in r["camera"] if d["kind"] == "pen"]
            mine = [d for d in pens if not self.yields(d["name"], d["distance"])]
            if self.target not in [d["name"] for d in mine]:
                self.target = min(mine, key=lambda d: d["distance"])["name"] if mine else None
                self.claimed_at = -CLAIM_EVERY
            if self.target is not None:
                d = next(d for d in mine if d["name"] == self.target)
                if step - self.claimed_at >= CLAIM_EVERY:
                    client.send_message(self.name, None, {"claim": {"pen": self.target, "distance": d["distance"]}})
                    self.claimed_at = step
                if r["grip"]["in_reach"] == self.target:
                    client.grip(self.name, True)
                    client.drive(self.name, 0.0, 0.0)
                    return
                goal = self.where(r, d)
                client.drive(self.name, *self.steer(r, goal, slow=0.3))
                return
        # Search: cruise with gentle curves.
        if self.rng.random() < 0.01:
            self.cruise = self.rng.uniform(-0.4, 0.4)
        client.drive(self.name, 0.7 * self.body["max_speed"], self.cruise * self.body["max_turn"])

    def yields(self, pen, distance):
        claim = self.claims.get(pen)
        return claim is not None and claim[0] != self.name and (claim[1], claim[0]) < (distance, self.name)


def collect(client, robots=None, steps=12000, pens_total=None, seed=1):
    """Runs the collectors (every robot crsim offers when ``robots`` is None) for ``steps`` steps,
    or until they have boxed ``pens_total`` pens; returns the step they did (None if not)."""
    bodies = {r["name"]: r for r in client.hello["robots"]}
    robots = list(bodies) if robots is None else robots
    client.register(robots)
    minds = {name: Collector(name, bodies[name], seed + i) for i, name in enumerate(robots)}
    for step in client.steps():
        if pens_total is not None and sum(step[name]["boxed"] for name in robots) >= pens_total:
            return step.step
        for name, mind in minds.items():
            mind.decide(client, step.step, step[name])
        if step.step >= steps:
            break
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, default=9400)
    parser.add_argument("--robots", nargs="+", help="the robots to drive (default: every one crsim offers)")
    parser.add_argument("--steps", type=int, default=12000)
    parser.add_argument("--pens", type=int, help="stop once this many pens are boxed")
    parser.add_argument("--launch", metavar="SCENE", help="start `crsim run SCENE --programs all` on a free port first")
    args = parser.parse_args()
    if args.launch:
        with Crsim(args.launch, steps=args.steps + 1, programs="all") as sim:
            client = Client(sim.host, sim.port)
            done = collect(client, args.robots, args.steps, pens_total=args.pens)
            dt = client.hello["dt"]
            client.close()
            sim.close()
    else:
        client = Client(port=args.port)
        done = collect(client, args.robots, args.steps, pens_total=args.pens)
        dt = client.hello["dt"]
        client.close()
    if args.pens is not None:
        print(f"all {args.pens} pens boxed at step {done} ({done * dt:.1f} s)" if done is not None
              else f"not all {args.pens} pens boxed in {args.steps} steps")
    return 0


if __name__ == "__main__":
    sys.exit(main())
