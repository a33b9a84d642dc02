"""``turnmemory analyze PATH...``: what each history strategy would do to real sessions.

Reads session logs (files, or directories searched recursively), replays every session under each
strategy, and prints a table, markdown or the JSON document of DESIGN.md. Never needs the network.
File names and what a log says about itself are printed safe for a terminal (a log or its name may hold
escape sequences).
"""

from __future__ import annotations

import shutil
import sys
import textwrap
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from turnmemory._text import terminal_json, terminal_safe
from turnmemory.analysis._measure import Meter, open_meter
from turnmemory.analysis._report import (
    LEGEND,
    Report,
    SessionReport,
    StrategyResult,
    analyze_session,
    build_report,
    render_markdown,
    render_text,
    report_json,
    summary_line,
)
from turnmemory.analysis._strategies import StrategyName
from turnmemory.transcripts import detect_format, discover, load_session

__all__ = [
    "Analysis",
    "OutputFormat",
    "TokenizerChoice",
    "analyze",
    "analyze_paths",
    "print_table",
    "register",
]

_PROGRESS_MIN_SESSIONS = 50
_MAX_PROBLEM_LINES = 20
_MOSTLY_UNREADABLE = 0.5  # a line-based log with more than this share of unreadable lines is not analysed
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
    paths: Annotated[
        list[Path],
        typer.Argument(metavar="PATH", help="Session files or directories (searched recursively)."),
    ],
    output: Annotated[OutputFormat, typer.Option("--format", help="Output format.")] = OutputFormat.table,
    plot: Annotated[
        Path | None,
        typer.Option(
            "--plot", help="Also draw history size per user turn to this image (.png when no suffix)."
        ),
    ] = None,
    tokenizer: Annotated[
        TokenizerChoice,
        typer.Option("--tokenizer", help="o200k tokens (when available offline) or UTF-8 bytes."),
    ] = TokenizerChoice.o200k,
) -> None:
    """Compare history strategies on real session logs.

    Reads Claude Code, Codex CLI, OpenCode, SWE-agent, mini-swe-agent, OpenHands and aider logs;
    docs/analysis.md explains the table.

    Exits 1 when a file given or found could not be read, or was mostly unreadable (the table then
    covers the rest), and 2 when a path does not exist.
    """
    meter = open_meter(tokenizer.value)
    if meter.note:
        _warn(meter.note)
    try:
        analysis = analyze_files(paths, meter)
    except FileNotFoundError as error:
        _warn(str(error))
        raise typer.Exit(2) from None
    report = analysis.report
    if not report.sessions:
        _warn("no sessions found in " + ", ".join(str(path) for path in paths))
        raise typer.Exit(1)
    if output is OutputFormat.json:
        typer.echo(terminal_json(report_json(report), indent=2))
    elif output is OutputFormat.markdown:
        typer.echo(terminal_safe(render_markdown(report)), nl=False)
    else:
        print_table(report, sessions=_TABLE_SESSIONS)
    if plot is not None:
        from turnmemory.analysis._plot import plot_report

        if not plot.suffix:
            plot = plot.with_suffix(".png")
        plot_report(report, plot)
        _warn(f"plot written to {plot}")
    if analysis.failed:
        _warn(
            f"{_count(len(analysis.failed), 'file')} could not be read or were mostly unreadable (see above)"
        )
        raise typer.Exit(1)


@dataclass(frozen=True, slots=True)
class Analysis:
    """What :func:`analyze_files` read: the report, and the files it could not use, each with why."""

    report: Report
    failed: tuple[str, ...] = field(default=())


def analyze_paths(paths: list[Path], meter: Meter, *, progress: bool | None = None) -> Report:
    """Analyse every session under ``paths`` (see :func:`analyze_files`); just the report."""
    return analyze_files(paths, meter, progress=progress).report


