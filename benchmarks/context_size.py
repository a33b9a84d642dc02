"""Context size on real sessions: what each history strategy carries and costs.

Runs the analysis of ``turnmemory analyze`` over the shared real transcripts
(``../shared/data/transcripts`` next to the repository root) and prints markdown: the aggregate
table, one table per format, and the sessions where another strategy than ``prose_only`` is cheaper
than TurnMemory under the prompt-cache model.

    python benchmarks/context_size.py [--tokenizer o200k|bytes] [--plot docs/context.png] [--snippet docs/analysis.md]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from turnmemory.analysis import STRATEGIES, Report, open_meter, summary_line
from turnmemory.analysis._plot import plot_report
from turnmemory.analysis._report import render_table_rows
from turnmemory.analysis.command import analyze_paths

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data" / "transcripts"


def table(rows: list[tuple[str, ...]]) -> list[str]:
    header, *body = rows
    return ["| " + " | ".join(row) + " |" for row in (header, ("---", *["---:"] * (len(header) - 1)), *body)]


def by_format(report: Report) -> list[str]:
    lines: list[str] = []
    for fmt in sorted({session.format for session in report.sessions}):
        part = Report(report.unit, tuple(s for s in report.sessions if s.format == fmt))
        multi = sum(1 for s in part.sessions if s.user_turns >= 2)
        lines += [
            "",
            f"**{fmt}**: {len(part.sessions)} sessions ({multi} multi-turn), "
            f"{sum(s.user_turns for s in part.sessions)} user turns, {sum(s.tool_calls for s in part.sessions)} tool calls",
            "",
        ]
        lines += table(render_table_rows(part.total))
    return lines


def cheaper_than_turnmemory(report: Report) -> list[str]:
    lines = ["", "Sessions where a strategy other than `prose_only` costs less than `turnmemory`:", ""]
    found = False
    for session in report.sessions:
        own = session.strategies["turnmemory"].cost
        better = [
            f"`{name}` {session.strategies[name].cost / own:.0%}"
            for name in STRATEGIES
            if name not in ("prose_only", "turnmemory") and session.strategies[name].cost < own
        ]
        if better:
            found = True
            name = Path(session.path).name
            lines.append(f"- {name} ({session.format}, {session.user_turns} turns): " + ", ".join(better))
    return lines if found else [*lines[:-1], "", "none."]


SNIPPET = """\
## What TurnMemory does to real sessions

`turnmemory analyze` replays session logs written by other agents (Claude Code, Codex CLI, OpenCode,
SWE-agent, mini-swe-agent, OpenHands) request by request under seven history strategies and measures what each
request carries, all rendered as OpenAI Chat messages (system prompt and tool definitions, the same
under every strategy, are left out). `carried` sums the size of the first request of every user turn
after the first: the history a new turn starts with. `cost` prices every request under a prompt-cache
model (cache reads 0.1x, writes 1.25x the base input price; a rewrite invalidates the cache from the
first changed block), in units of one uncached input {unit_word}. `tool traffic removed` is the share of
the carried tool blocks a strategy drops, from 0 (`full`) to 100% (`prose_only`, the physical limit).

Strategies: `full` keeps everything; `prose_only` keeps user text and assistant prose; `turnmemory`
replays historical tool blocks with `{{}}` arguments and status results (`turnmemory_target` with the
bounded target as argument); `mask10` is SWE-agent's observation masking with M=10 (the Complexity
Trap paper); `anthropic_clear` is Anthropic's `clear_tool_uses_20250919` with its defaults;
`opencode_prune` is OpenCode's tool-output pruning.

{summary}

{table}

![History carried at each user turn, by strategy](context.png)

The plot shows the six longest sessions (by user turns): the size of the first request of each user
turn. Where a strategy never fires (`anthropic_clear` below its trigger, `opencode_prune` below its
protected budget) its line lies on the full trace's.

Measured with `{command}` on {date}; per-format tables and the method are in `benchmarks/RESULTS.md`.
"""


def snippet(report: Report, args: argparse.Namespace) -> str:
    command = f"python benchmarks/context_size.py --tokenizer {args.tokenizer}"
    return SNIPPET.format(
        unit_word="token" if report.unit == "o200k" else "byte",
        summary=summary_line(report),
        table="\n".join(table(render_table_rows(report.total))),
        command=command,
        date=time.strftime("%Y-%m-%d"),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokenizer", choices=("o200k", "bytes"), default="o200k")
    parser.add_argument("--plot", type=Path, help="also draw the per-turn plot to this PNG")
    parser.add_argument("--snippet", type=Path, help="also write the aggregate markdown table to this file")
    parser.add_argument("--data", type=Path, default=DATA, help=f"transcripts folder (default: {DATA})")
    args = parser.parse_args()
    if not args.data.is_dir():
        raise SystemExit(f"no transcripts at {args.data}")
    meter = open_meter(args.tokenizer)
    started = time.perf_counter()
    report = analyze_paths([args.data], meter, progress=False)
    elapsed = time.perf_counter() - started
    lines = [summary_line(report), "", *table(render_table_rows(report.total)), *by_format(report)]
    lines += cheaper_than_turnmemory(report)
    lines += ["", f"Analysis time: {elapsed:.1f} s."]
    print("\n".join(lines))
    if args.plot:
        plot_report(report, args.plot, names=False)
    if args.snippet:
        args.snippet.write_text(snippet(report, args))


if __name__ == "__main__":
    main()
