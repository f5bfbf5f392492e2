"""Security keys on control.sock: the assertions `sp` sends and what the gateway answers.

Bytes travel as unpadded base64url, as WebAuthn writes them. An assertion is only ever data the
gateway verifies (python-fido2's server side): nothing here is trusted because `sp` sent it.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictStr

# Base64url without padding, bounded: a credential id is at most 1023 bytes, client data and
# authenticator data a few hundred, a signature under 80 for ES256.
B64 = Annotated[StrictStr, Field(min_length=1, max_length=4096, pattern=r"^[A-Za-z0-9_-]+$")]
KeyPurpose = Literal["enroll", "remove", "policy"]


def origin_of(rp_id: str) -> str:
    """The origin the approver's client writes into its client data for ``rp_id``: the
    gateway accepts exactly this one."""
    return f"https://{rp_id}"


class _Wire(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class KeyAssertion(_Wire):
    """One authenticatorGetAssertion answer, as the WebAuthn client returned it."""

    credential_id: B64
    client_data: B64 = Field(description="clientDataJSON")
    authenticator_data: B64
    signature: B64


class KeyRegistration(_Wire):
    """One authenticatorMakeCredential answer, as the WebAuthn client returned it."""

    client_data: B64 = Field(description="clientDataJSON")
    attestation_object: B64


class KeyChoice(_Wire):
    """An enrolled key an assertion may come from."""

    id: StrictStr
    name: StrictStr


class KeyRequest(_Wire):
    """What the approver's key signs: the relying party, the challenge and the keys allowed."""

    rp_id: StrictStr
    challenge: B64
    user_verification: bool
    keys: list[KeyChoice]


class EnrolledKeyView(_Wire):
    id: StrictStr
    name: StrictStr
    counter: int
    enrolled_at: StrictStr


class ApproverKeysResult(_Wire):
    """``approver.keys``: the enrolled keys and whether any approval needs one."""

    rp_id: StrictStr | None
    keys: list[EnrolledKeyView]
    factor_in_use: bool


class KeyChallengeResult(_Wire):
    """``approver.key_challenge``: sign this to enrol, remove or accept (single use, 2 min)."""

    request: KeyRequest
    user_id: B64
    expires_in_s: int


class KeyEnrolledResult(_Wire):
    id: StrictStr
    name: StrictStr


class KeyRemovedResult(_Wire):
    id: StrictStr
