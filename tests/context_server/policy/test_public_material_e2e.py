"""Public key material through the real server: certificates, requests, public keys,
authorized_keys and known_hosts are served by every read tool and found by search; a `.pem`
holding a private key beside its certificate, and a private key saved as `x.pub`, are refused
whole by every path (reads, excerpts, hashes, the Deep Research pair, searches by scan and by
index), and no piece of either key reaches a response, the server's stderr or its files."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import anyio
import pytest

from safeport.context_server import ServeOptions, build_server
from tests.context_server.hostile import connected, result_text, server_params
from tests.context_server.policy.material import material

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.context_server.policy"

pytestmark = pytest.mark.anyio

# Built from pieces so no scanner flags this file itself.
TOKEN = "ghp" + "_" + "Wd3Kp8Zr2Lq7Xv5Nm1Bt6Hy4Cs9Fj0Ga3Ue"


def _pieces(pem: str, size: int = 12) -> list[str]:
    """Pieces of every body line of a key, but those its public half holds too (a key and its
    certificate share the algorithm's encoding and the modulus): none may be served."""
    m = material()
    public = m.certificate + m.request + m.public_key + m.rsa_public_key + m.ssh_public
    lines = [line for line in pem.splitlines() if line and not line.startswith("-----")]
    found = [line[i : i + size] for line in lines for i in range(0, len(line) - size + 1, 4)]
    return [piece for piece in found if piece not in public]


def _workspace(base: Path) -> tuple[Path, Path, list[str]]:
    m = material()
    root = base / "ws"
    for folder in ("deploy", "tls", "keys"):
        (root / folder).mkdir(parents=True)
    (root / "deploy" / "authorized_keys").write_text(
        f'environment="GITHUB_TOKEN={TOKEN}" {m.ssh_public} ci@runner\n{m.ssh_public} ops\n'
    )
    (root / "deploy" / "known_hosts").write_text(f"git.example.test {m.ssh_public}\n")
    (root / "keys" / "id_ed25519.pub").write_text(f"{m.ssh_public} ops@laptop\n")
    (root / "tls" / "ca.crt").write_text(m.certificate)
    (root / "tls" / "fullchain.pem").write_text(m.certificate + m.certificate)
    (root / "tls" / "svc.csr").write_text(m.request)
    (root / "tls" / "svc.pub.pem").write_text(m.public_key)
    # Private: a key beside its certificate, a key named as a public one, a key by its name.
    (root / "tls" / "combined.pem").write_text(m.certificate + m.pkcs8)
    (root / "keys" / "stolen.pub").write_text(m.openssh_private)
    (root / "keys" / "id_ed25519").write_text(m.openssh_private)
    (root / "keys" / "ssh_host_ed25519_key.pub").write_text(f"{m.ssh_public} root@host\n")
    (root / "keys" / "ssh_host_ed25519_key").write_text(m.openssh_private)
    # A link with a harmless name is judged by what it leads to.
    (root / "notes.txt").symlink_to("tls/combined.pem")
    home = base / "home"
    home.mkdir(mode=0o700)
    secrets = [*_pieces(m.pkcs8), *_pieces(m.openssh_private), TOKEN[4:16]]
    return root, home, secrets


PUBLIC = [
    "deploy/authorized_keys",
    "deploy/known_hosts",
    "keys/id_ed25519.pub",
    "keys/ssh_host_ed25519_key.pub",
    "tls/ca.crt",
    "tls/fullchain.pem",
    "tls/svc.csr",
    "tls/svc.pub.pem",
]
PRIVATE = [
    "tls/combined.pem",
    "keys/stolen.pub",
    "keys/id_ed25519",
    "keys/ssh_host_ed25519_key",
    "notes.txt",
]


def _leaks(text: str, secrets: list[str]) -> list[str]:
    return [s for s in secrets if s in text]


async def test_public_material_is_served_and_private_keys_beside_it_never_are(
    tmp_path: Path,
) -> None:
    root, home, secrets = _workspace(tmp_path)
    m = material()
    cert_line = m.certificate.splitlines()[5]
    wire: list[str] = []
    with (tmp_path / "stderr").open("w+") as errlog, anyio.fail_after(120):
        async with connected(server_params([root], home), errlog) as client:

            async def call(tool: str, args: dict[str, Any]) -> Any:
                result = await client.call_tool(tool, args)
                wire.append(result_text(result))
                return result

            for path in PUBLIC:
                read = await call("read_file", {"path": path})
                assert not read.is_error, (path, result_text(read))
                # Byte for byte, but the token (whichever kind the detector names it).
                served = re.sub(r"\[REDACTED:[a-z0-9-]+\]", TOKEN, read.structured_content["text"])
                assert served == (root / path).read_text(), path
                excerpt = await call("read_file_excerpt", {"path": path, "start_line": 2})
                assert not excerpt.is_error, path
                info = await call("get_file_info", {"path": path, "sha256": True})
                # A hash would confirm a guess of the token: refused for that file alone.
                hashed = path != "deploy/authorized_keys"
                assert info.is_error != hashed, (path, result_text(info))
            # The detector still runs over what a public file serves.
            keys = await call("read_file", {"path": "deploy/authorized_keys"})
            assert TOKEN[4:] not in result_text(keys) and "[REDACTED:" in result_text(keys)
            for path in PRIVATE:
                for tool, args in (
                    ("read_file", {"path": path}),
                    ("read_file_excerpt", {"path": path, "start_line": 20}),
                    ("get_file_info", {"path": path, "sha256": True}),
                    ("fetch", {"id": path}),
                ):
                    result = await call(tool, args)
                    assert result.is_error, (tool, path)
                    assert "private under the read policy" in result_text(result), (tool, path)
                many = await call("read_multiple_files", {"paths": [path, "tls/ca.crt"]})
                items = many.structured_content["files"]
                assert [i["ok"] for i in items] == [False, True], path
            found = await call("search_project", {"query": cert_line[8:40]})
            hits = {h["path"] for h in found.structured_content["hits"]}
            assert hits == {"tls/ca.crt", "tls/fullchain.pem"}, found.structured_content
            # The answer (and the journal) echoes the query: its hits alone are looked at.
            asked = [_pieces(m.pkcs8)[40], _pieces(m.openssh_private)[20], "PRIVATE KEY"]
            for query in asked:
                missed = await client.call_tool("search_project", {"query": query})
                assert missed.structured_content["hits"] == [], query
            names = await call("search_files", {"pattern": "*.pub", "limit": 50})
            assert set(names.structured_content["matches"]) == {
                "keys/id_ed25519.pub",
                "keys/ssh_host_ed25519_key.pub",
                "keys/stolen.pub",
            }
        errlog.seek(0)
        wire.append(errlog.read())
    assert _leaks("\n".join(wire), secrets) == []
    assert (home / "audit" / "reads.jsonl").is_file()
    _assert_no_file_of_the_server_holds(home, [s for s in secrets if s not in asked])


async def test_search_by_index_and_by_scan_finds_public_material_and_no_private_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, home, secrets = _workspace(tmp_path)
    monkeypatch.setenv("SAFEPORT_HOME", str(home))
    _, service = build_server(ServeOptions(roots=[str(root)], origin="tests"))
    m = material()
    cert_query = m.certificate.splitlines()[3][5:30]
    key_queries = [_pieces(m.pkcs8)[10], _pieces(m.openssh_private)[10], "BEGIN PRIVATE"]
    scanned = service.search_project(cert_query, ".", 50, None)
    assert scanned.method == "scan"
    assert {h.path for h in scanned.hits} == {"tls/ca.crt", "tls/fullchain.pem"}
    for query in key_queries:
        assert service.search_project(query, ".", 50, None).hits == [], query
    service.index.refresh()
    indexed = service.search_project(cert_query, ".", 50, None)
    assert indexed.method == "index"
    assert {h.path for h in indexed.hits} == {"tls/ca.crt", "tls/fullchain.pem"}
    for query in key_queries:
        assert service.search_project(query, ".", 50, None).hits == [], query
        assert service.search(query).results == [], query
    # A certificate file that gains a private key drops out of the index at the next refresh.
    (root / "tls" / "ca.crt").write_text(m.certificate + m.ec_private)
    service.index.refresh()
    again = service.search_project(cert_query, ".", 50, None)
    assert {h.path for h in again.hits} == {"tls/fullchain.pem"}
    service.journal.close()
    service.index.close()
    _assert_no_file_of_the_server_holds(home, [*secrets, *_pieces(m.ec_private)])


def _assert_no_file_of_the_server_holds(home: Path, secrets: list[str]) -> None:
    kept = [p for p in home.rglob("*") if p.is_file()]
    assert kept
    for file in kept:
        data = file.read_bytes()
        assert [s for s in secrets if s.encode() in data] == [], file.name
