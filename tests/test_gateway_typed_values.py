"""Inside the gateway, rooms hand each other typed values; untyped JSON-shaped dicts live only at
the wire edge.

The edge is ``handlers/`` (each parses a request frame and renders the reply of one operation)
and ``sockets/`` (frames in and out). Every other room's public function or method is checked:
none may take or return ``dict[str, object]`` / ``dict[str, Any]`` (anywhere in its annotation,
``list[dict[str, object]]`` and ``dict[str, Any] | None`` included). ``DEBTS`` lists the ones
still there; it may only shrink, so a name that is made typed leaves it in the same change.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

GATEWAY = Path(__file__).resolve().parents[1] / "src" / "safeport" / "action_gateway"
WIRE_EDGE = frozenset({"handlers", "sockets"})

# Journal record bodies and `sp`'s views, still plain JSON objects between rooms.
DEBTS = frozenset(
    {
        "approvals/broker.py:Approvals.card_views",
        "approvals/broker.py:Approvals.notify",
        "approvals/broker.py:Journal.record",
        "approvals/cards.py:ActionRequest.shape",
        "approvals/cards.py:ApprovalCard.view",
        "approvals/cards.py:ClientAuthorization.shape",
        "approvals/cards.py:requester_user",
        "approvals/desktop_notice.py:notify_card_waiting",
        "approvals/grants.py:SessionGrant.view",
        "approvals/key_checks.py:EnrolledKey.as_json",
        "approvals/key_ring.py:KeyApprovals.__init__",
        "approvals/key_ring.py:KeyApprovals.card_request",
        "approvals/key_ring.py:KeyApprovals.challenge",
        "core/gateway_core.py:GatewayCore.card_views",
        "core/gateway_core.py:GatewayCore.describe_vault",
        "core/gateway_core.py:GatewayCore.policy_snapshot",
        "core/gateway_core.py:GatewayCore.policy_status",
        "core/gateway_core.py:GatewayCore.public_file_view",
        "core/gateway_core.py:GatewayCore.record_refused",
        "core/gateway_core.py:GatewayCore.record_session",
        "core/gateway_core.py:GatewayCore.record_session_by",
        "core/gateway_core.py:GatewayCore.reload",
        "core/gateway_core.py:GatewayCore.session_views",
        "core/vault_events.py:VaultEvents.record_save",
        "core/vault_state.py:VaultState.describe",
        "core/vault_state.py:VaultState.public_file_view",
        "evidence/alarms.py:JournalEvidence.alarm",
        "evidence/checkpoints.py:CheckpointKeeper.view",
        "evidence/journal_space.py:JournalSpace.view",
        "evidence/journals.py:DurableJournal.record",
        "evidence/journals.py:RefusalRecords.refused",
        "evidence/journals.py:RefusalRecords.session_by",
        "evidence/journals.py:RefusalRecords.view",
        "evidence/refusal_budget.py:Tally.body",
        "evidence/refusal_budget.py:record_size",
        "evidence/restart_scan.py:HeadFinding.as_record",
        "executors/https/response_contract.py:extract_fields",
        "executors/https/response_contract.py:refuse_credential_echo",
        "identity/model.py:PeerIdentity.as_record",
        "identity/model.py:ProcessInfo.as_record",
        "ladder/collaborators.py:ActionJournal.record",
        "ladder/credentials.py:CredentialSupply.doctor",
        "ladder/credentials.py:Journal.record",
        "ladder/refusal.py:refusal_record",
        "ladder/resolve.py:proposal_names",
        "ladder/result_filters.py:result_summary",
        "policy/inventory.py:inventory",
        "policy/inventory.py:inventory_lines",
        "policy/store.py:PolicyStore.snapshot",
        "policy/store.py:PolicyStore.status",
        "remote_clients/authorization_rules.py:server_metadata",
        "remote_clients/authorization_server.py:AuthorizationServer.client_views",
        "remote_clients/issuer.py:Issuer.issue",
    }
)

_LOOSE_VALUES = frozenset({"object", "Any", "typing.Any"})


def _is_loose(annotation: ast.expr | None) -> bool:
    """Whether ``annotation`` names ``dict[str, object]`` or ``dict[str, Any]`` anywhere in it."""
    if annotation is None:
        return False
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            annotation = ast.parse(annotation.value, mode="eval").body
        except SyntaxError:
            return False
    for node in ast.walk(annotation):
        if not isinstance(node, ast.Subscript) or not isinstance(node.slice, ast.Tuple):
            continue
        if ast.unparse(node.value) not in {"dict", "Dict", "typing.Dict"}:
            continue
        if len(node.slice.elts) == 2:
            key, value = node.slice.elts
            if ast.unparse(key) == "str" and ast.unparse(value) in _LOOSE_VALUES:
                return True
    return False


def _public(name: str) -> bool:
    return not name.startswith("_") or (name.startswith("__") and name.endswith("__"))


def _loose_functions(body: list[ast.stmt], prefix: str = "") -> Iterator[str]:
    for node in body:
        if isinstance(node, ast.ClassDef) and _public(node.name):
            yield from _loose_functions(node.body, f"{prefix}{node.name}.")
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and _public(node.name):
            args = node.args
            every = [*args.posonlyargs, *args.args, *args.kwonlyargs]
            every += [arg for arg in (args.vararg, args.kwarg) if arg is not None]
            if _is_loose(node.returns) or any(_is_loose(arg.annotation) for arg in every):
                yield f"{prefix}{node.name}"


def loose_crossings(gateway: Path = GATEWAY) -> set[str]:
    """``room/module.py:Qualified.name`` of every public function or method outside the wire
    edge that takes or returns a JSON-shaped dict."""
    found: set[str] = set()
    for path in sorted(gateway.rglob("*.py")):
        relative = path.relative_to(gateway)
        if len(relative.parts) > 1 and relative.parts[0] in WIRE_EDGE:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        found |= {f"{relative.as_posix()}:{name}" for name in _loose_functions(tree.body)}
    return found


def test_no_new_json_shaped_dict_crosses_a_room_boundary_and_every_debt_is_still_owed() -> None:
    found = loose_crossings()
    assert sorted(found - DEBTS) == [], "type these values (a frozen dataclass or a model)"
    assert sorted(DEBTS - found) == [], "typed now: take these out of DEBTS"


def test_the_proposal_path_is_typed_from_the_ladder_to_the_agent_socket() -> None:
    found = loose_crossings()
    for name in ("ladder/rungs.py:Ladder.propose", "core/gateway_core.py:GatewayCore.propose"):
        assert name not in found
    assert not {name for name in found if name.startswith(("ladder/rungs.py", "ladder/execute"))}


def test_the_checker_sees_loose_dicts_in_every_position_and_leaves_the_edge_alone(
    tmp_path: Path,
) -> None:
    for room in ("ladder", "core", "handlers", "sockets"):
        (tmp_path / room).mkdir()
    (tmp_path / "ladder" / "rungs.py").write_text(
        "from typing import Any\n"
        "def answer(x: int) -> dict[str, object]: ...\n"
        "def take(*, body: 'dict[str, Any]') -> None: ...\n"
        "def many(*rows: list[dict[str, object]]) -> None: ...\n"
        "def maybe(x: int) -> dict[str, Any] | None: ...\n"
        "def _private(x: dict[str, object]) -> None: ...\n"
        "def typed(x: dict[str, int]) -> dict[int, object]: ...\n"
        "class Ladder:\n"
        "    def propose(self) -> dict[str, object]: ...\n"
        "    def __init__(self, body: dict[str, object]) -> None: ...\n"
        "    def _inner(self) -> dict[str, object]: ...\n"
        "class _Hidden:\n"
        "    def shown(self) -> dict[str, object]: ...\n"
    )
    (tmp_path / "core" / "gateway_core.py").write_text(
        "class GatewayCore:\n    async def status(self) -> list[dict[str, object]]: ...\n"
    )
    edge = "def message(data: dict[str, object]) -> dict[str, object]: ...\n"
    (tmp_path / "handlers" / "agent_sock.py").write_text(edge)
    (tmp_path / "sockets" / "connection.py").write_text(edge)
    assert loose_crossings(tmp_path) == {
        "ladder/rungs.py:answer",
        "ladder/rungs.py:take",
        "ladder/rungs.py:many",
        "ladder/rungs.py:maybe",
        "ladder/rungs.py:Ladder.propose",
        "ladder/rungs.py:Ladder.__init__",
        "core/gateway_core.py:GatewayCore.status",
    }