def analyze_files(paths: list[Path], meter: Meter, *, progress: bool | None = None) -> Analysis:
    """Analyse every session under ``paths``; what was not read is said on stderr, one line each.

    A file that cannot be read, is not a regular file, is given by name but is no session we read, or
    is a line-based log of which more than half the lines are unreadable is left out and listed in
    ``failed``; a file with some unreadable lines is analysed and said to be partly read.
    ``progress`` shows a progress bar on stderr (default: on a terminal, or for many sessions).
    """
    files: list[tuple[Path, str]] = []
    failed: list[str] = []
    for path in discover(paths):
        if not path.is_file():
            failed.append(str(path))
            _warn(f"skipped: {path}: not a regular file")
        elif (fmt := detect_format(path)) is not None:
            files.append((path, fmt))
        elif path in paths:
            failed.append(str(path))
            _warn(f"skipped: {path}: not a recognized session format")
    show = progress if progress is not None else (sys.stderr.isatty() or len(files) >= _PROGRESS_MIN_SESSIONS)
    reports: list[SessionReport] = []
    problems: list[str] = []
    unreadable = 0
    notes: list[str] = []
    for path, fmt in _progress(files, show):
        try:
            session = load_session(path, fmt)
        except (OSError, ValueError) as error:
            failed.append(str(path))
            notes.append(f"skipped: {path}: {error}" if path.name not in str(error) else f"skipped: {error}")
            continue
        problems.extend(session.problems)
        unreadable += session.unreadable
        if session.lines and session.unreadable:
            share = session.unreadable / session.lines
            read = f"{session.lines - session.unreadable:,} of {session.lines:,} lines readable"
            if share > _MOSTLY_UNREADABLE:
                failed.append(str(path))
                notes.append(f"skipped: {path}: mostly unreadable ({read})")
                continue
            notes.append(f"partly read: {path}: {read}")
        reports.append(analyze_session(session, meter))
    for line in problems[:_MAX_PROBLEM_LINES]:
        _warn(f"unreadable: {line}")
    hidden = unreadable - min(len(problems), _MAX_PROBLEM_LINES)
    if hidden > 0:
        _warn(f"... and {hidden:,} more unreadable lines or records")
    for note in notes:
        _warn(note)
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
        for line in textwrap.wrap(f"records not imported (not conversation): {kinds}{more}", 80):
            _warn(line)
    return Analysis(build_report(reports, meter), tuple(failed))


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


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


def print_table(report: Report, *, sessions: int | None = None, width: int | None = None) -> None:
    """The aggregate table, then one per multi-turn session (at most ``sessions``), and the legend.

    Plain text no wider than ``width`` (default: the terminal's width, at least 80; 80 when piped).
    """
    if width is None:
        width = max(80, shutil.get_terminal_size((80, 24)).columns) if sys.stdout.isatty() else 80
    lines = textwrap.wrap(summary_line(report), width)
    multi = sorted((s for s in report.sessions if s.user_turns >= 2), key=lambda s: -s.user_turns)
    sections: list[tuple[str, Mapping[StrategyName, StrategyResult]]] = [("All sessions", report.total)]
    for session in multi[:sessions]:
        about = f" ({session.format}, {session.user_turns} turns, {session.tool_calls} tool calls)"
        name = terminal_safe(Path(session.path).name, multiline=False)
        sections.append((_shorten(name, width - len(about)) + about, session.strategies))
    for title, results in sections:
        lines += ["", title, *render_text(results, width)]
    hidden = len(multi) - (len(multi) if sessions is None else min(sessions, len(multi)))
    if hidden:
        lines += ["", f"{_count(hidden, 'more multi-turn session')}: see --format markdown or json"]
    lines += ["", *LEGEND]
    typer.echo(terminal_safe("\n".join(lines)))


def _shorten(name: str, room: int) -> str:
    """``name`` cut in the middle to ``room`` characters (at least 20)."""
    room = max(20, room)
    if len(name) <= room:
        return name
    keep = room - 3
    return name[: keep - keep // 2] + "..." + name[len(name) - keep // 2 :]


def _warn(message: str) -> None:
    typer.echo(terminal_safe(message, multiline=False), err=True)
