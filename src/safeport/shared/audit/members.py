"""What a record holds after its chain members: kind, time, and the body (clear or sealed).

Pure functions over values, serialised once as canonical JSON; the writer only frames and
hashes the bytes these return.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping
from typing import Protocol

from safeport.errors import AuditError
from safeport.shared.audit.record import canonical_json
from safeport.shared.audit.tail import MAX_RECORD_BYTES

_KIND_RE = re.compile(r"[a-z][a-z0-9_.-]{0,63}")
_REF_NAME_RE = re.compile(r"[a-z][a-z_]{0,31}")
_KNOWN_KINDS_MAX = 256


class BodySealer(Protocol):
    """Encrypts a record body so that only the audit key's holder can read it.

    The returned members replace ``body`` in the record (as ``sealed``); the chain covers the
    sealed bytes, so verification never needs the key. A sealer may also have a ``prepare()``
    method: the writer calls it just before it waits for an fsync, a moment when work for the
    next seals costs the waiting thread nothing (see :func:`waiting_hook`).
    """

    def seal(self, plaintext: bytes) -> Mapping[str, str]: ...


def waiting_hook(sealer: BodySealer | None) -> Callable[[], None] | None:
    """The sealer's optional ``prepare`` (what to run while the writer waits on the disk)."""
    hook = getattr(sealer, "prepare", None)
    return hook if callable(hook) else None


class KindNames:
    """Record kinds as JSON strings, checked once each: a journal uses a handful of kinds."""

    def __init__(self) -> None:
        self._known: dict[str, bytes] = {}

    def json(self, kind: str) -> bytes:
        known = self._known.get(kind)
        if known is not None:
            return known
        if not _KIND_RE.fullmatch(kind):
            raise AuditError(f"invalid record kind {kind!r}")
        kind_json = b'"%s"' % kind.encode("ascii")  # the pattern admits nothing JSON would escape
        if len(self._known) < _KNOWN_KINDS_MAX:
            self._known[kind] = kind_json
        return kind_json


class Timestamps:
    """RFC 3339 UTC with microseconds, already as a JSON string; time is a parameter.

    The date and time of day are formatted once per second: ``strftime`` costs more than the
    rest of a record's framing.
    """

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._second = -1
        self._prefix = b""

    def now(self) -> bytes:
        now = self._clock()
        seconds = int(now)
        if seconds != self._second:
            self._prefix = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)).encode()
            self._second = seconds
        return b'"%s.%06dZ"' % (self._prefix, int((now - seconds) * 1_000_000))


def record_members(
    body: Mapping[str, object], ref: Mapping[str, int] | None, sealer: BodySealer | None
) -> bytes:
    """The record's members after ``kind``, as canonical JSON (serialised once).

    ``ref`` is stored in the clear beside a sealed body: small counters (an intent's sequence, a
    vault generation) that a scan must read while the vault is locked. Never a secret, never an
    argument's value: only names of the gateway's own numbering.
    """
    try:
        plain = canonical_json(body if type(body) is dict else dict(body))
    except (TypeError, ValueError) as exc:
        raise AuditError(f"record body is not JSON-serialisable: {type(exc).__name__}") from exc
    if len(plain) > MAX_RECORD_BYTES:
        raise AuditError(f"record body of {len(plain)} bytes is over the 1 MiB limit")
    clear = _check_ref(ref)
    if sealer is None:
        if clear is None:
            return b'{"body":' + plain + b"}"
        return b'{"body":' + plain + b',"ref":' + canonical_json(clear) + b"}"
    sealed: dict[str, object] = {"sealed": dict(sealer.seal(plain))}
    if clear is not None:
        sealed["ref"] = clear
    return canonical_json(sealed)


def _check_ref(ref: Mapping[str, int] | None) -> dict[str, int] | None:
    """Only short lowercase names and non-negative integers: nothing else can go in the clear."""
    if not ref:
        return None
    clear: dict[str, int] = {}
    for name, value in ref.items():
        if not _REF_NAME_RE.fullmatch(name):
            raise AuditError(f"invalid reference name {name!r}")
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise AuditError(f"reference {name!r} must be a non-negative integer")
        clear[name] = value
    return clear
