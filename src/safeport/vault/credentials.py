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
    OAuthSecret,
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
    # An OAuth grant: the gateway writes it at `sp oauth connect` (refresh_token, or an
    # access_token for a provider that issues one that never expires) and at each rotation.
    "oauth": (set(), {"refresh_token", "access_token", "client_secret", "scopes", "issuer"}),
}
_PLAIN_FIELDS = {"username", "scopes", "issuer"}
# RFC 6749 3.3: scope-token = 1*( %x21 / %x23-5B / %x5D-7E ), joined by single spaces.
_SCOPES = re.compile(r"(?:[\x21\x23-\x5b\x5d-\x7e]{1,200}(?: [\x21\x23-\x5b\x5d-\x7e]{1,200})*)?")
_ISSUER = re.compile(r"https://[\x21-\x7e]{1,2040}")
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
        raise EntryError(f"unknown kind {kind!r}; use token, basic, ssh-key or oauth")
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
            plain[field] = _plain(name, field, text)
        else:
            secrets[field] = SecretBytes(raw.encode()) if isinstance(raw, str) else raw.copy()
    for field, secret in secrets.items():
        if len(secret) == 0:
            raise EntryError(f"the {field} of {name!r} is empty")
        if len(secret) > MAX_VALUE_BYTES:
            raise EntryError(f"the {field} of {name!r} is over {MAX_VALUE_BYTES} bytes")
    if kind == "oauth" and not {"refresh_token", "access_token"} & set(secrets):
        raise EntryError(f"an oauth entry ({name!r}) needs a refresh_token or an access_token")
    for field in _header_fields(kind, secrets):
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


def _header_fields(kind: SecretKind, secrets: Mapping[str, SecretBytes]) -> tuple[str, ...]:
    """The fields that end up in an HTTP header (or a form body: an OAuth client secret)."""
    if kind == "token":
        return ("token",)
    if kind == "basic":
        return ("password",)
    return tuple(sorted(secrets)) if kind == "oauth" else ()


def _plain(name: str, field: str, text: str) -> str:
    """A plain field's text, checked: a username goes into ``user:password``; scopes are
    RFC 6749 scope-tokens (none is allowed: a provider may grant none by name); an issuer is
    an https URL."""
    if field == "scopes":
        if not _SCOPES.fullmatch(text) or len(text) > 4096:
            raise EntryError(f"the scopes of {name!r} are not space-separated scope tokens")
        return text
    if field == "issuer":
        if not _ISSUER.fullmatch(text):
            raise EntryError(f"the issuer of {name!r} is not an https URL")
        return text
    if not text or _CONTROL.search(text.encode()) or ":" in text:
        raise EntryError(f"the {field} of {name!r} is empty or has a ':' or control character")
    return text


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
    if kind == "oauth":
        return OAuthSecret(
            refresh_token=_copy(secrets.get("refresh_token")),
            access_token=_copy(secrets.get("access_token")),
            client_secret=_copy(secrets.get("client_secret")),
            scopes=tuple(plain.get("scopes", "").split()),
            issuer=plain.get("issuer"),
        )
    passphrase = secrets.get("passphrase")
    return SshKeySecret(
        private_key=secrets["private_key"].copy(),
        passphrase=None if passphrase is None else passphrase.copy(),
    )


def _copy(value: SecretBytes | None) -> SecretBytes | None:
    return None if value is None else value.copy()
