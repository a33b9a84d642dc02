"""Per-session and aggregate results, and their JSON, markdown and plain-table renderings."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from turnmemory.analysis._cost import request_cost
from turnmemory.analysis._measure import Block, Meter, Unit
from turnmemory.analysis._strategies import STRATEGIES, StrategyName, requests
from turnmemory.analysis._trace import conversation
from turnmemory.transcripts import ImportedSession

__all__ = [
    "LABELS",
    "LEGEND",
    "Report",
    "SessionReport",
    "StrategyResult",
    "analyze_session",
    "build_report",
    "compact_number",
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
    cost of every request under the cache model; ``requests`` counts the requests.
    """

    carried: int
    peak: int
    cost: float
    requests: int
    per_turn: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class SessionReport:
    """One analysed session."""

    path: str
    format: str
    user_turns: int
    tool_calls: int
    strategies: Mapping[StrategyName, StrategyResult]
    skipped: Mapping[str, int] = field(default_factory=dict)
    problems: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Report:
    """All analysed sessions, their totals, and the unit sizes are in."""

    unit: Unit
    sessions: tuple[SessionReport, ...]
    note: str | None = None

    @property
    def total(self) -> dict[StrategyName, StrategyResult]:
        """Sums of ``carried``, ``cost`` and ``requests``; the largest ``peak``."""
        return {
            name: StrategyResult(
                carried=sum(s.strategies[name].carried for s in self.sessions),
                peak=max((s.strategies[name].peak for s in self.sessions), default=0),
                cost=sum(s.strategies[name].cost for s in self.sessions),
                requests=sum(s.strategies[name].requests for s in self.sessions),
            )
            for name in STRATEGIES
        }


def analyze_session(session: ImportedSession, meter: Meter) -> SessionReport:
    """Replay ``session`` under every strategy."""
    turns = conversation(session)
    results: dict[StrategyName, StrategyResult] = {}
    for name in STRATEGIES:
        per_turn = [0] * len(turns)
        count = 0
        cost = 0.0
        previous: tuple[Block, ...] = ()
        for request in requests(name, turns, meter):
            count += 1
            if request.first:
                per_turn[request.turn] = sum(block.size for block in request.blocks)
            cost += request_cost(previous, request.blocks)
            previous = request.blocks
        later = per_turn[1:]
        results[name] = StrategyResult(
            carried=sum(later),
            peak=max(later, default=0),
            cost=round(cost, 1),
            requests=count,
            per_turn=tuple(per_turn),
        )
    return SessionReport(
        path=session.path,
        format=session.format,
        user_turns=len(session.turns),
        tool_calls=session.tool_calls,
        strategies=results,
        skipped=dict(session.skipped),
        problems=session.problems,
    )


def build_report(sessions: Iterable[SessionReport], meter: Meter) -> Report:
    """The report over ``sessions`` in the meter's unit."""
    return Report(unit=meter.unit, sessions=tuple(sessions), note=meter.note)


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
            }
            for session in report.sessions
        ],
        "total": _strategy_json(report.total, series=False),
    }
    if report.note:
        out["note"] = report.note
    return out


LABELS: Mapping[StrategyName, str] = {
    "full": "Full trace",
    "prose_only": "Prose only (the limit)",
    "turnmemory": "TurnMemory",
    "turnmemory_target": "TurnMemory + targets",
    "mask10": "Observation masking M=10",
    "anthropic_clear": "Anthropic clear_tool_uses",
    "opencode_prune": "OpenCode prune",
}
"""The name a person reads for each strategy (the JSON document keeps the ids)."""

LEGEND = (
    "carried  history that the first request of each later user turn carries, summed",
    "peak     the largest of those requests",
    "cost     input cost of all requests with prompt caching, in uncached-input units",
    "         (cache read 0.1, cache write 1.25); vs full: share of the full trace",
    "Strategies and method: docs/analysis.md",
)
"""What the columns mean, one line each (every line fits 80 columns)."""

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
    lines = [_summary(report), "", *_markdown_table(render_table_rows(report.total))]
    if per_session:
        for session in report.sessions:
            if session.user_turns < 2:
                continue
            lines += [
                "",
                f"**{_name(session.path)}** ({session.format}, {session.user_turns} user turns, "
                f"{session.tool_calls} tool calls)",
                "",
            ]
            lines += _markdown_table(render_table_rows(session.strategies))
    return "\n".join(lines) + "\n"


def _markdown_table(rows: Sequence[Sequence[str]]) -> list[str]:
    header, *body = rows
    align = ["---"] + ["---:"] * (len(header) - 1)
    return ["| " + " | ".join(row) + " |" for row in (header, align, *body)]


def _summary(report: Report) -> str:
    sessions = report.sessions
    multi = sum(1 for session in sessions if session.user_turns >= 2)
    unit = "o200k tokens" if report.unit == "o200k" else "UTF-8 bytes"
    text = (
        f"{len(sessions)} sessions ({multi} with 2+ user turns), "
        f"{sum(s.user_turns for s in sessions):,} user turns, {sum(s.tool_calls for s in sessions):,} tool calls; "
        f"sizes in {unit}."
    )
    return text + (f" Note: {report.note}." if report.note else "")


def _name(path: str) -> str:
    return path.replace("\\", "/").rsplit("/", 1)[-1]


def summary_line(report: Report) -> str:
    """One sentence saying what the report covers and in which unit."""
    return _summary(report)
