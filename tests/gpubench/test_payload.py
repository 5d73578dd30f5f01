"""Serving runs every week, so the bundle outgrows EC2's 16 KiB user data: it goes to the
benchmark bucket (moto S3 here) and the instance fetches it with a pre-signed GET, checks its
SHA-256, then unpacks. The payload section of each rendered script runs for real (bash + curl on
loopback against moto); every cleanup path that ends the instance deletes the object."""

from __future__ import annotations

import base64
import io
import json
import os
import re
import subprocess
import sys
import tarfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

import botocore.exceptions
import pytest

from finops.exceptions import ConfigError
from finops.gpubench import bootstrap, lifecycle, payload
from finops.gpubench.launchers.aws import AwsLauncher
from finops.gpubench.launchers.base import LaunchError
from finops.gpubench.operators import make_payload_store, make_presign
from finops.gpubench.payload import S3PayloadStore
from finops.gpubench.settings import parse_settings

BUCKET = "bench-results"
TARGETS = {
    "aws": {"image_id": "ami-0abcdef1234567890", "instance_type": "p5.48xlarge"},
    "gcp": {
        "project": "proj",
        "zone": "us-central1-a",
        "instance_type": "a3-highgpu-8g",
        "image": "projects/deeplearning-platform-release/global/images/family/pytorch",
    },
    "azure": {
        "subscription_id": "sub",
        "resource_group": "rg",
        "subnet_id": "subnet-1",
        "ssh_public_key": "ssh-ed25519 AAAA ops",
        "instance_type": "Standard_ND96isr_H100_v5",
    },
    "lambda": {"ssh_key_name": "ops", "instance_type": "gpu_1x_h100_sxm5"},
}


def _settings(provider: str, **over):
    target = {"provider": provider, "region": "us-east-1", **TARGETS[provider]}
    return parse_settings(
        {"results_conn_id": "aws_default", "results_bucket": BUCKET, "ttl_minutes": 30, "targets": [target]}
        | over
    )


@pytest.fixture
def store(aws_conn) -> S3PayloadStore:
    """The store the DAG tasks build (results connection, SigV4), on a moto bucket."""
    made = make_payload_store(_settings("aws"))
    made.client.create_bucket(Bucket=BUCKET)
    return made


