"""The benchmark result document, as a versioned JSON Schema (draft 2020-12).

Standalone (stdlib only): the suite stamps SCHEMA_VERSION into what it writes; the collector
validates with `validate()` (uses `jsonschema`, present wherever Airflow is) before storing.
Bump SCHEMA_VERSION on any incompatible change and keep reading the old one in store.py.
The `serving` key (the serving matrix, serving_schema.py) is optional: adding it was compatible,
documents without it stay valid version-1 documents.
"""

from __future__ import annotations

from typing import Any

SCHEMA_VERSION = 1

METRIC_UNITS = {
    "matmul_tflops": "TFLOPS",
    "device_copy_bandwidth": "GB/s",
    "h2d_bandwidth_pinned": "GB/s",
    "d2h_bandwidth_pinned": "GB/s",
    "h2d_bandwidth_pageable": "GB/s",
    "d2h_bandwidth_pageable": "GB/s",
    "train_samples_per_s": "samples/s",
    "train_step_time": "ms",
    "train_peak_memory": "bytes",
    "train_amp_speedup": "x",
    "train_loss_rel_gap": "ratio",
}
DTYPES = ["fp32", "tf32", "fp16", "bf16", "fp8", "amp_bf16", "amp_fp16"]

_METRIC = {
    "type": "object",
    "required": ["metric", "dtype", "value", "unit", "section"],
    "properties": {
        "metric": {"enum": sorted(METRIC_UNITS)},
        "dtype": {"enum": [*DTYPES, None]},
        "value": {"type": "number"},
        "unit": {"type": "string"},
        "section": {"enum": ["matmul", "memory", "transfer", "training"]},
        "details": {"type": "object"},
    },
}

_SECTION = {
    "type": "object",
    "required": ["status", "seconds", "budget_s"],
    "properties": {
        "status": {"enum": ["ok", "skipped", "error"]},
        "seconds": {"type": "number", "minimum": 0},
        "budget_s": {"type": "number", "minimum": 0},
        "error": {"type": "string"},
        "details": {"type": "object"},
    },
}

RESULT_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": f"https://airflow-finops/schemas/gpu-benchmark/v{SCHEMA_VERSION}.json",
    "title": "finops.bench result",
    "type": "object",
    "required": [
        "schema_version",
        "suite",
        "profile",
        "quick",
        "started_at",
        "finished_at",
        "duration_s",
        "context",
        "device",
        "results",
        "sections",
    ],
    "properties": {
        "schema_version": {"const": SCHEMA_VERSION},
        # the result format's id, older than the package name: stored documents keep it
        "suite": {"const": "finops.bench"},
        "profile": {"type": "string"},
        "quick": {"type": "boolean"},
        "started_at": {"type": "string", "format": "date-time"},
        "finished_at": {"type": "string", "format": "date-time"},
        "duration_s": {"type": "number", "minimum": 0},
        "context": {"type": "object", "additionalProperties": {"type": "string"}},
        "device": {
            "type": "object",
            "required": ["type", "name", "count", "torch_version"],
            "properties": {
                "type": {"enum": ["cuda", "cpu"]},
                "name": {"type": ["string", "null"]},
                "count": {"type": "integer", "minimum": 0},
                "memory_bytes": {"type": ["integer", "null"]},
                "compute_capability": {"type": ["string", "null"], "pattern": r"^\d+\.\d+$"},
                "driver_version": {"type": ["string", "null"]},
                "cuda_version": {"type": ["string", "null"]},
                "torch_version": {"type": "string"},
                "clocks_mhz": {"type": ["object", "null"]},
                "interconnect": {"type": ["object", "null"]},
            },
        },
        "results": {"type": "array", "items": _METRIC},
        "sections": {"type": "object", "additionalProperties": _SECTION},
        # the serving matrix: checked against serving_schema.SERVING_SCHEMA by validate()
        "serving": {"type": "object"},
    },
}


class SchemaError(ValueError):
    """The document is not a valid finops.gpubench result."""


def validate(doc: Any) -> dict[str, Any]:
    """Raise SchemaError naming the first problem (path: message); return the doc when valid."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(RESULT_SCHEMA)
    errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))
    if not errors and isinstance(doc, dict) and "serving" in doc:
        from finops.gpubench.serving_schema import SERVING_SCHEMA

        errors = sorted(
            jsonschema.Draft202012Validator(SERVING_SCHEMA).iter_errors(doc["serving"]),
            key=lambda e: list(e.absolute_path),
        )
        for e in errors:
            e.path.appendleft("serving")
    if errors:
        e = errors[0]
        path = "/".join(str(p) for p in e.absolute_path) or "(root)"
        raise SchemaError(f"{path}: {e.message} ({len(errors)} problem(s))")
    for m in doc["results"]:
        if m["unit"] != METRIC_UNITS[m["metric"]]:
            raise SchemaError(
                f"results: {m['metric']} has unit {m['unit']!r}, expected {METRIC_UNITS[m['metric']]!r}"
            )
    return doc
