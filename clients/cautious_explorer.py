#!/usr/bin/env python3
"""The cautious explorer (seed 002) as an outside client of crsim's VirtualRobot interface.

It speaks the course's WebSocket protocol (port 8091; `pip install websockets`), so it runs
unchanged against crsim (`crsim run scenes/wenv.ron --realtime ...`, or the app on
scenes/wenv.ron) and against the course's own virtual robot.

The robot starts at its den (HOME, top-left corner, facing down) and explores the room in
columns: excursion i turns left, steps i robot lengths east along the top, turns right and steps
down until it hits something. A collision is reported at the moment of impact; the robot stops
the move (`alarm`), backs up for as long as it had been moving, so it is back at the start of
the cell, and runs home by the reversed path (turn 180 degrees, replay the moves backwards with
left and right swapped), as seed 002 asks; then it turns to face down again. It keeps a mental
map in robot units and prints it: D den, . free, # obstacle, ? unexplored.

    python3 clients/cautious_explorer.py [--url ws://127.0.0.1:8091] [--step 350]
"""

import argparse
import asyncio
import json
import time

import websockets

TURN_MS = 300


class Robot:
    def __init__(self, ws):
        self.ws = ws
        self.moves = 0

    async def send(self, move, ms):
        await self.ws.send(json.dumps({"robotmove": move, "time": ms}))

    async def run(self, move, ms):
        """Runs a move; returns None when it ended normally, or the seconds it had been moving
        when it hit something."""
        self.moves += 1
        start = time.monotonic()
        await self.send(move, ms)
        while True:
            msg = json.loads(await self.ws.recv())
            if "collision" in msg:
                moved = time.monotonic() - start
                await self.send("alarm", 10)  # end the failed move now, not after its time
                while True:
                    end = json.loads(await self.ws.recv())
                    if str(end.get("move", "")).startswith(move):
                        return moved
            if msg.get("move") == move:
                if msg.get("endmove") not in ("true", True):
                    raise RuntimeError(f"{move} failed: {msg}")
                return None


async def explore(url, step_ms, rows):
    known = {(0, 0): "D"}  # (col, row): col grows east, row grows down
    collisions = 0
    async with websockets.connect(url) as ws:
        robot = Robot(ws)
        column = 0
        while True:
            path, pos, facing, hit = [], (0, 0), (0, 1), None
            for m in ["l"] + ["w"] * column + ["r"] + ["w"] * rows:
                if m == "l":
                    await robot.run("turnLeft", TURN_MS)
                    facing = (facing[1], -facing[0])
                elif m == "r":
                    await robot.run("turnRight", TURN_MS)
                    facing = (-facing[1], facing[0])
                else:
                    moved = await robot.run("moveForward", step_ms)
                    if moved is not None:
                        hit = (pos[0] + facing[0], pos[1] + facing[1])
                        await robot.run("moveBackward", round(moved * 1000))
                        break
                    pos = (pos[0] + facing[0], pos[1] + facing[1])
                    known.setdefault(pos, ".")
                path.append(m)
            if hit is not None:
                collisions += 1
                known[hit] = "#"
            # Home by the reversed path, then face down again.
            home = ["l", "l"] + [{"l": "r", "r": "l", "w": "w"}[m] for m in reversed(path)] + ["l", "l"]
            for m in home:
                if m == "w":
                    await robot.run("moveForward", step_ms)
                else:
                    await robot.run("turnLeft" if m == "l" else "turnRight", TURN_MS)
            print(f"excursion {column}: {''.join(path)} -> {'hit ' + str(hit) if hit else 'no hit'}, home")
            # Hit on the way east along the top row: nothing more to the east.
            if hit is not None and hit[1] == 0:
                break
            column += 1
    cols = max(c for c, _ in known) + 1
    nrows = max(r for _, r in known) + 1
    print(f"mental map ({cols} x {nrows} robot units), {collisions} collisions, {robot.moves} moves:")
    for r in range(nrows):
        print("".join(known.get((c, r), "?") for c in range(cols)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--url", default="ws://127.0.0.1:8091")
    ap.add_argument("--step", type=int, default=350, help="ms of moveForward for one robot length")
    ap.add_argument("--rows", type=int, default=12, help="most steps down per column")
    args = ap.parse_args()
    asyncio.run(explore(args.url, args.step, args.rows))


if __name__ == "__main__":
    main()
