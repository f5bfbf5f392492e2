"""What is still missing before the gateway can do anything, each with the command to run."""

from __future__ import annotations

from safeport.shared.paths import SafeportPaths


def missing_setup(paths: SafeportPaths) -> list[str]:
    """Sentences for a person starting the gateway on a home that is not set up yet."""
    advice: list[str] = []
    if not paths.vault_file.exists():
        advice.append(
            f"no vault at {paths.vault_file}: the gateway holds no credential until you run "
            "`sp vault init` and `sp vault add NAME --kind KIND` (stop it first: the vault "
            "is not edited under a running gateway)"
        )
    if not paths.gateway_config.exists():
        advice.append(
            f"no policy at {paths.gateway_config}: run `sp init` to write one, edit it, then "
            "`sp policy check` and `sp policy accept`"
        )
    return advice
