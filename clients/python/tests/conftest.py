"""Shared fixtures: the repository's scenes, and a crsim run of a scene on a free port."""

from pathlib import Path

import pytest

from crsim import Crsim

SCENES = Path(__file__).resolve().parents[3] / "scenes"
EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


@pytest.fixture
def pens_scene():
    """The pens room; with ``programs=TWO`` alpha and beta are program robots, gamma is crsim's
    own behaviour network."""
    return SCENES / "pens.ron"


TWO = ["alpha", "beta"]


@pytest.fixture
def run(tmp_path):
    """Starts `crsim run SCENE` (metrics to tmp_path/m.json); stopped after the test."""
    started = []

    def start(scene, **kwargs):
        sim = Crsim(scene, out=tmp_path / "m.json", **kwargs)
        started.append(sim)
        return sim

    yield start
    for sim in started:
        sim.close()
