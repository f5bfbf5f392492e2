"""The labelled corpus: secrets in the places people leave them, look-alikes that are not
secrets, and the code of installed packages as the real text to count false positives on.

Everything is generated on each run (fresh random bodies, fresh keys from ``cryptography``) or
read at run time from site-packages; nothing secret-shaped is stored in the repository.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import string
import sys
import sysconfig
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

from benchmarks.secret_corpus import context
from benchmarks.secret_corpus.tokens import ALNUM, TOKENS, rand


@dataclass(frozen=True)
class Sample:
    category: str  # "token:github-classic", "private-key:openssh", "generic:yaml", "negative:uuid"
    text: str
    secret: str | None  # the value that must not survive; None for a negative


def _token_contexts(token: str) -> list[str]:
    return [
        f'TOKEN = "{token}"\n',
        f"export API_TOKEN={token}\n",
        f"  credentials:\n    value: {token}\n",
        f"see {token} in the log\n",
        json.dumps({"config": {"upstream": token}}) + "\n",
    ]


def token_samples() -> Iterator[Sample]:
    for kind, make in TOKENS.items():
        for context_number in range(5):
            token = make()
            yield Sample(f"token:{kind}", _token_contexts(token)[context_number], token)


def _keys() -> dict[str, str]:
    rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    ec_key = ec.generate_private_key(ec.SECP256R1())
    ed_key = ed25519.Ed25519PrivateKey.generate()
    pem = serialization.Encoding.PEM
    none = serialization.NoEncryption()
    password = serialization.BestAvailableEncryption(b"correct horse")
    return {
        "pem-rsa": rsa_key.private_bytes(
            pem, serialization.PrivateFormat.TraditionalOpenSSL, none
        ).decode(),
        "pem-ec": ec_key.private_bytes(
            pem, serialization.PrivateFormat.TraditionalOpenSSL, none
        ).decode(),
        "pkcs8": rsa_key.private_bytes(pem, serialization.PrivateFormat.PKCS8, none).decode(),
        "pkcs8-encrypted": ec_key.private_bytes(
            pem, serialization.PrivateFormat.PKCS8, password
        ).decode(),
        "openssh": ed_key.private_bytes(pem, serialization.PrivateFormat.OpenSSH, none).decode(),
        "openssh-encrypted": ed_key.private_bytes(
            pem, serialization.PrivateFormat.OpenSSH, password
        ).decode(),
    }


def key_body(key: str) -> str:
    """A piece of the key's body that must not survive (its longest base64 line)."""
    return max((line for line in key.splitlines() if "-----" not in line), key=len)


def private_key_samples() -> Iterator[Sample]:
    for kind, key in _keys().items():
        body = key_body(key)
        yield Sample(f"private-key:{kind}", f"# ops notes\n{key}\nnext line\n", body)
        escaped = json.dumps({"type": "service_account", "private_key": key})
        yield Sample(f"private-key:{kind}-json-escaped", escaped + "\n", body)
        indented = "".join(f"    {line}\n" for line in key.splitlines())
        yield Sample(f"private-key:{kind}-yaml", f"tls:\n  key: |\n{indented}other: 1\n", body)


def _password() -> str:
    return rand(4, string.ascii_lowercase) + rand(4, string.digits) + rand(4, ALNUM) + rand(4)


def generic_samples() -> Iterator[Sample]:
    shapes = {
        "python": 'db_password = "{v}"\n',
        "python-annotated": 'API_KEY: str = "{v}"\n',
        "python-kwarg": 'client = Client(user="app", password="{v}")\n',
        "javascript": "const clientSecret = '{v}';\n",
        "go": 'authToken := "{v}"\n',
        "yaml": "database:\n  password: {v}\n",
        "yaml-quoted": 'secret_key: "{v}"\n',
        "json": '{{"client_secret": "{v}", "user": "svc"}}\n',
        "toml": '[service]\naccess_token = "{v}"\n',
        "ini": "[db]\npasswd = {v}\n",
        "properties": "spring.datasource.password={v}\n",
        "dotenv": "STRIPE_SECRET={v}\n",
        "xml": "<password>{v}</password>\n",
        "php": "$config['api_key'] = '{v}';\n",
        "ruby": ":private_key => '{v}',\n",
        "notebook": '"source": ["token = \\"{v}\\"\\n"]\n',
        "connection-url": "DATABASE_URL=postgres://app:{v}@db.internal:5432/app\n",
        "https-userinfo": "git clone https://deploy:{v}@git.example.org/repo.git\n",
        "authorization-bearer": "curl -H 'Authorization: Bearer {v}' https://api.example.org\n",
        "authorization-basic": 'headers = {{"Authorization": "Basic {v}"}}\n',
        "npmrc": "//registry.npmjs.org/:_authToken={v}\n",
        "docker-auths": '{{"auths": {{"registry.example.org": {{"auth": "{v}"}}}}}}\n',
        "netrc": "machine api.example.org login deploy password {v}\n",
    }
    for shape, template in shapes.items():
        for _ in range(4):
            value = _password() if shape != "docker-auths" else _basic()
            if shape == "authorization-basic":
                value = _basic()
            yield Sample(f"generic:{shape}", template.format(v=value), value)


