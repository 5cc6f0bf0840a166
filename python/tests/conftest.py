"""Honest skips. Under CAKE_REQUIRE_ALL=1 (set by scripts/test.sh, so in CI) a test skipped for
a reason CI could satisfy (torch not importable, no nvcc, no wheel, no C compiler) fails
instead: scripts/test.sh installs all of those. Only a skip whose reason starts with one of
CI_CANNOT_PROVIDE stays a skip, so a test that CI cannot run says why in its reason's first
words: `pytest.skip("needs a GPU: ...")`. The Rust tests do the same with crates/cake-testkit.
"""

from __future__ import annotations

import os

import pytest

# CI has no GPU and no CUDA driver (so the tests that need a driver's absence always run there).
CI_CANNOT_PROVIDE = ("needs a GPU:", "needs a machine without a CUDA driver:")


def _require_all() -> bool:
    return os.environ.get("CAKE_REQUIRE_ALL", "") not in ("", "0")


def _fail_unexcused_skip(report) -> None:
    if not report.skipped or hasattr(report, "wasxfail") or not _require_all():
        return
    longrepr = report.longrepr
    reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
    if reason.startswith("Skipped: "):
        reason = reason[len("Skipped: "):]
    if reason.startswith(CI_CANNOT_PROVIDE):
        return
    report.outcome = "failed"
    report.longrepr = (
        f"skipped under CAKE_REQUIRE_ALL=1: {reason}\n"
        "scripts/test.sh (and so CI) provides what the tests need; only skips whose reason "
        f"starts with one of {CI_CANNOT_PROVIDE} are allowed (python/tests/conftest.py)"
    )


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    _fail_unexcused_skip(outcome.get_result())


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    # Module-level skips (pytest.importorskip, allow_module_level=True) happen at collection.
    outcome = yield
    _fail_unexcused_skip(outcome.get_result())
