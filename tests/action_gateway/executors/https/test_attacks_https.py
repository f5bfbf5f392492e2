"""Attacks on the HTTPS executor: by an agent choosing argument values, and by a hostile server.

Each test tries to get past one guard: steer the request to another host, port or path, reach a
forbidden address, follow a redirect, read the credential back, exhaust memory, or hang the
worker. The legitimate use next to each attack keeps working (see test_https_executor.py).
"""

from __future__ import annotations

import base64
import functools
import gzip
import json
import logging
import re
import socket
import threading
import time
import traceback
import tracemalloc
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from urllib.parse import quote, quote_plus

import pytest

from harness.real_tls import API_HOST, TlsServer
from safeport.action_gateway.executors.gateway_executor import GatewayExecutor
from safeport.action_gateway.executors.interface import ActionError
from safeport.shared.schemas.config import HttpOperation, HttpService
from safeport.vault.secrets import SecretBytes, TokenSecret
from tests.action_gateway.executors.hostile_tls import (
    HostileServer,
    json_response,
    response,
    running_hostile_server,
)
from tests.action_gateway.executors.https.test_https_executor import StaticResolver
from tests.action_gateway.executors.planned import PlannedHttp, PreparingExecutor

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.action_gateway.executors.https"

pytestmark = pytest.mark.integration

CANARY = "CANARY-token-7f3a9c"
ANY = {"pattern": "^.{1,200}$"}


def _token(value: str = CANARY) -> TokenSecret:
    return TokenSecret(SecretBytes(value.encode()))


@pytest.fixture
def resolver() -> StaticResolver:
    return StaticResolver({API_HOST: ["127.0.0.1"]})


@pytest.fixture
def executor(resolver: StaticResolver) -> Iterator[PreparingExecutor]:
    executor = PreparingExecutor(GatewayExecutor(resolver=resolver))
    yield executor
    executor.close_all()


@pytest.fixture
def hostile() -> Iterator[HostileServer]:
    with running_hostile_server() as server:
        yield server


def _service(base_url: str, ca_file: object, **extra: object) -> HttpService:
    spec: dict[str, object] = {
        "base_url": base_url,
        "credential": "deploy-token",
        "ca_file": str(ca_file),
        "allow_private_addresses": True,
        "timeout_s": 5,
        **extra,
    }
    return HttpService.model_validate(spec)


def _action(
    service: HttpService, path: str, args: dict[str, str | int], **spec: object
) -> PlannedHttp:
    params = spec.pop("params", dict.fromkeys(args, ANY))
    operation = HttpOperation.model_validate(
        {"method": "GET", "path": path, "params": params, **spec}
    )
    return PlannedHttp("deploy-api", service, "op", operation, args)


def _fails(call: Callable[[], object], failure: str) -> ActionError:
    with pytest.raises(ActionError) as caught:
        call()
    assert caught.value.failure == failure, caught.value.message
    return caught.value


def _everything_said(error: BaseException) -> str:
    """Every text an error can show: message, diagnostic, repr, the whole chained traceback."""
    text = "".join(traceback.format_exception(error))
    if isinstance(error, ActionError):
        text += error.diagnostic() + repr(error)
    seen: BaseException | None = error
    while seen is not None:  # also the contexts a traceback hides after `from None`
        text += repr(seen) + str(seen.args)
        seen = seen.__cause__ or seen.__context__
    return text


# --- the agent steers the URL ---------------------------------------------------------------

STEERING = [
    "@evil.example",
    "//evil.example/x",
    "\\\\evil.example\\x",
    "evil.example:8443",
    "https://evil.example/",
    "x?admin=1&y=2",
    "x#fragment",
    "a;jsessionid=1",
    "%2fetc%2fpasswd",
    "x y",
    "ä\u2028\u0085",
    "a\u3002evil.example",
    "xn--80ak6aa92e.com",
    "{service}",
]


