"""finops.yaml: the example parses; a bad file fails naming the key and the reason."""

from __future__ import annotations

import pytest

from finops.config import ConfigError, load_config, parse_config
from finops.paths import REPO_ROOT


def test_example_config_parses():
    cfg = load_config(REPO_ROOT / "include" / "config" / "finops.yaml")
    src = cfg.source("main-payer")
    assert src.bucket == "finops-demo-billing" and src.format == "cur2" and src.conn_id == "aws_default"
    assert cfg.warehouse.conn_id is None  # embedded DuckDB by default


def test_design_md_aws_shape():
    cfg = parse_config(
        {
            "sources": {
                "aws": [
                    {
                        "name": "main-payer",
                        "conn_id": "aws_default",
                        "bucket": "b",
                        "prefix": "exports/my-export/",
                        "format": "cur2",
                    }
                ]
            }
        }
    )
    assert cfg.sources.aws[0].prefix == "exports/my-export"


@pytest.mark.parametrize(
    "data, fragment",
    [
        (
            {"sources": {"aws": [{"name": "x", "bucket": "b", "prefix": "p", "format": "cur3"}]}},
            "sources.aws[0].format",
        ),
        ({"sources": {"aws": [{"name": "x", "prefix": "p"}]}}, "sources.aws[0].bucket: Field required"),
        ({"sources": {"aws": [{"name": "Bad Name!", "bucket": "b", "prefix": "p"}]}}, "sources.aws[0].name"),
        (
            {
                "sources": {
                    "gcp": [{"name": "g", "project": "p", "dataset": "d", "table": "t", "reload_days": 99}]
                }
            },
            "sources.gcp[0].reload_days",
        ),
        (
            {"warehouse": {"conn_id": "w", "colour": "blue"}},
            "warehouse.colour: Extra inputs are not permitted",
        ),
        (
            {
                "sources": {
                    "aws": [{"name": "x", "bucket": "b", "prefix": "p", "secret_access_key": "AKIA..."}]
                }
            },
            "sources.aws[0].secret_access_key: secrets are not allowed",
        ),
        (
            {"alerts": {"routes": [{"team": "ml", "webhook_url": "https://hooks.slack.com/x"}]}},
            "alerts.routes[0].webhook_url: secrets are not allowed",
        ),
        (["not", "a", "mapping"], "expected a mapping"),
    ],
)
def test_bad_config_names_key_and_reason(data, fragment):
    with pytest.raises(ConfigError) as e:
        parse_config(data, origin="finops.yaml")
    assert fragment in str(e.value), str(e.value)


@pytest.mark.parametrize(
    "data, fragment",
    [
        (
            {"warehouse": {"conn_id": "postgresql://finops:hunter2@db.internal/finops"}},
            "warehouse.conn_id: must be",
        ),
        (
            {
                "sources": {
                    "aws": [{"name": "x", "bucket": "b", "prefix": "p", "conn_id": "aws://AKIAX:hunter2@"}]
                }
            },
            "sources.aws[0].conn_id: must be",
        ),
        (
            {"prices": {"lambda": {"conn_id": "https://hunter2@cloud.lambda.ai"}}},
            "prices.lambda.conn_id: must be",
        ),
        (
            {
                "alerts": {
                    "routes": [
                        {"team": "ml", "slack_channel": "https://hooks.slack.com/services/T0/B0/hunter2"}
                    ]
                }
            },
            "alerts.routes[0].slack_channel: secrets are not allowed",
        ),
        (
            {"prices": {"azure": {"base_url": "https://svc:hunter2@prices.example.com/api"}}},
            "prices.azure.base_url: secrets are not allowed",
        ),
    ],
)
def test_secret_values_under_innocent_keys_are_refused_without_echoing_them(data, fragment):
    """Before, only secret-looking keys were refused: a connection URI given as conn_id or a
    Slack webhook URL as slack_channel was accepted, and the conn_id then went into the task log
    verbatim ("The conn_id `postgresql://finops:hunter2@...` isn't defined")."""
    with pytest.raises(ConfigError) as e:
        parse_config(data, origin="finops.yaml")
    assert fragment in str(e.value), str(e.value)
    assert "hunter2" not in str(e.value)


def test_conn_ids_in_airflow_spelling_are_accepted():
    cfg = parse_config(
        {
            "warehouse": {"conn_id": "finops_warehouse"},
            "sources": {"aws": [{"name": "x", "bucket": "b", "prefix": "p", "conn_id": "aws.prod-payer"}]},
            "alerts": {"routes": [{"slack_conn_id": "slack_ml", "slack_channel": "#ml-costs"}]},
            "prices": {"azure": {"base_url": "https://prices.azure.com/api/retail/prices"}},
        }
    )
    assert cfg.warehouse.conn_id == "finops_warehouse" and cfg.sources.aws[0].conn_id == "aws.prod-payer"


def test_duplicate_source_names_rejected():
    with pytest.raises(ConfigError, match="used twice"):
        parse_config(
            {
                "sources": {
                    "aws": [{"name": "a", "bucket": "b", "prefix": "p"}],
                    "lambda": [{"name": "a"}],
                }
            }
        )


def test_unknown_source_lists_configured(tmp_path):
    cfg = parse_config({"sources": {"aws": [{"name": "a", "bucket": "b", "prefix": "p"}]}})
    with pytest.raises(ConfigError, match="configured: a"):
        cfg.source("nope")


def test_invalid_yaml_and_missing_file(tmp_path):
    bad = tmp_path / "f.yaml"
    bad.write_text("sources: [unclosed")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(bad)
    with pytest.raises(ConfigError, match="not found"):
        load_config(tmp_path / "missing.yaml")
