"""What a person sees of ``turnmemory analyze``: the table at 80 and 120 columns, piped and in a real
terminal, and plots whose text stays inside the canvas."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import typer
from hypothesis import given
from hypothesis import strategies as st
from tests.analysis._sessions import call, session, turn
from typer.testing import CliRunner

from turnmemory.analysis import STRATEGIES, analyze_session, build_report, open_meter
from turnmemory.analysis._plot import MAX_PANELS, draw_report, same_lines, tick_label
from turnmemory.analysis._report import LABELS, LEGEND, Report, compact_number, render_text
from turnmemory.analysis.command import print_table, register

if TYPE_CHECKING:
    from matplotlib.transforms import Bbox

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"


@pytest.fixture
def app() -> typer.Typer:
    app = typer.Typer()

    @app.callback()
    def main() -> None:
        """turnmemory"""

    register(app)
    return app


def _report(sessions: int = 1, *, name: str = "s.jsonl", scale: int = 1) -> Report:
    meter = open_meter("bytes")
    reports = []
    for index in range(sessions):
        result = "x" * (scale * (index + 1))
        imported = session(
            turn("first", ("Let me look.", [call(f"a{index}", result)]), ("Done.", [])),
            turn("second", ("Again.", [call(f"b{index}", result)]), ("Done again.", [])),
            turn("third", ("Once more.", [call(f"c{index}", result)]), ("Finished.", [])),
        )
        imported = replace(imported, path=f"/logs/{index}-{name}")
        reports.append(analyze_session(imported, meter))
    return build_report(reports, meter)


@given(st.floats(min_value=0, max_value=9.99e11, allow_nan=False))
def test_compact_numbers_fit_seven_characters_and_keep_their_magnitude(value: float) -> None:
    text = compact_number(value)
    assert len(text) <= 7
    match = re.fullmatch(r"([\d,]+(?:\.\d+)?)([kMG]?)", text)
    assert match is not None
    shown = float(match.group(1).replace(",", "")) * {"": 1, "k": 1e3, "M": 1e6, "G": 1e9}[match.group(2)]
    assert abs(shown - value) <= max(0.5, value * 0.0051)


@pytest.mark.parametrize("width", [80, 120])
@pytest.mark.parametrize("scale", [1, 3_000, 1_500_000])
def test_the_table_fits_the_width_and_shows_every_number_whole(width: int, scale: int) -> None:
    report = _report(3, scale=scale)
    lines = render_text(report.total, width)
    assert all(len(line) <= width for line in lines)
    header, _rule, *rows = lines
    assert ("tool traffic removed" in header) == (width >= 100)
    assert [row[: len(LABELS[name])] for row, name in zip(rows, STRATEGIES, strict=True)] == [
        LABELS[name] for name in STRATEGIES
    ]
    for row, name in zip(rows, STRATEGIES, strict=True):
        result = report.total[name]
        cells = row[len(LABELS[name]) :].split()
        assert cells[0] == compact_number(result.carried)
        assert cells[2] == compact_number(result.peak)
        assert cells[3] == compact_number(result.cost)
        assert all("…" not in cell and not cell.endswith("...") for cell in cells)


def _printed(report: Report, width: int, capsys: pytest.CaptureFixture[str]) -> list[str]:
    print_table(report, sessions=10, width=width)
    return capsys.readouterr().out.splitlines()


@pytest.mark.parametrize("width", [80, 120])
def test_every_printed_line_fits_including_long_session_names(
    width: int, capsys: pytest.CaptureFixture[str]
) -> None:
    report = _report(4, name="a-very-long-repository-name__with-a-long-session-file-name.jsonl")
    lines = _printed(report, width, capsys)
    assert max(len(line) for line in lines) <= width
    assert [line for line in lines if line in LEGEND] == list(LEGEND)
    titles = [line for line in lines if line.endswith("tool calls)")]
    assert len(titles) == 4 and all("(test, 3 turns, 3 tool calls)" in title for title in titles)


def test_piped_output_is_plain_and_80_columns(app: typer.Typer) -> None:
    result = CliRunner().invoke(app, ["analyze", str(EXAMPLES), "--tokenizer", "bytes"])
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert not re.search(r"[\x1b│┃━─]", result.stdout)  # no escape codes, no box drawing
    assert "Observation masking M=10" in result.stdout and "mask10" not in result.stdout
    assert "docs/analysis.md" in result.stdout


def _pane(width: int, command: str) -> Iterator[str]:
    session = f"tm-{width}-{time.monotonic_ns()}"
    subprocess.run(
        ["tmux", "new-session", "-d", "-s", session, "-x", str(width), "-y", "200", command], check=True
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            screen = subprocess.run(
                ["tmux", "capture-pane", "-p", "-t", session, "-S", "-200"],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            if "__done__" in screen:
                yield from screen.splitlines()
                return
            time.sleep(0.2)
        pytest.fail("analyze did not finish in the terminal within 60 s")
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], check=False)


@pytest.mark.parametrize("width", [80, 120])
def test_in_a_real_terminal_no_table_line_wraps(width: int) -> None:
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed (CI installs it)")
    executable = Path(sys.executable).with_name("turnmemory")
    piped = subprocess.run(
        [str(executable), "analyze", str(EXAMPLES), "--tokenizer", "bytes"],
        capture_output=True,
        text=True,
        check=True,
        env={"COLUMNS": str(width), "PATH": "/usr/bin:/bin"},
    ).stdout.splitlines()
    screen = list(
        _pane(
            width,
            f"unset COLUMNS LINES; {executable} analyze {EXAMPLES} --tokenizer bytes 2>/dev/null; echo __done__; sleep 30",
        )
    )
    table = [line for line in piped if "%" in line]
    assert table, "the piped output has table rows"
    on_screen = {line.rstrip() for line in screen}
    # each row of the table shows on one screen line, whole (at 120 columns with the extra column)
    rows = [line for line in screen if re.match(r"^(Full trace|TurnMemory|OpenCode prune)\b", line)]
    assert rows and all(line.rstrip() in on_screen for line in rows)
    assert all(len(line.rstrip()) <= width for line in screen)
    assert any(("tool traffic removed" in line) == (width >= 100) for line in screen if "carried" in line), (
        screen
    )
    for line in table[:8]:
        if width < 100:
            assert line.rstrip() in on_screen


def _inside(box: Bbox, canvas: Bbox) -> bool:
    return (
        box.x0 >= canvas.x0 - 1
        and box.x1 <= canvas.x1 + 1
        and box.y0 >= canvas.y0 - 1
        and box.y1 <= canvas.y1 + 1
    )


def _extent_problems(report: Report) -> list[str]:
    """What matplotlib's own extents say is clipped or overlapping in the drawn figure."""
    import matplotlib.pyplot as plt

    figure = draw_report(report)
    try:
        figure.canvas.draw()
        renderer = figure.canvas.get_renderer()  # type: ignore[attr-defined]
        canvas = figure.bbox
        problems = []
        if not _inside(figure.get_tightbbox(renderer).transformed(figure.dpi_scale_trans), canvas):
            problems.append("the drawn figure is larger than its canvas")
        for axis in figure.axes:
            if axis.get_visible() and not _inside(axis.get_tightbbox(renderer), canvas):
                problems.append(f"panel outside the canvas: {axis.get_title()!r}")
        for legend in figure.legends:
            if not _inside(legend.get_window_extent(renderer), canvas):
                problems.append("legend outside the canvas")
        titles = [axis.title for axis in figure.axes if axis.get_visible() and axis.title.get_text()]
        if figure._suptitle is not None:
            titles.append(figure._suptitle)
        boxes = [title.get_window_extent(renderer) for title in titles]
        for first in range(len(boxes)):
            if not _inside(boxes[first], canvas):
                problems.append(f"title outside the canvas: {titles[first].get_text()!r}")
            for second in range(first + 1, len(boxes)):
                if boxes[first].overlaps(boxes[second]):
                    problems.append(
                        f"titles overlap: {titles[first].get_text()!r} / {titles[second].get_text()!r}"
                    )
        return problems
    finally:
        plt.close(figure)


