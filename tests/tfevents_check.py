#!/usr/bin/env python3
"""Reads a --tensorboard directory on its own terms (TFRecord framing, CRC-32C, the protocol
buffer wire format, all here, nothing shared with the C++ writer) and holds it to the run's
metrics file:
  - every file is whole records whose two masked CRC-32Cs match; the first event of each is the
    file version "brain.Event:2" with a wall time;
  - one file per life of the run (a "start" event of the metrics file; a resumed run adds one);
  - at every evaluation of a life, its file holds test/accuracy and test/loss (and test/auc,
    test/logloss, test/gauc and test/calibration where the metrics have them) at step = the evaluation's clock, with the metrics
    file's value (within 1e-6, relative for the losses), and at no other step;
  - train/loss points rise in step, the first at the life's first clock + 1 (a resumed life:
    the resumed clock + 1, continuing the steps);
  - shards/rows is the summary's sparse rows;
  - events/failovers (recoveries, failures, checkpoints, ...) counts the life's events of that
    kind, one point per event.
  - with --slice-auc, each slice's AUC (test_slice_auc's, one class only left out) is
    test/slice_auc/KEY at each evaluation's clock, the metrics file's value.
usage: tfevents_check.py DIR METRICS.jsonl [--ctr] [--gauc] [--slices]   (--ctr: some
evaluation must have an AUC and a calibration; --gauc: a GAUC too; --slices: slice AUCs too)
"""
import glob
import json
import math
import os
import struct
import sys


def crc32c_table():
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


TABLE = crc32c_table()


