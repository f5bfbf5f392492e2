"""The JSON replies of the commands that report without one of their own, one type each.

Each is what `--json` prints on stdout, in the shape the CLI reference documents (a test per
command parses it and checks its keys). Replies that already had a type keep it: `sp status`
(``Overview``), `sp doctor` (``Diagnosis``), `sp vault status` (``VaultStatus``), `sp gateway
status` (the control socket's ``StatusResult``).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any, Literal

import click


@dataclass(frozen=True)
class ClientEntry:
    """`sp client list --json`: one place a client reads, and safeport's entry there."""

    client: str
    scope: str | None
    path: str
    installed: bool
    ok: bool
    problems: tuple[str, ...]
    profile: str | None
    roots: tuple[str, ...]
    origin: str | None
    env: dict[str, str]


@dataclass(frozen=True)
class ClientList:
    root: str
    entries: tuple[ClientEntry, ...]


@dataclass(frozen=True)
class InitReply:
    """`sp init --json`: the files written and those kept as they were."""

    written: tuple[str, ...]
    kept: tuple[str, ...]
    vault: str
    vault_created: bool


@dataclass(frozen=True)
class PolicyAcceptReply:
    """`sp policy accept --json`: whether a new policy is served now, and its digest."""

    accepted: bool
    changed: bool
    policy: str | None


@dataclass(frozen=True)
class VaultUnlockReply:
    """`sp vault unlock --json`; ``exit_code`` is 2 when no gateway holds the vault."""

    state: Literal["unlocked", "locked"]
    held_by_gateway: bool
    public_file_rewritten: bool
    exit_code: int


@dataclass(frozen=True)
class GatewayStopReply:
    """`sp gateway stop --json`: ``was_running`` false when there was nothing to stop."""

    was_running: bool
    stopped: bool
    pid: int | None


@dataclass(frozen=True)
class ClientCheckReply:
    """`sp client install CLIENT --check --json`: ``ok`` false (exit 1) when the entry differs;
    ``how`` says whether the client itself was asked or its file read back."""

    client: str
    path: str
    ok: bool
    problems: tuple[str, ...]
    how: str


@dataclass(frozen=True)
class VaultLockReply:
    """`sp vault lock --json`: ``held_by_gateway`` false when no gateway ran (locked at rest)."""

    locked: bool
    held_by_gateway: bool


@dataclass(frozen=True)
class GatewayReloadReply:
    """`sp gateway reload --json`: ``pending`` when gateway.toml differs from the served policy."""

    pending: bool


Reply = (
    ClientList
    | ClientCheckReply
    | VaultLockReply
    | InitReply
    | PolicyAcceptReply
    | VaultUnlockReply
    | GatewayStopReply
    | GatewayReloadReply
)


def echo_json(reply: Reply) -> None:
    """One JSON document on stdout, keys sorted, as every `--json` prints."""
    click.echo(json.dumps(as_json(reply), indent=2, sort_keys=True))


def as_json(reply: Reply) -> dict[str, Any]:
    return asdict(reply)
