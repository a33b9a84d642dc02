"""What an MCP call returns to the model: inline content, structured content, spilled large results."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from turnmemory.agent.mcp._results import PREVIEW_BYTES, listing_output, tool_error, tool_output

PROPERTY = settings(
    max_examples=50,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=8), inner, max_size=5),
    max_leaves=40,
)


def test_small_text_is_returned_inline(tmp_path: Path) -> None:
    assert tool_output("echo", "echo", "hello", None, spill_dir=tmp_path) == {
        "server": "echo",
        "tool": "echo",
        "content": "hello",
    }
    assert not tmp_path.exists() or not any(tmp_path.iterdir())


def test_structured_content_passes_through_without_repeating_it(tmp_path: Path) -> None:
    structured = {"sum": 3, "terms": [1, 2]}
    text = json.dumps(structured, indent=2)
    assert tool_output("calc", "add", text, structured, spill_dir=tmp_path) == {
        "server": "calc",
        "tool": "add",
        "content": "",
        "structured": structured,
    }
    assert tool_output("calc", "add", "three", structured, spill_dir=tmp_path)["content"] == "three"
    assert "structured" not in tool_output("echo", "echo", "hi", {"result": "hi"}, spill_dir=tmp_path)


def test_a_large_result_is_spilled_with_a_preview_and_the_path(tmp_path: Path) -> None:
    text = "line of text é\n" * 4000
    output = tool_output("docs", "fetch/page", text, None, spill_dir=tmp_path / "spill", limit=32 * 1024)
    spill = Path(output["spill_file"])
    assert spill.parent == tmp_path / "spill"
    assert spill.name.startswith("mcp-docs-fetch_page-")
    assert spill.read_bytes().decode() == text
    assert output["truncated"] is True
    assert output["size_bytes"] == len(text.encode())
    assert text.startswith(output["content"])
    assert len(output["content"].encode()) <= PREVIEW_BYTES
    assert (output["server"], output["tool"]) == ("docs", "fetch/page")


def test_large_structured_content_is_spilled_with_the_text(tmp_path: Path) -> None:
    structured = {"rows": [{"id": index, "name": f"row {index}"} for index in range(3000)]}
    output = tool_output("db", "query", "3000 rows", structured, spill_dir=tmp_path)
    assert "structured" not in output
    written = Path(output["spill_file"]).read_bytes().decode()
    head, _, rest = written.partition("\n\nstructured content:\n")
    assert head == "3000 rows"
    assert json.loads(rest) == structured


@PROPERTY
@given(text=st.text(max_size=3000), structured=json_values, limit=st.integers(min_value=0, max_value=2000))
def test_nothing_is_lost_and_nothing_inline_exceeds_the_limit(
    tmp_path: Path, text: str, structured: Any, limit: int
) -> None:
    output = tool_output("s", "t", text, structured, spill_dir=tmp_path, limit=limit)
    assert (output["server"], output["tool"]) == ("s", "t")
    if output.get("truncated"):
        written = Path(output["spill_file"]).read_bytes().decode()
        assert written.startswith(output["content"])
        assert len(output["content"].encode()) <= PREVIEW_BYTES
        if text and structured not in (None, {"result": text}):
            assert written.startswith(text)
        assert "structured" not in output
        return
    inline = output["content"].encode() + json.dumps(output.get("structured"), ensure_ascii=False).encode()
    assert len(inline) <= limit + len(b"null")
    assert output["content"] in (text, "")
    if output["content"] == "" and text:
        assert json.loads(text) == output["structured"]
    if structured is not None and structured != {"result": text}:
        assert output["structured"] == structured


@pytest.mark.parametrize("text", ["", "bad\n\n  timezone", "x" * 5000, "token: Bearer abcdefghijklmnop"])
def test_error_results_are_one_bounded_redacted_line(text: str) -> None:
    message = str(tool_error("time", "get_current_time", text))
    assert message.startswith("MCP tool time.get_current_time returned an error: ")
    assert "\n" not in message
    assert len(message.encode()) <= 1100
    assert "abcdefghijklmnop" not in message


@PROPERTY
@given(st.integers(min_value=0, max_value=400), st.integers(min_value=0, max_value=20_000))
def test_a_tool_listing_is_inline_or_spilled_whole(tmp_path: Path, count: int, limit: int) -> None:
    listing = {
        "server": "many",
        "tools": [
            {"name": f"t{n}", "description": "é" * 20, "input_schema": {"type": "object"}}
            for n in range(count)
        ],
    }
    output = listing_output(listing, spill_dir=tmp_path, limit=limit)
    if not output.get("truncated"):
        assert output == listing
        assert len(json.dumps(listing, ensure_ascii=False, indent=1).encode()) <= limit
        return
    assert output["server"] == "many"
    written = Path(output["spill_file"]).read_bytes()
    assert json.loads(written) == listing and output["size_bytes"] == len(written)
    assert written.decode().startswith(output["content"]) and len(output["content"].encode()) <= PREVIEW_BYTES
