"""The redactor measured: recall on the secrets corpus, changes on real sessions, and its cost.

    .venv/bin/python benchmarks/redaction.py [--transcripts DIR] [--list]

- **Recall**: every shape of ``tests/secrets_corpus.py`` through retention (``bash`` target and
  ``failed_command``): how many leave no secret value behind.
- **Precision on real sessions**: every tool call of the real sessions in ``../shared/data/transcripts``
  (imported with ``turnmemory.transcripts``), its raw target as the tool's retention rule reads it,
  before and after :func:`turnmemory.redaction.redact`; the share changed, and (``--list``) every change.
- **Cost**: ``redact`` per target (first sight, not memoized) and ``bound_text`` per target, against one
  ``json.dumps`` of the tool call's input, measured side by side.
"""

from __future__ import annotations

import argparse
import difflib
import gc
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.secrets_corpus import CORPUS  # noqa: E402

from turnmemory import redaction  # noqa: E402
from turnmemory._text import bound_text  # noqa: E402
from turnmemory.retention import DEFAULT_RULES, retain  # noqa: E402
from turnmemory.transcripts import ToolCall, discover, load_session  # noqa: E402

TRANSCRIPTS = ROOT / ".." / "shared" / "data" / "transcripts"


def recall() -> tuple[int, int, list[str]]:
    """(shapes, shapes fully redacted, names of those that leaked)."""
    leaked: list[str] = []
    for shape in CORPUS:
        activity = retain(0, "bash", {"command": shape.text}, output={"exit_code": 1})
        stored = json.dumps(activity.to_dict(), ensure_ascii=False)
        if any(secret in stored for secret in shape.secrets):
            leaked.append(shape.name)
    return len(CORPUS), len(CORPUS) - len(leaked), leaked


def real_calls(root: Path) -> list[tuple[str, ToolCall, str]]:
    """(session file, call, raw target) of every call with a target rule in the real sessions."""
    found: list[tuple[str, ToolCall, str]] = []
    for path in discover([str(root)]):
        try:
            session = load_session(path)
        except (OSError, ValueError):
            continue
        for turn in session.turns:
            for event in turn.events:
                if not isinstance(event, ToolCall):
                    continue
                rule = DEFAULT_RULES.get(event.name)
                if rule is None or rule.target is None:
                    continue
                raw = rule.target(event.arguments, None)
                if raw:
                    found.append((Path(path).name, event, " ".join(raw.split())))
    return found


def replaced(raw: str, redacted: str) -> list[tuple[str, str]]:
    """Each redacted stretch of ``raw``: (the 50 characters before it, what was removed)."""
    matcher = difflib.SequenceMatcher(None, raw, redacted, autojunk=False)
    return [
        (raw[max(0, i1 - 50) : i1], raw[i1:i2][:120])
        for tag, i1, i2, _, _ in matcher.get_opcodes()
        if tag != "equal"
    ]


def per_call(fn: Callable[[], object], calls: int, repeat: int = 5) -> float:
    """Best mean seconds per call of ``fn`` (which makes ``calls`` calls)."""
    best = float("inf")
    for _ in range(repeat):
        gc.disable()
        start = time.perf_counter()
        fn()
        best = min(best, (time.perf_counter() - start) / calls)
        gc.enable()
    return best


def main() -> None:
    """Print the three measurements."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--transcripts", type=Path, default=TRANSCRIPTS)
    parser.add_argument("--list", action="store_true", help="print every change on the real sessions")
    args = parser.parse_args()

    total, clean, leaked = recall()
    print(f"recall on the corpus: {clean}/{total} shapes leave no secret in the retained activity")
    for name in leaked:
        print(f"  LEAKED: {name}")

    if not args.transcripts.is_dir():
        print(f"no real sessions at {args.transcripts}: precision and cost skipped")
        return
    calls = real_calls(args.transcripts)
    targets = [raw for _, _, raw in calls]
    changed = [(file, call, raw, redaction.redact(raw)) for file, call, raw in calls]
    changed = [entry for entry in changed if entry[2] != entry[3]]
    distinct = len(set(targets))
    print(
        f"real sessions: {len(targets)} targets ({distinct} distinct); the redactor changes "
        f"{len(changed)} ({len(changed) / max(1, len(targets)):.2%})"
    )
    if args.list:
        for file, call, raw, redacted in changed:
            print(f"- `{file}` {call.name}:")
            for before, removed in replaced(raw, redacted):
                print(f"  - `...{before}` `{removed}` -> `[REDACTED]`")

    inputs = [call.arguments for _, call, _ in calls]
    unique = sorted(set(targets))

    def redact_all() -> None:
        for text in unique:
            redaction._redact(text)

    def bound_all() -> None:
        for text in targets:
            bound_text(text)

    def dumps_all() -> None:
        for arguments in inputs:
            json.dumps(arguments)

    redact_cost = per_call(redact_all, len(unique))
    bound_cost = per_call(bound_all, len(targets))
    dumps_cost = per_call(dumps_all, len(inputs))
    print()
    print("| operation (per target) | time | json.dumps(input) | ratio |")
    print("|---|---:|---:|---:|")
    for label, cost in (
        ("redact, first sight (not memoized)", redact_cost),
        ("bound_text as retention calls it (memoized)", bound_cost),
    ):
        print(f"| {label} | {cost * 1e6:.2f} µs | {dumps_cost * 1e6:.2f} µs | {cost / dumps_cost:.2f}x |")


if __name__ == "__main__":
    main()
