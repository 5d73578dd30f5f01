"""The in-process emulators share the process with the code under test (the demo, the test
workers): starting one must leave the process's logging as it found it."""

from __future__ import annotations

import logging

import structlog

from finops.alerts.events import AlertEvent
from finops.alerts.slack import send_slack
from finops.demo.emulators import bigquery_emulator


def test_bigquery_emulator_leaves_logging_as_it_found_it(alert_slack):
    """bqemulator's start calls structlog.configure() with structlog's own filtering logger
    (no stdlib `.level`) and logging.basicConfig(force=True). Every Airflow hook's `.log` is a
    structlog logger, and slack_sdk's WebhookClient reads `logger.level`: after a GCP test in
    the same worker, every Slack alert failed ('BoundLoggerFilteringAtWarning' object has no
    attribute 'level') and the anomaly DAG sat out its retries."""
    alert_slack.server.expect_request(alert_slack.path, method="POST").respond_with_data("ok")
    before = structlog.get_config()
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level

    with bigquery_emulator():
        assert structlog.get_config() == before
        assert (list(root.handlers), root.level) == (handlers, level)
        send_slack(AlertEvent(kind="test", title="sent while the emulator runs"), alert_slack.conn_id)

    assert [p["text"] for p in alert_slack.payloads()] == ["[warning] sent while the emulator runs"]


def test_demo_quiet_logging_keeps_what_hooks_read(alert_slack):
    """`finops demo` mutes structlog to WARNING in its own process; a hook's logger must still
    look like a stdlib one to client libraries (slack_sdk reads `.level`)."""
    from airflow.providers.slack.hooks.slack_webhook import SlackWebhookHook

    from finops.demo.emulators import process_logging_kept
    from finops.demo.run import NOISY_LOGGERS, quiet_logging

    alert_slack.server.expect_request(alert_slack.path, method="POST").respond_with_data("ok")
    levels = {name: logging.getLogger(name).level for name in (*NOISY_LOGGERS, "airflow")}
    try:
        with process_logging_kept():
            quiet_logging()
            assert SlackWebhookHook(slack_webhook_conn_id=alert_slack.conn_id).log.level == logging.WARNING
            send_slack(AlertEvent(kind="test", title="sent by a quiet demo"), alert_slack.conn_id)
    finally:
        for name, level in levels.items():
            logging.getLogger(name).setLevel(level)
    assert len(alert_slack.payloads()) == 1
