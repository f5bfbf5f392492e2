"""Secrets whose value is not on one line with its name: private JWKs (only their private
members withheld), values below a secret-like name (YAML block scalars and continued values,
TOML multi-line strings, strings continued or concatenated across lines in code), and every
data value of a Kubernetes Secret. Public JWKs, prose under a non-secret key, a ConfigMap's data
and code that only mentions a secret's name are served; hostile repetitions stay linear."""

from __future__ import annotations

import base64
import json
import secrets
import string
import time
from collections.abc import Callable

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

from benchmarks.secret_corpus.shapes import shape_samples
from benchmarks.secret_corpus.tokens import ALNUM, rand
from safeport.shared.secret_scan import find_secrets, redact

PRIVATE = ("d", "p", "q", "dp", "dq", "qi", "k")


def _jwks() -> dict[str, dict[str, str]]:
    rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    ec_key = ec.generate_private_key(ec.SECP384R1())
    found = {
        "rsa": jwt.algorithms.RSAAlgorithm.to_jwk(rsa_key, as_dict=True),
        "ec": jwt.algorithms.ECAlgorithm.to_jwk(ec_key, as_dict=True),
        "okp": jwt.algorithms.OKPAlgorithm.to_jwk(
            ed25519.Ed25519PrivateKey.generate(), as_dict=True
        ),
        "oct": {"kty": "oct", "kid": "hmac-1", "k": _b64url(secrets.token_bytes(32))},
    }
    return {kind: {k: str(v) for k, v in jwk.items()} for kind, jwk in found.items()}


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


JWKS = _jwks()


def _private_values(jwk: dict[str, str]) -> list[str]:
    return [value for name, value in jwk.items() if name in PRIVATE]


def _yaml(jwk: dict[str, str], indent: str = "  ") -> str:
    lines = [f"{name}: {value}" for name, value in jwk.items()]
    return "jwk:\n" + "".join(f"{indent}{line}\n" for line in lines)


JWK_SHAPES: dict[str, Callable[[dict[str, str]], str]] = {
    "json-compact": lambda jwk: json.dumps(jwk) + "\n",
    "json-pretty": lambda jwk: json.dumps(jwk, indent=2) + "\n",
    "jwks-set": lambda jwk: json.dumps({"keys": [jwk]}, indent=4) + "\n",
    "escaped-in-a-string": lambda jwk: json.dumps({"SIGNING_JWK": json.dumps(jwk)}) + "\n",
    "python-dict": lambda jwk: f"KEY = {jwk!r}\n",
    "yaml-mapping": _yaml,
    "yaml-list-item": lambda jwk: (
        "keys:\n"
        + "".join(
            ("  - " if n == 0 else "    ") + f"{name}: '{value}'\n"
            for n, (name, value) in enumerate(jwk.items())
        )
    ),
}


@pytest.mark.parametrize("kind", list(JWKS))
@pytest.mark.parametrize("shape", list(JWK_SHAPES))
def test_a_private_jwks_private_members_are_withheld_and_the_rest_served(
    kind: str, shape: str
) -> None:
    jwk = JWKS[kind]
    text = JWK_SHAPES[shape](jwk)
    redacted, findings = redact(text)
    assert [value for value in _private_values(jwk) if value in redacted] == []
    assert {finding.kind for finding in findings} == {"private-key"}
    public = [v for n, v in jwk.items() if n not in PRIVATE and len(v) > 3]
    assert [value for value in public if value not in redacted] == []


def test_a_public_jwk_and_a_public_jwks_are_served() -> None:
    public = [{n: v for n, v in jwk.items() if n not in PRIVATE} for jwk in JWKS.values()]
    text = json.dumps({"keys": public}, indent=2) + "\n" + _yaml(public[1])
    assert find_secrets(text) == []


def test_code_that_names_the_private_members_is_served() -> None:
    code = (
        'PRIVATE_MEMBERS = {"kty": "RSA", "d": "private exponent", "p": "first prime"}\n'
        "if jwk['kty'] == 'EC' and 'd' in jwk:\n    sticky = jwk['d']\n"
    )
    assert find_secrets(code) == []


