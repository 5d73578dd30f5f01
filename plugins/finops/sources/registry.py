"""Provider -> (extractor, converter). The only place that knows which module serves which
provider and format, so the billing DAG and CLI stay provider-agnostic."""

from __future__ import annotations

import importlib
from typing import Any

# provider -> module with `plan_batches(source_cfg, billing_period) -> list[RawBatch]`
# and `converter_for(source_cfg) -> Converter`.
_MODULES = {
    "aws": "finops.sources.aws_cur",
    "gcp": "finops.sources.gcp_bigquery",
    "azure": "finops.sources.azure_blob",
    "lambda": "finops.sources.lambda_cloud",
}


def _module(provider: str):
    try:
        return importlib.import_module(_MODULES[provider])
    except KeyError:
        raise ValueError(f"unknown provider {provider!r}; known: {sorted(_MODULES)}") from None


def plan_batches(provider: str, source_cfg: Any, billing_period: str) -> list[Any]:
    return _module(provider).plan_batches(source_cfg, billing_period)


def converter_for(provider: str, source_cfg: Any) -> Any:
    return _module(provider).converter_for(source_cfg)
