"""The action gateway: the only process that holds credentials and acts on them.

Its public surface is the modules the CLI drives it through, listed here; the rest (server,
ladder, identity, approvals) is private to the gateway. They are modules, not names bound
here, so that reviewing a policy or writing a unit file never loads the executors.
"""

__all__ = [
    "account_install",
    "approval_link",
    "approver_session",
    "assembly",
    "control_client",
    "daemon",
    "dedicated_account",
    "doctor",
    "executors",
    "gateway_vault_backend",
    "gateway_view",
    "install_steps",
    "inventory",
    "overview",
    "policy_check",
    "policy_meaning",
    "policy_review",
    "policy_store",
    "process_hardening",
    "saved_checkpoint",
    "service_files",
    "vault_access",
]
