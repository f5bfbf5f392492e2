"""Run inside `dbus-run-session`: start gnome-keyring's Secret Service, then drive `sp`.

Prints one JSON object: the result of each step, for the test to judge. Never prints a key.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

home, passphrase_file, vault_id = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
daemon = subprocess.Popen(
    ["gnome-keyring-daemon", "--foreground", "--unlock", "--components=secrets"],
    stdin=subprocess.PIPE,
    stdout=subprocess.DEVNULL,
    stderr=subprocess.DEVNULL,
)
assert daemon.stdin is not None
daemon.stdin.write(b"keyring-login-password")  # unlocks (creates) the login keyring
daemon.stdin.close()


def sp(*args: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-m", "safeport", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "SAFEPORT_HOME": str(home)},
        timeout=60,
    )
    return {"code": done.returncode, "out": done.stdout, "err": done.stderr}


def lookup() -> int:
    """Length of the keyring item for this vault (0 when absent); the value itself stays here."""
    done = subprocess.run(
        ["secret-tool", "lookup", "service", "safeport-vault", "username", vault_id],
        capture_output=True,
        timeout=30,
    )
    return len(done.stdout.strip())


results: dict[str, object] = {}
try:
    # The daemon takes the login password from stdin a moment after it owns the bus name;
    # until then writes fail with "locked". Wait for one probe write to go through.
    import keyring

    deadline = time.monotonic() + 20
    while True:
        try:
            keyring.set_password("safeport-probe", "probe", "ready")
            keyring.delete_password("safeport-probe", "probe")
            break
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
    pf = ("--passphrase-file", passphrase_file)
    results["enable"] = sp("vault", "keyring", "enable", *pf)
    results["item_length"] = lookup()
    results["status"] = sp("vault", "status", "--json")
    results["unlock"] = sp("vault", "unlock", "--keyring")
    results["list"] = sp("vault", "list", "--keyring")
    results["disable"] = sp("vault", "keyring", "disable", *pf)
    results["item_length_after_disable"] = lookup()
    results["unlock_after_disable"] = sp("vault", "unlock", "--keyring")
    results["enable_again"] = sp("vault", "keyring", "enable", *pf)
    subprocess.run(
        ["secret-tool", "clear", "service", "safeport-vault", "username", vault_id], timeout=30
    )
    results["unlock_without_item"] = sp("vault", "unlock", "--keyring")
finally:
    daemon.terminate()
    daemon.wait(timeout=10)
print(json.dumps(results))
