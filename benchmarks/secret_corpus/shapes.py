"""Samples of secrets across lines and through an encoding: key blocks behind log timestamps,
base64 of a PEM key, bare base64 DER keys, private JWKs, values below their names, Kubernetes
Secrets; and their look-alikes (a public JWK, a ConfigMap, prose in a block scalar).

Generated on each run like the rest of the corpus: fresh keys from ``cryptography``, fresh values.
"""

from __future__ import annotations

import base64
import json
import textwrap
from collections.abc import Iterator

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from benchmarks.secret_corpus.corpus import Sample, _password


def _b64url(number: int, size: int) -> str:
    return base64.urlsafe_b64encode(number.to_bytes(size, "big")).rstrip(b"=").decode()


def _ec_jwk(key: ec.EllipticCurvePrivateKey) -> dict[str, str]:
    public = key.public_key().public_numbers()
    return {
        "kty": "EC",
        "crv": "P-256",
        "x": _b64url(public.x, 32),
        "y": _b64url(public.y, 32),
        "d": _b64url(key.private_numbers().private_value, 32),
    }


def shape_samples() -> Iterator[Sample]:
    pem, der = serialization.Encoding.PEM, serialization.Encoding.DER
    none = serialization.NoEncryption()
    rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    key = rsa_key.private_bytes(pem, serialization.PrivateFormat.PKCS8, none).decode()
    body = max((line for line in key.splitlines() if "-----" not in line), key=len)
    logged = "".join(f"2026-01-01 12:00:{n:02d} {line}\n" for n, line in enumerate(key.split("\n")))
    yield Sample("private-key:log-timestamps", f"# build log\n{logged}next line\n", body)
    numbered = "".join(f"{n + 1:>3} | {line}\n" for n, line in enumerate(key.splitlines()))
    yield Sample("private-key:line-numbers", f"# listing\n{numbered}next line\n", body)
    encoded = base64.b64encode(key.encode()).decode()
    yield Sample(
        "private-key:base64-pem", f"# kubeconfig\nclient-key-data: {encoded}\nnext line\n", encoded
    )
    der_key = base64.b64encode(
        rsa_key.private_bytes(der, serialization.PrivateFormat.TraditionalOpenSSL, none)
    ).decode()
    wrapped = "".join(f"    {line}\n" for line in textwrap.wrap(der_key, 64))
    yield Sample("private-key:der-base64", f"<key>\n{wrapped}</key>\n", der_key[64:128])
    jwk = _ec_jwk(ec.generate_private_key(ec.SECP256R1()))
    yield Sample("private-key:jwk", json.dumps(jwk, indent=2) + "\n", jwk["d"])
    value = _password()
    shapes = {
        "yaml-block-scalar": "db:\n  password: |\n    {v}\n  port: 5432\n",
        "yaml-next-line": "auth:\n  client_secret:\n    {v}\n",
        "toml-multiline": 'api_token = """\n{v}\n"""\n',
        "kubernetes-secret": "kind: Secret\nmetadata:\n  name: app\ndata:\n  db: {b}\n",
    }
    for shape, template in shapes.items():
        value = _password()
        encoded_value = base64.b64encode(value.encode()).decode()
        secret = encoded_value if "{b}" in template else value
        yield Sample(f"generic:{shape}", template.format(v=value, b=encoded_value), secret)
    public = {name: part for name, part in jwk.items() if name != "d"}
    negatives = {
        "public-jwk": json.dumps({"keys": [public]}, indent=2) + "\n",
        "configmap": "kind: ConfigMap\nmetadata:\n  name: app\ndata:\n"
        f"  blob: {base64.b64encode(_password().encode()).decode()}\n",
        "prose-block-scalar": "description: |\n  Rotate the password every 90 days.\n"
        "  Ask the on-call engineer first.\n",
    }
    for name, text in negatives.items():
        yield Sample(f"negative:{name}", text, None)