@pytest.mark.parametrize("value", STEERING)
def test_a_path_value_stays_one_segment_on_the_declared_host(
    tls_server: TlsServer, executor: PreparingExecutor, value: str
) -> None:
    service = _service(tls_server.base_url(), tls_server.ca_file)
    action = _action(
        service, "/echo-target/{v}/end", {"v": value}, response_fields=["target", "host"]
    )
    fields = executor.http_request(action, _token()).fields
    assert fields["host"] == f"{API_HOST}:{tls_server.port}"
    assert fields["target"] == "/echo-target/" + quote(value, safe="") + "/end"


@pytest.mark.parametrize(
    "value",
    [
        ".",
        "..",
        "%2e%2e",  # a server or proxy that decodes once more sees `..`
        "%252e%252e",  # ... or twice
        ".%2E",
        "\uff0e\uff0e",  # fullwidth dots: NFKC-normalising servers see `..`
        "\u2024\u2024",  # one-dot leaders
        "..\\",  # backslash is a separator to some servers
        "..;",  # `;` starts a path parameter to others (`..;/` is Tomcat's classic)
        "..%2f",
        "..%5cx",
        "../admin",
    ],
)
def test_a_value_that_some_server_would_read_as_a_dot_segment_is_refused(
    tls_server: TlsServer, executor: PreparingExecutor, value: str
) -> None:
    before = len(tls_server.recorded.requests)
    service = _service(tls_server.base_url(), tls_server.ca_file)
    action = _action(service, "/echo-target/{v}", {"v": value}, response_fields=["target"])
    _fails(lambda: executor.http_request(action, _token()), "invalid_target")
    assert len(tls_server.recorded.requests) == before


def test_a_value_cannot_add_query_parameters_or_a_fragment(
    tls_server: TlsServer, executor: PreparingExecutor
) -> None:
    service = _service(tls_server.base_url(), tls_server.ca_file)
    value = "x&admin=true#frag?y=1;z"
    action = _action(
        service, "/echo-target/q", {"v": value}, query={"q": "{v}"}, response_fields=["target"]
    )
    target = executor.http_request(action, _token()).fields["target"]
    assert target == "/echo-target/q?q=" + quote(value, safe="")
    assert target.count("&") == 0 and target.count("=") == 1


@pytest.mark.parametrize(
    "value", ["x\r\nHost: evil.example", "x\nX-Injected: 1", "x\x00y", "x\x7f"]
)
def test_crlf_and_control_characters_never_reach_the_request(
    tls_server: TlsServer, executor: PreparingExecutor, value: str
) -> None:
    before = len(tls_server.recorded.requests)
    service = _service(tls_server.base_url(), tls_server.ca_file)
    for path, query in (("/echo-target/{v}", {}), ("/echo-target/q", {"q": "{v}"})):
        action = _action(service, path, {"v": value}, query=query, response_fields=["target"])
        error = _fails(functools.partial(executor.http_request, action, _token()), "invalid_target")
        assert "Injected" not in error.diagnostic() and "evil" not in error.diagnostic()
    assert len(tls_server.recorded.requests) == before


def test_a_value_in_the_json_body_stays_a_string(
    tls_server: TlsServer, executor: PreparingExecutor
) -> None:
    service = _service(tls_server.base_url(), tls_server.ca_file)
    value = '", "admin": true, "x": "'
    action = _action(
        service,
        "/deploy",
        {"v": value},
        method="POST",
        json_body={"name": "{v}", "role": "reader"},
        response_fields=["received"],
    )
    received = executor.http_request(action, _token()).fields["received"]
    assert received == {"name": value, "role": "reader"}


@pytest.mark.parametrize("value", [10**30, -(10**30), 2**63])
def test_an_unbounded_integer_too_large_to_be_a_number_is_refused(
    tls_server: TlsServer, executor: PreparingExecutor, value: int
) -> None:
    service = _service(tls_server.base_url(), tls_server.ca_file)
    action = _action(
        service,
        "/echo-target/{n}",
        {"n": value},
        params={"n": {"type": "int"}},
        response_fields=["target"],
    )
    _fails(lambda: executor.http_request(action, _token()), "invalid_target")


# --- the agent (or DNS) steers the address --------------------------------------------------


