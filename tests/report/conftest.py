"""Fixtures of the report tests."""

from __future__ import annotations

from typing import Any

import pytest
from report_fixtures import make_result


@pytest.fixture
def result() -> dict[str, Any]:
    return make_result()
