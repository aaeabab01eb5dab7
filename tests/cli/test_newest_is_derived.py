"""Issue #26, "newest is derived, never written": a synthetic release newer than every
profile is added to the table and nothing else has to change.

Each run is a fresh interpreter that appends one row to ``kvalign.versions._CHANGES`` (a
``0.99`` profile that changes nothing, so it copies the newest one's facts) and rebuilds
the table exactly as the module does (``PROFILES = _build()``, ``DEFAULT_PROFILE =
PROFILES[-1]``) *before* any other part of kvalign is imported; then it runs ``kvalign``.
Every place that names the newest profile — the ``--vllm-version`` help, the profile
``check`` and ``explain`` use without ``--vllm-version``, the survey plot's title, the
``verify`` install hint and the "newer than every profile" warning — must name ``0.99``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from kvalign.versions import newest

NANO = "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"
SVG_NS = "{http://www.w3.org/2000/svg}"

#: the one row a new release adds (docs/versions.md: "a boundary is one line")
_WITH_0_99 = """
import sys
import kvalign.versions as versions
versions._CHANGES = (*versions._CHANGES, ("0.99.0", ("0.99.0",), {}))
versions.PROFILES = versions._build()
versions.DEFAULT_PROFILE = versions.PROFILES[-1]
"""
_RUN = "from kvalign.cli.fast import main\nmain(sys.argv[1:])\n"


def _with_0_99(*args: str, code: str = _RUN) -> subprocess.CompletedProcess[str]:
    """``kvalign ARGS`` (or ``code``) in a fresh interpreter whose table ends in 0.99."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-c", _WITH_0_99 + code, *args],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def test_the_synthetic_row_is_the_newest_and_copies_the_old_newest() -> None:
    code = (
        "import dataclasses, json\n"
        "new, old = versions.PROFILES[-1], versions.PROFILES[-2]\n"
        "same = dataclasses.replace(new, name=old.name, first=old.first, verified=old.verified)\n"
        "print(json.dumps([new.name, new.first, old.name, same == old,\n"
        "                  versions.newest() is new, versions.resolve(None).profile is new]))\n"
    )
    result = _with_0_99(code=code)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == ["0.99", "0.99.0", newest().name, True, True, True]


def test_help_of_vllm_version_names_the_new_newest() -> None:
    result = _with_0_99("check", "--help")
    assert result.returncode == 0, result.stderr
    text = " ".join(result.stdout.split())
    assert "vLLM release whose rules apply (default: the newest profile, 0.99)." in text
    assert f"newest profile, {newest().name})" not in text


def test_check_without_vllm_version_uses_the_new_newest() -> None:
    result = _with_0_99("check", NANO, "--prefill-tp", "8", "--decode-tp", "1", "--format", "json")
    assert result.returncode == 1, result.stderr  # 528 vs 2096: incompatible, as on 0.33
    report = json.loads(result.stdout)
    assert report["vllm_profile"] == {"name": "0.99", "release": "0.99.0", "beyond_newest": False}
    assert report["notes"][0] == "vLLM 0.99 rules (default profile)"
    assert result.stderr == ""  # no warning


def test_explain_header_names_the_new_newest() -> None:
    result = _with_0_99("explain", NANO, "--tp", "8")
    assert result.returncode == 0, result.stderr
    assert "Profile: vLLM 0.99 rules (default profile)" in result.stdout


def test_newer_than_every_profile_boundary_moves_with_the_table() -> None:
    major, minor = (int(part) for part in newest().first.split(".")[:2])
    args = ("check", NANO, "--prefill-tp", "1", "--decode-tp", "1", "--format", "json")
    # the release after today's newest is now below 0.99: its own profile, no warning
    below = _with_0_99(*args, "--vllm-version", f"{major}.{minor + 1}.0")
    assert below.returncode == 0, below.stderr
    assert json.loads(below.stdout)["vllm_profile"]["name"] == newest().name
    assert "newer than every profile" not in below.stderr
    # a release after 0.99 takes 0.99's rules, with the warning naming 0.99
    beyond = _with_0_99(*args, "--vllm-version", "0.100.0")
    assert beyond.returncode == 0, beyond.stderr
    assert json.loads(beyond.stdout)["vllm_profile"] == {
        "name": "0.99", "release": "0.100.0", "beyond_newest": True,
    }  # fmt: skip
    assert beyond.stderr == (
        "kvalign: warning: vLLM 0.100.0 is newer than every profile; using the 0.99 rules "
        "(the newest)\n"
    )


def test_verify_install_hint_names_the_new_newest() -> None:
    code = "from kvalign.verify import INSTALL_HINT\nprint(INSTALL_HINT)\n"
    result = _with_0_99(code=code)
    assert result.returncode == 0, result.stderr
    assert "kvalign's default profile models vLLM 0.99.0;" in result.stdout


def test_survey_plot_title_names_the_new_newest(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    target = tmp_path / "nano.svg"
    result = _with_0_99("survey", NANO, "--tp", "1,8", "--format", "csv", "--plot", str(target))
    assert result.returncode == 0, result.stderr
    root = ET.fromstring(target.read_bytes())
    # each title line is a text element of its own (model id, then the alignment)
    texts = ["".join(t.itertext()).strip() for t in root.iter(f"{SVG_NS}text")]
    titles = [t for t in texts if t.endswith(" alignment")]
    assert titles == ["vLLM 0.99 alignment", "TP-stable (PR 45575) alignment"]