@pytest.mark.parametrize(
    "answers",
    [
        ["::ffff:169.254.169.254"],
        ["::ffff:0:a9fe:a9fe"],  # IPv4-translated
        ["::a9fe:a9fe"],  # IPv4-compatible
        ["64:ff9b::a9fe:a9fe"],  # NAT64 well-known prefix
        ["64:ff9b:1::a9fe:a9fe"],  # NAT64 local-use prefix
        ["2002:a9fe:a9fe::1"],  # 6to4
        ["0.0.0.0"],
        ["::"],
        ["224.0.0.1"],
        ["ff02::1"],
        ["255.255.255.255"],
        ["fe80::1"],
        ["127.0.0.1", "169.254.169.254"],  # one bad answer among good ones
        ["169.254.169.254", "127.0.0.1"],
    ],
)
def test_forbidden_answers_are_refused_even_for_a_private_service(
    tls_server: TlsServer, resolver: StaticResolver, executor: PreparingExecutor, answers: list[str]
) -> None:
    resolver.answers[API_HOST] = answers
    before = tls_server.recorded.connections
    service = _service(tls_server.base_url(), tls_server.ca_file, allow_private_addresses=True)
    action = _action(service, "/echo-target/x", {}, response_fields=["target"])
    _fails(lambda: executor.http_request(action, _token()), "address_refused")
    assert tls_server.recorded.connections == before


@pytest.mark.parametrize("answer", ["2130706433", "0177.0.0.1", "0x7f.0.0.1", "127.1", "1.2.3.4 "])
def test_legacy_address_forms_in_an_answer_are_not_addresses(
    tls_server: TlsServer, resolver: StaticResolver, executor: PreparingExecutor, answer: str
) -> None:
    resolver.answers[API_HOST] = [answer]
    service = _service(tls_server.base_url(), tls_server.ca_file)
    action = _action(service, "/echo-target/x", {}, response_fields=["target"])
    _fails(lambda: executor.http_request(action, _token()), "unreachable")


@pytest.mark.parametrize(
    "answer", ["127.0.0.1", "10.0.0.1", "::1", "100.64.0.1", "::ffff:127.0.0.1"]
)
def test_private_answers_are_refused_for_a_public_service(
    tls_server: TlsServer, resolver: StaticResolver, executor: PreparingExecutor, answer: str
) -> None:
    resolver.answers[API_HOST] = [answer]
    service = _service(tls_server.base_url(), tls_server.ca_file, allow_private_addresses=False)
    action = _action(service, "/echo-target/x", {}, response_fields=["target"])
    _fails(lambda: executor.http_request(action, _token()), "address_refused")


def test_a_rebinding_answer_on_a_new_pooled_connection_is_checked_again(
    tls_server: TlsServer, resolver: StaticResolver, executor: PreparingExecutor
) -> None:
    # Two requests at once need two connections: the second lookup rebinds to metadata.
    resolver.answers[API_HOST] = lambda n: ["127.0.0.1"] if n == 1 else ["169.254.169.254"]
    service = _service(tls_server.base_url(), tls_server.ca_file)
    slow = _action(service, "/slow", {}, response_fields=["state"])
    done = threading.Event()

    def first() -> None:
        executor.http_request(slow, _token())
        done.set()

    worker = threading.Thread(target=first)
    worker.start()
    time.sleep(0.3)  # the first request holds its connection
    action = _action(service, "/echo-target/x", {}, response_fields=["target"])
    _fails(lambda: executor.http_request(action, _token()), "address_refused")
    worker.join(10)
    assert done.is_set()


# --- a hostile server: redirects and credential echoes --------------------------------------


def _authorization(head: bytes) -> str:
    match = re.search(rb"(?im)^authorization: *(.*?)\r$", head)
    assert match is not None
    return match.group(1).decode()


def _hostile_action(server: HostileServer, **extra: object) -> PlannedHttp:
    service = _service(server.base_url(), server.ca_file, **extra)
    return _action(service, "/x", {}, response_fields=["state"])


