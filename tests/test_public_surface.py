"""Each package's public names, pinned: what other packages may import. Anything else is private
and may change; a name that disappears from a surface, or cannot be imported from it, fails here.
"""

from __future__ import annotations

import importlib
import inspect
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
    "safeport": {"__version__"},
    "safeport.action_gateway.executors": {"ActionError", "Executor", "HttpAction", "SshAction"},
    "safeport.cli": {"main", "sp"},
    "safeport.context_server": {
        "PROFILES",
        "ReadPolicy",
        "Refused",
        "ServeOptions",
        "build_index",
        "build_server",
        "open_workspace",
        "serve",
    },
    "safeport.shared.audit": {
        "ZERO_HASH",
        "BodySealer",
        "ChainReport",
        "Durability",
        "JournalHead",
        "JournalWriter",
        "RecordLayoutError",
        "discover_journals",
        "format_record",
        "journal_name",
        "journal_segments",
        "parse_head",
        "read_records",
        "verify_journal",
    },
    "safeport.shared.schemas": {
        "PROTOCOL_VERSION",
        "AgentRequest",
        "AuditRecord",
        "Cancel",
        "CatalogRequest",
        "ControlRequest",
        "Credential",
        "ErrorBody",
        "ErrorCode",
        "GatewayPolicy",
        "Hello",
        "HttpOperation",
        "HttpResult",
        "HttpService",
        "ParamSpec",
        "ProposeHttp",
        "ProposeSsh",
        "Reply",
        "ReplyError",
        "ReplyOk",
        "SealedBody",
        "SshCommand",
        "SshExecResult",
        "SshHost",
        "parse_gateway_policy",
        "policy_digest",
    },
    "safeport.vault": {
        "PRODUCTION_KDF",
        "AuditOpener",
        "AuditSealer",
        "CannotUnlock",
        "CheckpointInvalid",
        "CheckpointVerdict",
        "EntryError",
        "KdfParams",
        "KeyringBackend",
        "KeyringProblem",
        "NotAVault",
        "OpenVault",
        "OsKeyring",
        "UnsafeVaultFile",
        "VaultChanged",
        "VaultCheckpointSigner",
        "VaultFile",
        "VaultLocked",
        "VaultMissing",
        "compare",
        "dump_checkpoints",
        "load_checkpoints",
        "read_public_keys",
        "verify_checkpoint",
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


def test_every_package_that_declares_a_surface_is_pinned_here() -> None:
    declaring = {p for p in packages() if hasattr(importlib.import_module(p), "__all__")}
    assert declaring == set(SURFACES)


@pytest.mark.parametrize("package", sorted(SURFACES))
def test_each_package_declares_exactly_its_pinned_names(package: str) -> None:
    names = declared(importlib.import_module(package))
    assert len(names) == len(set(names)), "a name is listed twice"
    assert set(names) == SURFACES[package]


@pytest.mark.parametrize("package", sorted(SURFACES))
def test_every_declared_name_can_be_imported_from_its_package(package: str) -> None:
    module = importlib.import_module(package)
    assert [name for name in declared(module) if not hasattr(module, name)] == []
    namespace: dict[str, object] = {}
    exec(f"from {package} import *", namespace)  # what a star import gets is the surface
    assert set(namespace) - {"__builtins__"} == set(declared(module))


def test_a_surface_naming_something_its_package_lacks_is_caught() -> None:
    # Guard the guard: a package whose __all__ names a removed class is reported.
    module = ModuleType("safeport.fake")
    module.__dict__["__all__"] = ["Gone"]
    assert [name for name in declared(module) if not hasattr(module, name)] == ["Gone"]


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
