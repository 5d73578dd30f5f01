"""Checkpoint library, in-process: what is saved, what counts as complete, what is skipped,
on a local directory and on S3 (moto server)."""

from __future__ import annotations

import json
import random

import boto3
import numpy as np
import pytest
import torch

from finops.jobs.checkpoint import COMMIT, STATE, Checkpointer, checkpoint_dir, newest_complete_step
from finops.jobs.stores import LocalStore, S3Store, open_store


def _model():
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 2)
    opt = torch.optim.Adam(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cpu", growth_interval=2)
    return model, opt, scaler


def _train_step(model, opt, scaler):
    opt.zero_grad()
    loss = model(torch.randn(3, 4)).pow(2).mean()
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()


def _draws():
    return (
        torch.rand(3).tolist(),
        np.random.rand(3).tolist(),
        [random.random() for _ in range(3)],
        np.random.randn(),
    )


def test_restore_brings_back_weights_optimizer_scaler_rng_and_data(tmp_path):
    model, opt, scaler = _model()
    for _ in range(3):
        _train_step(model, opt, scaler)
    np.random.randn()  # leaves a cached gaussian in numpy's legacy state
    ck = Checkpointer(str(tmp_path), model, opt, scaler, every_steps=3)
    assert ck.step_done(3, data={"epoch": 0, "batch": 3}, extra={"note": "x"}) is False
    saved_scaler = scaler.state_dict()
    assert saved_scaler["scale"] != 65536.0  # the scaler moved: restoring it matters
    expected = _draws()
    _train_step(model, opt, scaler)
    after = {k: v.clone() for k, v in model.state_dict().items()}

    model2, opt2, scaler2 = _model()
    torch.manual_seed(99)
    np.random.seed(99)
    random.seed(99)
    resumed = Checkpointer(str(tmp_path), model2, opt2, scaler2).restore()
    assert resumed is not None and resumed.step == 3
    assert resumed.data == {"epoch": 0, "batch": 3} and resumed.extra == {"note": "x"}
    assert scaler2.state_dict() == saved_scaler
    assert _draws() == expected
    _train_step(model2, opt2, scaler2)
    assert all(torch.equal(after[k], v) for k, v in model2.state_dict().items())


def test_only_due_steps_are_saved_and_old_ones_pruned(tmp_path):
    model, opt, _ = _model()
    ck = Checkpointer(str(tmp_path), model, opt, every_steps=2, keep=2)
    for step in range(1, 8):
        ck.step_done(step)
    assert ck.complete_steps() == [4, 6]
    assert sorted(p.name for p in tmp_path.iterdir()) == [checkpoint_dir(4), checkpoint_dir(6)]


def test_minutes_trigger_a_save(tmp_path):
    now = [0.0]
    model, _, _ = _model()
    ck = Checkpointer(str(tmp_path), model, every_minutes=10, clock=lambda: now[0])
    ck.step_done(1)
    now[0] = 599.0
    ck.step_done(2)
    assert ck.complete_steps() == []
    now[0] = 600.0
    ck.step_done(3)
    assert ck.complete_steps() == [3]


def test_stop_request_saves_now_and_tells_the_loop_to_stop(tmp_path):
    model, opt, _ = _model()
    ck = Checkpointer(str(tmp_path), model, opt, every_steps=100)
    assert ck.step_done(7) is False and ck.complete_steps() == []
    ck.request_stop("aws spot interruption notice")
    assert ck.step_done(8) is True
    assert ck.complete_steps() == [8] and ck.stop_reason == "aws spot interruption notice"


def _three_checkpoints(store):
    model, opt, _ = _model()
    ck = Checkpointer("/unused", model, opt, every_steps=1, keep=5, store=store)
    for step in (1, 2, 3):
        _train_step(model, opt, torch.amp.GradScaler("cpu", enabled=False))
        ck.step_done(step)
    return ck


@pytest.mark.parametrize(
    "damage",
    ["no_commit", "flipped_byte", "truncated", "commit_not_json", "commit_wrong_step", "state_missing"],
)
def test_partial_or_corrupt_newest_checkpoint_is_skipped(tmp_path, damage):
    store = LocalStore(tmp_path)
    ck = _three_checkpoints(store)
    d = checkpoint_dir(3)
    blob = store.get(f"{d}/{STATE}")
    if damage == "no_commit":
        store.delete(f"{d}/{COMMIT}")
    elif damage == "flipped_byte":
        store.put(f"{d}/{STATE}", blob[:100] + bytes([blob[100] ^ 1]) + blob[101:])
    elif damage == "truncated":
        store.put(f"{d}/{STATE}", blob[: len(blob) // 2])
    elif damage == "commit_not_json":
        store.put(f"{d}/{COMMIT}", b'{"format": 1, "ste')
    elif damage == "commit_wrong_step":
        commit = json.loads(store.get(f"{d}/{COMMIT}"))
        store.put(f"{d}/{COMMIT}", json.dumps(dict(commit, step=9)).encode())
    else:
        store.delete(f"{d}/{STATE}")
    model, opt, _ = _model()
    resumed = Checkpointer("/unused", model, opt, store=store).restore()
    assert resumed is not None and resumed.step == 2
    assert ck.newest_step() == 2 and newest_complete_step(store) == 2


def test_no_checkpoint_is_a_fresh_start(tmp_path):
    model, _, _ = _model()
    assert Checkpointer(str(tmp_path / "none"), model).restore() is None


def test_local_store_hides_temp_files_and_refuses_climbing(tmp_path):
    store = LocalStore(tmp_path)
    (tmp_path / "ckpt-000000000001").mkdir()
    (tmp_path / "ckpt-000000000001" / ".tmp-state.pt-abc").write_bytes(b"half")
    store.put("ckpt-000000000001/COMMIT.json", b"{}")
    assert store.list() == ["ckpt-000000000001/COMMIT.json"]
    for bad in ("../x", "a//b", "/abs", "a/./b", ""):
        with pytest.raises(ValueError, match="must be relative"):
            store.put(bad, b"x")


def test_unsupported_schemes_say_what_to_use():
    with pytest.raises(ValueError, match="s3://, gs://, az:// or an absolute local path"):
        open_store("relative")


def test_s3_checkpoints_resume_and_skip_a_corrupt_one(moto_reset):
    client = boto3.client("s3", endpoint_url=moto_reset, region_name="us-east-1")
    client.create_bucket(Bucket="ckpts")
    store = open_store("s3://ckpts/jobs/j1", s3_client=client)
    assert isinstance(store, S3Store)
    ck = _three_checkpoints(store)
    keys = sorted(o["Key"] for o in client.list_objects_v2(Bucket="ckpts")["Contents"])
    assert keys[:2] == ["jobs/j1/ckpt-000000000001/COMMIT.json", "jobs/j1/ckpt-000000000001/state.pt"]
    assert len(keys) == 6
    model, opt, _ = _model()
    assert Checkpointer("s3://ckpts/jobs/j1", model, opt, store=store).restore().step == 3
    client.put_object(Bucket="ckpts", Key="jobs/j1/ckpt-000000000003/state.pt", Body=b"garbage")
    client.put_object(Bucket="ckpts", Key="jobs/j1/ckpt-000000000004/state.pt", Body=b"in flight, no commit")
    assert ck.newest_step() == 2
    assert Checkpointer("s3://ckpts/jobs/j1", model, opt, store=store).restore().step == 2
    assert store.get("ckpt-000000000009/state.pt") is None
