"""Runs the FinOps Foundation focus-converter 1.0.0 on one export file (inside
.venv-focus-converters): its conversion plan, without its exporter (a multiprocessing writer that
hangs on exit here). Usage: JOBS_JSON, a file holding [{"plan", "input", "out", "renames"}].
One process for every job: importing polars and loading its plans is most of its time.

`renames` ({ours: theirs}) renames input columns to the names its plan reads (an older schema
spelling of the same column). Columns its plan requires and the file lacks are added empty.
Prints one JSON line: per job, {"added_missing_columns", "renamed"} or {"error": last line}."""

import json
import re
import sys
import tempfile

import polars as pl
from focus_converter.converter import FocusConverter
from focus_converter.data_loaders.data_loader import DataFormats, ParquetDataFormat


def read(path: str, parquet: bool) -> pl.DataFrame:
    if not parquet:
        return pl.read_csv(path, infer_schema_length=0)
    # its polars 0.20 cannot read MAP columns (CUR 2.0 product / resource_tags / cost_category):
    # pyarrow reads the file, the maps are left out
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    keep = [f.name for f in table.schema if not str(f.type).startswith("map<")]
    return pl.from_arrow(table.select(keep))


def write(df: pl.DataFrame, parquet: bool) -> str:
    path = tempfile.mktemp(suffix=".parquet" if parquet else ".csv")
    df.write_parquet(path) if parquet else df.write_csv(path)
    return path


def convert(provider: str, data: str, out: str, renames: dict[str, str]) -> dict:
    parquet = data.endswith(".parquet")
    if renames or parquet:
        data = write(read(data, parquet).rename(renames), parquet)
    added: list[str] = []
    for _attempt in range(5):
        c = FocusConverter()
        c.load_provider_conversion_configs()
        c.load_data(
            data_path=data,
            data_format=DataFormats.PARQUET if parquet else DataFormats.CSV,
            parquet_data_format=ParquetDataFormat.FILE if parquet else None,
        )
        c.prepare_horizontal_conversion_plan(provider=provider)
        cols = set(c.h_collected_columns)
        try:
            for i, lf in enumerate(c.data_loader.data_scanner()):
                df = c.__process_lazy_frame__(lf=lf).collect()
                df.select([x for x in df.columns if x in cols]).write_parquet(f"{out}/part-{i}.parquet")
            break
        except (ValueError, pl.exceptions.ColumnNotFoundError) as e:
            m = re.search(r"Column\(s\) '([^']+)' not found", str(e)) or re.search(
                r'unable to find column "([^"]+)"', str(e)
            )
            if not m:
                raise
            missing = [x.strip() for x in m.group(1).split(",")]
            added += missing
            data = write(
                read(data, parquet).with_columns([pl.lit(None, dtype=pl.Utf8).alias(x) for x in missing]),
                parquet,
            )
    return {"added_missing_columns": added, "renamed": renames}


results = []
for job in json.loads(open(sys.argv[1]).read()):
    try:
        results.append(convert(job["plan"], job["input"], job["out"], job.get("renames") or {}))
    except Exception as e:  # noqa: BLE001 - reported per job: an input it cannot convert is a finding
        results.append({"error": f"{type(e).__name__}: {e}".splitlines()[-1]})
print(json.dumps(results))
