"""finops.yaml `jobs:` (providers with their connections, default checkpoint URI, caps) and the
`@training_job` decorator: a bad key fails naming it; a decorated function becomes a deferrable
TrainingJobOperator task that takes its provider, checkpoint URI and caps from the config."""

from __future__ import annotations

import json
import sys
from decimal import Decimal
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from airflow.sdk import DAG
from airflow.sdk.exceptions import TaskDeferred

from finops.config import ConfigError, parse_config
from finops.jobs.decorator import training_job
from finops.jobs.executor import provider_from_config
from finops.jobs.operator import TrainingJobOperator
from finops.jobs.settings import JobsSettings, parse_jobs_settings
from finops.jobs.spec import JobSpecError
from finops.jobs.store import JobStore
from finops.warehouse import connect

REPO = Path(__file__).resolve().parents[2]
SLEEPER = [sys.executable, "-c", "import time; time.sleep(120)"]


@pytest.mark.parametrize(
    ("jobs", "message"),
    [
        (
            {"providers": {"box": {"kind": "local", "work_dir": "/d", "regon": "x"}}},
            r"jobs\.providers\.box\..*regon",
        ),
        ({"providers": {"box": {"kind": "k8s"}}}, r"jobs\.providers\.box: .*'local', 'aws', 'gcp', 'azure'"),
        (
            {"providers": {"box": {"kind": "aws", "image_id": "ami-1"}}},
            r"jobs\.providers\.box\.aws\.region: Field required",
        ),
        ({"providers": {"Bad Name": {"kind": "local", "work_dir": "/d"}}}, r"jobs\.providers: .*'Bad Name'"),
        (
            {"providers": {"box": {"kind": "local", "work_dir": "rel"}}},
            r"jobs\.providers\.box\.local\.work_dir: .*absolute",
        ),
        ({"default_provider": "nope"}, r"jobs: .*default_provider 'nope' is not in providers"),
        ({"default_checkpoint_uri": "ftp://b/x"}, r"jobs\.default_checkpoint_uri: .*scheme"),
        ({"default_checkpoint_uri": "s3://bucket/../x"}, r"jobs\.default_checkpoint_uri: .*'\.\.'"),
        ({"caps": {"max_budget_usd": 0}}, r"jobs\.caps\.max_budget_usd: .*greater than 0"),
        ({"caps": {"max_budgett": 5}}, r"jobs\.caps\.max_budgett: Extra inputs"),
        ({"dry_rn": False}, r"jobs\.dry_rn: Extra inputs"),
        (
            {"providers": {"a": {"kind": "lambda", "ssh_key_name": "k", "conn_id": "https://u:p@h"}}},
            r"jobs\.providers\.a\.conn_id: must be the id of an Airflow connection",
        ),
    ],
)
def test_a_bad_jobs_section_fails_naming_the_key(jobs, message):
    with pytest.raises(ConfigError, match=message):
        parse_config({"jobs": jobs})


def test_providers_defaults_and_caps_apply_to_a_job():
    s = parse_config({"jobs": {
        "providers": {
            "box": {"kind": "local", "work_dir": "/data/jobs"},
            "aws-main": {"kind": "aws", "conn_id": "aws_jobs", "region": "us-east-1", "image_id": "ami-0abc"},
        },
        "default_provider": "aws-main", "default_checkpoint_uri": "s3://ckpts/jobs",
        "caps": {"max_budget_usd": 12.30, "max_spot_preemptions": 2, "max_attempts": 5},
    }}).jobs  # fmt: skip
    assert s.caps.max_budget_usd == Decimal("12.30")  # the YAML float, exact
    assert s.provider_config(None) == {"kind": "aws", "conn_id": "aws_jobs", "region": "us-east-1",
                                       "image_id": "ami-0abc", "python": "python3"}  # fmt: skip
    assert s.provider_config("box")["work_dir"] == "/data/jobs"
    assert s.provider_config({"kind": "local", "work_dir": "/x"}) == {"kind": "local", "work_dir": "/x"}
    with pytest.raises(ConfigError, match="no provider named 'gpu'; configured: aws-main, box"):
        s.provider_config("gpu")
    assert provider_from_config(s.provider_config("box")).config()["work_dir"] == "/data/jobs"

    filled = s.apply({"name": "n"}, "job-0123")
    assert filled == {"name": "n", "checkpoint_uri": "s3://ckpts/jobs/job-0123", "budget_usd": Decimal("12.30"),
                      "max_spot_preemptions": 2}  # fmt: skip
    own = s.apply({"checkpoint_uri": "/mine", "budget_usd": "5", "max_spot_preemptions": 1}, "j")
    assert own == {"checkpoint_uri": "/mine", "budget_usd": "5", "max_spot_preemptions": 1}
    with pytest.raises(JobSpecError, match=r"budget_usd: 12.31 is over jobs.caps.max_budget_usd \(12.3\)"):
        s.apply({"budget_usd": 12.31}, "j")
    with pytest.raises(JobSpecError, match=r"max_spot_preemptions: 3 is over jobs.caps.max_spot_preemptions"):
        s.apply({"max_spot_preemptions": 3}, "j")
    assert parse_jobs_settings(None) == JobsSettings() and JobsSettings().provider_config(None) is None


