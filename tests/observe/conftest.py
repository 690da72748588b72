"""Fixtures of the observability tests."""

from __future__ import annotations

import pytest


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


# the API-only server and worker processes on a real Postgres, as the worker tests use them
from server.test_workers_pg import tier  # noqa: E402, F401
