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

`turnmemory analyze PATH...` replays session logs written by other agents (Claude Code, Codex CLI,
OpenCode, SWE-agent, mini-swe-agent, OpenHands, aider) request by request under seven history
strategies and measures what each request carries, all rendered as OpenAI Chat messages (system prompt
and tool definitions, the same under every strategy, are left out).

### Reading the table

| column | meaning |
| --- | --- |
| carried | the size of the first request of every user turn after the first, summed: the history a new turn starts with |
| peak | the largest of those requests |
| cost | every request priced under a prompt-cache model (cache reads 0.1x, writes 1.25x the base input price; a rewrite invalidates the cache from the first changed block), in units of one uncached input {unit_word} |
| vs full | the value as a share of the full trace's |
| tool traffic removed | the share of the carried tool blocks a strategy drops, from 0 (full trace) to 100% (prose only, the physical limit); in `--format markdown`/`json`, and in the terminal from 100 columns on |

In a terminal the sizes are short (`8.43M` is 8.43 million, `270.9k` is 270,900); `--format markdown`
gives every digit, `--format json` the document scripts read (with the strategy ids below).

### The strategies

| shown as | id (JSON) | what it keeps |
| --- | --- | --- |
| Full trace | `full` | everything, as most agents do within a session |
| Prose only (the limit) | `prose_only` | user text and assistant prose, no tool blocks: the physical limit of turn-boundary compaction |
| TurnMemory | `turnmemory` | prose plus historical tool blocks with `{{}}` arguments and status results (this project) |
| TurnMemory + targets | `turnmemory_target` | the same with the bounded target (path, command) as the call's argument |
| Observation masking M=10 | `mask10` | SWE-agent's observation masking: all but the last 10 tool outputs replaced by a one-line placeholder (the Complexity Trap paper) |
| Anthropic clear_tool_uses | `anthropic_clear` | Anthropic's context editing `clear_tool_uses_20250919` with its defaults (clears old results above 100,000 input tokens) |
| OpenCode prune | `opencode_prune` | OpenCode's tool-output pruning (old outputs beyond a protected 40,000-token budget) |

### Exit status and input

`analyze` reads files and directories (searched recursively); it never reads a pipe, a device or a
socket, reads logs with bounded memory, and says how much of each file it could read. It exits 1 when
a file given by name is not a session it reads, when a file cannot be read, or when more than half of
a log's lines are unreadable (the table then covers the rest), and 2 when a path does not exist.
aider transcripts have no tool calls: their SEARCH/REPLACE and whole-file edit blocks become
`edit_file` activity (`Applied edit to` gives the changed file), `Running CMD` lines and `/run`
commands become `bash` activity (aider logs no exit codes).

### Results on the shared real sessions

{summary}

{table}

![History carried at each user turn, by strategy](context.png)

The plot shows the six sessions whose full trace carries the most: the size of the first request of
each user turn. Where a strategy never fires (Anthropic's clearing below its trigger, OpenCode's
pruning below its protected budget) its line lies on the full trace's.

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
