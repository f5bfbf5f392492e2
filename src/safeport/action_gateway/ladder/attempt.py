"""Rung 8: one attempt at an approved action, and every way it can end.

The credential is held for this one action only (:meth:`CredentialSupply.held`); the action
runs and its result is filtered (:func:`execute_filtered`). Whatever happens, the attempt ends
as an :class:`Attempt`: the filtered result or the refusal the agent hears, and what the
outcome record says of it (status, duration, where a server's credential came from, which
step a deadline stopped). The ladder journals that record whether the action ran or not, so
nothing an executor raises may escape this function.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from safeport.action_gateway.executors.interface import ActionError, Executor
from safeport.action_gateway.ladder.credential_texts import credential_texts
from safeport.action_gateway.ladder.credentials import CredentialSupply
from safeport.action_gateway.ladder.execute import execute_filtered
from safeport.action_gateway.ladder.outcome import ActionResult
from safeport.action_gateway.ladder.refusal import Refusal, Rung
from safeport.action_gateway.ladder.resolve import Resolved
from safeport.errors import Error
from safeport.shared.known_secrets import shorten
from safeport.shared.schemas.replies import MAX_REASON_CHARS
from safeport.vault import VaultLocked
from safeport.vault.interface import UnlockedVault


@dataclass(frozen=True, kw_only=True)
class Attempt:
    """How one attempt ended (``ended``: the filtered result when it ran, else the refusal the
    agent hears); the rest is what its outcome record carries."""

    ended: ActionResult | Refusal
    status: str  # "ok", the executor's failure category, "locked" or "error"
    duration_ms: int
    origin: dict[str, object] = field(default_factory=dict)  # a server's credential's source
    stopped: dict[str, object] = field(default_factory=dict)  # a deadline kept from this side


def attempt_action(
    *,
    executor: Executor,
    credentials: CredentialSupply,
    resolved: Resolved,
    vault: UnlockedVault,
    intent: int,
    clock: Callable[[], float],
) -> Attempt:
    """Run the approved action once with its credential; never raises."""
    started = clock()
    origin: dict[str, object] = {}
    texts: list[str] = []  # the credential's texts, withheld from messages
    try:
        with credentials.held(resolved.policy, resolved.request, vault, intent) as held:
            origin = held.origin
            # The same list object: a token renewed after a 401 joins it as it is issued.
            texts = held.withheld
            texts[:0] = credential_texts(held.secret)
            result = execute_filtered(
                executor, held.secret, resolved, renew=held.renew, withheld=texts
            )
    except Exception as exc:  # every failure becomes a refusal; see _failed
        status, refusal, stopped = _failed(exc, texts)
        elapsed = int((clock() - started) * 1000)
        return Attempt(
            ended=refusal, status=status, duration_ms=elapsed, origin=origin, stopped=stopped
        )
    elapsed = int((clock() - started) * 1000)
    return Attempt(ended=result, status="ok", duration_ms=elapsed, origin=origin)


def _failed(exc: Exception, texts: list[str]) -> tuple[str, Refusal, dict[str, object]]:
    """The outcome status, the refusal and the deadline's step for an attempt that failed."""
    if isinstance(exc, ActionError):
        stopped: dict[str, object] = {}
        if exc.stopped_by is not None:
            stopped = {"stopped_by": exc.stopped_by}
        # Redacted, then cut: the reply, the card and the journal all carry this text.
        reason = shorten(exc.message, MAX_REASON_CHARS, texts)
        refusal = Refusal(exc.code, Rung.EXECUTE, f"upstream_{exc.failure}", reason)
        return exc.failure, refusal, stopped
    if isinstance(exc, VaultLocked):
        # A lock from control.sock between the ladder's check and this read: nothing ran, and
        # the agent hears `locked` (retry after an unlock), not an internal error.
        message = "the vault was locked before execution"
        return "locked", Refusal("locked", Rung.EXECUTE, "locked", message), {}
    if isinstance(exc, Error):
        reason = shorten(f"the action could not run: {exc.message}", MAX_REASON_CHARS, texts)
        return "error", Refusal("internal", Rung.EXECUTE, "internal", reason), {}
    # An executor bug must not kill the gateway or leak a trace.
    message = f"the action failed ({type(exc).__name__})"
    return "error", Refusal("internal", Rung.EXECUTE, "internal", message), {}
