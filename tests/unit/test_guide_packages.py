"""What the guides of docs/ install is what `make test` installs: their tests
run the tools, so a package a page names and the Makefile lacks would be
missing on a fresh machine."""

from __future__ import annotations

import pytest

from tests.support.guides import Guide, makefile_packages
from tests.support.paths import PROJECT_ROOT

GUIDES = sorted(page.name for page in (PROJECT_ROOT / "docs").glob("*.md")
                if Guide(page.name).packages())


@pytest.mark.parametrize("name", GUIDES)
def test_make_test_installs_what_the_guide_installs(name: str) -> None:
    assert Guide(name).packages() <= makefile_packages()


def test_the_guides_are_found() -> None:
    assert {"collectd.md", "mrtg.md", "nagios.md", "wireshark.md", "zabbix.md"} <= set(GUIDES)
