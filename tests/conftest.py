"""Fixtures shared by every suite: one fake provider server per test module, reset before each test."""

from __future__ import annotations

import signal
from collections.abc import Iterator

import pytest

from turnmemory.testing import FakeProviderServer

# A shell without job control starts a background job with SIGINT and SIGQUIT ignored, and every process
# a test starts would inherit that: the tests of Ctrl-C need the signal delivered as a terminal does.
for _signal in (signal.SIGINT, signal.SIGQUIT):
    if signal.getsignal(_signal) == signal.SIG_IGN:
        signal.signal(_signal, signal.default_int_handler if _signal == signal.SIGINT else signal.SIG_DFL)


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
