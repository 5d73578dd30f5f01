"""Typed configuration: finops.yaml -> pydantic models, validated in one place.

No secret ever sits in this file: every credential is an Airflow connection named by
`conn_id` (AIRFLOW_CONN_* env vars and secrets backends work as usual). A bad file fails
with a `ConfigError` naming the key path and the reason.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from finops.budgets.settings import BudgetsConfig
from finops.paths import config_path

_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")
# Keys that look like secrets are refused outright: they belong in an Airflow connection.
_SECRET_KEYS = re.compile(r"(password|secret|token|api_?key|access_?key|private_?key|sas|webhook_url)", re.I)


class ConfigError(ValueError):
    """A finops.yaml problem, phrased as `path.to.key: reason`."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SourceBase(_Model):
    name: str
    conn_id: str
    enabled: bool = True

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not _NAME.match(v):
            raise ValueError("must be 1-63 chars of a-z, 0-9, '_' or '-', starting with a letter or digit")
        return v


class AwsSource(SourceBase):
    conn_id: str = "aws_default"
    bucket: str
    prefix: str = Field(description="CUR 2.0: the export root holding data/ and metadata/; legacy: report prefix")
    format: Literal["cur2", "cur_legacy", "focus"] = "cur2"
    report_name: str | None = Field(default=None, description="legacy CUR report name (defaults to last prefix part)")

    @field_validator("prefix")
    @classmethod
    def _prefix(cls, v: str) -> str:
        return v.strip("/")


class GcpSource(SourceBase):
    conn_id: str = "google_cloud_default"
    project: str
    dataset: str
    table: str
    location: str = "US"
    format: Literal["detailed", "standard", "focus"] = "detailed"
    reload_days: int = Field(default=5, ge=0, le=62, description="rolling window of late rows (export_time)")


class AzureSource(SourceBase):
    conn_id: str = "wasb_default"
    container: str
    prefix: str = ""
    format: Literal["actual", "amortized", "focus"] = "amortized"
    agreement: Literal["ea", "mca", "auto"] = "auto"
    currency: str | None = Field(default=None, description="only for EA 2019-10-01 files, which carry no currency column")


class LambdaSource(SourceBase):
    conn_id: str = "lambda_cloud_default"
    account_name: str = "lambda"


class Sources(_Model):
    aws: list[AwsSource] = []
    gcp: list[GcpSource] = []
    azure: list[AzureSource] = []
    lambda_cloud: list[LambdaSource] = Field(default=[], alias="lambda")

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    @model_validator(mode="after")
    def _unique_names(self) -> Sources:
        seen: set[str] = set()
        for src in self.all():
            if src.name in seen:
                raise ValueError(f"source name {src.name!r} is used twice; names must be unique across providers")
            seen.add(src.name)
        return self

    def all(self) -> list[SourceBase]:
        return [*self.aws, *self.gcp, *self.azure, *self.lambda_cloud]


class WarehouseConfig(_Model):
    conn_id: str | None = Field(default=None, description="absent -> embedded DuckDB in FINOPS_HOME")
    schema_: str = Field(default="finops", alias="schema")

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class AlertRoute(_Model):
    team: str = "*"
    slack_conn_id: str | None = None
    slack_channel: str | None = None
    email_conn_id: str | None = None
    email_to: list[str] = []


class AlertsConfig(_Model):
    routes: list[AlertRoute] = []
    default_route: AlertRoute | None = None


class FinOpsConfig(_Model):
    version: int = 1
    warehouse: WarehouseConfig = WarehouseConfig()
    sources: Sources = Sources()
    alerts: AlertsConfig = AlertsConfig()
    policies_dir: str = "include/policies"
    # Feature sections owned by their packages; kept as plain mappings here and validated
    # by each feature's own model (finops.<feature>.settings) so this module stays small.
    prices: dict[str, Any] = {}
    benchmarks: dict[str, Any] = {}
    allocation: dict[str, Any] = {}
    anomaly: dict[str, Any] = {}
    # Validated here, with the file: a bad budget must fail when finops.yaml loads, not when
    # the month's money is already spent (finops.budgets.settings).
    budgets: BudgetsConfig = BudgetsConfig()

    def source(self, name: str) -> SourceBase:
        for s in self.sources.all():
            if s.name == name:
                return s
        known = ", ".join(s.name for s in self.sources.all()) or "(none configured)"
        raise ConfigError(f"sources: no source named {name!r}; configured: {known}")


_SECRET = "secrets are not allowed in the config file; put them in an Airflow connection and reference it with conn_id"
# Airflow's own conn_id alphabet (models.connection.RE_SANITIZE_CONN_ID), minus anything URI-like.
_CONN_ID = re.compile(r"^[\w#!().:/\\-]{1,250}$")
# A secret under an innocent key: credentials in a URL (scheme://user:password@host) or a Slack
# webhook URL (the URL is the credential).
_SECRET_VALUES = re.compile(r"[a-z][a-z0-9+.-]*://[^/\s@]*:[^/\s@]*@|hooks\.slack(-gov)?\.com/", re.I)


def _find_secrets(node: Any, path: str = "") -> list[str]:
    """`path: reason` for every secret-looking key or value. Values are never echoed: the
    error is logged, and the point is to keep the secret out of logs."""
    found: list[str] = []
    if isinstance(node, dict):
        for k, v in node.items():
            p = f"{path}.{k}" if path else str(k)
            if isinstance(k, str) and k.endswith("conn_id"):
                if v is not None and (not isinstance(v, str) or not _CONN_ID.match(v) or "://" in v):
                    found.append(f"{p}: must be the id of an Airflow connection (letters, digits, _ - . : /), "
                                 "not a URI or credentials; define the connection as AIRFLOW_CONN_<ID>, "
                                 "in the metadata DB or in a secrets backend")
                continue
            if isinstance(k, str) and _SECRET_KEYS.search(k):
                found.append(f"{p}: {_SECRET}")
            found += _find_secrets(v, p)
    elif isinstance(node, list):
        for i, v in enumerate(node):
            found += _find_secrets(v, f"{path}[{i}]")
    elif isinstance(node, str) and _SECRET_VALUES.search(node):
        found.append(f"{path or '(root)'}: {_SECRET}")
    return found


def _fmt_loc(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(root)"


def parse_config(data: Any, origin: str = "finops.yaml") -> FinOpsConfig:
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{origin}: (root): expected a mapping of sections, got {type(data).__name__}")
    secrets = _find_secrets(data)
    if secrets:
        raise ConfigError("\n".join(f"{origin}: {s}" for s in secrets))
    try:
        return FinOpsConfig.model_validate(data)
    except ValidationError as e:
        lines = [f"{origin}: {_fmt_loc(err['loc'])}: {err['msg']}" for err in e.errors()]
        raise ConfigError("\n".join(lines)) from None


def load_config(path: str | Path | None = None) -> FinOpsConfig:
    p = Path(path) if path else config_path()
    if not p.exists():
        raise ConfigError(f"{p}: config file not found (set FINOPS_CONFIG)")
    try:
        data = yaml.safe_load(p.read_text())
    except yaml.YAMLError as e:
        raise ConfigError(f"{p}: not valid YAML: {e}") from None
    return parse_config(data, origin=str(p))


@lru_cache(maxsize=8)
def _cached(path: str, mtime: float) -> FinOpsConfig:
    return load_config(path)


def get_config() -> FinOpsConfig:
    """The active config, re-read when the file changes (cheap enough for DAG parsing)."""
    p = config_path()
    return _cached(str(p), p.stat().st_mtime if p.exists() else 0.0)
