"""``make demo``: one turn's TurnMemory, then what each history strategy does to real sessions.

First records an example multi-tool turn with :class:`turnmemory.TurnRecorder` and prints its
TurnMemory and the replay steps a later request is built from. Then runs ``turnmemory analyze`` over
the repository's ``examples/``, the user's own ``~/.claude/projects`` and ``~/.codex/sessions`` when
present, and ``../shared/data/transcripts`` next to the repository when present; prints the
comparison and writes the plot to ``demo-output/context.png``.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import turnmemory as tm

__all__ = ["example_turn", "main", "sources"]

_REPO = Path(__file__).resolve().parents[1]
_PLOT = Path("demo-output") / "context.png"
_WORKSPACE = "/srv/project"


def example_turn() -> tm.Message:
    """The spec's example turn: an edit that changes a file, a failing test run, a read."""
    recorder = tm.TurnRecorder(workspace=_WORKSPACE)
    recorder.text("Let me update the stream handler. ")
    path = f"{_WORKSPACE}/internal/cli/repl/stream_handler.go"
    recorder.tool_start(
        "call_1", "edit_file", {"path": path, "oldString": "case Done:", "newString": "case Done, Stop:"}
    )
    recorder.tool_end("call_1", output={"file_changed": path})
    recorder.tool_start("call_2", "bash", {"command": "go test ./..."})
    recorder.tool_end("call_2", output={"exit_code": 1, "output": "--- FAIL: TestStream (0.01s)\n..."})
    recorder.seal()
    recorder.text("One test still expects the old order; reading it. ")
    recorder.tool_start("call_3", "read_file", {"path": f"{_WORKSPACE}/internal/cli/repl/stream_test.go"})
    recorder.tool_end("call_3", output={"content": "package repl\n..."})
    recorder.seal()
    recorder.text("The terminal event is now handled after content blocks finish.")
    return recorder.finish()


def print_story(message: tm.Message) -> None:
    """The turn's prose, its TurnMemory and its replay steps, in lines of at most 80 columns."""
    print("== One assistant turn, as TurnMemory keeps it ==")
    print(f"prose ({len(message.content.encode())} bytes):")
    print(textwrap.fill(repr(message.content), 80, initial_indent="  ", subsequent_indent="  "))
    memory = message.turn_memory.to_dict() if message.turn_memory else {}
    print("turn_memory:", json.dumps(memory, ensure_ascii=False, indent=2))
    print("\n== What a later request replays (historical_steps) ==")
    for number, step in enumerate(tm.historical_steps(message, message_index=1), start=1):
        print(f"step {number}: text {step.text!r}")
        for call in step.calls:
            print(f"    {call.name}({json.dumps(call.arguments)})  [{call.id}]")
            print(
                textwrap.fill(
                    f"-> {json.dumps(call.result)}",
                    80,
                    initial_indent="      ",
                    subsequent_indent="         ",
                )
            )
    print()


def sources() -> list[Path]:
    """The session folders the demo analyses: those that exist."""
    candidates = [
        _REPO / "examples",
        Path.home() / ".claude" / "projects",
        Path.home() / ".codex" / "sessions",
        _REPO.parent / "shared" / "data" / "transcripts",
    ]
    return [path for path in candidates if path.is_dir()]


def main(paths: list[Path] | None = None, plot: Path = _PLOT) -> None:
    """Run the demo over ``paths`` (default: :func:`sources`), drawing the plot to ``plot``."""
    print_story(example_turn())
    found = sources() if paths is None else paths
    if not found:
        print("No session logs found (examples/, ~/.claude/projects, ~/.codex/sessions).")
        return
    from turnmemory.analysis._measure import open_meter
    from turnmemory.analysis._plot import MAX_PANELS, plot_report
    from turnmemory.analysis.command import analyze_files, print_table

    print("== What each history strategy carries across user turns ==")
    print("sources:", ", ".join(str(path) for path in found))
    meter = open_meter("o200k")
    if meter.note:
        print(f"note: {meter.note}")
    report = analyze_files(found, meter).report
    print_table(report, sessions=MAX_PANELS)
    plot.parent.mkdir(parents=True, exist_ok=True)
    panels = plot_report(report, plot)
    print(f"plot ({panels} sessions): {plot}")


if __name__ == "__main__":
    main()