def _basic() -> str:
    import base64

    return base64.b64encode(f"deploy:{_password()}".encode()).decode()


def negative_samples() -> Iterator[Sample]:
    digest = hashlib.sha256(secrets.token_bytes(16)).hexdigest()
    sha1 = hashlib.sha1(secrets.token_bytes(16)).hexdigest()
    md5 = hashlib.md5(secrets.token_bytes(16)).hexdigest()
    integrity = "sha512-" + __import__("base64").b64encode(hashlib.sha512(b"x").digest()).decode()
    ed = ed25519.Ed25519PrivateKey.generate().public_key()
    ssh_public = ed.public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
    ).decode()
    pem_public = ed.public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    ).decode()
    image = (
        "data:image/png;base64," + __import__("base64").b64encode(secrets.token_bytes(300)).decode()
    )
    cases = {
        "sha256": f'sha256 = "{digest}"\n',
        "git-sha": f'commit {sha1}\nrevision = "{sha1}"\n',
        "md5": f"checksum: {md5}\n",
        "uuid": f'request_id = "{uuid.uuid4()}"\ntoken_id = "{uuid.uuid4()}"\n',
        "package-lock": json.dumps(
            {
                "node_modules/x": {
                    "version": "1.0.0",
                    "resolved": "https://registry.npmjs.org/x/-/x-1.0.0.tgz",
                    "integrity": integrity,
                }
            }
        )
        + "\n",
        "poetry-lock": f'files = [\n    {{file = "x-1.0.tar.gz", hash = "sha256:{digest}"}},\n]\n',
        "ssh-public-key": ssh_public + " deploy@host\n",
        "pem-public-key": pem_public,
        "data-image": f'<img src="{image}">\n',
        "env-lookup": 'password = os.environ["DB_PASSWORD"]\ntoken = os.getenv("GITHUB_TOKEN")\n',
        "process-env": "const apiKey = process.env.API_KEY;\n",
        "template": "password: ${DB_PASSWORD}\ntoken: {{ vault_token }}\n",
        "angle-placeholder": 'api_key = "<YOUR_API_KEY>"\n',
        "xxxx": 'secret = "xxxxxxxxxxxxxxxxxxxx"\n',
        "changeme": "password=changeme\n",
        "getpass": "password = getpass.getpass()\n",
        "docs-url": "postgres://user:password@localhost/db\n",
        "empty": 'password = ""\n',
        "variable": "password = settings.database_password\n",
    }
    for name, text in cases.items():
        yield Sample(f"negative:{name}", text, None)


def real_code_files(limit_mb: float = 20.0) -> Iterator[Path]:
    """Source files of the installed packages (code no one here wrote), up to ``limit_mb``."""
    purelib = Path(sysconfig.get_paths()["purelib"])
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    budget = int(limit_mb * 1_000_000)
    suffixes = {".py", ".json", ".toml", ".cfg", ".ini", ".yaml", ".yml", ".md", ".txt", ".js"}
    for root in (purelib, stdlib):
        for path in sorted(root.rglob("*")):
            if path.suffix in suffixes and path.is_file() and "safeport" not in path.parts:
                size = path.stat().st_size
                if size > 2_000_000:
                    continue
                budget -= size
                if budget < 0:
                    return
                yield path
    print("corpus: ran out of site-packages before the budget", file=sys.stderr)


def context_samples() -> Iterator[Sample]:
    """Secrets written in context (``context.py``), and the same places holding none."""
    for shape, text, secret in context.context_samples():
        yield Sample(f"context:{shape}", text, secret)
    for name, text in context.look_alikes():
        yield Sample(f"negative:{name}", text, None)


def labelled() -> list[Sample]:
    from benchmarks.secret_corpus.round_two import round_two_samples  # both build on this module
    from benchmarks.secret_corpus.shapes import shape_samples

    return [
        *token_samples(),
        *private_key_samples(),
        *generic_samples(),
        *negative_samples(),
        *context_samples(),
        *shape_samples(),
        *round_two_samples(),
    ]
