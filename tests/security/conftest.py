"""Fixtures for the attack tests: the review server's fixtures (an in-process app with the
three reviewer tokens, stores on every backend) and a clean side-effect counter."""

from __future__ import annotations

from server.conftest import (  # noqa: F401  (fixtures are found by name)
    _clean_slate,
    agent,
    anyio_backend,
    local,
    secured,
    store_factory,
)
