"""A listing judges safeport's own folders once per folder: the same answer, entry by entry,
as the per-path check a request goes through."""

from __future__ import annotations

from pathlib import PurePosixPath

import pytest

from safeport.context_server.policy.read_policy import ReadPolicy

LOCATIONS = (
    PurePosixPath("/srv/ws/.sp"),
    PurePosixPath("/srv/ws/app/state/audit"),
    PurePosixPath("/srv/home/sp"),
)
FOLDERS = [
    "/srv",
    "/srv/ws",
    "/srv/ws/app",
    "/srv/ws/app/state",
    "/srv/ws/.sp",
    "/srv/ws/.sp/x",
    "/srv/ws/app/state/audit/deep",
    "/srv/home",
    "/srv/hom",
    "/srv/ws/.s",
    "/other",
    "/",
]
NAMES = [
    ".sp",
    ".sp-notes",
    ".s",
    "sp",
    "ws",
    "app",
    "state",
    "audit",
    "audit2",
    "home",
    "deep",
    "x",
    "e",
    "p",
    ".sp.old",
    "%2Fsp",
]


@pytest.mark.parametrize("locations", [LOCATIONS, (), (PurePosixPath("/"),)])
def test_each_entry_gets_the_per_path_verdict(locations: tuple[PurePosixPath, ...]) -> None:
    policy = ReadPolicy(private_locations=locations)
    for folder in FOLDERS:
        whole, names = policy.locations_in(folder)
        for name in NAMES:
            expected = policy.is_private_location(f"{folder}/{name}")
            assert (whole or name in names) is expected, (folder, name)


def test_a_location_and_its_neighbours() -> None:
    policy = ReadPolicy(private_locations=LOCATIONS)
    assert policy.locations_in("/srv/ws") == (False, frozenset({".sp"}))
    # Inside one: every entry, whatever its name.
    assert policy.locations_in("/srv/ws/.sp")[0]
    assert policy.locations_in("/srv/ws/app/state/audit/deep")[0]
    # A sibling that only starts like one is not inside it.
    assert policy.locations_in("/srv/ws/.sp-notes") == (False, frozenset())
    assert policy.locations_in("/srv/ws/app") == (False, frozenset())
