"""One logged-in hvac client per declared OpenBao/Vault server, and the errors translated once.

The client talks to nothing but the declared address, verifies the server against the pinned
CA file alone (never the system roots, never ``REQUESTS_CA_BUNDLE``), ignores the environment's
proxies (``trust_env = False``: an ``HTTPS_PROXY`` would otherwise carry the gateway's token
elsewhere), and bounds every request by the server's ``timeout_s``. The login token lives in
this process's memory only, until shortly before it expires.

Every hvac and requests exception becomes an :class:`ActionError` here, with a fixed sentence
that names the server and what to do: hvac's own messages quote server answers and URLs, and
none of them may reach an agent.
"""

from __future__ import annotations

import contextlib
import os
import stat
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import hvac
import hvac.exceptions
import requests

from safeport.action_gateway.executors.https.trust_files import UntrustedFile, check_trust_file
from safeport.action_gateway.executors.interface import ActionError
from safeport.shared.schemas.config_sources import OpenBaoServer
from safeport.vault.secrets import TokenSecret

# Renew a login this long before its token expires, so no action starts on a dying token.
_RENEW_MARGIN_S = 30.0
# A server that answered this gateway this recently is taken as unsealed, reachable and
# accepting its token: back-to-back calls (a session's) make one request each, not two. A seal
# inside that window is still met, by the fetch itself, after the approval.
CONFIRMED_FRESH_S = 1.0
_MAX_TOKEN_FILE = 4096
SecretIdReader = Callable[[str], TokenSecret]


@contextlib.contextmanager
def translate_openbao_errors(server_id: str, what: str) -> Iterator[None]:
    """Turn whatever hvac or requests raise during ``what`` into an :class:`ActionError`."""
    where = f"OpenBao server {server_id!r}"
    try:
        yield
    except hvac.exceptions.VaultDown as exc:
        raise ActionError(
            "source_sealed",
            f"{where} is sealed: no credential can be read from it",
            hint="unseal it (`bao operator unseal`), then propose again",
        ) from exc
    except (hvac.exceptions.Unauthorized, hvac.exceptions.Forbidden) as exc:
        raise ActionError(
            "source_refused",
            f"{where} refused the gateway {what}",
            hint="check the gateway's OpenBao policy grants this path or role (`sp doctor`)",
        ) from exc
    except hvac.exceptions.InvalidPath as exc:
        raise ActionError(
            "source_refused",
            f"{where} has nothing at the declared path for {what}",
            hint="check the credential's path or role in gateway.toml against the server",
        ) from exc
    except hvac.exceptions.VaultError as exc:
        raise ActionError(
            "source_refused",
            f"{where} refused {what} ({type(exc).__name__})",
            hint="`sp doctor` checks the server, the login and each declared path",
        ) from exc
    except _Redirected as exc:
        raise ActionError(
            "source_unreachable",
            f"{where} answered {what} with a redirect, which the gateway does not follow",
            hint="set address to the server that serves requests itself (the active node)",
        ) from exc
    except requests.exceptions.SSLError as exc:
        raise ActionError(
            "source_tls",
            f"{where} presented a certificate that does not chain to its pinned ca_file",
            hint="if the server's CA really changed, check it out of band and update ca_file",
        ) from exc
    except requests.exceptions.Timeout as exc:
        raise ActionError(
            "source_timeout",
            f"{where} did not answer in time for {what}",
            hint="check the server's load and network, or raise its timeout_s",
        ) from exc
    except (requests.exceptions.RequestException, OSError) as exc:
        raise ActionError(
            "source_unreachable",
            f"{where} is unreachable; {what} was not done",
            hint="check that the server runs and its address in gateway.toml",
        ) from exc


class _Redirected(requests.exceptions.RequestException):
    """The server answered with a redirect (raised before requests could follow it)."""


def _refuse_redirect(response: requests.Response, *args: object, **kwargs: object) -> None:
    # hvac follows redirects by default, and requests strips only `Authorization` on the way:
    # the `X-Vault-Token` header and a login's body (the AppRole secret id) would go to any
    # host, even over plain http, that a proxy or a standby named in its Location.
    if response.is_redirect or 300 <= response.status_code < 400:
        raise _Redirected(f"redirect {response.status_code}")


class _DeadlineSession(requests.Session):
    """A session whose every request ends within ``deadline_s`` in all: requests' own timeout
    bounds each socket read, so a server dripping a byte at a time would hold a proposal (and
    the server's lock) for as long as it liked. A request over its deadline is left to its
    worker thread, which ends with the connection."""

    def __init__(self, deadline_s: float) -> None:
        super().__init__()
        self.deadline_s = deadline_s

    def request(self, *args: Any, **kwargs: Any) -> requests.Response:
        outcome: list[requests.Response | BaseException] = []

        def run() -> None:
            try:
                outcome.append(super(_DeadlineSession, self).request(*args, **kwargs))
            except BaseException as exc:  # handed to the caller's thread below
                outcome.append(exc)

        worker = threading.Thread(target=run, name="sp-openbao-request", daemon=True)
        worker.start()
        worker.join(self.deadline_s)
        if not outcome:
            raise requests.exceptions.Timeout("the request outlived its deadline")
        if isinstance(outcome[0], BaseException):
            raise outcome[0]
        return outcome[0]


