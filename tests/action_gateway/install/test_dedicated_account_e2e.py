"""Dedicated-account mode with real OS accounts: `sp gateway install` makes the gateway's
account, useradd makes two humans, the real gateway runs as its account (setpriv, with the one
capability its unit grants), and everything the humans do goes through `sp` under their own uid.

Only the first human is named in the install; the second is a local user the gateway must not
serve. Both kinds of attack a human's uid can mount are tried: impersonating the gateway, and
reaching the files the gateway keeps.
"""

from __future__ import annotations

import json
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import psutil
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from harness.gateway import HOST_KEY
from safeport.shared.audit import read_records
from safeport.shared.launch import sp_command
from tests.action_gateway.dedicated import (
    PASSPHRASE,
    POLICY,
    DedicatedSetup,
    Human,
    install,
    make_setup,
    missing_parts,
    propose,
    setpriv,
    tear_down,
    unique,
)
from tests.conftest import need

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.action_gateway.install"

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def setup() -> Iterator[DedicatedSetup]:
    missing = missing_parts()
    need(not missing, f"{', '.join(missing)}: needed for real OS accounts")
    made = make_setup([unique("spal"), unique("spbo")])
    try:
        alice, _bob = made.humans.values()
        done = install(made, alice.name)
        assert done.returncode == 0, done.stdout + done.stderr
        alice.write("pw", PASSPHRASE + "\n")
        key = made.base / "id_ed25519"
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "KEY-CANARY-dd41",
                        "-f", str(key)], check=True)  # fmt: skip
        alice.write("token", key.read_text())
        alice.write(".config/safeport/gateway.toml", POLICY)
        made.start_gateway()
        created = alice.sp("vault", "init", "--passphrase-file", str(alice.passphrase_file))
        assert created.returncode == 0, created.stdout + created.stderr
        yield made
    finally:
        tear_down(made)


def humans(setup: DedicatedSetup) -> tuple[Human, Human]:
    alice, bob = setup.humans.values()
    return alice, bob


def _raw_exchange(sock_path: Path) -> str:
    """A client that connects and prints the gateway's first frame (a refused uid is answered
    at once, before it could send anything)."""
    return (
        "import socket,struct\n"
        "s=socket.socket(socket.AF_UNIX);s.settimeout(10)\n"
        f"s.connect({str(sock_path)!r})\n"
        "n=struct.unpack('>I',s.recv(4))[0];print(s.recv(n).decode())\n"
    )


def test_install_lays_out_the_account_folders_and_the_anchor(setup: DedicatedSetup) -> None:
    st = setup.install_file.stat()
    assert st.st_uid == 0 and st.st_mode & 0o777 == 0o644
    text = setup.install_file.read_text()
    assert f'account = "{setup.account}"' in text and f"uid = {setup.uid}" in text
    for folder, mode in (
        (setup.state_dir, 0o750),
        (setup.audit_dir, 0o750),
        (setup.run_dir, 0o750),
    ):
        st = folder.stat()
        assert (st.st_uid, st.st_mode & 0o777) == (setup.uid, mode), folder
    unit = (setup.prefix / "etc/systemd/system/safeport-gateway.service").read_text()
    assert f"User={setup.account}" in unit and "AmbientCapabilities=CAP_SYS_PTRACE" in unit
    assert "NoNewPrivileges=yes" in unit and "ProtectSystem=strict" in unit
    check = setup.prefix / "etc/safeport/check_code.py"
    assert check.stat().st_uid == 0 and check.stat().st_mode & 0o777 == 0o644


