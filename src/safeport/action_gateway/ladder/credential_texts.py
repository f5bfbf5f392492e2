"""The texts of the credential an action runs with, as the known-secret checks look for them.

Whatever comes back from the action (rows, output, fields, an error message) is searched for
these, in every form :mod:`safeport.shared.known_secrets` names. A per-action credential from an
OpenBao server (a database role's password, a signed key) is listed the same way as one from the
local vault: it is the secret that was in the gateway's hands.
"""

from __future__ import annotations

from safeport.vault.secrets import BasicSecret, SshKeySecret, TokenSecret


def credential_texts(secret: object) -> list[str]:
    """A token; a password (and ``user:password``, what basic auth encodes); a private key's
    body and its passphrase. A key's ``-----BEGIN …-----`` lines are left out: they are the
    same in every key and would withhold any text that merely names the format."""
    if isinstance(secret, TokenSecret):
        return _nonempty([_text(secret.token.reveal())])
    if isinstance(secret, BasicSecret):
        password = _text(secret.password.reveal())
        return _nonempty([password, f"{secret.username}:{password}" if password else ""])
    if isinstance(secret, SshKeySecret):
        lines = _text(secret.private_key.reveal()).splitlines()
        # Armour lines and legacy PEM headers (``Proc-Type: …``) are not secret.
        body = [line.strip() for line in lines if line.strip() and not _armour(line)]
        texts = ["\n".join(body), "".join(body)]
        if secret.passphrase is not None:
            texts.append(_text(secret.passphrase.reveal()))
        return _nonempty(texts)
    return []


def _armour(line: str) -> bool:
    return line.startswith("-----") or ":" in line


def _text(value: bytes) -> str:
    return value.decode("utf-8", "replace")


def _nonempty(texts: list[str]) -> list[str]:
    return [text for text in texts if text]
