"""The revocation notice: a random value in the gateway's socket folder, replaced before the
gateway answers anything that ends a standing access token.

The HTTP context server may reuse the gateway's "this token stands" (``oauth_check``) only while
the notice still holds the value it read before asking (see
``context_server/http/standing.py``). So every change that can turn a standing answer into a
refusal replaces the value first -- a client revoked, a token family ended (refresh reuse, code
replay, the client's own revocation, eviction), the vault locked, the gateway started -- and a
``sp context clients revoke`` that has returned is seen by the next request, as when every
request asked.

The file holds no secret (16 random bytes in hex) and is readable by the context server; only
the gateway can replace it (its folder admits no one else's entries). It is written beside the
target and renamed over it, so a reader sees the old value or the new one; it is not fsynced:
it matters only to processes running now. If it cannot be replaced, it is removed, and a context
server that finds no notice asks the gateway on every request.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import threading
from pathlib import Path

log = logging.getLogger(__name__)

NOTICE_MODE = 0o644


class RevocationNotice:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()

    def publish(self) -> None:
        """Replace the value; on any failure, remove the notice (every request then asks)."""
        with self._lock:
            temp = self.path.with_name(f".{self.path.name}.{secrets.token_hex(8)}")
            try:
                fd = os.open(
                    temp,
                    os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                    NOTICE_MODE,
                )
                try:
                    os.fchmod(fd, NOTICE_MODE)  # the umask must not make it unreadable
                    os.write(fd, (secrets.token_hex(16) + "\n").encode("ascii"))
                finally:
                    os.close(fd)
                os.rename(temp, self.path)
            except OSError as exc:
                with contextlib.suppress(OSError):
                    temp.unlink()
                log.error("the revocation notice could not be replaced (%s)", exc.strerror)
                self._remove()

    def withdraw(self) -> None:
        """The gateway is stopping: no value stands for it any more."""
        with self._lock:
            self._remove()

    def _remove(self) -> None:
        try:
            self.path.unlink()
        except FileNotFoundError:
            pass
        except OSError as exc:  # cannot happen in our own folder; said loudly if it does
            log.error("the revocation notice could not be removed (%s)", exc.strerror)
