"""An MCP server written by hand, for abuse below what the SDK lets a server send: ``raw_server.py MODE [N]``.

It answers ``initialize`` and ``tools/list`` (one tool, ``t``) correctly; a ``tools/call`` gets:

- ``junk``: lines that are not JSON on stdout, then a proper answer.
- ``deep``: an answer whose ``structuredContent`` is nested 100,000 levels deep.
- ``trickle``: its answer one byte every 0.2 seconds.
- ``silent``: no answer at all.
- ``badutf8``: a line that is not UTF-8, then a proper answer.
- ``huge N``: an N MiB text; ``items N``: N text items; ``image N``: an N MiB image (written by hand
  because the SDK's own server takes too long to build them).
- ``stderr N``: (at start-up) N MiB of stderr, the last line holding a C1 CSI, then exit 1.
"""

from __future__ import annotations

import json
import os
import sys
import time

DEPTH = 100_000
ANSWER = "raw-answer-51c2"


SIZED = {
    "huge": lambda n: [{"type": "text", "text": "y" * (n << 20)}],
    "items": lambda n: [{"type": "text", "text": f"item {index}"} for index in range(n)],
    "image": lambda n: [{"type": "image", "mimeType": "image/png", "data": "A" * ((n << 20) // 3 * 4)}],
}
"""Results of a size that would take the SDK's own server too long to build."""


def send(data: bytes) -> None:
    os.write(1, data)


def reply(request_id: object, result: object) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}).encode() + b"\n"


def answer(request_id: object) -> bytes:
    return reply(request_id, {"content": [{"type": "text", "text": ANSWER}], "isError": False})


def serve(mode: str, size: int) -> None:
    for line in sys.stdin.buffer:
        message = json.loads(line)
        method, request_id = message.get("method"), message.get("id")
        if method == "initialize":
            result = {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "raw", "version": "1"},
            }
            send(reply(request_id, result))
        elif method == "tools/list":
            tool = {"name": "t", "description": "The tool.", "inputSchema": {"type": "object"}}
            send(reply(request_id, {"tools": [tool]}))
        elif method == "tools/call":
            call(mode, size, request_id)
        elif request_id is not None:
            send(
                json.dumps(
                    {"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": "no"}}
                ).encode()
                + b"\n"
            )


def call(mode: str, size: int, request_id: object) -> None:
    if mode == "silent":
        return
    if mode == "junk":
        send(b"Server ready!\n{not json at all\n\n")
        send(answer(request_id))
    elif mode == "deep":
        head = json.dumps({"jsonrpc": "2.0", "id": request_id}).encode()[:-1]
        body = (
            b'"result": {"content": [], "structuredContent": {"a": ' + b"[" * DEPTH + b"]" * DEPTH + b"}}}\n"
        )
        send(head + b", " + body)
    elif mode == "trickle":
        for byte in answer(request_id):
            send(bytes([byte]))
            time.sleep(0.2)
    elif mode in SIZED:
        send(reply(request_id, {"content": SIZED[mode](size), "isError": False}))
    elif mode == "badutf8":
        send(b'{"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": "\xff\xfe"}}\n')
        send(answer(request_id))


if __name__ == "__main__":
    if sys.argv[1] == "stderr":
        block = b"S" * ((1 << 20) - 1) + b"\n"
        for _ in range(int(sys.argv[2])):
            os.write(2, block)
        os.write(2, "fatal: \u009b31mcannot start\n".encode())
        raise SystemExit(1)
    serve(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 0)
