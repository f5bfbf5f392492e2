"""Lease ids an OpenBao/Vault server issued to the gateway and not yet revoked, kept in the data
folder so that the next unlock revokes the ones a crash left open."""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from pathlib import Path

log = logging.getLogger("safeport.gateway")


class PendingLeases:
    """Lease ids issued and not yet revoked, in a small file that outlives a crash (ids are
    identifiers, not secrets; the file holds nothing that grants access)."""

    def __init__(self, path: Path | None) -> None:
        self._path = path
        self._lock = threading.Lock()

    def add(self, server_id: str, lease_id: str) -> None:
        with self._lock:
            items = self._read()
            items.append({"source": server_id, "lease_id": lease_id, "at": time.time()})
            self._write(items)

    def remove(self, lease_id: str) -> None:
        with self._lock:
            self._write([item for item in self._read() if item.get("lease_id") != lease_id])

    def entries(self) -> list[tuple[str, str]]:
        with self._lock:
            return [(str(i["source"]), str(i["lease_id"])) for i in self._read()]

    def _read(self) -> list[dict[str, object]]:
        if self._path is None:
            return []
        try:
            data = json.loads(self._path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return []
        except (OSError, ValueError):
            log.error("the pending leases file %s cannot be read", self._path)
            return []
        return [item for item in data if isinstance(item, dict)] if isinstance(data, list) else []

    def _write(self, items: list[dict[str, object]]) -> None:
        if self._path is None:
            return
        temporary = self._path.with_suffix(".tmp")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(items, out)
            out.flush()
            os.fsync(out.fileno())
        temporary.replace(self._path)
