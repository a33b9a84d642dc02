"""The turnmemory coding agent: tools, permissions, sessions, the agent loop, headless runs and the REPL.

:class:`Agent` runs one session turn by turn over a :class:`SessionStore`; the ``turnmemory run``
and ``turnmemory chat`` commands are its two front ends. Importing this package loads neither the
provider SDKs nor the terminal libraries.
"""

from turnmemory.agent.config import AgentConfig, ConfigError, load_config
from turnmemory.agent.loop import Agent, ClientFactory, ContextLayer, TurnOutcome, View, open_agent_client
from turnmemory.agent.permissions import (
    Access,
    Answer,
    Asker,
    Decision,
    Permissions,
    Rule,
    dangerous_reason,
    parse_rule,
    parse_rules,
    resolve_path,
)
from turnmemory.agent.prompt import system_prompt
from turnmemory.agent.store import LoadedSession, SessionStore, SessionSummary, data_dir, transcript_items
from turnmemory.agent.tools import Action, Tool, ToolContext, ToolError, ToolRegistry, builtin_tools

__all__ = [
    "Access",
    "Action",
    "Agent",
    "AgentConfig",
    "Answer",
    "Asker",
    "ClientFactory",
    "ConfigError",
    "ContextLayer",
    "Decision",
    "LoadedSession",
    "Permissions",
    "Rule",
    "SessionStore",
    "SessionSummary",
    "Tool",
    "ToolContext",
    "ToolError",
    "ToolRegistry",
    "TurnOutcome",
    "View",
    "builtin_tools",
    "dangerous_reason",
    "data_dir",
    "load_config",
    "open_agent_client",
    "parse_rule",
    "parse_rules",
    "resolve_path",
    "system_prompt",
    "transcript_items",
]
