"""What checking a security key's approval costs the gateway, beside the bare signature check.

    python benchmarks/bench_key_approval.py [--rounds 2000] [--json]

Measures, in one run: (1) the gateway's whole check of one assertion
(``verify_assertion``: parsing, python-fido2's ``Fido2Server.authenticate_complete`` with its
client data, origin, challenge, relying party and flag checks, the ECDSA P-256 signature, and
the counter), (2) the bare ECDSA P-256 verification of the same bytes with ``cryptography``
(the peer: what no implementation can skip), and (3) the passphrase proof it stands beside, one
Argon2id derivation at the production parameters. The assertions come from the tests' software
authenticator through python-fido2's real client. Ratios: ours/bare (lower is better).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.kdf.argon2 import Argon2id
from fido2 import cbor
from fido2.cose import CoseKey
from fido2.utils import websafe_decode, websafe_encode
from fido2.webauthn import CollectedClientData

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the harness: the soft key

from harness.soft_authenticator import SoftAuthenticator
from safeport.action_gateway.approvals.key_checks import (
    EnrolledKey,
    card_challenge,
    verify_assertion,
    verify_registration,
)
from safeport.gateway_client.security_key import KeySigner
from safeport.shared.schemas.key_wire import KeyChallengeResult, KeyChoice, KeyRequest
from safeport.vault import PRODUCTION_KDF

RP = "gw-bench.safeport.invalid"


def timed(action: Callable[[], object], rounds: int) -> float:
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        action()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def enrolled_key(key: SoftAuthenticator) -> EnrolledKey:
    challenge = os.urandom(32)
    issued = KeyChallengeResult(
        request=KeyRequest(
            rp_id=RP, challenge=websafe_encode(challenge), user_verification=False, keys=[]
        ),
        user_id=websafe_encode(b"u" * 16),
        expires_in_s=120,
    )
    key.touch.set()
    registration = KeySigner(key).register(issued, "bench")
    response = {
        "type": "public-key",
        "response": {
            "clientDataJSON": registration.client_data,
            "attestationObject": registration.attestation_object,
        },
    }
    key_id, public_key, counter = verify_registration(RP, b"u" * 16, response, challenge)
    return EnrolledKey(key_id, "bench", public_key, counter, "")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=2000)
    parser.add_argument("--json", action="store_true")
    options = parser.parse_args()
    key = SoftAuthenticator()
    enrolled = enrolled_key(key)
    challenge = card_challenge("c-bench", "a" * 64, "b" * 64, 1_900_000_000)
    key.touch.set()
    request = KeyRequest(
        rp_id=RP,
        challenge=websafe_encode(challenge),
        user_verification=False,
        keys=[KeyChoice(id=enrolled.id, name="bench")],
    )
    signed = KeySigner(key).sign(request)
    response: dict[str, Any] = {
        "id": signed.credential_id,
        "rawId": signed.credential_id,
        "type": "public-key",
        "response": {
            "clientDataJSON": signed.client_data,
            "authenticatorData": signed.authenticator_data,
            "signature": signed.signature,
        },
    }
    before = EnrolledKey(enrolled.id, "bench", enrolled.public_key, 0, "")

    def ours() -> None:
        verify_assertion(RP, (before,), response, challenge, user_verification=False)

    decoded = cbor.decode(enrolled.public_key)
    assert isinstance(decoded, dict)
    public = CoseKey.parse(decoded)
    point = ec.EllipticCurvePublicNumbers(
        int.from_bytes(public[-2], "big"), int.from_bytes(public[-3], "big"), ec.SECP256R1()
    ).public_key()
    signed_bytes = (
        websafe_decode(signed.authenticator_data)
        + CollectedClientData(websafe_decode(signed.client_data)).hash
    )
    signature = websafe_decode(signed.signature)

    def bare() -> None:
        point.verify(signature, signed_bytes, ec.ECDSA(hashes.SHA256()))

    def passphrase() -> None:
        Argon2id(
            salt=os.urandom(16),
            length=32,
            iterations=PRODUCTION_KDF.iterations,
            lanes=PRODUCTION_KDF.lanes,
            memory_cost=PRODUCTION_KDF.memory_kib,
        ).derive(b"correct horse battery staple")

    ours_s = timed(ours, options.rounds)
    bare_s = timed(bare, options.rounds)
    kdf_s = timed(passphrase, 5)
    result = {
        "rounds": options.rounds,
        "assertion_check_us": round(ours_s * 1e6, 1),
        "bare_p256_verify_us": round(bare_s * 1e6, 1),
        "ratio_ours_to_bare": round(ours_s / bare_s, 2),
        "passphrase_argon2id_ms": round(kdf_s * 1000, 1),
        "load_average": os.getloadavg()[0],
    }
    if options.json:
        print(json.dumps(result, indent=2))
        return
    print(
        f"assertion check (whole)  {ours_s * 1e6:8.1f} us   bare P-256 verify "
        f"{bare_s * 1e6:7.1f} us   ratio {ours_s / bare_s:5.2f}"
    )
    print(f"passphrase proof (Argon2id, production)  {kdf_s * 1000:8.1f} ms")
    print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
