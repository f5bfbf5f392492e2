"""Where `sp vault …` sends its work: to the vault file, or to the gateway that holds it.

A running gateway holds the unlocked state and saves the file itself; editing the file under it
would fork the two (its next save would then refuse with "changed since it was unlocked"), so
while a gateway listens every vault command goes to it over control.sock, and the commands it
cannot serve that way (changing the passphrase or keyring unlock) are refused with what to do.
In dedicated-account mode the file belongs to the gateway's account, so the gateway is always
asked. Only when nobody listens does `sp` open the file itself.
"""

from __future__ import annotations

import socket
from pathlib import Path

from safeport.gateway_client.vault_backend import GatewayVaultBackend
from safeport.shared.paths import SafeportPaths
from safeport.vault import FileVaultBackend, VaultBackend, VaultFile


def vault_backend_for(paths: SafeportPaths) -> VaultBackend:
    """The gateway's backend in dedicated mode or while a gateway listens, else the file's."""
    if paths.dedicated or gateway_listening(paths.control_socket):
        return GatewayVaultBackend(paths)
    return FileVaultBackend(VaultFile.at(paths))


def gateway_listening(path: Path) -> bool:
    """Whether something accepts connections on ``path`` (nothing is sent; a stale socket file
    left by a gateway that is gone refuses the connection)."""
    if not path.exists():
        return False
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(1.0)
    try:
        probe.connect(str(path))
    except OSError:
        return False
    finally:
        probe.close()
    return True
