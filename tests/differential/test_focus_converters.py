"""Differential test against the FinOps Foundation's focus-converter 1.0.0 (its own venv,
scripts/ensure_focus_converters.sh): the same export converted by it and by us, on every input
its plans read: the published legacy CUR samples of project koku (its `aws-cur` plan), the
published Azure EA samples of Microsoft's FinOps toolkit (its `azure` plan), and a CUR 2.0
month of our demo generator (its `aws` plan: no CUR 2.0 sample is published small enough), and
three days of a GCP detailed export from our GCP generator (its `gcp` plan; no raw GCP export
sample is published).
Totals per ChargeCategory (BilledCost, EffectiveCost) and the distinct values of key columns
are compared. Every difference found is listed in KNOWN and explained in
docs/billing-exports/focus-converters.md; a new one, or one that disappears, fails the test."""

from __future__ import annotations

import fcntl
import json
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import pytest

from finops.focus.aws_cur_mapping import Cur2Converter, CurLegacyConverter
from finops.focus.azure_cost import AzureCostConverter
from finops.focus.gcp_billing import GcpBillingConverter
from finops.ingest import ConvertContext, RawBatch, convert_to_staging

REPO = Path(__file__).resolve().parents[2]
VENV_PY = REPO / ".venv-focus-converters" / "bin" / "python"
RUNNER = Path(__file__).with_name("focus_converters_run.py")
DATA = REPO / "tests" / "data"
MICRO = Decimal("0.000001")
# Its azure plan reads the current EA / MCA names; the toolkit's EA samples carry the older
# spelling of the same three columns (Microsoft's EA schema before CostInBillingCurrency).
EA_OLD_NAMES = {
    "Cost": "CostInBillingCurrency",
    "BillingCurrency": "BillingCurrencyCode",
    "Product": "ProductName",
}
KEY_COLUMNS = (
    ("charge_category", "ChargeCategory"),
    ("service_name", "ServiceName"),
    ("resource_id", "ResourceId"),
)


@dataclass(frozen=True)
class Case:
    name: str
    plan: str  # focus-converter's provider plan
    period: str
    converter: Callable[[], Any]
    file: Callable[[Path], Path]
    renames: dict[str, str] | None = None


def _published(rel: str) -> Callable[[Path], Path]:
    return lambda _tmp: DATA / rel


def _demo_gcp(tmp: Path) -> Path:
    from finops.demo.gcp_generator import generate

    return generate(period="2026-10", days=3).write_parquet(tmp / "gcp-detailed.parquet")


def _demo_cur2(tmp: Path) -> Path:
    from finops.demo.cur_generator import GenSpec, write_cur2_period

    write_cur2_period(tmp / "cur2", GenSpec(period="2025-03", rows=2000, chunk_rows=5000))
    (part,) = (tmp / "cur2").rglob("*.parquet")
    return part


CASES = [
    Case(
        "koku_test_cur_sample",
        "aws-cur",
        "2021-08",
        CurLegacyConverter,
        _published("aws/koku_test_cur_sample.csv"),
    ),
    Case("koku_2023-06-01", "aws-cur", "2023-06", CurLegacyConverter, _published("aws/koku_2023-06-01.csv")),
    Case(
        "koku_2022-07-01-alt-columns",
        "aws-cur",
        "2022-07",
        CurLegacyConverter,
        _published("aws/koku_2022-07-01-alt-columns.csv"),
    ),
    Case(
        "ea-actual-small",
        "azure",
        "2023-09",
        lambda: AzureCostConverter("actual"),
        _published("azure/ea-actual-small.csv"),
        EA_OLD_NAMES,
    ),
    Case(
        "ea-amortized-small",
        "azure",
        "2023-09",
        lambda: AzureCostConverter("amortized"),
        _published("azure/ea-amortized-small.csv"),
        EA_OLD_NAMES,
    ),
    Case("demo-cur2", "aws", "2025-03", Cur2Converter, _demo_cur2),
    Case("demo-gcp-detailed", "gcp", "2026-10", GcpBillingConverter, _demo_gcp),
]

# What each comparison finds; the doc explains every line.
AWS_NAMES = "service_name: only ours ['AWS Data Transfer', 'Amazon Elastic Block Store', 'Amazon Elastic Compute Cloud']"
KNOWN: dict[str, set[str]] = {
    "koku_test_cur_sample": {f"{AWS_NAMES}, only theirs ['AmazonEC2']"},
    "koku_2023-06-01": {
        "service_name: only ours ['Amazon Elastic Compute Cloud'], only theirs ['AmazonEC2']"
    },
    "ea-actual-small": {
        "Purchase billed/effective: ours 3.250000/0.000000 theirs 3.250000/3.250000",
        "resource_id: same values, case differs",
        "service_name: only ours ['Advanced Data Security', 'Advanced Threat Protection', 'Azure Database for MySQL'], "
        "only theirs ['MICROSOFT.KEYVAULT', 'Microsoft.Capacity', 'Microsoft.Compute']",
    },
    "ea-amortized-small": {
        "Usage billed/effective: ours 9.175502/9.674654 theirs 9.674654/9.674654",
        "resource_id: same values, case differs",
        "service_name: only ours ['Bandwidth', 'Log Analytics', 'SQL Managed Instance'], "
        "only theirs ['Microsoft.Compute', 'Microsoft.MachineLearningServices', 'Microsoft.Network']",
    },
    "demo-cur2": {
        "Adjustment billed/effective: ours -19.990000/-19.990000 theirs 0.000000/-194.064073",
        "Credit billed/effective: ours -174.074073/-174.074073 theirs none",
        "Purchase billed/effective: ours 99400.000000/0.000000 theirs 0.000000/71196.218849",
        "Tax billed/effective: ours 605.389627/605.389627 theirs 0.000000/605.389627",
        "Usage billed/effective: ours 20959.982728/95489.271071 theirs 20965.106185/24293.052222",
        "charge_category: only ours ['Credit'], only theirs []",
        f"{AWS_NAMES}, only theirs ['AWSDataTransfer', 'AmazonEC2', 'AmazonS3']",
    },
    "demo-gcp-detailed": {
        "Adjustment billed/effective: ours -12.497000/-12.497000 theirs -12.497000/0.003000",
        "Credit billed/effective: ours -12.919245/-12.919245 theirs none",
        "Usage billed/effective: ours 3021.404576/3021.404576 theirs 3324.605903/3008.485331",
        "charge_category: only ours ['Credit'], only theirs []",
    },
}
# Inputs focus-converter cannot convert at all: the end of its error.
THEIR_FAILURES = {"koku_2022-07-01-alt-columns": "arithmetic on string and numeric not allowed"}


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("inputs")
    return {c.name: c.file(tmp) for c in CASES}


