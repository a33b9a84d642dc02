"""Stream edits, paced streams and requests never answered: what the fake server sends for each."""

from __future__ import annotations

import http.client
import json
import socket
import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

from turnmemory.testing import EDIT_OPS, FakeProviderServer, Hang, Reply, StreamEdit, parse_script
from turnmemory.testing._wire import Frame, apply_edits

FRAMES = [Frame(b"data: " + json.dumps({"n": n, "pad": "x" * 10}).encode() + b"\n\n") for n in range(5)]


def numbers(frames: list[Frame]) -> list[int]:
    return [json.loads(frame.data[6:])["n"] for frame in frames]


def test_each_operation_on_one_frame() -> None:
    assert numbers(apply_edits(FRAMES, [StreamEdit("drop", at=1)])[0]) == [0, 2, 3, 4]
    assert numbers(apply_edits(FRAMES, [StreamEdit("repeat", at=-1)])[0]) == [0, 1, 2, 3, 4, 4]
    assert numbers(apply_edits(FRAMES, [StreamEdit("swap", at=7)])[0]) == [0, 1, 3, 2, 4]
    assert numbers(apply_edits(FRAMES, [StreamEdit("swap", at=4)])[0]) == [0, 1, 2, 3, 4]
    assert apply_edits(FRAMES, [StreamEdit("cut", at=3)]) == (FRAMES[:3], False)
    inserted, complete = apply_edits(FRAMES, [StreamEdit("insert", at=0, data="data: {not json}\n\n")])
    assert complete and inserted[0].data == b"data: {not json}\n\n" and inserted[1:] == FRAMES
    garbled = apply_edits(FRAMES, [StreamEdit("garble", at=2)])[0][2].data
    assert garbled.startswith(b"data: {") and garbled.endswith(b"\n\n")
    with pytest.raises(json.JSONDecodeError):
        json.loads(garbled[6:])


def test_matching_edits_apply_to_every_frame_that_contains_the_text() -> None:
    frames = [Frame(b"event: a\n\n"), Frame(b"event: b\n\n"), Frame(b"event: a\n\n")]
    assert apply_edits(frames, [StreamEdit("drop", match="event: a")])[0] == [frames[1]]
    assert apply_edits(frames, [StreamEdit("cut", match="event: b")]) == (frames[:1], False)
    assert apply_edits(frames, [StreamEdit("cut", match="event: c")]) == (frames, True)


def test_a_binary_frame_is_garbled_by_one_flipped_byte() -> None:
    data = bytes(range(20))
    garbled = apply_edits([Frame(data)], [StreamEdit("garble", at=0)])[0][0].data
    assert len(garbled) == len(data) and sum(a != b for a, b in zip(garbled, data, strict=True)) == 1


@given(
    edits=st.lists(
        st.builds(StreamEdit, op=st.sampled_from(["drop", "repeat", "swap", "garble"]), at=st.integers())
    )
)
def test_edits_never_fail_and_keep_a_plausible_frame_count(edits: list[StreamEdit]) -> None:
    frames, complete = apply_edits(FRAMES, edits)
    assert complete
    drops = sum(edit.op == "drop" for edit in edits)
    repeats = sum(edit.op == "repeat" for edit in edits)
    assert len(FRAMES) - drops <= len(frames) <= len(FRAMES) + repeats


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"op": "explode", "at": 1}, "StreamEdit.op"),
        ({"op": "drop"}, "exactly one of at and match"),
        ({"op": "drop", "at": 1, "match": "x"}, "exactly one of at and match"),
        ({"op": "drop", "at": True}, "StreamEdit.at"),
        ({"op": "drop", "match": ""}, "StreamEdit.match"),
        ({"op": "insert", "at": 1}, "StreamEdit.data"),
        ({"op": "drop", "at": 1, "data": "x"}, "StreamEdit.data"),
    ],
)
def test_edits_validate_their_fields(fields: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        StreamEdit(**fields)  # type: ignore[arg-type]


def test_scripts_read_edits_pace_and_hang() -> None:
    items = parse_script(
        [
            {
                "reply": {
                    "text": "hi",
                    "edits": [{"op": "garble", "at": 2}, {"op": "drop", "match": "x"}],
                    "pace": 0.5,
                }
            },
            {"hang": {}},
        ]
    )
    assert items == [
        Reply(text="hi", edits=[StreamEdit("garble", at=2), StreamEdit("drop", match="x")], pace=0.5),
        Hang(),
    ]
    assert set(EDIT_OPS) == {"drop", "repeat", "garble", "swap", "insert", "cut"}
    for bad, message in (
        ([{"reply": {"edits": {}}}], r"script\[0\]\.reply\.edits: expected a list"),
        ([{"reply": {"edits": [{"op": "cut"}]}}], r"script\[0\]\.reply\.edits\[0\]"),
        ([{"reply": {"pace": -1}}], "Reply.pace"),
        ([{"hang": {"seconds": 3}}], r"script\[0\]\.hang: unknown field 'seconds'"),
    ):
        with pytest.raises(ValueError, match=message):
            parse_script(bad)


def _post(server: FakeProviderServer, timeout: float) -> http.client.HTTPResponse:
    connection = http.client.HTTPConnection("127.0.0.1", int(server.url.rsplit(":", 1)[1]), timeout=timeout)
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True})
    connection.request("POST", "/v1/chat/completions", body, {"Authorization": "Bearer k"})
    return connection.getresponse()


def test_a_hung_request_gets_nothing_until_the_server_closes() -> None:
    server = FakeProviderServer([Hang()])
    with pytest.raises(socket.timeout):
        _post(server, timeout=0.3)
    closer = threading.Thread(target=server.close)
    closer.start()
    closer.join(timeout=30)
    assert not closer.is_alive() and server.remaining == 0


def test_a_paced_stream_sends_every_frame_and_a_closing_server_cuts_it() -> None:
    with FakeProviderServer([Reply(text="one two three", pace=0.01)]) as server:
        text = _post(server, timeout=10).read().decode()
    assert text.count("data: ") >= 4 and text.rstrip().endswith("data: [DONE]")
    server = FakeProviderServer([Reply(text=" ".join(["word"] * 1000), pace=0.05)])
    response = _post(server, timeout=10)
    response.read(10)
    server.close()  # returns although the stream has most of its frames left