def _value() -> str:
    alphabet = string.ascii_letters + string.digits
    return "".join(secrets.choice(alphabet) for _ in range(10)) + "7aZ" + secrets.token_hex(4)


BELOW_SHAPES = {
    "yaml-literal": "db:\n  password: |\n    {v}\n  port: 5432\n",
    "yaml-literal-strip": "api_token: |-\n  {v}\nnext: 1\n",
    "yaml-folded": "client_secret: >\n  {v}\nnext: 1\n",
    "yaml-next-line": "auth:\n  secret_key:\n    {v}\n  region: north\n",
    "toml-multiline": 'access_token = """\n{v}\n"""\nother = 1\n',
    "toml-literal-multiline": "api_key = '''\n{v}'''\n",
    "python-parenthesised": 'DB_PASSWORD = (\n    "{v}"\n)\n',
    "shell-continuation": 'export AUTH_TOKEN=\\\n  "{v}"\n',
}


@pytest.mark.parametrize("shape", list(BELOW_SHAPES))
def test_a_value_below_its_secret_like_name_is_withheld(shape: str) -> None:
    value = _value()
    text = BELOW_SHAPES[shape].format(v=value)
    redacted, findings = redact(text)
    assert value not in redacted
    assert findings
    assert redacted.count("\n") == text.count("\n")


SPLIT_SHAPES = {
    "plus-at-line-end": 'api_token = "{a}" +\n    "{b}";\n',
    "plus-at-line-start": 'String apiToken = "{a}"\n    + "{b}";\n',
    "implicit-concatenation": 'SECRET_KEY = ("{a}"\n              "{b}")\n',
    "backslash-in-string": "secret = '{a}\\\n{b}'\n",
    "backslash-between-strings": 'token = "{a}" \\\n  "{b}"\n',
    "triple-quote-opened-on-the-line": "password = '''{a}\n{b}'''\n",
}


@pytest.mark.parametrize("shape", list(SPLIT_SHAPES))
def test_a_value_split_across_lines_is_withheld_whole(shape: str) -> None:
    first, second = _value()[:9], _value()[:9]
    text = SPLIT_SHAPES[shape].format(a=first, b=second) + "done = True\n"
    redacted, findings = redact(text)
    assert first not in redacted and second not in redacted
    assert findings
    assert redacted.endswith("done = True\n")


NOT_SECRETS = {
    "prose-under-a-plain-key": "description: |\n  Enter the password you were given.\n"
    "  It must hold 12 characters.\n",
    "prose-under-a-secret-key": "password_help: >\n  Your password is checked on save.\n",
    "code-testing-a-password": "if password:\n    return check(password)\n",
    "code-continuing-an-expression": "token = (\n    make_token(user)\n)\n",
    "a-variable-on-the-next-line": "SECRET_KEY = \\\n    settings_value\n",
    "a-placeholder-below": "api_token: |\n  <your-token-here>\n",
    "a-sibling-key-below": "password:\nusername: deploy2024x\n",
    "a-one-line-diff-entry": '+  "password": "plainword"\n+}\n',
}


@pytest.mark.parametrize("shape", list(NOT_SECRETS))
def test_what_is_not_a_value_below_is_served(shape: str) -> None:
    text = NOT_SECRETS[shape]
    assert redact(text) == (text, ())


ESCAPES: dict[str, Callable[[str], str]] = {
    "json-unicode": lambda c: f"\\u{ord(c):04x}",
    "c-hex": lambda c: f"\\x{ord(c):02x}",
    "every-other-char": lambda c: f"\\x{ord(c):02x}" if ord(c) % 2 else c,
}


ESCAPED_TEMPLATES = ['password = "{e}"\n', "api_key: '{e}'\n", '{{"token": "{e}"}}\n']


@pytest.mark.parametrize("escape", list(ESCAPES))
@pytest.mark.parametrize("template", ESCAPED_TEMPLATES)
def test_a_value_written_as_escapes_is_decoded_and_withheld(escape: str, template: str) -> None:
    value = _value()
    escaped = "".join(ESCAPES[escape](char) for char in value)
    text = template.format(e=escaped)
    redacted, findings = redact(text)
    assert escaped not in redacted and findings


