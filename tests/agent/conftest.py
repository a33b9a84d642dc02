"""Fixtures for the agent tests: a fake provider server, an isolated data directory, agents wired to both."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.agent._host import USERS, Host, make_host
from tests.agent._postgres import Cluster, start_cluster
from tests.agent._support import MODELS, RecordingView, Run, fast_client

from turnmemory.agent.bash._sandbox import SandboxMode
from turnmemory.agent.config import AgentConfig
from turnmemory.agent.loop import Agent, ClientFactory
from turnmemory.agent.permissions import Access, Answer, parse_rules
from turnmemory.agent.store import SessionStore, open_store
from turnmemory.testing import FakeProviderServer


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An isolated user data directory (and AWS test credentials for Bedrock)."""
    path = tmp_path / "data"
    monkeypatch.setenv("TURNMEMORY_DATA_DIR", str(path))
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "test-key-id")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "test-secret")
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    monkeypatch.delenv("TURNMEMORY_STORE", raising=False)
    return path


@pytest.fixture(scope="session")
def postgres_cluster() -> Iterator[Cluster]:
    """A throwaway PostgreSQL cluster, started once per test process; skips where none can start."""
    found = start_cluster()
    if isinstance(found, str):
        pytest.skip(found)
    yield found
    found.remove()


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The sessions store of the test, on each backend: a SQLite file in the data directory, or an
    empty schema of the throwaway PostgreSQL cluster; ``$TURNMEMORY_STORE`` names it (the ``cli``
    fixture passes it on)."""
    if request.param == "sqlite":
        url = f"sqlite://{data_dir}/sessions.sqlite3"
    else:
        url = request.getfixturevalue("postgres_cluster").fresh_url()
    monkeypatch.setenv("TURNMEMORY_STORE", url)
    return url


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    return Path(os.path.realpath(path))


@pytest.fixture
def make_agent(server: FakeProviderServer, data_dir: Path, workspace: Path) -> Iterator[Callable[..., Agent]]:
    """``make_agent(provider, allow=(), ask=None, session_id=None, sandbox=..., client_factory=...,
    **settings)``: an in-process agent on the fake server (bash sandboxed as by default; ``sandbox="off"``
    for tests of bash permission prompts; ``settings`` are further :class:`AgentConfig` fields)."""
    stores: list[SessionStore] = []

    def make(
        provider: str,
        *,
        allow: tuple[str, ...] = (),
        ask: Callable[[Access], Answer] | None = None,
        session_id: str | None = None,
        sandbox: SandboxMode = "workspace-write",
        client_factory: ClientFactory = fast_client,
        **settings: Any,
    ) -> Agent:
        config = AgentConfig(
            provider=provider,
            model=MODELS[provider],
            base_url=server.base_url(provider),
            api_key=None if provider == "bedrock" else "test-key",
            region="us-east-1",
            allow=parse_rules(allow),
            sandbox=sandbox,
            **settings,
        )
        store = open_store(os.environ.get("TURNMEMORY_STORE"))
        stores.append(store)
        return Agent(
            config,
            store,
            workspace=str(workspace),
            view=RecordingView(),
            ask=ask,
            session_id=session_id,
            client_factory=client_factory,
        )

    yield make
    for store in stores:
        store.close()


@pytest.fixture
def cli(data_dir: Path, workspace: Path, tmp_path: Path) -> Run:
    """``cli(*args)``: run ``turnmemory`` in the workspace with an isolated data and config directory."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("TURNMEMORY_") and key not in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")
    }
    env.update(
        TURNMEMORY_DATA_DIR=str(data_dir),
        XDG_CONFIG_HOME=str(tmp_path / "config"),
        ANTHROPIC_API_KEY="test-key",
        OPENAI_API_KEY="test-key",
    )

    def run(
        *args: str, expect: int | None = 0, extra_env: dict[str, str] | None = None, timeout: float = 60
    ) -> subprocess.CompletedProcess[str]:
        store = (
            {"TURNMEMORY_STORE": os.environ["TURNMEMORY_STORE"]} if "TURNMEMORY_STORE" in os.environ else {}
        )
        done = subprocess.run(
            [sys.executable, "-m", "turnmemory.cli", *args],
            cwd=workspace,
            env={**env, **store, **(extra_env or {})},
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if expect is not None:
            assert done.returncode == expect, done.stderr
        return done

    run.env = env  # type: ignore[attr-defined]
    return run


@pytest.fixture(params=USERS)
def host(request: pytest.FixtureRequest) -> Iterator[Host]:
    """A machine in miniature owned by the user the agent runs as: root, or (when the tests run as
    root) ``nobody``."""
    yield from make_host(request.param)
