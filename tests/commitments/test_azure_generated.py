"""A generated Azure amortised export through the real spine (load_batch into DuckDB): the
reservation's utilisation per day equals the export's reservation-priced usage over usage +
UnusedReservation cost, exactly; the actual-cost dataset (no unused rows) reports
used cost 0 and no utilisation rather than a made-up 100 %."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal as D

from finops.commitments.query import commitment_lines, month_window
from finops.commitments.usage import utilisation
from finops.demo import azure_generator as gen
from finops.focus.azure_cost import ACTUAL, AMORTIZED
from finops.ingest import RawBatch, load_batch

RES_ID = (
    "/providers/Microsoft.Capacity/reservationOrders/ro-1/reservations/r-1"  # the generator's reservation
)


def _load(wh, tmp_path, kind: str, converter) -> gen.AzureSample:
    sample = gen.generate(layout="mca", kind=kind, days=3)
    path = sample.write_csv(tmp_path / f"{kind}.csv.gz", gz=True)
    entry = load_batch(wh, RawBatch(f"az-{kind}", "azure", sample.period, [path], kind), converter)
    assert entry.status == "loaded", entry.message
    return sample


def test_reservation_utilisation_matches_the_export(duckdb_wh, tmp_path):
    sample = _load(duckdb_wh, tmp_path, "amortized", AMORTIZED)
    expected: dict[str, list[D]] = {}
    for r in sample.rows:
        if r.get("pm") != "Reservation" or r["charge_type"] not in ("Usage", "UnusedReservation"):
            continue
        day = datetime.strptime(r["date"], "%m/%d/%Y").date().isoformat()
        used_unused = expected.setdefault(day, [D(0), D(0)])
        used_unused[r["charge_type"] == "UnusedReservation"] += r["cost"]
    assert len(expected) == 3

    lines = commitment_lines(duckdb_wh, *month_window(sample.period), providers=["azure"])
    got = {u.period: u for u in utilisation(lines, "day")}
    assert set(got) == set(expected)
    for day, (used, unused) in expected.items():
        u = got[day]
        assert (u.used_cost, u.unused_cost, u.utilisation) == (used, unused, used / (used + unused)), day
        assert (u.commitment_type, u.commitment_id) == ("Reservation", RES_ID)


def test_actual_dataset_reports_no_utilisation(duckdb_wh, tmp_path):
    sample = _load(duckdb_wh, tmp_path, "actual", ACTUAL)
    rows = utilisation(
        commitment_lines(duckdb_wh, *month_window(sample.period), providers=["azure"]), "month"
    )
    assert rows and all(u.unused_cost == 0 and u.used_cost == 0 and u.utilisation is None for u in rows)
