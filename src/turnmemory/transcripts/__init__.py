"""Importers that turn other agents' real session logs into user turns and segment streams.

Formats: Claude Code session JSONL, OpenAI Codex CLI rollouts, OpenCode exports, SWE-agent
``.traj``, mini-swe-agent ``.traj.json``, OpenHands event lists and aider chat transcripts. Each importer is tolerant:
unknown record types are skipped and counted (``ImportedSession.skipped``), a malformed line is
reported in one readable line (``ImportedSession.problems``) and skipped. Tool calls are mapped onto this project's tools so that
:func:`replay_turn` through a :class:`~turnmemory.TurnRecorder` applies the retention rules::

    from turnmemory.transcripts import discover, load_session, replay_turn

    for path in discover(["~/.claude/projects"]):
        session = load_session(path)
        message, recorder = replay_turn(session.turns[0], session.workspace)
"""

from turnmemory.providers._read import as_text
from turnmemory.transcripts import _model
from turnmemory.transcripts._detect import FORMATS, detect_format, discover, load_session
from turnmemory.transcripts._model import *  # noqa: F403 - the imported form, every name of it
from turnmemory.transcripts._tools import tool_outcome

__all__ = ["FORMATS", "as_text", "detect_format", "discover", "load_session", "tool_outcome"]
__all__ += _model.__all__