@pytest.mark.parametrize("panels", range(1, MAX_PANELS + 1))
@pytest.mark.parametrize(
    "name", ["s", "leolin84200704__posthog-impact-dashboard__claude-session-with-a-long-tail-name-0123456789"]
)
def test_plots_keep_every_text_inside_the_canvas_and_titles_apart(panels: int, name: str) -> None:
    assert _extent_problems(_report(panels, name=name + ".jsonl", scale=50_000)) == []


def test_the_extent_check_sees_clipping() -> None:
    import matplotlib.pyplot as plt

    figure = plt.figure(figsize=(2, 2))
    figure.text(0.9, 0.5, "a long text that runs off the right edge")
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()  # type: ignore[attr-defined]
    assert not _inside(figure.get_tightbbox(renderer).transformed(figure.dpi_scale_trans), figure.bbox)
    plt.close(figure)


def test_overlapping_lines_stay_distinguishable() -> None:
    import matplotlib.pyplot as plt

    figure = draw_report(_report(1))
    try:
        lines = figure.axes[0].get_lines()
        styles = {(line.get_color(), str(line.get_linestyle()), line.get_marker()) for line in lines}
        assert len(styles) == len(STRATEGIES)
        widths = {line.get_label(): line.get_linewidth() for line in lines}
        assert widths[LABELS["full"]] > max(w for label, w in widths.items() if label != LABELS["full"])
    finally:
        plt.close(figure)


