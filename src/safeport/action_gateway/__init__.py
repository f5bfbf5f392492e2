"""The action gateway: the only process that holds credentials and acts on them.

Its public surface is the modules the CLI drives it through, listed here; the rest (server,
ladder, identity, approvals) is private to the gateway. They are modules, not names bound
here, so that reviewing a policy or writing a unit file never loads the executors.
"""

__all__ = [
    "account_install",
    "assembly",
    "daemon",
    "dedicated_account",
    "executors",
    "install_steps",
    "inventory",
    "policy_review",
    "policy_store",
    "service_files",
]