def test_install_print_shows_every_step_and_changes_nothing(setup: DedicatedSetup) -> None:
    ghost = unique("spno")
    alice, _ = humans(setup)
    done = subprocess.run(
        sp_command(["gateway", "install", "--print", "--verbose", "--init", "systemd",
                    "--account", ghost, "--human", alice.name,
                    "--prefix", str(setup.base / "ghost")]),
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "useradd --system --user-group" in done.stdout and "CAP_SYS_PTRACE" in done.stdout
    assert not (setup.base / "ghost").exists()
    assert subprocess.run(["id", ghost], capture_output=True).returncode != 0


def test_the_human_side_works_through_control_sock(setup: DedicatedSetup) -> None:
    alice, _ = humans(setup)
    status = alice.sp("vault", "status", "--json")
    assert status.returncode == 2, status.stderr  # held by the gateway, locked until unlocked
    described = json.loads(status.stdout)
    assert described["exists"] is True and setup.account in described["holder"]
    assert described["unlocked"] is False
    # `sp status` names the account's vault, not one in alice's own data folder.
    shown = alice.sp("status")
    vault = setup.state_dir / "vault.sp"
    assert f"vault     {vault}, held by the gateway's account {setup.account}" in shown.stdout
    assert f"vault in {setup.state_dir}" in shown.stdout and ".local/share" not in shown.stdout
    unlocked = alice.sp("vault", "unlock", "--passphrase-file", str(alice.passphrase_file))
    assert unlocked.returncode == 0, unlocked.stdout + unlocked.stderr
    pw = str(alice.passphrase_file)
    added = alice.sp("vault", "add", "build-key", "--kind", "ssh-key", "--value-file",
                     str(alice.home / "token"), "--passphrase-file", pw)  # fmt: skip
    assert added.returncode == 0, added.stdout + added.stderr
    listed = alice.sp("vault", "list", "--json")
    assert "build-key" in listed.stdout and "KEY-CANARY" not in listed.stdout
    accepted = alice.sp("policy", "accept", "--yes", "--passphrase-file",
                        str(alice.passphrase_file))  # fmt: skip
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr
    assert "+[ssh.hosts.nowhere]" in accepted.stdout
    again = alice.sp("policy", "accept", "--yes", "--passphrase-file", pw)
    assert "gateway.toml is already the accepted policy" in again.stdout


def test_the_humans_uid_cannot_read_the_vault_or_write_the_journals(
    setup: DedicatedSetup,
) -> None:
    alice, _ = humans(setup)
    probe = (
        "import sys\n"
        "for path, mode in ((sys.argv[1], 'rb'), (sys.argv[2], 'ab'), (sys.argv[3], 'ab')):\n"
        "    try:\n        open(path, mode).close(); print('opened', path)\n"
        "    except PermissionError:\n        print('refused')\n"
        "print(len(open(sys.argv[2], 'rb').read()) > 0)\n"
    )
    done = alice.python(
        probe,
        str(setup.state_dir / "vault.sp"),
        str(setup.audit_dir / "sessions.jsonl"),
        str(setup.audit_dir / "new.jsonl"),
    )
    assert done.stdout.split() == ["refused", "refused", "refused", "True"], (
        done.stdout + done.stderr
    )
    verified = alice.sp("audit", "verify")
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert "journal: sessions" in verified.stdout and "chain: valid" in verified.stdout


def test_the_humans_uid_reads_the_revocation_notice_and_cannot_replace_it(
    setup: DedicatedSetup,
) -> None:
    """The HTTP context server (the human's uid) reuses the gateway's "token stands" only while
    this notice is unchanged: it must be able to read it, and nothing of its uid may write it,
    replace it or put another in its place."""
    alice, _ = humans(setup)
    probe = (
        "import os, sys\n"
        "from safeport.context_server.http.standing import read_notice\n"
        "notice, uid = sys.argv[1], int(sys.argv[2])\n"
        "print(read_notice(notice, uid) is not None)\n"
        "for attempt in (lambda: open(notice, 'ab').close(),\n"
        "                lambda: os.unlink(notice),\n"
        "                lambda: open(notice + '.x', 'wb').close()):\n"
        "    try:\n        attempt(); print('allowed')\n"
        "    except PermissionError:\n        print('refused')\n"
    )
    # This installation's interpreter (the one that runs the context server), as alice.
    notice = str(setup.run_dir / "revocations")
    done = alice.run(sys.executable, "-I", "-c", probe, notice, str(setup.uid))
    assert done.stdout.split() == ["True", "refused", "refused", "refused"], (
        done.stdout + done.stderr
    )


def test_a_user_not_named_in_the_install_is_refused_on_both_sockets(
    setup: DedicatedSetup,
) -> None:
    _, bob = humans(setup)
    # Outside the account's group the socket folder is closed to them...
    status = bob.sp("gateway", "status")
    assert status.returncode == 2 and "reachable only by the group" in status.stderr
    # ...and a member the install did not name is refused by uid on both sockets.
    gid = str(pwd.getpwnam(setup.account).pw_gid)
    for name in ("agent.sock", "control.sock"):
        done = bob.python(_raw_exchange(setup.run_dir / name), groups=gid)
        assert done.returncode == 0, done.stderr
        reply = json.loads(done.stdout)
        assert reply["ok"] is False and reply["error"]["code"] == "denied", done.stderr
        assert "does not serve your user" in reply["error"]["reason"]
    status = bob.run(*sp_command(["gateway", "status"]), groups=gid)
    assert status.returncode != 0 and "does not serve your user" in status.stderr

    def refused_journaled() -> bool:
        records = setup.unsealed("actions")
        return any(
            r["kind"] == "input.refused"
            and r["body"].get("counts", {}).get(f"other_uid:{bob.uid}", 0) >= 2
            for r in records
        )

    deadline = time.monotonic() + 20
    while not refused_journaled():
        assert time.monotonic() < deadline, "the refusals were not journaled"
        time.sleep(0.2)


def test_the_agent_profile_and_an_approval_work_across_the_accounts(
    setup: DedicatedSetup,
) -> None:
    alice, _ = humans(setup)
    assert (
        alice.sp("vault", "unlock", "--passphrase-file", str(alice.passphrase_file)).returncode == 0
    )
    workspace = alice.home / "ws"
    alice.write("ws/README.md", "hello\n", mode=0o644)
    # flock (root) is the requester's client, a plain binary outside the approver's tree;
    # setpriv, a wrapper, then drops to the human's uid for the context server itself.
    lock = setup.base / "client.lock"
    lock.touch()
    params = StdioServerParameters(
        command="flock",
        args=["-s", str(lock), *setpriv(alice.name),
              *sp_command(["context", "serve", "--root", str(workspace), "--profile", "agent"])],
        env=alice.env,
    )  # fmt: skip

    def approve() -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            listed = alice.sp("approvals", "list", "--json")
            cards = json.loads(listed.stdout or "[]") if listed.returncode == 0 else []
            if cards:
                decided = alice.sp("approvals", "approve", cards[0]["id"],
                                   "--passphrase-file", str(alice.passphrase_file))  # fmt: skip
                assert decided.returncode == 0, decided.stderr
                return
            time.sleep(0.2)

    async def body() -> dict[str, Any]:
        with anyio.fail_after(90):
            with (setup.base / "context.stderr").open("w") as errlog:
                async with Client(stdio_client(params, errlog=errlog)) as client:
                    read = await client.call_tool("read_file", {"path": "README.md"})
                    served_by = _context_server_of(alice.uid)
                    # Not dumpable: another process of the human's uid (an agent's shell) can
                    # neither ptrace it nor read its binary or environment, so it cannot take
                    # over the session grant the gateway binds to it.
                    peek = alice.python(
                        "import os, sys\n"
                        "pid = int(sys.argv[1])\n"
                        "for how in (lambda: os.readlink(f'/proc/{pid}/exe'),\n"
                        "            lambda: open(f'/proc/{pid}/environ', 'rb').read()):\n"
                        "    try:\n"
                        "        how(); print('read')\n"
                        "    except PermissionError:\n"
                        "        print('refused')\n",
                        str(served_by),
                    )
                    assert peek.stdout.split() == ["refused", "refused"], peek
                    approver = threading.Thread(target=approve, daemon=True)
                    approver.start()
                    proposed = await client.call_tool(
                        "ssh_exec", {"host_id": "nowhere", "command_id": "uptime", "args": {}}
                    )
                    approver.join(30)
                    return {"read": read, "proposed": proposed}

    out = anyio.run(body)
    assert not out["read"].is_error
    text = out["proposed"].content[0].text
    assert out["proposed"].is_error and "upstream" in text, text  # approved, ran, port 1 refused
    records = read_records(setup.audit_dir / "actions.jsonl")
    kinds = [r["kind"] for r in records]
    assert "action.intent" in kinds and "action.outcome" in kinds
    # The inspector still attests the non-dumpable requester: its binary was read and digested.
    intents = [r for r in setup.unsealed("actions") if r["kind"] == "action.intent"]
    assert intents
    head = json.dumps(intents[-1]["body"])
    requester = json.loads(head)["requester"]["chain"][0]
    assert requester["uid"] == alice.uid and requester["environ"] == "read", requester
    assert requester["exe"].startswith("/") and len(requester["sha256"] or "") == 64, requester
    for path in setup.audit_dir.iterdir():
        if path.is_file():
            data = path.read_bytes()
            assert b"KEY-CANARY" not in data and PASSPHRASE.encode() not in data


def test_a_listener_of_the_humans_own_uid_receives_zero_bytes(setup: DedicatedSetup) -> None:
    """The impostor drill: a process of the human's uid listens where `sp` expects the gateway
    (root moves its socket into the run folder, standing in for any way of getting it there)."""
    alice, _ = humans(setup)
    assert setup.stop_gateway() == 0
    impostor_dir = alice.home / "imp"
    impostor = subprocess.Popen(
        [*setpriv(alice.name), "/usr/bin/python3", "-c",
         "import socket,sys\n"
         "s=socket.socket(socket.AF_UNIX);s.bind(sys.argv[1]);s.listen(8)\n"
         "print('ready',flush=True)\n"
         "s.settimeout(20)\n"
         "got=b''\n"
         "try:\n"
         "    while True:\n"
         "        c,_=s.accept();c.settimeout(3)\n"
         "        try:\n"
         "            while (b:=c.recv(65536)): got+=b\n"
         "        except OSError: pass\n"
         "        print('bytes',len(got),flush=True)\n"
         "except OSError: pass\n",
         str(impostor_dir / "control.sock")],
        env=alice.env, stdout=subprocess.PIPE, text=True, cwd="/",
    )  # fmt: skip
    alice.write("imp/.keep", "")
    try:
        assert impostor.stdout is not None
        assert impostor.stdout.readline().strip() == "ready"
        os.rename(impostor_dir / "control.sock", setup.run_dir / "control.sock")
        done = alice.sp("vault", "unlock", "--passphrase-file", str(alice.passphrase_file))
        assert done.returncode != 0
        assert "served by your own user" in done.stderr and "nothing was sent" in done.stderr
        assert impostor.stdout.readline().strip() == "bytes 0"
        # The same for a query with no secret: not even that reaches the impostor.
        done = alice.sp("gateway", "status")
        assert done.returncode != 0 and "nothing was sent" in done.stderr
        assert impostor.stdout.readline().strip() == "bytes 0"
    finally:
        impostor.kill()
        impostor.wait()
        (setup.run_dir / "control.sock").unlink(missing_ok=True)
        setup.start_gateway()


def test_a_loosened_socket_folder_is_refused_before_connecting(setup: DedicatedSetup) -> None:
    alice, _ = humans(setup)
    setup.run_dir.chmod(0o777)
    try:
        done = alice.sp("gateway", "status")
        assert done.returncode != 0 and "others can put a socket there" in done.stderr
    finally:
        setup.run_dir.chmod(0o750)


def test_the_gateway_refuses_to_start_as_another_uid_or_with_loose_folders(
    setup: DedicatedSetup,
) -> None:
    as_root = subprocess.run(
        sp_command(["gateway", "run"]), env=setup.gateway_env(), capture_output=True, text=True,
        timeout=30, cwd="/",
    )  # fmt: skip
    assert as_root.returncode == 2 and f"runs as {setup.account}" in as_root.stderr
    assert setup.stop_gateway() == 0
    try:
        as_account = [*setpriv(setup.account), *sp_command(["gateway", "run"])]
        without_caps = subprocess.run(
            as_account, env=setup.gateway_env(), capture_output=True, text=True, timeout=30,
            cwd="/",
        )  # fmt: skip
        assert without_caps.returncode == 2 and "lacks CAP_SYS_PTRACE" in without_caps.stderr
        setup.audit_dir.chmod(0o770)  # a folder the group could write: named, with the fix
        loose = subprocess.run(
            setup.gateway_argv(), env=setup.gateway_env(), capture_output=True, text=True,
            timeout=30, cwd="/",
        )  # fmt: skip
        assert loose.returncode == 2
        assert f"{setup.audit_dir} has mode 0770, not 0750" in loose.stderr
        assert "chmod 750" in loose.stderr
    finally:
        setup.audit_dir.chmod(0o750)
        setup.start_gateway()


def _kinds(setup: DedicatedSetup, journal: str) -> list[str]:
    return [str(r["kind"]) for r in read_records(setup.audit_dir / f"{journal}.jsonl")]


def _copy_vault(setup: DedicatedSetup, to: Path) -> None:
    """As root, keeping the account's ownership and mode (what a restored backup looks like)."""
    shutil.copy2(setup.state_dir / "vault.sp", to)
    st = (setup.state_dir / "vault.sp").stat()
    os.chown(to, st.st_uid, st.st_gid)


@pytest.mark.parametrize("change", ["rotate", "policy accept"])
def test_a_vault_put_back_by_root_after_a_save_raises_vault_rollback(
    setup: DedicatedSetup, change: str
) -> None:
    alice, _ = humans(setup)
    pw = str(alice.passphrase_file)
    assert alice.sp("vault", "unlock", "--passphrase-file", pw).returncode == 0
    saved = setup.base / "vault.saved"
    _copy_vault(setup, saved)
    before = _kinds(setup, "sessions").count("vault.rollback")
    if change == "rotate":
        key = setup.base / f"rotated-{secrets.token_hex(3)}"
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
        alice.write("rotated", key.read_text())
        done = alice.sp("vault", "rotate", "build-key", "--kind", "ssh-key", "--value-file",
                        str(alice.home / "rotated"), "--passphrase-file", pw)  # fmt: skip
    else:
        policy = alice.home / ".config/safeport/gateway.toml"
        edited = policy.read_text() + f"\n# accepted again {secrets.token_hex(3)}\n"
        alice.write(".config/safeport/gateway.toml", edited)
        done = alice.sp("policy", "accept", "--yes", "--passphrase-file", pw)
    assert done.returncode == 0, done.stdout + done.stderr
    assert alice.sp("vault", "lock").returncode == 0
    saved.replace(setup.state_dir / "vault.sp")  # an older file, put back while locked
    assert alice.sp("vault", "unlock", "--passphrase-file", pw).returncode == 0
    assert _kinds(setup, "sessions").count("vault.rollback") == before + 1


def test_an_intent_left_open_by_a_kill_is_closed_by_action_interrupted_at_restart(
    setup: DedicatedSetup,
) -> None:
    """The real SSH executor, stuck on an upstream that accepts and never speaks, is killed
    (-9) between the intent and its outcome; the restarted gateway names the open intent."""
    alice, _ = humans(setup)
    pw = str(alice.passphrase_file)
    hang = socket.socket()
    hang.bind(("127.0.0.1", 0))
    hang.listen(4)
    port = hang.getsockname()[1]
    policy = alice.home / ".config/safeport/gateway.toml"
    alice.write(
        ".config/safeport/gateway.toml",
        policy.read_text()
        + f'\n[ssh.hosts.hang]\naddress = "127.0.0.1"\nport = {port}\nuser = "deploy"\n'
        f'host_keys = ["{HOST_KEY}"]\ncredential = "build-key"\nconnect_timeout_s = 30\n'
        '\n[ssh.hosts.hang.commands.uptime]\nargv = ["uptime"]\n',
    )
    assert alice.sp("vault", "unlock", "--passphrase-file", pw).returncode == 0
    assert alice.sp("policy", "accept", "--yes", "--passphrase-file", pw).returncode == 0
    requester = propose(setup, alice, host_id="hang")
    intents = _kinds(setup, "actions").count("action.intent")
    try:
        deadline = time.monotonic() + 30
        while True:
            listed = alice.sp("approvals", "list", "--json")
            cards = json.loads(listed.stdout or "[]") if listed.returncode == 0 else []
            if cards:
                break
            assert time.monotonic() < deadline, "no card appeared"
            time.sleep(0.2)
        approved = alice.sp("approvals", "approve", cards[0]["id"], "--passphrase-file", pw)
        assert approved.returncode == 0, approved.stderr
        while _kinds(setup, "actions").count("action.intent") == intents:
            assert time.monotonic() < deadline + 30, "the intent was never written"
            time.sleep(0.1)
        assert setup.gateway is not None
        setup.gateway.send_signal(signal.SIGKILL)  # between the intent and its outcome
        setup.gateway.wait(10)
        setup.gateway = None
        (setup.run_dir / "agent.sock").unlink(missing_ok=True)
        (setup.run_dir / "control.sock").unlink(missing_ok=True)
        setup.start_gateway()
        kinds = _kinds(setup, "actions")
        assert kinds.count("action.interrupted") == 1, kinds[-6:]
        assert kinds.index("action.interrupted") > len(kinds) - 4  # written at this start
    finally:
        requester.kill()
        requester.wait()
        hang.close()


def test_a_journal_cut_by_root_between_runs_is_reported_at_start_and_by_verify(
    setup: DedicatedSetup,
) -> None:
    alice, _ = humans(setup)
    assert (
        alice.sp("vault", "unlock", "--passphrase-file", str(alice.passphrase_file)).returncode == 0
    )
    assert setup.stop_gateway() == 0  # signs the heads it wrote
    sessions = setup.audit_dir / "sessions.jsonl"
    st = sessions.stat()
    lines = sessions.read_bytes().splitlines(keepends=True)
    sessions.write_bytes(b"".join(lines[:-2]))  # root removes the last two records
    assert (sessions.stat().st_uid, sessions.stat().st_mode) == (st.st_uid, st.st_mode)
    setup.start_gateway()
    status = alice.sp("gateway", "status")
    assert "ALARM journal.truncated" in status.stdout, status.stdout + status.stderr
    verified = alice.sp("audit", "verify", "--checkpoint", str(setup.audit_dir / "checkpoint.json"))
    assert verified.returncode == 1, verified.stdout + verified.stderr
    assert "sessions" in verified.stdout


def _context_server_of(uid: int) -> int:
    """The pid of the human's running `sp context serve` (the MCP client's child)."""
    for proc in psutil.process_iter(["uids", "cmdline"]):
        argv = proc.info["cmdline"] or []
        ours = proc.info["uids"] is not None and proc.info["uids"].real == uid
        if ours and "serve" in argv and "context" in argv:
            return int(proc.pid)
    raise AssertionError("the context server is not running")
