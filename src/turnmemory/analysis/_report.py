"""Per-session and aggregate results, and their JSON, markdown and plain-table renderings."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from turnmemory.analysis._cost import Cache, CacheModel
from turnmemory.analysis._measure import Meter, Unit
from turnmemory.analysis._strategies import STRATEGIES, StrategyName, requests
from turnmemory.analysis._trace import conversation
from turnmemory.transcripts import ImportedSession

__all__ = [
    "LABELS",
    "LEGEND",
    "NO_LATER_TURNS",
    "Report",
    "SessionReport",
    "StrategyResult",
    "analyze_session",
    "build_report",
    "compact_number",
    "count",
    "render_markdown",
    "render_table_rows",
    "render_text",
    "report_json",
    "summary_line",
    "tool_share_removed",
]


@dataclass(frozen=True, slots=True)
class StrategyResult:
    """What one strategy carries over one session (or a sum of sessions).

    ``per_turn`` is the size of each turn's first request (turn 1 carries only its user message);
    ``carried`` sums it over turns 2..n, ``peak`` is its largest value there; ``cost`` is the input
    cost of every request under the cache model; ``requests`` counts the requests. ``cache_read``,
    ``cache_write`` and ``uncached`` split what the requests sent by price (``cost`` is their priced
    sum); ``expired`` counts the requests that found the cache expired.
    """

    carried: int
    peak: int
    cost: float
    requests: int
    per_turn: tuple[int, ...] = ()
    cache_read: int = 0
    cache_write: int = 0
    uncached: int = 0
    expired: int = 0


@dataclass(frozen=True, slots=True)
class SessionReport:
    """One analysed session; ``timed`` says whether its log gives the times of its requests (of two at
    least, or of its only one); else the cache was assumed warm throughout."""

    path: str
    format: str
    user_turns: int
    tool_calls: int
    strategies: Mapping[StrategyName, StrategyResult]
    skipped: Mapping[str, int] = field(default_factory=dict)
    problems: tuple[str, ...] = ()
    timed: bool = False


@dataclass(frozen=True, slots=True)
class Report:
    """All analysed sessions, their totals, the unit sizes are in and the cache model costs are in."""

    unit: Unit
    sessions: tuple[SessionReport, ...]
    note: str | None = None
    cache: CacheModel = field(default_factory=CacheModel)

    @property
    def total(self) -> dict[StrategyName, StrategyResult]:
        """Sums of every count and ``cost``; the largest ``peak``."""
        return {
            name: StrategyResult(
                carried=sum(s.strategies[name].carried for s in self.sessions),
                peak=max((s.strategies[name].peak for s in self.sessions), default=0),
                cost=sum(s.strategies[name].cost for s in self.sessions),
                requests=sum(s.strategies[name].requests for s in self.sessions),
                cache_read=sum(s.strategies[name].cache_read for s in self.sessions),
                cache_write=sum(s.strategies[name].cache_write for s in self.sessions),
                uncached=sum(s.strategies[name].uncached for s in self.sessions),
                expired=sum(s.strategies[name].expired for s in self.sessions),
            )
            for name in STRATEGIES
        }


def analyze_session(session: ImportedSession, meter: Meter, cache: CacheModel | None = None) -> SessionReport:
    """Replay ``session`` under every strategy, priced under ``cache`` (default: the idealised cache)."""
    model = cache or CacheModel()
    meter = meter.fresh()  # equal blocks are one object within a session; nothing is held across sessions
    turns = conversation(session)
    results: dict[StrategyName, StrategyResult] = {}
    for name in STRATEGIES:
        per_turn = [0] * len(turns)
        count = 0
        priced = Cache(model, meter.tokens)
        known = 0
        for request in requests(name, turns, meter, model):
            count += 1
            if request.first:
                per_turn[request.turn] = sum(block.size for block in request.blocks)
            priced.send(request.blocks, request.at)
            known += request.at is not None
        later = per_turn[1:]
        bill = priced.bill
        results[name] = StrategyResult(
            carried=sum(later),
            peak=max(later, default=0),
            cost=round(bill.cost, 1),
            requests=count,
            per_turn=tuple(per_turn),
            cache_read=bill.read,
            cache_write=bill.written,
            uncached=bill.uncached,
            expired=bill.expired,
        )
    return SessionReport(
        path=session.path,
        format=session.format,
        user_turns=len(session.turns),
        tool_calls=session.tool_calls,
        strategies=results,
        skipped=dict(session.skipped),
        problems=session.problems,
        timed=count > 0 and known >= min(2, count),
    )


def build_report(sessions: Iterable[SessionReport], meter: Meter, cache: CacheModel | None = None) -> Report:
    """The report over ``sessions`` in the meter's unit, priced under ``cache`` (default: the idealised
    cache; it must be the model the sessions were analysed under)."""
    return Report(unit=meter.unit, sessions=tuple(sessions), note=meter.note, cache=cache or CacheModel())


def tool_share_removed(results: Mapping[StrategyName, StrategyResult], name: StrategyName) -> float | None:
    """The share of carried tool traffic a strategy removes: 0 for ``full``, 1 for ``prose_only``."""
    tools = results["full"].carried - results["prose_only"].carried
    if tools <= 0:
        return None
    return round((results["full"].carried - results[name].carried) / tools, 4)


def _strategy_json(results: Mapping[StrategyName, StrategyResult], series: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in STRATEGIES:
        result = results[name]
        entry: dict[str, Any] = {
            "carried": result.carried,
            "peak": result.peak,
            "cost": result.cost,
            "requests": result.requests,
            "tool_share_removed": tool_share_removed(results, name),
            "cache_read": result.cache_read,
            "cache_write": result.cache_write,
            "uncached": result.uncached,
            "expired": result.expired,
        }
        if series:
            entry["per_turn"] = list(result.per_turn)
        out[name] = entry
    return out


def report_json(report: Report) -> dict[str, Any]:
    """The ``turnmemory analyze --format json`` document (a contract: see DESIGN.md)."""
    out: dict[str, Any] = {
        "unit": report.unit,
        "sessions": [
            {
                "path": session.path,
                "format": session.format,
                "user_turns": session.user_turns,
                "tool_calls": session.tool_calls,
                "strategies": _strategy_json(session.strategies, series=True),
                "skipped": session.skipped,
                "problems": list(session.problems),
                "timed": session.timed,
            }
            for session in report.sessions
        ],
        "total": _strategy_json(report.total, series=False),
        "cache": {
            "pricing": report.cache.pricing,
            "ttl": report.cache.lifetime,
            "ttl_seconds": report.cache.ttl,
            "read": report.cache.read,
            "write": report.cache.write,
            "minimum_tokens": report.cache.minimum,
            "system_tokens": report.cache.system_tokens,
        },
    }
    if report.note:
        out["note"] = report.note
    return out


LABELS: Mapping[StrategyName, str] = {
    "full": "Full trace",
    "prose_only": "Prose only (the limit)",
    "turnmemory": "TurnMemory",
    "turnmemory_auto": "TurnMemory (when it pays)",
    "turnmemory_target": "TurnMemory + targets",
    "mask10": "Observation masking M=10",
    "anthropic_clear": "Anthropic clear_tool_uses",
    "opencode_prune": "OpenCode prune",
}
"""The name a person reads for each strategy (the JSON document keeps the ids)."""

LEGEND = (
    "carried  history that the first request of each later user turn carries, summed",
    "peak     the largest of those requests",
    "cost     input cost of all requests under the cache model above, in units of",
    "         uncached input; vs full: share of the full trace",
    "Strategies, cost model and method: docs/analysis.md",
)
"""What the columns mean, one line each (every line fits 80 columns)."""

NO_LATER_TURNS = (
    "No session here has a second user turn, so none carries history into a later turn:"
    " carried and peak are 0 and their share of the full trace is n/a. cost still prices"
    " every request of each turn's tool loop."
)
"""Said under a report whose sessions all have one user turn (its table is mostly zeros)."""

_HEADERS = ("strategy", "carried", "vs full", "peak", "cost", "vs full", "tool traffic removed")
_WIDE = 100  # from this width on, the text table also shows "tool traffic removed"


def compact_number(value: float) -> str:
    """``value`` in at most 7 characters: ``9,999``, ``270.1k``, ``8.43M``, ``1.20G``."""
    size = abs(value)
    if size < 10_000:
        return f"{value:,.0f}"
    if size < 999_950:
        return f"{value / 1e3:.1f}k"
    if size < 999_995_000:
        return f"{value / 1e6:.2f}M"
    return f"{value / 1e9:.2f}G"


def render_table_rows(
    results: Mapping[StrategyName, StrategyResult], *, compact: bool = False
) -> list[tuple[str, ...]]:
    """One row of text cells per strategy (header first), under human names.

    ``compact`` writes sizes and costs in short units (``8.43M``) instead of every digit.
    """
    full = results["full"]
    number = compact_number if compact else (lambda value: f"{value:,.0f}")
    rows: list[tuple[str, ...]] = [_HEADERS]
    for name in STRATEGIES:
        result = results[name]
        share = tool_share_removed(results, name)
        rows.append(
            (
                LABELS[name],
                number(result.carried),
                _ratio(result.carried, full.carried),
                number(result.peak),
                number(result.cost),
                _ratio(result.cost, full.cost),
                "n/a" if share is None else f"{share:.0%}",
            )
        )
    return rows


def render_text(results: Mapping[StrategyName, StrategyResult], width: int = 80) -> list[str]:
    """The strategy table as plain text lines no wider than ``width`` (at least 80), numbers whole.

    Sizes use short units; the tool-traffic column appears from 100 columns on.
    """
    rows = render_table_rows(results, compact=True)
    if width < _WIDE:
        rows = [row[:-1] for row in rows]
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    lines = []
    for index, row in enumerate(rows):
        cells = [row[0].ljust(widths[0])] + [cell.rjust(widths[c + 1]) for c, cell in enumerate(row[1:])]
        lines.append("  ".join(cells).rstrip())
        if index == 0:
            lines.append("  ".join("-" * w for w in widths))
    return lines


def _ratio(value: float, base: float) -> str:
    return f"{value / base:.0%}" if base else "n/a"


def render_markdown(report: Report, *, per_session: bool = True) -> str:
    """The aggregate table, and one table per multi-turn session, as GitHub markdown."""
    lines = [summary_line(report), "", *_markdown_table(render_table_rows(report.total))]
    if not any(session.user_turns >= 2 for session in report.sessions):
        lines += ["", NO_LATER_TURNS]
    if per_session:
        for session in report.sessions:
            if session.user_turns < 2:
                continue
            lines += [
                "",
                f"**{_name(session.path)}** ({session.format}, {count(session.user_turns, 'user turn')}, "
                f"{count(session.tool_calls, 'tool call')})",
                "",
            ]
            lines += _markdown_table(render_table_rows(session.strategies))
    return "\n".join(lines) + "\n"


def _markdown_table(rows: Sequence[Sequence[str]]) -> list[str]:
    header, *body = rows
    align = ["---"] + ["---:"] * (len(header) - 1)
    return ["| " + " | ".join(row) + " |" for row in (header, align, *body)]


def count(number: int, noun: str) -> str:
    """``number`` and ``noun``, in the plural unless ``number`` is 1: ``1 session``, ``2,000 turns``."""
    return f"{number:,} {noun}" if number == 1 else f"{number:,} {noun}s"


def _name(path: str) -> str:
    return path.replace("\\", "/").rsplit("/", 1)[-1]


def summary_line(report: Report) -> str:
    """What the report covers, in which unit, and how its costs were priced."""
    sessions = report.sessions
    multi = sum(1 for session in sessions if session.user_turns >= 2)
    unit = "o200k tokens" if report.unit == "o200k" else "UTF-8 bytes"
    text = (
        f"{count(len(sessions), 'session')} ({multi:,} with 2+ user turns), "
        f"{count(sum(s.user_turns for s in sessions), 'user turn')}, "
        f"{count(sum(s.tool_calls for s in sessions), 'tool call')}; sizes in {unit}."
    )
    text += f" Cost: {report.cache.describe()}"
    untimed = [session for session in sessions if not session.timed]
    if report.cache.ttl is not None and untimed:
        formats = ", ".join(sorted({session.format for session in untimed}))
        text += (
            f"; {count(len(untimed), 'session')} ({formats}) without timestamps"
            " priced with a cache that stays warm"
        )
    text += "."
    return text + (f" Note: {report.note}." if report.note else "")
