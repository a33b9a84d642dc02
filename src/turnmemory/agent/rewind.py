"""Rewinding a session (``turnmemory rewind``, ``/rewind``): its last turns leave the conversation and
its memory, and the files ``write_file`` and ``edit_file`` changed in them go back to their content
before those turns, from the checkpoints taken before each change (see
:mod:`turnmemory.agent.store._checkpoints`).

A file changed since the agent wrote it (by someone else) is not overwritten without asking: ``ask``
decides, and without it (headless) the file is reported and skipped. A file over the checkpoint bound,
or whose checkpoint was pruned, is reported, not restored. Changes made by bash commands are not
tracked, and the report says so. Turns before the latest compaction cannot be rewound (the summary
replaced them).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from turnmemory.agent.store import LoadedSession, SessionStore
from turnmemory.agent.store._checkpoints import FILE_BYTES, Checkpoints

__all__ = ["UNTRACKED", "checkpoints", "rewind", "rewindable_turns"]

UNTRACKED = "changes made by bash commands are not tracked, so they were not undone"


def checkpoints(store: SessionStore, session_id: str) -> Checkpoints:
    """The session's checkpoints, beside the store on this machine."""
    return Checkpoints(store.local_dir / "checkpoints", session_id)


def rewindable_turns(loaded: LoadedSession) -> list[int]:
    """The turns (their prompts' seqs) that can be rewound: those since the latest compaction, in order."""
    turns: list[int] = []
    for event in loaded.events:
        if event.kind == "compaction":
            turns.clear()
        elif event.kind == "user_message":
            turns.append(event.seq)
        elif event.kind == "rewind":
            turns = [turn for turn in turns if turn < event.data["from_seq"]]
    return turns


def rewind(
    store: SessionStore, session_id: str, turns: int, *, ask: Callable[[str], bool] | None
) -> list[str]:
    """Rewind the last ``turns`` turns of the session (claimed by the caller); one line per thing done
    or not done. ``ask(question)`` decides whether to overwrite a file changed since (``None``: skip)."""
    loaded = store.load(session_id, transcripts=False)
    available = rewindable_turns(loaded)
    if not available:
        return ["nothing to rewind: the session has no turn since its start or its latest compaction"]
    chosen = available[-turns:]
    lines = []
    if turns > len(chosen):
        lines.append(
            f"only {len(chosen)} turn{_s(len(chosen))} can be rewound (since the start or the latest compaction)"
        )
    saved = checkpoints(store, session_id)
    restores, problems = saved.plan(chosen)
    lines.extend(problems)
    for item in restores:
        shown = _shown(item.path, loaded.info.workspace)
        if item.state == "too_large":
            lines.append(f"not restored {shown}: it was over the {FILE_BYTES // 1024} KiB checkpoint bound")
            continue
        if item.state == "pruned":
            lines.append(
                f"not restored {shown}: its checkpoint was pruned (the session's checkpoints are bounded)"
            )
            continue
        if not saved.current(item):
            question = f"{shown} was changed since the agent wrote it: overwrite it with its content before?"
            if ask is None or not ask(question):
                lines.append(f"skipped {shown}: it was changed since the agent wrote it")
                continue
        try:
            saved.restore(item)
        except OSError as error:
            lines.append(f"not restored {shown}: {error.strerror or error}")
            continue
        lines.append(
            f"deleted {shown} (a rewound turn created it)" if item.state == "absent" else f"restored {shown}"
        )
    store.append(session_id, "rewind", {"from_seq": chosen[0], "turns": len(chosen)})
    saved.drop(chosen)
    lines.insert(0, f"rewound {len(chosen)} turn{_s(len(chosen))} of session {session_id[:8]}")
    lines.append(UNTRACKED)
    return lines


def _shown(path: str, workspace: str) -> str:
    inside = Path(path).is_relative_to(workspace) if workspace else False
    return str(Path(path).relative_to(workspace)) if inside else path


def _s(count: int) -> str:
    return "" if count == 1 else "s"
