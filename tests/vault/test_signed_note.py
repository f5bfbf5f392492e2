"""Checkpoints as C2SP signed notes: what the vault's key signs, and what a reader refuses."""

from __future__ import annotations

import base64

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from safeport.shared.audit import JournalHead
from safeport.vault.signed_note import NoteInvalid, key_id, read_note, sign_note, split_notes

KEY = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))
PUBLIC = KEY.public_key().public_bytes_raw()
HEAD = JournalHead(seq=184, hash="ab" * 32)


def test_a_note_has_the_tlog_checkpoint_lines_and_reads_back() -> None:
    note = sign_note("actions", HEAD, KEY)
    origin, size, root, blank, signature, end = note.split("\n")
    assert origin == f"safeport/actions/{key_id(PUBLIC)}"
    assert size == "184" and base64.b64decode(root) == bytes.fromhex(HEAD.hash)
    assert blank == "" and end == ""
    assert signature.startswith(f"\u2014 {origin} ")
    assert len(base64.b64decode(signature.rsplit(" ", 1)[1])) == 4 + 64  # key hash + Ed25519
    read = read_note(note, PUBLIC)
    assert (read.journal, read.head, read.text) == ("actions", HEAD, note)


@pytest.mark.parametrize(
    "change",
    [
        lambda n: n.replace("\n184\n", "\n183\n"),  # a shorter journal claimed
        lambda n: n.replace("\n184\n", "\n1840\n"),  # a longer one
        lambda n: n.replace("safeport/actions/", "safeport/sessions/", 2),  # another journal
        lambda n: n.replace("q6urq6ur", "q6urq6uq", 1),  # another root hash
        lambda n: n.split("\n\n")[0] + "\n\n",  # no signature at all
        lambda n: n[:-6] + "AAAAA\n",  # a damaged signature
        lambda n: n.replace("\n", "\r\n"),
        lambda n: n + "x" * 5000,
    ],
)
def test_an_altered_note_is_refused(change: object) -> None:
    note = sign_note("actions", HEAD, KEY)
    altered = change(note)  # type: ignore[operator]
    assert altered != note
    with pytest.raises(NoteInvalid):
        read_note(altered, PUBLIC)


def test_a_note_signed_by_another_key_is_refused_even_under_our_origin() -> None:
    other = Ed25519PrivateKey.generate()
    with pytest.raises(NoteInvalid, match="not by this vault"):
        read_note(sign_note("actions", HEAD, other), PUBLIC)
    # The other key's note relabelled with our key id: its signature is not ours.
    forged = sign_note("actions", HEAD, other).replace(
        key_id(other.public_key().public_bytes_raw()), key_id(PUBLIC)
    )
    with pytest.raises(NoteInvalid, match="no valid signature"):
        read_note(forged, PUBLIC)


def test_a_witness_cosignature_is_kept_and_notes_split_one_after_another() -> None:
    first = sign_note("actions", HEAD, KEY)
    cosigned = first + "\u2014 witness.example AAAAAAAA\n"
    second = sign_note("sessions", JournalHead(seq=3, hash="cd" * 32), KEY)
    texts = split_notes(cosigned + "\n" + second + "\n" + first)
    assert texts == [cosigned, second, first]
    assert [read_note(t, PUBLIC).journal for t in texts] == ["actions", "sessions", "actions"]
