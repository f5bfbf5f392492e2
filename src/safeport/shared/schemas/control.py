"""Requests on control.sock: one model per operation, told apart by ``op``.

Each operation names exactly the params it takes; anything else, a wrong type or a missing
param is ``invalid`` before the gateway looks at it. A passphrase travels only here, only after
`sp` has checked who is listening, and is held as a ``SecretStr`` so no repr or log shows it.
"""

from __future__ import annotations

from typing import Annotated, Literal, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    StrictBool,
    StrictStr,
    TypeAdapter,
)

from safeport.shared.schemas.grant_wire import (
    OAuthBeginParams,
    OAuthDeviceWaitParams,
    OAuthFinishParams,
)
from safeport.shared.schemas.key_wire import KeyAssertion, KeyPurpose, KeyRegistration
from safeport.shared.schemas.wire import Envelope

MAX_PASSPHRASE_CHARS = 4096
MAX_POLICY_CHARS = 1024 * 1024

Passphrase = Annotated[SecretStr, Field(min_length=1, max_length=MAX_PASSPHRASE_CHARS)]
SecretKindName = Literal["token", "basic", "ssh-key"]


class _Params(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class NoParams(_Params):
    """The operations that take nothing."""


class WithPassphrase(_Params):
    """Operations that always prove the vault passphrase."""

    passphrase: Passphrase


class MaybePassphrase(_Params):
    """Operations on every human's work: the passphrase is needed only when the gateway serves
    several humans (one human: being admitted is enough)."""

    passphrase: Passphrase | None = None


class SecretField(_Params):
    """A secret part of a credential, base64 (decoded only inside the gateway)."""

    secret_b64: SecretStr


class TextField(_Params):
    """A plain part of a credential (a user name)."""

    text: StrictStr


EntryValue = Annotated[dict[StrictStr, SecretField | TextField], Field(min_length=1, max_length=8)]


class VaultAddParams(WithPassphrase):
    name: StrictStr
    kind: SecretKindName
    value: EntryValue


class VaultRotateParams(WithPassphrase):
    name: StrictStr
    value: EntryValue


class VaultRemoveParams(WithPassphrase):
    name: StrictStr


class PolicyAcceptParams(WithPassphrase):
    digest: StrictStr = Field(description="the digest of the text that was shown")
    # Dedicated mode: the human's own gateway.toml (the gateway's account cannot read their
    # home); accepted only if it is the text shown.
    text: Annotated[StrictStr, Field(max_length=MAX_POLICY_CHARS)] | None = None
    # An enrolled key's signature over this digest: needed when the policy turns a key off.
    assertion: KeyAssertion | None = None


class ApprovalsDecideParams(MaybePassphrase):
    """The passphrase is needed unless this connection registered as an approver."""

    id: StrictStr
    approve: StrictBool
    # A touch of an enrolled key over this card's challenge: needed for a yes when the card's
    # credential (or the whole gateway) has `approval_factor = "key"`.
    assertion: KeyAssertion | None = None


class KeyChallengeParams(_Params):
    purpose: KeyPurpose
    subject: Annotated[StrictStr, Field(max_length=256)]


class KeyProof(_Params):
    """The first key is enrolled with the passphrase; later changes need an enrolled key."""

    passphrase: Passphrase | None = None
    assertion: KeyAssertion | None = None


class ApproverEnrollParams(KeyProof):
    name: Annotated[StrictStr, Field(min_length=1, max_length=64)]
    registration: KeyRegistration


class ApproverRemoveParams(KeyProof):
    id: Annotated[StrictStr, Field(max_length=4096)]


class SessionsRevokeParams(MaybePassphrase):
    id: StrictStr


class ClientsRevokeParams(MaybePassphrase):
    id: Annotated[StrictStr, Field(min_length=1, max_length=512)]


class _Control(Envelope):
    type: Literal["control"]


class StatusRequest(_Control):
    op: Literal["status"]
    params: NoParams = Field(default_factory=NoParams)


class GatewayStopRequest(_Control):
    op: Literal["gateway.stop"]
    params: MaybePassphrase = Field(default_factory=MaybePassphrase)


class GatewayReloadRequest(_Control):
    op: Literal["gateway.reload"]
    params: NoParams = Field(default_factory=NoParams)


class VaultStatusRequest(_Control):
    op: Literal["vault.status"]
    params: NoParams = Field(default_factory=NoParams)


class VaultDescribeRequest(_Control):
    op: Literal["vault.describe"]
    params: NoParams = Field(default_factory=NoParams)


class VaultInitRequest(_Control):
    op: Literal["vault.init"]
    params: WithPassphrase


class VaultUnlockRequest(_Control):
    op: Literal["vault.unlock"]
    params: WithPassphrase


class VaultLockRequest(_Control):
    op: Literal["vault.lock"]
    params: MaybePassphrase = Field(default_factory=MaybePassphrase)


class VaultUnlockKeyringRequest(_Control):
    op: Literal["vault.unlock_keyring"]
    params: NoParams = Field(default_factory=NoParams)


class VaultEntriesRequest(_Control):
    op: Literal["vault.entries"]
    params: NoParams = Field(default_factory=NoParams)


class VaultAddRequest(_Control):
    op: Literal["vault.add"]
    params: VaultAddParams


class VaultRotateRequest(_Control):
    op: Literal["vault.rotate"]
    params: VaultRotateParams


class VaultRemoveRequest(_Control):
    op: Literal["vault.remove"]
    params: VaultRemoveParams


class OAuthBeginRequest(_Control):
    op: Literal["oauth.begin"]
    params: OAuthBeginParams


class OAuthFinishRequest(_Control):
    op: Literal["oauth.finish"]
    params: OAuthFinishParams


class OAuthDeviceWaitRequest(_Control):
    op: Literal["oauth.device_wait"]
    params: OAuthDeviceWaitParams


class PolicyStatusRequest(_Control):
    op: Literal["policy.status"]
    params: NoParams = Field(default_factory=NoParams)


class PolicyAcceptRequest(_Control):
    op: Literal["policy.accept"]
    params: PolicyAcceptParams


class ApproverRegisterParams(WithPassphrase):
    # The gateway run and lock (``status``'s ``run``) whose locked vault this registration may
    # unlock. Without it, or naming another, a locked vault stays locked and the registration
    # is refused as ``locked``: a process left running from an earlier run, or from before a
    # human's `sp vault lock` (or a client that knows nothing of this field), cannot unlock it.
    # `sp approvals watch` names what it found when it started, and only that; after a
    # restart or a lock it waits for a human to run `sp vault unlock`.
    unlock_run: StrictStr | None = Field(default=None, min_length=1, max_length=64)


class ApproverRegisterRequest(_Control):
    op: Literal["approver.register"]
    params: ApproverRegisterParams


class ApproverKeysRequest(_Control):
    op: Literal["approver.keys"]
    params: NoParams = Field(default_factory=NoParams)


class ApproverKeyChallengeRequest(_Control):
    op: Literal["approver.key_challenge"]
    params: KeyChallengeParams


class ApproverEnrollRequest(_Control):
    op: Literal["approver.enroll"]
    params: ApproverEnrollParams


class ApproverRemoveRequest(_Control):
    op: Literal["approver.remove"]
    params: ApproverRemoveParams


class ApprovalsListRequest(_Control):
    op: Literal["approvals.list"]
    params: NoParams = Field(default_factory=NoParams)


class ApprovalsDecideRequest(_Control):
    op: Literal["approvals.decide"]
    params: ApprovalsDecideParams


class ApprovalsWatchRequest(_Control):
    op: Literal["approvals.watch"]
    params: NoParams = Field(default_factory=NoParams)


class SessionsListRequest(_Control):
    op: Literal["sessions.list"]
    params: NoParams = Field(default_factory=NoParams)


class SessionsRevokeRequest(_Control):
    op: Literal["sessions.revoke"]
    params: SessionsRevokeParams


class ClientsListRequest(_Control):
    op: Literal["clients.list"]
    params: NoParams = Field(default_factory=NoParams)


class ClientsRevokeRequest(_Control):
    op: Literal["clients.revoke"]
    params: ClientsRevokeParams


class SourcesCheckRequest(_Control):
    """`sp doctor`: each OpenBao/Vault server and declared path, no value read."""

    op: Literal["sources.check"]
    params: NoParams = Field(default_factory=NoParams)


class AuditCheckpointRequest(_Control):
    op: Literal["audit.checkpoint"]
    params: NoParams = Field(default_factory=NoParams)


ControlRequest = Annotated[
    StatusRequest
    | GatewayStopRequest
    | GatewayReloadRequest
    | VaultStatusRequest
    | VaultDescribeRequest
    | VaultInitRequest
    | VaultUnlockRequest
    | VaultLockRequest
    | VaultUnlockKeyringRequest
    | VaultEntriesRequest
    | VaultAddRequest
    | VaultRotateRequest
    | VaultRemoveRequest
    | OAuthBeginRequest
    | OAuthFinishRequest
    | OAuthDeviceWaitRequest
    | PolicyStatusRequest
    | PolicyAcceptRequest
    | ApproverRegisterRequest
    | ApproverKeysRequest
    | ApproverKeyChallengeRequest
    | ApproverEnrollRequest
    | ApproverRemoveRequest
    | ApprovalsListRequest
    | ApprovalsDecideRequest
    | ApprovalsWatchRequest
    | SessionsListRequest
    | SessionsRevokeRequest
    | ClientsListRequest
    | ClientsRevokeRequest
    | AuditCheckpointRequest
    | SourcesCheckRequest,
    Field(discriminator="op"),
]
CONTROL_REQUEST: TypeAdapter[ControlRequest] = TypeAdapter(ControlRequest)


def control_ops() -> frozenset[str]:
    """Every operation the union names (what the gateway's dispatch table must cover)."""
    union = get_args(ControlRequest)[0]
    return frozenset(get_args(kind.model_fields["op"].annotation)[0] for kind in get_args(union))
