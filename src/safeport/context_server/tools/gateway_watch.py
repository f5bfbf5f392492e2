"""Follow the gateway while the session runs: its catalog decides the typed tools.

A client may start before the gateway, or before the human unlocks it or accepts a policy. The
watch asks for the catalog every few seconds and hands a newly served one to
:class:`TypedTools`, which swaps the tools and tells the client. While no socket exists the
watch only looks at the folder (no connection is attempted), so a machine without a gateway
pays one ``stat`` per interval; with one, a catalog request costs the gateway one short
connection.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
from pydantic import ValidationError

from safeport.context_server.gateway_link import GatewayLink, GatewayRefusal, GatewayUnavailable
from safeport.context_server.tools.typed_tools import TypedTools
from safeport.shared.schemas.catalog import Catalog

log = logging.getLogger(__name__)

WATCH_EVERY_S = 2.0
CATALOG_TIMEOUT_S = 3.0


class GatewayWatch:
    def __init__(
        self, link: GatewayLink, typed: TypedTools, every_s: float = WATCH_EVERY_S
    ) -> None:
        self._link = link
        self._typed = typed
        self._every_s = every_s

    async def run(self) -> None:
        """Poll until cancelled (the session ends)."""
        while True:
            await self.poll()
            await anyio.sleep(self._every_s)

    async def poll(self) -> Catalog | None:
        """One look at the gateway; the catalog it serves, or None (and why, on the tools)."""
        if not _exists(self._link.socket_path):
            self._typed.waiting("unavailable")
            return None
        try:
            async with asyncio.timeout(CATALOG_TIMEOUT_S):
                catalog = parse_catalog(await self._link.catalog())
        except GatewayUnavailable:
            self._typed.waiting("unavailable")
            return None
        except GatewayRefusal as refusal:
            self._typed.waiting(refusal.code)
            return None
        except TimeoutError:
            self._typed.waiting("unavailable")
            return None
        if await self._typed.follow(catalog):
            log.info("typed action tools follow the policy %s", catalog.policy[:19])
        return catalog


def parse_catalog(raw: Mapping[str, Any]) -> Catalog:
    """The gateway's catalog, parsed with the model the gateway built it with."""
    try:
        return Catalog.model_validate(raw)
    except ValidationError:
        raise GatewayRefusal(
            "internal", "the gateway sent a catalog outside the protocol"
        ) from None


def _exists(path: Path) -> bool:
    try:
        path.lstat()
    except OSError:
        return False
    return True
