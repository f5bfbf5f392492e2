"""Tokens of build, registry and infrastructure tools: Docker swarm, JFrog, SonarQube, Defined
Networking, WunderGraph Cosmo, GitHub's dated installation tokens, Akamai EdgeGrid, NTLM's
authenticate message, MySQL password hashes, Tailscale's keys, Cloudflare's Origin CA keys, CAST
AI, Fly.io's short tokens, Azure Data Factory's runtime keys, Sourcegraph's access tokens,
Django's generated secret keys, OpenShift, Harness, Octopus Deploy, Infracost, Chief Tools.
(GitLab, GitHub's other tokens, Docker Hub and the older formats are in ``rules``.)"""

from __future__ import annotations

import re

from safeport.shared.secret_scan.checks import (
    decoded_base64,
    is_placeholder,
    mixed_generated,
    random_enough,
)
from safeport.shared.secret_scan.providers.token_rule import B, E, TokenRule, rule

_REFERENCE = re.compile(rb"reftkn:[0-9]{2}:[0-9]{10}:")
_NTLM_AUTHENTICATE = b"NTLMSSP\x00\x03\x00\x00\x00"


def _jfrog_reference(token: str) -> bool:
    """A reference token is base64 of ``reftkn:01:<expiry>:<random>``: a version and a time,
    not words."""
    decoded = decoded_base64(token)
    return decoded is not None and _REFERENCE.match(decoded) is not None


def _ntlm_authenticate(message: str) -> bool:
    """Base64 of NTLMSSP's type 3 message, which carries the client's hashed response: the
    signature, then an NT response whose length and offset (bytes 20 to 28) lie in the message.
    Text glued to a copied header (a truncated or made-up example) points nowhere."""
    decoded = decoded_base64(message[: len(message) - len(message) % 4])
    if decoded is None or not decoded.startswith(_NTLM_AUTHENTICATE) or len(decoded) < 28:
        return False
    length = int.from_bytes(decoded[20:22], "little")
    offset = int.from_bytes(decoded[24:28], "little")
    return length > 0 and offset >= 28 and offset + length <= len(decoded)


def _letters_and_digits(value: str) -> bool:
    """A body of capitals and digits drawn at random holds both (``API-ABCDEFGH…`` is a word)."""
    body = value.partition("-")[2]
    return any(c.isdigit() for c in body) and any(c.isalpha() for c in body) and random_enough(body)


def _django_key(value: str) -> bool:
    """A key drawn after the prefix, not the prefix again (a text of prefixes run together)."""
    return "insecure-" not in value[16:] and random_enough(value[16:])


def _drawn_hex(value: str) -> bool:
    """A digest's hex, not a stand-in of one or two repeated digits (``*0000…``)."""
    return len(set(value.upper())) > 4


# A Bundler setting naming a host, then its separator and opening quote.
# (Bundler writes a URL-keyed one as ``BUNDLE_HTTPS://RUBYGEMS__PKG__GITHUB__COM/OWNER/``;
# a Dockerfile's ``ENV`` may take a space for its sign, Ruby sets ``ENV["BUNDLE_…"] = "…"``.)
_BUNDLER_HOST = (
    r"BUNDLE_(?!(?:BUILD|LOCAL|MIRROR)__)(?:HTTPS?://)?[A-Z0-9_]{1,120}__[A-Z0-9]{2,24}"
    r"(?:/[A-Za-z0-9_.\-/]{0,120})?(?![A-Z0-9_])[\"']?\]?(?:[ \t]*(?:[:=]|=>)[ \t]*|[ \t]+)"
)
# The same credential set with Bundler's own command: ``bundle config set --global HOST u:p``.
_BUNDLE_CONFIG = (
    r"bundle[ \t]+config[ \t]+(?:set[ \t]+)?(?:--(?:global|local)[ \t]+)?"
    r"(?:https?://)?[A-Za-z0-9\-]{1,63}(?:\.[A-Za-z0-9\-]{1,63}){1,8}(?:/[^\s\"']{0,120})?[ \t]+"
)
# The user, its colon, and a password that is no URL's rest (``https://…``) nor a token's
# ``x-oauth-basic``; quoted, it may hold what would end an unquoted one (``;``, ``&``, ``|``).
_NOT_A_PASSWORD_AFTER = r"(?!//|(?i:x-oauth-basic)(?![\w-]))"  # noqa: S105 (a pattern)
_QUOTED = (
    r"(?P<q>[\"'])[^\s:\"'`/]{1,128}:"
    + _NOT_A_PASSWORD_AFTER
    + r"(?P<secret>[^\s\"'`]{1,128})(?P=q)"
)
_BARE = (
    r"(?![\"'])[^\s:\"'`/]{1,128}:"
    + _NOT_A_PASSWORD_AFTER
    + r"(?P<secret>[^\s\"'`;&|]{1,128})(?![^\s\"'`;&|])"  # whole: none longer, none cut short
)
# A token given as the user, with GitHub's ``x-oauth-basic`` for its password.
_TOKEN_USER = r"[\"']?(?P<secret>[^\s:\"'`/]{8,256}):(?i:x-oauth-basic)(?![\w-])"  # noqa: S105 (a pattern)


