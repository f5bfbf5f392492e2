"""What an approval card says of an OAuth grant: "acts as NAME with scopes …", the scopes the
provider granted (from the vault entry, never the policy's wish); and no card at all for a
grant that is dead or was never connected, since approving it could not make it run."""

from __future__ import annotations

from collections.abc import Sequence

from safeport.action_gateway.ladder.refusal import Refusal, Rung
from safeport.action_gateway.oauth.broker import DeadGrant, dead_error
from safeport.vault.interface import UnlockedVault


def grant_line(name: str, vault: UnlockedVault, dead: Sequence[DeadGrant]) -> str:
    """The card's line for grant ``name``; raises the :class:`Refusal` when it cannot run."""
    if any(grant.name == name for grant in dead):
        error = dead_error(name)
        raise Refusal(error.code, Rung.VAULT, error.failure, error.message)
    entry = next((e for e in vault.entries() if e.name == name), None)
    if entry is None or entry.kind != "oauth":
        raise Refusal(
            "denied",
            Rung.VAULT,
            "oauth_not_connected",
            f"the OAuth grant {name!r} is not connected; a human connects it with "
            f"`sp oauth connect {name}`",
        )
    scopes = " ".join(entry.scopes or ()) or "(none named by the provider)"
    return f"acts as {name} with scopes {scopes}"
