"""Provider -> (extractor, converter). The only place that knows which module serves which
provider and format, so the billing DAG and CLI stay provider-agnostic.

Each adapter returns the RawBatch list for one (source, billing period) — usually one batch:
the newest complete delivery — and the Converter for the source's format."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def _aws_plan(src: Any, period: str, *, record: bool = True) -> list[Any]:
    from finops.sources import aws_cur

    batch = aws_cur.fetch_batch(src, period)
    return [batch] if batch is not None else []


def _aws_converter(src: Any) -> Any:
    from finops.sources import aws_cur

    return aws_cur.converter_for(src.format)


def _module_adapters(module: str) -> tuple[Callable[..., list[Any]], Callable[[Any], Any]]:
    """For sources whose module already speaks `plan_batches(src, period, *, record)` /
    `converter_for(src)`."""

    def plan(src: Any, period: str, *, record: bool = True) -> list[Any]:
        import importlib

        return importlib.import_module(module).plan_batches(src, period, record=record)

    def conv(src: Any) -> Any:
        import importlib

        return importlib.import_module(module).converter_for(src)

    return plan, conv


_PLANNERS: dict[str, Callable[..., list[Any]]] = {"aws": _aws_plan}
_CONVERTERS: dict[str, Callable[[Any], Any]] = {"aws": _aws_converter}
for _provider, _module in (
    ("gcp", "finops.sources.gcp_bigquery"),
    ("azure", "finops.sources.azure_blob"),
    ("lambda", "finops.sources.lambda_cloud"),
):
    _PLANNERS[_provider], _CONVERTERS[_provider] = _module_adapters(_module)


def providers() -> list[str]:
    return sorted(_PLANNERS)


def plan_batches(provider: str, source_cfg: Any, billing_period: str, *, dry_run: bool = False) -> list[Any]:
    """The period's batches. dry_run: plan without writing anything to the warehouse (every
    planner takes `record`; Lambda's is the one that writes while planning, its instance poll)."""
    try:
        planner = _PLANNERS[provider]
    except KeyError:
        raise ValueError(f"unknown provider {provider!r}; known: {providers()}") from None
    return planner(source_cfg, billing_period, record=not dry_run)


def converter_for(provider: str, source_cfg: Any) -> Any:
    return _CONVERTERS[provider](source_cfg)
