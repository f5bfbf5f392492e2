"""The authorization endpoint: a known client, its exact redirect URI, PKCE S256, this resource,
then a card the human answers (every time: see :meth:`AuthorizationEndpoint.authorize`).

The browser page (rendered by the context server) shows the request's user code and waits with
``oauth_authorize_wait``; the card shows the same code. A problem found before the redirect URI
is known good is an error page (kind ``error``), never a redirect, so the endpoint cannot be
used as an open redirector.
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from safeport.action_gateway.approvals.broker import ApprovalRefused
from safeport.action_gateway.approvals.cards import ClientAuthorization
from safeport.action_gateway.identity.model import PeerIdentity
from safeport.action_gateway.remote_clients import authorization_rules as rules
from safeport.action_gateway.remote_clients.client_book import Approval, ClientState, RemoteClient
from safeport.action_gateway.remote_clients.issuer import Issuer
from safeport.action_gateway.remote_clients.metadata_documents import (
    DocumentRefused,
    DocumentRefusedAgain,
    MetadataDocuments,
    is_document_url,
)
from safeport.action_gateway.remote_clients.throttle import Throttle
from safeport.action_gateway.remote_clients.token_ledger import Binding
from safeport.shared.schemas.oauth_wire import (
    OAuthAuthorize,
    OAuthAuthorizeResult,
    OAuthAuthorizeWait,
    OAuthAuthorizeWaitResult,
)
from safeport.shared.visible_text import inert

MAX_WAITING = 16
PER_MINUTE = 60  # authorization requests that reach a card or a code, from every client
# After its card closes, an answer waits this long for the browser page to collect it.
COLLECT_S = 120.0


class Asker:
    """What the endpoint needs of the approvals: one card, answered (blocking)."""

    def __init__(
        self,
        ask: Callable[[PeerIdentity, ClientAuthorization, float], str],
        timeout_s: Callable[[], float],
    ) -> None:
        self.ask = ask
        self.timeout_s = timeout_s


@dataclass
class _Waiting:
    id: str
    user_code: str
    binding: Binding
    ask: rules.AuthorizeAsk
    until: float
    done: threading.Event = field(default_factory=threading.Event)
    state: str = "pending"
    location: str | None = None
    # What the card shows for each of ``binding.roots`` (the directory), not what is bound.
    directories: tuple[str, ...] = ()
    asked_profile: str = ""  # what the client asked for (more than granted: actions are off)


class AuthorizationEndpoint:
    def __init__(self, issuer: Issuer, documents: MetadataDocuments, asker: Asker) -> None:
        self._issuer = issuer
        self._documents = documents
        self._asker = asker
        self._lock = threading.Lock()
        self._waiting: dict[str, _Waiting] = {}
        self._requests = Throttle(PER_MINUTE, 60.0, issuer.clock)

    def authorize(self, peer: PeerIdentity, request: OAuthAuthorize) -> OAuthAuthorizeResult:
        params = request.params
        issuer = rules.issuer_of(request.public_url)
        self._issuer.key()  # locked: no authorization at all (VaultLocked)
        state = self._client(params.get("client_id", ""))
        redirects = state.client.redirect_uris if state is not None else None
        problem = rules.authorize_client_problem(params, redirects)
        if problem is not None or state is None:
            assert problem is not None
            return _error_page(problem)
        redirect_uri = params.get("redirect_uri") or state.client.redirect_uris[0]
        problem = rules.authorize_request_problem(params, request.public_url)
        if problem is not None and (not state.approvals or state.revoked_at is not None):
            # Anyone can register any https redirect URI: until the human has trusted the
            # client, an automatic error redirect would make this an open redirector (RFC 9700
            # 4.11.2), so the error is a page.
            return _error_page(problem)
        if problem is not None:
            location = rules.redirect_location(
                redirect_uri,
                issuer,
                params.get("state"),
                "error",
                problem.error,
                problem.description,
            )
            return OAuthAuthorizeResult(kind="redirect", location=location, status=302)
        roots = tuple(sorted(set(request.roots)))
        named = dict(zip(request.roots, request.root_dirs, strict=False))
        binding = self._binding(request, state.client, issuer, roots)
        budget = self._requests.take()
        if budget == "refused_first":
            self._issuer.journal("oauth.authorizations_throttled", {"per_minute": PER_MINUTE})
        waiting = None
        if budget == "ok":
            waiting = self._wait_for(binding, rules.authorize_ask(params, redirect_uri))
        if waiting is None:
            return _error_page(rules.Problem("temporarily_unavailable", "too many requests wait"))
        waiting.asked_profile = request.profile
        waiting.directories = tuple(named.get(root, "") for root in roots)
        # Always a card, even for a client approved before with this redirect and these roots:
        # its id and redirect URI are public and no one here knows whose browser asks, so the
        # code would go to whoever started the request (the waiting page's redirect carries it)
        # with a PKCE verifier of their own. A client keeps its access by refreshing.
        card = self._card(waiting, state.client, peer)
        threading.Thread(target=card, name="sp-oauth-card", daemon=True).start()
        return OAuthAuthorizeResult(
            kind="wait",
            request_id=waiting.id,
            user_code=waiting.user_code,
            # The browser page shows both: inert, like every text of the card it mirrors.
            client_name=inert(state.client.name),
            redirect_host=inert(rules.redirect_host(redirect_uri)),
        )

    def wait(self, request: OAuthAuthorizeWait) -> OAuthAuthorizeWaitResult:
        with self._lock:
            self._expire()
            waiting = self._waiting.get(request.request_id)
        if waiting is None:
            return OAuthAuthorizeWaitResult(state="expired")
        waiting.done.wait(request.wait_s)
        with self._lock:
            if waiting.state == "pending":
                return OAuthAuthorizeWaitResult(state="pending")
            self._waiting.pop(waiting.id, None)  # an answer is collected once
        if waiting.state == "expired":
            return OAuthAuthorizeWaitResult(state="expired")
        state = "approved" if waiting.state == "approved" else "denied"
        return OAuthAuthorizeWaitResult(state=state, location=waiting.location)

    # -- internals ----------------------------------------------------------------------------

    def _client(self, client_id: str) -> ClientState | None:
        """The client behind ``client_id``: its metadata document (fetched, cached) or its
        registration here."""
        book = self._issuer.book()
        if not is_document_url(client_id):
            return book.get(client_id) if client_id else None
        try:
            document = self._documents.get(client_id)
        except DocumentRefusedAgain:
            return None
        except DocumentRefused as exc:
            self._issuer.journal(
                "oauth.document_refused", {"client": client_id[:200], "reason": exc.message}
            )
            return None
        known = book.get(client_id)
        same = known is not None and known.client.redirect_uris == document.redirect_uris
        if known is not None and same and known.client.name == document.name:
            return known
        client = RemoteClient(
            client_id,
            document.name,
            "metadata-document",
            document.redirect_uris,
            self._issuer.clock(),
        )
        self._issuer.journal("oauth.client_registered", _client_record(client))
        return book.register(client)

    def _binding(
        self, request: OAuthAuthorize, client: RemoteClient, issuer: str, roots: tuple[str, ...]
    ) -> Binding:
        """What an approval would bind: the client, this resource and issuer, the roots, and
        the profile granted (actions only while the gateway's settings allow them)."""
        return Binding(
            client.client_id,
            client.name,
            rules.resource_of(request.public_url),
            issuer,
            roots,
            rules.granted_profile(request.profile, actions_on=self._issuer.settings().actions),
        )

    def _wait_for(self, binding: Binding, ask: rules.AuthorizeAsk) -> _Waiting | None:
        with self._lock:
            self._expire()
            if len(self._waiting) >= MAX_WAITING:
                return None
            timeout = self._asker.timeout_s()
            waiting = _Waiting(
                id=secrets.token_urlsafe(32),
                user_code=rules.user_code_from(secrets.choice),
                binding=binding,
                ask=ask,
                until=self._issuer.clock() + timeout + COLLECT_S,
            )
            self._waiting[waiting.id] = waiting
            return waiting

    def _card(
        self, waiting: _Waiting, client: RemoteClient, peer: PeerIdentity
    ) -> Callable[[], None]:
        source = (
            "registered here"
            if client.source == "registered"
            else rules.redirect_host(client.client_id)
        )
        question = ClientAuthorization(
            request_id=waiting.id,
            client_id=client.client_id,
            client_name=client.name,
            metadata_from=source,
            redirect_host=rules.redirect_host(waiting.ask.redirect_uri),
            roots=waiting.binding.roots,
            root_dirs=waiting.directories,
            profile=waiting.binding.profile,
            asked_profile=waiting.asked_profile,
            token_minutes=self._issuer.access_minutes(),
            user_code=waiting.user_code,
        )

        def run() -> None:
            try:
                outcome = self._asker.ask(peer, question, float(self._asker.timeout_s()))
            except ApprovalRefused as exc:
                outcome = exc.outcome
            except Exception:  # the page must not wait forever on a failure here
                outcome = "denied"
            self._answer(waiting, approved=outcome == "approved", by=f"card: {outcome}")

        return run

    def _answer(self, waiting: _Waiting, *, approved: bool, by: str) -> None:
        ask = waiting.ask
        binding = waiting.binding
        record: dict[str, object] = {
            "client": binding.client_id,
            "roots": list(binding.roots),
            "profile": binding.profile,
            "by": by,
        }
        if waiting.asked_profile and waiting.asked_profile != binding.profile:
            record["asked_profile"] = waiting.asked_profile
        if approved:
            try:
                self._issuer.book().approve(
                    binding.client_id,
                    Approval(
                        ask.redirect_uri, binding.roots, binding.profile, self._issuer.clock()
                    ),
                )
                code = self._issuer.ledger.new_code(
                    binding, ask.redirect_uri, ask.code_challenge, redirect_named=ask.redirect_named
                )
            except Exception:  # locked meanwhile: the answer is a denial
                approved = False
            else:
                waiting.location = rules.redirect_location(
                    ask.redirect_uri, binding.issuer, ask.state, "code", code
                )
        if not approved:
            waiting.location = rules.redirect_location(
                ask.redirect_uri, binding.issuer, ask.state, "error", "access_denied"
            )
        self._issuer.journal("oauth.approved" if approved else "oauth.denied", record)
        with self._lock:
            waiting.state = "approved" if approved else "denied"
        waiting.done.set()

    def _expire(self) -> None:
        """Caller holds the lock."""
        now = self._issuer.clock()
        for key in [k for k, w in self._waiting.items() if w.until <= now]:
            gone = self._waiting.pop(key)
            gone.state = "expired"
            gone.done.set()


def _error_page(problem: rules.Problem) -> OAuthAuthorizeResult:
    return OAuthAuthorizeResult(
        kind="error", status=400, error=problem.error, error_description=problem.description
    )


def _client_record(client: RemoteClient) -> dict[str, object]:
    return {
        "client": client.client_id[:200],
        "name": client.name,
        "source": client.source,
        "redirect_hosts": sorted({rules.redirect_host(u) for u in client.redirect_uris}),
    }
