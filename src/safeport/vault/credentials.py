"""Checking a credential's value before it enters the vault (pure, no I/O).

A value is a mapping of field name to :class:`SecretBytes` (or ``str`` for non-secret fields
such as a username). Every refusal names the entry and the problem, never the value.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives.serialization import (
    load_pem_private_key,
    load_ssh_private_key,
)

from safeport.vault.errors import EntryError
from safeport.vault.kdf import as_bytes
from safeport.vault.secrets import (
    BasicSecret,
    CredentialSecret,
    SecretBytes,
    SecretKind,
    SshKeySecret,
    TokenSecret,
)

NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_FIELDS: dict[str, tuple[set[str], set[str]]] = {
    # kind: (required fields, optional fields)
    "token": ({"token"}, set()),
    "basic": ({"username", "password"}, set()),
    "ssh-key": ({"private_key"}, {"passphrase"}),
}
_PLAIN_FIELDS = {"username"}
_CONTROL = re.compile(rb"[\x00-\x1f\x7f]")
MAX_VALUE_BYTES = 64 * 1024
_OPENSSH_KEY = re.compile(rb"\s*-----BEGIN OPENSSH PRIVATE KEY-----")


def check_name(name: str) -> str:
    """The entry name, if it is one gateway.toml can reference (same rule as a config name)."""
    if not NAME_RE.fullmatch(name):
        raise EntryError(
            "an entry name is 1-64 letters, digits, '.', '_' or '-', starting with a letter"
            " or digit"
        )
    return name


def check_value(
    name: str, kind: SecretKind, value: Mapping[str, SecretBytes | str]
) -> tuple[dict[str, SecretBytes], dict[str, str]]:
    """Split and check a value: (secret fields as fresh buffers, plain fields)."""
    if kind not in _FIELDS:
        raise EntryError(f"unknown kind {kind!r}; use token, basic or ssh-key")
    required, optional = _FIELDS[kind]
    fields = set(value)
    if not required <= fields or fields - required - optional:
        expected = ", ".join(sorted(required | optional))
        raise EntryError(f"a {kind} entry takes the fields {expected}")
    secrets: dict[str, SecretBytes] = {}
    plain: dict[str, str] = {}
    for field, raw in value.items():
        if field in _PLAIN_FIELDS:
            text = raw if isinstance(raw, str) else raw.reveal().decode("utf-8", "replace")
            if not text or _CONTROL.search(text.encode()) or ":" in text:
                raise EntryError(
                    f"the {field} of {name!r} is empty or has a ':' or control character"
                )
            plain[field] = text
        else:
            secrets[field] = SecretBytes(raw.encode()) if isinstance(raw, str) else raw.copy()
    for field, secret in secrets.items():
        if len(secret) == 0:
            raise EntryError(f"the {field} of {name!r} is empty")
        if len(secret) > MAX_VALUE_BYTES:
            raise EntryError(f"the {field} of {name!r} is over {MAX_VALUE_BYTES} bytes")
    if kind in ("token", "basic"):
        field = "token" if kind == "token" else "password"
        # A CR/LF in a header value is request smuggling; a trailing newline is a paste accident.
        with secrets[field].exposed() as view:
            control = _CONTROL.search(view) is not None
        if control:
            raise EntryError(
                f"the {field} of {name!r} contains a control character (a trailing newline?)"
            )
    if kind == "ssh-key":
        check_ssh_key(name, secrets["private_key"], secrets.get("passphrase"))
    return secrets, plain


def check_ssh_key(name: str, key: SecretBytes, passphrase: SecretBytes | None) -> None:
    """Refuse a key that does not load (malformed, encrypted without its passphrase, wrong one).

    The refusal is raised here, after the loader's frame is gone and with no ``__context__``:
    a traceback that captures locals (a debugger, an error reporter) then shows neither the
    bytes copy of the key's passphrase nor a parser's message about the key bytes.
    """
    with key.exposed() as data:
        problem = _load_problem(data, passphrase)
    if problem:
        raise EntryError(f"the SSH key for {name!r} is {problem}")


def _load_problem(data: memoryview, passphrase: SecretBytes | None) -> str | None:
    # load_ssh_private_key insists on a bytes password: a copy that lives only in this frame.
    password = None if passphrase is None else passphrase.reveal()
    try:
        if _OPENSSH_KEY.match(data):
            load_ssh_private_key(as_bytes(data), password)
        else:
            load_pem_private_key(as_bytes(data), password)
    except TypeError:
        # cryptography says TypeError both for "encrypted but no password" and the reverse.
        if password is None:
            return "encrypted; give its passphrase too"
        return "not encrypted; drop its passphrase"
    except (ValueError, UnsupportedAlgorithm):
        return "not a valid private key, or its passphrase is wrong"
    return None


def to_secret(
    kind: SecretKind, secrets: Mapping[str, SecretBytes], plain: Mapping[str, str]
) -> CredentialSecret:
    """A fresh copy for an executor, which may wipe it without touching the vault's buffers."""
    if kind == "token":
        return TokenSecret(token=secrets["token"].copy())
    if kind == "basic":
        return BasicSecret(username=plain["username"], password=secrets["password"].copy())
    passphrase = secrets.get("passphrase")
    return SshKeySecret(
        private_key=secrets["private_key"].copy(),
        passphrase=None if passphrase is None else passphrase.copy(),
    )
