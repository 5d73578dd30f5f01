"""The billing DAGs' DeadlineAlert (finops.alerts.deadline): the interval read from finops.yaml,
the DAG as Airflow parses and serializes it, and the callback run by Airflow's own triggerer code
(CallbackTrigger) delivering through a real SMTP server on loopback."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path

import pytest
import yaml

from finops.alerts.deadline import deadline_interval
from finops.exceptions import ConfigError

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("spec", "schedule", "want"),
    [
        ("10:00", "15 6 * * *", timedelta(hours=3, minutes=45)),
        ("06:15", "15 6 * * *", timedelta(days=1)),  # the same time: the next day's
        ("05:00", "15 6 * * *", timedelta(hours=22, minutes=45)),  # earlier than the run: the next morning
        ("45m", "5 * * * *", timedelta(minutes=45)),
        ("1h30m", "15 6 * * *", timedelta(hours=1, minutes=30)),
        ("48h", None, timedelta(days=2)),
    ],
)
def test_deadline_interval(spec, schedule, want):
    assert deadline_interval(spec, schedule) == want


@pytest.mark.parametrize(
    ("spec", "schedule", "says"),
    [
        ("10:00", "5 * * * *", "needs a daily schedule"),
        ("10:00", "@daily", "needs a daily schedule"),
        ("25:00", "15 6 * * *", "neither a UTC time"),
        ("soon", "15 6 * * *", "neither a UTC time"),
        ("0m", "15 6 * * *", "more than 0"),
        ("49h", "15 6 * * *", "at most"),
    ],
)
def test_bad_deadlines_name_the_key(spec, schedule, says):
    with pytest.raises(ConfigError, match=says) as e:
        deadline_interval(spec, schedule, "alerts.billing_deadlines.aws")
    assert str(e.value).startswith("alerts.billing_deadlines.aws: ")


def _config(tmp_path, monkeypatch, alerts: dict) -> None:
    cfg = yaml.safe_load((REPO / "include" / "config" / "finops.yaml").read_text())
    cfg["alerts"] = alerts
    path = tmp_path / "finops.yaml"
    path.write_text(yaml.safe_dump(cfg))
    monkeypatch.setenv("FINOPS_CONFIG", str(path))


def _bag(name: str):
    from airflow.dag_processing.dagbag import DagBag

    return DagBag(dag_folder=str(REPO / "dags" / f"{name}.py"))


def test_billing_dag_carries_the_configured_deadline(tmp_path, monkeypatch):
    from airflow.sdk.definitions.deadline import DagRunLogicalDateDeadline
    from airflow.serialization.decoders import decode_deadline_alert
    from airflow.serialization.encoders import encode_deadline_alert

    _config(tmp_path, monkeypatch, {"routes": [], "billing_deadlines": {"aws": "10:00"}})
    bag = _bag("finops_billing_aws")
    assert not bag.import_errors, bag.import_errors
    (alert,) = bag.dags["finops_billing_aws"].deadline
    assert isinstance(alert.reference, DagRunLogicalDateDeadline)
    assert alert.interval == timedelta(hours=3, minutes=45)  # 06:15 run, due 10:00 UTC
    # what the scheduler stores and reads back
    back = decode_deadline_alert(encode_deadline_alert(alert))
    assert back.interval == alert.interval
    assert back.callback.path == "finops.alerts.deadline.billing_load_late"
    assert back.callback.kwargs == {"provider": "aws", "due": "10:00"}

    other = _bag("finops_billing_gcp")
    assert not other.import_errors and not other.dags["finops_billing_gcp"].deadline  # none configured


def test_a_time_of_day_on_the_hourly_dag_is_an_import_error_naming_the_key(tmp_path, monkeypatch):
    _config(tmp_path, monkeypatch, {"routes": [], "billing_deadlines": {"lambda": "10:00"}})
    bag = _bag("finops_billing_lambda")
    (err,) = bag.import_errors.values()
    assert "alerts.billing_deadlines.lambda" in err and "daily schedule" in err


def test_missed_deadline_reaches_the_routes_through_airflows_callback_trigger(
    tmp_path, monkeypatch, alert_smtp
):
    from airflow.triggers.callback import CallbackTrigger

    _config(
        tmp_path,
        monkeypatch,
        {
            "default_route": {"email_conn_id": alert_smtp.conn_id, "email_to": ["finops@example.com"]},
            "billing_deadlines": {"aws": "10:00"},
        },
    )
    from finops.alerts.deadline import billing_deadline

    alert = billing_deadline("aws", "15 6 * * *")
    assert alert is not None
    # the context Airflow's Deadline.handle_miss puts into the callback's kwargs
    context = {
        "dag_run": {
            "dag_id": "finops_billing_aws",
            "run_id": "scheduled__2026-11-25T06:15:00+00:00",
            "logical_date": "2026-11-25T06:15:00Z",
            "state": "running",
        },
        "deadline": {"id": "d-1", "deadline_time": "2026-11-25T10:00:00Z"},
    }
    trigger = CallbackTrigger(alert.callback.path, {**alert.callback.kwargs, "context": context})

    async def events():
        return [e.payload async for e in trigger.run()]

    states = [p["state"] for p in asyncio.run(events())]
    assert states == ["running", "success"], states
    (msg,) = alert_smtp.messages
    assert msg["Subject"] == "[finops warning] Billing load for aws has not landed by 10:00"
    html = msg.get_body(("html",)).get_content()
    assert "scheduled__2026-11-25T06:15:00+00:00" in html and "2026-11-25T10:00:00Z" in html
