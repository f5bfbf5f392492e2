"""Private key blocks as real files carry them: every line behind a lead that changes from line
to line (a log's timestamp, a listing's line number, a mix of comment marks), split by string
concatenation across lines in code, escaped onto one line, inside JSON and YAML; with the type
labels of every algorithm. The body never survives, the lines around are served as they were,
and a text made of markers costs linear time."""

from __future__ import annotations

import json
import time
import warnings
from collections.abc import Callable

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import dsa, ec, ed25519, rsa
from cryptography.utils import CryptographyDeprecationWarning

from safeport.shared.secret_scan import find_secrets, redact

_PEM = serialization.Encoding.PEM
_NONE = serialization.NoEncryption()


def _keys() -> dict[str, str]:
    rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    with warnings.catch_warnings():  # DSA is deprecated, and still found in old deployments
        warnings.simplefilter("ignore", CryptographyDeprecationWarning)
        dsa_key = dsa.generate_private_key(key_size=2048)
    return {
        "rsa-pkcs1": rsa_key.private_bytes(
            _PEM, serialization.PrivateFormat.TraditionalOpenSSL, _NONE
        ).decode(),
        "ec": ec.generate_private_key(ec.SECP384R1())
        .private_bytes(_PEM, serialization.PrivateFormat.TraditionalOpenSSL, _NONE)
        .decode(),
        "dsa": dsa_key.private_bytes(
            _PEM, serialization.PrivateFormat.TraditionalOpenSSL, _NONE
        ).decode(),
        "pkcs8-encrypted": rsa_key.private_bytes(
            _PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(b"a passphrase of my own"),
        ).decode(),
        "openssh": ed25519.Ed25519PrivateKey.generate()
        .private_bytes(_PEM, serialization.PrivateFormat.OpenSSH, _NONE)
        .decode(),
    }


KEYS = _keys()
PKCS8 = (
    ec.generate_private_key(ec.SECP256R1())
    .private_bytes(_PEM, serialization.PrivateFormat.PKCS8, _NONE)
    .decode()
)


def _body(key: str) -> list[str]:
    return [line for line in key.splitlines() if "-----" not in line and ": " not in line]


def _assert_withheld(text: str, key: str) -> str:
    redacted, findings = redact(text)
    survivors = [line for line in _body(key) if line.strip() and line[:16] in redacted]
    assert survivors == []
    assert "private-key" in {finding.kind for finding in findings}
    assert redacted.count("\n") == text.count("\n")
    return redacted


def _prefixed(prefix: Callable[[int], str]) -> Callable[[str], str]:
    return lambda key: "".join(prefix(n) + line + "\n" for n, line in enumerate(key.splitlines()))


# Each carrying shape is a function of the key's PEM text.
SHAPES: dict[str, Callable[[str], str]] = {
    "log-timestamps": _prefixed(lambda n: f"2026-01-01 12:00:{n % 60:02d} "),
    "iso-timestamps-and-level": _prefixed(lambda n: f"2026-03-04T05:06:{n % 60:02d}.123Z INFO "),
    "bracketed-timestamps": _prefixed(lambda n: f"[2026-01-01 12:00:{n % 60:02d}] "),
    "line-numbers": _prefixed(lambda n: f"{n + 1:>4} "),
    "line-numbers-with-bar": _prefixed(lambda n: f"{n + 1} | "),
    "mixed-comment-marks": _prefixed(lambda n: ("// ", "# ", " * ", "> ", "#+# ")[n % 5]),
    "python-plus-after": lambda key: (
        "key = (\n" + "".join(f'    "{line}\\n" +\n' for line in key.splitlines()) + '    "")\n'
    ),
    "java-plus-before": lambda key: (
        'String key = ""\n' + "".join(f'    + "{line}\\n"\n' for line in key.splitlines()) + ";\n"
    ),
    "c-backslash-continuation": lambda key: (
        'char key[] = "' + "".join(f"{line}\\n\\\n" for line in key.splitlines()) + '";\n'
    ),
    "python-implicit-concatenation": lambda key: (
        "KEY = (\n" + "".join(f'    "{line}\\n"\n' for line in key.splitlines()) + ")\n"
    ),
    "triple-quoted": lambda key: f'KEY = """{key}"""\n',
    "escaped-on-one-line": lambda key: 'key = "' + key.replace("\n", "\\n") + '"\n',
    "double-escaped": lambda key: 'key = "' + key.replace("\n", "\\\\n") + '"\n',
    "crlf-escaped": lambda key: 'key = "' + key.replace("\n", "\\r\\n") + '"\n',
    "json-value": lambda key: json.dumps({"name": "deploy", "key": key}) + "\n",
    "json-log-of-timestamped-lines": lambda key: (
        json.dumps(
            {"build.log": "".join(f"2026-01-01 12:00:00 {line}\r\n" for line in key.splitlines())}
        )
        + "\n"
    ),
    "yaml-block-scalar": lambda key: (
        "tls:\n  key: |-\n"
        + "".join(f"    {line}\n" for line in key.splitlines())
        + "  port: 443\n"
    ),
}


