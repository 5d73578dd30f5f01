"""Where things live on disk: everything under FINOPS_HOME (default ./.finops)."""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

_UNSAFE = re.compile(r"[^A-Za-z0-9._=-]+")


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


def path_segment(name: object, max_len: int = 100) -> str:
    """One folder or file name made from a name someone else chose: a manifest's executionId /
    assemblyId, an export run id, a blob name, a team tag, a load id. The one rule for all.

    A plain ASCII name (letters, digits, . _ = -, not starting with . or -) is kept as it is;
    anything else is cleaned and gets a short hash of the exact name before its extension,
    so 'a/b' and 'a_b' never share a folder and one name always maps to the same folder.
    Never '', '.', '..', a separator, NUL, a control or non-ASCII character; at most
    max_len + 11 characters. Never raises: quarantine and cleanup paths use it too."""
    text = name if isinstance(name, str) else str(name)
    cleaned = _UNSAFE.sub("_", text).lstrip("._-").rstrip(".")[:max_len]
    if cleaned == text and cleaned:
        return cleaned
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:10]
    stem, dot, ext = cleaned.partition(".")
    return f"{stem or 'x'}-{digest}{dot}{ext}"
