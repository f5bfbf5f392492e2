"""One-time keys for sealed journal bodies, derived ahead of the records that will use them.

A key is an ephemeral X25519 key pair's public half and the AES-256-GCM key its exchange with
the audit key gives (about 50 µs of work, which holds the interpreter's lock). A daemon thread
keeps a few ready. It is woken only by :meth:`KeyReserve.prepare`, which a journal calls just
before it waits for an fsync: the derivation then runs while the requesting thread waits on the
disk, instead of taking the interpreter from it at its next system call. It is woken once the
reserve is down to half, and then refills it whole: each wake-up costs both threads a hand-over
of the interpreter and the processor, so it is paid once for several keys, not once for each.
Every key is taken once and then forgotten: each record still has its own ephemeral key, and no
key outlives its record. A forked child drops the keys it inherited, so two processes can never
seal with one key.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True, repr=False)
class BodyKey:
    """An ephemeral public key and the one-time AES key it agrees with the audit key."""

    epk: bytes
    aes_key: bytes

    def __repr__(self) -> str:
        return "BodyKey(<one-time>)"


class KeyReserve:
    """Up to ``size`` keys derived ahead by one daemon thread, started at the first take."""

    def __init__(self, derive: Callable[[], BodyKey], size: int) -> None:
        self._derive = derive
        self._size = size
        self._keys: list[BodyKey] = []
        self._wake = threading.Condition(threading.Lock())
        self._pid = os.getpid()
        self._thread: threading.Thread | None = None
        self._stopped = False

    def take(self) -> BodyKey:
        """A key never handed out before: a ready one, or one derived now if none is."""
        if self._size <= 0:
            return self._derive()
        with self._wake:
            if self._pid != os.getpid():
                self._forget_after_fork()
            key = self._keys.pop() if self._keys else None
        return key if key is not None else self._derive()

    def prepare(self) -> None:
        """The caller is about to wait (on the disk): once half the reserve is taken, derive
        the keys that are missing now."""
        if self._size <= 0:
            return
        with self._wake:
            if self._pid != os.getpid():
                self._forget_after_fork()
            if self._stopped or len(self._keys) > self._size // 2:
                return
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._refill, name="audit-body-keys", daemon=True
                )
                self._thread.start()
            self._wake.notify()

    def stop(self) -> None:
        with self._wake:
            self._stopped = True
            self._keys.clear()
            self._wake.notify()

    def _forget_after_fork(self) -> None:
        # The parent may hand out these very keys: a key reused with the fixed nonce would
        # expose both bodies. The parent's thread does not exist here either.
        self._keys.clear()
        self._pid = os.getpid()
        self._thread = None

    def _refill(self) -> None:
        pid = os.getpid()
        while True:
            with self._wake:
                # Asleep while full; only prepare() wakes it (take() does not: see above).
                while not self._stopped and self._pid == pid and len(self._keys) >= self._size:
                    self._wake.wait()
                if self._stopped or self._pid != pid:
                    return
            key = self._derive()
            with self._wake:
                self._keys.append(key)
            time.sleep(0)  # let a thread back from its fsync run before the next derivation
