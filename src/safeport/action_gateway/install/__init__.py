"""Dedicated-account mode: the install plan and its steps, the systemd unit, the
pre-start code check and the checks the gateway makes of its own account at start."""

__all__ = [
    "code_check",
    "plan",
    "service_files",
    "start_checks",
    "steps",
]