def _credential(value: str) -> bool:
    """A credential a setting's name already says is one: anything but a stand-in or a
    lookup (``${GEM_TOKEN}``, ``changeme``)."""
    return not is_placeholder(value)


DEVOPS_RULES: tuple[TokenRule, ...] = (
    # An app's installation token in its newer, dated form: ``ghs_<yyyymmdd>_`` then a signed
    # JWT or a random body (the older ``ghs_<36>`` is in ``rules``).
    rule(
        "github-token",
        "ghs_",
        r"ghs_[0-9]{6,8}_[A-Za-z0-9_\-]{16,4000}(?:\.[A-Za-z0-9_\-]{0,4000}){0,2}",
        random_enough,
    ),
    # Akamai EdgeGrid's client and access tokens (the client secret beside them is base64 under
    # a secret-like name); a line prefix such as ``T: `` or ``client_token = `` may precede them.
    rule(
        "akamai-token",
        "akab-",
        # Not the API's host name, which starts with the same two parts (akab-….akamaiapis.net).
        B + r"akab-[a-z0-9]{16}-[a-z0-9]{16}" + E + r"(?!\.[a-z])",
        random_enough,
    ),
    # NTLM's authenticate message (type 3) in base64, as an ``Authorization: NTLM`` header or a
    # capture carries it: its LM/NT responses can be cracked or relayed for the password.
    # Checked by decoding, not by the stand-in test of ``rule``: the message is binary, and its
    # base64 spells a word or runs a sequence by chance.
    TokenRule(
        "ntlm-authenticate",
        ("TlRMTVNTUAAD",),
        re.compile(r"TlRMTVNTUAAD[A-Za-z0-9+/]{40,8000}={0,2}"),
        _ntlm_authenticate,
    ),
    # A MySQL account's password hash (``*`` and SHA1(SHA1(password)) in hex), as ``SHOW CREATE
    # USER`` and dumps write it: a dictionary cracks it offline.
    TokenRule(
        "mysql-password-hash",
        tuple(
            f"{word} {quote}*" for word in ("AS", "as", "PASSWORD", "password") for quote in "'\""
        ),
        re.compile(r"(?i:as|password)[ \t]['\"](?P<secret>\*[0-9A-Fa-f]{40})['\"]"),
        _drawn_hex,
    ),
    # The token a node joins a swarm with, and the key that unlocks a locked swarm's managers.
    rule(
        "docker-swarm-token",
        "SWMTKN-1-",
        r"SWMTKN-1-[a-z0-9]{50}-[a-z0-9]{25}" + E,
        random_enough,
    ),
    rule("docker-swarm-key", "SWMKEY-1-", r"SWMKEY-1-[A-Za-z0-9+/]{43}" + E, random_enough),
    rule("jfrog-token", "AKCp", B + r"AKCp[A-Za-z0-9]{69}" + E, random_enough),
    rule(
        "jfrog-token",
        "cmVmdGtu",
        B + r"cmVmdGtu[A-Za-z0-9+/]{50,80}={0,2}(?![A-Za-z0-9+/])",
        _jfrog_reference,
    ),
    # User, project and global analysis tokens.
    rule("sonarqube-token", ("squ_", "sqp_", "sqa_"), B + r"sq[upa]_[a-f0-9]{40}" + E),
    rule(
        "defined-networking-key",
        "dnkey-",
        r"dnkey-[A-Z0-9]{26}-[A-Z0-9]{52}" + E,
        random_enough,
    ),
    rule("wundergraph-key", "cosmo_", B + r"cosmo_[a-f0-9]{32}" + E, random_enough),
    # Tailscale's auth keys, API access tokens, OAuth client secrets and webhook / SCIM
    # secrets: ``tskey-<kind>-`` then the key's id and its secret, each alphanumeric.
    rule(
        "tailscale-key",
        "tskey-",
        r"tskey-(?:auth|api|client|scim|webhook)-[A-Za-z0-9]{6,32}-[A-Za-z0-9]{16,64}" + E,
        random_enough,
    ),
    # Cloudflare's Origin CA key (signs certificates for a zone's origin): a version, 24 hex
    # digits of id and 146 of secret.
    rule(
        "cloudflare-origin-ca-key",
        "v1.0-",
        B + r"v1\.0-[a-f0-9]{24}-[a-f0-9]{146}" + E,
        random_enough,
    ),
    # Sourcegraph's access tokens: an optional instance id before the 40 hex digits
    # (``sgp_<16>_<40>``), or ``local`` for an instance's own.
    rule(
        "sourcegraph-token",
        "sgp_",
        B + r"sgp_(?:[a-fA-F0-9]{16}_|local_)?[a-fA-F0-9]{40}" + E,
        random_enough,
    ),
    rule(
        "castai-key",
        "castai_v1_",
        r"castai_v1_[A-Za-z0-9]{64}_[A-Za-z0-9]{8}" + E,
        random_enough,
    ),
    # The secret key ``django-admin startproject`` writes into settings.py: it signs sessions
    # and password-reset links until someone replaces it.
    rule(
        "django-secret-key",
        "django-insecure-",
        r"django-insecure-[A-Za-z0-9!@#$%^&*()_=+\-]{24,80}",
        _django_key,
    ),
    # OpenShift's OAuth access tokens, as ``oc whoami -t`` prints them and kubeconfigs keep them.
    rule("openshift-token", "sha256~", B + r"sha256~[A-Za-z0-9_\-]{43}" + E, mixed_generated),
    # Harness personal and service account tokens: an account id, a token id, the secret.
    rule(
        "harness-token",
        ("pat.", "sat."),
        B + r"[ps]at\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{20}" + E,
        mixed_generated,
    ),
    rule("octopus-deploy-key", "API-", B + r"API-[A-Z0-9]{26}" + E, _letters_and_digits),
    rule("infracost-token", "ico-", B + r"ico-[A-Za-z0-9]{32}" + E, mixed_generated),
    rule(
        "chieftools-token",
        ("cto_", "ctp_", "ctr_"),
        B + r"ct[opr]_[A-Za-z0-9]{30,40}" + E,
        mixed_generated,
    ),
    # Fly.io's organisation and deploy tokens in their short form (``fm1_``/``fm2_`` are longer).
    rule("flyio-token", "fo1_", B + r"fo1_[A-Za-z0-9_\-]{43}" + E, random_enough),
    # An Azure Data Factory self-hosted integration runtime's key: the runtime's id, the
    # factory, its region, then the key itself.
    rule(
        "azure-data-factory-key",
        "IR@",
        B + r"IR@[0-9A-Za-z\-]{36}@[A-Za-z0-9\-]{1,90}@[a-z0-9]{2,12}@[A-Za-z0-9+/]{43}=",
        random_enough,
    ),
    # Bundler's credentials for a gem server, set per host in the environment or
    # ``.bundle/config`` (``BUNDLE_GEMS__EXAMPLE__COM: "user:password"``, the host's dots written
    # ``__``) or with ``bundle config set``: the password, or a token given as the user with
    # GitHub's ``x-oauth-basic``. Bundler's own settings that also hold ``__`` (``BUILD__``,
    # ``LOCAL__``, ``MIRROR__``) are none.
    *(
        rule("bundler-credential", anchor, lead + value, _credential)
        for anchor, lead in (("BUNDLE_", _BUNDLER_HOST), ("bundle config", _BUNDLE_CONFIG))
        for value in (_QUOTED, _BARE, _TOKEN_USER)
    ),
)
