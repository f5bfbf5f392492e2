"""The demo's embedded default: a small project with secrets beside the code, and its policy."""

from __future__ import annotations

from pathlib import Path

FILES = {
    "README.md": "# inventory-service\n\nA small service that tracks stock levels.\n"
    "Deploy status: ask the gateway (deploy-api/deployment_status).\n",
    "src/inventory/app.py": "from inventory.store import Store\n\n\ndef handler(event):\n"
    "    return Store().level(event['sku'])\n",
    "src/inventory/store.py": "class Store:\n    def level(self, sku: str) -> int:\n"
    "        return 42  # TODO: read from the database\n",
    "src/inventory/tokenizer.py": "def split(text: str) -> list[str]:\n    return text.split()\n",
    "docs/operations.md": "Restart with `systemctl restart inventory`.\n",
}


def build_workspace(root: Path, canary: str) -> None:
    """Code that the agent may read, and private files (carrying ``canary``) it must never see."""
    for name, text in FILES.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    (root / ".env").write_text(f"DATABASE_URL=postgres://app:{canary}@db/inventory\n")
    (root / "data").mkdir()
    (root / "data" / "customers.csv").write_text(f"id,name,card\n1,Ada,{canary}\n")
    (root / "deploy_key.pem").write_text(f"-----BEGIN PRIVATE KEY-----\n{canary}\n")


def policy_text(base_url: str, ca_file: Path) -> str:
    # The CA goes into the policy itself: a file in the demo's folder is the user's, and the
    # gateway does not let a file its user can change decide whom it trusts.
    ca_pem = ca_file.read_text(encoding="ascii").strip()
    return f"""\
# The demo's gateway policy: one HTTPS operation, nothing else.
[gateway]
approval_timeout_s = 60
# The demo answers its own approval cards from the terminal it runs in.
allow_approver_in_client = true

[credentials.deploy-token]
kind = "token"
approval = "per-call"

[http.services.deploy-api]
base_url = "{base_url}"
credential = "deploy-token"
auth = "bearer"
ca_pem = '''
{ca_pem}
'''
# The demo service listens on 127.0.0.1; real services leave this false.
allow_private_addresses = true

[http.services.deploy-api.operations.deployment_status]
method = "GET"
path = "/v1/{{environment}}/services/{{service}}/status"
response_fields = ["environment", "service", "state", "revision"]
description = "Read the deployment state of one service"
read_only = true
params.environment = {{ enum = ["staging", "production"] }}
params.service = {{ pattern = "^[a-z0-9-]{{1,48}}$" }}
"""
