"""The benchmark itself on CPU (tiny sizes): run it the way an instance does -- from the
bootstrap payload, in a fresh interpreter with no Airflow -- and validate its JSON."""

from __future__ import annotations

import base64
import io
import json
import os
import subprocess
import sys
import tarfile

import pytest

from finops.gpubench.bootstrap import USER_DATA_LIMIT, bench_payload, presigned_put_upload, render
from finops.gpubench.schema import RESULT_SCHEMA, SchemaError, validate


@pytest.fixture(scope="module")
def cpu_result(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("instance")
    with tarfile.open(fileobj=io.BytesIO(base64.b64decode(bench_payload())), mode="r:gz") as tar:
        tar.extractall(root, filter="data")
    out = root / "result.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "FINOPS"))}
    env["PYTHONPATH"] = str(root)  # only the payload: proves the suite needs nothing else of ours
    proc = subprocess.run(
        [
            sys.executable,
            "-X",
            "importtime",
            "-m",
            "finops.gpubench",
            "--json",
            str(out),
            "--quick",
            "--device",
            "cpu",
            "--threads",
            "1",
            "--context",
            "provider=aws",
            "--context",
            "run_id=test",
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
    return {"doc": json.loads(out.read_text()), "imported": imported, "stdout": proc.stdout}


def test_cpu_run_is_valid_and_complete(cpu_result):
    doc = validate(cpu_result["doc"])
    assert doc["device"]["type"] == "cpu" and doc["profile"] == "cpu"
    assert doc["context"] == {"provider": "aws", "run_id": "test"}
    got = {(m["metric"], m["dtype"]) for m in doc["results"]}
    for dtype in ("fp32", "fp16", "bf16"):
        assert ("matmul_tflops", dtype) in got
    assert ("device_copy_bandwidth", None) in got
    assert ("train_samples_per_s", "fp32") in got and ("train_step_time", "fp32") in got
    assert all(m["value"] > 0 for m in doc["results"] if m["metric"] != "train_loss_rel_gap")
    # tf32 / fp8 / host transfers are CUDA-only: skipped with a reason, never silently absent
    assert set(doc["sections"]["matmul"]["details"]["skipped"]) == {"tf32", "fp8"}
    assert doc["sections"]["transfer"]["status"] == "skipped"
    # AMP loss tracks fp32 loss from the same seed, whenever the budget let AMP run
    for mode, check in doc["sections"]["training"]["details"]["loss_checks"].items():
        assert check["ok"], (mode, check)
    assert "matmul_tflops" in cpu_result["stdout"]


def test_suite_imports_no_airflow(cpu_result):
    assert not any(m == "airflow" or m.startswith("airflow.") for m in cpu_result["imported"])
    assert not any(
        m.startswith(("pydantic", "finops.warehouse", "finops.config")) for m in cpu_result["imported"]
    )


def test_schema_rejects_bad_documents(cpu_result):
    doc = json.loads(json.dumps(cpu_result["doc"]))
    doc["results"][0]["unit"] = "GFLOPS"
    with pytest.raises(SchemaError, match="unit"):
        validate(doc)
    doc = json.loads(json.dumps(cpu_result["doc"]))
    doc["schema_version"] = 99
    with pytest.raises(SchemaError, match="schema_version"):
        validate(doc)
    doc = json.loads(json.dumps(cpu_result["doc"]))
    doc["results"].append(
        {"metric": "matmul_tflops", "dtype": "int4", "value": 1, "unit": "TFLOPS", "section": "matmul"}
    )
    with pytest.raises(SchemaError):
        validate(doc)
    assert RESULT_SCHEMA["properties"]["schema_version"]["const"] == 1


def test_bootstrap_script_fits_user_data_and_is_safe():
    url = "https://bench-results.s3.amazonaws.com/gpu-benchmarks/x.json?X-Amz-Signature=" + "a" * 600
    script = render(
        upload=presigned_put_upload(url),
        ttl_minutes=45,
        bench_args=["--quick"],
        context={"run_id": "manual__2026-11-16T06:00:00+00:00'; rm -rf /", "provider": "aws"},
    )
    assert len(script.encode()) < USER_DATA_LIMIT
    assert "shutdown -P +45" in script and "timeout 2520 " in script
    # hostile context values stay one shell word
    assert "'--context=run_id=manual__2026-11-16T06:00:00+00:00'\"'\"'; rm -rf /'" in script
    assert "@@" not in script
    proc = subprocess.run(["bash", "-n"], input=script, text=True, capture_output=True)
    assert proc.returncode == 0, proc.stderr
