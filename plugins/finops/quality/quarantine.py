"""Quarantine: keep a failed batch's raw files and its validation report for a human.

Layout: FINOPS_HOME/quarantine/<source>/<billing_period>/<load_id>/ holding the raw files
(copied, never moved: the raw cache stays as it was), quarantine-report.md (for a person:
cause, failing column / rule, rows, examples, what to do, a link to the Data Docs),
report.json, gx_result.json and data_docs/ (GX's Data Docs site of the batch's validation,
when validation ran).
Append-only: a second quarantine of the same load never deletes or overwrites what is there;
its files get a numeric suffix (report.1.json, ...), identical raw files are not copied twice.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from finops.paths import path_segment, subdir
from finops.quality.quarantine_report import REPORT_NAME, Diagnosis, diagnose, render
from finops.quality.report import ValidationReport, _jsonable
from finops.quality.rules import check_period

log = logging.getLogger(__name__)


def quarantine_dir(source: str, billing_period: str, load_id: str) -> Path:
    check_period(billing_period)
    return subdir("quarantine") / path_segment(source) / billing_period / path_segment(load_id)


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _free_name(folder: Path, name: str) -> Path:
    """folder/name, or folder/stem.N.suffix for the first N not taken."""
    p = folder / name
    stem, dot, suffix = name.partition(".")
    n = 1
    while p.exists():
        p = folder / (f"{stem}.{n}.{suffix}" if dot else f"{name}.{n}")
        n += 1
    return p


def _write_new(folder: Path, name: str, data: dict[str, Any] | str) -> Path:
    text = (
        data if isinstance(data, str) else json.dumps(data, indent=2, default=_jsonable, ensure_ascii=False)
    )
    while True:
        p = _free_name(folder, name)
        try:
            with p.open("x", encoding="utf-8") as f:  # "x": never clobber a file that appeared meanwhile
                f.write(text)
            return p
        except FileExistsError:
            continue


def _copy_in(src: Path, folder: Path) -> dict[str, Any]:
    entry: dict[str, Any] = {"original": str(src), "name": src.name}
    if not src.is_file():
        entry["missing"] = True
        return entry
    digest = _sha256(src)
    entry.update(bytes=src.stat().st_size, sha256=digest)
    same = folder / src.name
    if same.is_file() and same.stat().st_size == entry["bytes"] and _sha256(same) == digest:
        entry["stored_as"] = same.name  # already kept by an earlier quarantine of this load
        return entry
    dest = _free_name(folder, src.name)
    part = dest.with_name(dest.name + f".part-{os.getpid()}")
    shutil.copy2(src, part)
    os.replace(part, dest)
    entry["stored_as"] = dest.name
    return entry


def quarantine_batch(
    *,
    source: str,
    billing_period: str,
    load_id: str,
    raw_files: list[Path],
    report: ValidationReport | None = None,
    error: str | None = None,
    diagnosis: Diagnosis | None = None,
    provider: str | None = None,
    variant: str | None = None,
) -> Path:
    """Copy raw files + write quarantine-report.md, report.json (and gx_result.json) under the
    quarantine dir; return it. `diagnosis` defaults to `diagnose(error, report)`; its
    `report_path` is set to the Markdown report written."""
    folder = quarantine_dir(source, billing_period, load_id)
    folder.mkdir(parents=True, exist_ok=True)
    files = [_copy_in(Path(f), folder) for f in raw_files]
    diagnosis = diagnosis or diagnose(error or "validation failed", report)
    now = datetime.now(UTC).isoformat()
    body = report.to_json_dict() if report is not None else None
    gx = body.pop("gx_result", None) if body else None
    gx_path = _write_new(folder, "gx_result.json", gx) if gx else None
    docs = _data_docs(report, folder)
    if docs is not None:
        diagnosis.data_docs_path = str(docs)
    docs_rel = docs.relative_to(folder).as_posix() if docs is not None else None
    md = render(
        diagnosis,
        source=source,
        billing_period=billing_period,
        load_id=load_id,
        provider=provider,
        variant=variant,
        files=files,
        quarantined_at=now,
        data_docs=docs_rel,
    )
    md_path = _write_new(folder, REPORT_NAME, md)
    diagnosis.report_path = str(md_path)
    _write_new(
        folder,
        "report.json",
        {
            "source": source,
            "billing_period": billing_period,
            "load_id": load_id,
            "provider": provider,
            "variant": variant,
            "quarantined_at": now,
            "error": error,
            "diagnosis": diagnosis.summary() | {"all_problems": diagnosis.problems},
            "files": files,
            "validation": body,
            "gx_result_file": gx_path.name if gx_path else None,
            "data_docs": docs_rel,
        },
    )
    return folder


def _data_docs(report: ValidationReport | None, folder: Path) -> Path | None:
    """Render the batch's GX Data Docs into a new folder/data_docs[.N]; its index.html, or None
    when no validation ran. Rendering is a convenience: a failure is logged, never stops the
    quarantine."""
    if report is None or report.data_docs is None:
        return None
    try:
        index: Path = report.data_docs.render(_free_name(folder, "data_docs"))
        return index
    except Exception:  # noqa: BLE001 - the files and the Markdown report must still be kept
        log.warning("could not render Data Docs under %s", folder, exc_info=True)
        return None
