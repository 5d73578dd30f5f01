"""The serving section on CPU (tiny shapes): run from the bootstrap payload in a fresh
interpreter with no Airflow, validate the document; the KV cache and the W8A8 layers compute
what they claim; the command line and bench/serving_gpu.py refuse bad inputs."""

from __future__ import annotations

import base64
import importlib.util
import io
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import torch

from finops.gpubench import serving
from finops.gpubench.__main__ import main as bench_main
from finops.gpubench.bootstrap import (
    USER_DATA_LIMIT,
    bench_payload,
    presigned_put_upload,
    render,
    wants_serving,
)
from finops.gpubench.schema import SchemaError, validate
from finops.gpubench.serving_config import SIZES, size_for
from finops.gpubench.timing import Deadline

REPO = Path(__file__).resolve().parents[2]
CPU = torch.device("cpu")


@pytest.fixture(scope="module")
def serving_doc(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("instance")
    with tarfile.open(fileobj=io.BytesIO(base64.b64decode(bench_payload(serving=True))), mode="r:gz") as tar:
        tar.extractall(root, filter="data")
    out = root / "result.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "FINOPS"))}
    env["PYTHONPATH"] = str(root)
    proc = subprocess.run(
        [
            sys.executable,
            "-X",
            "importtime",
            "-m",
            "finops.gpubench",
            "--json",
            str(out),
            "--device",
            "cpu",
            "--sections",
            "serving",
            "--threads",
            "1",
            "--p99-ms",
            "decoder=1e-6",
            "--context",
            "provider=lambda",
        ],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    imported = {
        line.split("|")[-1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")
    }
    assert not any(
        m == "airflow" or m.startswith(("airflow.", "finops.warehouse", "pydantic")) for m in imported
    )
    return json.loads(out.read_text())


def test_cpu_serving_document_is_valid_and_complete(serving_doc):
    doc = validate(serving_doc)
    sv = doc["serving"]
    assert doc["sections"]["serving"]["status"] == "ok" and doc["results"] == []
    got = {(r["model"], r["dtype"], r["batch"]) for r in sv["rows"]}
    assert got == {
        ("resnet50", "fp32", 1),
        ("resnet50", "fp32", 4),
        ("decoder", "fp32", 1),
        ("decoder", "fp32", 4),
    }
    for r in sv["rows"]:
        assert r["p50_ms"] <= r["p95_ms"] <= r["p99_ms"] <= r["max_ms"] and r["requests_per_s"] > 0
        assert r["samples"] >= SIZES["cpu"].min_iters or r["truncated"]
        assert r["warmup"] == SIZES["cpu"].warmup and r["peak_memory_bytes"] is None
    dec = [r for r in sv["rows"] if r["model"] == "decoder"]
    assert all(r["output_tokens_per_s"] == pytest.approx(r["requests_per_s"] * 4) for r in dec)
    assert sv["method"]["percentiles"] == "nearest-rank" and sv["p99_target_ms"]["decoder"] == 1e-6
    best = {b["model"]: b for b in sv["best"]}
    assert best["decoder"]["batch"] is None  # a 1 ns target: no batch meets it, said so
    cnn = [r for r in sv["rows"] if r["model"] == "resnet50" and r["meets_p99"]]
    if cnn:
        assert best["resnet50"]["batch"] == max(cnn, key=lambda r: r["requests_per_s"])["batch"]
    # a training-only document stays valid without the serving key; a bad row is refused
    bare = {k: v for k, v in doc.items() if k != "serving"}
    validate(bare)
    bad = json.loads(json.dumps(doc))
    bad["serving"]["rows"][0]["batch"] = -2
    with pytest.raises(SchemaError, match="serving/rows/0/batch"):
        validate(bad)


def test_payload_ships_serving_only_when_asked():
    assert wants_serving(["--device=cuda", "--serving"]) and wants_serving(["--sections=matmul,serving"])
    assert not wants_serving(["--device=cuda", "--context=run_id=--serving-x"])
    url = "https://bench-results.s3.amazonaws.com/x.json?X-Amz-Signature=" + "a" * 600
    plain = render(upload=presigned_put_upload(url), ttl_minutes=45, bench_args=["--quick"], context={})
    assert len(plain.encode()) < USER_DATA_LIMIT  # the weekly training run still fits EC2 user data
    with_serving = render(
        upload=presigned_put_upload(url), ttl_minutes=45, bench_args=["--serving"], context={}
    )
    assert len(with_serving.encode()) > len(plain.encode())
    names = tarfile.open(fileobj=io.BytesIO(base64.b64decode(bench_payload(True))), mode="r:gz").getnames()
    assert {
        "finops/gpubench/serving.py",
        "finops/gpubench/latency.py",
        "finops/gpubench/serving_config.py",
    } <= set(names)


def test_kv_cache_decoding_matches_full_recompute():
    s = SIZES["cpu"]
    torch.manual_seed(0)
    dec = serving.Decoder(s).eval()
    prompt = torch.randint(0, s.vocab, (3, s.tokens_in))
    with torch.inference_mode():
        fast = dec.generate(prompt, dec.new_cache(3, torch.float32, CPU))
        seq = prompt
        for _ in range(s.tokens_out):  # no cache: the whole sequence every step
            logits = dec.step(seq, dec.new_cache(3, torch.float32, CPU), 0)
            seq = torch.cat([seq, logits.argmax(-1, keepdim=True)], dim=1)
    assert fast.shape == (3, s.tokens_out)
    assert torch.equal(fast, seq[:, s.tokens_in :])


@pytest.mark.parametrize("mode, tolerance", [("int8", 0.02), ("fp8", 0.08)])
def test_w8a8_linear_tracks_the_float_layer(mode, tolerance):
    torch.manual_seed(1)
    lin = torch.nn.Linear(64, 48)
    for rows in (1, 5, 40):  # fewer rows than the kernels take are padded, and cut off again
        x = torch.randn(rows, 64)
        ref = lin(x).detach()
        got = serving.QuantLinear(lin, mode, torch.float32)(x)
        assert got.shape == ref.shape
        assert float((got - ref).norm() / ref.norm()) < tolerance
    with pytest.raises(ValueError):
        serving.QuantLinear(lin, "int4", torch.float32)


def test_quantised_decoder_point_on_cpu_kernels():
    """The int8 / fp8 build and one measured point, on CPU's torch._int_mm / _scaled_mm (the
    suite measures these on GPUs only; here the code path runs end to end)."""
    s = size_for("cpu", {"decoder_batches": (2,), "warmup": 1, "min_iters": 2, "iters": 2, "tokens_out": 2})
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny matrices: threads only contend
    try:
        for mode in ("int8", "fp8"):
            net, info = serving._build("decoder", mode, s, CPU)
            assert info["quantised_linears"] == 4 * s.n_layers + 1 and info["logits_rel_err_vs_float"] < 0.1
            if mode == "fp8":
                continue  # CPU's fp8 _scaled_mm is an emulation, ~1 s a request: the build check is enough
            with torch.inference_mode():
                row = serving._point("decoder", mode, 2, s, net, CPU, Deadline.after(60))
            assert row["dtype"] == mode and row["tokens_out"] == s.tokens_out and row["samples"] == 2
    finally:
        torch.set_num_threads(threads)


def test_skip_reasons_on_cpu():
    assert serving.skip_reason("resnet50", "fp32", CPU) is None
    assert "GPUs only" in serving.skip_reason("decoder", "fp8", CPU)


@pytest.mark.parametrize(
    "args, message",
    [
        (["--batches", "0"], "batch sizes must be integers >= 1"),
        (["--batches=-4,8"], "batch sizes must be integers >= 1"),
        (["--p99-ms", "0"], "P99 target for resnet50 must be > 0 ms"),
        (["--p99-ms", "decoder=-5"], "P99 target for decoder must be > 0 ms"),
        (["--serving-dtypes", "int4"], "unknown serving dtypes"),
        (["--serving-models", "bert"], "unknown serving models"),
        (["--tokens-out", "0"], "tokens_in and tokens_out must be >= 1"),
    ],
)
def test_command_line_refuses_bad_serving_inputs(tmp_path, capsys, args, message):
    out = tmp_path / "r.json"
    assert bench_main(["--json", str(out), "--device", "cpu", "--sections", "serving", *args]) == 2
    assert message in capsys.readouterr().err and not out.exists()


def test_gpu_script_quick_cpu_mode(tmp_path):
    """bench/serving_gpu.sh as the lead runs it on a GPU machine, in its CPU mode."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "FINOPS"))}
    env.update(PYTHON=sys.executable, OUT=str(tmp_path))
    proc = subprocess.run(
        [
            "bash",
            str(REPO / "bench" / "serving_gpu.sh"),
            "--quick",
            "--device",
            "cpu",
            "--budget-s",
            "2",
            "--price-per-hour",
            "3.60",
            "--price-label",
            "test",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    doc = validate(json.loads((tmp_path / "serving.json").read_text()))
    md = (tmp_path / "serving.md").read_text()
    assert "| model | dtype | batch |" in md and "$/1k req" in md and "Best batch under the P99 target" in md
    assert (
        len(doc["serving"]["rows"])
        == sum(f"| {r['model']} | fp32 | {r['batch']} |" in md for r in doc["serving"]["rows"])
        > 0
    )
    assert "serving point" in (tmp_path / "serving.log").read_text()


def test_gpu_script_refuses_bad_prices(tmp_path):
    spec = importlib.util.spec_from_file_location("serving_gpu", REPO / "bench" / "serving_gpu.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    for price in ("-1", "abc", "NaN"):
        with pytest.raises(SystemExit):
            mod.main(["--out", str(tmp_path), "--device", "cpu", "--price-per-hour", price])
    assert not (tmp_path / "serving.json").exists()
