"""Fixtures for the OpenClaw differential tests, and a loud line when they skip."""

from __future__ import annotations

import pytest

from tests.openclaw.reference import SKIP_REASON, Reference, reference


@pytest.fixture(scope="session")
def openclaw() -> Reference:
    return reference()


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    skipped = terminalreporter.stats.get("skipped", [])
    if any(SKIP_REASON in str(getattr(r, "longrepr", "")) for r in skipped):
        terminalreporter.write_line("!" * 78, red=True)
        terminalreporter.write_line(SKIP_REASON, red=True, bold=True)
        terminalreporter.write_line("!" * 78, red=True)
