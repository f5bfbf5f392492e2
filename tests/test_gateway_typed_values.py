"""Inside the gateway, rooms hand each other typed values; untyped JSON-shaped dicts live only at
the wire edge.

The edge is ``handlers/`` (each parses a request frame and renders the reply of one operation)
and ``sockets/`` (frames in and out). Every other room's public function or method is checked:
none may take or return ``dict[str, object]`` / ``dict[str, Any]`` (anywhere in its annotation,
``list[dict[str, object]]`` and ``dict[str, Any] | None`` included). ``DEBTS`` lists the ones
still there; it may only shrink, so a name that is made typed leaves it in the same change.

One dict is a wire format of its own: a journal record's body
(:data:`safeport.shared.audit.record.JournalBody`). The hash-chained journal stores it as
canonical JSON and ``sp audit verify`` checks those bytes offline, so the journal writer is a
wire edge for record bodies exactly as a socket is for frames. The name is allowed only where a
record body is built (``shape``, ``as_record``, ``refusal_record``...) or handed to the writer
(``record``, ``record_*``, ``alarm``): ``JOURNAL_WIRE`` lists those, and anywhere else the name
counts as the loose dict it is, so it cannot become a way to rename a view or a result.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

GATEWAY = Path(__file__).resolve().parents[1] / "src" / "safeport" / "action_gateway"
WIRE_EDGE = frozenset({"handlers", "sockets"})

# Where a journal record's body is built or written: the journal's own wire format.
JOURNAL_WIRE = frozenset(
    {
        "approvals/cards.py:ActionRequest.shape",
        "approvals/cards.py:ClientAuthorization.shape",
        "approvals/key_ring.py:KeyApprovals.__init__",  # takes the writer of key-ring records
        "approvals/session_table.py:Journal.record",
        "core/gateway_core.py:GatewayCore.record_refused",
        "core/gateway_core.py:GatewayCore.record_session",
        "core/gateway_core.py:GatewayCore.record_session_by",
        "core/vault_events.py:VaultEvents.record_save",
        "evidence/alarms.py:JournalEvidence.alarm",
        "evidence/journals.py:DurableJournal.record",
        "evidence/journals.py:RefusalRecords.refused",
        "evidence/journals.py:RefusalRecords.session_by",
        "evidence/refusal_budget.py:Tally.body",
        "evidence/refusal_budget.py:record_size",
        "evidence/restart_scan.py:HeadFinding.as_record",
        "identity/model.py:PeerIdentity.as_record",
        "identity/model.py:ProcessInfo.as_record",
        "ladder/collaborators.py:ActionJournal.record",
        "ladder/credentials.py:Journal.record",
        "ladder/refusal.py:refusal_record",
        "oauth/broker.py:Journal.record",
        "ladder/resolve.py:proposal_names",
        "ladder/result_filters.py:result_summary",
    }
)
_JOURNAL_BODY = frozenset({"JournalBody", "record.JournalBody"})

# JSON documents by nature, each used only inside its own room (a test below says so for the
# functions): the fields picked from a service's JSON response (data the policy names, carried on
# in the typed ``HttpResult``), the RFC 8414 metadata document the context server relays as it is,
# and an enrolled key as the key ring's JSON text stored in the vault holds it.
JSON_BY_NATURE = {
    "approvals/key_checks.py:EnrolledKey.as_json": "the key ring's stored JSON",
    "executors/https/response_contract.py:extract_fields": "a service's JSON response",
    "executors/https/response_contract.py:refuse_credential_echo": "a service's JSON response",
    "remote_clients/authorization_rules.py:server_metadata": "an RFC 8414 document",
}

# The values still plain JSON objects between rooms, to be typed.
DEBTS: frozenset[str] = frozenset()

_LOOSE_VALUES = frozenset({"object", "Any", "typing.Any"})


def _annotation(annotation: ast.expr | None) -> ast.expr | None:
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            return ast.parse(annotation.value, mode="eval").body
        except SyntaxError:
            return None
    return annotation


def _is_loose(annotation: ast.expr | None) -> bool:
    """Whether ``annotation`` names ``dict[str, object]`` or ``dict[str, Any]`` anywhere in it."""
    annotation = _annotation(annotation)
    if annotation is None:
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


def _is_journal_body(annotation: ast.expr | None) -> bool:
    """Whether ``annotation`` names the journal's record body anywhere in it."""
    annotation = _annotation(annotation)
    if annotation is None:
        return False
    return any(
        isinstance(node, ast.Name | ast.Attribute) and ast.unparse(node) in _JOURNAL_BODY
        for node in ast.walk(annotation)
    )


