"""The turnmemory coding agent: tools, permissions, sessions, the agent loop, headless runs and the REPL."""
