"""The redactor measured: recall on the secrets corpus, changes on real sessions, its cost, its
throughput on real tool traffic and its growth on adversarial inputs, beside detect-secrets.

    .venv/bin/pip install -r benchmarks/requirements.txt    # detect-secrets
    .venv/bin/python benchmarks/redaction.py [--transcripts DIR] [--list]

- **Recall**: every shape of ``tests/secrets_corpus.py`` through retention (``bash`` target and
  ``failed_command``): how many leave no secret value behind.
- **Precision on real sessions**: every tool call of the real sessions in ``../shared/data/transcripts``
  (imported with ``turnmemory.transcripts``), its raw target as the tool's retention rule reads it,
  before and after :func:`turnmemory.redaction.redact`; the share changed, and (``--list``) every change.
- **Provider error bodies** (``tests/provider_errors.py``): how many the redactor changes beyond the
  key fragments they echo.
- **Cost**: ``redact`` per target (first sight, not memoized) and ``bound_text`` per target, against one
  ``json.dumps`` of the tool call's input, measured side by side.
- **Throughput**: MB/s of CPU time over every tool input and result text of the real sessions, for
  ``redact`` and for detect-secrets' line scanner (``scan_line`` on each line, default plugins).
- **Growth**: CPU time from 10 KB to 100 KB of each adversarial shape of ``tests/adversarial.py``
  (10x is linear, 100x quadratic), for both; the worst factor of each.
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

from tests.adversarial import ISSUE_SHAPES, Shape  # noqa: E402
from tests.provider_errors import ERROR_BODIES  # noqa: E402
from tests.secrets_corpus import CORPUS  # noqa: E402

from turnmemory import _text, redaction  # noqa: E402
from turnmemory.retention import DEFAULT_RULES, retain  # noqa: E402
from turnmemory.transcripts import ToolCall, ToolResult, discover, load_session  # noqa: E402

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
    error_bodies()
    growth_table()

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
    throughput_table(traffic(args.transcripts))


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


def error_bodies() -> None:
    """How many provider error bodies the redactor changes beyond the key fragments they echo."""
    changed = [
        body for body, keys in ERROR_BODIES if _without(redaction.redact(body)) != _without(body, keys)
    ]
    print(f"provider error bodies: {len(ERROR_BODIES)}; changed beyond an echoed key: {len(changed)}")
    for body in changed:
        print(f"  CHANGED: {body[:100]}")


def _without(text: str, keys: tuple[str, ...] = (redaction.REDACTED,)) -> str:
    for key in keys:
        text = text.replace(key, "")
    return text


def traffic(root: Path) -> list[str]:
    """Every tool input and tool result text of the real sessions."""
    texts: list[str] = []
    for path in discover([str(root)]):
        try:
            session = load_session(path)
        except (OSError, ValueError):
            continue
        for turn in session.turns:
            for event in turn.events:
                if isinstance(event, ToolCall) and event.source_input:
                    texts.append(event.source_input)
                elif isinstance(event, ToolResult) and event.text:
                    texts.append(event.text)
    return texts


_OPEN: list[object] = []  # detect-secrets' settings, kept open (closing them clears its plugins)


def _detect_secrets() -> Callable[[str], object] | None:
    """detect-secrets' line scanner with its default plugins, or ``None`` when it is not installed."""
    try:
        from detect_secrets.core.scan import scan_line
        from detect_secrets.settings import default_settings
    except ImportError:
        return None
    settings = default_settings()
    settings.__enter__()  # the default plugins stay configured for the rest of the run
    _OPEN.append(settings)

    def scan(text: str) -> object:
        return [list(scan_line(line)) for line in text.splitlines()]

    return scan


def _cpu(work: Callable[[], object]) -> float:
    gc.disable()
    try:
        start = time.process_time()
        work()
        return time.process_time() - start
    finally:
        gc.enable()


def throughput_table(texts: list[str]) -> None:
    """MB/s of CPU time over the real tool traffic, for the redactor and for detect-secrets."""
    size = sum(len(text.encode("utf-8")) for text in texts) / 1e6
    scanners: list[tuple[str, Callable[[str], object]]] = [("turnmemory redact", redaction._redact)]
    scan = _detect_secrets()
    if scan is not None:
        scanners.append(("detect-secrets scan_line", scan))
    print(f"\nthroughput on the real tool traffic ({len(texts)} tool inputs and results, {size:.1f} MB):\n")
    print("| scanner | CPU s | MB/s |")
    print("|---|---:|---:|")
    for name, scanner in scanners:
        seconds = _cpu(lambda scanner=scanner: [scanner(text) for text in texts])
        print(f"| {name} | {seconds:.2f} | {size / seconds:.2f} |")
    if scan is None:
        print("(detect-secrets is not installed: pip install -r benchmarks/requirements.txt)")
    changed = sum(redaction._redact(text) != text for text in texts)
    print(f"\nthe redactor changes {changed} of the {len(texts)} texts ({changed / max(1, len(texts)):.2%})")


GROWTH_SIZES = (10_000, 100_000)


def growth_table() -> None:
    """CPU time from 10 KB to 100 KB of each shape that was quadratic, for both scanners."""
    scan = _detect_secrets()
    print(f"\ngrowth from {GROWTH_SIZES[0] // 1000} KB to {GROWTH_SIZES[1] // 1000} KB (10x is linear):\n")
    print("| input | turnmemory 10 KB | 100 KB | growth | detect-secrets 10 KB | 100 KB | growth |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    worst = {"turnmemory": 0.0, "detect-secrets": 0.0}
    for name, shape in ISSUE_SHAPES.items():
        cells = [name]
        for label, scanner in (("turnmemory", redaction._redact), ("detect-secrets", scan)):
            if scanner is None:
                cells += ["-", "-", "-"]
                continue
            small, large = _grow(scanner, shape)
            factor = large / small
            worst[label] = max(worst[label], factor)
            cells += [f"{small * 1e3:.1f} ms", f"{large * 1e3:.0f} ms", f"{factor:.0f}x"]
        print("| " + " | ".join(cells) + " |")
    print(
        f"\nworst growth: turnmemory {worst['turnmemory']:.0f}x, detect-secrets {worst['detect-secrets']:.0f}x"
    )


def _grow(scanner: Callable[[str], object], shape: Shape) -> tuple[float, float]:
    small_text, large_text = (shape(size) for size in GROWTH_SIZES)
    small = min(_cpu(lambda: scanner(small_text)) for _ in range(3))
    return small, _cpu(lambda: scanner(large_text))


if __name__ == "__main__":
    main()
