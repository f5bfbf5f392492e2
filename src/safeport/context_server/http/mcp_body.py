"""A ``/mcp`` request's body, read by the strict outside-input decoder before the SDK sees it.

The SDK parses the body itself and answers what it cannot parse; but its parsers take a
repeated key (keeping one of the two), ``NaN`` and ``Infinity``, and numbers of any length. A
body the strict decoder (``outside_json``) refuses is answered here with the JSON-RPC parse
error (-32700) and a 400, as the MCP transport specifies for a body that is not a JSON-RPC
message; one it takes goes on to the SDK unchanged.
"""

from __future__ import annotations

import json

from starlette.types import Message, Receive, Send

from safeport.context_server.http.guard import MAX_BODY_BYTES
from safeport.shared.outside_json import JsonRefused, loads_outside

PARSE_ERROR = -32700
_PARSE_ERROR_BODY = json.dumps(
    {"jsonrpc": "2.0", "id": None, "error": {"code": PARSE_ERROR, "message": "Parse error"}}
).encode()


async def checked_body(receive: Receive, send: Send) -> Receive | None:
    """The request's messages to replay to the SDK, or None once a refusal has been sent.

    The transport guard has already read the whole body within its size and time bounds and
    replays it as one message, so reading it again here waits for nothing."""
    messages: list[Message] = []
    body = b""
    while True:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request":
            break
        body += message.get("body", b"")
        if not message.get("more_body", False):
            break
    if body:
        try:
            loads_outside(body, max_bytes=MAX_BODY_BYTES)
        except JsonRefused:
            await _parse_error(send)
            return None
    pending = list(messages)

    async def replayed() -> Message:
        if pending:
            return pending.pop(0)
        return await receive()

    return replayed


async def _parse_error(send: Send) -> None:
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(_PARSE_ERROR_BODY)).encode()),
        (b"cache-control", b"no-store"),
    ]
    await send({"type": "http.response.start", "status": 400, "headers": headers})
    await send({"type": "http.response.body", "body": _PARSE_ERROR_BODY})
