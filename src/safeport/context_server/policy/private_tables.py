"""The read policy's private names, as data: private folders and name patterns, the shapes of
key and secret file names, and the editor and backup decorations stripped before judging one.

The logic that applies them lives in ``read_policy.py`` and ``private_names.py``; this module only
names what is hidden, so a reviewer reads those rules in one place.
"""

from __future__ import annotations

import re

# Folders whose contents are user data rather than code (data/backup/export/log/media), and the
# credential folders of common tools. Matched against every component of a path.
DEFAULT_PRIVATE_FOLDERS: tuple[str, ...] = (
    "data",
    "backup",
    "backups",
    "export",
    "exports",
    "log",
    "logs",
    "media",
    "secret",
    "secrets",
    ".secrets",
    ".ssh",
    ".gnupg",
    ".password-store",
    # cloud and object-store command-line tools
    ".aws",
    ".azure",
    "gcloud",
    ".gcloud",
    ".oci",
    ".mc",
    ".pulumi",
    # containers and clusters
    ".docker",
    ".kube",
    ".minikube",
    ".helm",
)

# Name globs for secret-bearing files. Each is matched against the whole (normalised) name of
# every component, never as a substring: `tokenizer.py` and `keyboard.py` stay readable.
DEFAULT_PRIVATE_PATTERNS: tuple[str, ...] = (
    # environment files in every spelling (.env, .env.prod, .env-prod, .env_prod, .envrc,
    # .envprod) and folders named like them (.envs/.production/.django)
    ".env*",
    "*.env",
    # databases, event streams, logs
    "*.db",
    "*.db3",
    "*.sqlite",
    "*.sqlite3",
    "*.mdb",
    "*.jsonl",
    "*.ndjson",
    "*.log",
    # keys, keystores, password stores. Certificates (`.pem`, `.crt`, `.cer`, `.csr`) are not
    # here: their content decides (public_material.py); a `.pem` copy (`x.pem.bak`) is private
    # by KEY_SEGMENTS. DER (`.der`) is binary and ambiguous, so private.
    "*.key",
    "*.der",
    "*.p8",
    "*.pk8",
    "*.p12",
    "*.pfx",
    "*.pkcs12",
    "*.jks",
    "*.keystore",
    "*.keychain",
    "*.keychain-db",
    "*.gpg",
    "*.pgp",
    "*.asc",
    "*.ppk",
    "*.kdbx",
    "*.keytab",
    "*.mobileprovision",
    "secring.*",
    "*_key",
    # Terraform state, variables and CLI credentials
    "*.tfstate",
    "*.tfstate.*",
    "*.tfvars",
    "*.tfvars.json",
    ".terraformrc",
    "terraform.rc",
    "*.tfrc.json",
    # Kubernetes: kubeconfigs and secret manifests
    "kubeconfig",
    "kubeconfig[._-]*",
    "*.kubeconfig",
    "k3s.yaml",
    ".dockerconfigjson",
    # cloud and object-store CLI configuration
    "credentials",
    ".credentials",
    "*.credentials",
    "application_default_credentials.json",
    "*service[-_]account*.json",
    "serviceaccountkey*.json",
    "client_secret*.json",
    "accesstokens.json",
    "azureprofile.json",
    "msal_token_cache.*",
    ".boto",
    ".s3cfg",
    ".passwd-s3fs",
    "passwd-s3fs",
    "rclone.conf",
    ".rclone.conf",
    ".b2_account_info",
    ".databrickscfg",
    ".vault-token",
    # container registry auth
    ".dockercfg",
    "auth.json",
    # VPN profiles
    "*.ovpn",
    "*.nmconnection",
    "*.pcf",
    "wg[0-9]*.conf",
    # package registries, databases, web servers, git, shells
    ".netrc",
    "_netrc",
    ".npmrc",
    ".pypirc",
    ".pgpass",
    ".my.cnf",
    ".mylogin.cnf",
    ".htpasswd",
    "htpasswd",
    ".htdigest",
    ".git-credentials",
    ".gitcookies",
    "settings-security.xml",
    ".*_history",
    # secret stores named as such
    "*.secret",
    "*.secrets",
)

# Data files named as secrets (`db-secret.yaml`, `secrets.prod.json`, `app_secrets.toml`):
# Kubernetes and Helm manifests, CI variables. Code (`secrets_scanner.py`) keeps its name.
SECRET_DATA_FILE = re.compile(
    r"(?:(?:.*[-_.])?secrets?|secrets?\..*)\.(?:ya?ml|json|toml|ini|conf|cfg|properties|xml|env|txt)"
)
SECRET_DATA_HINT = "*secret(s).<yaml|json|toml|ini|conf|cfg|properties|xml|env|txt>"  # noqa: S105 - a description, not a value
CREDENTIALS_FILE = re.compile(r"credentials\.(?:json|toml|ya?ml|xml|ini|db|csv|txt|conf|cfg)")

# OpenSSH's key file names for every key type, under any suffix (`id_rsa.pub`, `id_rsa-cert.pub`,
# `id_rsa_work`, `id_rsa-old`, `id_rsa2`), and keys named `<anything>_<type>` as ssh-keygen -f
# users name them (`deploy_ed25519`). Not `id_*`, which would also hide `id_utils.py`.
KEY_TYPES = r"(?:rsa|dsa|ecdsa|ed25519|ecdsa_sk|ed25519_sk|xmss)"
SSH_KEY_NAME = re.compile(rf"id_{KEY_TYPES}(?:[^a-z].*)?|.+[_.-]{KEY_TYPES}(?:-cert)?(?:\.pub)?")
# A key extension anywhere after the first dot (`tls.key.2019`, `server.pem.orig`), but for
# `pem` as the last one, where the content decides (public_material.py).
KEY_SEGMENTS = frozenset(
    ["pem", "key", "ppk", "p8", "pk8", "p12", "pfx", "jks", "keystore", "kdbx"]
)

# Editor, backup and copy decorations around a name (stripped one at a time, every form checked):
# `.env~`, `id_rsa.bak`, `id_rsa-old`, `.id_rsa.swp` (vim), `#id_rsa#` and `.#id_rsa` (emacs),
# `id_rsa copy`, `id_rsa (2)`, `id_rsa.~1~`, compressed copies, and `.txt` appended.
DECORATION_WORDS = frozenset(
    [
        *("bak", "bk", "bkp", "backup", "old", "orig", "rej", "save", "saved", "sav", "copy"),
        *("tmp", "temp", "swp", "swo", "swn", "swx", "txt", "prev", "previous", "new", "last"),
    ]
)
COMPRESSED = frozenset(["gz", "bz2", "xz", "zip", "7z", "tar", "tgz", "zst"])
NUMBERED_BACKUP = re.compile(r"\.~\d+~\Z")
COPY_NUMBER = re.compile(r" \(\d+\)\Z")
DECORATION_AROUND = (
    re.compile(r"\A\.(.+)\.sw[a-p]\Z"),  # vim swap file of `name`
    re.compile(r"\A#(.+)#\Z"),  # emacs auto-save
    re.compile(r"\A\.#(.+)\Z"),  # emacs lock
    re.compile(r"\A(?:copy of |backup of )(.+)\Z"),
)
