"""Each package's ``__all__``, pinned: the names and modules other packages may import (see
test_import_surfaces.py). Anything else is private and may change; a name or module that
disappears from a surface, or cannot be imported from it, fails here.
"""

from __future__ import annotations

import importlib
import inspect
import sys
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol

import pytest

from safeport.shared.audit import BodySealer
from safeport.vault import AuditSealer
from safeport.vault.interface import CheckpointSigner, UnlockedVault, VaultStore
from tests.vault.vault_factory import make_vault

SRC = Path(__file__).resolve().parents[1] / "src"

SURFACES: dict[str, set[str]] = {
    "safeport": {
        "__version__",
    },
    "safeport.action_gateway": {
        "daemon",
        "executors",
        "identity",
        "install",
        "oauth",
        "policy",
    },
    "safeport.action_gateway.approvals": set(),
    "safeport.action_gateway.core": set(),
    "safeport.action_gateway.daemon": {
        "assembly",
        "hardening",
        "run",
    },
    "safeport.action_gateway.evidence": set(),
    "safeport.action_gateway.executors": {
        "ActionError",
        "Executor",
        "HttpAction",
        "SqlAction",
        "SshAction",
        "https",
        "preflight",
        "privileged_role_check",
        "sql",
        "ssh",
    },
    "safeport.action_gateway.executors.https": {
        "tls",
    },
    "safeport.action_gateway.executors.openbao": set(),
    "safeport.action_gateway.executors.sql": set(),
    "safeport.action_gateway.executors.ssh": {
        "host_key_scan",
    },
    "safeport.action_gateway.handlers": set(),
    "safeport.action_gateway.oauth": {
        "errors",
        "presets",
        "protocol",
    },
    "safeport.action_gateway.identity": {
        "injection",
        "model",
        "platform",
    },
    "safeport.action_gateway.install": {
        "code_check",
        "plan",
        "service_files",
        "start_checks",
        "steps",
    },
    "safeport.action_gateway.ladder": set(),
    "safeport.action_gateway.remote_clients": set(),
    "safeport.action_gateway.policy": {
        "approval_factor",
        "authorized_keys",
        "inventory",
        "meaning",
        "review",
        "store",
    },
    "safeport.action_gateway.sockets": set(),
    "safeport.cli": {
        "main",
        "sp",
    },
    "safeport.cli.cards": set(),
    "safeport.cli.credentials": set(),
    "safeport.cli.daemon": set(),
    "safeport.cli.gateway_policy": set(),
    "safeport.cli.health": set(),
    "safeport.authoring": {
        "oauth_scaffold",
        "openapi_import",
        "reference",
        "removal",
        "scaffold",
        "starter",
        "toml_keys",
    },
    "safeport.context_server": {
        "PROFILES",
        "ReadPolicy",
        "Refused",
        "ServeOptions",
        "ToolFailed",
        "allow_secret",
        "build_index",
        "build_server",
        "call_tool",
        "mcp_clients",
        "open_workspace",
        "parse_endpoint",
        "redaction_findings",
        "redaction_off",
        "scan_roots",
        "serve",
        "serve_http",
    },
    "safeport.context_server.index": set(),
    "safeport.context_server.mcp_clients": {
        "checks",
        "config_files",
        "install",
        "verify",
    },
    "safeport.context_server.operations": set(),
    "safeport.context_server.policy": set(),
    "safeport.context_server.tools": set(),
    "safeport.context_server.http": set(),
    "safeport.context_server.transport": set(),
    "safeport.context_server.workspace": set(),
    "safeport.demo": {
        "scenario",
    },
    "safeport.gateway_client": {
        "approver_keys",
        "approver_session",
        "approver_thread",
        "control_socket",
        "ctap_socket",
        "doctor",
        "gateway_exit",
        "gateway_view",
        "listener_check",
        "loopback_callback",
        "policy_check",
        "policy_proposal",
        "remote_clients",
        "saved_checkpoint",
        "security_key",
        "status_overview",
        "timestamp_findings",
        "vault_backend",
        "vault_route",
    },
    "safeport.shared": {
        "audit",
        "environment",
        "exact_urls",
        "exception_summary",
        "findings",
        "folder_sync",
        "gateway_socket",
        "grant_tokens",
        "http_deadline",
        "install_file",
        "jsonc",
        "known_secrets",
        "launch",
        "outside_json",
        "paths",
        "peer_credentials",
        "platform_support",
        "provenance",
        "schemas",
        "secret_scan",
        "setup_state",
        "sql_statement",
        "text_lines",
        "undumpable",
        "visible_text",
        "wire",
    },
    "safeport.shared.audit": {
        "DEFAULT_SEGMENT_BYTES",
        "ZERO_HASH",
        "BodySealer",
        "ChainReport",
        "Durability",
        "JournalBody",
        "JournalHead",
        "JournalResult",
        "JournalWriter",
        "RecordLayoutError",
        "discover_journals",
        "format_record",
        "journal_name",
        "journal_segments",
        "parse_head",
        "read_records",
        "verify_files",
        "verify_folder",
        "verify_journal",
    },
    "safeport.shared.known_secrets": {
        "PIECE",
        "KnownSecrets",
        "first_line",
        "secret_forms",
        "shorten",
    },
    "safeport.shared.secret_scan": {
        "ALLOWABLE_KINDS",
        "Finding",
        "KEY_BYTES",
        "SecretSpan",
        "find_secrets",
        "fingerprint",
        "is_fingerprint",
        "marker",
        "redact",
        "redact_spans",
    },
    "safeport.shared.secret_scan.providers": {"RULES", "TokenRule"},
    "safeport.shared.schemas": {
        "AGENT_REQUEST",
        "CONTROL_REQUEST",
        "PROTOCOL_VERSION",
        "REPLY",
        "AgentRequest",
        "AuditRecord",
        "Cancel",
        "Catalog",
        "CatalogEntry",
        "CatalogRequest",
        "ControlRequest",
        "Credential",
        "ErrorBody",
        "ErrorCode",
        "GatewayPolicy",
        "Hello",
        "HttpCatalogEntry",
        "HttpOperation",
        "HttpResult",
        "HttpService",
        "IntegerParam",
        "ParamSchema",
        "ParamSpec",
        "ProposeHttp",
        "ProposeSql",
        "ProposeSsh",
        "Reply",
        "ReplyError",
        "ReplyOk",
        "ResultRedaction",
        "SealedBody",
        "SqlCatalogEntry",
        "SqlResult",
        "SshCatalogEntry",
        "SshCommand",
        "SshExecResult",
        "SshHost",
        "StringParam",
        "audit",
        "catalog",
        "config",
        "config_oauth",
        "config_params",
        "config_sources",
        "config_sql",
        "control",
        "control_ops",
        "error_reply",
        "grant_wire",
        "key_wire",
        "oauth_wire",
        "ok_reply",
        "operations",
        "parse_gateway_policy",
        "parse_reply",
        "parse_result",
        "policy_digest",
        "readable_id",
        "replies",
        "results",
        "results_vault",
        "wire",
    },
    "safeport.vault": {
        "PRODUCTION_KDF",
        "UNSIGNED_JOURNALS",
        "AuditOpener",
        "AuditSealer",
        "Authority",
        "CannotUnlock",
        "CheckpointInvalid",
        "CheckpointVerdict",
        "EntryError",
        "FileVaultBackend",
        "KdfParams",
        "KeyringBackend",
        "KeyringProblem",
        "NotAVault",
        "NoteCheckpoints",
        "OpenVault",
        "OsKeyring",
        "SignedCheckpoints",
        "UnlockReport",
        "UnsafeVaultFile",
        "VaultBackend",
        "VaultChanged",
        "VaultCheckpointSigner",
        "VaultFile",
        "VaultLocked",
        "VaultMissing",
        "VaultStatus",
        "check_consistent",
        "checkpoint_stamps",
        "compare",
        "compare_head",
        "decode_public_keys",
        "dump_checkpoints",
        "interface",
        "load_checkpoints",
        "read_public_keys",
        "replace_atomically",
        "secrets",
        "signed_note",
        "timestamp_check",
        "trade_off",
        "trusted_public_keys",
        "verify_checkpoint",
        "weakness",
    },
}


