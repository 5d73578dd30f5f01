"""No Docker engine here: check docker-compose.yaml parses, has the Airflow 3 CeleryExecutor
topology, and that everything it refers to exists in the repo."""

from __future__ import annotations

from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
TOPOLOGY = {"postgres", "redis", "airflow-apiserver", "airflow-scheduler", "airflow-dag-processor",
            "airflow-triggerer", "airflow-worker", "airflow-init"}


def _compose() -> dict:
    return yaml.safe_load((REPO / "docker-compose.yaml").read_text())


def test_services_and_commands():
    c = _compose()
    assert TOPOLOGY <= set(c["services"]), set(c["services"])
    cmds = {name: svc.get("command") for name, svc in c["services"].items()}
    assert cmds["airflow-apiserver"] == "api-server"
    assert cmds["airflow-scheduler"] == "scheduler"
    assert cmds["airflow-dag-processor"] == "dag-processor"
    assert cmds["airflow-triggerer"] == "triggerer"
    assert cmds["airflow-worker"] == "celery worker"


def test_celery_executor_wiring():
    c = _compose()
    env = c["services"]["airflow-worker"]["environment"]
    assert env["AIRFLOW__CORE__EXECUTOR"] == "CeleryExecutor"
    assert env["AIRFLOW__CELERY__BROKER_URL"].startswith("redis://")
    assert env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"].startswith("postgresql")
    # Every Airflow service is built from this repo's Dockerfile with the package installed.
    for name in TOPOLOGY - {"postgres", "redis"}:
        assert c["services"][name]["build"] == ".", name


def test_referenced_paths_exist():
    c = _compose()
    assert (REPO / "Dockerfile").exists()
    for name, svc in c["services"].items():
        for vol in svc.get("volumes", []):
            host = vol.split(":")[0]
            if host.startswith("./") and host != "./logs":  # logs/ is created at run time
                assert (REPO / host).exists(), f"{name}: {host} missing"
    text = (REPO / "Dockerfile").read_text()
    for line in text.splitlines():
        if line.startswith("COPY"):
            for part in line.split()[1:-1]:
                if not part.startswith("--"):
                    assert (REPO / part).exists(), f"Dockerfile COPY source {part} missing"


def test_no_secrets_in_compose_beyond_local_defaults():
    text = (REPO / "docker-compose.yaml").read_text()
    assert "AKIA" not in text and "xoxb-" not in text and "hooks.slack.com" not in text


def test_pools_created_match_the_pools_the_dags_use():
    c = _compose()
    env = c["x-airflow-common"]["environment"]
    init = "\n".join(c["services"]["airflow-init"]["command"])
    for var, pool in env.items():
        if var.startswith(("FINOPS_BILLING_POOL", "FINOPS_PRICES_POOL")):
            assert f"airflow pools set {pool} " in init, f"{var}={pool} is never created"
