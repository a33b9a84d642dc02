"""The proxy served by uvicorn on a loopback port in a thread of the test process."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn

from turnmemory.proxy import ProxyApp


@contextmanager
def serving(app: ProxyApp) -> Iterator[str]:
    """``http://127.0.0.1:PORT`` of ``app`` served until the block ends."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    config = uvicorn.Config(
        app, access_log=False, server_header=False, date_header=False, log_level="warning", lifespan="on"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the proxy did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(30)
        sock.close()


class Recording:
    """An ``httpx2`` transport (the SDKs' HTTP stack) that keeps the bytes of every response body."""

    def __init__(self) -> None:
        import httpx2

        self._inner = httpx2.HTTPTransport()
        self.bodies: list[bytearray] = []
        self.statuses: list[int] = []
        self.headers: list[dict[str, str]] = []

    def handle_request(self, request: Any) -> Any:
        import httpx2

        response = self._inner.handle_request(request)
        body = bytearray()
        self.bodies.append(body)
        self.statuses.append(response.status_code)
        self.headers.append({k.lower(): v for k, v in response.headers.items()})
        stream = response.stream

        class _Kept(httpx2.SyncByteStream):
            def __iter__(self) -> Iterator[bytes]:
                for chunk in stream:
                    body.extend(chunk)
                    yield chunk

            def close(self) -> None:
                stream.close()

        return httpx2.Response(
            response.status_code, headers=response.headers, stream=_Kept(), extensions=response.extensions
        )

    def close(self) -> None:
        self._inner.close()

    def client(self) -> Any:
        """An ``httpx2.Client`` over this transport, for an SDK's ``http_client``."""
        import httpx2

        return httpx2.Client(transport=self)  # type: ignore[arg-type]
