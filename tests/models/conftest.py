"""Fixtures for the provider adapter tests: fake OpenAI / Anthropic servers on 127.0.0.1.

One server per provider for the session (starting uvicorn per test is slow); each test gets it
reset: no script, no recorded requests, no problems.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .fake_servers import FAKES, FakeAnthropic, FakeOpenAI, FakeProvider


@pytest.fixture(scope="session")
def _servers() -> Iterator[dict[str, FakeProvider]]:
    servers = {name: make().start() for name, make in FAKES.items()}
    yield servers
    for server in servers.values():
        server.stop()


def _fresh(servers: dict[str, FakeProvider], name: str) -> FakeProvider:
    server = servers[name]
    server.reset()
    return server


@pytest.fixture
def openai_fake(_servers: dict[str, FakeProvider]) -> FakeOpenAI:
    server = _fresh(_servers, "openai")
    assert isinstance(server, FakeOpenAI)
    return server


@pytest.fixture
def anthropic_fake(_servers: dict[str, FakeProvider]) -> FakeAnthropic:
    server = _fresh(_servers, "anthropic")
    assert isinstance(server, FakeAnthropic)
    return server


@pytest.fixture(params=["openai", "anthropic"])
def fake(request: pytest.FixtureRequest, _servers: dict[str, FakeProvider]) -> FakeProvider:
    """The same test against each provider's fake server."""
    return _fresh(_servers, str(request.param))
