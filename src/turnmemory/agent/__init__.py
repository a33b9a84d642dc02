"""The turnmemory coding agent: tools, permissions, sessions, the agent loop, headless runs and the REPL.

An application, not a library: ``turnmemory run`` and ``turnmemory chat`` are its two front ends, and
its modules are imported by name (:mod:`.loop` holds :class:`~turnmemory.agent.loop.Agent`,
:mod:`.config` its settings, :mod:`.store` the sessions store, :mod:`.tools` and
:mod:`.permissions` what the model may do). Importing this package loads neither the provider SDKs
nor the terminal libraries.
"""

__all__: list[str] = []
