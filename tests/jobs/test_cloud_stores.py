"""gs:// and az:// checkpoint stores: the store contract (put / get / list / delete under a
prefix), newest-complete resume with partial and corrupt checkpoints skipped, and the exact
resume of a SIGKILLed training process, on a local GCS JSON API server and on Azurite."""

from __future__ import annotations

import contextlib
import os
import random
import signal
import uuid

import pytest
import torch

from finops.jobs.checkpoint import COMMIT, STATE, Checkpointer, checkpoint_dir, newest_complete_step
from finops.jobs.stores import AzureBlobStore, GCSStore, open_store

STEPS = 24


@pytest.fixture
def gcs(gcs_server, monkeypatch):
    """(store URI, env for a child process, server state) for a fresh bucket."""
    url, state = gcs_server
    bucket = f"ckpt-{uuid.uuid4().hex[:8]}"
    state.create_bucket(bucket)
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", url)
    return f"gs://{bucket}/jobs/j1", {"STORAGE_EMULATOR_HOST": url}, state


@pytest.fixture
def azure(az_blob_endpoint, monkeypatch):
    from azure.storage.blob import BlobServiceClient

    name = f"ckpt-{uuid.uuid4().hex[:8]}"
    container = BlobServiceClient.from_connection_string(az_blob_endpoint).create_container(name)
    monkeypatch.setenv("AZURE_STORAGE_CONNECTION_STRING", az_blob_endpoint)
    yield f"az://{name}/jobs/j1", {"AZURE_STORAGE_CONNECTION_STRING": az_blob_endpoint}, container
    container.delete_container()


@pytest.fixture(params=["gs", "az"])
def cloud(request):
    """(URI, child env, backend handle) for each new backend."""
    return request.getfixturevalue({"gs": "gcs", "az": "azure"}[request.param])


def _model():
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 2)
    return model, torch.optim.Adam(model.parameters(), lr=0.1)


def _step(model, opt):
    opt.zero_grad()
    model(torch.randn(3, 4)).pow(2).mean().backward()
    opt.step()


def test_store_contract_under_the_prefix(cloud):
    uri, _, _ = cloud
    store = open_store(uri)
    assert isinstance(store, GCSStore if uri.startswith("gs://") else AzureBlobStore)
    assert store.list() == [] and store.get("a/b") is None
    names = ["a/b", "ckpt-000000000001/state.pt", "ckpt-000000000001/COMMIT.json", "z", "odd name+%.bin"]
    for i, n in enumerate(names):
        store.put(n, bytes([i]) * (i + 1))
    store.put("z", b"replaced")
    assert store.list() == sorted(names)  # more than one listing page on the GCS server
    assert store.get("odd name+%.bin") == bytes([4]) * 5 and store.get("z") == b"replaced"
    # a sibling prefix is not part of this store
    other = open_store(uri.rsplit("/", 1)[0] + "/j10")
    other.put("x", b"other job")
    assert "x" not in store.list() and other.list() == ["x"]
    store.delete("a/b")
    store.delete("a/b")  # deleting what is gone is not an error (pruning after a crash)
    assert "a/b" not in store.list()
    with pytest.raises(ValueError):
        store.put("../escape", b"x")


def test_gcs_speaks_media_upload_and_encoded_names(gcs):
    uri, _, state = gcs
    store = open_store(uri)
    store.put("ckpt-000000000007/state.pt", b"w")
    store.get("ckpt-000000000007/state.pt")
    bucket = uri.split("/")[2]
    assert state.buckets[bucket] == {"jobs/j1/ckpt-000000000007/state.pt": b"w"}
    assert ("GET", f"/storage/v1/b/{bucket}/o/jobs%2Fj1%2Fckpt-000000000007%2Fstate.pt") in state.requests


def test_save_resume_newest_and_skip_partial_and_corrupt(cloud):
    uri, _, _ = cloud
    store = open_store(uri)
    model, opt = _model()
    ck = Checkpointer(uri, model, opt, every_steps=1, keep=3, store=store)
    for step in (1, 2, 3):
        _step(model, opt)
        ck.step_done(step, data={"batch": step})
    assert Checkpointer(uri, *_model()).complete_steps() == [1, 2, 3]
    expected = {k: v.clone() for k, v in model.state_dict().items()}
    m2, o2 = _model()
    resumed = Checkpointer(uri, m2, o2).restore()  # opens its own store from the URI
    assert resumed is not None and resumed.step == 3 and resumed.data == {"batch": 3}
    assert all(torch.equal(expected[k], v) for k, v in m2.state_dict().items())

    blob = store.get(f"{checkpoint_dir(3)}/{STATE}")
    store.put(f"{checkpoint_dir(3)}/{STATE}", blob[:-1] + bytes([blob[-1] ^ 1]))  # corrupt
    store.put(f"{checkpoint_dir(4)}/{STATE}", blob)  # partial: killed before its marker
    assert newest_complete_step(store) == 2
    resumed = Checkpointer(uri, *_model()).restore()
    assert resumed is not None and resumed.step == 2
    store.delete(f"{checkpoint_dir(2)}/{COMMIT}")  # a marker half-pruned away
    assert newest_complete_step(store) == 1


def _args(uri, out, every):
    return ["--checkpoint-uri", uri, "--steps", str(STEPS), "--seed", "7", "--every-steps", str(every),
            "--out", str(out)]  # fmt: skip


def test_sigkilled_run_resumes_bit_identical(cloud, train_runner, tmp_path):
    uri, env, _ = cloud
    ref_out = tmp_path / "reference.pt"
    proc, log = train_runner.start(_args(str(tmp_path / "ref-ckpt"), ref_out, STEPS))
    proc.join(120)
    assert proc.exitcode == 0, log.read_text()

    seed = random.randrange(1 << 30)
    kill_at = random.Random(seed).randrange(4, STEPS - 4)
    out = tmp_path / "final.pt"
    proc, log = train_runner.start(_args(uri, out, 3), env)
    assert train_runner.wait_for(log, f"step {kill_at} loss", proc), f"seed {seed}: {log.read_text()}"
    with contextlib.suppress(ProcessLookupError):
        os.kill(proc.pid, signal.SIGKILL)
    proc.join(30)
    assert proc.exitcode in (-signal.SIGKILL, 0), f"seed {seed}"
    proc, log = train_runner.start(_args(uri, out, 3), env)
    proc.join(120)
    text = log.read_text()
    assert proc.exitcode == 0, f"seed {seed}: {text}"
    assert text.startswith("start step=") and "resumed=True" in text.splitlines()[0], f"seed {seed}: {text}"
    ref, got = torch.load(ref_out, weights_only=True), torch.load(out, weights_only=True)
    assert ref.keys() == got.keys() and all(torch.equal(ref[k], got[k]) for k in ref), f"seed {seed}"
