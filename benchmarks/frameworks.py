"""LangChain's ClearToolUsesEdit against TurnMemoryMiddleware on the same real sessions.

    .venv/bin/python benchmarks/frameworks.py [--repeat 3] [PATH ...]   # default: ../shared/data/transcripts

Every imported session becomes the LangChain message list a ``create_agent`` graph state would hold
for it: ``HumanMessage`` per user turn, an ``AIMessage`` per loop iteration with the agent's own tool
names and real arguments, a ``ToolMessage`` with the real output per call (``status="error"`` for a
failed call). At the first model call of every later user turn (turns 2..n, the request that carries
all earlier turns) both middlewares do, side by side in one process, what their ``wrap_model_call``
does before the model is called:

- ``ContextEditingMiddleware`` with ``ClearToolUsesEdit``: ``deepcopy`` of the messages, then the
  edit with ``count_tokens_approximately`` — once with LangChain's defaults (trigger 100k tokens,
  keep 3) and once set to clear everything it can (trigger 0, keep 0, inputs cleared too);
- ``TurnMemoryMiddleware``: one per session (as one per conversation), its ``compact``, with
  ``ToolRule``\\ s that read each agent's own argument names (``file_path``, ``cmd``, ...).

It prints the approximate tokens each sends into later turns (LangChain's ``count_tokens_approximately``,
summed over those requests) and the time per model call (mean and worst over those requests, each
call's time the best of ``--repeat`` whole runs, every run with fresh middlewares).
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from turnmemory.analysis._trace import Call, conversation
from turnmemory.retention import DEFAULT_RULES, ToolRule, command_target, path_target
from turnmemory.transcripts import ImportedSession, discover, load_session

try:
    from langchain.agents.middleware.context_editing import ClearToolUsesEdit
    from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
    from langchain_core.messages.utils import count_tokens_approximately

    from turnmemory.integrations.langchain import TurnMemoryMiddleware
except ImportError:  # pragma: no cover - the benchmark environment installs them
    sys.exit("frameworks: install the langchain extra first (pip install '.[langchain]')")

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data" / "transcripts"

_PATH_KEYS = ("path", "file_path", "filePath", "notebook_path")
_COMMAND_KEYS = ("command", "cmd")


def session_rules(session: ImportedSession) -> dict[str, ToolRule]:
    """Rules for the agent's own tool names: each keeps what its mapped project tool keeps."""
    rules: dict[str, ToolRule] = dict(DEFAULT_RULES)
    for turn in session.turns:
        for call in turn.tool_calls:
            kind = DEFAULT_RULES[call.name].outcome if call.name in DEFAULT_RULES else "none"
            if kind == "exit_code":
                rules[call.source_name] = ToolRule(target=command_target(*_COMMAND_KEYS), outcome=kind)
            elif call.name in ("read_file", "write_file", "edit_file"):
                rules[call.source_name] = ToolRule(target=path_target(*_PATH_KEYS), outcome=kind)
    return rules


def _arguments(call: Call) -> dict[str, Any]:
    try:
        value = json.loads(call.arguments)
    except ValueError:
        return {"input": call.arguments}
    return value if isinstance(value, dict) else {"input": value}


def langchain_turns(session: ImportedSession) -> list[list[AnyMessage]]:
    """Each user turn of the session as the LangChain messages the graph state gains with it."""
    turns: list[list[AnyMessage]] = []
    for turn in conversation(session):
        messages: list[AnyMessage] = [HumanMessage(turn.user or "(empty)")]
        for iteration in turn.iterations:
            if not iteration.prose and not iteration.calls:
                continue
            tool_calls = [{"id": c.id, "name": c.name, "args": _arguments(c)} for c in iteration.calls]
            messages.append(AIMessage(content=iteration.prose, tool_calls=tool_calls))
            messages.extend(
                ToolMessage(
                    content=c.result,
                    tool_call_id=c.id,
                    name=c.name,
                    status="error" if c.is_error else "success",
                )
                for c in iteration.calls
            )
        turns.append(messages)
    return turns


