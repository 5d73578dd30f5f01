"""The demo's finops.yaml: the configured file (FINOPS_CONFIG, default include/config/finops.yaml)
plus the sections the later stages need, written to FINOPS_HOME/demo/finops.yaml, which the
demo's DAG runs and `make ui` read. Credentials stay connections (AIRFLOW_CONN_*), pointing at
the local endpoints while the demo runs."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

from finops.demo.price_apis import DEMO_GCP_PROJECT

SLACK_CONN, SMTP_CONN, GCP_PRICES_CONN = "demo_slack", "demo_smtp", "demo_gcp_prices"
AWS_PRICES_CONN = "demo_aws_prices"  # finops.demo.aws_price_apis (and moto for the rest of EC2)
ALERT_TO = ["finops-team@example.com"]


def demo_config_path(home: Path) -> Path:
    return home / "demo" / "finops.yaml"


def demo_sections(azure_prices_url: str) -> dict[str, Any]:
    """Alerts to the local Slack endpoint and SMTP server (the default route: every team's
    alerts and every failed task land there); prices from the local fakes (finops.demo.price_apis,
    finops.demo.aws_price_apis: moto serves neither the Pricing API nor real spot history).
    AWS: one region, the demo CUR's families, no placement scores (moto has no such call), and
    the Capacity Block offerings of p5.48xlarge (described, never bought)."""
    return {
        "alerts": {
            "routes": [],
            "default_route": {"slack_conn_id": SLACK_CONN, "email_conn_id": SMTP_CONN, "email_to": ALERT_TO},
        },
        "prices": {
            "aws": {
                "conn_id": AWS_PRICES_CONN,
                "regions": ["us-east-1"],
                "instance_families": ["p5", "p4d", "g5"],
                "lookback_days": 7,
                "placement_scores": False,
                "capacity_blocks": {"instance_types": ["p5.48xlarge"], "duration_hours": 24},
            },
            "azure": {"base_url": azure_prices_url, "regions": ["eastus", "westus2"]},
            # the connection's host serves the Compute API too: specs from machineTypes, not the table
            "gcp": {
                "conn_id": GCP_PRICES_CONN,
                "regions": ["us-central1", "us-east4"],
                "project": DEMO_GCP_PROJECT,
            },
            "http": {"backoff_base_s": 0.05},
        },
    }


def write_demo_config(home: Path, azure_prices_url: str) -> Path:
    """Write the demo's config and point FINOPS_CONFIG (this process and its DAG runs) at it."""
    from finops.paths import config_path

    base_path = config_path()
    path = demo_config_path(home)
    base: dict[str, Any] = {}
    if base_path.resolve() != path.resolve():
        base = yaml.safe_load(base_path.read_text()) or {}
    elif path.exists():
        base = yaml.safe_load(path.read_text()) or {}
    base.update(demo_sections(azure_prices_url))
    if not Path(str(base.get("policies_dir", "include/policies"))).is_absolute():
        from finops.paths import REPO_ROOT

        base["policies_dir"] = str(REPO_ROOT / base.get("policies_dir", "include/policies"))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "# Written by `finops demo` from "
        + str(base_path)
        + " plus the demo's sections.\n"
        + yaml.safe_dump(base, sort_keys=False)
    )
    os.environ["FINOPS_CONFIG"] = str(path)  # get_config() re-reads on a new path
    return path
