"""Run `sp` on a real pseudo-terminal, as a person would, and type into it."""

from __future__ import annotations

import fcntl
import os
import select
import subprocess
import termios
import time
from collections.abc import Sequence


class Terminal:
    """A process whose controlling terminal is a pty (getpass reads /dev/tty)."""

    def __init__(self, argv: Sequence[str], env: dict[str, str], cwd: str | None = None) -> None:
        self.master, slave = os.openpty()

        def controlling_tty() -> None:
            os.setsid()
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)

        self.proc = subprocess.Popen(
            list(argv), stdin=slave, stdout=slave, stderr=slave, env=env, cwd=cwd,
            preexec_fn=controlling_tty,
        )  # fmt: skip
        os.close(slave)
        self.seen = ""

    def expect(self, text: str, timeout: float = 30, *, times: int = 1) -> str:
        """Wait until ``text`` has appeared ``times`` times in everything printed so far."""
        deadline = time.monotonic() + timeout
        while self.seen.count(text) < times:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"{text!r} not seen; got {self.seen[-2000:]!r}")
            ready, _, _ = select.select([self.master], [], [], left)
            if ready:
                try:
                    chunk = os.read(self.master, 4096)
                except OSError:
                    chunk = b""
                if not chunk:
                    if text not in self.seen:
                        raise AssertionError(f"{text!r} not seen before exit; {self.seen!r}")
                    break
                self.seen += chunk.decode("utf-8", "replace")
        return self.seen

    def type(self, line: str) -> None:
        os.write(self.master, line.encode() + b"\r")

    def wait(self, timeout: float = 30) -> int:
        deadline = time.monotonic() + timeout
        try:
            while time.monotonic() < deadline:
                ready, _, _ = select.select([self.master], [], [], 0.2)
                if ready:
                    try:
                        chunk = os.read(self.master, 4096)
                    except OSError:
                        chunk = b""
                    self.seen += chunk.decode("utf-8", "replace")
                    if not chunk and self.proc.poll() is not None:
                        break
                elif self.proc.poll() is not None:
                    break
            return self.proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        finally:
            os.close(self.master)
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
