"""bench/rss.py reports a process's OWN peak memory.

Why: every bench script runs its stages in spawned children; Linux hands a fork + exec child
the parent's high-water mark in ru_maxrss, which had made the ingest bench report the
generator's memory as the loader's. The child here touches ~40 MB while its parent holds
~300 MB: ru_maxrss says >= 300, bench/rss.py must say < 200."""

from __future__ import annotations

import multiprocessing as mp
import resource

from tests.fixtures.bench_scripts import bench_script


def _rss_module():
    return bench_script("rss")


def _child(q: mp.Queue) -> None:
    rss = _rss_module()
    buf = bytearray(40 * 2**20)
    for i in range(0, len(buf), 4096):
        buf[i] = 1
    q.put((rss.peak_rss_mb(), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024))


def test_spawned_child_reports_its_own_peak_not_the_parents() -> None:
    held = bytearray(300 * 2**20)
    for i in range(0, len(held), 4096):
        held[i] = 1
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    p = ctx.Process(target=_child, args=(q,))
    p.start()
    own, inherited = q.get(timeout=120)
    p.join()
    del held
    assert inherited >= 300  # the trap: the parent's 300 MB
    assert 40 <= own < 200


def test_reset_peak_starts_a_new_high_water_mark() -> None:
    rss = _rss_module()
    buf = bytearray(120 * 2**20)
    for i in range(0, len(buf), 4096):
        buf[i] = 1
    before = rss.peak_rss_mb()
    del buf
    assert rss.reset_peak()
    after = rss.peak_rss_mb()
    assert after < before - 60
    assert abs(after - rss.current_rss_mb()) < 20
