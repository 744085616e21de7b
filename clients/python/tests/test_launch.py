"""The launcher never leaves a crsim running unseen: on close, when its Python process ends on an
exception or is killed, and when the last program disconnects."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from crsim import Client, Crsim

PACKAGE = Path(__file__).resolve().parents[1]


def gone(pid):
    """Whether process ``pid`` has ended (a zombie no one reaped has ended too)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return True
    return state in ("Z", "X")


def wait_gone(pid, seconds=20.0):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if gone(pid):
            return True
        time.sleep(0.05)
    return False


def start_in_child(scene, after):
    """A Python process that starts crsim for ``scene``, prints its pid, then runs ``after``."""
    code = (
        "import sys, time\n"
        f"sys.path.insert(0, {str(PACKAGE)!r})\n"
        "from crsim import Crsim\n"
        f"sim = Crsim({str(scene)!r}, programs=['alpha', 'beta'])\n"
        "print(sim.process.pid, flush=True)\n"
        f"{after}\n"
    )
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    pid = int(child.stdout.readline())
    return child, pid


def test_an_exception_in_the_launching_process_stops_the_run(pens_scene):
    child, pid = start_in_child(pens_scene, "raise RuntimeError('the learner failed')")
    child.wait(timeout=60)
    assert child.returncode == 1
    assert wait_gone(pid), "crsim outlived the Python process that started it"


def test_a_killed_launching_process_takes_the_run_with_it(pens_scene):
    child, pid = start_in_child(pens_scene, "time.sleep(600)")
    assert not gone(pid)
    os.kill(child.pid, signal.SIGKILL)
    child.wait(timeout=10)
    assert wait_gone(pid), "crsim outlived a SIGKILLed parent"


def test_close_and_the_last_program_leaving_end_the_run(pens_scene, tmp_path):
    sim = Crsim(pens_scene, programs=["alpha", "beta"], out=tmp_path / "m.json")
    client = Client(sim.host, sim.port)
    client.register(["alpha", "beta"])
    for step in client.steps():
        if step.step == 3:
            break
    client.close()
    # The run ends by itself, saying so, with its metrics written.
    assert sim.process.wait(timeout=30) == 0
    sim._reader.join(timeout=5)
    assert any("the last program has gone" in line for line in sim.output), sim.output
    assert (tmp_path / "m.json").exists()
    assert sim.close() == 0
