#!/usr/bin/env python3
"""Makes the manual's animated GIFs from the frames `crsim replay --frames DIR` writes.

    python3 docs/frames_to_gif.py DIR OUT.gif [--crop X0 Y0 X1 Y1] [--width 480] [--fps 8] [--colors 48]

Each frame is cut to the crop box (pixels of the window), scaled to the width and reduced to one
shared palette (no dithering), then written in order. Needs Pillow (`pip install pillow`).
"""

import argparse
import glob
import os
import sys

from PIL import Image


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("frames", help="the directory crsim replay --frames wrote")
    p.add_argument("out", help="the GIF to write")
    p.add_argument("--crop", type=int, nargs=4, metavar=("X0", "Y0", "X1", "Y1"))
    p.add_argument("--width", type=int, default=480)
    p.add_argument("--fps", type=float, default=8.0)
    p.add_argument("--colors", type=int, default=48)
    a = p.parse_args()
    if a.crop and not (0 <= a.crop[0] < a.crop[2] and 0 <= a.crop[1] < a.crop[3]):
        sys.exit(f"frames_to_gif: --crop {' '.join(map(str, a.crop))}: need 0 <= X0 < X1 and 0 <= Y0 < Y1")
    if a.width < 1 or a.fps <= 0 or not 2 <= a.colors <= 256:
        sys.exit("frames_to_gif: --width must be at least 1, --fps above 0, --colors 2 to 256")
    paths = sorted(glob.glob(os.path.join(a.frames, "frame-*.png")))
    if not paths:
        sys.exit(f"frames_to_gif: no frame-*.png in {a.frames}")
    frames = []
    for path in paths:
        try:
            im = Image.open(path).convert("RGB")
        except OSError as e:
            sys.exit(f"frames_to_gif: {path}: {e}")
        if a.crop:
            im = im.crop(tuple(a.crop))
        height = round(im.height * a.width / im.width)
        frames.append(im.resize((a.width, height), Image.LANCZOS))
    # One palette for every frame, from the last (the fullest picture).
    palette = frames[-1].quantize(colors=a.colors, dither=Image.Dither.NONE)
    gif = [f.quantize(palette=palette, dither=Image.Dither.NONE) for f in frames]
    gif[0].save(a.out, save_all=True, append_images=gif[1:], duration=round(1000 / a.fps), loop=0)
    print(f"wrote {a.out}: {len(gif)} frames, {os.path.getsize(a.out)} bytes")


if __name__ == "__main__":
    main()