@pytest.mark.parametrize(
    "status", ["301 Moved", "302 Found", "303 See Other", "307 Temp", "308 Perm"]
)
def test_a_redirect_that_carries_the_credential_in_its_host_does_not_show_it(
    hostile: HostileServer, executor: PreparingExecutor, status: str
) -> None:
    def redirect(conn: socket.socket, head: bytes) -> None:
        token = _authorization(head).removeprefix("Bearer ")
        location = f"https://{token}.evil.example/"
        conn.sendall(response(status, {"Location": location, "Content-Length": "0"}))

    hostile.behaviour = redirect
    error = _fails(
        lambda: executor.http_request(_hostile_action(hostile), _token()), "redirect_blocked"
    )
    assert CANARY.lower() not in _everything_said(error).lower()
    assert len(hostile.requests) == 1  # never followed


def test_a_redirect_to_a_plain_host_is_still_named(
    hostile: HostileServer, executor: PreparingExecutor
) -> None:
    hostile.behaviour = lambda conn, head: conn.sendall(
        response("302 Found", {"Location": "https://evil.example/x", "Content-Length": "0"})
    )
    error = _fails(
        lambda: executor.http_request(_hostile_action(hostile), _token()), "redirect_blocked"
    )
    assert "host evil.example" in error.message


def _echo_in(encode: Callable[[str, str], object]) -> Callable[[socket.socket, bytes], None]:
    def behaviour(conn: socket.socket, head: bytes) -> None:
        header = _authorization(head)
        value = encode(header, header.removeprefix("Bearer "))
        if isinstance(value, str) and value == header.removeprefix("Bearer "):
            body = ('{"state": "' + "".join(f"\\u{ord(c):04x}" for c in value) + '"}').encode()
        else:
            body = json.dumps({"state": value}).encode()
        conn.sendall(json_response(body))

    return behaviour


ECHOES: dict[str, Callable[[str, str], object]] = {
    "raw": lambda header, token: f"you sent {token}",
    "base64 of the header": lambda header, token: base64.b64encode(header.encode()).decode(),
    "base64 of all headers": lambda header, token: base64.b64encode(
        json.dumps({"Accept": "*/*", "Authorization": header}).encode()
    ).decode(),
    "base64url": lambda header, token: base64.urlsafe_b64encode(b"~~" + token.encode()).decode(),
    "base64 unpadded": lambda header, token: (
        base64.b64encode(b"x" + token.encode()).decode().rstrip("=")
    ),
    "hex": lambda header, token: token.encode().hex(),
    "HEX": lambda header, token: token.encode().hex().upper(),
    "percent-encoded": lambda header, token: quote(header, safe=""),
    "in a key": lambda header, token: {token: 1},
    "in a list": lambda header, token: ["a", ["b", header]],
    "lowercased": lambda header, token: token.lower(),
    "json-escaped": lambda header, token: token,  # sent as \u escapes, see _echo_in
    # MIME base64 breaks lines every 76 characters; the padding puts a break inside the token.
    "MIME base64 with line breaks": lambda header, token: base64.encodebytes(
        b"x" * 45 + header.encode()
    ).decode(),
    "MIME base64url with line breaks": lambda header, token: "\r\n".join(
        base64.urlsafe_b64encode(b"\xfb\xff" * 25 + token.encode()).decode()[i : i + 76]
        for i in range(0, 200, 76)
    ),
    "every byte percent-encoded": lambda header, token: "".join(
        f"%{byte:02X}" for byte in token.encode()
    ),
    "percent-encoded twice": lambda header, token: quote(quote(header, safe=""), safe=""),
    "hex in mixed case": lambda header, token: "".join(
        c.upper() if i % 2 else c for i, c in enumerate(token.encode().hex())
    ),
    "a 16-character piece": lambda header, token: f"...{token[2:18]}...",
    "a piece in base64": lambda header, token: base64.b64encode(token[1:17].encode()).decode(),
    "hex with colons": lambda header, token: ":".join(f"{b:02x}" for b in token.encode()),
    "hex as \\x escapes": lambda header, token: "".join(f"\\x{b:02X}" for b in token.encode()),
    "base64 in dotted chunks": lambda header, token: ".".join(
        base64.b64encode(header.encode()).decode()[i : i + 7] for i in range(0, 40, 7)
    ),
    "HTML entities": lambda header, token: "".join(f"&#{ord(c)};" for c in header),
    "form-encoded": lambda header, token: quote_plus(f"auth={header}"),
}


