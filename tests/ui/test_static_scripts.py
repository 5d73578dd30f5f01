"""The FinOps view's pages are plain scripts sharing one global scope (index.html loads them in
order): a top-level name defined in two files silently replaces the first, as a training-jobs
`loadShowback` once replaced the team showback table's loader. Each top-level name is defined once."""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

STATIC = Path(__file__).resolve().parents[2] / "plugins" / "finops" / "ui" / "static"
TOP_LEVEL = re.compile(
    r"^(?:async\s+)?function\s+([A-Za-z_$][\w$]*)|^(?:const|let|var|class)\s+([A-Za-z_$][\w$]*)", re.M
)


def test_no_top_level_name_is_defined_in_two_scripts():
    where: dict[str, list[str]] = defaultdict(list)
    scripts = sorted(STATIC.glob("*.js"))
    assert len(scripts) >= 5
    for js in scripts:
        for m in TOP_LEVEL.finditer(js.read_text()):
            where[m.group(1) or m.group(2)].append(js.name)
    assert {k: v for k, v in where.items() if len(v) > 1} == {}


def test_every_script_is_loaded_by_the_page():
    html = (STATIC / "index.html").read_text()
    assert {p.name for p in STATIC.glob("*.js")} <= set(re.findall(r'src="static/([\w.-]+\.js)"', html))
