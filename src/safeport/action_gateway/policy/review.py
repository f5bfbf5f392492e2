"""What `sp policy check` and `accept` find wrong in a policy that parses: a pinned host key
that is not a key, a credential the vault lacks or holds with another kind. Pure: the vault's
entries are passed in by the caller, who asked the running gateway for them."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from dataclasses import dataclass

from safeport.shared.schemas.config import GatewayPolicy
from safeport.shared.text_lines import split_lines


@dataclass(frozen=True)
class PolicyProblem:
    line: int | None
    message: str
    fix: str

    def text(self) -> str:
        where = f"line {self.line}: " if self.line else ""
        return f"{where}{self.message}"


def review(
    policy: GatewayPolicy, text: str, vault_kinds: Mapping[str, str] | None
) -> list[PolicyProblem]:
    """Every problem found; ``vault_kinds`` (entry name → kind) None = the vault was not asked."""
    problems = _host_key_problems(policy, text)
    if vault_kinds is not None:
        problems += _credential_problems(policy, text, vault_kinds)
    return problems


def _host_key_problems(policy: GatewayPolicy, text: str) -> list[PolicyProblem]:
    found = []
    for host_id, host in sorted(policy.ssh.hosts.items()):
        for number, key in enumerate(host.host_keys, start=1):
            problem = host_key_problem(key)
            if problem:
                found.append(
                    PolicyProblem(
                        _line_holding(text, key.split()[1] if len(key.split()) > 1 else key),
                        f"ssh host {host_id!r}: pinned key {number} {problem}",
                        f"run `sp ssh scan {host.address}:{host.port}`, check the fingerprint "
                        "on the server, and paste the key it prints",
                    )
                )
    return found


def _credential_problems(
    policy: GatewayPolicy, text: str, vault_kinds: Mapping[str, str]
) -> list[PolicyProblem]:
    found = []
    for name, credential in sorted(policy.credentials.items()):
        if credential.source != "vault":
            continue  # its value lives at an OpenBao server (`sp doctor` checks the path)
        line = _line_holding(text, f"[credentials.{name}]")
        held = vault_kinds.get(name)
        if held is None and credential.kind == "oauth":
            # Connected after the policy is accepted (`sp oauth connect` reads its [oauth]
            # table from the accepted policy); until then its actions are refused, naming it.
            continue
        if held is None:
            found.append(
                PolicyProblem(
                    line,
                    f"credential {name!r} is not in the vault (an agent's request would fail)",
                    f"sp vault add {name} --kind {credential.kind}",
                )
            )
        elif held != credential.kind:
            found.append(
                PolicyProblem(
                    line,
                    f"credential {name!r} is declared {credential.kind} but the vault holds "
                    f"a {held}",
                    f"fix `kind` in gateway.toml, or `sp vault remove {name}` and "
                    f"`sp vault add {name} --kind {credential.kind}`",
                )
            )
    return found


def _line_holding(text: str, needle: str) -> int | None:
    for number, line in enumerate(split_lines(text), start=1):
        if needle in line:
            return number
    return None


# The fields of each key type's public blob after its name (RFC 4253 §6.6, RFC 5656, RFC 8709).
_KEY_FIELDS = {
    "ssh-ed25519": 1, "ssh-rsa": 2, "ecdsa-sha2-nistp256": 2, "ecdsa-sha2-nistp384": 2,
    "ecdsa-sha2-nistp521": 2,
}  # fmt: skip


def host_key_problem(line: str) -> str | None:
    """Why a pinned ``'<type> <base64>'`` line is not a public key of that type, or None.

    A placeholder copied from an example (``AAAA...``) or a key cut or altered on the way would
    otherwise pass as "1 pinned key" and only fail when the agent first asks for the host.
    """
    parts = line.split()
    try:
        blob = base64.b64decode(parts[1], validate=True)
    except (IndexError, ValueError):
        return "is not valid base64 (a placeholder? paste the line `sp ssh scan HOST` prints)"
    fields: list[bytes] = []
    offset = 0
    while offset < len(blob):
        if offset + 4 > len(blob):
            return "is damaged: its data ends inside a length field"
        size = int.from_bytes(blob[offset : offset + 4], "big")
        offset += 4
        if offset + size > len(blob):
            return "is damaged: its data is shorter than it says"
        fields.append(blob[offset : offset + size])
        offset += size
    if not fields or fields[0] != parts[0].encode("ascii", "replace"):
        return f"does not hold an {parts[0]} key (its data names another type)"
    expected = _KEY_FIELDS.get(parts[0])
    if expected is not None and len(fields) - 1 != expected:
        return f"is damaged: an {parts[0]} key has {expected} field(s), this has {len(fields) - 1}"
    if parts[0] == "ssh-ed25519" and len(fields[1]) != 32:
        return "is damaged: an ssh-ed25519 key is 32 bytes"
    return None
