"""Signed checkpoint heads sent to syslog (RFC 5424), so evidence also leaves the machine.

Whoever runs as the gateway's user can rewrite every file it keeps, checkpoint.json and the vault
included, and so cut the journals consistently. A copy of each signed head in the log pipe a
team already forwards (the local socket, or a collector over UDP/TCP) is out of that reach: a
later journal that does not hold a head the collector received was cut.

One message per checkpoint, one structured-data element per journal, the signature included so
the collector's copy can be checked with the vault's public key::

    <37>1 2026-12-01T18:00:00.000000Z host safeport 4242 checkpoint
      [head@32473 journal="actions" seq="184" hash="…" signed_at="…" signer="SHA256:…"
       signature="…"] journal heads signed

Sending never blocks or fails an action: messages go through a small queue to one thread; a
full queue drops the message, and a failing target is logged once until it works again.
"""

from __future__ import annotations

import base64
import contextlib
import logging
import queue
import socket
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

from safeport.shared.schemas.config import SYSLOG_TARGET
from safeport.vault.interface import Checkpoint

log = logging.getLogger("safeport.gateway")

# The local syslog daemon's socket: journald/rsyslog on Linux, syslogd on macOS.
LOCAL_SOCKET = "/var/run/syslog" if sys.platform == "darwin" else "/dev/log"
# LOG_AUTH (4) * 8 + LOG_NOTICE (5): security evidence, where auth.log-style rules look.
PRIORITY = 37
# 32473 is the enterprise number RFC 5612 reserves for documentation and examples; a site that
# wants its own registered number can map the SD-ID in its collector.
SD_ID = "head@32473"
APP_NAME = "safeport"
MSG_ID = "checkpoint"
QUEUE_SIZE = 64
SEND_TIMEOUT_S = 2.0

Transport = Literal["local", "udp", "tcp", "off"]


@dataclass(frozen=True)
class SyslogTarget:
    transport: Transport
    host: str = ""
    port: int = 0
    path: str = LOCAL_SOCKET

    @classmethod
    def parse(cls, text: str, *, local_path: str = LOCAL_SOCKET) -> SyslogTarget:
        """The ``[gateway] syslog`` value (already validated by the config schema)."""
        match = SYSLOG_TARGET.fullmatch(text)
        if match is None:
            raise ValueError(f"{text!r} is not a syslog target")
        if text in ("local", "off"):
            return cls(transport="local" if text == "local" else "off", path=local_path)
        proto: Transport = "udp" if match["proto"] == "udp" else "tcp"
        return cls(transport=proto, host=match["host"].strip("[]"), port=int(match["port"]))

    def describe(self) -> str:
        if self.transport in ("local", "off"):
            return self.path if self.transport == "local" else "off"
        return f"{self.transport}://{self.host}:{self.port}"


def format_heads(
    checkpoints: Sequence[Checkpoint], *, hostname: str, pid: int, now: datetime
) -> bytes:
    """One RFC 5424 message carrying every signed head (pure)."""
    timestamp = now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    elements = "".join(
        f"[{SD_ID}"
        + "".join(
            f' {name}="{_sd_escape(value)}"'
            for name, value in (
                ("journal", cp.journal),
                ("seq", str(cp.head.seq)),
                ("hash", cp.head.hash),
                ("signed_at", cp.signed_at.isoformat()),
                ("signer", cp.signer_fingerprint),
                ("signature", base64.b64encode(cp.signature).decode("ascii")),
            )
        )
        + "]"
        for cp in checkpoints
    )
    summary = ", ".join(f"{cp.journal} {cp.head.seq}" for cp in checkpoints)
    header = f"<{PRIORITY}>1 {timestamp} {_header_field(hostname, 255)} {APP_NAME} {pid} {MSG_ID}"
    return f"{header} {elements or '-'} journal heads signed: {summary}".encode("ascii", "replace")


class SyslogSender:
    """Delivers messages to one target from a background thread; :meth:`send` never blocks."""

    def __init__(self, target: SyslogTarget) -> None:
        self.target = target
        self._queue: queue.Queue[bytes | None] = queue.Queue(maxsize=QUEUE_SIZE)
        self._sock: socket.socket | None = None
        self._failing = False
        self._thread = threading.Thread(target=self._run, name="sp-syslog", daemon=True)
        self._thread.start()

    def send(self, message: bytes) -> None:
        try:
            self._queue.put_nowait(message)
        except queue.Full:
            self._failed("the queue is full (the target is not keeping up)")

    def close(self) -> None:
        with contextlib.suppress(queue.Full):  # a full queue's thread ends with the process
            self._queue.put_nowait(None)
        self._thread.join(timeout=SEND_TIMEOUT_S)

    def _run(self) -> None:
        while (message := self._queue.get()) is not None:
            try:
                self._deliver(message)
            except OSError as exc:
                self._disconnect()
                self._failed(exc.strerror or type(exc).__name__)
            else:
                if self._failing:
                    log.info("syslog target %s works again", self.target.describe())
                self._failing = False
        self._disconnect()

    def _deliver(self, message: bytes) -> None:
        if self._sock is None:
            self._sock = self._connect()
        if self.target.transport == "tcp":
            # RFC 6587 octet counting: the length frames the message, whatever it holds.
            self._sock.sendall(b"%d " % len(message) + message)
        else:
            self._sock.send(message)

    def _connect(self) -> socket.socket:
        target = self.target
        if target.transport == "local":
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            address: str | tuple[object, ...] = target.path
        else:
            kind = socket.SOCK_STREAM if target.transport == "tcp" else socket.SOCK_DGRAM
            family, _, _, _, address = socket.getaddrinfo(target.host, target.port, type=kind)[0]
            sock = socket.socket(family, kind)
        sock.settimeout(SEND_TIMEOUT_S)
        try:
            sock.connect(address)
        except OSError:
            sock.close()
            raise
        return sock

    def _disconnect(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def _failed(self, why: str) -> None:
        if not self._failing:
            log.warning(
                "could not send checkpoint heads to syslog (%s): %s; the action goes on",
                self.target.describe(),
                why,
            )
        self._failing = True


def _sd_escape(value: str) -> str:
    """RFC 5424 §6.3.3: '"', '\\' and ']' are escaped inside a PARAM-VALUE."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("]", "\\]")


def _header_field(value: str, limit: int) -> str:
    """A header field is 1..limit printable ASCII characters without spaces, or "-"."""
    clean = "".join(ch for ch in value if 33 <= ord(ch) <= 126)[:limit]
    return clean or "-"
