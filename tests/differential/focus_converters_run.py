"""Runs the FinOps Foundation focus-converter 1.0.0 on one CSV (inside .venv-focus-converters):
its conversion plan, without its exporter (a multiprocessing writer that hangs on exit here).
Columns its plan requires and the sample lacks are added empty, and listed on stdout."""
import json
import re
import sys
import tempfile

import polars as pl
from focus_converter.converter import FocusConverter
from focus_converter.data_loaders.data_loader import DataFormats

provider, data, out = sys.argv[1:4]
added = []
for _attempt in range(5):
    c = FocusConverter()
    c.load_provider_conversion_configs()
    c.load_data(data_path=data, data_format=DataFormats.CSV, parquet_data_format=None)
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
        src = pl.read_csv(data, infer_schema_length=0)
        src = src.with_columns([pl.lit(None, dtype=pl.Utf8).alias(x) for x in missing])
        data = tempfile.mktemp(suffix=".csv")
        src.write_csv(data)
print(json.dumps({"added_missing_columns": added}))
