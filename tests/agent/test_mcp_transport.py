"""The stdio transport's guards, each alone: the gate that starts a server only once the watchdog knows its
group, the stderr tail that keeps only the last bytes, and the answers the SDK cannot read."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import mcp_types
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from turnmemory.agent.mcp._connection import _unreadable_answer
from turnmemory.agent.mcp._launch import TAIL_BYTES, LaunchFailed, StderrTail
from turnmemory.agent.tools._reaper import STDIO_GATE

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="POSIX pipes and process groups")

PROPERTY = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def test_the_gate_starts_a_server_only_on_the_agents_first_request(tmp_path: Path) -> None:
    def gate(first: bytes | None) -> tuple[int, bytes, bool]:
        marker = tmp_path / "ran"
        marker.unlink(missing_ok=True)
        read_end, write_end = os.pipe()
        if first is not None:
            os.write(write_end, first)
        os.close(write_end)
        done = subprocess.run(
            [*STDIO_GATE, "/usr/bin/touch", "touch", str(marker)],
            stdin=read_end,
            capture_output=True,
            timeout=30,
            start_new_session=True,
        )
        os.close(read_end)
        return done.returncode, done.stderr, marker.exists()

    code, stderr, ran = gate(None)
    assert (code, ran) == (125, False), "an agent gone before its first request starts nothing"
    code, stderr, ran = gate(b'{"jsonrpc": "2.0"}\n')
    assert (code, ran) == (0, True)
    assert stderr.rstrip().isdigit(), "the gate names its process group first"


def _tail_of(writes: list[bytes], group: bytes = b"4242\n") -> tuple[int | BaseException, StderrTail]:
    """What a tail made of ``group`` then ``writes`` holds once the writer is gone."""

    async def main() -> tuple[int | BaseException, StderrTail]:
        tail = StderrTail()
        pipe = os.fdopen(os.dup(tail.writer.fileno()), "wb")
        data = group + b"".join(writes)

        def write() -> None:
            with pipe:
                pipe.write(data)

        tail.writer.close()
        feeding = asyncio.get_running_loop().run_in_executor(None, write)
        await feeding
        try:
            found: int | BaseException = await asyncio.wait_for(tail.group(), 10)
        except LaunchFailed as error:
            found = error
        while tail._fd is not None:
            await asyncio.sleep(0.01)
        tail.close()
        return found, tail

    return asyncio.run(main())


@PROPERTY
@given(
    st.lists(
        st.text(st.characters(blacklist_categories=["Cs"]), max_size=300).map(
            lambda line: line.encode() + b"\n"
        ),
        max_size=40,
    ),
    st.integers(min_value=0, max_value=3 * TAIL_BYTES),
)
def test_the_stderr_tail_keeps_the_last_bytes_and_the_last_lines(lines: list[bytes], padding: int) -> None:
    writes = [b"p" * padding + b"\n", *lines]
    group, tail = _tail_of(writes)
    assert group == 4242
    kept = b"".join(writes)[-TAIL_BYTES:]
    assert bytes(tail._data) == kept
    expected = [line.strip() for line in kept.decode(errors="replace").splitlines() if line.strip()]
    assert tail.lines(3) == expected[-3:]


def test_a_flood_of_stderr_costs_the_tail_only() -> None:
    group, tail = _tail_of([b"E" * ((1 << 20) - 1) + b"\n"] * 64 + [b"last words\n"])
    assert group == 4242 and len(tail._data) == TAIL_BYTES
    assert tail.lines(1) == ["last words"]


@pytest.mark.parametrize("group", [b"", b"not a number\n", b"9" * 40])
def test_a_gate_that_never_names_its_group_is_a_failed_launch(group: bytes) -> None:
    found, _ = _tail_of([b"noise\n"] if group else [], group=group)
    assert isinstance(found, LaunchFailed)


def _unreadable(line: str) -> Exception:
    try:
        mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValidationError as error:
        return error
    raise AssertionError(f"{line[:60]!r} is readable")


request_ids = st.integers(min_value=-(10**15), max_value=10**15) | st.text(
    st.characters(blacklist_categories=["Cs", "Cc"]), max_size=40
)


@PROPERTY
@given(request_ids, st.integers(min_value=200, max_value=5000))
def test_an_unreadable_answer_fails_the_request_it_names(request_id: int | str, depth: int) -> None:
    line = (
        json.dumps({"jsonrpc": "2.0", "id": request_id})[:-1]
        + ', "result": '
        + "[" * depth * 100
        + "]" * depth * 100
        + "}"
    )
    answer = _unreadable_answer(_unreadable(line))
    assert answer is not None
    message = answer.message
    assert isinstance(message, mcp_types.JSONRPCError) and message.id == request_id
    assert message.error.message.startswith("its answer could not be read: ")
    assert len(message.error.message) < 400


@pytest.mark.parametrize(
    "line",
    [
        "Server ready!",
        "{not json at all",
        '{"jsonrpc": "2.0", "method": "notifications/message", "id": 3, "params": '
        + "[" * 300_000
        + "]" * 300_000
        + "}",
        '{"result": "no id anywhere", "extra": ' + "[" * 300_000 + "]" * 300_000 + "}",
    ],
)
def test_other_unreadable_lines_are_ignored(line: str) -> None:
    assert _unreadable_answer(_unreadable(line)) is None
