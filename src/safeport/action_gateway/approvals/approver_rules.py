"""Who may decide a card: never a process inside the requester's own tree.

An approver below the requester, or below a wrapper that launched it, is always refused; one
below the requester's client (its MCP host) only unless ``allow_approver_in_client``.
"""

from __future__ import annotations

from safeport.action_gateway.identity.model import PeerIdentity, descends_from
from safeport.errors import Denied


class ApproverRefused(Denied):
    """This approver may not decide this card (it runs inside the requester's tree)."""


def check_approver(
    approver: PeerIdentity, requester: PeerIdentity, *, allow_in_client: bool
) -> None:
    """Refuse an approver that runs inside the requester's tree or its client.

    - Below the requester itself: always refused.
    - Below a wrapper between the requester and its client (the shell, ``npx`` or ``uv run``
      that started it): always refused, even with ``allow_approver_in_client`` — that is the
      agent's own launch, not the human's terminal.
    - Below the client, the MCP host (``PeerIdentity.client``): refused unless
      ``allow_approver_in_client`` (an IDE's own terminal).
    - Anywhere else is accepted, notably another pane of the same tmux server or another tab of
      the same terminal window: a multiplexer or terminal emulator is never the client, so the
      pane beside the agent's is not "inside" it.

    The client used to be the nearest ancestor that was not an interpreter, so with a node or
    python host it was often the tmux server itself, and every approver in another pane was
    refused. An interpreter is now a host; an approver started by a Python harness that runs
    the agent is therefore "in the client" (refused by default), where it used to be refused as
    a launcher even with ``allow_approver_in_client``.
    """
    if descends_from(approver, requester.process):
        raise ApproverRefused("the approver runs inside the requesting process")
    for proc in requester.wrappers():
        if descends_from(approver, proc):
            raise ApproverRefused("the approver runs inside the requester's own launcher")
    client = requester.client()
    if client is not None and descends_from(approver, client) and not allow_in_client:
        raise ApproverRefused(
            "the approver runs inside the requester's client",
            hint="approve from another terminal, or set allow_approver_in_client = true",
        )