@pytest.mark.parametrize(
    "text",
    [
        'label = "' + "".join(f"\\u{ord(c):04x}" for c in "Zq8vN3pLx2Rt7Kw") + '"\n',
        'password_prompt = "\\u00c9crivez le mot de passe"\n',
        'password = "\\u00e9t\\u00e9 le mot de passe"\n',
        'password_separator = "\\x00\\x01\\x02\\x03"\n',
    ],
    ids=["not-a-secret-name", "about-a-secret", "escaped-prose", "control-bytes"],
)
def test_escapes_that_decode_to_no_secret_are_served(text: str) -> None:
    assert redact(text) == (text, ())


def _secret_document(value: str, encoded: str) -> str:
    return (
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\n  namespace: prod\ntype: Opaque\n"
        f"data:\n  username: {encoded}\n  .dockerconfigjson: {encoded}\n"
        f"stringData:\n  DATABASE_URL: {value}\n  config.yaml: |\n    level: debug\n"
        f"    apiKey: {value}\n"
    )


def test_every_value_of_a_kubernetes_secret_is_withheld_and_its_metadata_served() -> None:
    value = _value()
    encoded = base64.b64encode(f"deploy:{value}".encode()).decode()
    text = _secret_document(value, encoded)
    redacted, findings = redact(text)
    assert value not in redacted and encoded not in redacted
    assert "level: debug" not in redacted  # a block scalar under stringData is a value too
    assert "  name: db\n  namespace: prod\n" in redacted
    assert {finding.kind for finding in findings} == {"kubernetes-secret"}


def test_a_kubernetes_secret_in_json_is_withheld() -> None:
    encoded = base64.b64encode(_value().encode()).decode()
    document = {"apiVersion": "v1", "kind": "Secret", "data": {"tls.key": encoded, "pw": encoded}}
    for text in (json.dumps(document), json.dumps(document, indent=2)):
        redacted, findings = redact(text + "\n")
        assert encoded not in redacted
        assert "kind" in redacted and findings


def test_a_configmap_beside_a_secret_is_served() -> None:
    encoded = base64.b64encode(_value().encode()).decode()
    public = base64.b64encode(_value().encode()).decode()
    configmap = f"kind: ConfigMap\nmetadata:\n  name: app\ndata:\n  blob: {public}\n"
    text = _secret_document(_value(), encoded) + "---\n" + configmap
    redacted, _ = redact(text)
    assert redacted.endswith(configmap)
    assert find_secrets(configmap) == []


def test_a_secrets_value_copied_into_a_configmap_is_withheld_there_too() -> None:
    encoded = base64.b64encode(_value().encode()).decode()
    configmap = f"kind: ConfigMap\nmetadata:\n  name: app\ndata:\n  blob: {encoded}\n"
    redacted, _ = redact(_secret_document(_value(), encoded) + "---\n" + configmap)
    assert encoded not in redacted


def test_a_resource_that_only_names_secrets_is_served() -> None:
    text = (
        "kind: SecretStore\nspec:\n  data:\n    region: north\n"
        "---\nkind: Deployment\nspec:\n  data:\n    note: mentions kind: Secret in prose\n"
    )
    assert find_secrets(text) == []


CONFIG_FILES = {
    ".npmrc": "registry=https://registry.example.org/\n//registry.example.org/:_authToken={v}\n",
    ".pypirc": "[distutils]\nindex-servers = private\n\n[private]\nusername = deploy\n"
    "password = {v}\n",
    "pip.conf": "[global]\nindex-url = https://deploy:{v}@pypi.example.org/simple\n",
    ".netrc": "machine api.example.org\n  login deploy\n  password {v}\n",
    ".dockerconfigjson": '{{"auths": {{"registry.example.org": {{"auth": "{basic}"}}}}}}\n',
    "terraform.tfstate": '{{\n  "attributes": {{\n    "id": "db-1",\n'
    '    "password": "{v}"\n  }}\n}}\n',
    "prod.tfvars": 'db_password = "{v}"\nregion      = "north"\n',
}


@pytest.mark.parametrize("name", list(CONFIG_FILES))
def test_the_credentials_of_each_client_configuration_file_are_withheld(name: str) -> None:
    value = _value()
    basic = base64.b64encode(f"deploy:{value}".encode()).decode()
    redacted, findings = redact(CONFIG_FILES[name].format(v=value, basic=basic))
    assert value not in redacted and basic not in redacted and findings