def _public(name: str) -> bool:
    return not name.startswith("_") or (name.startswith("__") and name.endswith("__"))


def _functions(
    body: list[ast.stmt], prefix: str = ""
) -> Iterator[tuple[str, list[ast.expr | None]]]:
    """Every public function or method, with the annotations of its parameters and return."""
    for node in body:
        if isinstance(node, ast.ClassDef) and _public(node.name):
            yield from _functions(node.body, f"{prefix}{node.name}.")
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and _public(node.name):
            args = node.args
            every = [*args.posonlyargs, *args.args, *args.kwonlyargs]
            every += [arg for arg in (args.vararg, args.kwarg) if arg is not None]
            yield f"{prefix}{node.name}", [node.returns, *(arg.annotation for arg in every)]


def _rooms(gateway: Path) -> Iterator[tuple[str, list[ast.expr | None]]]:
    for path in sorted(gateway.rglob("*.py")):
        relative = path.relative_to(gateway)
        if len(relative.parts) > 1 and relative.parts[0] in WIRE_EDGE:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for name, signature in _functions(tree.body):
            yield f"{relative.as_posix()}:{name}", signature


def loose_crossings(gateway: Path = GATEWAY) -> set[str]:
    """``room/module.py:Qualified.name`` of every public function or method outside the wire
    edge that takes or returns a JSON-shaped dict: a journal body counts as one, except where
    ``JOURNAL_WIRE`` says a record body is built or written."""
    found: set[str] = set()
    for name, signature in _rooms(gateway):
        journal_body = name not in JOURNAL_WIRE and any(map(_is_journal_body, signature))
        if journal_body or any(map(_is_loose, signature)):
            found.add(name)
    return found


def journal_body_sites(gateway: Path = GATEWAY) -> set[str]:
    """Where a record body is named (``JournalBody``) in a signature."""
    return {
        name for name, annotations in _rooms(gateway) if any(map(_is_journal_body, annotations))
    }


def test_no_new_json_shaped_dict_crosses_a_room_boundary_and_every_debt_is_still_owed() -> None:
    found = loose_crossings() - JSON_BY_NATURE.keys()
    assert sorted(found - DEBTS) == [], "type these values (a frozen dataclass or a model)"
    assert sorted(DEBTS - found) == [], "typed now: take these out of DEBTS"
    assert sorted(JSON_BY_NATURE.keys() - loose_crossings()) == [], "typed now: drop these"


def test_a_json_document_by_nature_stays_in_its_own_room() -> None:
    """No module of another room names these functions (imported, or read off their module)."""
    for name in JSON_BY_NATURE:
        module, function = name.split(":")
        if "." in function:
            continue  # a method: its class is the room's own (EnrolledKey, in approvals/)
        room = module.split("/")[0]
        for path in GATEWAY.rglob("*.py"):
            relative = path.relative_to(GATEWAY)
            if relative.parts[0] == room:
                continue
            tree = ast.parse(path.read_text(encoding="utf-8"))
            named = {getattr(node, "id", getattr(node, "attr", None)) for node in ast.walk(tree)}
            named |= {
                a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names
            }
            assert function not in named, f"{relative} uses {function}"


def test_a_journal_body_is_named_only_where_a_record_is_built_or_written() -> None:
    assert sorted(JOURNAL_WIRE - journal_body_sites()) == [], "no record body here: drop it"
    assert not JOURNAL_WIRE & DEBTS


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
        "from safeport.shared.audit import record\n"
        "def refusal_record(x: int) -> JournalBody: ...\n"
        "def view(x: int) -> list[record.JournalBody]: ...\n"
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
        "ladder/rungs.py:refusal_record",
        "ladder/rungs.py:view",
        "core/gateway_core.py:GatewayCore.status",
    }
    (tmp_path / "ladder" / "refusal.py").write_text(
        "def refusal_record(x: int) -> 'JournalBody': ...\n"
        "def proposal_names(x: int) -> dict[str, object]: ...\n"
    )
    found = loose_crossings(tmp_path)
    assert "ladder/refusal.py:refusal_record" not in found  # listed in JOURNAL_WIRE
    assert "ladder/refusal.py:proposal_names" in found  # listed, but a plain dict is still loose
