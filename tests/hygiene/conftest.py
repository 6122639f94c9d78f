"""The hygiene tests observe the whole machine's CPU (other processes, steal, the verdict): ``make test`` runs
them after its parallel part, alone (``serial``), so a test in another worker is never what they see."""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/hygiene/" in str(item.path).replace("\\", "/"):
            item.add_marker(pytest.mark.serial)
