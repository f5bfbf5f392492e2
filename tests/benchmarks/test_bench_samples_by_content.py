"""The third-party sample evaluation judges a file as the server does: a certificate file
holding a key is refused whole (by content), one holding certificates only is scanned."""

from __future__ import annotations

from benchmarks.bench_third_party_samples import refused
from safeport.context_server.policy.read_policy import ReadPolicy
from tests.context_server.policy.material import material


def test_a_certificate_file_is_judged_by_its_content_as_the_server_judges_it() -> None:
    policy = ReadPolicy()
    cert = material().certificate.encode()
    with_key = cert + material().pkcs8.encode()
    assert refused(policy, "tls/ca.pem", cert) is None
    assert refused(policy, "tls/server.pem", with_key) == "private"
    assert refused(policy, "keys/x.pub", material().openssh_private.encode()) == "private"
    assert refused(policy, "keys/id_rsa", cert) == "private"  # by name, whatever it holds
    assert refused(policy, "docs/notes.md", with_key) is None  # the detector's to withhold