def packages() -> list[str]:
    """Every package under src/safeport, as an import name."""
    found = []
    for init in (SRC / "safeport").rglob("__init__.py"):
        found.append(".".join(init.parent.relative_to(SRC).parts))
    return sorted(found)


def declared(module: ModuleType) -> list[str]:
    names = getattr(module, "__all__", None)
    assert isinstance(names, list), f"{module.__name__} declares no __all__ list"
    return [str(name) for name in names]


def test_every_package_is_pinned_here() -> None:
    assert packages() == sorted(SURFACES)


@pytest.mark.parametrize("package", sorted(SURFACES))
def test_each_package_declares_exactly_its_pinned_names(package: str) -> None:
    names = declared(importlib.import_module(package))
    assert len(names) == len(set(names)), "a name is listed twice"
    assert set(names) == SURFACES[package]


@pytest.mark.parametrize("package", sorted(SURFACES))
def test_every_declared_name_can_be_imported_from_its_package(package: str) -> None:
    assert sorted(star_import(package)) == sorted(declared(importlib.import_module(package)))


def star_import(package: str) -> dict[str, object]:
    """What ``from package import *`` binds: each declared name, each listed module imported."""
    namespace: dict[str, object] = {}
    exec(f"from {package} import *", namespace)
    namespace.pop("__builtins__", None)
    return namespace


