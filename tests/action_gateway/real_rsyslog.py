"""A real rsyslogd (Debian `rsyslog`) on 127.0.0.1, started by a test with its own files.

Its own config, pid file and work folder; UDP and TCP inputs on free loopback ports and a Unix
socket in the work folder (imuxsock with the normal parsers, as a site's /dev/log would be); it
writes each message twice: as received (``raw.log``) and as rsyslog's RFC 5424 parser split it
(``parsed.log``: version, app, procid, msgid, structured data), so a test reads back what a
collector would see.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

RSYSLOGD = shutil.which("rsyslogd") or (
    "/usr/sbin/rsyslogd" if Path("/usr/sbin/rsyslogd").exists() else None
)

_CONFIG = """
global(workDirectory="{work}")
module(load="imudp")
module(load="imtcp")
module(load="imuxsock" SysSock.Use="off")
input(type="imudp" address="127.0.0.1" port="{udp}")
input(type="imtcp" address="127.0.0.1" port="{tcp}")
input(type="imuxsock" Socket="{unix}" UseSpecialParser="off" ParseHostname="on"
      CreatePath="off")
template(name="raw" type="string" string="%rawmsg%\\n")
template(name="parsed" type="string"
         string="%protocol-version%|%app-name%|%procid%|%msgid%|%structured-data%\\n")
action(type="omfile" file="{work}/raw.log" template="raw")
action(type="omfile" file="{work}/parsed.log" template="parsed")
"""


@dataclass(frozen=True)
class Rsyslog:
    udp_port: int
    tcp_port: int
    unix_socket: Path
    workdir: Path

    def parsed(self) -> list[str]:
        path = self.workdir / "parsed.log"
        return path.read_text().splitlines() if path.exists() else []

    def raw(self) -> list[str]:
        path = self.workdir / "raw.log"
        return path.read_text().splitlines() if path.exists() else []


def free_port(kind: int = socket.SOCK_STREAM) -> int:
    with socket.socket(socket.AF_INET, kind) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def running_rsyslog(workdir: Path) -> Iterator[Rsyslog]:
    assert RSYSLOGD is not None
    workdir.mkdir(mode=0o700, exist_ok=True)
    server = Rsyslog(
        udp_port=free_port(socket.SOCK_DGRAM),
        tcp_port=free_port(),
        unix_socket=workdir / "log.sock",
        workdir=workdir,
    )
    config = workdir / "rsyslog.conf"
    config.write_text(
        _CONFIG.format(
            work=workdir, udp=server.udp_port, tcp=server.tcp_port, unix=server.unix_socket
        )
    )
    pid_file = workdir / "rsyslogd.pid"
    stderr = (workdir / "rsyslogd.stderr").open("wb")
    proc = subprocess.Popen(
        [RSYSLOGD, "-n", "-f", str(config), "-i", str(pid_file)],
        stdout=subprocess.DEVNULL,
        stderr=stderr,
    )
    try:
        _wait_listening(server, proc)
        yield server
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait()
        stderr.close()


def _wait_listening(server: Rsyslog, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(
                "rsyslogd exited: " + (server.workdir / "rsyslogd.stderr").read_text()
            )
        try:
            with socket.create_connection(("127.0.0.1", server.tcp_port), timeout=0.2):
                if server.unix_socket.exists():
                    return
        except OSError:
            pass
        time.sleep(0.05)
    raise AssertionError("rsyslogd did not start listening")
