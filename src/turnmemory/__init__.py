"""turnmemory: turn-boundary tool-history memory for coding agents.

At the end of each assistant turn the raw tool trace is replaced by a compact ``TurnMemory``: which
tools ran where in the prose, with what status, plus changed files and failed commands. Provider
modules (``turnmemory.providers``) replay it as native historical tool-call/result blocks.
"""

from turnmemory.memory import Message, Role, ToolActivity, TurnMemory
from turnmemory.replay import HistoricalCall, Step, historical_steps
from turnmemory.retention import DEFAULT_RULES, ToolRule
from turnmemory.segments import Segment, TurnRecorder

__all__ = [
    "DEFAULT_RULES",
    "HistoricalCall",
    "Message",
    "Role",
    "Segment",
    "Step",
    "ToolActivity",
    "ToolRule",
    "TurnMemory",
    "TurnRecorder",
    "historical_steps",
]

__version__ = "0.1.0"
