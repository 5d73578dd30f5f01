"""Where things live on disk: everything under FINOPS_HOME (default ./.finops)."""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]


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
