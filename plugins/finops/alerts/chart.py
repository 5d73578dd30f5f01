"""PNG charts for emails and reports, drawn with matplotlib's Agg canvas (no display, no
pyplot global state, safe in worker processes). matplotlib is imported lazily."""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from datetime import date


def daily_chart_png(
    series: Mapping[str, Sequence[tuple[date, float]]], title: str, ylabel: str = "cost"
) -> bytes:
    """Stacked daily bars, one colour per series (e.g. per showback line)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(8, 3.2), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    days = sorted({d for pts in series.values() for d, _ in pts})
    bottom = [0.0] * len(days)
    idx = {d: i for i, d in enumerate(days)}
    for name, pts in series.items():
        vals = [0.0] * len(days)
        for d, v in pts:
            vals[idx[d]] += float(v)
        # matplotlib's date converter takes dates on the x axis; its stubs list only numbers
        ax.bar(days, vals, bottom=bottom, label=str(name)[:40], width=0.8)  # type: ignore[arg-type]
        bottom = [b + v for b, v in zip(bottom, vals, strict=True)]
    ax.set_title(title[:120])
    ax.set_ylabel(ylabel)
    if series:
        ax.legend(loc="upper left", fontsize=7, ncols=min(len(series), 4))
    fig.autofmt_xdate()
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()
