"""Opening an agent for a front end: configuration, sessions store, MCP servers; closing them all."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

from turnmemory.agent._spill import SpillArea
from turnmemory.agent.config import AgentConfig, ConfigError
from turnmemory.agent.loop import Agent, View
from turnmemory.agent.permissions import Asker
from turnmemory.agent.store import LoadedSession, SessionStore, open_store

__all__ = ["open_agent", "pick_session"]


def _continued(config: AgentConfig, loaded: LoadedSession, view: View) -> AgentConfig:
    """``config`` switched to the provider and model the session last used, when it can be opened."""
    used = loaded.model
    if used is None or used == (config.provider, config.model):
        return config
    try:
        return config.switched(*used)
    except ConfigError as error:
        view.notice(f"the session last used {used[0]} {used[1]}, which cannot be opened here ({error})")
        return config


def pick_session(store: SessionStore, workspace: str, session: str | None, latest: bool) -> str | None:
    """The session to resume: ``session`` (an id or unique prefix), the workspace's latest, or none."""
    if session:
        try:
            return store.resolve(session)
        except KeyError as error:
            raise ConfigError(str(error.args[0])) from None
    if latest:
        found = store.latest(workspace)
        if found is None:
            raise ConfigError(f"no session to continue in {workspace}")
        return found
    return None


@contextmanager
def open_agent(
    config: AgentConfig,
    *,
    workspace: str,
    view: View,
    ask: Asker | None,
    session: str | None = None,
    latest: bool = False,
    session_model: bool = False,
) -> Iterator[Agent]:
    """An :class:`Agent` with the store and the configured MCP servers, all closed on exit (Ctrl-C too).

    With ``session_model`` a resumed session continues with the provider and model it last used
    (a ``/model`` switch included) instead of the configured ones.
    """
    workspace = os.path.realpath(workspace)
    if not os.path.isdir(workspace):
        raise ConfigError(f"workspace is not a directory: {workspace}")
    with ExitStack() as stack:
        store = stack.enter_context(open_store(config.store))
        spill = SpillArea(store.spill_root)
        stack.callback(spill.close)
        for notice in store.notices:
            view.notice(notice)
        session_id = pick_session(store, workspace, session, latest)
        loaded = None
        if session_id is not None:
            store.claim(session_id)  # before reading: no other process appends to it from here on
            loaded = store.load(session_id, transcripts=False)
            if session_model:
                config = _continued(config, loaded, view)
        extra_tools = []
        catalogue = ""
        if config.mcp:
            from turnmemory.agent.mcp import McpManager, mcp_tools, parse_mcp_config

            try:
                servers = parse_mcp_config(config.mcp)
            except ValueError as error:
                raise ConfigError(f"{config.path or 'config'}: {error}") from None
            if servers:
                manager = stack.enter_context(
                    McpManager(servers, spill_dir=spill.path / "mcp", notice=view.notice)
                )
                extra_tools = mcp_tools(manager)
                catalogue = manager.catalogue_text()
        yield Agent(
            config,
            store,
            workspace=workspace,
            view=view,
            ask=ask,
            session_id=session_id,
            extra_tools=extra_tools,
            mcp_catalogue=catalogue,
            spill=spill,
            loaded=loaded,
        )
