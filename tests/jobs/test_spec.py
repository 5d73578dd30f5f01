"""Job spec validation: every bad spec names the key and the reason; hostile strings never pass."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given, settings

from finops.jobs.spec import JobSpec, JobSpecError, parse_job_spec
from tests.fixtures.hostile import hostile_text


def _spec(**over) -> dict:
    base = {
        "name": "llm-finetune",
        "team": "research",
        "project": "chatbot",
        "run": {"module": "train.main", "args": ["--lr", "3e-4"], "image": "ghcr.io/acme/train:1.2"},
        "steps": 10_000,
        "step_profile": {
            "benchmark": "cuda-full",
            "measured": [{"gpu_model": "A10G", "precision": "amp_bf16", "step_ms": 180.0}],
        },
        "min_gpu_memory_gib": 40,
        "min_gpu_memory_gib_amp": 20,
        "precisions": ["fp32", "amp_bf16"],
        "priority": "normal",
        "deadline": "2026-12-01T00:00:00Z",
        "budget_usd": "250.50",
        "checkpoint_uri": "s3://ckpt-bucket/jobs/llm-finetune",
        "max_spot_preemptions": 2,
        "clouds": ["aws", "gcp"],
        "regions": ["us-east-1", "europe-west4"],
    }
    base.update(over)
    return base


def test_good_spec_parses_with_exact_budget():
    spec = parse_job_spec(_spec())
    assert isinstance(spec, JobSpec)
    assert spec.budget_usd == Decimal("250.50")
    assert spec.memory_needed_gib("fp32") == 40 and spec.memory_needed_gib("amp_bf16") == 20
    assert spec.step_profile.step_ms("a10g", "amp_bf16") == 180.0
    assert spec.step_profile.step_ms("A10G", "fp32") is None
    assert spec.tags() == {
        "finops-job": "llm-finetune",
        "finops-team": "research",
        "finops-project": "chatbot",
    }


def test_yaml_float_budget_keeps_the_written_decimal():
    assert parse_job_spec(_spec(budget_usd=12.3)).budget_usd == Decimal("12.3")


@pytest.mark.parametrize(
    ("over", "key", "reason"),
    [
        ({"steps": 0}, "steps", "greater than 0"),
        ({"priority": "urgent"}, "priority", "'critical', 'normal' or 'opportunistic'"),
        ({"precisions": ["fp8"]}, "precisions[0]", "'fp32', 'amp_bf16' or 'amp_fp16'"),
        ({"precisions": []}, "precisions", "at least 1"),
        ({"precisions": ["fp32", "fp32"]}, "precisions", "at most once"),
        ({"budget_usd": "-5"}, "budget_usd", "greater than 0"),
        ({"budget_usd": "nan"}, "budget_usd", ""),
        ({"deadline": "2026-12-01T00:00:00"}, "deadline", "timezone"),
        ({"checkpoint_uri": "relative/dir"}, "checkpoint_uri", "absolute local path"),
        ({"checkpoint_uri": "ftp://host/x"}, "checkpoint_uri", "scheme"),
        ({"checkpoint_uri": "s3://bucket/../etc"}, "checkpoint_uri", "'..'"),
        ({"checkpoint_uri": "/tmp//x"}, "checkpoint_uri", "segment"),
        ({"checkpoint_uri": "s3://B/x"}, "checkpoint_uri", "bucket"),
        ({"name": "Bad Name"}, "name", "a-z, 0-9"),
        ({"team": ""}, "team", "a-z, 0-9"),
        ({"regions": ["us east"]}, "regions", "region name"),
        ({"clouds": ["oracle"]}, "clouds[0]", "'aws'"),
        ({"max_spot_preemptions": -1}, "max_spot_preemptions", "greater than or equal to 0"),
        ({"run": {"module": "x", "command": ["y"]}}, "run", "exactly one"),
        ({"run": {}}, "run", "exactly one"),
        ({"run": {"module": "os; rm -rf /"}}, "run.module", "dotted Python module"),
        ({"run": {"command": []}}, "run.command", "program"),
        ({"run": {"command": ["python", "a\nb"]}}, "run.command", "control"),
        ({"run": {"module": "m", "image": "img:1 && curl evil"}}, "run.image", "image reference"),
        ({"step_profile": {}}, "step_profile", "benchmark"),
        (
            {"step_profile": {"measured": [{"gpu_model": "H100", "precision": "fp32", "step_ms": 0}]}},
            "step_profile.measured[0].step_ms",
            "greater than 0",
        ),
        ({"min_gpu_memory_gib_amp": 80}, "(root)", "cannot exceed"),
        ({"checkpoint_every_minutes": None}, "(root)", "checkpoint"),
        ({"surprise": 1}, "surprise", "Extra inputs"),
    ],
)
def test_bad_spec_names_key_and_reason(over, key, reason):
    with pytest.raises(JobSpecError) as e:
        parse_job_spec(_spec(**over), origin="jobs/llm.yaml")
    msg = str(e.value)
    assert msg.startswith(f"jobs/llm.yaml: {key}: "), msg
    assert reason in msg


def test_root_must_be_a_mapping():
    with pytest.raises(JobSpecError, match=r"job spec: \(root\): expected a mapping, got list"):
        parse_job_spec([1, 2])


@settings(max_examples=150, deadline=None)
@given(text=hostile_text())
def test_hostile_strings_never_reach_tags_or_paths(text):
    """Whatever passes validation is inside the tag / path alphabets; the rest fails cleanly."""
    for key in ("name", "team", "project"):
        try:
            spec = parse_job_spec(_spec(**{key: text}))
        except JobSpecError as e:
            assert key in str(e)
            continue
        value = getattr(spec, key)
        assert value.isascii() and all(c.isalnum() or c in "_-" for c in value) and len(value) <= 63
    try:
        spec = parse_job_spec(_spec(checkpoint_uri="s3://bucket/" + text))
    except JobSpecError as e:
        assert "checkpoint_uri" in str(e)
    else:
        assert ".." not in spec.checkpoint_uri.split("/") and spec.checkpoint_uri.isascii()
        assert not any(ord(c) < 32 for c in spec.checkpoint_uri)
