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
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Literal, TypeVar

import typer

from turnmemory._text import terminal_json, terminal_safe
from turnmemory.analysis._cost import CacheModel, CacheTtl, PricingName
from turnmemory.analysis._files import FileResult, read_files, workers_for
from turnmemory.analysis._measure import Meter, Tokenizer, open_meter
from turnmemory.analysis._report import (
    LEGEND,
    NO_LATER_TURNS,
    Report,
    SessionReport,
    StrategyResult,
    build_report,
    count,
    render_markdown,
    render_text,
    report_json,
    summary_line,
)
from turnmemory.analysis._strategies import StrategyName
from turnmemory.transcripts import detect_format, discover

__all__ = [
    "Analysis",
    "OutputFormat",
    "analyze",
    "analyze_files",
    "print_table",
    "register",
]

_PROGRESS_MIN_SESSIONS = 50
_MAX_PROBLEM_LINES = 20
_MAX_SKIPPED_KINDS = 8
_TABLE_SESSIONS = 10
_Item = TypeVar("_Item")


OutputFormat = Literal["table", "json", "markdown"]
"""How ``analyze`` prints its results."""


def register(app: typer.Typer) -> None:
    """Add the ``analyze`` command to the ``turnmemory`` CLI."""
    app.command("analyze")(analyze)


def analyze(
    paths: Annotated[
        list[Path],
        typer.Argument(metavar="PATH", help="Session files or directories (searched recursively)."),
    ],
    output: Annotated[OutputFormat, typer.Option("--format", help="Output format.")] = "table",
    plot: Annotated[
        Path | None,
        typer.Option(
            "--plot",
            help="Also draw history size per user turn to this image (.png when no suffix; its folder must exist).",
        ),
    ] = None,
    tokenizer: Annotated[
        Tokenizer, typer.Option("--tokenizer", help="o200k tokens (when available offline) or UTF-8 bytes.")
    ] = "o200k",
    cache_ttl: Annotated[
        CacheTtl,
        typer.Option(
            "--cache-ttl",
            help="Prompt-cache lifetime, applied to the pauses the logs' timestamps show; none: a cache "
            "that never expires and caches any size.",
        ),
    ] = "5m",
    pricing: Annotated[
        PricingName,
        typer.Option(
            "--pricing", help="Whose cache prices and minimum cacheable size (see docs/analysis.md)."
        ),
    ] = "anthropic",
    system_tokens: Annotated[
        int,
        typer.Option(
            "--system-tokens",
            min=0,
            help="Tokens of system prompt and tool definitions each request sends before the history "
            "(not in the logs): they count toward the minimum cacheable size.",
        ),
    ] = 0,
    jobs: Annotated[
        int | None,
        typer.Option("--jobs", min=1, help="Worker processes (default: one per core, from 4 MiB of logs)."),
    ] = None,
) -> None:
    """Compare history strategies on real session logs.

    Reads Claude Code, Codex CLI, OpenCode, SWE-agent, mini-swe-agent, OpenHands and aider logs;
    docs/analysis.md explains the table.

    Exits 1 when a file given or found could not be read, or was mostly unreadable (the table then
    covers the rest), and 2 when a path does not exist or the plot's folder does not.
    """
    if plot is not None:
        plot = plot if plot.suffix else plot.with_suffix(".png")
        if (problem := _unwritable(plot)) is not None:
            _warn(f"--plot {plot}: {problem}")
            raise typer.Exit(2)
    meter = open_meter(tokenizer)
    if meter.note:
        _warn(meter.note)
    cache = CacheModel.of(pricing, cache_ttl, system_tokens)
    try:
        analysis = analyze_files(paths, meter, cache=cache, jobs=jobs)
    except FileNotFoundError as error:
        _warn(str(error))
        raise typer.Exit(2) from None
    report = analysis.report
    if not report.sessions:
        _warn("no sessions found in " + ", ".join(str(path) for path in paths))
        raise typer.Exit(1)
    if output == "json":
        typer.echo(terminal_json(report_json(report), indent=2))
    elif output == "markdown":
        typer.echo(terminal_safe(render_markdown(report)), nl=False)
    else:
        print_table(report, sessions=_TABLE_SESSIONS)
    if plot is not None:
        from turnmemory.analysis._plot import plot_report

        try:
            plot_report(report, plot)
        except OSError as error:
            _warn(f"--plot {plot}: cannot write it ({error.strerror or error})")
            raise typer.Exit(1) from None
        _warn(f"plot written to {plot}")
    if analysis.failed:
        _warn(
            f"{count(len(analysis.failed), 'file')} could not be read or were mostly unreadable (see above)"
        )
        raise typer.Exit(1)


def _unwritable(plot: Path) -> str | None:
    """Why the plot cannot be written to ``plot``, or ``None``: its folder must exist already."""
    folder = plot.parent
    if not folder.exists():
        return f"the folder {folder} does not exist (create it first)"
    if not folder.is_dir():
        return f"{folder} is not a folder"
    if plot.is_dir():
        return "is a folder"
    return None


@dataclass(frozen=True, slots=True)
class Analysis:
    """What :func:`analyze_files` read: the report, and the files it could not use, each with why."""

    report: Report
    failed: tuple[str, ...] = field(default=())


def analyze_files(
    paths: list[Path],
    meter: Meter,
    *,
    progress: bool | None = None,
    cache: CacheModel | None = None,
    jobs: int | None = 1,
) -> Analysis:
    """Analyse every session under ``paths``; what was not read is said on stderr, one line each.

    A file that cannot be read, is not a regular file, is given by name but is no session we read, or
    is a line-based log of which more than half the lines are unreadable is left out and listed in
    ``failed``; a file with some unreadable lines is analysed and said to be partly read.
    ``progress`` shows a progress bar on stderr (default: on a terminal, or for many sessions).
    Costs are priced under ``cache`` (default: the idealised cache); ``jobs`` worker processes read
    the files (``None``: one per core), with the same result as one.
    """
    model = cache or CacheModel()
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
    results: Iterator[FileResult] = read_files(files, meter.unit, model, workers_for(files, jobs), meter)
    for result in _progress(results, len(files), show):
        problems.extend(result.problems)
        unreadable += result.unreadable
        if result.note is not None:
            notes.append(result.note)
        if result.report is None:
            failed.append(str(result.path))
        else:
            reports.append(result.report)
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
    return Analysis(build_report(reports, meter, model), tuple(failed))


def _progress(items: Iterable[_Item], total: int, show: bool) -> Iterator[_Item]:
    if not show:
        yield from items
        return
    from rich.console import Console
    from rich.progress import Progress

    with Progress(console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task("analysing sessions", total=total)
        for item in items:
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
        about = f" ({session.format}, {count(session.user_turns, 'turn')}, {count(session.tool_calls, 'tool call')})"
        name = terminal_safe(Path(session.path).name, multiline=False)
        sections.append((_shorten(name, width - len(about)) + about, session.strategies))
    for title, results in sections:
        lines += ["", title, *render_text(results, width)]
    if not multi:
        lines += ["", *textwrap.wrap(NO_LATER_TURNS, width)]
    hidden = len(multi) - (len(multi) if sessions is None else min(sessions, len(multi)))
    if hidden:
        lines += ["", f"{count(hidden, 'more multi-turn session')}: see --format markdown or json"]
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
