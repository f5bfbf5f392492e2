"""A remote client's proposal (the desktop tunnel): the token it carries is proven first.

The context server relays the client's access token; the authorization server (through
``remote_caller``) says which approved client it proves, or refuses it. A remote client's action
is then always asked per call, and its card names the client: a yes for a local agent's session
never covers a caller on the other side of a tunnel.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from safeport.action_gateway.ladder.refusal import Refusal, Rung
from safeport.action_gateway.ladder.resolve import Resolved
from safeport.errors import Denied
from safeport.vault import VaultLocked


def remote_request(resolved: Resolved, token: str, remote_caller: Callable[[str], str]) -> Resolved:
    """``resolved`` asked per call with the client its token proves named, or a Refusal."""
    try:
        client = remote_caller(token)
    except VaultLocked as exc:
        raise Refusal("locked", Rung.VAULT, "locked", "the vault is locked") from exc
    except Denied as exc:
        raise Refusal("denied", Rung.ACTION, "remote_client", exc.message) from exc
    request = dataclasses.replace(
        resolved.request, scope="per-call", session_covers=(), remote_client=client
    )
    return dataclasses.replace(resolved, request=request)


def no_remote_clients(token: str) -> str:
    """Without an authorization server, no remote client is served."""
    raise Denied("this gateway serves no remote clients")


__all__ = ["no_remote_clients", "remote_request"]