@pytest.fixture(scope="module")
def theirs(inputs, tmp_path_factory) -> dict[str, tuple[Path, dict[str, Any]]]:
    """focus-converter's output per case, all converted by one process."""
    with (Path(tempfile.gettempdir()) / "finops-focus-converters.lock").open("w") as lock:  # one installer
        fcntl.flock(lock, fcntl.LOCK_EX)
        subprocess.run(["bash", "scripts/ensure_focus_converters.sh"], cwd=REPO, check=True, timeout=600)
    tmp = tmp_path_factory.mktemp("theirs")
    jobs = []
    for c in CASES:
        (tmp / c.name).mkdir()
        jobs.append(
            {"plan": c.plan, "input": str(inputs[c.name]), "out": str(tmp / c.name), "renames": c.renames}
        )
    (tmp / "jobs.json").write_text(json.dumps(jobs))
    done = subprocess.run(
        [str(VENV_PY), str(RUNNER), str(tmp / "jobs.json")], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(done.stdout.strip().splitlines()[-1])
    return {c.name: (tmp / c.name, r) for c, r in zip(CASES, results, strict=True)}


def _by_category(con: duckdb.DuckDBPyConnection, sql: str) -> dict[str, tuple[Decimal, Decimal]]:
    return {
        c or "": (Decimal(b).quantize(MICRO), Decimal(e).quantize(MICRO))
        for c, b, e in con.execute(sql).fetchall()
    }


def compare(con: duckdb.DuckDBPyConnection, ours: str, theirs: str) -> set[str]:
    """The differences between our FOCUS rows and theirs, one readable line each."""
    mine = _by_category(
        con, f"SELECT charge_category, sum(billed_cost), sum(effective_cost) FROM {ours} GROUP BY 1"
    )
    their = _by_category(
        con,
        "SELECT ChargeCategory, sum(CAST(BilledCost AS DECIMAL(38,10))), sum(CAST(EffectiveCost AS DECIMAL(38,10))) "
        f"FROM {theirs} GROUP BY 1",
    )

    def fmt(pair: tuple[Decimal, Decimal] | None) -> str:
        return "none" if pair is None else f"{pair[0]}/{pair[1]}"

    diffs = {
        f"{cat or '(empty)'} billed/effective: ours {fmt(mine.get(cat))} theirs {fmt(their.get(cat))}"
        for cat in set(mine) | set(their)
        if mine.get(cat) != their.get(cat)
    }
    for col_ours, col_theirs in KEY_COLUMNS:
        a = {r[0] for r in con.execute(f"SELECT DISTINCT {col_ours} FROM {ours}").fetchall()}
        b = {
            r[0] or None
            for r in con.execute(f"SELECT DISTINCT CAST({col_theirs} AS VARCHAR) FROM {theirs}").fetchall()
        }
        if a == b:
            continue
        if {v.lower() for v in a if v} == {v.lower() for v in b if v}:
            diffs.add(f"{col_ours}: same values, case differs")
        else:
            diffs.add(
                f"{col_ours}: only ours {sorted(map(str, a - b))[:3]}, only theirs {sorted(map(str, b - a))[:3]}"
            )
    return diffs


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_same_export_same_totals(theirs, inputs, case, tmp_path, finops_home):
    raw = inputs[case.name]
    batch = RawBatch("diff", case.plan, case.period, [raw], "fp")
    ctx = ConvertContext("diff", case.plan, case.period, "L")
    res = convert_to_staging(batch, case.converter(), ctx, tmp_path / "ours.parquet")
    assert res.focus_billed_total == res.raw_billed_total  # ours reconciles with the export, always

    out, ran = theirs[case.name]
    if "error" in ran:
        assert THEIR_FAILURES.get(case.name, "(it converts this input)") in ran["error"]
        return
    assert case.name not in THEIR_FAILURES, "focus-converter now converts this input: compare it"
    diffs = compare(duckdb.connect(), f"'{res.staging_file}'", f"'{out}/*.parquet'")
    print(case.name, json.dumps(ran), json.dumps(sorted(diffs), indent=1))
    assert diffs == KNOWN.get(case.name, set())
