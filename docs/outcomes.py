#!/usr/bin/env python3
"""Runs the shipped scenes whose outcomes the manual quotes and prints each figure.

    cargo build --release
    python3 docs/outcomes.py [--crsim PATH] [--only NAME ...]

Every row of the outcome tables in docs/network.md and docs/explorer.md comes from one run
here (release build; a run is deterministic, so its figures do not depend on the machine, only
on the code). The wall times it prints do depend on the machine and are not quoted.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(crsim, args):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "m.json")
        started = time.monotonic()
        subprocess.run([crsim, "run", *args, "--out", out], check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
        wall = time.monotonic() - started
        with open(out) as f:
            return json.load(f), wall


def collect_row(m):
    c = m["collect"]
    boxed = f"{c['pens_boxed']} of {c['pens_total']} boxed"
    if c["all_boxed_s"] is not None:
        boxed = f"all {c['pens_total']} boxed at {c['all_boxed_s']:.1f} s"
    return (
        f"{boxed}; duplicated pursuit {c['duplicate_pursuit_s']:.2f} robot-s; contested {c['contested']}; "
        f"charging visits {c['charging_visits']}; depleted {c['batteries_depleted']}"
    )


def comms_row(m):
    c = m.get("comms") or {}
    dropped = c.get("dropped") or {}
    parts = ", ".join(f"{n} {k}" for k, n in sorted(dropped.items()) if n)
    return (
        f"{c.get('sent', 0)} messages: {c.get('delivered', 0)} delivered "
        f"(mean latency {c.get('mean_latency_steps', 0):.1f} steps); dropped: {parts or 'none'}"
    )


def battery_row(m):
    robots = m.get("robots") or []
    return "batteries at the end " + ", ".join(f"{r['battery_fraction'] * 100:.0f}%" for r in robots if "battery_fraction" in r)


def explore_row(m):
    e = m["explore"]
    rows = [
        f"coverage {e['coverage']:.2f}; {e['collisions']} collisions, {e['repeat_collisions']} repeated; "
        f"{e['returns']} returns; {e['steps']} moves; finished at {e['finished_at_s']} s"
    ]
    for r in e.get("robots") or []:
        rows.append(
            f"  {r.get('name')}: coverage {r.get('coverage', 0):.2f}, {r.get('collisions')} collisions, "
            f"finished at {r.get('finished_at_s')} s"
        )
    return "\n".join(rows)


CASES = [
    ("pens", ["scenes/pens.ron", "--steps", "6000"], [collect_row]),
    ("pens-12min", ["scenes/pens.ron", "--steps", "36000"], [collect_row, battery_row]),
    *[
        (f"collectors-radio-seed{s}", ["scenes/collectors.ron", "--steps", "15000", "--seed", str(s)], [collect_row])
        for s in (3, 1, 2, 4)
    ],
    *[
        (
            f"collectors-no-radio-seed{s}",
            ["scenes/collectors.ron", "--steps", "15000", "--seed", str(s), "--no-radio"],
            [collect_row],
        )
        for s in (3, 1, 2, 4)
    ],
    ("lossy", ["scenes/lossy.ron", "--steps", "15000"], [collect_row, comms_row]),
    ("explorer", ["scenes/explorer.ron", "--steps", "80000"], [explore_row]),
    ("explorers-radio", ["scenes/explorers.ron", "--steps", "120000"], [explore_row, comms_row]),
    ("explorers-no-radio", ["scenes/explorers.ron", "--steps", "120000", "--no-radio"], [explore_row, comms_row]),
]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--crsim", default=os.path.join(os.environ.get("CARGO_TARGET_DIR", "target"), "release", "crsim"))
    p.add_argument("--only", nargs="*", help="the cases to run (names as printed)")
    a = p.parse_args()
    if not os.path.exists(a.crsim):
        sys.exit(f"no crsim at {a.crsim}: build it with `cargo build --release` or name it with --crsim")
    for name, args, rows in CASES:
        if a.only and name not in a.only:
            continue
        m, wall = run(a.crsim, args)
        print(f"{name}: crsim run {' '.join(args)}  ({wall:.1f} s wall)")
        for row in rows:
            print("  " + row(m))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
