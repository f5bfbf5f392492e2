"""Attempts to get a requester past the environment, script and signature checks.

Each attack runs as a real process read by the real probe; each has a twin showing that the
honest form still passes.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from safeport.action_gateway.identity.injection import (
    injected_entries,
    injected_variables,
    parse_environ,
)
from safeport.action_gateway.identity.linux import LinuxProbe
from safeport.action_gateway.identity.model import PeerIdentity, ProcessInfo
from safeport.action_gateway.policy.caller_rules import rule_matches
from safeport.shared.schemas.config import CallerRule
from tests.conftest import need

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux /proc")

SLEEP = "import time; time.sleep(30)"


def _head(argv: list[str], *, env: dict[str, str] | None = None, wait: float = 0.4) -> ProcessInfo:
    proc = subprocess.Popen(argv, env=env)
    try:
        time.sleep(wait)
        return LinuxProbe().chain(proc.pid)[0]
    finally:
        proc.kill()
        proc.wait()


def _peer(head: ProcessInfo) -> PeerIdentity:
    return PeerIdentity(uid=head.uid, gid=0, chain=(head,))


# -- the rule itself ---------------------------------------------------------------------------


def test_names_are_matched_as_programs_read_them() -> None:
    env = {
        "pythonpath": "/x",
        "Ld_Preload": "/x.so",
        "PYTHONPATH ": "/x",
        "NODE_ENV": "production",
        "PYTHONUTF8": "1",
        "LD_PRELOAD_64": "/y.so",
        "BASH_FUNC_ls%%": "() { evil; }",
        "PYTHONINSPECT": "1",
        "PYTHONWARNINGS": "ignore::evil.Warning",
    }
    assert injected_variables(env) == [
        "BASH_FUNC_ls%%",
        "LD_PRELOAD_64",
        "PYTHONINSPECT",
        "PYTHONPATH ",  # inert for Python, but an odd PYTHON* name is flagged, not trusted
        "PYTHONWARNINGS",
    ]


def test_a_name_given_twice_is_reported_twice() -> None:
    pairs = parse_environ(b"PYTHONPATH=/good\0HOME=/h\0PYTHONPATH=/evil\0junk-without-equals\0")
    assert injected_entries(pairs) == [("PYTHONPATH", "/good"), ("PYTHONPATH", "/evil")]


def test_an_unreadable_environment_defeats_every_program_rule() -> None:
    head = ProcessInfo(
        pid=5, start_time=1, uid=0, name="sp", exe="/usr/bin/sp", exe_sha256="0" * 64,
        signature="package", environ="unreadable",
    )  # fmt: skip
    assert not rule_matches(CallerRule(exe="/usr/bin/sp"), _peer(head))
    assert not rule_matches(CallerRule(exe=head.exe, signature="package"), _peer(head))
    assert rule_matches(CallerRule(uid=0), _peer(head))  # a uid rule names no program
    clean = ProcessInfo(**{**head.__dict__, "environ": "read"})
    assert rule_matches(CallerRule(exe="/usr/bin/sp", signature="package"), _peer(clean))


def test_a_packaged_interpreter_is_never_vouched_for_by_the_script_it_claims() -> None:
    # The script comes from the command line, which the process writes: whatever the file at
    # that path is, a rule naming a program does not admit the interpreter on its word.
    head = ProcessInfo(
        pid=5, start_time=1, uid=0, name="python3.11", exe="/usr/bin/python3.11",
        exe_sha256="0" * 64, signature="package", environ="read", interpreter=True,
        script="/usr/lib/python3.11/timeit.py", script_signature="package",
    )  # fmt: skip
    for rule in (
        CallerRule(exe=head.exe, signature="package"),
        CallerRule(exe="/usr/bin/python3.11"),
        CallerRule(exe_sha256="0" * 64, ancestor_exe=None),
    ):
        assert not rule_matches(rule, _peer(head)), rule
    # Said out loud, the interpreter is admitted whatever it runs — its binary is attested.
    anything = CallerRule(signature="package", interpreter="any script")
    assert rule_matches(anything, _peer(head))
    unpackaged = ProcessInfo(**{**head.__dict__, "signature": "not-packaged"})
    assert not rule_matches(anything, _peer(unpackaged))
    injected = ProcessInfo(**{**head.__dict__, "injected_env": (("PYTHONPATH", "/x"),)})
    assert not rule_matches(anything, _peer(injected))


def test_any_script_qualifies_only_a_rule_that_names_a_program() -> None:
    with pytest.raises(ValueError, match="only qualifies a rule that names a program"):
        CallerRule(uid=0, interpreter="any script")


@pytest.mark.parametrize(
    "fields",
    [
        {"signature": "package"},
        {"signature": "valid"},
        {"signature": "package", "ancestor_exe": "/opt/claude/claude"},
        {"signature": "package", "uid": 1000},
    ],
)
def test_a_signature_alone_is_refused_as_a_rule(fields: dict[str, object]) -> None:
    # "Any packaged program" holds gdb, tclsh, sqlite3 …, which run code they are given under
    # names no list can hold: such a rule names no program, so the policy says so at once.
    with pytest.raises(ValueError, match="`signature` alone admits every packaged program"):
        CallerRule.model_validate(fields)


@pytest.mark.parametrize(
    "fields",
    [
        {"signature": "package", "exe": "/usr/bin/sleep"},
        {"signature": "package", "exe_sha256": "0" * 64},
        {"signature": "valid", "team_id": "ABCDE12345"},
        {"signature": "package", "interpreter": "any script", "ancestor_exe": "/opt/c/c"},
    ],
)
def test_a_signature_that_qualifies_a_pinned_binary_or_says_any_script_is_a_rule(
    fields: dict[str, object],
) -> None:
    CallerRule.model_validate(fields)


# -- real processes ----------------------------------------------------------------------------


_CODE_HOSTS = {
    # A packaged binary told to run code: gdb's embedded Python, a Tcl script on stdin.
    "/usr/bin/gdb": ["-batch", "-ex", "python import time; time.sleep(30)"],
    "/usr/bin/tclsh8.6": ["/dev/stdin"],
}


@pytest.mark.parametrize("program", sorted(_CODE_HOSTS))
def test_a_packaged_program_that_runs_code_it_is_given_is_an_interpreter(program: str) -> None:
    need(Path(program).exists(), f"{program} is not installed")
    with subprocess.Popen([program, *_CODE_HOSTS[program]], stdin=subprocess.PIPE) as proc:
        try:
            assert proc.stdin is not None
            proc.stdin.write(b"after 30000\n")
            proc.stdin.flush()
            time.sleep(0.6)
            head = LinuxProbe().chain(proc.pid)[0]
        finally:
            proc.kill()
    assert head.signature == "package" and head.interpreter and head.script is None
    assert not rule_matches(CallerRule(exe=head.exe, signature="package"), _peer(head))
    assert not rule_matches(CallerRule(exe_sha256=head.exe_sha256), _peer(head))
    assert rule_matches(
        CallerRule(exe=head.exe, signature="package", interpreter="any script"), _peer(head)
    )


def test_padding_the_environment_past_the_limit_makes_it_unreadable_not_clean() -> None:
    # Injection variable placed after 1.2 MB of padding, hoping the reader stops early.
    env = {f"PAD{n}": "x" * 120_000 for n in range(10)}
    env["PYTHONPATH"] = "/evil"
    head = _head([sys.executable, "-c", SLEEP], env={"PATH": "/usr/bin:/bin", **env})
    assert head.environ == "unreadable" and head.code_injected
    honest = _head([sys.executable, "-c", SLEEP], env={"PATH": "/usr/bin:/bin"})
    assert honest.environ == "read" and not honest.code_injected


def test_a_script_link_repointed_after_start_is_marked_changed(tmp_path: Path) -> None:
    evil, good = tmp_path / "evil.py", tmp_path / "good.py"
    evil.write_text(SLEEP + "  # evil\n")
    good.write_text(SLEEP + "\n")
    link = tmp_path / "run.py"
    link.symlink_to(evil)
    proc = subprocess.Popen([sys.executable, str(link)])
    try:
        time.sleep(0.4)  # the interpreter has read evil.py
        honest = LinuxProbe().chain(proc.pid)[0]
        assert not honest.script_changed
        swap = tmp_path / "swap.py"
        swap.symlink_to(good)
        swap.replace(link)  # the link now names the genuine script
        head = LinuxProbe().chain(proc.pid)[0]
    finally:
        proc.kill()
        proc.wait()
    assert head.script_sha256 == hashlib.sha256(good.read_bytes()).hexdigest()
    assert head.script_changed


def test_a_script_rewritten_in_place_after_start_is_marked_changed(tmp_path: Path) -> None:
    script = tmp_path / "run.py"
    script.write_text(SLEEP + "  # evil\n")
    proc = subprocess.Popen([sys.executable, str(script)])
    try:
        time.sleep(0.4)
        script.write_text(SLEEP + "\n")
        head = LinuxProbe().chain(proc.pid)[0]
    finally:
        proc.kill()
        proc.wait()
    assert head.script_changed


def test_a_script_fed_through_a_pipe_is_never_read_by_the_gateway(tmp_path: Path) -> None:
    # Reading the pipe would steal the script from the interpreter (or block the gateway).
    shell = f'exec "{sys.executable}" /dev/fd/3 3<<EOF\n{SLEEP}\nEOF\n'
    head = _head(["bash", "-c", shell])
    assert head.script is not None and head.script.startswith("/dev/fd/3 -> ")
    assert head.script_sha256 is None and head.script_signature == "unsupported"


_PACKAGED_SCRIPT = "/usr/lib/python3.11/timeit.py"


@pytest.mark.skipif(not Path(_PACKAGED_SCRIPT).exists(), reason="needs a packaged python")
def test_a_program_from_stdin_is_not_vouched_for_by_the_packaged_file_after_it() -> None:
    # `python3 - FILE` runs standard input; FILE is only sys.argv[1].
    proc = subprocess.Popen(["/usr/bin/python3.11", "-", _PACKAGED_SCRIPT], stdin=subprocess.PIPE)
    try:
        assert proc.stdin is not None
        proc.stdin.write(SLEEP.encode() + b"\n")
        proc.stdin.close()
        time.sleep(0.4)
        head = LinuxProbe().chain(proc.pid)[0]
    finally:
        proc.kill()
        proc.wait()
    assert head.script == "-" and head.script_sha256 is None
    assert not rule_matches(CallerRule(exe=head.exe, signature="package"), _peer(head))
    for combined in (["-Ic", SLEEP, _PACKAGED_SCRIPT], ["-u", "-", _PACKAGED_SCRIPT]):
        head = _head(["/usr/bin/python3.11", *combined])
        assert head.script_sha256 is None
        assert not rule_matches(CallerRule(exe=head.exe, signature="package"), _peer(head))


@pytest.mark.skipif(not Path(_PACKAGED_SCRIPT).exists(), reason="needs a packaged python")
def test_a_packaged_script_run_by_a_packaged_interpreter_is_still_only_a_claim() -> None:
    head = _head(["/usr/bin/python3.11", "-X", "utf8", _PACKAGED_SCRIPT, "-n", "1", SLEEP])
    assert head.script == _PACKAGED_SCRIPT and head.script_signature == "package"
    assert not rule_matches(CallerRule(exe=head.exe, signature="package"), _peer(head))
    assert rule_matches(CallerRule(signature="package", interpreter="any script"), _peer(head))


@pytest.mark.skipif(not Path("/usr/bin/python3.11").exists(), reason="needs a packaged python")
def test_a_packaged_binary_replaced_while_running_is_not_vouched_for(tmp_path: Path) -> None:
    # A copy run then deleted: the mapped file is no longer any installed file.
    copy = tmp_path / "python3.11"
    shutil.copy2("/usr/bin/python3.11", copy)
    proc = subprocess.Popen([str(copy), "-c", SLEEP])
    try:
        time.sleep(0.4)
        os.unlink(copy)
        head = LinuxProbe().chain(proc.pid)[0]
    finally:
        proc.kill()
        proc.wait()
    assert head.exe.endswith(" (deleted)") and head.signature == "not-packaged"


@pytest.mark.parametrize(
    ("argv", "launcher"),
    [
        (["python3", "-m", "pipx", "run", "server"], True),
        (["python3", "-m", "uv", "run", "server"], True),
        (["node", "/usr/lib/node_modules/npm/bin/npx-cli.js", "server"], True),
        (["python3", "-m", "safeport", "context", "serve"], False),
        (["python3", "-c", "import uv"], False),
        (["node", "/opt/claude/cli.js"], False),
    ],
)
def test_an_interpreter_running_a_launcher_is_a_wrapper_not_a_host(
    argv: list[str], launcher: bool
) -> None:
    from safeport.action_gateway.identity.argv import runs_launcher

    assert runs_launcher(argv) is launcher


LOADER = Path("/lib64/ld-linux-x86-64.so.2")


@pytest.mark.skipif(not LOADER.exists(), reason="needs glibc's x86-64 loader")
def test_the_loader_run_as_a_program_is_judged_by_the_program_it_runs(tmp_path: Path) -> None:
    # ld.so is a packaged file; what it runs here is not.
    tool = tmp_path / "sleep"
    shutil.copy2("/usr/bin/sleep", tool)
    head = _head([str(LOADER), str(tool), "30"])
    assert head.interpreter and head.script == str(tool)
    assert head.script_signature == "not-packaged"
    assert not rule_matches(CallerRule(exe=head.exe, signature="package"), _peer(head))


@pytest.mark.skipif(not LOADER.exists(), reason="needs glibc's x86-64 loader")
def test_loader_options_that_preload_code_count_as_injected(tmp_path: Path) -> None:
    preload = tmp_path / "x.so"
    preload.write_bytes(b"")
    head = _head([str(LOADER), "--preload", str(preload), "/usr/bin/sleep", "30"])
    assert ("ld.so --preload", str(preload)) in head.injected_env
    assert not rule_matches(CallerRule(exe=head.exe), _peer(head))
    honest = _head([str(LOADER), "/usr/bin/sleep", "30"])
    assert honest.script == "/usr/bin/sleep" and not honest.injected_env
    if Path("/var/lib/dpkg/info").is_dir():
        # ld.so is an interpreter of native programs: what it loads is a command-line claim.
        assert honest.script_signature == "package"
        assert not rule_matches(CallerRule(exe=honest.exe, signature="package"), _peer(honest))
        assert rule_matches(
            CallerRule(signature="package", interpreter="any script"), _peer(honest)
        )


# A requester's code rewrites its own command line (its argv lives in its own memory, and
# /proc/PID/cmdline reads it from there) to claim the packaged interpreter runs a packaged script.
REWRITE_ARGV = r"""
import time
tail = open("/proc/self/stat").read().rsplit(")", 1)[1].split()
start, end = int(tail[45]), int(tail[46])  # arg_start and arg_end, fields 48 and 49
claim = b"/usr/bin/python3.11\0/usr/lib/python3.11/timeit.py\0"
with open("/proc/self/mem", "r+b", buffering=0) as mem:
    mem.seek(start)
    mem.write(claim.ljust(end - start, b"\0"))
