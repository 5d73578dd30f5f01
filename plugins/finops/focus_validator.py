"""Run the FinOps Foundation `focus-validator` (PyPI focus-validator 2.2.x) on an export.

It needs Python >= 3.12 and its own pins, so it lives in a separate venv (.venv-focus, made by
`make focus-validator`). It opens `focus_validator/rules/currency_codes.csv` by a relative path,
so it must run from its own site-packages directory; it exits 0 even when rules fail, so the
`Fail: N` line of its console output is what counts."""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from finops.paths import REPO_ROOT

DEFAULT_VENV = REPO_ROOT / ".venv-focus"


@dataclass
class ValidatorResult:
    passed: int
    failed: int
    skipped: int
    output: str

    @property
    def ok(self) -> bool:
        return self.failed == 0 and self.passed > 0


def run_focus_validator(
    data_file: str | Path, version: str = "1.2", venv: Path = DEFAULT_VENV, timeout_s: int = 600
) -> ValidatorResult:
    py = venv / "bin" / "python"
    if not py.exists():
        raise FileNotFoundError(f"{py} missing: run `make focus-validator` first")
    site = subprocess.run(
        [
            str(py),
            "-c",
            "import focus_validator, os; print(os.path.dirname(os.path.dirname(focus_validator.__file__)))",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    data_file = Path(data_file).resolve()
    proc = subprocess.run(
        [
            str(venv / "bin" / "focus-validator"),
            "--data-file",
            str(data_file),
            "--validate-version",
            version,
            "--block-download",
            "--output-type",
            "console",
        ],
        cwd=site,
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )
    out = proc.stdout + proc.stderr

    def count(label: str) -> int:
        m = re.findall(rf"\b{label}:\s*(\d+)", out)
        return int(m[-1]) if m else -1

    passed, failed, skipped = count("Pass"), count("Fail"), count("Skipped")
    if failed < 0 or passed < 0:
        raise RuntimeError(
            f"could not read focus-validator's result (exit {proc.returncode}):\n{out[-3000:]}"
        )
    return ValidatorResult(passed, failed, skipped, out)