@pytest.mark.parametrize("encoding", list(ECHOES))
def test_a_credential_echoed_in_another_encoding_is_withheld(
    hostile: HostileServer, executor: PreparingExecutor, encoding: str
) -> None:
    hostile.behaviour = _echo_in(ECHOES[encoding])
    error = _fails(
        lambda: executor.http_request(_hostile_action(hostile), _token()), "bad_response"
    )
    assert "echoed the credential" in error.message
    assert CANARY not in _everything_said(error)


@pytest.mark.parametrize("cut", [1, 9, 17])
def test_a_credential_split_across_two_returned_fields_is_withheld(
    hostile: HostileServer, executor: PreparingExecutor, cut: int
) -> None:
    def behaviour(conn: socket.socket, head: bytes) -> None:
        token = _authorization(head).removeprefix("Bearer ")
        body = json.dumps({"state": f"ok {token[:cut]}", "detail": token[cut:]}).encode()
        conn.sendall(json_response(body))

    hostile.behaviour = behaviour
    service = _service(hostile.base_url(), hostile.ca_file)
    planned = _action(service, "/x", {}, response_fields=["state", "detail"])
    error = _fails(lambda: executor.http_request(planned, _token()), "bad_response")
    assert "the whole result was withheld" in error.message
    assert CANARY not in _everything_said(error)


def test_fields_that_only_share_short_runs_with_the_credential_pass(
    hostile: HostileServer, executor: PreparingExecutor
) -> None:
    # Fifteen characters of it, and its prefix `CANARY-` in ordinary text, are not the credential.
    hostile.behaviour = lambda conn, head: conn.sendall(
        json_response(json.dumps({"state": CANARY[:15], "detail": "CANARY-deploy"}).encode())
    )
    service = _service(hostile.base_url(), hostile.ca_file)
    planned = _action(service, "/x", {}, response_fields=["state", "detail"])
    result = executor.http_request(planned, _token())
    assert result.fields == {"state": CANARY[:15], "detail": "CANARY-deploy"}


def test_an_error_body_with_the_credential_passes_only_its_status(
    hostile: HostileServer, executor: PreparingExecutor
) -> None:
    def behaviour(conn: socket.socket, head: bytes) -> None:
        body = json.dumps({"state": _authorization(head)}).encode()
        conn.sendall(response("401 Unauthorized", {"Content-Length": str(len(body))}, body))

    hostile.behaviour = behaviour
    result = executor.http_request(_hostile_action(hostile), _token())
    assert (result.status, result.fields) == (401, {})


@pytest.mark.parametrize("token", [f" {CANARY}", f"{CANARY} ", f"{CANARY}\t"])
def test_a_credential_with_edge_whitespace_is_refused_without_echo(
    hostile: HostileServer, executor: PreparingExecutor, token: str
) -> None:
    hostile.behaviour = lambda conn, head: conn.sendall(json_response(b'{"state": "ok"}'))
    for auth in ("bearer", "header:X-Api-Key"):
        action = _hostile_action(hostile, auth=auth)
        call = functools.partial(executor.http_request, action, _token(token))
        error = _fails(call, "invalid_target")
        assert CANARY not in _everything_said(error)
    assert hostile.requests == []


def test_a_timeout_mid_body_holding_the_credential_does_not_show_it(
    hostile: HostileServer, executor: PreparingExecutor
) -> None:
    def behaviour(conn: socket.socket, head: bytes) -> None:
        half = json.dumps({"state": _authorization(head)}).encode()
        conn.sendall(response("200 OK", {"Content-Length": str(len(half) * 2)}, half))
        hostile.stop.wait(10)

    hostile.behaviour = behaviour
    error = _fails(
        lambda: executor.http_request(_hostile_action(hostile, timeout_s=0.5), _token()), "timeout"
    )
    assert CANARY not in _everything_said(error)