time.sleep(30)
"""


@pytest.mark.skipif(not Path(_PACKAGED_SCRIPT).exists(), reason="needs a packaged python")
def test_an_interpreter_that_rewrites_its_command_line_is_not_admitted_on_its_claim() -> None:
    head = _head(["/usr/bin/python3.11", "-c", REWRITE_ARGV])
    # The lie took: the script shown is the packaged file, and that file is the package's.
    assert head.script == _PACKAGED_SCRIPT and head.script_signature == "package"
    assert head.signature == "package" and not head.code_injected
    for rule in (
        CallerRule(exe="/usr/bin/python3.11", signature="package"),
        CallerRule(exe_sha256=head.exe_sha256),
    ):
        assert not rule_matches(rule, _peer(head)), rule
    # What the kernel attests still admits it where the human said any script will do.
    assert rule_matches(CallerRule(signature="package", interpreter="any script"), _peer(head))


def test_a_packaged_program_that_is_not_an_interpreter_is_admitted_by_its_binary() -> None:
    # The legitimate case kept: a packaged binary, no claim involved.
    head = _head(["/usr/bin/sleep", "30"])
    assert not head.interpreter and head.signature == "package"
    assert rule_matches(CallerRule(signature="package", exe="/usr/bin/sleep"), _peer(head))
    assert rule_matches(CallerRule(exe_sha256=head.exe_sha256), _peer(head))


def _trace_me() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.ptrace(0, 0, None, None)  # PTRACE_TRACEME: the parent may now write its memory


def test_a_traced_requester_counts_as_injected_code() -> None:
    # Its tracer (any process of its uid, where Yama allows) can write code into the packaged
    # binary's memory: the binary the kernel mapped is no longer all that runs.
    proc = subprocess.Popen(["/usr/bin/sleep", "30"], preexec_fn=_trace_me)
    try:
        time.sleep(0.4)
        head = LinuxProbe().chain(proc.pid)[0]
    finally:
        proc.kill()
        proc.wait()
    assert ("traced", f"by pid {os.getpid()}") in head.injected_env and head.code_injected
    assert not rule_matches(CallerRule(exe="/usr/bin/sleep", signature="package"), _peer(head))


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("ELECTRON_RUN_AS_NODE", "1"),  # the packaged Electron app runs `-e CODE` as node
        ("OPENSSL_CONF", "/tmp/agent.cnf"),  # [provider_sect] module = /tmp/agent.so
        ("OPENSSL_MODULES", "/tmp/agent-providers"),
        ("GIO_EXTRA_MODULES", "/tmp/agent-gio"),
    ],
)
def test_variables_that_make_a_library_load_the_agents_module_count_as_injected(
    name: str, value: str
) -> None:
    env = {"PATH": "/usr/bin:/bin", name: value}
    head = _head(["/usr/bin/sleep", "30"], env=env)
    assert (name, value) in head.injected_env and head.code_injected
    assert not rule_matches(CallerRule(exe="/usr/bin/sleep", signature="package"), _peer(head))