class ServerSession:
    """A client for one server and the login it holds (thread-safe; one login at a time)."""

    def __init__(
        self,
        server_id: str,
        server: OpenBaoServer,
        trust_owners: frozenset[int],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.server_id = server_id
        self.server = server
        self._trust_owners = trust_owners
        self._clock = clock
        self._lock = threading.Lock()
        self._client: hvac.Client | None = None
        self._expires = 0.0
        self._answered_at = float("-inf")

    def logged_in(self, secret_id: SecretIdReader, *, confirm: bool = True) -> hvac.Client:
        """A client whose token holds: logs in when there is none or it is near its end, else
        (``confirm``) asks the server about the token once, which also finds it sealed (503),
        unreachable, slow or off the pin, and a token revoked meanwhile (then logs in again).
        Without ``confirm`` (the fetch right after a confirmed check) no request is made."""
        with self._lock:
            client = self._client or self._new_client()
            now = self._clock()
            if self._client is None or now >= self._expires:
                self._client = None  # a login that fails leaves no client with a stale token
                self._login(client, secret_id)
            elif confirm and now - self._answered_at >= CONFIRMED_FRESH_S:
                try:
                    with translate_openbao_errors(self.server_id, "a token check"):
                        client.auth.token.lookup_self()
                except ActionError as exc:
                    if exc.failure != "source_refused":
                        raise
                    self._client = None
                    self._login(client, secret_id)  # revoked or expired early: once more
            self._client = client
            self._answered_at = self._clock()
            return client

    def answered(self) -> None:
        """The server just served a request with the gateway's token (a fetch)."""
        with self._lock:
            self._answered_at = self._clock()

    def forget(self) -> None:
        """Drop the login (vault lock, gateway stop): the next use logs in again."""
        with self._lock:
            if self._client is not None:
                self._client.adapter.close()
            self._client, self._expires = None, 0.0

    def _new_client(self) -> hvac.Client:
        try:
            check_trust_file(self.server.ca_file, self._trust_owners)
        except UntrustedFile as exc:
            raise ActionError(
                "source_tls",
                f"OpenBao server {self.server_id!r}: its ca_file is not a file only root or the "
                "gateway's account controls",
                hint="keep the CA where only root can change it",
            ) from exc
        session = _DeadlineSession(self.server.timeout_s)
        session.trust_env = False
        # hvac lets a session's own `verify` (True by default: the system roots) win over the
        # `verify` argument, so the pin is set on the session itself.
        session.verify = self.server.ca_file
        session.max_redirects = 0
        session.hooks["response"].append(_refuse_redirect)
        return hvac.Client(
            url=self.server.address.rstrip("/"),
            namespace=self.server.namespace,
            session=session,
            timeout=self.server.timeout_s,
            allow_redirects=False,
        )

    def _login(self, client: hvac.Client, secret_id: SecretIdReader) -> None:
        auth = self.server.auth
        client.token = ""
        with translate_openbao_errors(self.server_id, "a login"):
            try:
                if auth.method == "approle":
                    assert auth.role_id is not None and auth.secret_id_credential is not None
                    secret = secret_id(auth.secret_id_credential)
                    answer: dict[str, Any] = client.auth.approle.login(
                        role_id=auth.role_id,
                        secret_id=secret.token.reveal().decode("utf-8"),
                        mount_point=auth.mount,
                    )
                    lease_s = float(answer["auth"]["lease_duration"])
                else:
                    assert auth.token_file is not None
                    client.token = _read_token_file(self.server_id, auth.token_file)
                    looked: dict[str, Any] = client.auth.token.lookup_self()
                    lease_s = float(looked["data"].get("ttl") or 0) or 3600.0
            except (hvac.exceptions.InvalidRequest, hvac.exceptions.Forbidden) as exc:
                client.token = ""
                raise ActionError(
                    "source_auth",
                    f"OpenBao server {self.server_id!r} refused the gateway's login "
                    f"({auth.method})",
                    hint=_LOGIN_HINT[auth.method],
                ) from exc
            except (KeyError, TypeError, ValueError):
                # An answer that is not a login's (hvac reads it with plain subscripts): refused,
                # not an exception out of the gateway that quotes what the server sent.
                client.token = ""
                raise ActionError(
                    "source_refused",
                    f"OpenBao server {self.server_id!r} answered the login with no login",
                ) from None
        self._expires = self._clock() + max(lease_s - _RENEW_MARGIN_S, 1.0)


_LOGIN_HINT = {
    "approle": "the AppRole secret id may be wrong or expired: issue a new one and store it "
    "with `sp vault rotate` under the secret_id_credential",
    "token-file": "the token in token_file may be wrong, expired or revoked: write a new one",
}


def _read_token_file(server_id: str, path: str) -> str:
    """The token, from a file only the gateway's account (or root) owns and no one else reads."""
    try:
        # O_NONBLOCK: a FIFO put in its place would block the open (and the server's lock)
        # until someone wrote to it; it is refused below as not a regular file.
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError as exc:
        raise ActionError(
            "source_auth",
            f"OpenBao server {server_id!r}: token_file cannot be opened ({exc.strerror})",
            hint="create it as the gateway's account with mode 600",
        ) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ActionError(
                "source_auth",
                f"OpenBao server {server_id!r}: token_file is not a regular file",
                hint="write the token to a plain file owned by the gateway's account, mode 600",
            )
        if st.st_uid not in (0, os.geteuid()) or st.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
            raise ActionError(
                "source_auth",
                f"OpenBao server {server_id!r}: token_file is readable by others or owned by "
                "another account",
                hint="chown it to the gateway's account and chmod 600",
            )
        data = os.read(fd, _MAX_TOKEN_FILE + 1)
    finally:
        os.close(fd)
    token = data.decode("ascii", "replace").strip()
    if not token or len(data) > _MAX_TOKEN_FILE or any(c.isspace() for c in token):
        raise ActionError(
            "source_auth", f"OpenBao server {server_id!r}: token_file holds no single token"
        )
    return token