CORPUS = list(shape_samples())


@pytest.mark.parametrize("sample", CORPUS, ids=[sample.category for sample in CORPUS])
def test_the_benchmark_corpus_shapes_are_withheld_and_their_look_alikes_served(
    sample: object,
) -> None:
    from benchmarks.secret_corpus.corpus import Sample

    assert isinstance(sample, Sample)
    redacted, findings = redact(sample.text)
    if sample.secret is None:
        assert findings == ()
    else:
        assert sample.secret not in redacted and findings


@pytest.mark.parametrize(
    "hostile",
    [
        '{"kty": "EC", ' * 80_000,
        "kty: EC\n" * 120_000,
        "kind: Secret\ndata:\n  a: b\n" * 40_000,
        "password: |\n" * 80_000,
        'api_token = "abcd" +\n' * 50_000,
    ],
    ids=["jwk-openings", "yaml-kty", "secret-documents", "block-openings", "concatenations"],
)
def test_a_megabyte_of_repeated_anchors_is_scanned_in_bounded_time(hostile: str) -> None:
    started = time.process_time()
    find_secrets(hostile)
    # Linear work takes well under a second here; quadratic work on a megabyte takes minutes.
    assert time.process_time() - started < 10


@pytest.mark.parametrize(
    "template",
    [
        # Under a weak name, a strongly random value going on below:
        "$key = '{a}\n{b}';",  # PHP: a string may hold newlines
        'key: "{a}\n  {b}"',  # YAML: a double-quoted scalar folds across lines
        'pkey = ("{a}"\n        "{b}")',  # Python: adjacent strings in parentheses
        # Under a secret's name, a value alone below, going on over lines:
        'token = (\n    "{a}"\n    "{b}"\n)',  # a string wrapped in parentheses, one per line
        "secret: |\n  {a}\n  {b}\nnext: 1",  # a block scalar of two lines
        'password = """\n{a}\n{b}\n"""',
    ],
)
def test_every_line_of_a_value_going_on_below_is_withheld(template: str) -> None:
    a, b = rand(40, ALNUM + "+/"), rand(40, ALNUM + "+/")
    redacted, findings = redact(template.format(a=a, b=b))
    assert findings
    assert a not in redacted and b not in redacted


@pytest.mark.parametrize(
    "text",
    [
        "$key = 'the cache key for\nthe next lookup';",
        'key: "short\n  words"',
        'key = ("users"\n       "_by_id")',
        'key = ("projects/my-project-2024/locations/"\n       "us-central1/keyRings/prod-ring")',
        'key = ("user_session_cache_prefix_"\n "by_tenant_and_region_2024")',
    ],
)
def test_words_going_on_below_a_weak_name_are_served(text: str) -> None:
    assert find_secrets(text) == [], text


def test_the_line_after_a_value_below_is_its_own() -> None:
    a, b = rand(40), rand(40)
    text = f"secret: |\n  {a}\nversion: 3\nname: {b}\n"
    redacted, _ = redact(text)
    assert a not in redacted
    assert "version: 3" in redacted and f"name: {b}" in redacted


def test_a_value_going_on_below_is_withheld_wherever_it_is_copied() -> None:
    a, b = rand(40), rand(40)
    text = f'db:\n  password:\n    {a}\n    {b}\nurl: "mysql://x@h/{a}"\nlogin {b} now\n'
    redacted, _ = redact(text)
    assert a not in redacted and b not in redacted


@pytest.mark.parametrize(
    "template",
    [
        'auth_token = (\n    "{a}",\n    "Bearer",\n)',  # the next element, not the value's rest
        "Your password:\n    {a}\n    Thanks!\n",
        "INFO generated api key:\n  {a}\n  ok\n  listening\n",
        '"secret":\n    "{a}",\n    "name",\n',
    ],
)
def test_short_words_after_a_value_below_are_served(template: str) -> None:
    a = rand(40)
    text = template.format(a=a)
    redacted, findings = redact(text)
    assert findings and a not in redacted
    for word in ("Bearer", "Thanks!", "ok", "listening", '"name"'):
        if word in text:
            assert word in redacted, redacted
