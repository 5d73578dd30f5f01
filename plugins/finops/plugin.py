"""The Airflow plugin: registered through the `airflow.plugins` entry point (pyproject) only.
Never point `[core] plugins_folder` at the repo's plugins/: Airflow would exec every module
there as a top-level file (docs/deploy.md).

Kept cheap to import: the UI app is built lazily by finops.ui.app when it exists."""

from __future__ import annotations

import logging

from airflow.plugins_manager import AirflowPlugin

from finops.periods import default_periods, period_of, shift

log = logging.getLogger(__name__)


def _fastapi_apps() -> list[dict]:
    try:
        from finops.ui.app import plugin_apps
    except ImportError:  # UI not installed / not built yet: the rest of the plugin still works
        return []
    return plugin_apps()


def _external_views() -> list[dict]:
    try:
        from finops.ui.app import plugin_external_views
    except ImportError:
        return []
    return plugin_external_views()


class FinOpsPlugin(AirflowPlugin):
    name = "finops"
    macros = [period_of, shift, default_periods]
    fastapi_apps = _fastapi_apps()
    external_views = _external_views()
