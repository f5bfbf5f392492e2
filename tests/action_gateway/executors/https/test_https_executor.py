"""The HTTPS executor against a real TLS server (trustme CA) on 127.0.0.1."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Iterator, Sequence

import pytest

from harness.real_tls import API_HOST, OTHER_HOST, TlsServer
from safeport.action_gateway.executors.gateway_executor import GatewayExecutor
from safeport.action_gateway.executors.interface import ActionError
from safeport.shared.schemas.config import HttpOperation, HttpService
from safeport.vault.secrets import BasicSecret, SecretBytes, TokenSecret
from tests.action_gateway.executors.planned import PlannedHttp, PreparingExecutor

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.action_gateway.executors.https"

pytestmark = pytest.mark.integration

CANARY = "CANARY-token-7f3a9c"
NAME = {"pattern": "^[a-z0-9-]{1,48}$"}


def _token() -> TokenSecret:
    return TokenSecret(SecretBytes(CANARY.encode()))


class StaticResolver:
    """The resolver hook: names to loopback (or whatever a test says), counting lookups."""

    def __init__(self, answers: dict[str, Sequence[str] | Callable[[int], Sequence[str]]]) -> None:
        self.answers = answers
        self.calls: list[str] = []
        self._lock = threading.Lock()

    def __call__(self, host: str, port: int) -> Sequence[str]:
        with self._lock:
            self.calls.append(host)
            count = self.calls.count(host)
        answer = self.answers[host]
        return answer(count) if callable(answer) else answer


LOOPBACK = {API_HOST: ["127.0.0.1"], OTHER_HOST: ["127.0.0.1"]}


@pytest.fixture
def resolver() -> StaticResolver:
    return StaticResolver(dict(LOOPBACK))


@pytest.fixture
def executor(resolver: StaticResolver) -> Iterator[PreparingExecutor]:
    executor = PreparingExecutor(GatewayExecutor(resolver=resolver))
    yield executor
    executor.close_all()


def _service(tls: TlsServer, host: str = API_HOST, **extra: object) -> HttpService:
    spec: dict[str, object] = {
        "base_url": tls.base_url(host),
        "credential": "deploy-token",
        "ca_file": str(tls.ca_file),
        "allow_private_addresses": True,
        "timeout_s": 5,
    }
    spec.update(extra)
    return HttpService.model_validate(spec)


def _action(
    service: HttpService, path: str, args: dict[str, str | int] | None = None, **spec: object
) -> PlannedHttp:
    operation = HttpOperation.model_validate(
        {"method": "GET", "path": path, "params": dict.fromkeys(args or {}, NAME), **spec}
    )
    return PlannedHttp("deploy-api", service, "op", operation, args or {})


STATUS = "/v1/{environment}/services/{service}/status"
ARGS: dict[str, str | int] = {"environment": "staging", "service": "worker"}


def test_a_declared_operation_returns_status_and_declared_fields_only(
    tls_server: TlsServer, executor: PreparingExecutor
) -> None:
    action = _action(
        _service(tls_server),
        STATUS,
        ARGS,
        response_fields=["environment", "service", "state", "deployment.replicas.1.id"],
    )
    result = executor.http_request(action, _token())
    assert result.status == 200
    assert result.fields == {
        "environment": "staging",
        "service": "worker",
        "state": "running",
        "deployment.replicas.1.id": "b",
    }
    dumped = result.model_dump_json()
    assert "never returned" not in dumped  # undeclared body field and response header
    assert CANARY not in dumped


def test_the_credential_header_is_set_by_the_executor_and_host_is_the_name(
    tls_server: TlsServer, executor: PreparingExecutor
) -> None:
    action = _action(
        _service(tls_server), "/echo-target/{service}", {"service": "w"}, response_fields=["host"]
    )
    result = executor.http_request(action, _token())
    assert result.fields == {"host": f"{API_HOST}:{tls_server.port}"}
    last = tls_server.recorded.requests[-1]
    assert last["headers"]["Authorization"] == f"Bearer {CANARY}"


def test_path_values_arrive_as_single_encoded_segments(
    tls_server: TlsServer, executor: PreparingExecutor
) -> None:
    operation = {"response_fields": ["target"], "params": {"v": {"pattern": "^.{1,64}$"}}}
    service = _service(tls_server)
    for value, sent in (
        ("a/b/c", "a%2Fb%2Fc"),
        ("x?admin=1#f", "x%3Fadmin%3D1%23f"),
        ("%2fadmin%2f", "%252fadmin%252f"),
    ):
        action = PlannedHttp(
            "deploy-api",
            service,
            "op",
            HttpOperation.model_validate(
                {"method": "GET", "path": "/echo-target/{v}", **operation}
            ),
            {"v": value},
        )
        result = executor.http_request(action, _token())
        assert result.fields["target"] == f"/echo-target/{sent}"


def test_a_dot_segment_value_is_refused_before_any_request(
    tls_server: TlsServer, executor: PreparingExecutor
) -> None:
    before = len(tls_server.recorded.requests)
    # `..` itself, and forms a server that decodes again would collapse.
    for value in ("..", "a/../../admin", "%2e%2e%2fadmin"):
        action = PlannedHttp(
            "deploy-api",
            _service(tls_server),
            "op",
            HttpOperation.model_validate(
                {
                    "method": "GET",
                    "path": "/echo-target/{v}",
                    "params": {"v": {"pattern": "^.{1,19}$"}},
                }
            ),
            {"v": value},
        )
        with pytest.raises(ActionError, match="dot segment"):
            executor.http_request(action, _token())
    assert len(tls_server.recorded.requests) == before


def test_a_json_body_is_sent_from_the_template(
    tls_server: TlsServer, executor: PreparingExecutor
) -> None:
    operation = HttpOperation.model_validate(
        {
            "method": "POST",
            "path": "/deploy",
            "json_body": {"service": "{service}", "replicas": "{n}"},
            "response_fields": ["received", "state"],
            "params": {"service": NAME, "n": {"type": "int", "min": 1, "max": 5}},
        }
    )
    action = PlannedHttp(
        "deploy-api", _service(tls_server), "deploy", operation, {"service": "w", "n": 2}
    )
    result = executor.http_request(action, _token())
    assert result.fields == {"received": {"service": "w", "replicas": 2}, "state": "queued"}


def test_basic_and_custom_header_credentials(
    tls_server: TlsServer, executor: PreparingExecutor
) -> None:
    basic = _action(
        _service(tls_server, auth="basic"), "/v1/x/services/y/status", response_fields=["state"]
    )
    executor.http_request(basic, BasicSecret("deployer", SecretBytes(b"CANARY-pw")))
    assert tls_server.recorded.requests[-1]["headers"]["Authorization"].startswith("Basic ")
    custom = _action(
        _service(tls_server, auth="header:X-Api-Key"),
        "/v1/x/services/y/status",
        response_fields=["state"],
    )
    executor.http_request(custom, _token())
    headers = tls_server.recorded.requests[-1]["headers"]
    assert headers["X-Api-Key"] == CANARY and "Authorization" not in headers


@pytest.mark.parametrize(
    ("auth", "field"),
    [("bearer", "authorization"), ("bearer", "headers"), ("header:X-Api-Key", "x_api_key")],
)
def test_a_response_echoing_the_credential_is_withheld(
    tls_server: TlsServer, executor: PreparingExecutor, auth: str, field: str
) -> None:
    action = _action(
        _service(tls_server, auth=auth), "/echo-headers", response_fields=["note", field]
    )
    with pytest.raises(ActionError, match="echoed the credential") as caught:
        executor.http_request(action, _token())
    assert caught.value.failure == "bad_response"
    assert CANARY not in caught.value.diagnostic() + repr(caught.value)


def test_a_basic_credential_echoed_in_any_form_is_withheld(
    tls_server: TlsServer, executor: PreparingExecutor
) -> None:
    action = _action(
        _service(tls_server, auth="basic"), "/echo-headers", response_fields=["authorization"]
    )
    with pytest.raises(ActionError, match="echoed the credential"):
        executor.http_request(action, BasicSecret("deployer", SecretBytes(b"CANARY-pw")))


def test_a_redirect_to_another_host_is_blocked_and_reports_only_status_and_host(
    tls_server: TlsServer, executor: PreparingExecutor
) -> None:
    action = _action(_service(tls_server), "/redirect-other", response_fields=["state"])
    before = tls_server.recorded.paths()
    with pytest.raises(ActionError) as caught:
        executor.http_request(action, _token())
    assert caught.value.failure == "redirect_blocked"
    assert f"302 redirecting to host {OTHER_HOST};" in caught.value.message
    assert "token=abc" not in caught.value.message and "/v1/" not in caught.value.message
    assert tls_server.recorded.paths() == [*before, "/redirect-other"]


def test_a_redirect_to_the_metadata_address_is_blocked_and_never_followed(
    tls_server: TlsServer, executor: PreparingExecutor, resolver: StaticResolver
) -> None:
    action = _action(_service(tls_server), "/redirect-metadata", response_fields=["state"])
    with pytest.raises(ActionError, match=r"redirecting to address 169\.254\.169\.254") as caught:
        executor.http_request(action, _token())
    assert caught.value.failure == "redirect_blocked"
    assert "security-credentials" not in caught.value.message
    assert set(resolver.calls) <= {API_HOST}


def test_loopback_is_refused_unless_the_service_allows_private_addresses(
    tls_server: TlsServer, executor: PreparingExecutor
) -> None:
    connections = tls_server.recorded.connections
    action = _action(
        _service(tls_server, allow_private_addresses=False), STATUS, ARGS, response_fields=["state"]
    )
    with pytest.raises(ActionError, match="loopback address") as caught:
        executor.http_request(action, _token())
    assert caught.value.failure == "address_refused" and caught.value.code == "denied"
    assert tls_server.recorded.connections == connections  # refused before connecting


def test_a_name_resolving_to_a_private_address_is_refused_before_connecting(
    tls_server: TlsServer, resolver: StaticResolver, executor: PreparingExecutor
) -> None:
    resolver.answers[API_HOST] = ["10.20.30.40"]
    action = _action(
        _service(tls_server, allow_private_addresses=False), STATUS, ARGS, response_fields=["state"]
    )
    with pytest.raises(ActionError, match="private address") as caught:
        executor.http_request(action, _token())
    assert caught.value.failure == "address_refused"


@pytest.mark.parametrize(
    "answer", [["169.254.169.254"], ["127.0.0.1", "169.254.169.254"], ["::ffff:169.254.169.254"]]
)
def test_metadata_and_link_local_answers_are_refused_even_for_private_services(
    tls_server: TlsServer, resolver: StaticResolver, executor: PreparingExecutor, answer: list[str]
) -> None:
    resolver.answers[API_HOST] = answer
    action = _action(_service(tls_server), STATUS, ARGS, response_fields=["state"])
    with pytest.raises(ActionError) as caught:
        executor.http_request(action, _token())
    assert caught.value.failure == "address_refused"


def test_dns_rebinding_after_the_check_cannot_move_the_connection(
    tls_server: TlsServer, resolver: StaticResolver, executor: PreparingExecutor
) -> None:
    # First answer passes the check; every later answer points at the metadata service.
    resolver.answers[API_HOST] = lambda n: ["127.0.0.1"] if n == 1 else ["169.254.169.254"]
    action = _action(_service(tls_server), STATUS, ARGS, response_fields=["state"])
    for _ in range(3):
        assert executor.http_request(action, _token()).fields == {"state": "running"}
    # One lookup for the one connection: TLS, SNI and Host used the name, the socket the
    # checked address, and nothing looked the name up again between check and connect.
    assert resolver.calls == [API_HOST]
    executor.close_all()
    with pytest.raises(ActionError) as caught:
        executor.http_request(action, _token())
    assert caught.value.failure == "address_refused"


def test_the_second_name_of_the_server_is_a_separate_origin(
    tls_server: TlsServer, resolver: StaticResolver, executor: PreparingExecutor
) -> None:
    action = _action(
        _service(tls_server, host=OTHER_HOST), "/echo-target/x", response_fields=["host"]
    )
    assert executor.http_request(action, _token()).fields == {
        "host": f"{OTHER_HOST}:{tls_server.port}"
    }
    assert OTHER_HOST in resolver.calls


def test_tls_verification_is_always_on(tls_server: TlsServer, executor: PreparingExecutor) -> None:
    action = _action(_service(tls_server, ca_file=None), STATUS, ARGS, response_fields=["state"])
    with pytest.raises(ActionError, match="TLS handshake") as caught:
        executor.http_request(action, _token())
    assert caught.value.failure == "tls_failed"


def test_a_certificate_for_another_name_is_refused(
    tls_server: TlsServer, resolver: StaticResolver, executor: PreparingExecutor
) -> None:
    resolver.answers["impostor.safeport.test"] = ["127.0.0.1"]
    action = _action(
        _service(tls_server, host="impostor.safeport.test"), STATUS, ARGS, response_fields=["state"]
    )
    with pytest.raises(ActionError) as caught:
        executor.http_request(action, _token())
    assert caught.value.failure == "tls_failed"


def test_environment_proxies_are_ignored(
    tls_server: TlsServer, executor: PreparingExecutor, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY"):
        monkeypatch.setenv(name, "http://127.0.0.1:9")
    action = _action(_service(tls_server), STATUS, ARGS, response_fields=["state"])
    assert executor.http_request(action, _token()).status == 200


def test_a_slow_service_times_out(tls_server: TlsServer, executor: PreparingExecutor) -> None:
    action = _action(_service(tls_server, timeout_s=0.5), "/slow", response_fields=["state"])
    with pytest.raises(ActionError, match="did not answer in time") as caught:
        executor.http_request(action, _token())
    assert caught.value.failure == "timeout"


def test_a_body_over_the_cap_is_refused(tls_server: TlsServer, executor: PreparingExecutor) -> None:
    action = _action(
        _service(tls_server, max_response_bytes=100_000), "/huge", response_fields=["blob"]
    )
    with pytest.raises(ActionError, match="more than 100000 bytes") as caught:
        executor.http_request(action, _token())
    assert caught.value.failure == "bad_response"


def test_non_json_and_missing_fields_are_clear_errors(
    tls_server: TlsServer, executor: PreparingExecutor
) -> None:
    with pytest.raises(ActionError, match="did not answer with JSON"):
        executor.http_request(
            _action(_service(tls_server), "/not-json", response_fields=["x"]), _token()
        )
    with pytest.raises(ActionError, match="without the field `nope`"):
        executor.http_request(
            _action(_service(tls_server), STATUS, ARGS, response_fields=["nope"]), _token()
        )


def test_an_error_status_is_passed_on_without_its_body(
    tls_server: TlsServer, executor: PreparingExecutor
) -> None:
    result = executor.http_request(
        _action(_service(tls_server), "/error", response_fields=["state"]), _token()
    )
    assert (result.status, result.fields) == (500, {})


def test_an_unresolvable_name_is_unreachable(
    tls_server: TlsServer, resolver: StaticResolver, executor: PreparingExecutor
) -> None:
    resolver.answers[API_HOST] = []
    with pytest.raises(ActionError, match="does not resolve") as caught:
        executor.http_request(
            _action(_service(tls_server), STATUS, ARGS, response_fields=["state"]), _token()
        )
    assert caught.value.failure == "unreachable"


def test_a_credential_that_cannot_be_a_header_is_refused_without_echo(
    tls_server: TlsServer, executor: PreparingExecutor
) -> None:
    bad = TokenSecret(SecretBytes(b"CANARY\r\nX-Injected: 1"))
    with pytest.raises(ActionError, match="not a valid header value") as caught:
        executor.http_request(
            _action(_service(tls_server), STATUS, ARGS, response_fields=["state"]), bad
        )
    assert "CANARY" not in caught.value.diagnostic()


def test_results_serialise_without_the_credential(
    tls_server: TlsServer, executor: PreparingExecutor
) -> None:
    action = _action(_service(tls_server), STATUS, ARGS, response_fields=["state"])
    result = executor.http_request(action, _token())
    assert CANARY not in json.dumps(result.model_dump()) + repr(result) + repr(action)


def test_debug_logs_of_httpx_and_httpcore_never_hold_the_credential(
    tls_server: TlsServer, executor: PreparingExecutor, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    action = _action(_service(tls_server), STATUS, ARGS, response_fields=["state"])
    executor.http_request(action, _token())
    with pytest.raises(ActionError):
        executor.http_request(
            _action(_service(tls_server), "/echo-headers", response_fields=["headers"]), _token()
        )
    assert caplog.records  # the libraries did log
    assert CANARY not in caplog.text
