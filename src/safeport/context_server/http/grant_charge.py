"""Which rate bucket a token request is charged to.

A token request carries no access token, so the bearer check cannot name its client; but its
code or refresh token carries the gateway's signature over the client's id (``grant_tokens``).
When that signature holds under one of the gateway's public keys, the request is charged to a
small bucket of that grant's own (``Admission.admit_grant``), otherwise to the anonymous one: a
stranger's flood empties the anonymous bucket and an approved client still refreshes, or
exchanges the code its human just approved, each with a grant no one has used yet. Whether the
grant is good stays the gateway's to judge; the signature only picks the bucket. It is not the
client's own bucket on purpose: a spent code or a rotated refresh token stays signed for ever,
and a stranger who saw one would drain with it the bucket of the client's bearer requests.

The signature is checked only when the anonymous bucket is empty. While it has room, a client
is served from it and a check would gain nothing. Once it is empty, every well-shaped grant is
checked: with the keys already held (never a fetch), at most :data:`MAX_KEYS_TRIED` of them,
on forms of at most :data:`MAX_FORM_BYTES` (a larger one is charged unparsed), and only after
its shape held (exact length and alphabet, so other junk costs a regular expression). There is
no cap on checks per second on purpose: a cap would be one more budget shared by everyone,
which the same flood would spend to starve the clients again. A check (about 0.17 ms) is a
fraction of what the server already spends on each such request (about 0.8 ms of CPU to receive,
parse and refuse it, measured), so a flood of forged signatures costs the server about a fifth
more than the same flood of junk: it cannot turn into more CPU than the requests themselves.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from safeport.context_server.http.admission import Admission
from safeport.context_server.http.tokens import SigningKeys
from safeport.shared.grant_tokens import GrantKind, signed_for

# The gateway publishes its one current key; a few leave room for a rotation's overlap.
MAX_KEYS_TRIED = 4
# A token request is well under a kilobyte; a larger form is never parsed before it is charged.
MAX_FORM_BYTES = 8 * 1024

_GRANTS: dict[str, tuple[GrantKind, str]] = {
    "refresh_token": ("refresh", "refresh_token"),
    "authorization_code": ("code", "code"),
}


def signed_grant(
    form: Mapping[str, str], keys: Sequence[Ed25519PublicKey]
) -> tuple[str, str] | None:
    """The client id the form's code or refresh token was signed for and the grant's random
    part, if it was."""
    grant = _GRANTS.get(form.get("grant_type", ""))
    if grant is None:
        return None
    kind, field = grant
    client_id, token = form.get("client_id", ""), form.get(field, "")
    if signed_for(token, kind, client_id, keys[:MAX_KEYS_TRIED]):
        return client_id, token.split(".")[0]
    return None


def charge(
    admission: Admission, form: Mapping[str, str] | None, keys: Sequence[Ed25519PublicKey]
) -> float | None:
    """None if the request is admitted, else the seconds until it would be. ``form`` is None
    when the body was not parsed (too large or malformed): anonymous."""
    wait = admission.admit_anonymous()
    return wait if wait is None else _charge_signed(admission, form, keys, wait)


def _charge_signed(
    admission: Admission,
    form: Mapping[str, str] | None,
    keys: Sequence[Ed25519PublicKey],
    wait: float,
) -> float | None:
    """The strangers' bucket is empty (``wait``): a signed grant's own bucket, if it has one."""
    signed = None if form is None else signed_grant(form, keys)
    return wait if signed is None else admission.admit_grant(signed[1])


class TokenRequestGate:
    """:func:`charge` with the server's buckets and the keys the token checker holds."""

    def __init__(self, admission: Admission, keys: SigningKeys) -> None:
        self._admission = admission
        self._keys = keys

    async def charge(
        self, read_form: Callable[[], Awaitable[Mapping[str, str] | None]]
    ) -> float | None:
        """:func:`charge`, the form read only once the strangers' bucket is empty: while it has
        room, nothing is parsed."""
        wait = self._admission.admit_anonymous()
        if wait is None:
            return None
        return _charge_signed(self._admission, await read_form(), self._keys.cached(), wait)

    async def warm(self) -> None:
        await self._keys.warm()
