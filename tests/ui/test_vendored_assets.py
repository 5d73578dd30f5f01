"""The Chart.js the FinOps view vendors is the one package.json declares (and the lock pins),
byte for byte the npm package's build where `npm ci` has installed it."""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
VENDORED = ROOT / "plugins/finops/ui/static/vendor/chart.umd.min.js"


def _declared() -> str:
    version = json.loads((ROOT / "package.json").read_text())["dependencies"]["chart.js"]
    assert re.fullmatch(r"\d+\.\d+\.\d+", version), f"pin an exact Chart.js version, not {version!r}"
    return str(version)


def test_vendored_chartjs_matches_package_json():
    version = _declared()
    banner = re.search(r"Chart\.js v(\S+)", VENDORED.read_text(encoding="utf-8")[:300])
    assert banner is not None and banner.group(1) == version
    lock = json.loads((ROOT / "package-lock.json").read_text())["packages"]
    assert lock["node_modules/chart.js"]["version"] == version
    assert lock[""]["dependencies"]["chart.js"] == version
    assert (VENDORED.parent / "chart.js.LICENSE.md").is_file()
    installed = ROOT / "node_modules/chart.js"
    if (installed / "package.json").is_file():  # after `npm ci`: byte for byte the npm build
        assert json.loads((installed / "package.json").read_text())["version"] == version
        assert (installed / "dist/chart.umd.min.js").read_bytes() == VENDORED.read_bytes()
