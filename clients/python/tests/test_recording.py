"""A crsim recording read by other programs: the `mcap` reference library of the MCAP project
opens it, and every message matches its channel's JSON schema (what Foxglove and the `mcap` tools
rely on to plot fields)."""

import json
import subprocess

import jsonschema
import pytest
from mcap.reader import make_reader

from conftest import SCENES
from crsim.launch import find_crsim

CHANNELS = ["/step", "/robots", "/pens", "/events", "/radio", "/network", "/explorer", "/inputs", "/keyframe",
            "/range", "/sensors"]


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    path = tmp_path_factory.mktemp("rec") / "collectors.mcap"
    subprocess.run(
        [find_crsim(), "run", str(SCENES / "collectors.ron"), "--steps", "600", "--record", str(path),
         "--out", str(path.with_suffix(".json")), "--set", "robots[r1].range_sensor=(rays: 8, period: 3)"],
        check=True, capture_output=True, timeout=300,
    )
    return path


def test_the_mcap_library_reads_the_summary_and_metadata(recording):
    with open(recording, "rb") as f:
        reader = make_reader(f)
        summary = reader.get_summary()
        topics = sorted(ch.topic for ch in summary.channels.values())
        assert topics == sorted(CHANNELS)
        for ch in summary.channels.values():
            schema = summary.schemas[ch.schema_id]
            assert (ch.message_encoding, schema.encoding) == ("json", "jsonschema")
        counts = {summary.channels[c].topic: n for c, n in summary.statistics.channel_message_counts.items()}
        assert counts["/step"] == 600 and counts["/robots"] == 600 and counts["/pens"] == 600
        assert counts["/keyframe"] == 3  # steps 0, 250, 500
        assert counts["/range"] == 200  # r1 scans every third step
        # Only sensors registered with records of their own (an extension's) write /sensors.
        assert counts.get("/sensors", 0) == 0
        meta = {m.name: m.metadata for m in reader.iter_metadata()}
        assert meta["crsim.run"]["seed"] == "3"
        assert "robots" in meta["crsim.run"]["scene"]
        assert meta["crsim.end"]["steps"] == "600"
        # Log times are simulated time: step × dt (0.02 s).
        assert summary.statistics.message_end_time == 599 * 20_000_000


def test_every_message_matches_its_channel_schema(recording):
    validators = {}
    seen = {}
    with open(recording, "rb") as f:
        for schema, channel, message in make_reader(f).iter_messages(log_time_order=True):
            if channel.topic not in validators:
                validators[channel.topic] = jsonschema.Draft202012Validator(json.loads(schema.data))
            record = json.loads(message.data)
            validators[channel.topic].validate(record)
            seen[channel.topic] = seen.get(channel.topic, 0) + 1
            if channel.topic == "/robots":
                assert len(record["x"]) == 8 and all(0 <= b <= 1000 for b in record["battery"])
    assert seen["/events"] > 0 and seen["/radio"] > 0 and seen["/network"] > 0
