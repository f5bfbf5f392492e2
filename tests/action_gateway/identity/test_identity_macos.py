"""`codesign` output parsing (recorded outputs; the probe itself runs on macOS only)."""

from __future__ import annotations

from safeport.action_gateway.identity.macos import parse_codesign

SIGNED = """Executable=/Applications/Claude.app/Contents/MacOS/Claude
Identifier=com.anthropic.claudefordesktop
Format=app bundle with Mach-O universal (x86_64 arm64)
CodeDirectory v=20500 size=1234 flags=0x10000(runtime) hashes=28+7 location=embedded
Hash type=sha256 size=32
CandidateCDHash sha256=0f5c1e8c0a4b0a7a3f1d2c3b4a5968778695a4b3
CDHash=0f5c1e8c0a4b0a7a3f1d2c3b4a5968778695a4b3
Signature size=9041
Authority=Developer ID Application: Anthropic PBC (Q6L2SF6YDW)
Authority=Developer ID Certification Authority
Authority=Apple Root CA
Timestamp=Nov 3, 2026 at 10:12:01
Info.plist entries=31
TeamIdentifier=Q6L2SF6YDW
Runtime Version=14.0.0
Sealed Resources version=2 rules=13 files=120
Internal requirements count=1 size=220
"""

ADHOC = """Executable=/opt/homebrew/Cellar/python@3.12/3.12.7/bin/python3.12
Identifier=python3.12
Format=Mach-O thin (arm64)
CodeDirectory v=20400 size=514 flags=0x20002(adhoc,linker-signed) hashes=13+0 location=embedded
CDHash=4e8b0a0c6ad9c5f3d2e1b0a99887766554433221
Signature=adhoc
Info.plist=not bound
TeamIdentifier=not set
"""


def test_a_developer_id_signature_names_its_authority_and_team() -> None:
    sig = parse_codesign(0, "", SIGNED)
    assert sig.status == "valid"
    assert sig.authority == "Developer ID Application: Anthropic PBC (Q6L2SF6YDW)"
    assert sig.team_id == "Q6L2SF6YDW"
    assert sig.cdhash == "0f5c1e8c0a4b0a7a3f1d2c3b4a5968778695a4b3"


def test_an_adhoc_signature_has_no_team() -> None:
    sig = parse_codesign(0, "", ADHOC)
    assert sig.status == "valid" and sig.team_id is None and sig.authority is None


def test_an_unsigned_binary() -> None:
    sig = parse_codesign(
        1,
        "/usr/local/bin/tool: code object is not signed at all\n",
        "/usr/local/bin/tool: code object is not signed at all\n",
    )
    assert sig.status == "unsigned"


def test_a_modified_binary_is_invalid() -> None:
    sig = parse_codesign(
        1, "/Applications/X.app: a sealed resource is missing or invalid\n", SIGNED
    )
    assert sig.status == "invalid" and sig.team_id is None
