"""``turnmemory analyze PATH...``: what each history strategy would do to real sessions.

Reads session logs (files, or directories searched recursively), replays every session under each
strategy, and prints a table, markdown or the JSON document of DESIGN.md. Never needs the network.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from collections.abc import Iterator, Mapping
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from turnmemory.analysis._measure import Meter, open_meter
from turnmemory.analysis._report import (
    Report,
    SessionReport,
    StrategyResult,
    analyze_session,
    build_report,
    render_markdown,
    render_table_rows,
    report_json,
    summary_line,
)
from turnmemory.analysis._strategies import StrategyName
from turnmemory.transcripts import detect_format, discover, load_session

__all__ = ["OutputFormat", "TokenizerChoice", "analyze", "analyze_paths", "register"]

_PROGRESS_MIN_SESSIONS = 50
_MAX_PROBLEM_LINES = 20
_MAX_SKIPPED_KINDS = 8
_TABLE_SESSIONS = 10


class OutputFormat(StrEnum):
    """How ``analyze`` prints its results."""

    table = "table"
    json = "json"
    markdown = "markdown"


class TokenizerChoice(StrEnum):
    """The unit sizes are measured in."""

    bytes = "bytes"
    o200k = "o200k"


def register(app: typer.Typer) -> None:
    """Add the ``analyze`` command to the ``turnmemory`` CLI."""
    app.command("analyze")(analyze)


def analyze(
    paths: Annotated[list[Path], typer.Argument(help="Session files or directories (searched recursively).")],
    output: Annotated[OutputFormat, typer.Option("--format", help="Output format.")] = OutputFormat.table,
    plot: Annotated[
        Path | None, typer.Option("--plot", help="Also draw request size per turn to this PNG.")
    ] = None,
    tokenizer: Annotated[
        TokenizerChoice,
        typer.Option("--tokenizer", help="o200k tokens (when available offline) or UTF-8 bytes."),
    ] = TokenizerChoice.o200k,
) -> None:
    """Compare history strategies on real session logs (Claude Code, Codex CLI, OpenCode, SWE-agent, OpenHands)."""
    meter = open_meter(tokenizer.value)
    if meter.note:
        _warn(meter.note)
    try:
        report = analyze_paths(paths, meter)
    except FileNotFoundError as error:
        _warn(str(error))
        raise typer.Exit(2) from None
    if not report.sessions:
        _warn("no sessions found in " + ", ".join(str(path) for path in paths))
        raise typer.Exit(1)
    if output is OutputFormat.json:
        typer.echo(json.dumps(report_json(report), ensure_ascii=False, indent=2))
    elif output is OutputFormat.markdown:
        typer.echo(render_markdown(report), nl=False)
    else:
        print_table(report, sessions=_TABLE_SESSIONS)
    if plot is not None:
        from turnmemory.analysis._plot import plot_report

        plot_report(report, plot)
        _warn(f"plot written to {plot}")


def analyze_paths(paths: list[Path], meter: Meter, *, progress: bool | None = None) -> Report:
    """Analyse every session under ``paths``; unreadable files are reported on stderr and skipped.

    ``progress`` shows a progress bar on stderr (default: on a terminal, or for many sessions).
    """
    files = list(_sessions(paths))
    show = progress if progress is not None else (sys.stderr.isatty() or len(files) >= _PROGRESS_MIN_SESSIONS)
    reports: list[SessionReport] = []
    problems: list[str] = []
    for path, fmt in _progress(files, show):
        try:
            session = load_session(path, fmt)
        except (OSError, ValueError) as error:
            problems.append(f"{path}: {error}" if str(path.name) not in str(error) else str(error))
            continue
        problems.extend(session.problems)
        reports.append(analyze_session(session, meter))
    for line in problems[:_MAX_PROBLEM_LINES]:
        _warn(f"skipped: {line}")
    if len(problems) > _MAX_PROBLEM_LINES:
        _warn(f"... and {len(problems) - _MAX_PROBLEM_LINES} more skipped lines or files")
    skipped: Counter[str] = Counter()
    for report in reports:
        skipped.update(report.skipped)
    skipped.pop("malformed", None)
    if skipped:
        kinds = ", ".join(f"{kind} {count}" for kind, count in skipped.most_common(_MAX_SKIPPED_KINDS))
        more = (
            f" and {len(skipped) - _MAX_SKIPPED_KINDS} more kinds"
            if len(skipped) > _MAX_SKIPPED_KINDS
            else ""
        )
        _warn(f"records not imported (not conversation): {kinds}{more}")
    return build_report(reports, meter)


def _sessions(paths: list[Path]) -> Iterator[tuple[Path, str]]:
    for path in discover(paths):
        fmt = detect_format(path)
        if fmt is not None:
            yield path, fmt
        elif path in paths:
            _warn(f"skipped: {path}: not a recognized session format")


def _progress(files: list[tuple[Path, str]], show: bool) -> Iterator[tuple[Path, str]]:
    if not show:
        yield from files
        return
    from rich.console import Console
    from rich.progress import Progress

    with Progress(console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task("analysing sessions", total=len(files))
        for item in files:
            yield item
            bar.advance(task)


def print_table(report: Report, *, sessions: int | None = None) -> None:
    """The aggregate table, then one per multi-turn session (at most ``sessions``), on stdout."""
    from rich.console import Console
    from rich.table import Table

    console = Console(width=None if sys.stdout.isatty() else 120)
    console.print(summary_line(report))
    sections: list[tuple[str, Mapping[StrategyName, StrategyResult]]] = [("All sessions", report.total)]
    multi = sorted((s for s in report.sessions if s.user_turns >= 2), key=lambda s: -s.user_turns)
    sections += [
        (f"{Path(s.path).name} ({s.format}, {s.user_turns} turns, {s.tool_calls} tool calls)", s.strategies)
        for s in multi[:sessions]
    ]
    for title, results in sections:
        header, *rows = render_table_rows(results)
        table = Table(title=title, title_justify="left")
        for index, name in enumerate(header):
            table.add_column(name, justify="left" if index == 0 else "right", no_wrap=True)
        for row in rows:
            table.add_row(*row)
        console.print(table)
    hidden = len(multi) - (len(multi) if sessions is None else min(sessions, len(multi)))
    if hidden:
        console.print(f"{hidden} more multi-turn sessions: see --format markdown or json")


def _warn(message: str) -> None:
    typer.echo(message, err=True)
