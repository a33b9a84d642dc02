"""Bash as the agent reads and runs it: grammar, program tables, classifier, git guard, sandbox.

- :mod:`._grammar`: scripts as the shell reads them (tree-sitter-bash): which are plain, and every
  command they hold;
- :mod:`._argv`: a simple command's words split into options and operands as its program reads them;
- :mod:`._programs`: the per-program tables, from each manual: what a program's words make it do
  beyond its own work;
- :mod:`._danger`: the dangerous-command classifier;
- :mod:`._git_guard`: nothing a contained command writes runs on the host through git;
- :mod:`._sandbox`: the OS sandbox bash runs in (bubblewrap), its modes and its argv.

The permission rules (:mod:`turnmemory.agent.permissions`) read a command with the grammar and the
tables; the ``bash`` tool (:mod:`turnmemory.agent.tools.shell`) runs it in the sandbox.
"""

from turnmemory.agent.bash._danger import dangerous_reason
from turnmemory.agent.bash._sandbox import (
    SANDBOX_MODES,
    Sandbox,
    SandboxMode,
    open_sandbox,
    sandbox_unavailable,
)

__all__ = [
    "SANDBOX_MODES",
    "Sandbox",
    "SandboxMode",
    "dangerous_reason",
    "open_sandbox",
    "sandbox_unavailable",
]
