"""The pure read policy: request parsing, private names, ignored folders, readable types."""

from __future__ import annotations

import unicodedata
from pathlib import PurePosixPath

import pytest

from safeport.context_server.policy.read_policy import InvalidInput, ReadPolicy, looks_binary
from safeport.context_server.policy.request_path import parse_request_path

POLICY = ReadPolicy()
ROOT = PurePosixPath("/srv/ws")


@pytest.mark.parametrize(
    "name",
    [
        ".env",
        ".env.production",
        ".ENV",
        ".Env.Local",
        ".envrc",
        "prod.env",
        "id_rsa",
        "id_dsa",
        "id_ecdsa",
        "id_ed25519",
        "id_ecdsa_sk",
        "id_ed25519_sk",
        "ID_RSA",
        "deploy.ppk",
        "tls.key",
        "store.p12",
        "store.pfx",
        "app.db",
        "app.sqlite",
        "app.sqlite3",
        "events.jsonl",
        "events.ndjson",
        "vault.kdbx",
        "terraform.tfstate",
        "terraform.tfstate.backup",
        ".netrc",
        ".npmrc",
        ".pypirc",
        ".pgpass",
        ".htpasswd",
        ".git-credentials",
        "credentials",
        "server.log",
        ".ssh",
        ".gnupg",
        ".aws",
        ".kube",
        ".docker",
        "data",
        "Data",
        "backups",
        "exports",
        "logs",
        "media",
    ],
)
def test_secret_names_are_private(name: str) -> None:
    assert POLICY.is_private_name(name)


# Each family the policy promises, with names that real repositories hold (none of them is in
# the default lists verbatim: the families, not the examples, are what is tested).
FAMILIES: dict[str, list[str]] = {
    "env spellings": [
        ".env-staging",
        ".env_dev",
        ".envqa",
        ".env.docker.local",
        ".Env-Prod",
        ".env\t",
        ".env.",
        " .env",
        ".env\u200b",
        ".envs",
        ".env-files",
        "staging.env",
    ],
    "editor and backup copies": [
        ".env.bak",
        "prod.env~",
        "id_ecdsa.old",
        "id_ed25519-old",
        "id_ed25519_sk.orig",
        ".id_rsa.swp",
        ".id_dsa.swo",
        "#id_ed25519#",
        ".#id_ecdsa",
        "id_rsa copy",
        "id_rsa copy 2",
        "id_rsa (1)",
        "id_rsa.~3~",
        "tls.key.save",
        "terraform.tfstate.copy",
        "db.sqlite3.gz",
        "vault.kdbx.tmp",
        ".npmrc.txt",
        ".pgpass.bak.1",
        "copy of .netrc",
        "logs.old",
        ".aws~",
    ],
    "keys under any suffix": [
        "id_rsa_github",
        "id_ed25519-work",
        "id_ecdsa2",
        "id_rsa.txt",
        "id_dsa.key.backup",
        "deploy_ed25519",
        "signing.pem.2019",
        "apns.p8",
        "android.pk8",
        "upload.keystore.orig",
        "github_deploy_key",
        "service.keytab",
    ],
    "terraform": [
        "prod.tfvars",
        "eu-west.auto.tfvars.json",
        ".terraformrc",
        "credentials.tfrc.json",
    ],
    "kubernetes": [
        "kubeconfig-eu",
        "cluster.kubeconfig",
        "kubeconfig.yaml",
        "db-secret.yaml",
        "tls_secrets.yml",
        "secrets.staging.json",
        "secret.yaml",
        ".dockerconfigjson",
        ".minikube",
    ],
    "cloud and object-store CLIs": [
        ".azure",
        "gcloud",
        ".oci",
        "application_default_credentials.json",
        "ci-service-account.json",
        "serviceAccountKey.json",
        "client_secret_8812.apps.googleusercontent.com.json",
        ".s3cfg",
        ".boto",
        "rclone.conf",
        ".passwd-s3fs",
        ".databrickscfg",
        ".vault-token",
        "credentials.toml",
    ],
    "container registries": [".dockercfg", "auth.json", ".docker"],
    "vpn profiles": ["office.ovpn", "home-lan.nmconnection", "wg1.conf", "site.pcf"],
    "shells, databases, git": [".zsh_history", ".my.cnf", ".gitcookies", ".htdigest"],
}


