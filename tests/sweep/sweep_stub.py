"""A stand-in server for sweep's failure tests, started by a launch template: ``python sweep_stub.py --port
{port} --k {k} --pids DIR``. Its behaviour follows k:

- k = 0: a well-behaved OpenAI streaming server; it also starts a child (``sleep``) in its process group,
  whose pid it writes to DIR, so a test can see that stopping the server stops its children;
- k = 1: serves 3 requests normally, then dies (exit code 1) in the middle of the next one;
- k = 2: up, but /health answers 503 for ever;
- k = 3: prints one line and exits with code 3 before listening;
- k = 4: well-behaved, like k = 0 without the child.

``--daemonize``: detach before serving, as a daemon does (fork, ``setsid``, fork again; the command itself
exits 0 at once), and write the server's pid to DIR/daemon-PORT.

``--fail K:N`` (repeatable): the configuration with draft length K answers HTTP 500 to every completion
request after its N-th (``K:0``: to all of them), as a server that is up but broken does.

Capacity without timing: k = 0 answers HTTP 503 to a request arriving while 3 are already in flight, k = 4
while 6 are, so an SLO (failed requests never meet one) is met at concurrency ≤ 3 and ≤ 6 respectively.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route


def sse(obj: Any) -> bytes:
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--k", type=int, required=True)
    parser.add_argument("--pids", type=Path, required=True)
    parser.add_argument("--fail", action="append", default=[])
    parser.add_argument("--daemonize", action="store_true")
    args = parser.parse_args()
    if args.daemonize:
        if os.fork():
            os._exit(0)
        os.setsid()
        if os.fork():
            os._exit(0)
        args.pids.mkdir(parents=True, exist_ok=True)
        (args.pids / f"daemon-{args.port}").write_text(str(os.getpid()))
    fail_after = {int(k): int(n) for k, _, n in (f.partition(":") for f in args.fail)}.get(args.k)
    if args.k == 3:
        print("stub: refusing to start with k=3 (unsupported draft length)", flush=True)
        sys.exit(3)
    args.pids.mkdir(parents=True, exist_ok=True)
    if args.k == 0:
        child = subprocess.Popen(["sleep", "300"])
        (args.pids / f"child-{args.port}").write_text(str(child.pid))
    served = 0
    in_flight = 0
    room = {0: 3, 4: 6}.get(args.k, 1000)

    async def health(request: Request) -> Response:
        return Response(status_code=503 if args.k == 2 else 200)

    async def models(request: Request) -> Response:
        return JSONResponse({"object": "list", "data": [{"id": "stub", "object": "model"}]})

    async def completions(request: Request) -> Response:
        nonlocal served, in_flight
        served += 1
        if fail_after is not None and served > fail_after:
            return JSONResponse({"error": {"message": "internal error"}}, status_code=500)
        dying = args.k == 1 and served > 3
        if in_flight >= room:
            return JSONResponse({"error": {"message": "busy"}}, status_code=503)
        in_flight += 1

        async def body() -> Any:
            nonlocal in_flight
            try:
                async for part in stream():
                    yield part
            finally:
                in_flight -= 1

        async def stream() -> Any:
            for i in range(4):
                if dying and i == 2:
                    os._exit(1)
                yield sse(
                    {
                        "id": "c",
                        "object": "text_completion",
                        "choices": [{"index": 0, "text": f" w{i}", "finish_reason": None}],
                        "usage": {"prompt_tokens": 3, "completion_tokens": i + 1, "total_tokens": i + 4},
                    }
                )
                await asyncio.sleep(0.03)
            yield sse(
                {
                    "id": "c",
                    "object": "text_completion",
                    "choices": [{"index": 0, "text": "", "finish_reason": "length"}],
                }
            )
            yield sse(
                {
                    "id": "c",
                    "object": "text_completion",
                    "choices": [],
                    "usage": {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7},
                }
            )
            yield b"data: [DONE]\n\n"

        return StreamingResponse(body(), media_type="text/event-stream")

    app = Starlette(
        routes=[
            Route("/health", health),
            Route("/v1/models", models),
            Route("/v1/completions", completions, methods=["POST"]),
        ]
    )
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
