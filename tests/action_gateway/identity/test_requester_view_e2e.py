"""The requester as it really runs: its environment, and its script as *it* opens it.

Real requester processes against a real gateway: a genuine interpreter started with PYTHONPATH
is flagged on the card and admitted by no ``[callers]`` rule that names its program; a script
run as ``/dev/fd/3`` or from a private mount is digested as the requester sees it, never as a
file in the gateway's own context.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from harness.gateway import POLICY, REPO, Gateway, clean_env, ssh, wait_card
from tests.conftest import need

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.action_gateway.identity"

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux /proc")

# A requester whose program is the script itself: it connects, proposes once, and waits.
REQUESTER_SCRIPT = f"""
import json, os, socket, sys, time
sys.path.insert(0, {str(REPO)!r})
from safeport.shared.wire import recv_message, send_message
sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
sock.connect(os.environ["SAFEPORT_HOME"] + "/run/agent.sock")
recv_message(sock)  # the welcome: the gateway speaks first
send_message(sock, json.loads(sys.argv[1]))
print(json.dumps(recv_message(sock)), flush=True)
"""


def _denials(gw: Gateway) -> list[dict[str, Any]]:
    return [r["body"] for r in gw.journal("actions") if r["kind"] == "action.denied"]


def _callers_rule(gw: Gateway) -> None:
    exe = os.path.realpath(sys.executable)
    rule = f'{{ exe = "{exe}", interpreter = "any script" }}'
    gw.write_policy(POLICY + f"\n[callers]\nrules = [{rule}]\n")
    gw.accept_policy()


def test_a_requester_started_with_pythonpath_shows_it_on_the_card(
    gateway: Gateway, tmp_path: Path
) -> None:
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    agent = gateway.spawn_agent(["env", f"PYTHONPATH={shadow}", "NODE_OPTIONS=--require /x.js"])
    agent.send(ssh("e1", service="worker"))
    card = wait_card(gateway)
    head = card["requester"][0]
    assert head["pid"] == agent.pid
    assert head["injected_env"] == [
        ["PYTHONPATH", str(shadow)],
        ["NODE_OPTIONS", "--require /x.js"],
    ]
    # Nothing else of the environment reaches the card.
    assert str(gateway.home) not in str(head)
    agent.exit()


def test_a_clean_requester_carries_no_flag(gateway: Gateway) -> None:
    agent = gateway.spawn_agent(["env", "PYTHONUNBUFFERED=1", "pythonpath=/inert"])
    agent.send(ssh("e2", service="worker"))
    head = wait_card(gateway)["requester"][0]
    assert "injected_env" not in head and "environ" not in head
    agent.exit()


def test_pythonpath_makes_a_caller_rule_by_path_refuse_the_genuine_program(
    gateway: Gateway, tmp_path: Path
) -> None:
    _callers_rule(gateway)
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    tainted = gateway.spawn_agent(["env", f"PYTHONPATH={shadow}"])
    reply = tainted.call(ssh("c1", command="nope"))
    assert reply["error"]["code"] == "denied"
    assert _denials(gateway)[-1]["category"] == "caller"
    tainted.exit()
    # The same program without the variable gets past the caller rung.
    clean = gateway.spawn_agent(["env"])
    reply = clean.call(ssh("c2", command="nope"))
    assert _denials(gateway)[-1]["category"] == "unknown_action"
    clean.exit()


def _requester_under(
    gw: Gateway, argv: list[str], **popen: Any
) -> tuple[subprocess.Popen[str], dict[str, Any]]:
    proc = subprocess.Popen(
        [
            *argv,
            '{"v":1,"id":"s1","type":"propose","action":"ssh_exec",'
            '"host_id":"build-staging","command_id":"read_service_status",'
            '"args":{"service":"worker"}}',
        ],
        env=clean_env(gw.home),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **popen,
    )
    return proc, wait_card(gw)


def test_a_script_run_as_dev_fd_3_is_the_file_the_requester_holds(
    gateway: Gateway, tmp_path: Path
) -> None:
    script = tmp_path / "requester.py"
    script.write_text(REQUESTER_SCRIPT)
    # The shell opens the script as fd 3 and becomes the interpreter; the gateway's own fd 3
    # (whatever it is) must not be what the card digests.
    shell = f'exec "{sys.executable}" /dev/fd/3 "$0" 3<"{script}"'
    proc, card = _requester_under(gateway, ["sh", "-c", shell], cwd=tmp_path)
    head = card["requester"][0]
    assert head["script"] == f"/dev/fd/3 -> {script}"
    assert head["script_sha256"] == hashlib.sha256(script.read_bytes()).hexdigest()
    proc.communicate(timeout=10)


def test_a_relative_script_is_read_from_the_requesters_folder(
    gateway: Gateway, tmp_path: Path
) -> None:
    (tmp_path / "requester.py").write_text(REQUESTER_SCRIPT)
    proc, card = _requester_under(gateway, [sys.executable, "requester.py"], cwd=tmp_path)
    head = card["requester"][0]
    assert head["script"] == str(tmp_path / "requester.py")
    assert head["script_sha256"] == hashlib.sha256(REQUESTER_SCRIPT.encode()).hexdigest()
    proc.communicate(timeout=10)


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"), reason="needs root")
def test_an_absolute_script_is_read_through_the_requesters_own_mounts(
    gateway: Gateway, tmp_path: Path
) -> None:
    # The gateway sees a decoy at the path; the requester, in its own mount namespace, runs
    # another file mounted over it. The card must show what the requester runs.
    place = tmp_path / "m"
    place.mkdir()
    (place / "requester.py").write_text("# decoy\n" + REQUESTER_SCRIPT)
    real = tmp_path / "real.py"
    real.write_text(REQUESTER_SCRIPT)
    shell = (
        f'mount -t tmpfs none "{place}" && cp "{real}" "{place}/requester.py" && '
        f'exec "{sys.executable}" "{place}/requester.py" "$0"'
    )
    proc, card = _requester_under(gateway, ["unshare", "-m", "sh", "-c", shell], cwd=tmp_path)
    head = card["requester"][0]
    assert head["script"] == str(place / "requester.py")
    assert head["script_sha256"] == hashlib.sha256(real.read_bytes()).hexdigest()
    assert head["verified"] == "not from a package"
    proc.communicate(timeout=10)


def test_a_signature_rule_refuses_a_program_no_package_installed(gateway: Gateway) -> None:
    # This interpreter (and the agent's script) come from no package record: refused at rung 3,
    # while a uid rule in the same table shows the policy itself is served.
    gateway.write_policy(
        POLICY + '\n[callers]\nrules = [{ signature = "package", interpreter = "any script" }]\n'
    )
    gateway.accept_policy()
    agent = gateway.spawn_agent(["env"])
    assert agent.call(ssh("g1", command="nope"))["error"]["code"] == "denied"
    assert _denials(gateway)[-1]["category"] == "caller"
    agent.exit()
    gateway.write_policy(POLICY + f"\n[callers]\nrules = [{{ uid = {os.getuid()} }}]\n")
    gateway.accept_policy()
    agent = gateway.spawn_agent(["env"])
    agent.call(ssh("g2", command="nope"))
    assert _denials(gateway)[-1]["category"] == "unknown_action"
    agent.exit()


SYSTEM_PYTHON = "/usr/bin/python3.11"
PLAIN_REQUESTER = """
import json, os, socket, struct, sys
def recv(s):
    size = struct.unpack(">I", s.recv(4, socket.MSG_WAITALL))[0]
    return json.loads(s.recv(size, socket.MSG_WAITALL))
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(os.environ["SAFEPORT_HOME"] + "/run/agent.sock")
recv(s)  # the welcome
body = sys.argv[1].encode()
s.sendall(struct.pack(">I", len(body)) + body)
print(json.dumps(recv(s)), flush=True)
"""


def _user_site_requester(gw: Gateway, tmp_path: Path, *flags: str) -> dict[str, Any]:
    """The packaged interpreter, run with a HOME whose user site holds a `.pth` the agent wrote
    (owned by another uid than the gateway's: the tests run as root, which may own code)."""
    home = tmp_path / "home"
    site = home / ".local" / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True, exist_ok=True)
    (site / "zz-agent.pth").write_text("import os\n")
    for place in (home, *home.rglob("*")):
        os.chown(place, 65534, 65534)
    script = tmp_path / "requester.py"
    script.write_text(PLAIN_REQUESTER)  # the system Python has none of safeport's packages
    proc, card = _requester_under(
        gw, ["env", f"HOME={home}", SYSTEM_PYTHON, *flags, str(script)], cwd=tmp_path
    )
    proc.kill()
    proc.wait()
    return dict(card["requester"][0])


def test_a_python_that_reads_a_user_site_the_agent_wrote_is_flagged(
    gateway: Gateway, tmp_path: Path
) -> None:
    """No variable at all, yet every `.pth` line there runs before the script."""
    need(Path(SYSTEM_PYTHON).exists(), f"{SYSTEM_PYTHON} (Debian python3.11) is not installed")
    head = _user_site_requester(gateway, tmp_path)
    names = [name for name, _ in head.get("injected_env", [])]
    assert names == ["python user site"], head
    assert "zz-agent.pth" in head["injected_env"][0][1]


def test_a_python_started_without_its_user_site_is_not_flagged(
    gateway: Gateway, tmp_path: Path
) -> None:
    need(Path(SYSTEM_PYTHON).exists(), f"{SYSTEM_PYTHON} (Debian python3.11) is not installed")
    for flags in (["-s"], ["-I"]):
        head = _user_site_requester(gateway, tmp_path, *flags)
        assert "injected_env" not in head, (flags, head)
