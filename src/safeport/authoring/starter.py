"""The commented policy `sp init` writes: the gateway's settings, and two examples (one HTTPS
API read once per session and written call by call, one SSH host the same way) commented out.

As written it declares nothing an agent could use, so a fresh `sp init` then `sp policy accept`
works with no edit. Live examples would pass `sp policy check` and then be refused by `accept`,
which checks their credentials against the vault (a fake host's key is in no vault). Each
example line is commented with a single "#" and no space, the way editors toggle a comment, so
removing that "#" gives a block `sp policy check` accepts (a test keeps it so, with
:func:`uncommented`)."""

from __future__ import annotations

import re

# A well-formed key pinned for a documentation address (203.0.113.0/24 is TEST-NET-3): the
# example parses and checks, and no host of yours holds this key, so an example left in place
# fails closed (the host key does not match) instead of trusting whatever answers.
EXAMPLE_HOST_KEY = (
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl"
)

# An example line: "#" then a table header or a key, with no space between (prose has one).
_EXAMPLE_LINE = re.compile(r"^#(?=[\[a-z])", re.M)


def uncommented(text: str) -> str:
    """``text`` with its example lines uncommented (what a person does to start from one)."""
    return _EXAMPLE_LINE.sub("", text)


STARTER_POLICY = f"""\
# safeport gateway policy. Nothing here is served until you run `sp policy accept`.
# Every host, command, service and operation an agent may propose is named below; nothing else
# exists for it. As written it names none: the examples below are commented out, so a fresh
# `sp policy accept` serves the settings alone. To start from an example, remove the "#" at the
# start of each of its lines (they have no space after it). `sp policy check` validates this
# file and prints what it allows; `sp policy diff` shows what `accept` would change;
# `sp policy reference` lists every key. `sp policy edit` opens this file and checks it,
# `sp policy add http|ssh` appends entries, `sp policy remove KIND NAME` takes one out.

[gateway]
approval_timeout_s = 120         # a card nobody answers by then: the call is refused
auto_lock_minutes = 480          # no human activity on control.sock for this long: lock
session_max_minutes = 720        # the longest one session approval lasts

# --- Example: one HTTPS API, reads approved once per session, every write on its own card --
# Uncomment the block, put in your API's URL, paths and fields, and store its token with
# `sp vault add deploy-token --kind token`. The credential's approval is left at "per-call":
# any operation that does not say otherwise asks every time.

#[credentials.deploy-token]       # its value: `sp vault add deploy-token --kind token`
#kind = "token"                   # token | basic | ssh-key

#[http.services.deploy-api]
#base_url = "https://api.example.com"
#credential = "deploy-token"
#auth = "bearer"                  # bearer | basic | header:NAME

#[http.services.deploy-api.operations.deployment_status]
#description = "Read the state of one service's deployment"
#method = "GET"
#path = "/v1/{{environment}}/services/{{service}}/status"
#read_only = true                 # only GET and HEAD may say so
#approval = "session"             # one card covers every read of this process
#response_fields = ["environment", "service", "state", "revision"]   # all the agent sees
#params.environment = {{ enum = ["staging", "production"] }}
#params.service = {{ pattern = "^[a-z0-9-]{{1,48}}$" }}

#[http.services.deploy-api.operations.create_issue]
#description = "Open an issue about a service"
#method = "POST"                  # a write: approved call by call (the credential's default)
#path = "/v1/issues"
#json_body = {{ service = "{{service}}", title = "{{title}}" }}
#response_fields = ["id", "url"]
#params.service = {{ pattern = "^[a-z0-9-]{{1,48}}$" }}
#params.title = {{ pattern = "^.{{1,200}}$" }}

# --- Example: one SSH host -----------------------------------------------------------------
# Uncomment the block, put in your host, and REPLACE the example key with the host's own:
# `sp ssh scan 203.0.113.7`, its fingerprint checked on the server. Store the key the gateway
# signs in with: `sp vault add staging-key --kind ssh-key --value-file KEY`.

#[credentials.staging-key]        # `sp vault add staging-key --kind ssh-key --value-file KEY`
#kind = "ssh-key"

#[ssh.hosts.staging]
#address = "203.0.113.7"
#user = "deploy"
#host_keys = ["{EXAMPLE_HOST_KEY}"]
#credential = "staging-key"

#[ssh.hosts.staging.commands.read_service_status]
#description = "systemctl status of one service"
#argv = ["systemctl", "status", "--no-pager", "{{service}}"]
#read_only = true
#approval = "session"
#params.service = {{ pattern = "^[a-z0-9-]{{1,48}}$" }}

#[ssh.hosts.staging.commands.restart_service]
#description = "Restart one service"
#argv = ["sudo", "systemctl", "restart", "{{service}}"]
#params.service = {{ enum = ["web", "worker"] }}
"""
