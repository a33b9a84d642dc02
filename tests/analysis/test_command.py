from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from turnmemory.analysis import STRATEGIES
from turnmemory.analysis.command import register

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture
def app() -> typer.Typer:
    app = typer.Typer()

    @app.callback()
    def main() -> None:
        """turnmemory"""

    register(app)
    return app


def run(app: typer.Typer, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["analyze", *args])
    return result.exit_code, result.stdout, result.stderr


def test_json_output_has_the_contract_keys(app: typer.Typer) -> None:
    code, out, _ = run(app, str(EXAMPLES), "--format", "json", "--tokenizer", "bytes")
    assert code == 0
    document = json.loads(out)
    assert set(document) >= {"unit", "sessions", "total"}
    assert document["unit"] == "bytes"
    assert sorted(s["format"] for s in document["sessions"]) == [
        "aider",
        "claude-code",
        "codex",
        "mini-swe-agent",
        "opencode",
        "openhands",
        "swe-agent",
    ]
    for entry in document["sessions"]:
        assert set(entry) >= {"path", "format", "user_turns", "tool_calls", "strategies"}
        assert list(entry["strategies"]) == list(STRATEGIES)
    assert all(set(values) >= {"carried", "peak", "cost"} for values in document["total"].values())
    total = document["total"]
    assert total["prose_only"]["carried"] < total["turnmemory"]["carried"] < total["full"]["carried"]


def test_markdown_and_table_render(app: typer.Typer) -> None:
    code, out, _ = run(
        app, str(EXAMPLES / "codex-rollout.jsonl"), "--format", "markdown", "--tokenizer", "bytes"
    )
    assert code == 0
    assert out.startswith(
        "1 session (1 with 2+ user turns), 2 user turns, 8 tool calls; sizes in UTF-8 bytes"
    )
    assert "| TurnMemory + targets |" in out
    code, out, _ = run(app, str(EXAMPLES / "codex-rollout.jsonl"), "--tokenizer", "bytes")
    assert code == 0
    assert "All sessions" in out and "OpenCode prune" in out and "codex-rollout.jsonl (codex" in out
    assert "docs/analysis.md" in out


def test_plot_writes_a_png(app: typer.Typer, tmp_path: Path) -> None:
    target = tmp_path / "context.png"
    code, _, err = run(app, str(EXAMPLES), "--tokenizer", "bytes", "--plot", str(target))
    assert code == 0
    assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"plot written to {target}" in err


def test_bad_input_gets_one_line_and_loses_nothing(app: typer.Typer, tmp_path: Path) -> None:
    code, _, err = run(app, str(tmp_path / "missing"))
    assert code == 2
    assert "no such file or directory" in err
    (tmp_path / "notes.json").write_text("[1, 2]")
    broken = tmp_path / "broken.jsonl"
    broken.write_text((EXAMPLES / "claude-code-session.jsonl").read_text() + "{oops\n")
    code, out, err = run(
        app, str(tmp_path / "notes.json"), str(broken), "--format", "json", "--tokenizer", "bytes"
    )
    assert code == 1  # a file given by name could not be used: said, and the exit status says so
    assert "skipped: " in err and "notes.json: not a recognized session format" in err
    assert "broken.jsonl:" in err and "not valid JSON" in err
    assert "partly read: " in err and "broken.jsonl" in err
    (session,) = json.loads(out)["sessions"]
    assert (session["user_turns"], session["tool_calls"]) == (3, 10)
    assert session["skipped"]["sidechain"] == 1
    assert "records not imported (not conversation): " in err and "sidechain 1" in err


def test_no_sessions_is_an_error(app: typer.Typer, tmp_path: Path) -> None:
    code, _, err = run(app, str(tmp_path))
    assert code == 1
    assert "no sessions found" in err


def test_the_o200k_fallback_is_said_once(app: typer.Typer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")
    code, out, err = run(app, str(EXAMPLES / "swe-agent.traj"), "--format", "json")
    assert code == 0
    assert json.loads(out)["unit"] == "bytes"
    assert err.count("o200k tokenizer unavailable") == 1
