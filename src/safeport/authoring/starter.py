"""The commented example policy `sp init` writes: one HTTPS API read once per session and
written call by call, one SSH host the same way. It passes `sp policy check` as written (a test
keeps it so); nothing in it is served until its credentials are in the vault and a human runs
`sp policy accept`."""

from __future__ import annotations

# A well-formed key pinned for a documentation address (203.0.113.0/24 is TEST-NET-3): the
# example parses and checks, and no host of yours holds this key, so an example left in place
# fails closed (the host key does not match) instead of trusting whatever answers.
EXAMPLE_HOST_KEY = (
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl"
)

STARTER_POLICY = f"""\
# safeport gateway policy. Nothing here is served until you run `sp policy accept`.
# Every host, command, service and operation an agent may propose is named below; nothing else
# exists for it. `sp policy check` validates this file and prints what it allows;
# `sp policy reference` lists every key. Replace the examples with your own (or add more with
# `sp policy add http` and `sp policy add ssh`).

[gateway]
approval_timeout_s = 120         # a card nobody answers by then: the call is refused
auto_lock_minutes = 480          # no human activity on control.sock for this long: lock
session_max_minutes = 720        # the longest one session approval lasts

# --- One HTTPS API: reads approved once per session, every write on its own card ----------

[credentials.deploy-token]       # its value: `sp vault add deploy-token --kind token`
kind = "token"                   # token | basic | ssh-key
# approval left at "per-call": any operation that does not say otherwise asks every time

[http.services.deploy-api]
base_url = "https://api.example.com"
credential = "deploy-token"
auth = "bearer"                  # bearer | basic | header:NAME

[http.services.deploy-api.operations.deployment_status]
description = "Read the state of one service's deployment"
method = "GET"
path = "/v1/{{environment}}/services/{{service}}/status"
read_only = true                 # only GET and HEAD may say so
approval = "session"             # one card covers every read of this process
response_fields = ["environment", "service", "state", "revision"]   # all the agent sees
params.environment = {{ enum = ["staging", "production"] }}
params.service = {{ pattern = "^[a-z0-9-]{{1,48}}$" }}

[http.services.deploy-api.operations.create_issue]
description = "Open an issue about a service"
method = "POST"                  # a write: approved call by call (the credential's default)
path = "/v1/issues"
json_body = {{ service = "{{service}}", title = "{{title}}" }}
response_fields = ["id", "url"]
params.service = {{ pattern = "^[a-z0-9-]{{1,48}}$" }}
params.title = {{ pattern = "^.{{1,200}}$" }}

# --- One SSH host ------------------------------------------------------------------------

[credentials.staging-key]        # `sp vault add staging-key --kind ssh-key --value-file KEY`
kind = "ssh-key"

[ssh.hosts.staging]
address = "203.0.113.7"
user = "deploy"
# REPLACE this example key with the host's own: `sp ssh scan 203.0.113.7`, checked out of band
host_keys = ["{EXAMPLE_HOST_KEY}"]
credential = "staging-key"

[ssh.hosts.staging.commands.read_service_status]
description = "systemctl status of one service"
argv = ["systemctl", "status", "--no-pager", "{{service}}"]
read_only = true
approval = "session"
params.service = {{ pattern = "^[a-z0-9-]{{1,48}}$" }}

[ssh.hosts.staging.commands.restart_service]
description = "Restart one service"
argv = ["sudo", "systemctl", "restart", "{{service}}"]
params.service = {{ enum = ["web", "worker"] }}
"""
