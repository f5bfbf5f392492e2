"""A real hostile workspace for the context server, and the real server to attack it with.

Private files hold canary strings; names inside private folders are canaries too. Everything an
attacker could reach by a link, a hard link, a sibling prefix, a special file, a Unicode or case
variant is built for real on disk.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
import stat
import sys
import threading
import unicodedata
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

BIG_FILE_BYTES = 50 * 1024 * 1024
NFC_FOLDER = unicodedata.normalize("NFC", "privé")
NFD_FOLDER = unicodedata.normalize("NFD", "privé")


@dataclass
class Hostile:
    base: Path
    root: Path
    home: Path  # SAFEPORT_HOME
    canaries: dict[str, str] = field(default_factory=dict)
    # Private files of the second round's families, by display path: never in a search, a
    # name search or the change feed.
    private_paths: list[str] = field(default_factory=list)

    def canary(self, label: str) -> str:
        value = f"CANARY{secrets.token_hex(6)}{label.upper().replace('-', '').replace(' ', '')}"
        self.canaries[label] = value
        return value

    def found_canaries(self, text: str) -> list[str]:
        return [label for label, value in self.canaries.items() if value in text]


def build_hostile_workspace(base: Path) -> Hostile:
    root = base / "ws"
    home = base / "sp-home"
    home.mkdir(mode=0o700)
    h = Hostile(base, root, home)
    outside = base / "outside"
    fake_home = base / "fakehome"
    sibling = base / "ws-secrets"  # shares the root's name as a string prefix
    for folder in (root, outside, fake_home / ".ssh", sibling):
        folder.mkdir(parents=True)

    def write(rel: str, text: str, where: Path = root) -> Path:
        path = where / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path

    # Ordinary code and docs: all of it must stay readable.
    write("README.md", "# Demo project\n\nA small service. See src/app.py.\n")
    write("src/app.py", 'def hello():\n    return "world"\n\n\nclass Greeter:\n    pass\n')
    write("src/tokenizer.py", "def tokenize(text):\n    return text.split()\n")
    write("src/keyboard.py", "KEYS = ['a', 'b']\n")
    write("src/id_utils.py", "def make_id():\n    return 42\n")
    write("src/secrets_scanner.py", "# looks for leaked tokens in diffs\nPATTERN = 'token'\n")
    write("docs/guide.md", "## Guide\n\nRun `make test`. The magic word is xylophone.\n")
    write("src/long_line.txt", "x" * 10_000 + "\nsecond line\n")
    write("Makefile", "test:\n\tpytest\n")

    # Private files, each with its own canary.
    for rel in (
        ".env",
        ".env.production",
        ".ENV.local",
        "config/.npmrc",
        "config/.netrc",
        "config/.pgpass",
        "config/.pypirc",
        "config/.htpasswd",
        "config/.git-credentials",
        "keys/id_rsa",
        "keys/id_ed25519",
        "keys/id_ecdsa_sk",
        "keys/tls.key",
        "keys/deploy.ppk",
        "keys/vault.kdbx",
        "infra/terraform.tfstate",
        "infra/terraform.tfstate.backup",
        "db.sqlite3",
        "events.jsonl",
        ".aws/credentials",
        ".kube/config",
        ".docker/config.json",
        ".gnupg/secring.txt",
        ".ssh/id_ecdsa",
        "logs/app.txt",
        "media/photo.txt",
        "backup/dump.sql",
        "Data/customers.csv",
    ):
        write(rel, f"secret material {h.canary(rel)}\n")
    # Names that may hold public material, holding a private key instead: refused by content.
    for rel in ("keys/ID_RSA.pub", "keys/server.pem"):
        write(
            rel,
            "-----BEGIN OPENSSH PRIVATE KEY-----\n"
            f"secret material {h.canary(rel)}\n-----END OPENSSH PRIVATE KEY-----\n",
        )
    # What real repositories hold by accident: every .env spelling, editor and backup copies,
    # keys under other suffixes, infrastructure and cloud tools' secret files. Names chosen
    # here, not the ones the defaults list.
    for rel in (
        ".env-qa",
        ".env_ci",
        ".envtest",
        ".env~",
        ".env ",
        ".envs/.staging/.postgres",
        "keys/id_ed25519~",
        "keys/id_ecdsa.bak",
        "keys/id_rsa_deploy",
        "keys/.id_rsa.swp",
        "keys/tls.key.old",
        "keys/signing.pem.2019",
        "deploy/eu.auto.tfvars.json",
        "deploy/prod.tfvars",
        "deploy/kubeconfig-prod",
        "deploy/db-secret.yaml",
        "deploy/.s3cfg",
        "deploy/rclone.conf",
        "deploy/.dockercfg",
        "deploy/auth.json",
        "deploy/office.ovpn",
        "deploy/wg0.conf",
        "deploy/.vault-token",
        "deploy/ci-service-account.json",
    ):
        write(rel, f"secret material {h.canary(rel)}\n")
        h.private_paths.append(rel)
    write("deploy/README.md", "how to deploy (readable next to its secrets)\n")
    # Names that are not UTF-8: a private one, a key, and readable code.
    raw_root = os.fsencode(root)
    for raw, label in ((b".env\xe9", "latin-env"), (b"keys/id_rsa\xff", "latin-key")):
        with open(os.path.join(raw_root, raw), "wb") as f:
            f.write(f"secret material {h.canary(label)}\n".encode())
    h.private_paths += [".env%E9", "keys/id_rsa%FF"]
    with open(os.path.join(raw_root, b"src", b"caf\xe9.py"), "wb") as f:
        f.write(b"def latin():\n    return 'quokka'\n")
    # Names inside private folders are canaries themselves: never listed, indexed or logged.
    name = h.canary("private-name")
    write(f"data/{name}.txt", "innocent words in a private folder\n")
    write(f"data/{name}/inner.py", f"x = '{h.canary('data-inner')}'\n")
    # NFD on disk, NFC in context.toml; both spellings must be private.
    write(f"{NFD_FOLDER}/notes.md", f"{h.canary('nfd')}\n")
    write("config.toml.example", "# an allowed neighbour of private files\nport = 8080\n")

    # Ignored (generated) folders hold canaries too: ignored means never served.
    write(".git/config", f"[remote]\nurl = https://x:{h.canary('git')}@example.com\n")
    write("node_modules/pkg/index.js", f"module.exports = '{h.canary('node')}'\n")

    # Outside the root: reached only by escapes.
    write("outside-secret.txt", f"{h.canary('outside')}\n", outside)
    write("secret.txt", f"{h.canary('sibling')}\n", sibling)
    write(".ssh/id_ed25519", f"-----BEGIN OPENSSH PRIVATE KEY-----\n{h.canary('ssh')}\n", fake_home)
    (fake_home / ".ssh" / "config").write_text(f"Host x\n  # {h.canary('ssh-config')}\n")
    # /etc/passwd's first line is the canary for links to /etc.
    h.canaries["etc-passwd"] = "root:x:0:0:"

    # Symlinks of every flavour.
    links = {
        "link_abs_outside.txt": str(outside / "outside-secret.txt"),
        "link_rel_outside.txt": "../outside/outside-secret.txt",
        "link_parent": "..",
        "link_dangling.txt": "/nonexistent/safeport/file.txt",
        "link_etc": "/etc",
        "link_passwd.txt": "/etc/passwd",
        "link_ssh": str(fake_home / ".ssh"),
        "link_ssh_key.txt": str(fake_home / ".ssh" / "id_ed25519"),
        "link_sibling.txt": "../ws-secrets/secret.txt",
        "link_sibling_dir": "../ws-secrets",
        "innocent.txt": ".env",
        "notes_link.md": "keys/server.pem",
        "data_link": "data",
        "docs/up_link.md": "../.env",
        "link_zero.txt": "/dev/zero",
        "loop_a": "loop_b",
        "loop_b": "loop_a",
        "good_link.py": "src/app.py",
        # A loop before `..` (realpath gives up there and keeps the rest unresolved).
        "via_loop.txt": "loop_a/../link_etc/passwd",
        "via_loop_key.txt": "loop_a/../keys/id_rsa",
        "via_data.py": "data/../src/app.py",
        "via_abs_root.py": str(root / "src" / "app.py"),
    }
    for name_, target in links.items():
        (root / name_).symlink_to(target)

    # A chain of a thousand links: a clean refusal, never a crash.
    (root / "chain").mkdir()
    (root / "chain" / "l0000").symlink_to("../src/app.py")
    for i in range(1, 1000):
        (root / "chain" / f"l{i:04d}").symlink_to(f"l{i - 1:04d}")
    # A hard link to an outside file (same filesystem as the tmp folder).
    os.link(outside / "outside-secret.txt", root / "hardlink.txt")
    # A FIFO: opening it must never block the server.
    os.mkfifo(root / "pipe.txt")
    # A 50 MB text file: read in head only, never indexed.
    with (root / "big.txt").open("wb") as f:
        line = b"0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz012\n"
        block = line * (1 << 20 // len(line) + 1)
        written = 0
        while written < BIG_FILE_BYTES:
            f.write(block)
            written += len(block)
    # The swap targets: a link flipped between a benign and a private file during reads.
    (root / "swap.txt").symlink_to("src/app.py")
    (root / "swapdir").mkdir()
    write("swapdir/f.txt", "benign swap folder\n")

    (home / "context.toml").write_text(
        f'[private]\nfolders = ["{NFC_FOLDER}", "infra"]\npatterns = ["*.tfstate.backup"]\n',
        encoding="utf-8",
    )
    return h


def put_swapped(root: Path, *, benign: bool) -> None:
    """Rename swap.txt and swapdir to their benign or their private side, as an attacker does."""
    real_dir = root / "swapdir.real"
    tmp = root / "swap.tmp"
    with contextlib.suppress(FileNotFoundError):
        tmp.unlink()
    tmp.symlink_to("src/app.py" if benign else ".env")
    os.replace(tmp, root / "swap.txt")
    # swapdir: a real folder one moment, a link to the private data folder the next.
    with contextlib.suppress(OSError):
        if benign:
            (root / "swapdir").unlink()
            os.rename(real_dir, root / "swapdir")
        else:
            os.rename(root / "swapdir", real_dir)
            (root / "swapdir").symlink_to("data")


@contextlib.contextmanager
def swapping(root: Path, stop_after: float = 30.0) -> Iterator[None]:
    """Flip swap.txt between src/app.py and .env, and swapdir between a folder and data/."""
    done = threading.Event()

    def flip() -> None:
        benign = True
        while not done.wait(0.0005):
            benign = not benign
            put_swapped(root, benign=benign)

    thread = threading.Thread(target=flip, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join(stop_after)
        # Leave the tree as it was built.
        put_swapped(root, benign=True)
        with contextlib.suppress(FileNotFoundError):
            (root / "swap.tmp").unlink()


def tree_digest(root: Path) -> str:
    """Names, types, sizes, mtimes, link targets and contents of every entry (not atimes)."""
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames.sort()
        for name in sorted(dirnames + filenames):
            path = Path(dirpath, name)
            st = path.lstat()
            h.update(os.fsencode(path.relative_to(root)) + b"\0")
            h.update(
                f"{stat.S_IFMT(st.st_mode)}:{st.st_size}:{st.st_mtime_ns}:{st.st_nlink}".encode()
            )
            if stat.S_ISLNK(st.st_mode):
                h.update(os.fsencode(os.readlink(path)))
            elif stat.S_ISREG(st.st_mode):
                with path.open("rb") as f:
                    while block := f.read(1 << 20):
                        h.update(block)
    return h.hexdigest()


def server_params(roots: list[Path], home: Path, *extra: str) -> StdioServerParameters:
    args = ["-m", "safeport.context_server"]
    for root in roots:
        args += ["--root", str(root)]
    return StdioServerParameters(
        command=sys.executable,
        args=[*args, *extra],
        env={"SAFEPORT_HOME": str(home), "PATH": os.environ.get("PATH", "/usr/bin:/bin")},
    )


@contextlib.asynccontextmanager
async def connected(params: StdioServerParameters, errlog: TextIO) -> AsyncIterator[Client]:
    async with Client(stdio_client(params, errlog=errlog), read_timeout_seconds=30) as client:
        yield client


def result_text(result: Any) -> str:
    """Everything a client receives from a call, as one string to search for canaries."""
    parts = [c.text for c in result.content if getattr(c, "text", None) is not None]
    if result.structured_content is not None:
        import json

        parts.append(json.dumps(result.structured_content, ensure_ascii=False))
    return "\n".join(parts)
