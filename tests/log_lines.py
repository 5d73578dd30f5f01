"""Messages logged to one logger during a block, read through a handler on that logger itself.

Not pytest's caplog: the Airflow provider hooks the loads use may reconfigure logging
mid-test, which drops caplog's root handler."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager


class _Lines(logging.Handler):
    def __init__(self, level: int) -> None:
        super().__init__(level)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@contextmanager
def log_lines(name: str, level: int = logging.INFO) -> Iterator[list[str]]:
    """The messages of logger `name` at `level` and above, while inside."""
    logger = logging.getLogger(name)
    handler = _Lines(level)
    old_level = logger.level
    logger.addHandler(handler)
    logger.setLevel(min(level, logger.getEffectiveLevel()))
    try:
        yield handler.lines
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)
