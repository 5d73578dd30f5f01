"""One path-segment rule for every name a provider or a tag chooses; an AWS manifest whose
executionId is '.' or '..' stays inside its period folder and removes no other snapshot."""

from __future__ import annotations

import json

import pytest
from hypothesis import given

from finops.paths import path_segment
from tests.fixtures.hostile import hostile_text


@pytest.mark.parametrize(
    "name",
    [
        ".",
        "..",
        "",
        "a/b",
        "../x",
        "..\\x",
        "a\x00b",
        "/etc/passwd",
        "-rf",
        ".hidden",
        "x" * 500,
        "ünï",
        "a\nb",
        "C:\\x",
        "run 1.csv",
    ],
)
def test_hostile_names_become_one_plain_segment(name):
    seg = path_segment(name)
    assert seg not in ("", ".", "..") and "/" not in seg and "\\" not in seg and "\x00" not in seg
    assert seg.isascii() and seg.isprintable() and not seg.startswith((".", "-")) and len(seg) <= 111


def test_plain_names_are_kept_and_rewritten_ones_keep_their_extension():
    assert path_segment("part_0_0001.csv.gz") == path_segment("part_0_0001.csv.gz") == "part_0_0001.csv.gz"
    assert path_segment("20260101T000000Z-abc=1") == "20260101T000000Z-abc=1"
    assert path_segment("run 1.csv").endswith(".csv")
    assert path_segment("a/b") != path_segment("a_b")


@given(a=hostile_text(6), b=hostile_text(6))
def test_property_segments_are_safe_stable_and_distinct(a, b, tmp_path_factory):
    sa, sb = path_segment(a), path_segment(b)
    assert sa == path_segment(a)  # stable: the same id finds the same folder on the next run
    assert (sa == sb) == (a == b) or len(a) > 100 or len(b) > 100
    root = tmp_path_factory.getbasetemp() / "segments"
    root.mkdir(exist_ok=True)
    p = root / sa
    assert p.resolve().parent == root.resolve() and p.name == sa


PREFIX = "exports/finops-export"


@pytest.mark.parametrize("execution_id", [".", "..", "../2025-02", "a/../../x", "\x00", ""])
def test_manifest_execution_id_cannot_leave_the_period_folder(
    awsb_bucket, awsb_source, awsb_deliver, finops_home, execution_id
):
    from finops.demo.cur_generator import GenSpec
    from finops.sources import aws_cur

    other = awsb_deliver(GenSpec("2025-02", rows=50, seed=2))
    kept = aws_cur.fetch_batch(awsb_source(), "2025-02", client=awsb_bucket.client)
    d = awsb_deliver(GenSpec("2025-01", rows=50, seed=1))
    key = f"{PREFIX}/{d.manifest_key}"
    manifest = json.loads(awsb_bucket.client.get_object(Bucket=awsb_bucket.name, Key=key)["Body"].read())
    manifest["executionId"] = execution_id
    manifest.pop("assemblyId", None)
    awsb_bucket.client.put_object(Bucket=awsb_bucket.name, Key=key, Body=json.dumps(manifest).encode())
    batch = aws_cur.fetch_batch(awsb_source(), "2025-01", client=awsb_bucket.client)
    period_dir = finops_home / "raw" / "main-payer" / "2025-01"
    assert batch is not None and batch.files
    for f in batch.files:
        assert f.resolve().parent.parent == period_dir.resolve(), f
    assert kept is not None and other is not None and all(f.exists() for f in kept.files)
    assert sorted(p.name for p in (finops_home / "raw" / "main-payer").iterdir()) == ["2025-01", "2025-02"]
