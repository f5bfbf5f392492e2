"""The gateway side of `sp doctor`, in process: where the context server's client findings go,
and the HTTPS check made with the gateway's own TLS context."""

from __future__ import annotations

from pathlib import Path

from safeport.demo.tls_service import serve_demo_api
from safeport.gateway_client.doctor import diagnose
from safeport.shared.findings import Finding
from safeport.shared.paths import SafeportPaths, locate

_POLICY = (
    '[credentials.api-token]\nkind = "token"\n\n[http.services.api]\n'
    'base_url = "{url}"\ncredential = "api-token"\n'
)


def _home(tmp_path: Path) -> SafeportPaths:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    return locate(env={"SAFEPORT_HOME": str(home)})


def _https(findings: list[Finding]) -> Finding:
    (found,) = [f for f in findings if f.check == "https service api"]
    return found


def test_client_findings_are_printed_after_the_keyring_and_before_the_policy(
    tmp_path: Path,
) -> None:
    paths = _home(tmp_path)
    client = Finding("client cursor", "ok", "set up in .cursor/mcp.json")
    checks = [f.check for f in diagnose(paths, clients=[client], network=False)]
    assert checks.index("gateway") < checks.index("client cursor") < checks.index("policy")


def test_a_service_with_its_ca_file_passes_the_gateway_s_certificate_check(
    tmp_path: Path,
) -> None:
    paths = _home(tmp_path)
    with serve_demo_api(tmp_path, b"token") as service:
        policy = _POLICY.format(url=service.base_url) + f'ca_file = "{service.ca_file}"\n'
        paths.gateway_config.write_text(policy)
        found = _https(diagnose(paths))
    assert found.state == "ok", found
    assert "certificate the gateway accepts" in found.detail


def test_an_unreadable_ca_file_is_a_failing_finding_with_its_fix(tmp_path: Path) -> None:
    paths = _home(tmp_path)
    with serve_demo_api(tmp_path, b"token") as service:
        missing = tmp_path / "no-such-ca.pem"
        paths.gateway_config.write_text(
            _POLICY.format(url=service.base_url) + f'ca_file = "{missing}"\n'
        )
        found = _https(diagnose(paths))
    assert found.state == "fail"
    assert "cannot be read" in found.detail and "ca_file" in found.fix
