"""Context size on real sessions: what each history strategy carries and costs.

Runs the analysis of ``turnmemory analyze`` over the shared real transcripts
(``../shared/data/transcripts`` next to the repository root) and prints markdown: the aggregate
table under the default cache model (Anthropic prices, 5-minute lifetime), one table per format, the
sessions where another strategy than ``prose_only`` is cheaper than TurnMemory, and every strategy's
cost under each provider's prices at 5-minute and 1-hour lifetimes and in the idealised cache.

    python benchmarks/context_size.py [--tokenizer o200k|bytes] [--plot docs/context.png] [--snippet docs/analysis.md]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from turnmemory.analysis import STRATEGIES, Report, open_meter, summary_line
from turnmemory.analysis._cost import CacheModel, CacheTtl, PricingName
from turnmemory.analysis._plot import plot_report
from turnmemory.analysis._report import LABELS, render_table_rows
from turnmemory.analysis.command import analyze_files

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data" / "transcripts"


def table(rows: list[tuple[str, ...]]) -> list[str]:
    header, *body = rows
    return ["| " + " | ".join(row) + " |" for row in (header, ("---", *["---:"] * (len(header) - 1)), *body)]


def by_format(report: Report) -> list[str]:
    lines: list[str] = []
    for fmt in sorted({session.format for session in report.sessions}):
        part = Report(report.unit, tuple(s for s in report.sessions if s.format == fmt), cache=report.cache)
        multi = sum(1 for s in part.sessions if s.user_turns >= 2)
        lines += [
            "",
            f"**{fmt}**: {len(part.sessions)} sessions ({multi} multi-turn), "
            f"{sum(s.user_turns for s in part.sessions)} user turns, {sum(s.tool_calls for s in part.sessions)} tool calls",
            "",
        ]
        lines += table(render_table_rows(part.total))
    return lines


MODELS: tuple[tuple[PricingName, CacheTtl], ...] = (
    ("anthropic", "5m"),
    ("anthropic", "1h"),
    ("openai", "5m"),
    ("openai", "1h"),
    ("gemini", "5m"),
    ("gemini", "1h"),
    ("anthropic", "none"),
)
_HEADS = {"anthropic": "Anthropic", "openai": "OpenAI", "gemini": "Gemini"}


def _head(pricing: PricingName, ttl: CacheTtl) -> str:
    return "idealised (earlier model)" if ttl == "none" else f"{_HEADS[pricing]} {ttl}"


def repriced(reports: dict[tuple[PricingName, CacheTtl], Report]) -> list[str]:
    """Every strategy's cost, and its share of the full trace's, under each cache model."""
    rows = [("strategy", *(_head(*model) for model in reports))]
    totals = {model: report.total for model, report in reports.items()}
    for name in STRATEGIES:
        cells = []
        for model in reports:
            cost, full = totals[model][name].cost, totals[model]["full"].cost
            cells.append(f"{cost:,.0f} ({cost / full:.0%})")
        rows.append((LABELS[name], *cells))
    lines = table(rows)
    for model, report in reports.items():
        dearer = [
            Path(session.path).name
            for session in report.sessions
            if session.strategies["turnmemory_auto"].cost > session.strategies["full"].cost
        ]
        total = totals[model]
        lines.append(
            f"\n{_head(*model)}: `turnmemory_auto` {total['turnmemory_auto'].cost / total['turnmemory'].cost:.2%}"
            f" of `turnmemory`; requests that found the cache expired: full trace {total['full'].expired:,}"
            f"; sessions where `turnmemory_auto` costs more than the full trace: "
            + (", ".join(dearer) if dearer else "none")
        )
    return lines


def table_only(lines: list[str]) -> list[str]:
    """The table of :func:`repriced` without the lines after it."""
    return [line for line in lines if line.startswith("|")]


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
OpenCode, SWE-agent, mini-swe-agent, OpenHands, aider) request by request under eight history
strategies and measures what each request carries, all rendered as OpenAI Chat messages (system prompt
and tool definitions, the same under every strategy, are left out), and what each costs under a
provider's prompt-cache prices.

### Reading the table

| column | meaning |
| --- | --- |
| carried | the size of the first request of every user turn after the first, summed: the history a new turn starts with |
| peak | the largest of those requests |
| cost | every request priced under the cache model below, in units of one uncached input {unit_word} |
| vs full | the value as a share of the full trace's |
| tool traffic removed | the share of the carried tool blocks a strategy drops, from 0 (full trace) to 100% (prose only, the physical limit); in `--format markdown`/`json`, and in the terminal from 100 columns on |

In a terminal the sizes are short (`8.43M` is 8.43 million, `270.9k` is 270,900); `--format markdown`
gives every digit, `--format json` the document scripts read (with the strategy ids below, and per
strategy the tokens read from the cache, written to it and sent uncached, and the requests that found
it expired; per session `timed`, whether its log gave the times of its requests; under `cache`, the
model's prices, lifetime and minimum). A report whose sessions all have a single user turn says so
under its table: nothing is carried into a later turn there, so only the cost column differs.

### The strategies

| shown as | id (JSON) | what it keeps |
| --- | --- | --- |
| Full trace | `full` | everything, as most agents do within a session |
| Prose only (the limit) | `prose_only` | user text and assistant prose, no tool blocks: the physical limit of turn-boundary compaction |
| TurnMemory | `turnmemory` | prose plus historical tool blocks with `{{}}` arguments and status results, compacted at every turn boundary (this project, the spec) |
| TurnMemory (when it pays) | `turnmemory_auto` | the same, but the turns since the last compaction are compacted only when the cache has gone cold anyway (the pause before the new user message exceeds the cache lifetime) or when the saving on the requests ahead (as many as the session's longest turn so far) exceeds the rewrite; until then they are sent as the full trace has them (`turnmemory.boundary.should_compact`, policy `when_it_pays`) |
| TurnMemory + targets | `turnmemory_target` | the same as TurnMemory with the bounded target (path, command) as the call's argument |
| Observation masking M=10 | `mask10` | SWE-agent's observation masking: all but the last 10 tool outputs replaced by a one-line placeholder (the Complexity Trap paper) |
| Anthropic clear_tool_uses | `anthropic_clear` | Anthropic's context editing `clear_tool_uses_20250919` with its defaults (clears old results above 100,000 input tokens) |
| OpenCode prune | `opencode_prune` | OpenCode's tool-output pruning (old outputs beyond a protected 40,000-token budget) |

### The cache model

Every request writes its prompt to the cache and reads the longest prefix it shares with the request
before it; a rewrite of history invalidates the cache from the first changed block.

- `--cache-ttl 5m|1h|none` (default `5m`): the cache lifetime. A request sent longer than that after
  the one before finds the cache expired and writes its whole prompt again. The pauses come from the
  logs' own timestamps (Claude Code, Codex CLI, OpenCode, OpenHands and mini-swe-agent record them;
  SWE-agent does not, and aider only when a chat started); a session without them is priced with a
  cache that stays warm, and the summary line says how many. `none` is the idealised cache of earlier
  versions: it never expires and caches any size (with Anthropic's prices it gives the earlier figures).
- `--pricing anthropic|openai|gemini` (default `anthropic`): reads and writes as multiples of the base
  input price, and the smallest cacheable prompt:

| pricing | cache read | write, 5-minute lifetime | write, 1-hour lifetime | minimum | source |
| --- | ---: | ---: | ---: | ---: | --- |
| anthropic | 0.1x | 1.25x | 2x | 1,024 tokens | [prompt caching](https://platform.claude.com/docs/en/build-with-claude/prompt-caching) (minimum 1,024 tokens for Sonnet 4.5 and Opus 4.1, 2,048-4,096 for others) |
| openai | 0.1x | 1.25x | 1.25x | 1,024 tokens | [prompt caching](https://developers.openai.com/api/docs/guides/prompt-caching): writes 1.25x from GPT-5.6 on (free before), cached input 0.1x on the GPT-5 family, one price for in-memory and 24-hour retention |
| gemini | 0.1x | 1x | 1x | 4,096 tokens | [implicit caching](https://ai.google.dev/gemini-api/docs/caching) (4,096 tokens for Gemini 3.x, 2,048 for 2.5); [Vertex AI](https://docs.cloud.google.com/gemini-enterprise-agent-platform/models/context-cache/context-cache-overview): hits 90% off, the cache written at the standard input price |

- A prompt below the minimum is not cached: it costs the base price and leaves nothing to read. The
  system prompt and tool definitions, which the logs do not hold, count toward the minimum:
  `--system-tokens N` (default 0, the pessimistic case; Codex CLI's base instructions alone are 2,500-4,400
  tokens in the shared logs) says how large they are. They are not priced: every strategy sends them alike.
- Not modelled: output tokens; Anthropic's breakpoint placement (the model reads the longest shared
  prefix, as OpenAI's and Gemini's implicit caching do).

### Exit status, input and speed

`analyze` reads files and directories (searched recursively); it never reads a pipe, a device or a
socket, reads logs with bounded memory, and says how much of each file it could read. It exits 1 when
a file given by name is not a session it reads, when a file cannot be read, or when more than half of
a log's lines are unreadable (the table then covers the rest), and 2 when a path does not exist or the
folder of `--plot` does not (it is never created). aider transcripts have no tool calls: their
SEARCH/REPLACE and whole-file edit blocks become `edit_file` activity (`Applied edit to` gives the
changed file), `Running CMD` lines and `/run` commands become `bash` activity (aider logs no exit codes).
`--jobs N` reads the sessions in N worker processes (default: one per core, from 4 MiB of logs), a few
files per worker at a time, with the same output as one; a worker that dies loses only a file whose own
process dies too.

### Results on the shared real sessions

{summary}

{table}

Every strategy's cost under each provider's prices and lifetime, and in the idealised cache (share of
the full trace's cost under the same model):

{repriced}

![History carried at each user turn, by strategy](context.png)

The plot shows the six sessions whose full trace carries the most: the size of the first request of
each user turn. Where strategies draw the same line (Anthropic's clearing below its trigger, OpenCode's
pruning below its protected budget, TurnMemory when it pays while it compacts every turn), the panel
says so under its axis.

Measured with `{command}` on {date}; per-format tables and the method are in `benchmarks/RESULTS.md`.
"""


def snippet(
    report: Report, reports: dict[tuple[PricingName, CacheTtl], Report], args: argparse.Namespace
) -> str:
    command = f"python benchmarks/context_size.py --tokenizer {args.tokenizer}"
    return SNIPPET.format(
        unit_word="token" if report.unit == "o200k" else "byte",
        summary=summary_line(report),
        table="\n".join(table(render_table_rows(report.total))),
        repriced="\n".join(table_only(repriced(reports))),
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
    reports = {
        model: analyze_files(
            [args.data], meter, progress=False, cache=CacheModel.of(*model), jobs=None
        ).report
        for model in MODELS
    }
    elapsed = time.perf_counter() - started
    report = reports[MODELS[0]]
    lines = [summary_line(report), "", *table(render_table_rows(report.total)), *by_format(report)]
    lines += cheaper_than_turnmemory(report)
    lines += ["", "Cost under each cache model (share of the full trace's):", "", *repriced(reports)]
    lines += ["", f"Analysis time: {elapsed:.1f} s for {len(MODELS)} cache models."]
    print("\n".join(lines))
    if args.plot:
        plot_report(report, args.plot, names=False)
    if args.snippet:
        args.snippet.write_text(snippet(report, reports, args))


if __name__ == "__main__":
    main()
