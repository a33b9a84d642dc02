from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from turnmemory.analysis import STRATEGIES
from turnmemory.analysis._cost import CacheModel
from turnmemory.analysis._report import NO_LATER_TURNS, count
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


def test_counts_are_singular_when_there_is_one(app: typer.Typer) -> None:
    single = EXAMPLES / "swe-agent.traj"
    code, out, _ = run(app, str(single), "--format", "markdown", "--tokenizer", "bytes")
    assert code == 0
    assert out.startswith("1 session (0 with 2+ user turns), 1 user turn, 5 tool calls;")
    assert count(1, "tool call") == "1 tool call" and count(2_000, "turn") == "2,000 turns"
    code, out, _ = run(app, str(EXAMPLES / "openhands-events.json"), "--tokenizer", "bytes")
    assert code == 0
    titles = [line for line in out.splitlines() if line.startswith("openhands-events.json")]
    assert titles and all(re.search(r"\((?:\w|-)+, \d+ turns?, \d+ tool calls?\)$", t) for t in titles)
    assert not re.search(r"\b1 (sessions|turns|user turns|tool calls)\b", out)


def test_a_report_of_single_turn_sessions_says_why_it_is_zeros(app: typer.Typer) -> None:
    single = [str(EXAMPLES / "swe-agent.traj"), str(EXAMPLES / "mini-swe-agent.traj.json")]
    for output in ("table", "markdown"):
        code, out, _ = run(app, *single, "--format", output, "--tokenizer", "bytes")
        assert code == 0
        flat = " ".join(out.split())
        assert NO_LATER_TURNS in flat, output
    code, out, _ = run(app, str(EXAMPLES / "codex-rollout.jsonl"), "--tokenizer", "bytes")
    assert code == 0 and "No session here has a second user turn" not in out


@pytest.mark.parametrize("where", ["missing/context.png", "file.txt/context.png", "folder"])
def test_a_plot_that_cannot_be_written_is_refused_before_any_work(
    app: typer.Typer, tmp_path: Path, where: str
) -> None:
    (tmp_path / "file.txt").write_text("x")
    (tmp_path / "folder.png").mkdir()
    before = sorted(tmp_path.rglob("*"))
    code, out, err = run(app, str(EXAMPLES), "--tokenizer", "bytes", "--plot", str(tmp_path / where))
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and err.startswith("--plot ")
    assert sorted(tmp_path.rglob("*")) == before  # nothing created


def test_the_cache_options_choose_the_model_and_say_it(app: typer.Typer) -> None:
    seen = {}
    for pricing in ("anthropic", "openai", "gemini"):
        for ttl in ("5m", "1h", "none"):
            code, out, _ = run(
                app,
                str(EXAMPLES),
                "--format",
                "json",
                "--tokenizer",
                "bytes",
                "--pricing",
                pricing,
                "--cache-ttl",
                ttl,
            )
            assert code == 0
            document = json.loads(out)
            model = CacheModel.of(pricing, ttl)  # type: ignore[arg-type]
            assert document["cache"]["pricing"] == pricing and document["cache"]["ttl"] == ttl
            assert (document["cache"]["read"], document["cache"]["write"]) == (model.read, model.write)
            assert document["cache"]["minimum_tokens"] == model.minimum
            seen[pricing, ttl] = document["total"]["full"]["cost"]
            for entry in document["sessions"]:
                assert list(entry["strategies"]) == list(STRATEGIES) and isinstance(entry["timed"], bool)
                for values in entry["strategies"].values():
                    assert {"cache_read", "cache_write", "uncached", "expired"} <= set(values)
    assert seen["anthropic", "1h"] > seen["anthropic", "5m"]  # 2x writes on the same requests
    code, out, _ = run(app, str(EXAMPLES), "--tokenizer", "bytes")  # the default: 5 minutes, Anthropic
    assert "5-minute cache lifetime" in " ".join(out.split()) and "Anthropic prices" in out
    assert "without timestamps priced with a cache that stays warm" in " ".join(out.split())


def test_jobs_give_the_same_output_as_one(app: typer.Typer, tmp_path: Path) -> None:
    broken = tmp_path / "broken.jsonl"
    broken.write_text((EXAMPLES / "claude-code-session.jsonl").read_text() + "{oops\n")
    paths = [str(EXAMPLES), str(broken)]
    results = {}
    for jobs in ("1", "2"):
        for output in ("json", "table"):
            code, out, err = run(app, *paths, "--format", output, "--tokenizer", "bytes", "--jobs", jobs)
            results[jobs, output] = (code, out, err)
    for output in ("json", "table"):
        assert results["1", output] == results["2", output]
    assert "partly read: " in results["2", "json"][2]
    code, _, err = run(app, str(EXAMPLES), "--jobs", "0")
    assert code == 2 and "--jobs" in err
