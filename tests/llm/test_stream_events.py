"""The raw event reading the SDK adapters share: events survive any cut of the bytes, and a streamed
argument is kept whole up to its cap and only counted past it."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from turnmemory.llm._stream import Arguments, sse_events

VALUES = st.dictionaries(st.text(max_size=5), st.text(max_size=30) | st.integers(), max_size=4)


@settings(max_examples=50)
@given(
    events=st.lists(st.tuples(st.sampled_from(["", "message_start", "error"]), VALUES), max_size=8),
    cuts=st.lists(st.integers(min_value=0), max_size=12),
    crlf=st.booleans(),
)
def test_events_read_the_same_however_the_bytes_are_cut(
    events: list[tuple[str, dict[str, object]]], cuts: list[int], crlf: bool
) -> None:
    end = b"\r\n" if crlf else b"\n"
    stream = (
        b"".join(
            (f"event: {name}".encode() + end if name else b"")
            + b"data: "
            + json.dumps(data, ensure_ascii=False).encode()  # raw U+2028 and the like stay in the line
            + end
            + end
            for name, data in events
        )
        + b"data: [DONE]"
        + end
        + end
        + b'data: {"unfinished"'
    )
    points = sorted({cut % (len(stream) + 1) for cut in cuts})
    chunks = [stream[a:b] for a, b in zip([0, *points], [*points, len(stream)], strict=True)]
    assert list(sse_events(chunks)) == [*events, ("", "[DONE]")]


@given(pieces=st.lists(st.text(max_size=20), max_size=30), cap=st.integers(min_value=0, max_value=200))
def test_an_argument_is_kept_whole_up_to_its_cap_and_only_counted_past_it(
    pieces: list[str], cap: int
) -> None:
    arguments = Arguments(cap)
    for piece in pieces:
        arguments.add(piece)
        assert len(arguments.text().encode("utf-8", "surrogatepass")) <= cap
    whole = "".join(pieces)
    assert arguments.size == len(whole.encode("utf-8", "surrogatepass"))
    assert arguments.dropped == (arguments.size > cap)
    assert arguments.text() == ("" if arguments.dropped else whole)