@pytest.mark.parametrize(
    "name", [name for names in FAMILIES.values() for name in names], ids=lambda n: repr(n)
)
def test_every_family_of_secret_files_is_private(name: str) -> None:
    assert POLICY.is_private_name(name)


@pytest.mark.parametrize(
    "name",
    [
        "tokenizer.py",
        "keyboard.py",
        "keys.py",
        "id_utils.py",
        "id_map.json",
        "id_generator",
        "identity.py",
        "environment.py",
        "env.py",
        "envelope.md",
        "database.py",
        "datasets.py",
        "logging.py",
        "logger.ts",
        "secrets_scanner.py",
        "credentials_form.tsx",
        "media_query.css",
        "README.md",
        "config.toml",
        "Makefile",
        # code whose names brush against the private families
        "environment.ts",
        "env_loader.go",
        "dotenv.rb",
        "secret_santa.py",
        "secrets_manager_client.ts",
        "key_value_store.rs",
        "monkey.py",
        "primary_key.py",
        "keymap.json",
        "kubernetes_client.py",
        "tfvars_parser.py",
        "terraform_plan.md",
        "vpn_status.go",
        "wg_status.py",
        "rsa.py",
        "rsa_test.go",
        "ssh_config_parser.py",
        "authorization.json",
        "auth.py",
        "docker-compose.yml",
        "Dockerfile",
        "history.md",
        "backup_test.py",
        "export_csv.py",
        "data_loader.py",
        "settings.py",
        "config.json",
        "package.json",
        "old_api.py",
        "copy_files.sh",
        "notes.txt",
    ],
)
def test_ordinary_code_is_not_private(name: str) -> None:
    assert not POLICY.is_private_name(name)


def test_a_private_component_anywhere_makes_the_whole_path_private() -> None:
    assert POLICY.is_private(("src", ".ssh", "config"))
    assert POLICY.is_private(("data", "report.md"))
    assert not POLICY.is_private(("src", "data_loader.py"))


def test_safeport_folders_are_private_by_location_with_component_wise_containment() -> None:
    policy = POLICY.tightened(locations=[PurePosixPath("/srv/ws/.sp")])
    assert policy.is_private(("x",), PurePosixPath("/srv/ws/.sp/vault.sp"))
    assert policy.is_private(("x",), PurePosixPath("/srv/ws/.sp"))
    # A sibling sharing the string prefix is not inside it.
    assert not policy.is_private(("x",), PurePosixPath("/srv/ws/.sp-notes/a.md"))


def test_nfd_and_nfc_spellings_match_the_same_private_folder() -> None:
    policy = POLICY.tightened(folders=[unicodedata.normalize("NFC", "privé")])
    assert policy.is_private_name(unicodedata.normalize("NFD", "privé"))
    assert policy.is_private_name(unicodedata.normalize("NFC", "PRIVÉ"))


def test_context_toml_can_only_tighten() -> None:
    tighter = POLICY.tightened(folders=["secrets"], patterns=["*.vault"], projects=["app"])
    assert tighter.is_private_name("secrets") and tighter.is_private_name("x.vault")
    # Everything private before is still private.
    assert all(tighter.is_private_name(n) for n in (".env", "id_rsa", "data"))
    # Projects only ever narrow: a second allowlist intersects the first.
    narrower = tighter.tightened(projects=["app", "other"])
    assert narrower.projects == frozenset({"app"})


def test_project_allowlist_keeps_loose_root_files_readable() -> None:
    policy = POLICY.tightened(projects=["app"])
    assert policy.out_of_projects(("lib", "x.py"), is_dir=False)
    assert policy.out_of_projects(("lib",), is_dir=True)
    assert not policy.out_of_projects(("app", "x.py"), is_dir=False)
    assert not policy.out_of_projects(("README.md",), is_dir=False)


@pytest.mark.parametrize(
    ("parts", "ignored"),
    [
        (("node_modules", "x.js"), True),
        ((".git", "config"), True),
        (("pkg.egg-info", "PKG-INFO"), True),
        (("src", "__pycache__", "a.pyc"), True),
        (("src", "build_tools.py"), False),
        (("gitignore_parser.py",), False),
    ],
)
def test_generated_folders_are_ignored(parts: tuple[str, ...], ignored: bool) -> None:
    assert POLICY.is_ignored(parts) is ignored


