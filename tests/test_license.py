"""The license travels with the package: the installed distribution's metadata names it
(SPDX) and its dist-info holds the file, identical to the repository's LICENSE."""

import importlib.metadata
from pathlib import Path

LICENSE = Path(__file__).resolve().parent.parent / "LICENSE"


def test_license_file_is_bsd_3_clause():
    text = LICENSE.read_text(encoding="utf-8")
    assert text.startswith("BSD 3-Clause License\n")
    assert "Copyright (c) 2026, the pyroi developers" in text


def test_installed_distribution_carries_the_license():
    dist = importlib.metadata.distribution("pyroi")
    assert dist.metadata["License-Expression"] == "BSD-3-Clause"
    assert dist.metadata.get_all("License-File") == ["LICENSE"]
    installed = [f for f in dist.files or () if f.parts[-2:] == ("licenses", "LICENSE")]
    assert len(installed) == 1, f"no licenses/LICENSE in {dist._path}"
    assert installed[0].read_text(encoding="utf-8") == LICENSE.read_text(encoding="utf-8")
