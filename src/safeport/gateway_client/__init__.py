"""`sp`'s side of a running gateway: the control socket and its listener check, the
approver's session and thread, the vault backend that routes through the gateway, and what `sp
status`, `sp doctor` and `sp policy check` gather. Nothing under ``action_gateway`` imports it."""

__all__ = [
    "approver_keys",
    "approver_session",
    "approver_thread",
    "control_socket",
    "ctap_socket",
    "doctor",
    "gateway_exit",
    "gateway_view",
    "listener_check",
    "loopback_callback",
    "policy_check",
    "policy_proposal",
    "remote_clients",
    "saved_checkpoint",
    "security_key",
    "status_overview",
    "timestamp_findings",
    "vault_backend",
    "vault_route",
]
