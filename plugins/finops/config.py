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
from finops.commitments.settings import CommitmentsSettings
from finops.exceptions import ConfigError as ConfigError  # a finops.yaml problem: `path.to.key: reason`
from finops.jobs.settings import JobsSettings
from finops.paths import config_path
from finops.secret_scan import find_secrets

_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")


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
    prefix: str = Field(
        description="CUR 2.0: the export root holding data/ and metadata/; legacy: report prefix"
    )
    format: Literal["cur2", "cur_legacy", "focus"] = "cur2"
    report_name: str | None = Field(
        default=None, description="legacy CUR report name (defaults to last prefix part)"
    )

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
    currency: str | None = Field(
        default=None, description="only for EA 2019-10-01 files, which carry no currency column"
    )


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
                raise ValueError(
                    f"source name {src.name!r} is used twice; names must be unique across providers"
                )
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
    # provider -> "HH:MM" (UTC) or "45m" / "2h": the billing DAGs' DeadlineAlert (finops.alerts.deadline)
    billing_deadlines: dict[Literal["aws", "gcp", "azure", "lambda"], str] = {}


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
    commitments: CommitmentsSettings = CommitmentsSettings()  # finops.commitments.settings
    jobs: JobsSettings = JobsSettings()  # training jobs: providers, defaults, caps (finops.jobs.settings)

    def source(self, name: str) -> SourceBase:
        for s in self.sources.all():
            if s.name == name:
                return s
        known = ", ".join(s.name for s in self.sources.all()) or "(none configured)"
        raise ConfigError(f"sources: no source named {name!r}; configured: {known}")


_SECRET = "secrets are not allowed in the config file; put them in an Airflow connection and reference it with conn_id"
# Airflow's own conn_id alphabet (models.connection.RE_SANITIZE_CONN_ID), minus anything URI-like.
_CONN_ID = re.compile(r"^[\w#!().:/\\-]{1,250}$")


def _find_secrets(data: Any) -> list[str]:
    """`path: reason` for every conn_id that is not a connection id, then every secret-looking
    key or value (finops.secret_scan). Values are never echoed: the error is logged, and the
    point is to keep the secret out of logs."""
    found: list[str] = []
    stack: list[tuple[str, Any]] = [("", data)]
    while stack:  # conn_id values: ids of Airflow connections, never URIs or credentials
        path, node = stack.pop()
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for k, v in items:
            p = f"{path}[{k}]" if isinstance(node, list) else (f"{path}.{k}" if path else str(k))
            if isinstance(k, str) and k.endswith("conn_id"):
                if v is not None and (not isinstance(v, str) or not _CONN_ID.match(v) or "://" in v):
                    found.append(
                        f"{p}: must be the id of an Airflow connection (letters, digits, _ - . : /), "
                        "not a URI or credentials; define the connection as AIRFLOW_CONN_<ID>, "
                        "in the metadata DB or in a secrets backend"
                    )
            else:
                stack.append((p, v))
    return found + [f"{path}: {_SECRET} ({why})" for path, why in find_secrets(data, skip_keys=("conn_id",))]


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


# finops.yaml is a few KB; these bounds keep a hostile file from costing minutes or gigabytes:
# 1 MiB of text, 64 levels of nesting, 100k values once every YAML alias is expanded (nine
# nested aliases of nine items each, the "billion laughs", expand to 387M from 500 bytes).
MAX_CONFIG_BYTES = 1 << 20
MAX_CONFIG_DEPTH = 64
MAX_CONFIG_NODES = 100_000
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml: 10x faster than pure Python


def _check_shape(text: str, origin: str) -> None:
    """Walk the YAML events once (iterative in libyaml and PyYAML) before building anything:
    refuse nesting deeper than MAX_CONFIG_DEPTH (libyaml's composer recursed into a segfault
    on 400k nested brackets) and aliases that expand to more than MAX_CONFIG_NODES values
    (every later walk of the data, validation included, pays the expanded size)."""
    expanded: dict[str, int] = {}  # anchor -> size of its node, fully expanded
    open_nodes: list[tuple[str | None, int]] = []  # (anchor, size so far) of each open collection
    total = 0
    for event in yaml.parse(text, Loader=_LOADER):
        size = 0
        if isinstance(event, yaml.CollectionStartEvent):
            if len(open_nodes) >= MAX_CONFIG_DEPTH:
                raise ConfigError(
                    f"{origin}: nested more than {MAX_CONFIG_DEPTH} levels deep; "
                    "a FinOps config needs a handful"
                )
            open_nodes.append((event.anchor, 1))
            continue
        if isinstance(event, yaml.CollectionEndEvent):
            anchor, size = open_nodes.pop()
        elif isinstance(event, yaml.ScalarEvent):
            anchor, size = event.anchor, 1
        elif isinstance(event, yaml.AliasEvent):
            if event.anchor not in expanded:  # an alias to a node that contains it
                raise ConfigError(
                    f"{origin}: the alias *{event.anchor} refers to a node that contains it; "
                    "aliases must refer to a node defined before them"
                )
            anchor, size = None, expanded[event.anchor]
        else:
            continue
        if anchor is not None:
            expanded[anchor] = size
        if open_nodes:
            top_anchor, top_size = open_nodes[-1]
            open_nodes[-1] = (top_anchor, top_size + size)
        else:
            total += size
        if size > MAX_CONFIG_NODES or total > MAX_CONFIG_NODES:
            raise ConfigError(
                f"{origin}: YAML aliases (*name) expand to more than {MAX_CONFIG_NODES} values; "
                "a FinOps config holds far fewer: write the values out or use fewer aliases"
            )


def load_yaml(path: str | Path, error: type[ValueError] = ValueError) -> Any:
    """A YAML file of ours (finops.yaml, policies, allocation rules), bounded in size, depth and
    alias expansion; safe types only. Every problem raises `error("<path>: reason")`."""
    p = Path(path)
    origin = str(p)
    try:
        with p.open("rb") as f:
            raw = f.read(MAX_CONFIG_BYTES + 1)
    except FileNotFoundError:
        raise error(f"{origin}: file not found") from None
    except OSError as e:
        raise error(f"{origin}: cannot read: {e.strerror or e}") from None
    if len(raw) > MAX_CONFIG_BYTES:
        raise error(
            f"{origin}: the file is larger than {MAX_CONFIG_BYTES // 1024} KiB; a FinOps config is a few "
            "KB (is FINOPS_CONFIG pointing at the right file?)"
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise error(f"{origin}: not UTF-8 text (byte {e.start})") from None
    try:
        _check_shape(text, origin)
        return yaml.load(text, Loader=_LOADER)  # noqa: S506 - a safe loader (CSafeLoader / SafeLoader)
    except ConfigError as e:
        raise error(str(e)) from None
    except yaml.YAMLError as e:
        raise error(f"{origin}: not valid YAML: {e}") from None
    except RecursionError:
        raise error(f"{origin}: nested too deeply to read") from None


def load_config(path: str | Path | None = None) -> FinOpsConfig:
    p = Path(path) if path else config_path()
    if not p.exists():
        raise ConfigError(f"{p}: config file not found (set FINOPS_CONFIG)")
    return parse_config(load_yaml(p, ConfigError), origin=str(p))


@lru_cache(maxsize=8)
def _cached(path: str, mtime: float) -> FinOpsConfig:
    return load_config(path)


def get_config() -> FinOpsConfig:
    """The active config, re-read when the file changes (cheap enough for DAG parsing)."""
    p = config_path()
    return _cached(str(p), p.stat().st_mtime if p.exists() else 0.0)