@pytest.mark.parametrize(
    ("name", "verdict"),
    [
        ("app.py", None),
        ("Makefile", None),
        ("Dockerfile", None),
        ("LICENSE", None),
        ("noext", None),
        (".bashrc", None),
        ("config.toml.example", None),
        ("logo.png", "binary"),
        ("lib.so", "binary"),
        ("model.safetensors", "binary"),
        ("weird.xyz", "unreadable-type"),
    ],
)
def test_readable_types(name: str, verdict: str | None) -> None:
    assert POLICY.type_verdict(name) == verdict


def test_binary_sniff_looks_for_nul_in_the_first_block() -> None:
    assert looks_binary(b"abc\x00def")
    assert not looks_binary(b"plain text\n" * 100)
    assert not looks_binary(b"a" * 9000 + b"\x00")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty"),
        ("a\x00b", "NUL"),
        ("a\nb", "control"),
        ("x" * 10_000, "longer than"),
        ("/etc/passwd", "absolute"),
        ("~/.ssh/id_rsa", "absolute"),
        ("../x", "'..'"),
        ("src/../../x", "'..'"),
        ("C:\\Windows\\win.ini", "Windows"),
        ("C:/Windows", "Windows"),
        ("\\\\server\\share", "Windows"),
        ("src\\app.py", "Windows"),
        ("file:///etc/passwd", "URLs"),
        ("a/" + "b" * 300, "component"),
    ],
)
def test_bad_request_paths_are_refused_with_a_clear_sentence(text: str, message: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        parse_request_path(text, ["ws"])
    assert message in str(caught.value)
    assert "/srv" not in str(caught.value)


def test_dot_and_empty_components_collapse() -> None:
    assert parse_request_path("./src//app.py", ["ws"]).parts == ("src", "app.py")
    assert parse_request_path(".", ["ws"]).parts == ()


def test_with_several_roots_the_first_component_names_the_root() -> None:
    request = parse_request_path("lib/src/a.py", ["app", "lib"])
    assert (request.root, request.parts) == ("lib", ("src", "a.py"))
    assert parse_request_path(".", ["app", "lib"]).root == ""
    with pytest.raises(InvalidInput):
        parse_request_path("other/a.py", ["app", "lib"])


def test_the_literal_check_needs_no_disk() -> None:
    # The same verdict whether or not the file exists: it is decided from the name alone.
    assert POLICY.literal_verdict((".env.does-not-exist",), ROOT / ".env.does-not-exist")
    assert POLICY.literal_verdict(("src", "app.py"), ROOT / "src/app.py") is None


# -- the (name, kind) verdict cache -----------------------------------------------------------


def test_a_name_verdict_depends_on_the_kind_of_entry() -> None:
    policy = ReadPolicy()
    assert policy.name_verdict("photo.png", "file") == "binary"
    assert policy.name_verdict("photo.png", "directory") is None  # a folder has no file type
    assert policy.name_verdict(".env", "directory") == "private"
    assert policy.name_verdict(".env", "other") == "private"
    assert policy.name_verdict("node_modules", "directory") == "ignored"
    assert policy.name_verdict("notes.md", "file") is None


def test_a_name_verdict_is_worked_out_once_per_name_and_kind(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    policy = ReadPolicy()
    asked: list[str] = []
    real = ReadPolicy.is_private_name

    def counting(self: ReadPolicy, name: str) -> bool:
        asked.append(name)
        return real(self, name)

    monkeypatch.setattr(ReadPolicy, "is_private_name", counting)
    assert policy.name_verdict("app.py", "file") is None
    assert policy.name_verdict("app.py", "file") is None
    assert asked == ["app.py"]
    assert policy.name_verdict("app.py", "directory") is None  # another kind: judged anew
    assert asked == ["app.py", "app.py"]


def test_a_tightened_policy_starts_without_the_verdicts_of_the_one_before() -> None:
    policy = ReadPolicy()
    assert policy.name_verdict("notes.md", "file") is None
    tighter = policy.tightened(patterns=["notes.*"])
    assert tighter.name_verdict("notes.md", "file") == "private"
    assert policy.name_verdict("notes.md", "file") is None