@pytest.mark.parametrize("kind", list(KEYS))
@pytest.mark.parametrize("shape", list(SHAPES))
def test_a_key_block_is_withheld_in_every_carrying_shape(kind: str, shape: str) -> None:
    key = KEYS[kind]
    text = "first line of the file\n" + SHAPES[shape](key) + "last line of the file\n"
    redacted = _assert_withheld(text, key)
    assert redacted.startswith("first line of the file\n")
    assert redacted.endswith("last line of the file\n")


LABELS = ["ANY", "ML-DSA-65", "ML-KEM-1024", "X25519"]


@pytest.mark.parametrize("label", LABELS)
def test_a_key_block_with_an_unusual_type_label_is_withheld(label: str) -> None:
    key = PKCS8.replace("PRIVATE KEY", f"{label} PRIVATE KEY")
    _assert_withheld("notes\n" + key + "more notes\n", key)


@pytest.mark.parametrize("prefix", ["2026-01-01 12:00:00 ", "  17 | ", "[12:00:00] "])
def test_a_truncated_key_behind_changing_leads_is_withheld_up_to_where_it_stops(
    prefix: str,
) -> None:
    lines = KEYS["rsa-pkcs1"].splitlines()[:-1]  # the log was cut before the END marker
    text = "".join(prefix + line + "\n" for line in lines) + prefix + "job finished in 3 s\n"
    redacted = _assert_withheld(text, KEYS["rsa-pkcs1"])
    assert redacted.endswith(prefix + "job finished in 3 s\n")


def test_a_certificate_and_a_public_key_behind_timestamps_are_served() -> None:
    public = (
        ec.generate_private_key(ec.SECP256R1())
        .public_key()
        .public_bytes(_PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )
    body = _body(PKCS8)
    certificate = "\n".join(["-----BEGIN CERTIFICATE-----", *body, "-----END CERTIFICATE-----\n"])
    text = SHAPES["log-timestamps"](public) + SHAPES["log-timestamps"](certificate)
    assert redact(text) == (text, ())


def test_a_log_line_naming_the_marker_is_not_a_key() -> None:
    text = (
        "2026-01-01 12:00:00 looking for -----BEGIN PRIVATE KEY----- in the upload\n"
        "2026-01-01 12:00:01 none found, the file holds a certificate only\n"
        "2026-01-01 12:00:02 -----END PRIVATE KEY----- marker missing as well\n"
    )
    assert redact(text) == (text, ())


def test_a_key_with_prose_between_its_markers_is_not_a_key() -> None:
    text = (
        "# -----BEGIN RSA PRIVATE KEY-----\n"
        "# paste the key you were given here, one line after another\n"
        "# -----END RSA PRIVATE KEY-----\n"
    )
    assert redact(text) == (text, ())


@pytest.mark.parametrize(
    "hostile",
    [
        "-----BEGIN RSA PRIVATE KEY-----" * 32_000,
        "-----BEGIN RSA PRIVATE KEY-----\n" * 32_000,
        "2026-01-01 12:00:00 -----BEGIN PRIVATE KEY-----\n" * 20_000,
        ("-----BEGIN EC PRIVATE KEY-----\n" + "QUJD" * 16 + "\n") * 12_000
        + "-----END EC PRIVATE KEY-----\n",
        "-----BEGIN PRIVATE KEY-----\n" + ("QUJD" * 16 + "\n") * 15_000,
    ],
    ids=["markers-on-one-line", "marker-lines", "timestamped-markers", "many-begins", "long-body"],
)
def test_a_megabyte_of_markers_is_scanned_in_bounded_time(hostile: str) -> None:
    started = time.process_time()
    find_secrets(hostile)
    # Linear work takes well under a second here; quadratic work on a megabyte takes minutes.
    assert time.process_time() - started < 10