def test_a_plot_path_without_a_suffix_gets_png_and_says_so(app: typer.Typer, tmp_path: Path) -> None:
    target = tmp_path / "context"
    result = CliRunner().invoke(
        app, ["analyze", str(EXAMPLES), "--tokenizer", "bytes", "--plot", str(target)]
    )
    assert result.exit_code == 0, result.stderr
    written = target.with_suffix(".png")
    assert written.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"plot written to {written}" in result.stderr and not target.exists()


@given(st.floats(min_value=0, max_value=9.99e11, allow_nan=False))
def test_tick_labels_keep_their_value_and_drop_trailing_zeros(value: float) -> None:
    label = tick_label(value)
    assert not re.search(r"\.\d*0[kMG]$|\.[kMG]$", label)
    assert label == compact_number(value) or label.rstrip("kMG") in compact_number(value)
    assert tick_label(250_000) == "250k" and tick_label(1_500_000) == "1.5M" and tick_label(0) == "0"


def test_the_plots_ticks_read_as_round_numbers() -> None:
    import matplotlib.pyplot as plt

    figure = draw_report(_report(2, scale=120_000))
    try:
        figure.canvas.draw()
        labels = [
            tick.get_text() for axis in figure.axes for tick in axis.get_yticklabels() if tick.get_text()
        ]
        assert labels and all(re.fullmatch(r"\d+(\.\d*[1-9])?[kMG]?|[\d,]+", label) for label in labels), (
            labels
        )
    finally:
        plt.close(figure)


def test_a_panel_says_which_strategies_draw_the_same_line() -> None:
    import matplotlib.pyplot as plt

    report = _report(1)  # far below every threshold: clearing and pruning never fire
    groups = same_lines(report.sessions[0].strategies)
    assert ["full", "mask10", "anthropic_clear", "opencode_prune"] in groups or any(
        {"full", "anthropic_clear", "opencode_prune"} <= set(group) for group in groups
    )
    assert all(len({report.sessions[0].strategies[name].per_turn for name in group}) == 1 for group in groups)
    figure = draw_report(report)
    try:
        note = " ".join(figure.axes[0].get_xlabel().split())
        for group in groups:
            assert " = ".join(LABELS[name] for name in group) in note
        assert LABELS["prose_only"] not in note  # its own line
    finally:
        plt.close(figure)
    distinct = replace(
        report.sessions[0],
        strategies={
            name: replace(result, per_turn=(index, index + 1))
            for index, (name, result) in enumerate(report.sessions[0].strategies.items())
        },
    )
    assert same_lines(distinct.strategies) == []