def test_a_surface_naming_something_its_package_lacks_is_caught(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Guard the guard: a package whose __all__ names a removed class cannot be star-imported.
    module = ModuleType("safeport_fake")
    module.__dict__["__all__"] = ["Gone"]
    monkeypatch.setitem(sys.modules, "safeport_fake", module)
    with pytest.raises(AttributeError, match="Gone"):
        star_import("safeport_fake")


# The gateway codes against the vault's interfaces; these are the implementations it is given.


def mismatches(protocol: type[Any], implementation: object) -> list[str]:
    """How ``implementation`` falls short of ``protocol``: a missing member, or a method whose
    parameters differ (extra parameters are allowed when they have defaults)."""
    problems = []
    for name in sorted(_members(protocol)):
        if not hasattr(implementation, name):
            problems.append(f"{name}: missing")
            continue
        wanted = inspect.getattr_static(protocol, name, None)
        if not inspect.isfunction(wanted):
            continue  # a data member or property: having it is the contract
        have = inspect.signature(getattr(implementation, name)).parameters
        need = list(inspect.signature(wanted).parameters.values())[1:]  # without self
        names = list(have)
        if names[: len(need)] != [p.name for p in need]:
            problems.append(f"{name}: takes {names}, the interface {[p.name for p in need]}")
        elif any(p.default is p.empty for p in list(have.values())[len(need) :]):
            problems.append(f"{name}: needs more arguments than the interface passes")
    return problems


def _members(protocol: type[Any]) -> set[str]:
    names = set(getattr(protocol, "__annotations__", {}))
    names.update(name for name in vars(protocol) if not name.startswith("_"))
    return names


def test_the_implementations_satisfy_the_contract_the_gateway_codes_against(
    tmp_path: Path,
) -> None:
    store, vault = make_vault(tmp_path)
    contracts: list[tuple[type[Any], object]] = [
        (VaultStore, store),
        (UnlockedVault, vault),
        (CheckpointSigner, vault.checkpoint_signer()),
        (BodySealer, AuditSealer(store.public_keys())),
    ]
    assert {protocol.__name__: mismatches(protocol, impl) for protocol, impl in contracts} == {
        "VaultStore": [],
        "UnlockedVault": [],
        "CheckpointSigner": [],
        "BodySealer": [],
    }


class _Sealer(Protocol):
    kind: str

    def seal(self, plaintext: bytes) -> Mapping[str, str]: ...

    def open(self, sealed: Mapping[str, str], *, strict: bool) -> bytes: ...


def test_the_contract_check_sees_a_missing_member_and_a_changed_method() -> None:
    # Guard the guard: each way an implementation can drift from its interface is reported.
    class Drifted:
        def seal(self, data: bytes) -> Mapping[str, str]:
            return {}

        def open(self, sealed: Mapping[str, str], *, strict: bool, key: bytes) -> bytes:
            return b""

    class Fits:
        kind = "x"

        def seal(self, plaintext: bytes, *, level: int = 1) -> Mapping[str, str]:
            return {}

        def open(self, sealed: Mapping[str, str], *, strict: bool) -> bytes:
            return b""

    assert mismatches(_Sealer, Drifted()) == [
        "kind: missing",
        "open: needs more arguments than the interface passes",
        "seal: takes ['data'], the interface ['plaintext']",
    ]
    assert mismatches(_Sealer, Fits()) == []