def clear_tool_uses(edit: ClearToolUsesEdit) -> Callable[[list[AnyMessage]], list[AnyMessage]]:
    """What ContextEditingMiddleware.wrap_model_call does with ``edit`` before calling the model."""

    def run(messages: list[AnyMessage]) -> list[AnyMessage]:
        edited = copy.deepcopy(messages)
        edit.apply(edited, count_tokens=count_tokens_approximately)
        return edited

    return run


STRATEGIES: Mapping[str, str] = {
    "full": "full trace",
    "clear_default": "ClearToolUsesEdit, defaults",
    "clear_all": "ClearToolUsesEdit, trigger 0, keep 0, inputs cleared",
    "turnmemory": "TurnMemoryMiddleware",
}


def measure(paths: Sequence[Path]) -> tuple[int, int, dict[str, int], dict[str, list[float]]]:
    """Sessions, later-turn requests, tokens sent and per-call times of every strategy."""
    tokens = dict.fromkeys(STRATEGIES, 0)
    times: dict[str, list[float]] = {name: [] for name in STRATEGIES}
    sessions = requests = 0
    for path in paths:
        try:
            session = load_session(path)
        except ValueError:
            continue
        turns = langchain_turns(session)
        if len(turns) < 2:
            continue
        sessions += 1
        middleware = TurnMemoryMiddleware(rules=session_rules(session), workspace=session.workspace)
        run: dict[str, Callable[[list[AnyMessage]], list[AnyMessage]]] = {
            "full": list,
            "clear_default": clear_tool_uses(ClearToolUsesEdit()),
            "clear_all": clear_tool_uses(ClearToolUsesEdit(trigger=0, keep=0, clear_tool_inputs=True)),
            "turnmemory": middleware.compact,
        }
        state: list[AnyMessage] = list(turns[0])
        for turn in turns[1:]:
            request = [*state, turn[0]]  # the first model call of the new turn
            requests += 1
            for name, fn in run.items():
                start = time.perf_counter()
                sent = fn(request)
                times[name].append(time.perf_counter() - start)
                tokens[name] += count_tokens_approximately(sent)
            state.extend(turn)
    return sessions, requests, tokens, times


def main() -> None:
    """Print the comparison table."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("paths", nargs="*", type=Path)
    parser.add_argument("--repeat", type=int, default=3, help="runs; each call's time is its best run")
    args = parser.parse_args()
    if not args.paths and not DATA.is_dir():
        print(f"frameworks: the shared sessions are not at {DATA}; nothing to compare")
        return
    missing = [str(p) for p in args.paths if not p.exists()]
    if missing:
        sys.exit(f"frameworks: not found: {', '.join(missing)}")
    paths = sorted(discover([str(p) for p in args.paths or [DATA]]))
    runs = [measure(paths) for _ in range(args.repeat)]
    sessions, requests, tokens, _ = runs[0]
    if not requests:
        print("frameworks: no session with two user turns was found; nothing to compare")
        return
    times = {
        name: [min(samples) for samples in zip(*(run[3][name] for run in runs), strict=True)]
        for name in STRATEGIES
    }
    print(
        f"\n### Later-turn requests through LangChain middleware: {sessions} multi-turn sessions, {requests} requests\n"
    )
    print("| strategy | tokens sent into later turns | vs full | time per model call, mean | worst |")
    print("|---|---:|---:|---:|---:|")
    for name, label in STRATEGIES.items():
        mean = statistics.fmean(times[name]) * 1e3
        worst = max(times[name]) * 1e3
        print(
            f"| {label} | {tokens[name]:,} | {tokens[name] / tokens['full']:.0%} | {mean:.2f} ms | {worst:.2f} ms |"
        )
    print(
        "\nTokens: LangChain's count_tokens_approximately of the messages each middleware hands to the model at the"
        " first call of turns 2..n, summed. Times: the middleware's work before that call, in one process, side by side."
    )


if __name__ == "__main__":
    main()
