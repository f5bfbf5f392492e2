"""Client ID metadata documents fetched from a real HTTPS server: the fences (https only, public
addresses only, size and time bounds, no redirects, the document naming itself) each beside the
fetch that works."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from harness.real_tls import OTHER_HOST, TlsServer
from safeport.action_gateway.remote_clients.metadata_documents import (
    DocumentRefused,
    FetchRules,
    MetadataDocuments,
)

REDIRECT = "https://client.example/callback"


def _loopback(host: str, port: int) -> list[str]:
    return ["127.0.0.1"]


def _resolving_to(*addresses: str) -> Callable[[str, int], list[str]]:
    return lambda host, port: list(addresses)


def _serve(server: TlsServer, path: str, **document: object) -> str:
    url = f"{server.base_url()}{path}"
    body = {"client_id": url, "client_name": "Doc Client", "redirect_uris": [REDIRECT]}
    with server.recorded.lock:
        server.recorded.answers[path] = body | document
    return url


def _test_only(server: TlsServer, **rules: object) -> MetadataDocuments:
    """The explicit test allowance: 127.0.0.1 and the test CA (never a default)."""
    settings = {
        "resolver": _loopback,
        "unsafe_allow_private_addresses": True,
        "ca_file": str(server.ca_file),
        "timeout_s": 1.0,
    }
    return MetadataDocuments(FetchRules(**(settings | rules)))  # type: ignore[arg-type]


def _refusal(documents: MetadataDocuments, url: str) -> str:
    with pytest.raises(DocumentRefused) as caught:
        documents.get(url)
    return caught.value.message


def test_a_document_that_names_itself_is_fetched_and_cached(documents_server: TlsServer) -> None:
    url = _serve(documents_server, "/clients/good.json")
    documents = _test_only(documents_server)
    document = documents.get(url)
    assert document.name == "Doc Client" and document.redirect_uris == (REDIRECT,)
    fetched = documents_server.recorded.paths().count("/clients/good.json")
    documents.get(url)
    assert documents_server.recorded.paths().count("/clients/good.json") == fetched


def test_the_default_rules_refuse_a_document_on_loopback_or_a_private_address(
    documents_server: TlsServer,
) -> None:
    url = _serve(documents_server, "/clients/loopback.json")
    before = len(documents_server.recorded.paths())
    default = MetadataDocuments(
        FetchRules(resolver=_loopback, ca_file=str(documents_server.ca_file))
    )
    assert "loopback" in _refusal(default, url)
    for address in ("10.1.2.3", "192.168.0.7", "169.254.169.254", "::1", "fd00::1", "224.0.0.1"):
        private = MetadataDocuments(FetchRules(resolver=_resolving_to(address)))
        assert "address" in _refusal(private, url), address
    # A name that resolves to one good and one bad address is refused whole.
    mixed = MetadataDocuments(FetchRules(resolver=_resolving_to("93.184.216.34", "127.0.0.1")))
    assert "loopback" in _refusal(mixed, url)
    assert len(documents_server.recorded.paths()) == before  # nothing reached the server


def test_only_an_https_url_with_a_path_can_be_a_client_id(documents_server: TlsServer) -> None:
    documents = _test_only(documents_server)
    port = documents_server.port
    for url in (
        f"http://api.safeport.test:{port}/clients/good.json",
        f"https://api.safeport.test:{port}/",
        f"https://user:pw@api.safeport.test:{port}/clients/good.json",
        f"https://api.safeport.test:{port}/a/../clients/good.json",
    ):
        _refusal(documents, url)


def test_a_client_id_a_browser_reads_another_way_is_refused_before_any_fetch(
    documents_server: TlsServer,
) -> None:
    documents = _test_only(documents_server)
    port = documents_server.port
    before = len(documents_server.recorded.paths())
    for url in (
        f"https://[::1].evil:{port}/clients/good.json",
        f"https://[::1]x:{port}/clients/good.json",
        f"https://0x7f.1:{port}/clients/good.json",
        f"https://2130706433:{port}/clients/good.json",
        f"https://127.1:{port}/clients/good.json",
        f"https://[::ffff:127.0.0.1]:{port}/clients/good.json",
        f"https://api.safeport.test.:{port}/clients/good.json",
        f"https://API.safeport.test:{port}/clients/good.json",
        f"https://api.safeport.test:0{port}/clients/good.json",
        f"https://api.safeport.test:{port}\\@evil.example/clients/good.json",
        f"https://%61pi.safeport.test:{port}/clients/good.json",
        f"https://api.safeport.test:{port}/clients/good.json#x",
        f"https://api.safeport.test:{port}/clients/good\njson",
    ):
        assert "client id" in _refusal(documents, url), url
    assert len(documents_server.recorded.paths()) == before


def test_a_document_whose_redirect_uris_a_browser_reads_another_way_is_refused(
    documents_server: TlsServer,
) -> None:
    documents = _test_only(documents_server)
    for index, uri in enumerate(
        ("http://[::1].evil/cb", "http://127.1/cb", "https://Evil.example/cb")
    ):
        url = _serve(documents_server, f"/clients/odd{index}.json", redirect_uris=[uri])
        assert "redirect" in _refusal(documents, url), uri
    good = _serve(
        documents_server, "/clients/loopback-ok.json", redirect_uris=["http://[::1]:9/cb"]
    )
    assert documents.get(good).redirect_uris == ("http://[::1]:9/cb",)


def test_a_huge_or_slow_document_is_cut_off(documents_server: TlsServer) -> None:
    documents = _test_only(documents_server)
    assert "too large" in _refusal(documents, f"{documents_server.base_url()}/huge")
    started = time.monotonic()
    assert "too long" in _refusal(documents, f"{documents_server.base_url()}/slow")
    assert time.monotonic() - started < 2.5
    padded = _serve(documents_server, "/clients/padded.json", padding="x" * 70_000)
    assert "too large" in _refusal(documents, padded)


def test_a_redirect_is_not_followed(documents_server: TlsServer) -> None:
    documents = _test_only(documents_server)
    assert "200" in _refusal(documents, f"{documents_server.base_url()}/redirect-other")
    assert all(OTHER_HOST not in str(r["headers"]) for r in documents_server.recorded.requests)


def test_a_document_must_name_its_own_url_and_safe_redirects(documents_server: TlsServer) -> None:
    documents = _test_only(documents_server)
    other = _serve(documents_server, "/clients/other.json", client_id="https://evil.example/c")
    assert "client_id" in _refusal(documents, other)
    leaky = _serve(documents_server, "/clients/leaky.json", redirect_uris=["http://evil.example/"])
    assert "redirect" in _refusal(documents, leaky)
    secret = _serve(
        documents_server, "/clients/secret.json", token_endpoint_auth_method="client_secret_basic"
    )
    assert "public" in _refusal(documents, secret)


def test_an_address_written_into_the_url_is_judged_like_a_resolved_one() -> None:
    documents = MetadataDocuments(FetchRules())  # the real resolver, the default rules
    for url in (
        "https://127.0.0.1/client.json",
        "https://[::1]/client.json",
        "https://[::ffff:7f00:1]/client.json",
        "https://169.254.169.254/latest/meta-data",
        "https://10.0.0.1/client.json",
        "https://localhost/client.json",
    ):
        assert "address" in _refusal(documents, url), url


def test_a_refusal_is_remembered_and_fetches_have_a_budget(documents_server: TlsServer) -> None:
    documents = _test_only(documents_server, fetches_per_minute=3)
    wrong = _serve(documents_server, "/clients/wrong.json", client_id="https://evil.example/c")
    _refusal(documents, wrong)
    asked = documents_server.recorded.paths().count("/clients/wrong.json")
    _refusal(documents, wrong)  # remembered: the server is not asked again
    assert documents_server.recorded.paths().count("/clients/wrong.json") == asked
    good = _serve(documents_server, "/clients/budget-1.json")
    assert documents.get(good).name == "Doc Client"
    _refusal(documents, f"{documents_server.base_url()}/clients/budget-2.json")  # a 404
    # A flood of new URLs is cut off without a request; a cached document still answers.
    assert "wait a minute" in _refusal(documents, _serve(documents_server, "/clients/b3.json"))
    assert "/clients/b3.json" not in documents_server.recorded.paths()
    assert documents.get(good).name == "Doc Client"


def _hostile_documents(url: str) -> list[bytes]:
    """Each would be a good document for ``url`` but for one hostile shape."""
    fields = f'"redirect_uris":["{REDIRECT}"],"client_name":"Doc Client"'
    return [
        b"[" * 60_000,
        b'{"a":' * 10_000 + b"1" + b"}" * 10_000,
        # Two client_ids: a parser that keeps the first one would see another client.
        f'{{"client_id":"https://evil.example/c","client_id":"{url}",{fields}}}'.encode(),
        f'{{"client_id":"{url}",{fields},"client_id":"{url}"}}'.encode(),
        f'{{"client_id":"{url}",{fields},"x":NaN}}'.encode(),
        f'{{"client_id":"{url}",{fields},"x":1e999999}}'.encode(),
        f'{{"client_id":"{url}",{fields},"x":{"9" * 5000}}}'.encode(),
        f'{{"client_id":"{url}","redirect_uris":["{REDIRECT}"],"client_name":"\\ud800"}}'.encode(),
        f'{{"client_id":"{url}",{fields},"x":"'.encode() + b'\xff"}',
        # A string that never closes, full of escaped quotes, near the 64 KiB bound: read once.
        f'{{"client_id":"{url}",{fields},"x":"'.encode() + b'\\"' * 32_000,
    ]


def test_a_hostile_document_is_refused_and_the_next_good_one_fetched(
    documents_server: TlsServer,
) -> None:
    documents = _test_only(documents_server)
    good = _serve(documents_server, "/clients/after.json")
    for n in range(len(_hostile_documents(""))):
        path = f"/clients/hostile-{n}.json"
        url = f"{documents_server.base_url()}{path}"
        with documents_server.recorded.lock:
            documents_server.recorded.answers[path] = _hostile_documents(url)[n]
        started = time.monotonic()
        assert _refusal(documents, url) == "the metadata document is not a JSON object", n
        assert time.monotonic() - started < 5, n  # refused at once, not after a timeout
    assert documents.get(good).name == "Doc Client"
