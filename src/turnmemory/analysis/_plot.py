"""The request-size plot: history carried at each user turn, one line per strategy.

matplotlib is imported lazily with the Agg backend, so the rest of the analysis needs no display and
no matplotlib. Where strategies draw the same line in a panel, the panel says which (under its
x-axis), since only the one drawn last can be seen.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from turnmemory.analysis._report import LABELS, Report, SessionReport, StrategyResult, compact_number
from turnmemory.analysis._strategies import STRATEGIES, StrategyName

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["MAX_PANELS", "draw_report", "plot_report", "same_lines", "tick_label"]

MAX_PANELS = 6
"""At most this many sessions are drawn: the multi-turn sessions whose full trace carries the most."""

_STYLE = {  # colour, line style, marker: lines that overlap stay distinguishable
    "full": ("#9a9a9a", "-", ""),
    "prose_only": ("#555555", ":", ""),
    "turnmemory": ("#d62728", "-", "o"),
    "turnmemory_auto": ("#8c564b", (0, (3, 1, 1, 1)), "D"),
    "turnmemory_target": ("#ff7f0e", "--", ""),
    "mask10": ("#1f77b4", "-", "s"),
    "anthropic_clear": ("#2ca02c", "-.", "^"),
    "opencode_prune": ("#9467bd", (0, (5, 3)), "x"),
}
_MARKS = 10  # markers per line, whatever its length
_TITLE_CHARS = 30
_NOTE_CHARS = 62  # characters per line of a panel's note on lines drawn over each other


def plot_report(report: Report, path: Path, *, names: bool = True) -> int:
    """Draw the multi-turn sessions of ``report`` to the image ``path``; the number of panels drawn.

    With ``names=False`` panels are titled by format and size only, not by file name.
    """
    import matplotlib.pyplot as plt

    figure = draw_report(report, names=names)
    try:
        figure.savefig(path, dpi=110)
    finally:
        plt.close(figure)
    return len(_chosen(report.sessions))


def tick_label(value: float) -> str:
    """An axis tick: :func:`compact_number` without trailing zeros (``250k``, ``1.5M``, ``0``)."""
    text = compact_number(value)
    if text[-1:] in ("k", "M", "G") and "." in text:
        number, unit = text[:-1].rstrip("0").rstrip("."), text[-1]
        return number + unit
    return text


def same_lines(results: Mapping[StrategyName, StrategyResult]) -> list[list[StrategyName]]:
    """The groups of strategies (two or more, in report order) whose per-turn series are equal."""
    groups: dict[tuple[int, ...], list[StrategyName]] = {}
    for name in STRATEGIES:
        groups.setdefault(results[name].per_turn, []).append(name)
    return [group for group in groups.values() if len(group) > 1]


def _same_note(results: Mapping[StrategyName, StrategyResult]) -> str:
    groups = same_lines(results)
    if not groups:
        return ""
    said = "; ".join(" = ".join(LABELS[name] for name in group) for group in groups)
    return "\n" + "\n".join(textwrap.wrap(f"on one line: {said}", _NOTE_CHARS))


def draw_report(report: Report, *, names: bool = True) -> Figure:
    """The figure :func:`plot_report` saves (the caller closes it).

    The layout is constrained, so titles, labels and the legend stay inside the canvas whatever the
    panel count and the file names.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    chosen = _chosen(report.sessions)
    columns = min(3, max(1, len(chosen)))
    rows = max(1, -(-len(chosen) // columns))
    figure, axes = plt.subplots(
        rows,
        columns,
        figsize=(max(6.8, 4.6 * columns + 0.6), 3.3 * rows + 1.2),
        squeeze=False,
        layout="constrained",
    )
    unit = "o200k tokens" if report.unit == "o200k" else "bytes"
    for axis, session in zip(axes.flat, chosen, strict=False):
        for name in STRATEGIES:
            color, line, marker = _STYLE[name]
            series = session.strategies[name].per_turn
            width, alpha = (5.0, 0.5) if name == "full" else (1.5, 1.0)
            axis.plot(
                range(1, len(series) + 1),
                series,
                linestyle=line,
                marker=marker or None,
                markevery=max(1, len(series) // _MARKS),
                markersize=4,
                color=color,
                label=LABELS[name],
                linewidth=width,
                alpha=alpha,
            )
        about = f"{session.format}: {session.user_turns} turns, {session.tool_calls} tool calls"
        axis.set_title(f"{_label(session.path)}\n{about}" if names else about, fontsize=9)
        axis.set_xlabel("user turn" + _same_note(session.strategies), fontsize=9)
        axis.set_ylabel(f"history carried ({unit})", fontsize=9)
        axis.yaxis.set_major_formatter(FuncFormatter(lambda value, _: tick_label(value)))
        axis.set_ylim(bottom=0)
        axis.xaxis.set_major_locator(MaxNLocator(integer=True))
        axis.tick_params(labelsize=8)
        axis.grid(alpha=0.3)
    for axis in list(axes.flat)[len(chosen) :]:
        axis.set_visible(False)
    if not chosen:
        axes.flat[0].set_visible(True)
        axes.flat[0].text(0.5, 0.5, "no session with 2+ user turns", ha="center", va="center")
    handles, labels = axes.flat[0].get_legend_handles_labels()
    if handles:
        figure.legend(
            handles,
            labels,
            loc="outside lower center",
            ncol=2 if columns == 1 else 4,
            fontsize=8,
            frameon=False,
        )
    figure.suptitle("History carried into each user turn, by strategy", fontsize=11)
    return figure


def _chosen(sessions: tuple[SessionReport, ...]) -> list[SessionReport]:
    multi = [session for session in sessions if session.user_turns >= 2]
    return sorted(multi, key=lambda session: (-session.strategies["full"].carried, session.path))[:MAX_PANELS]


def _label(path: str) -> str:
    name = path.replace("\\", "/").rsplit("/", 1)[-1]
    if len(name) <= _TITLE_CHARS:
        return name
    keep = _TITLE_CHARS - 3
    return name[: keep - keep // 2] + "..." + name[len(name) - keep // 2 :]