def _run_payload_step(script: str, work: Path, retries: int = 0) -> str:
    """The script's own payload section, run by bash with curl against moto; returns PAYLOAD_ERR."""
    m = re.search(r"^# >>> payload\n(.*)^# <<< payload$", script, re.S | re.M)
    assert m, "no payload section in the script"
    body = f'set -u\nWORK={work}\nPAYLOAD_ERR=""\n{m.group(1)}\nprintf %s "$PAYLOAD_ERR"\n'
    env = {"PATH": os.environ["PATH"], "FINOPS_FETCH_RETRIES": str(retries)}
    proc = subprocess.run(["bash", "-c", body], capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def _tree(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


def _stage(settings, store, bid="0123456789abcdef0123", dry_run=False, presign=None):
    t = settings.targets[0]
    upload = (
        bootstrap.presigned_put_upload(presign(f"s3://{BUCKET}/gpu-benchmarks/{bid}.json", 3600))
        if presign
        else "echo no upload"
    )
    return payload.stage(
        provider=t.provider,
        bench_run_id=bid,
        upload=upload,
        ttl_minutes=settings.ttl_minutes,
        bench_args=settings.suite_args(),
        context={"bench_run_id": bid, "provider": t.provider, "region": t.region},
        bucket=settings.results_bucket,
        prefix=settings.results_prefix,
        store=store,
        dry_run=dry_run,
    )


@pytest.mark.parametrize("provider", ["aws", "gcp", "azure", "lambda"])
def test_weekly_serving_script_fits_each_provider_and_unpacks(provider, store, aws_conn, tmp_path):
    settings = _settings(provider)
    assert "--serving" in settings.suite_args()  # serving is part of the weekly run by default
    staged = _stage(settings, store, presign=make_presign(aws_conn))
    limit = {"aws": 16384, "gcp": 262144, "azure": 65535, "lambda": 16384}[provider]
    assert staged.limit_bytes == limit and staged.user_data_bytes <= limit
    assert "--serving" in staged.user_data and "@@" not in staged.user_data
    data = bootstrap.bundle(serving=True)
    names = set(tarfile.open(fileobj=io.BytesIO(data), mode="r:gz").getnames())
    listed = store.client.list_objects_v2(Bucket=BUCKET).get("Contents", [])
    if provider in ("aws", "lambda"):  # 16 KiB: the bundle inline would not fit
        inline = bootstrap.render(
            upload="x" * 600, ttl_minutes=30, bench_args=settings.suite_args(), context={}
        )
        assert len(inline.encode()) > limit
        assert staged.payload_uri == f"s3://{BUCKET}/gpu-benchmarks/payloads/0123456789abcdef0123.tar.gz"
        head = store.client.head_object(Bucket=BUCKET, Key=store.key("0123456789abcdef0123"))
        assert head["Metadata"]["sha256"] == staged.sha256 == bootstrap.sha256_hex(data)
        assert "X-Amz-Expires=1800" in staged.user_data  # a short-lived GET, not the TTL's
    else:  # GCP metadata and Azure customData hold it inline: nothing is uploaded
        assert staged.payload_uri is None and listed == []
    work = tmp_path / "work"
    work.mkdir()
    assert _run_payload_step(staged.user_data, work) == ""
    assert _tree(work) == names  # curl fetched it, the hash matched, tar unpacked it (or inline did)
    assert (work / "finops/gpubench/serving.py").read_text() == bootstrap._minify(
        (Path(payload.__file__).parent / "serving.py").read_text()
    )
    if provider == "aws":  # the unpacked package runs with no Airflow: its CLI parses
        code = "import sys, finops.gpubench.__main__ as m; print(m.__file__); sys.argv = ['x', '--help']; m.main()"
        proc = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            env={"PYTHONPATH": str(work), "PATH": os.environ["PATH"]},
            timeout=60,
        )
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.startswith(str(work)) and "--serving" in proc.stdout


def test_fetch_refuses_a_tampered_or_missing_bundle(store, aws_conn, tmp_path):
    staged = _stage(_settings("aws"), store, presign=make_presign(aws_conn))
    evil = io.BytesIO()
    with tarfile.open(fileobj=evil, mode="w:gz") as tar:
        info = tarfile.TarInfo("finops/gpubench/__main__.py")
        body = b"import os; os.system('echo owned')\n"
        info.size = len(body)
        tar.addfile(info, io.BytesIO(body))
    store.client.put_object(Bucket=BUCKET, Key=store.key("0123456789abcdef0123"), Body=evil.getvalue())
    work = tmp_path / "w1"
    work.mkdir()
    assert _run_payload_step(staged.user_data, work) == "payload SHA-256 mismatch: not run"
    assert _tree(work) == set()  # nothing unpacked, the download removed
    store.delete("0123456789abcdef0123")
    work = tmp_path / "w2"
    work.mkdir()
    assert _run_payload_step(staged.user_data, work) == "payload download failed"
    # the script turns that into its error document instead of running the suite
    assert re.search(r'if \[ -n "\$PAYLOAD_ERR" \]; then\n  printf \'\{"error"', staged.user_data)


def test_no_bucket_is_a_config_error_naming_the_key():
    elsewhere = {"results_base": "gs://bench/gpu"}
    aws = parse_settings(
        {
            "results_bucket": None,
            "targets": [
                {
                    "provider": "aws",
                    "region": "us-east-1",
                    "instance_type": "p5.48xlarge",
                    "image_id": "ami-1",
                    **elsewhere,
                }
            ],
        }
    )
    prepared = lifecycle.prepare(aws, aws.targets[0].model_dump() | {"key": aws.targets[0].key}, "run-1")
    with pytest.raises(
        ConfigError,
        match=r"benchmarks\.results_bucket is not set: the aws startup script is \d+ "
        r"bytes, over the 16384-byte",
    ):
        lifecycle.launch(prepared, aws, None, dry_run=True, wh=None, presign=None)
    # S3 results need the bucket too, and say so
    no_base = parse_settings(
        {
            "results_bucket": None,
            "targets": [
                {
                    "provider": "aws",
                    "region": "us-east-1",
                    "instance_type": "p5.48xlarge",
                    "image_id": "ami-1",
                }
            ],
        }
    )
    with pytest.raises(ConfigError, match=r"benchmarks\.results_bucket"):
        lifecycle.prepare(no_base, no_base.targets[0].model_dump() | {"key": no_base.targets[0].key}, "run-1")
    # GCP holds the whole script inline: no bucket needed
    gcp = _settings("gcp", results_bucket=None)
    t = gcp.targets[0].model_dump() | {"key": gcp.targets[0].key, **elsewhere}
    out = lifecycle.launch(lifecycle.prepare(gcp, t, "run-1"), gcp, None, dry_run=True, wh=None, presign=None)
    assert out["user_data_bytes"] > 16384  # bigger than EC2 would take, fine for GCP


def test_serving_switch_and_bench_args():
    assert _settings("aws").suite_args() == ["--device=cuda", "--serving"]
    assert _settings("aws", serving=False).suite_args() == ["--device=cuda"]
    assert _settings("aws", bench_args=["--serving", "--p99-ms=80"]).suite_args() == [
        "--device=cuda",
        "--serving",
        "--p99-ms=80",
    ]  # never twice
    assert payload.may_fetch(_settings("aws")) and not payload.may_fetch(_settings("gcp"))
    assert not payload.may_fetch(_settings("azure", serving=False))
    with pytest.raises(ValueError, match="not a hex SHA-256"):
        bootstrap.fetch_step("https://x", "abc")


def test_every_cleanup_path_deletes_the_bundle(bench_ec2, store, aws_conn, duckdb_wh, bench_alerts, tmp_path):
    """Launch (serving on, AWS) -> the user data EC2 holds fetches for real; teardown deletes the
    object; a failed launch deletes it; the reaper deletes an expired run's and sweeps old ones."""
    client, _ = bench_ec2
    settings = _settings("aws")
    launcher = AwsLauncher(client, settings.targets[0], max_running=4)
    t = settings.targets[0].model_dump() | {"key": settings.targets[0].key}

    def objects() -> list[str]:
        return sorted(o["Key"] for o in store.client.list_objects_v2(Bucket=BUCKET).get("Contents", []))

    def go(prepared):
        return lifecycle.launch(
            prepared,
            settings,
            launcher,
            dry_run=False,
            wh=duckdb_wh,
            presign=make_presign(aws_conn),
            payloads=store,
        )

    # a dry run uploads nothing, and says how the bundle would travel
    dry = lifecycle.launch(
        lifecycle.prepare(settings, t, "dry"), settings, None, dry_run=True, wh=duckdb_wh, presign=None
    )
    assert dry["user_data_bytes"] <= 16384 and objects() == []
    [(ev,)] = duckdb_wh.query(
        "SELECT evidence FROM policy_actions WHERE action = 'launch' AND dry_run = ?", [True]
    )
    assert json.loads(ev)["payload"] == "fetched" and json.loads(ev)["payload_uploaded"] is False

    prepared = lifecycle.prepare(settings, t, "run-1")
    bid = prepared["bench_run_id"]
    [iid] = go(prepared)["instance_ids"]
    ud = client.describe_instance_attribute(InstanceId=iid, Attribute="userData")["UserData"]["Value"]
    script = base64.b64decode(ud).decode()
    assert len(script.encode()) <= 16384 and "--serving" in script
    work = tmp_path / "instance"
    work.mkdir()
    assert _run_payload_step(script, work) == ""  # what EC2 holds fetches and verifies
    assert "finops/gpubench/serving.py" in _tree(work)
    assert objects() == [store.key(bid)]
    rep = lifecycle.terminate(
        prepared, launcher, dry_run=False, wh=duckdb_wh, poll_s=0.01, sleep=lambda s: None, payloads=store
    )
    assert rep.terminated == [iid] and not rep.errors and objects() == []

    # the launch call fails after creating the instance: instance and bundle both go
    def lost_reply(**kwargs):
        raise botocore.exceptions.ReadTimeoutError(endpoint_url="moto")

    client.meta.events.register("after-call.ec2.RunInstances", lost_reply)
    failed = lifecycle.prepare(settings, t, "run-2")
    with pytest.raises(LaunchError):
        go(failed)
    client.meta.events.unregister("after-call.ec2.RunInstances", lost_reply)
    assert objects() == []
    [(ev,)] = duckdb_wh.query(
        "SELECT evidence FROM policy_actions WHERE action = 'launch' AND resource_id = ?",
        [failed["bench_run_id"]],
    )
    assert json.loads(ev)["payload_cleanup"] == "deleted"

    # the reaper: an expired run's instance and bundle go; a live run's bundle stays until the sweep age
    old = lifecycle.prepare(settings, t, "old", now=datetime.now(UTC) - timedelta(hours=2))
    new = lifecycle.prepare(settings, t, "new")
    go(old)
    go(new)
    assert objects() == sorted([store.key(old["bench_run_id"]), store.key(new["bench_run_id"])])
    out = lifecycle.reap(
        [launcher],
        dry_run=False,
        wh=duckdb_wh,
        run_id="reaper-1",
        payloads=store,
        payload_max_age=timedelta(minutes=30),
    )
    assert len(out["terminated"]) == 1 and not out["errors"] and out["payloads_deleted"] == []
    assert objects() == [store.key(new["bench_run_id"])]
    swept = lifecycle.reap(
        [launcher],
        dry_run=False,
        wh=duckdb_wh,
        run_id="reaper-2",
        payloads=store,
        payload_max_age=timedelta(0),
        now=datetime.now(UTC) + timedelta(seconds=1),
    )
    assert swept["payloads_deleted"] == [store.key(new["bench_run_id"])] and objects() == []
