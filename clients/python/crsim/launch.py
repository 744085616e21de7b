"""Starting crsim for a program: find the binary, run a scene headless with the program server
on a free port, and read where it listens."""

import ctypes
import os
import signal
import shutil
import subprocess
import sys
import threading
import weakref
from pathlib import Path


def _die_with_parent():
    """In the child before it runs crsim (Linux): the kernel sends it SIGTERM when the process
    that started it dies, however it dies (an exception, Ctrl-C, SIGKILL)."""
    PR_SET_PDEATHSIG = 1
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _stop(process, timeout=30):
    """SIGTERM (crsim writes what it did), then SIGKILL if it does not end in time."""
    if process.poll() is None:
        process.terminate()
    try:
        return process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        return process.wait()


def find_crsim():
    """The crsim binary: ``$CRSIM_BIN``, ``crsim`` on the PATH, or one cargo built in this
    repository (release first)."""
    env = os.environ.get("CRSIM_BIN")
    if env:
        return env
    on_path = shutil.which("crsim")
    if on_path:
        return on_path
    repo = Path(__file__).resolve().parents[3]
    targets = [Path(os.environ["CARGO_TARGET_DIR"])] if os.environ.get("CARGO_TARGET_DIR") else []
    targets += [repo / "target", Path.home() / ".cache" / "crsim-target"]
    for target in targets:
        for profile in ("release", "debug"):
            candidate = target / profile / "crsim"
            if candidate.is_file():
                return str(candidate)
    raise FileNotFoundError("no crsim binary: set CRSIM_BIN, put crsim on the PATH, or `cargo build --release`")


class Crsim:
    """A headless ``crsim run`` of ``scene`` serving programs on a free port. ``host`` and
    ``port`` say where; ``close`` stops it (its metrics go to ``out`` if given). ``programs``
    (robot names, or ``"all"``) are driven by programs whatever their controller in the scene.

    What it starts never outlives it: ``close`` (or leaving a ``with`` block) stops the run, so
    does the interpreter's exit and the object being collected, and on Linux the run gets SIGTERM
    when this process dies in any other way. The run also ends by itself when its last program
    disconnects."""

    def __init__(self, scene, steps=10**12, seed=None, out=None, args=(), binary=None, programs=None):
        command = [binary or find_crsim(), "run", str(scene), "--steps", str(steps), "--program-port", "0"]
        if programs:
            command += ["--programs", programs if isinstance(programs, str) else ",".join(programs)]
        if seed is not None:
            command += ["--seed", str(seed)]
        if out is not None:
            command += ["--out", str(out)]
        command += list(args)
        self.process = subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None,
        )
        # Stopped when this object is collected or at interpreter exit, whichever comes first.
        self._finalizer = weakref.finalize(self, _stop, self.process)
        first = self.process.stdout.readline()
        if not first.startswith("programs: listening on "):
            self.process.kill()
            raise RuntimeError(f"crsim did not start its program server: {first!r} (exit {self.process.wait()})")
        self.host, port = first.strip().rsplit(" ", 1)[1].rsplit(":", 1)
        self.port = int(port)
        self.output = [first]
        # Keep reading what it prints, so a full pipe never blocks it.
        self._reader = threading.Thread(target=self._drain, daemon=True)
        self._reader.start()

    def _drain(self):
        for line in self.process.stdout:
            self.output.append(line)

    def close(self, timeout=30):
        """Stops the run (SIGTERM: it writes what it did) and waits for it; its exit code."""
        code = _stop(self.process, timeout)
        self._finalizer.detach()
        self._reader.join(timeout=5)
        return code

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
