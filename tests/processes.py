"""What a test process has started and not ended: its live child processes, read from /proc."""
from __future__ import annotations

import os
import threading
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Iterator


def live_children() -> list[int]:
    """Live (not zombie) child processes of this test process."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == os.getpid() and fields[0] != "Z":
                found.append(int(entry.name))
    return found


@contextmanager
def serving(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """``handler`` served on 127.0.0.1 from a thread; yields the server's ``/v1`` base URL, then shuts it down."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def reply(handler: BaseHTTPRequestHandler, status: int, data: bytes, content_type: str = "application/json",
          **headers: str) -> None:
    """Answer the request ``handler`` is serving: a status, ``data`` with its type and length, any extra headers."""
    handler.send_response(status)
    for name, value in {"content-type": content_type, **headers}.items():
        handler.send_header(name, value)
    handler.send_header("content-length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)
