"""Versioned migrations. Each module `mNNNN_<name>.py` defines VERSION (int), DESCRIPTION
and `statements(dialect) -> list[str]`. Applied in order, each in its own transaction,
recorded in `schema_migrations`.

Version ranges keep parallel work from colliding:
  1-99 core (focus_costs, load_log, quarantine)   100-199 prices / instance catalog
  200-299 policies / tag compliance               300-399 gpu benchmarks
  400-499 showback / anomalies / alerts           500-599 other billing sources (lambda lifetimes)
  600-699 ui helpers (views, indexes)     700-799 training jobs / attempts
  800-899 commitments                     900-999 reliability / operations
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Migration:
    version: int
    description: str
    statements: Callable[[str], list[str]]


def all_migrations() -> list[Migration]:
    out: list[Migration] = []
    for info in pkgutil.iter_modules(__path__):
        if not info.name.startswith("m"):
            continue
        mod = importlib.import_module(f"{__name__}.{info.name}")
        out.append(Migration(mod.VERSION, mod.DESCRIPTION, mod.statements))
    out.sort(key=lambda m: m.version)
    versions = [m.version for m in out]
    if len(versions) != len(set(versions)):
        raise RuntimeError(f"duplicate migration versions: {versions}")
    return out
