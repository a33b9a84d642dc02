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
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.secrets_corpus import CORPUS  # noqa: E402

from turnmemory import _text, redaction  # noqa: E402
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

    cost_table(calls)


def cost_table(calls: list[tuple[str, ToolCall, str]]) -> None:
    """Per real tool call, first sight (memo caches cleared): ``retain`` with and without the redactor,
    and ``redact`` of the raw target alone, against one ``json.dumps`` of the call's input."""
    inputs = [(call.name, call.arguments) for _, call, _ in calls]
    targets = [raw for _, _, raw in calls]

    def clear() -> None:
        redaction._redact_short.cache_clear()
        _text._bound_short.cache_clear()

    def timed(fn: Callable[[int], object]) -> list[float]:
        best = [float("inf")] * len(calls)
        for _ in range(5):
            clear()
            gc.disable()
            for index in range(len(calls)):
                start = time.perf_counter()
                fn(index)
                best[index] = min(best[index], time.perf_counter() - start)
            gc.enable()
        return best

    dumps = timed(lambda i: json.dumps(inputs[i][1]))
    redact = timed(lambda i: redaction._redact(targets[i]))
    retained = timed(lambda i: retain(0, inputs[i][0], inputs[i][1], output={"exit_code": 1}))
    original = redaction._redact
    redaction._redact = lambda text: text  # type: ignore[assignment]
    try:
        bare = timed(lambda i: retain(0, inputs[i][0], inputs[i][1], output={"exit_code": 1}))
    finally:
        redaction._redact = original  # type: ignore[assignment]
    print()
    print(f"cost per real tool call ({len(calls)} calls, caches cleared; median and mean):")
    print()
    print("| per tool call | median | vs json.dumps | mean | vs json.dumps |")
    print("|---|---:|---:|---:|---:|")
    base_median, base_mean = statistics.median(dumps), statistics.fmean(dumps)
    for label, values in (
        ("json.dumps(input)", dumps),
        ("retain, redactor off", bare),
        ("retain (the redactor on every retained string)", retained),
        ("redact(target) alone", redact),
    ):
        median, mean = statistics.median(values), statistics.fmean(values)
        print(
            f"| {label} | {median * 1e6:.1f} µs | {median / base_median:.1f}x "
            f"| {mean * 1e6:.1f} µs | {mean / base_mean:.1f}x |"
        )
    share = 1 - statistics.fmean(bare) / statistics.fmean(retained)
    print(f"\nthe redactor's share of retain (mean): {share:.0%}")


if __name__ == "__main__":
    main()
