"""The request-size plot: history carried at each user turn, one line per strategy.

matplotlib is imported lazily with the Agg backend, so the rest of the analysis needs no display and
no matplotlib.
"""

from __future__ import annotations

from pathlib import Path

from turnmemory.analysis._report import Report, SessionReport
from turnmemory.analysis._strategies import STRATEGIES

__all__ = ["MAX_PANELS", "plot_report"]

MAX_PANELS = 6
"""At most this many sessions are drawn, those with the most user turns."""

_STYLE = {
    "full": ("#444444", "-"),
    "prose_only": ("#999999", ":"),
    "turnmemory": ("#d62728", "-"),
    "turnmemory_target": ("#ff9896", "--"),
    "mask10": ("#1f77b4", "-"),
    "anthropic_clear": ("#2ca02c", "-"),
    "opencode_prune": ("#9467bd", "-"),
}


def plot_report(report: Report, path: Path, *, names: bool = True) -> int:
    """Draw the multi-turn sessions of ``report`` to the PNG ``path``; the number of panels drawn.

    With ``names=False`` panels are titled by format and size only, not by file name.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    chosen = _chosen(report.sessions)
    columns = min(3, max(1, len(chosen)))
    rows = max(1, -(-len(chosen) // columns))
    figure, axes = plt.subplots(rows, columns, figsize=(5.2 * columns, 3.6 * rows), squeeze=False)
    unit = "o200k tokens" if report.unit == "o200k" else "bytes"
    for axis, session in zip(axes.flat, chosen, strict=False):
        for name in STRATEGIES:
            color, line = _STYLE[name]
            series = session.strategies[name].per_turn
            width, alpha = (3.2, 0.45) if name == "full" else (1.6, 1.0)
            axis.plot(
                range(1, len(series) + 1), series, line, color=color, label=name, linewidth=width, alpha=alpha
            )
        title = f"{_label(session.path)} ({session.format})" if names else f"{session.format} session"
        axis.set_title(f"{title}, {session.user_turns} turns, {session.tool_calls} tool calls", fontsize=9)
        axis.set_xlabel("user turn")
        axis.set_ylabel(f"history carried ({unit})")
        axis.ticklabel_format(axis="y", style="plain")
        axis.xaxis.set_major_locator(MaxNLocator(integer=True))
        axis.grid(alpha=0.3)
    for axis in list(axes.flat)[len(chosen) :]:
        axis.set_visible(False)
    if not chosen:
        axes.flat[0].set_visible(True)
        axes.flat[0].text(0.5, 0.5, "no session with 2+ user turns", ha="center", va="center")
    handles, labels = axes.flat[0].get_legend_handles_labels()
    if handles:
        figure.legend(handles, labels, loc="lower center", ncol=len(STRATEGIES), fontsize=8, frameon=False)
    figure.suptitle("Size of the first request of each user turn, by history strategy", fontsize=11)
    figure.tight_layout(rect=(0, 0.05, 1, 0.96))
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return len(chosen)


def _chosen(sessions: tuple[SessionReport, ...]) -> list[SessionReport]:
    multi = [session for session in sessions if session.user_turns >= 2]
    return sorted(multi, key=lambda session: (-session.user_turns, session.path))[:MAX_PANELS]


def _label(path: str) -> str:
    name = path.replace("\\", "/").rsplit("/", 1)[-1]
    return name if len(name) <= 48 else name[:45] + "..."
