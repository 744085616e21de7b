"""Writes the scenes the README's `crsim check` figures were measured on into a folder:

    python3 docs/hostile-scenes.py /tmp/hostile
    for f in /tmp/hostile/*.ron; do /usr/bin/time -f "$f: %e s, %M KB" crsim check "$f" > /dev/null; done
"""

import sys
from pathlib import Path


def scene(name, w, h, robots="", walls=""):
    return f'SceneFile(name: "{name}", dt: 0.02, arena: (width: {w}, height: {h}), walls: [{walls}], robots: [{robots}])'


def up_to_a_megabyte(item):
    out, i = [], 0
    while sum(map(len, out)) < 1_000_000:
        out.append(item(i))
        i += 1
    return "".join(out)


def main(folder):
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    files = {
        # 100,000 robots on a 1 m grid (4.3 MB), and 10,000 piled on one spot.
        "grid100k.ron": scene("grid", 320.0, 320.0, "".join(
            f'(name: "r{i}", pose: ({0.5 + i % 316}, {0.5 + i // 316}, 0.0)),' for i in range(100_000))),
        "pile10k.ron": scene("pile", 10.0, 10.0, "".join(
            f'(name: "r{i}", pose: (5.0, 5.0, 0.0)),' for i in range(10_000))),
        # 1 MB files: robots on a grid in the largest arena, robots on one spot, and long thin
        # walls crossing the largest arena with a robot a millimetre wide.
        "grid-1mb.ron": scene("grid", 100000.0, 100000.0, up_to_a_megabyte(
            lambda i: f'(name: "r{i}", pose: ({0.5 + (i % 300) * 0.5}, {0.5 + (i // 300) * 0.5}, 0.0), radius: 0.2),')),
        "pile-1mb.ron": scene("pile", 100000.0, 100000.0, up_to_a_megabyte(
            lambda i: f'(name: "r{i}", pose: (5.0, 5.0, 0.0)),')),
        "walls-1mb.ron": scene("walls", 100000.0, 100000.0,
                               '(name: "r", pose: (0.5, 0.5, 0.0), radius: 0.001),', up_to_a_megabyte(
            lambda i: f'(name: "w{i}", from: ({1 + i * 0.01}, 1.0), to: ({50000 + i * 0.01}, 99990.0), thickness: 0.001),')),
        # What fuzzing found: an arena of 1e30 m (refused at once, naming the limit).
        "huge-arena.ron": scene("huge", 1e30, 1e30, '(name: "r", pose: (0.5, 0.5, 0.0), radius: 0.000001),'),
    }
    for name, text in files.items():
        (folder / name).write_text(text)
        print(folder / name, f"{len(text):,} bytes")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "hostile-scenes")
