"""Fixtures shared by every suite: one fake provider server per test module, reset before each test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from turnmemory.testing import FakeProviderServer


@pytest.fixture(scope="module")
def module_server() -> Iterator[FakeProviderServer]:
    """A loopback fake provider server for the whole test module."""
    with FakeProviderServer() as server:
        yield server


@pytest.fixture
def server(module_server: FakeProviderServer) -> Iterator[FakeProviderServer]:
    """The module's server with an empty script; a test must consume what it pushes."""
    module_server.reset()
    yield module_server
    assert module_server.remaining == 0, "the test left scripted items unconsumed"