@pytest.fixture
def jobs_config(tmp_path, monkeypatch, finops_home):
    """finops.yaml = the project's file plus a `jobs:` section with a local provider."""
    data = yaml.safe_load((REPO / "include" / "config" / "finops.yaml").read_text())
    data["jobs"] = {
        "providers": {"box": {"kind": "local", "work_dir": str(tmp_path / "work")}},
        "default_provider": "box",
        "default_checkpoint_uri": str(tmp_path / "ckpts"),
        "caps": {"max_budget_usd": 50},
        "poll_s": 1,
    }
    path = tmp_path / "finops.yaml"
    path.write_text(yaml.safe_dump(data))
    monkeypatch.setenv("FINOPS_CONFIG", str(path))
    return tmp_path


CANDS = [{"provider": "local", "region": "here", "instance_type": "cpu-box", "pricing_model": "ondemand",
          "price_per_hour": "3", "gpu_model": "CPU", "gpu_memory_gib": 8}]  # fmt: skip
BASE = {"team": "ml", "project": "vision", "steps": 40, "checkpoint_every_steps": 2,
        "step_profile": {"measured": [{"gpu_model": "CPU", "precision": "fp32", "step_ms": 1}]}}  # fmt: skip


@training_job(candidates=CANDS, spec=BASE)
def resnet(lr: float) -> dict:
    return {"name": "resnet", "run": {"command": [*SLEEPER, f"--lr={lr}"]}}


def _ctx(run_id="manual__1"):
    return {"ti": SimpleNamespace(dag_id="dag", run_id=run_id, task_id="resnet", map_index=-1, try_number=1)}


def test_decorated_task_plans_with_the_config_then_launches_and_is_torn_down(jobs_config):
    with DAG("train_dag", schedule=None):
        out = resnet(lr=0.1)
    op = out.operator
    assert isinstance(op, TrainingJobOperator) and op.task_id == "resnet"
    assert op.op_kwargs == {"lr": 0.1} and "op_kwargs" in op.template_fields and "spec" in op.template_fields

    dry = op.execute(_ctx())  # jobs.dry_run defaults to true: plan only
    assert dry["state"] == "dry_run" and dry["candidate"] == "local/here/cpu-box ondemand"
    wh = connect()
    try:
        spec = json.loads(JobStore(wh).get_job(dry["job_id"]).spec_json)
    finally:
        wh.close()
    assert spec["name"] == "resnet" and spec["team"] == "ml" and spec["run"]["command"][-1] == "--lr=0.1"
    assert spec["checkpoint_uri"] == str(jobs_config / "ckpts" / dry["job_id"])  # per job, from the config
    assert Decimal(spec["budget_usd"]) == Decimal(50)  # the cap is the budget of a job without one

    op.dry_run_flag = False  # another run of the DAG, for real
    with pytest.raises(TaskDeferred) as d:
        op.execute(_ctx("manual__2"))
    assert d.value.trigger.poll_s == 1.0
    box = provider_from_config({"kind": "local", "work_dir": str(jobs_config / "work")})
    ((_, tags),) = box.find()  # launched on the configured provider, tagged
    assert tags["finops-job-id"] != dry["job_id"] and tags["finops-attempt"] == "1"
    assert tags["finops-run-id"] == "manual__2" and tags["finops-job"] == "resnet"
    op.on_kill()
    assert box.find() == []


def test_decorated_spec_over_the_cap_fails_naming_it(jobs_config):
    @training_job(candidates=CANDS, spec={**BASE, "budget_usd": "75"})
    def big() -> dict:
        return {"name": "big", "run": {"command": SLEEPER}}

    with DAG("train_dag2", schedule=None):
        op = big().operator
    with pytest.raises(
        JobSpecError, match=r"task big: job spec: budget_usd: 75 is over jobs.caps.max_budget_usd"
    ):
        op.execute(_ctx())
