"""The identity probe for this platform, chosen in one place so that the model imports no
platform code (the platform modules import the model)."""

from __future__ import annotations

import os

from safeport.action_gateway.identity.model import IdentityProbe


def default_probe() -> IdentityProbe:
    """The probe for this platform."""
    if os.uname().sysname == "Darwin":  # pragma: no cover - exercised on macOS only
        from safeport.action_gateway.identity.macos import MacProbe

        return MacProbe()
    from safeport.action_gateway.identity.linux import LinuxProbe

    return LinuxProbe()
