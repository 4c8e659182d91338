"""Run the app on a free loopback port in a thread of this process (browser tests, screenshots)."""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

__all__ = ["serve_in_thread"]


def serve_in_thread(app: Any, *, timeout_s: float = 60.0) -> tuple[Any, str]:
    """(uvicorn server, base URL) of `app` served on 127.0.0.1 at a free port; `server.should_exit = True` stops
    it. Raises RuntimeError when it has not started within `timeout_s`."""
    import uvicorn

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    threading.Thread(target=server.run, daemon=True).start()
    deadline = time.monotonic() + timeout_s
    while not server.started:
        if time.monotonic() > deadline:
            raise RuntimeError("the app did not start")
        time.sleep(0.05)
    return server, f"http://127.0.0.1:{port}"
