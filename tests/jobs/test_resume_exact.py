"""Exact resume: a training run SIGKILLed at random points (real child processes) and resumed
from its newest complete checkpoint ends bit-identical to an uninterrupted run; a SIGTERM'd
run (the real CLI) saves where it stopped and resumes the same way."""

from __future__ import annotations

import contextlib
import os
import random
import signal
import time

import pytest
import torch

pytestmark = pytest.mark.slow  # several child processes

STEPS = 40


def _args(uri, out=None, every=4):
    argv = ["--checkpoint-uri", str(uri), "--steps", str(STEPS), "--seed", "7", "--every-steps", str(every)]
    return argv + (["--out", str(out)] if out else [])


@pytest.fixture(scope="module")
def reference(train_runner, tmp_path_factory):
    """The final weights of an uninterrupted run."""
    d = tmp_path_factory.mktemp("reference")
    proc, log = train_runner.start(_args(d / "ckpt", d / "final.pt"))
    proc.join(180)
    assert proc.exitcode == 0, log.read_text()
    return torch.load(d / "final.pt", weights_only=True)


def _assert_identical(a, b):
    assert a.keys() == b.keys()
    for k in a:
        assert torch.equal(a[k], b[k]), f"{k} differs after resume"


def test_sigkill_at_random_points_resumes_bit_identical(train_runner, reference, tmp_path):
    seed = random.randrange(1 << 30)
    r = random.Random(seed)
    kill_after = sorted(r.sample(range(2, STEPS - 1), 3))  # increasing: each attempt gets past it
    out = tmp_path / "final.pt"
    starts = []
    for k in kill_after:
        proc, log = train_runner.start(_args(tmp_path / "ckpt", out, every=3))
        assert train_runner.wait_for(log, "start step=", proc), f"seed {seed}: {log.read_text()}"
        # an earlier attempt may have saved past k before its kill landed: this one then starts
        # after k and never prints it, so it is killed one step after where it resumed instead
        resumed_at = int(log.read_text().split("start step=", 1)[1].split()[0])
        k = max(k, resumed_at + 1)
        if k >= STEPS:  # nothing left to kill: this attempt finishes the run
            proc.join(180)
            assert proc.exitcode == 0, f"seed {seed}: {log.read_text()}"
            starts.append(log.read_text().splitlines()[0])
            continue
        assert train_runner.wait_for(log, f"step {k} loss", proc), f"seed {seed}: {log.read_text()}"
        # 0-20 ms later: sometimes mid-step, sometimes inside a checkpoint write
        if r.random() >= 0.5:
            time.sleep(r.uniform(0, 0.02))
        with contextlib.suppress(ProcessLookupError):  # near the end it may have finished by now
            os.kill(proc.pid, signal.SIGKILL)
        proc.join(30)
        assert proc.exitcode in (-signal.SIGKILL, 0), f"seed {seed}: exit {proc.exitcode}"
        starts.append(log.read_text().splitlines()[0])
    proc, log = train_runner.start(_args(tmp_path / "ckpt", out, every=3))
    proc.join(180)
    assert proc.exitcode == 0, f"seed {seed}: {log.read_text()}"
    assert starts[0].startswith("start step=0 resumed=False ")
    assert any("resumed=True" in s for s in starts[1:] + [log.read_text().splitlines()[0]]), starts
    _assert_identical(torch.load(out, weights_only=True), reference)


def test_sigterm_saves_at_the_step_boundary_and_resumes_bit_identical(train_runner, reference, tmp_path):
    ckpt, out = tmp_path / "ckpt", tmp_path / "final.pt"
    proc, log = train_runner.start([*_args(ckpt, out, every=100), "--step-sleep", "0.02"])
    assert train_runner.wait_for(log, "step 10 loss", proc)
    os.kill(proc.pid, signal.SIGTERM)
    proc.join(60)
    text = log.read_text()
    assert proc.exitcode == 143, text
    stopped = int(text.split("stopped at step ")[1].split(":")[0])
    assert 10 <= stopped < STEPS and "SIGTERM" in text
    assert sorted(p.name for p in ckpt.iterdir()) == [f"ckpt-{stopped:012d}"]  # no step is a multiple of 100
    proc2, log2 = train_runner.start(_args(ckpt, out, every=100))
    proc2.join(180)
    assert proc2.exitcode == 0 and log2.read_text().startswith(f"start step={stopped} resumed=True")
    _assert_identical(torch.load(out, weights_only=True), reference)
