"""Batch validation (GX Core suite from the FOCUS schema + money rules) and quarantine.

Public API, imported lazily so `import finops.quality` stays cheap (GX costs ~13 s to import
and is only loaded inside `validate_staging`):

    validate_staging(staging_files, *, source, billing_period, raw_billed_total) -> ValidationReport
    quarantine_batch(*, source, billing_period, load_id, raw_files, report=None, error=None) -> Path
    reconcile(focus_billed_total, raw_billed_total) -> str | None
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_EXPORTS = {
    "ValidationReport": "finops.quality.report",
    "validate_staging": "finops.quality.validate",
    "validate_relation": "finops.quality.validate",
    "quarantine_batch": "finops.quality.quarantine",
    "quarantine_dir": "finops.quality.quarantine",
    "diagnose": "finops.quality.quarantine_report",
    "reconcile": "finops.quality.reconciliation",
    "build_rules": "finops.quality.rules",
    "Rule": "finops.quality.rules",
    "ISO_4217": "finops.quality.currencies",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'finops.quality' has no attribute {name!r}")