def test_a_credential_echoed_in_a_response_header_never_reaches_debug_logs(
    hostile: HostileServer, executor: PreparingExecutor, caplog: pytest.LogCaptureFixture
) -> None:
    def behaviour(conn: socket.socket, head: bytes) -> None:
        echo = _authorization(head)
        conn.sendall(json_response(b'{"state": "ok"}', **{"X-Echo": echo, "Location": echo}))

    hostile.behaviour = behaviour
    caplog.set_level(logging.DEBUG)
    assert executor.http_request(_hostile_action(hostile), _token()).fields == {"state": "ok"}
    assert caplog.records  # the HTTP libraries did log the exchange
    assert CANARY not in caplog.text


@pytest.mark.parametrize(
    "answer",
    [
        b"HTTP/1.1 200 %s\r\nContent-Length: 2\r\n\r\n{}",  # the reason phrase
        b"HTTP/1.1 200 OK\r\n%s\r\n\r\n",  # a header line the parser refuses and quotes
        b"HTTP/1.1 2%s\r\n\r\n",  # a status line the parser refuses
        b"HTTP/1.1 200 OK\r\nContent-Length: %s\r\n\r\n",
    ],
    ids=["reason", "bad-header-line", "bad-status-line", "bad-length"],
)
def test_a_credential_echoed_into_protocol_text_never_shows(
    hostile: HostileServer,
    executor: PreparingExecutor,
    caplog: pytest.LogCaptureFixture,
    answer: bytes,
) -> None:
    hostile.behaviour = lambda conn, head: conn.sendall(
        answer.replace(b"%s", _authorization(head).encode())
    )
    caplog.set_level(logging.DEBUG)
    try:
        executor.http_request(_hostile_action(hostile), _token())
    except ActionError as error:
        assert CANARY not in _everything_said(error)
    assert caplog.records
    assert CANARY not in caplog.text


def test_huge_response_headers_are_refused(
    hostile: HostileServer, executor: PreparingExecutor
) -> None:
    def behaviour(conn: socket.socket, head: bytes) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\nX-Echo: " + _authorization(head).encode())
        conn.sendall(b"x" * (4 * 1024 * 1024) + b"\r\n\r\n")

    hostile.behaviour = behaviour
    error = _fails(
        lambda: executor.http_request(_hostile_action(hostile), _token()), "bad_response"
    )
    assert CANARY not in _everything_said(error)


@pytest.mark.parametrize("late", [False, True], ids=["same-write", "after-a-pause"])
def test_a_smuggled_second_response_is_never_read_as_the_next_answer(
    hostile: HostileServer, executor: PreparingExecutor, late: bool
) -> None:
    answers = iter([b'{"state": "first"}', b'{"state": "second"}'])

    def behaviour(conn: socket.socket, head: bytes) -> None:
        body = next(answers)
        smuggled = json_response(b'{"state": "smuggled"}')
        if late:
            conn.sendall(json_response(body))
            time.sleep(0.05)
            conn.sendall(smuggled)
        else:
            conn.sendall(json_response(body) + smuggled)
        hostile.stop.wait(0.5)

    hostile.behaviour = behaviour
    action = _hostile_action(hostile)
    assert executor.http_request(action, _token()).fields == {"state": "first"}
    time.sleep(0.1)
    assert executor.http_request(action, _token()).fields == {"state": "second"}


# --- a hostile server: memory -----------------------------------------------------------------


@contextmanager
def _peak_memory() -> Iterator[list[int]]:
    peak: list[int] = []
    tracemalloc.start()
    try:
        yield peak
    finally:
        peak.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()


@functools.cache
def _bomb(size: int) -> bytes:
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)  # gzip framing
    chunk = b"\0" * (1 << 20)
    return b"".join(compressor.compress(chunk) for _ in range(size >> 20)) + compressor.flush()