def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def masked(data):
    c = crc32c(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


assert crc32c(b"123456789") == 0xE3069283  # the CRC-32C check value


def records(path):
    data = open(path, "rb").read()
    at, n = 0, 0
    while at < len(data):
        if len(data) - at < 12:
            raise AssertionError(f"{path}: {len(data) - at} bytes after record {n}, not a header")
        header = data[at:at + 8]
        (length,) = struct.unpack("<Q", header)
        (length_crc,) = struct.unpack("<I", data[at + 8:at + 12])
        assert length_crc == masked(header), f"{path}: record {n}: the length's CRC is wrong"
        body = data[at + 12:at + 12 + length]
        tail = data[at + 12 + length:at + 16 + length]
        assert len(body) == length and len(tail) == 4, f"{path}: record {n} is cut short"
        assert struct.unpack("<I", tail)[0] == masked(body), f"{path}: record {n}: the data's CRC is wrong"
        yield body
        at += 16 + length
        n += 1


def varint(buf, at):
    value, shift = 0, 0
    while True:
        b = buf[at]
        at += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return value, at


def fields(buf):
    """(field number, value) of a message: ints, bytes, or raw little-endian bytes for fixed."""
    at = 0
    while at < len(buf):
        key, at = varint(buf, at)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, at = varint(buf, at)
        elif wire == 1:
            value, at = buf[at:at + 8], at + 8
        elif wire == 2:
            length, at = varint(buf, at)
            value, at = buf[at:at + length], at + length
        elif wire == 5:
            value, at = buf[at:at + 4], at + 4
        else:
            raise AssertionError(f"wire type {wire} of field {number}")
        assert at <= len(buf), "a field runs past its message"
        yield number, wire, value


def event(buf):
    out = {"step": 0, "values": []}
    for number, wire, value in fields(buf):
        if (number, wire) == (1, 1):
            out["wall_time"] = struct.unpack("<d", value)[0]
        elif (number, wire) == (2, 0):
            out["step"] = value - (1 << 64) if value >= 1 << 63 else value
        elif (number, wire) == (3, 2):
            out["file_version"] = value.decode()
        elif (number, wire) == (5, 2):
            for vn, vw, v in fields(value):
                assert (vn, vw) == (1, 2), f"Summary field {vn}"
                tag, simple = None, None
                for f, w, x in fields(v):
                    if (f, w) == (1, 2):
                        tag = x.decode()
                    elif (f, w) == (2, 5):
                        simple = struct.unpack("<f", x)[0]
                assert tag is not None and simple is not None, "a Value without tag or simple_value"
                out["values"].append((tag, simple))
        else:
            raise AssertionError(f"Event field {number} (wire type {wire})")
    return out


COUNTED = {"failure": "failures", "recovery": "recoveries", "failover": "failovers",
           "rereplicated": "rereplications", "standby_lost": "standbys_lost",
           "skipped": "workers_skipped", "checkpoint": "checkpoints",
           "checkpoint_failed": "checkpoint_failures"}


def close(got, want, relative):
    tolerance = 1e-6 * (max(1.0, abs(want)) if relative else 1.0)
    return (math.isnan(got) and math.isnan(want)) or abs(got - want) <= tolerance


def check_life(path, life, number):
    events = [event(r) for r in records(path)]
    assert events, f"{path}: no record"
    first = events[0]
    assert first.get("file_version") == "brain.Event:2", f"{path}: first event {first}"
    assert first.get("wall_time", 0) > 1e9, f"{path}: first event's wall time {first}"
    scalars = {}  # tag -> [(step, value)]
    for e in events[1:]:
        assert "file_version" not in e and e["values"], f"{path}: an event without scalars: {e}"
        for tag, value in e["values"]:
            scalars.setdefault(tag, []).append((e["step"], value))
    evals = [m for m in life if m["event"] == "eval"]
    assert evals, f"life {number} of the metrics file has no evaluation"
    for tag, key, relative in (("test/accuracy", "test_accuracy", False),
                               ("test/loss", "test_loss", True),
                               ("test/auc", "test_auc", False),
                               ("test/logloss", "test_logloss", True),
                               ("test/gauc", "test_gauc", False),
                               ("test/calibration", "test_calibration", True)):
        want = [(m["clock"], m[key]) for m in evals if m.get(key) is not None]
        got = scalars.get(tag, [])
        assert [s for s, _ in got] == [c for c, _ in want], \
            f"{path}: {tag} at steps {[s for s, _ in got]}, evaluations at {[c for c, _ in want]}"
        for (step, g), (_, w) in zip(got, want):
            assert close(g, w, relative), f"{path}: {tag} at {step} is {g}, the metrics file's {w}"
    slices = {}  # tag -> [(clock, auc)] from the metrics file
    for m in evals:
        for one in m.get("test_slice_auc") or []:
            if one.get("auc") is not None:
                slices.setdefault("test/slice_auc/" + one["key"], []).append((m["clock"], one["auc"]))
    got_slices = {tag for tag in scalars if tag.startswith("test/slice_auc/")}
    assert got_slices == set(slices), f"{path}: slice tags {sorted(got_slices)}, the metrics' {sorted(slices)}"
    for tag, want in slices.items():
        got = scalars[tag]
        assert [s for s, _ in got] == [c for c, _ in want], \
            f"{path}: {tag} at steps {[s for s, _ in got]}, evaluations at {[c for c, _ in want]}"
        for (step, g), (_, w) in zip(got, want):
            assert close(g, w, False), f"{path}: {tag} at {step} is {g}, the metrics file's {w}"
    train = [s for s, _ in scalars.get("train/loss", [])]
    assert train and train == sorted(set(train)), f"{path}: train/loss steps {train[:20]}"
    summaries = [m for m in life if m["event"] == "summary"]
    resumed = summaries[0]["resumed_from"] if summaries else -1
    first_clock = min(m["clock"] for m in life if m["event"] == "train")
    assert train[0] == first_clock + 1, f"{path}: train/loss starts at {train[0]}, clocks at {first_clock}"
    if resumed >= 0:
        assert train[0] == resumed + 1, f"{path}: steps restart at {train[0]}, resumed from {resumed}"
    if summaries and "sparse_rows" in summaries[0]:
        rows = sum(sum(s) for s in summaries[0]["sparse_rows"])
        got = scalars.get("shards/rows", [])
        assert got and got[-1][1] == float(rows), f"{path}: shards/rows {got}, the summary's {rows}"
    for kind, name in COUNTED.items():
        want = [m.get("clock") for m in life if m["event"] == kind]
        got = scalars.get("events/" + name, [])
        assert [v for _, v in got] == [float(n + 1) for n in range(len(want))], \
            f"{path}: events/{name} {got}, the metrics file has {len(want)} {kind} events"
        assert [s for s, _ in got] == want, f"{path}: events/{name} at {got}, events at {want}"
    has = {key for m in evals for key in ("test_auc", "test_gauc", "test_calibration")
           if m.get(key) is not None}
    if slices:
        has.add("test_slice_auc")
    return len(events), len(evals), has, resumed


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    ctr = "--ctr" in sys.argv
    gauc = "--gauc" in sys.argv
    with_slices = "--slices" in sys.argv
    if len(args) != 2:
        sys.exit(__doc__)
    directory, metrics = args
    lives = []
    for line in open(metrics):
        m = json.loads(line)
        if m["event"] == "start":
            lives.append([])
        lives[-1].append(m)
    files = sorted(glob.glob(os.path.join(directory, "events.out.tfevents.*")))
    assert len(files) == len(lives), f"{len(files)} event files for {len(lives)} lives of the run"
    seen = set()
    for number, (path, life) in enumerate(zip(files, lives)):
        n, evals, has, resumed = check_life(path, life, number)
        seen |= has
        print(f"{os.path.basename(path)}: {n} records, {evals} evaluations match"
              + (f", resumed from clock {resumed}" if resumed >= 0 else ""))
    assert "test_auc" in seen or not ctr, "no evaluation with an AUC"
    assert "test_calibration" in seen or not ctr, "no evaluation with a calibration"
    assert "test_gauc" in seen or not gauc, "no evaluation with a GAUC"
    assert "test_slice_auc" in seen or not with_slices, "no evaluation with a slice's AUC"


if __name__ == "__main__":
    try:
        main()
    except AssertionError as e:
        sys.exit(f"FAIL: {e}")
