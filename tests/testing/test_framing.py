"""Framing and chunking invariants: SSE lines, AWS event-stream messages, stream deltas, break points."""

from __future__ import annotations

import json
from typing import Any

from botocore.eventstream import EventStreamBuffer
from hypothesis import given
from hypothesis import strategies as st

from turnmemory.testing._chunks import json_pieces, text_pieces
from turnmemory.testing._eventstream import encode_message, event_message, exception_message
from turnmemory.testing._sse import DONE, sse
from turnmemory.testing._wire import Frame, cut_point

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=10,
)


@given(text=st.text(max_size=200))
def test_text_pieces_rebuild_the_text_one_word_each(text: str) -> None:
    pieces = text_pieces(text)
    assert "".join(pieces) == text
    assert all(piece for piece in pieces)
    assert all(len(piece.split()) <= 1 for piece in pieces)
    assert len(pieces) == max(len(text.split()), 1 if text else 0)


@given(text=st.text(max_size=200))
def test_json_pieces_rebuild_the_json_in_bounded_fragments(text: str) -> None:
    pieces = json_pieces(text)
    assert "".join(pieces) == text
    assert pieces and all(len(piece) <= 16 for piece in pieces)


@given(
    data=st.dictionaries(st.text(max_size=8), json_values, max_size=4),
    event=st.none() | st.text("abc_.", min_size=1),
)
def test_sse_is_one_event_line_one_data_line_and_a_blank_line(
    data: dict[str, Any], event: str | None
) -> None:
    lines = sse(data, event).decode().split("\n")
    assert lines[-2:] == ["", ""]
    if event is not None:
        assert lines.pop(0) == f"event: {event}"
    assert len(lines) == 3 and lines[0].startswith("data: ")
    assert json.loads(lines[0].removeprefix("data: ")) == data
    assert DONE == b"data: [DONE]\n\n"


def decode(data: bytes) -> list[Any]:
    buffer = EventStreamBuffer()
    buffer.add_data(data)
    return list(buffer)


@given(
    headers=st.dictionaries(st.text(min_size=1, max_size=20), st.text(max_size=40), max_size=4),
    payload=st.binary(max_size=300),
)
def test_event_stream_messages_decode_with_botocore(headers: dict[str, str], payload: bytes) -> None:
    (message,) = decode(encode_message(headers, payload))
    assert message.headers == headers
    assert message.payload == payload


@given(payload=st.dictionaries(st.text(max_size=8), json_values, max_size=4), split=st.integers(0, 200))
def test_event_and_exception_messages_carry_their_type_and_json(payload: dict[str, Any], split: int) -> None:
    data = event_message("contentBlockDelta", payload) + exception_message(
        "throttlingException", {"message": "m"}
    )
    buffer = EventStreamBuffer()
    buffer.add_data(data[:split])
    messages = list(buffer)
    buffer.add_data(data[split:])
    event, exception = messages + list(buffer)
    assert event.headers == {
        ":event-type": "contentBlockDelta",
        ":content-type": "application/json",
        ":message-type": "event",
    }
    assert json.loads(event.payload) == payload
    assert exception.headers[":message-type"] == "exception"
    assert exception.headers[":exception-type"] == "throttlingException"


frame_lists = st.lists(st.sampled_from(["opening", "content", "other"]), max_size=20).map(
    lambda parts: [Frame(b"", part) for part in parts]  # type: ignore[arg-type]
)


@given(frames=frame_lists, contents=st.none() | st.integers(0, 25))
def test_cut_point_sends_exactly_the_wanted_content_frames(frames: list[Frame], contents: int | None) -> None:
    cut = cut_point(frames, contents)
    available = sum(frame.part == "content" for frame in frames)
    wanted = available if contents is None else min(contents, available)
    sent = frames[:cut]
    assert sum(frame.part == "content" for frame in sent) == wanted
    if wanted:
        assert sent[-1].part == "content"
    else:
        assert all(frame.part == "opening" for frame in sent)
        assert cut == len(frames) or frames[cut].part != "opening"