@pytest.mark.parametrize("layers", [1, 2])
def test_a_compressed_bomb_never_expands_in_memory(
    hostile: HostileServer, executor: PreparingExecutor, layers: int
) -> None:
    body = _bomb(128 << 20)  # 128 MiB of zeros in about 130 KiB
    if layers == 2:
        body = gzip.compress(body, 9)
    encoding = ", ".join(["gzip"] * layers)
    hostile.behaviour = lambda conn, head: conn.sendall(
        response("200 OK", {"Content-Encoding": encoding, "Content-Length": str(len(body))}, body)
    )
    action = _hostile_action(hostile, max_response_bytes=64 * 1024)
    with _peak_memory() as peak:
        _fails(lambda: executor.http_request(action, _token()), "bad_response")
    assert peak[0] < 8 * 1024 * 1024
    assert b"accept-encoding: identity" in hostile.requests[0].lower()


def test_a_compressed_transfer_coding_is_refused(
    hostile: HostileServer, executor: PreparingExecutor
) -> None:
    body = _bomb(16 << 20)
    chunked = b"%x\r\n" % len(body) + body + b"\r\n0\r\n\r\n"
    hostile.behaviour = lambda conn, head: conn.sendall(
        response("200 OK", {"Transfer-Encoding": "gzip, chunked"}, chunked)
    )
    with _peak_memory() as peak:
        _fails(lambda: executor.http_request(_hostile_action(hostile), _token()), "bad_response")
    assert peak[0] < 8 * 1024 * 1024


def test_an_explicit_identity_encoding_is_still_a_plain_answer(
    hostile: HostileServer, executor: PreparingExecutor
) -> None:
    hostile.behaviour = lambda conn, head: conn.sendall(
        json_response(b'{"state": "ok"}', **{"Content-Encoding": "identity"})
    )
    assert executor.http_request(_hostile_action(hostile), _token()).fields == {"state": "ok"}


def test_a_never_ending_chunked_body_stops_at_the_cap(
    hostile: HostileServer, executor: PreparingExecutor
) -> None:
    def behaviour(conn: socket.socket, head: bytes) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        chunk = b"4000\r\n" + b"x" * 0x4000 + b"\r\n"
        while not hostile.stop.is_set():
            conn.sendall(chunk)

    hostile.behaviour = behaviour
    action = _hostile_action(hostile, max_response_bytes=256 * 1024)
    with _peak_memory() as peak:
        _fails(lambda: executor.http_request(action, _token()), "bad_response")
    assert peak[0] < 8 * 1024 * 1024


@pytest.mark.parametrize(
    "body",
    [
        b"[" * 500_000,
        b'{"state": ' + b"[" * 50_000 + b"]" * 50_000 + b"}",
        b'{"state": ' + b"9" * 5000 + b"}",
        b'{"state": ' + b"[" * 400 + b"1" + b"]" * 400 + b"}",  # parses, but too deep to return
        # Each of these the standard parser reads, and none can reach the agent as the one value
        # the service meant: which of two keys, a number no reply can hold, text no reply can
        # encode, a string that never closes (the depth pre-pass reads it once).
        b'{"state": "running", "state": "stopped"}',
        b'{"state": "ok", "other": {"a": 1, "a": 2}}',
        b'{"state": 1e999}',
        b'{"state": -Infinity}',
        b'{"state": NaN}',
        b'{"state": "\\ud800"}',
        b'{"state": ' + b"1" * 65 + b"}",
        b'{"state": "' + b'\\"' * 100_000,
    ],
    ids=[
        "deep-array",
        "deep-field",
        "huge-integer",
        "nested-400",
        "repeated-field",
        "repeated-key-elsewhere",
        "infinite",
        "minus-infinity",
        "nan",
        "lone-surrogate",
        "65-digit",
        "unterminated-escaped-quotes",
    ],
)
def test_pathological_json_is_a_clear_error(
    hostile: HostileServer, executor: PreparingExecutor, body: bytes
) -> None:
    hostile.behaviour = lambda conn, head: conn.sendall(json_response(body))
    _fails(lambda: executor.http_request(_hostile_action(hostile), _token()), "bad_response")


# --- a hostile server: hangs ----------------------------------------------------------------


def _within(seconds: float, call: Callable[[], object], failure: str) -> None:
    """The call fails with ``failure`` long before a server that never stops would let it go:
    the bound is generous for busy cores (the timeout is 1 s, the hostile peer goes on for as
    long as it is read), so it asserts the behaviour, not the speed."""
    started = time.monotonic()
    _fails(call, failure)
    assert time.monotonic() - started < seconds


