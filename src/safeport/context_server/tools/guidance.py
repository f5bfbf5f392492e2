"""What the server tells a client beside its tools: the instructions sent at initialisation,
the policy and health resources, and the prompts a person can pick.

The words are the model's only guide to the tools: they say where to start, that a blocked entry
is not to be worked around, and (agent profile) that a denial is final.
"""

from __future__ import annotations

import json
from typing import Any

from mcp.server.mcpserver import MCPServer

from safeport.context_server.operations.service import WorkspaceService

INSTRUCTIONS = """\
A read-only view of the user's workspace. Start with list_roots to learn how to write paths,
then list_directory / directory_tree to explore, search_project to find text, and read_file or
read_file_excerpt to read. Some files are private by policy (secrets, keys, data folders): they
show as blocked and cannot be read; do not try to work around that. Nothing here can change files.
"""

AGENT_INSTRUCTIONS = """
Actions: list_actions shows the SSH commands and HTTPS operations the user's gateway policy lets
you propose. ssh_exec / http_request (or the typed tool named in list_actions) send a proposal;
the gateway may ask the user to approve it, then runs it with a credential you never see and
returns the result. A denial is final for that proposal: do not retry it in another form.
"""


def add_resources(server: MCPServer[Any], service: WorkspaceService) -> None:
    """The read policy and the server's health, as resources a client may read at any time."""

    @server.resource("safeport://policy", name="policy", mime_type="application/json")
    def policy() -> str:
        """The effective read policy (what is private, ignored and readable)."""
        return json.dumps(service.list_roots().model_dump(), indent=2)

    @server.resource("safeport://health", name="health", mime_type="application/json")
    def health() -> str:
        """Index state, counts and journal state."""
        return service.get_health().model_dump_json(indent=2)


def add_prompts(server: MCPServer[Any]) -> None:
    """Ready-made requests a person can pick in the client, each naming the tools to use."""

    @server.prompt(name="explore_workspace")
    def explore_workspace() -> str:
        """Get oriented in an unfamiliar workspace."""
        return (
            "Explore this workspace and summarise it for me. Call list_roots first, then "
            "directory_tree with max_depth 2. Read the README and the build files (pyproject, "
            "package.json, Makefile…) with read_file. Report: what the project does, its main "
            "components and where they live, how to build and test it. Entries marked blocked "
            "are private or generated; mention that they exist only if relevant, and never try "
            "to read them another way."
        )

    @server.prompt(name="investigate_file")
    def investigate_file(path: str) -> str:
        """Explain one file and how the rest of the workspace uses it."""
        return (
            f"Investigate the file {path!r}. Read it with read_file (or read_file_excerpt if it "
            "is truncated). Explain its purpose and main definitions. Then use search_project "
            "for its main names to find where it is used, and list the callers with path and "
            "line. Quote only short snippets."
        )

    @server.prompt(name="follow_changes")
    def follow_changes() -> str:
        """Review what changed in the workspace recently."""
        return (
            "Call get_recent_changes without a cursor to see the most recently modified files, "
            "and keep the returned cursor. Read the changed files that look important and "
            "summarise what changed and why it might matter. Next time, pass the cursor back "
            "to see only newer changes; if the answer says reset, start over from that page."
        )
