"""Where things live on disk: everything under FINOPS_HOME (default ./.finops)."""

from __future__ import annotations

import os
from pathlib import Path


def _project_root() -> Path:
    """The folder holding include/ (config, policies, allocation rules, bench bootstrap) and
    dags/, against which their relative paths resolve. From a source checkout (editable install,
    plugins/ on sys.path) it is the checkout. An installed wheel (the Docker image) sits in
    site-packages, and two levels up is .../lib/python3.11, not the project: there it is
    AIRFLOW_HOME (default ~/airflow), where docker-compose.yaml mounts include/ and dags/."""
    checkout = Path(__file__).resolve().parents[2]
    if (checkout / "include").is_dir():
        return checkout
    home = Path(os.environ.get("AIRFLOW_HOME") or "~/airflow").expanduser().resolve()
    return home if (home / "include").is_dir() else checkout


REPO_ROOT = _project_root()


def finops_home() -> Path:
    home = Path(os.environ.get("FINOPS_HOME", "./.finops")).expanduser().resolve()
    home.mkdir(parents=True, exist_ok=True)
    return home


def subdir(name: str) -> Path:
    """A named folder under FINOPS_HOME (raw, quarantine, reports, staging, ...), created on demand."""
    p = finops_home() / name
    p.mkdir(parents=True, exist_ok=True)
    return p


def warehouse_path() -> Path:
    return finops_home() / "warehouse.duckdb"


def config_path() -> Path:
    default = REPO_ROOT / "include" / "config" / "finops.yaml"
    return Path(os.environ.get("FINOPS_CONFIG", str(default))).expanduser()


def include_dir() -> Path:
    return REPO_ROOT / "include"
