"""README's pictures exist, and the script in the repository makes them from real runs."""

from __future__ import annotations

import html
import re
import shutil
import subprocess
import sys
from pathlib import Path

from harness.gateway import REPO
from tests.conftest import need

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.cli"

PICTURES = ("approval-card", "status", "audit-show")


def svg_text(path: Path) -> str:
    texts = re.findall(r"<text[^>]*>([^<]*)</text>", path.read_text())
    return html.unescape("".join(texts)).replace("\xa0", " ")


def test_readme_shows_each_picture_and_each_is_in_the_repository() -> None:
    readme = (REPO / "README.md").read_text()
    for name in PICTURES:
        assert f"docs/pictures/{name}.svg" in readme, name
        assert (REPO / "docs" / "pictures" / f"{name}.svg").is_file(), name


def test_the_first_hour_guide_shows_each_picture() -> None:
    guide = REPO / "docs" / "guides" / "first-hour.md"
    for name in PICTURES:
        assert f"](../pictures/{name}.svg)" in guide.read_text(), name
        assert (guide.parent / ".." / "pictures" / f"{name}.svg").resolve().is_file(), name


def test_the_script_renders_the_pictures_from_a_real_gateway(tmp_path: Path) -> None:
    need(shutil.which("setsid") is not None and shutil.which("flock") is not None,
         "setsid and flock (util-linux) are not installed")  # fmt: skip
    done = subprocess.run(
        [sys.executable, "scripts/readme_pictures.py", "--out", str(tmp_path)],
        cwd=REPO, capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    card = svg_text(tmp_path / "approval-card.svg")
    assert "approval requested" in card and "command     sudo systemctl restart api" in card
    assert "time left" in card and "client      pid" in card
    status = svg_text(tmp_path / "status.svg")
    assert "gateway   running" in status and "vault unlocked" in status
    assert "chain: valid" in status
    audit = svg_text(tmp_path / "audit-show.svg")
    assert "action.denied" in audit and "the approver denied" in audit