def test_headers_trickled_one_byte_at_a_time_time_out(
    hostile: HostileServer, executor: PreparingExecutor
) -> None:
    def behaviour(conn: socket.socket, head: bytes) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\n")
        while not hostile.stop.wait(0.05):
            conn.sendall(b"X")

    hostile.behaviour = behaviour
    action = _hostile_action(hostile, timeout_s=1)
    _within(10, lambda: executor.http_request(action, _token()), "timeout")


def test_a_body_trickled_forever_times_out(
    hostile: HostileServer, executor: PreparingExecutor
) -> None:
    def behaviour(conn: socket.socket, head: bytes) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        while not hostile.stop.wait(0.05):
            conn.sendall(b"1\r\n \r\n")

    hostile.behaviour = behaviour
    action = _hostile_action(hostile, timeout_s=1)
    _within(10, lambda: executor.http_request(action, _token()), "timeout")


def test_endless_informational_responses_time_out(
    hostile: HostileServer, executor: PreparingExecutor
) -> None:
    def behaviour(conn: socket.socket, head: bytes) -> None:
        while not hostile.stop.wait(0.01):
            conn.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")

    hostile.behaviour = behaviour
    action = _hostile_action(hostile, timeout_s=1)
    _within(10, lambda: executor.http_request(action, _token()), "timeout")


def test_an_unasked_protocol_switch_is_a_broken_answer(
    hostile: HostileServer, executor: PreparingExecutor
) -> None:
    # The raw bytes after the switch must never be read as a body.
    hostile.behaviour = lambda conn, head: conn.sendall(
        response("101 Switching Protocols", {"Upgrade": "websocket", "Connection": "Upgrade"})
        + b'{"state": "raw bytes after the switch"}'
    )
    _fails(lambda: executor.http_request(_hostile_action(hostile), _token()), "bad_response")


def test_a_stalled_tls_handshake_times_out(
    hostile: HostileServer, executor: PreparingExecutor
) -> None:
    hostile.tls = False

    def stall(conn: socket.socket, head: bytes) -> None:
        hostile.stop.wait(10)

    hostile.behaviour = stall
    action = _hostile_action(hostile, timeout_s=1)
    _within(10, lambda: executor.http_request(action, _token()), "timeout")


class _TrickleRelay:
    """Forward to the real TLS server, but the server's bytes arrive one every few ms."""

    def __init__(self, upstream_port: int) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.listener.getsockname()[1])
        self.upstream_port = upstream_port
        self.stop = threading.Event()
        self.sockets: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        with suppress(OSError):
            while True:
                client, _ = self.listener.accept()
                upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
                self.sockets += [client, upstream]
                threading.Thread(target=self._up, args=(client, upstream), daemon=True).start()
                threading.Thread(target=self._down, args=(upstream, client), daemon=True).start()

    def _up(self, client: socket.socket, upstream: socket.socket) -> None:
        with suppress(OSError):
            while data := client.recv(65536):
                upstream.sendall(data)

    def _down(self, upstream: socket.socket, client: socket.socket) -> None:
        with suppress(OSError):
            while (data := upstream.recv(65536)) and not self.stop.is_set():
                for byte in data:
                    if self.stop.wait(0.01):
                        break
                    client.sendall(bytes([byte]))
        with suppress(OSError):
            client.close()

    def close(self) -> None:
        # The shared TLS server completes handshakes in its accept loop: hang up on it.
        self.stop.set()
        self.listener.close()
        for sock in self.sockets:
            with suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()


def test_a_whole_exchange_trickled_byte_by_byte_times_out(
    tls_server: TlsServer, executor: PreparingExecutor
) -> None:
    relay = _TrickleRelay(tls_server.port)
    try:
        service = _service(f"https://{API_HOST}:{relay.port}", tls_server.ca_file, timeout_s=1)
        action = _action(service, "/huge", {}, response_fields=["blob"])
        _within(10, lambda: executor.http_request(action, _token()), "timeout")
    finally:
        relay.close()
