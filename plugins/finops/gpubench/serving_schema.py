"""JSON Schema of the result document's optional `serving` key (the serving matrix written by
serving.py). Kept apart from schema.py so the instance payload stays small: only the collector
validates, through schema.validate().
"""

from __future__ import annotations

from typing import Any

SERVING_MODELS = ["resnet50", "decoder"]
SERVING_DTYPES = ["fp32", "fp16", "bf16", "int8", "fp8"]
_NUM_OR_NULL = {"type": ["number", "null"]}
_MS = {"type": "number", "minimum": 0}

_SERVING_ROW = {
    "type": "object",
    "required": [
        "model",
        "dtype",
        "batch",
        "requests_per_s",
        "p50_ms",
        "p95_ms",
        "p99_ms",
        "samples",
        "warmup",
        "meets_p99",
    ],
    "properties": {
        "model": {"enum": SERVING_MODELS},
        "dtype": {"enum": SERVING_DTYPES},
        "batch": {"type": "integer", "minimum": 1},
        "requests_per_s": {"type": ["number", "null"], "minimum": 0},
        "output_tokens_per_s": _NUM_OR_NULL,
        "tokens_in": {"type": ["integer", "null"], "minimum": 1},
        "tokens_out": {"type": ["integer", "null"], "minimum": 1},
        "p50_ms": _MS,
        "p95_ms": _MS,
        "p99_ms": _MS,
        "mean_ms": _MS,
        "min_ms": _MS,
        "max_ms": _MS,
        "samples": {"type": "integer", "minimum": 1},
        "warmup": {"type": "integer", "minimum": 0},
        "truncated": {"type": "boolean"},
        "peak_memory_bytes": {"type": ["integer", "null"], "minimum": 0},
        "meets_p99": {"type": "boolean"},
    },
}

SERVING_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["method", "p99_target_ms", "models", "rows", "best", "skipped"],
    "properties": {
        "method": {"type": "object"},
        "p99_target_ms": {
            "type": "object",
            "additionalProperties": {"type": "number", "exclusiveMinimum": 0},
        },
        "models": {"type": "object"},
        "rows": {"type": "array", "items": _SERVING_ROW},
        "best": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["model", "dtype", "p99_target_ms", "batch"],
                "properties": {
                    "model": {"enum": SERVING_MODELS},
                    "dtype": {"enum": SERVING_DTYPES},
                    "p99_target_ms": {"type": "number", "exclusiveMinimum": 0},
                    "batch": {"type": ["integer", "null"], "minimum": 1},
                },
            },
        },
        "skipped": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["model", "dtype", "reason"],
                "properties": {"reason": {"type": "string", "minLength": 1}},
            },
        },
    },
}
