"""docs/why.md and its SVG are generated (``make docs``): fail when the committed copy is stale."""

from __future__ import annotations

import importlib.util
import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path
from types import ModuleType

from tests.conftest import ROOT

SVG_NS = "{http://www.w3.org/2000/svg}"
PICTURE = "docs/nemotron-3-nano-tp.svg"


def _build_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("kvalign_docs_build", ROOT / "docs" / "build.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _svg_texts(path: Path) -> list[str]:
    root = ET.fromstring(path.read_bytes())
    return ["".join(t.itertext()) for t in root.iter(f"{SVG_NS}text")]


def test_committed_docs_are_up_to_date(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    build = _build_module()
    assert set(build.PAGES) == {"docs/why.md", "docs/rules.md", "docs/json.md"}
    for page in build.PAGES:
        shutil.copy(ROOT / page, tmp_path / page)
    build.build(tmp_path)
    for page in build.PAGES:
        fresh = (tmp_path / page).read_text(encoding="utf-8")
        committed = (ROOT / page).read_text(encoding="utf-8")
        assert fresh == committed, f"{page} is stale: run `make docs` and commit the result"
    # The picture: compare what it says (every text element, in order) rather than bytes,
    # so a different matplotlib release does not fail the check.
    assert _svg_texts(tmp_path / PICTURE) == _svg_texts(ROOT / PICTURE), (
        f"{PICTURE} is stale: run `make docs` and commit the result"
    )


def test_build_replaces_stale_output(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    build = _build_module()
    for page in build.PAGES:
        shutil.copy(ROOT / page, tmp_path / page)
    committed = (ROOT / "docs" / "why.md").read_text(encoding="utf-8")
    # Nano over TP 1, 2, 4, 8: 16 pairs, 10 differ, 10 ratio != 1, 9 not divisible
    row = "| 1,2,4,8 | 16 | 10 | 10 | 9 |"
    assert row in committed
    (tmp_path / "docs" / "why.md").write_text(
        committed.replace(row, "| 1,2,4,8 | 16 | 0 | 0 | 0 |")
    )
    build.build(tmp_path)
    assert (tmp_path / "docs" / "why.md").read_text(encoding="utf-8") == committed


def test_generated_blocks_show_their_command() -> None:
    page = (ROOT / "docs" / "why.md").read_text(encoding="utf-8")
    build = _build_module()
    blocks = list(build.BLOCK.finditer(page))
    assert len(blocks) == 4
    for block in blocks:
        assert f"$ kvalign {block.group('args')}" in block.group(0)
    # the survey of the whole catalog is on the page, with its all-models row
    assert "| **All models (24)** |" in page
    assert str(ROOT) not in page  # no machine-specific paths


def test_page_is_linked_from_readme() -> None:
    assert "docs/why.md" in (ROOT / "README.md").read_text(encoding="utf-8")


def test_json_examples_are_shortened_output_of_their_command() -> None:
    build = _build_module()
    page = (ROOT / "docs" / "json.md").read_text(encoding="utf-8")
    blocks = list(build.JSON_BLOCK.finditer(page))
    assert [b.group("args").split()[0] for b in blocks] == [
        "check", "audit", "survey", "explain", "rules",
    ]  # fmt: skip
    # shorten(): lists of objects keep their first item, plain lists stay whole
    assert build.shorten({"a": [{"x": 1}, {"x": 2}], "b": [[3, 768], [8, 64]]}) == {
        "a": [{"x": 1}],
        "b": [[3, 768], [8, 64]],
    }
    assert build.shorten("x" * 61) == "x" * 59 + "…"
    assert build.dumps({"a": [1, 2], "b": {}}) == '{\n  "a": [1, 2],\n  "b": {}\n}'


def test_reference_pages_are_linked_from_readme() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for page in ("docs/rules.md", "docs/json.md", "docs/versions.md", "docs/inputs.md"):
        assert f"]({page})" in readme, page


#: pages linked before they exist: docs/inputs.md is written in parallel.
def test_relative_links_point_at_files_and_headings() -> None:
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    for page in pages:
        text = page.read_text(encoding="utf-8")
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target):
                continue  # https: and the like
            path, _, anchor = target.partition("#")
            resolved = (page.parent / path).resolve() if path else page
            assert resolved.is_file(), f"{page.name}: link to missing {target}"
            if anchor and resolved.suffix == ".md":
                headings = re.findall(r"^#+ (.+)$", resolved.read_text("utf-8"), re.MULTILINE)
                slugs = {re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in headings}
                assert anchor in slugs, f"{page.name}: no heading for {target}"


def test_readme_is_short_and_starts_with_the_quick_start() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 250
    headings = [line for line in lines if line.startswith("## ")]
    assert headings[:3] == [
        "## Quick start",
        "## Install",
        "## The main job: check a P/D pair before you deploy",
    ]
    quick = "\n".join(lines).split("## Quick start", 1)[1].split("## ", 1)[0]
    (block,) = re.findall(r"```bash\n(.*?)```", quick, re.DOTALL)
    commands = [line.split("#", 1)[0].strip() for line in block.splitlines()]
    assert commands == ["make demo", "make test"]
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"^demo: .*\n\tHF_HUB_OFFLINE=1 \$\(BIN\)/kvalign check ", makefile, re.M)
    for command in ("check", "matrix", "audit", "rules", "survey", "explain", "verify", "models"):
        assert f"| `kvalign {command}" in "\n".join(lines), command


def test_every_docs_page_the_code_names_exists() -> None:
    # --help and error messages point users at docs/NAME.md: each must be a real page
    # (the --pipeline-parallel-size help named docs/fidelity.md, which never existed)
    named = set()
    for source in (ROOT / "kvalign").rglob("*.py"):
        named |= set(re.findall(r"docs/[A-Za-z0-9_-]+\.md", source.read_text(encoding="utf-8")))
    assert "docs/versions.md" in named
    missing = sorted(page for page in named if not (ROOT / page).is_file())
    assert missing == []


SECURITY_FILES = {
    "R": "tests/hostile/test_renderers.py",
    "O": "tests/hostile/test_outputs.py",
    "E": "tests/hostile/test_emit_quoting.py",
    "S": "tests/hostile/test_shell_limits.py",
    "B": "tests/hostile/test_reader_bounds.py",
}


def _security_rows() -> list[list[str]]:
    text = (ROOT / "docs" / "security.md").read_text(encoding="utf-8")
    table = text[text.index("## Protections and the tests that show them") :]
    rows = [ln for ln in table.splitlines() if ln.startswith("| ")][1:]
    # a cell may hold ``O_EXCL|O_NOFOLLOW`` inside backticks: split on `` | `` only
    return [[c.strip() for c in row.strip("| ").split(" | ")] for row in rows]


def _is_module(dotted: str) -> bool:
    path = ROOT / "kvalign" / Path(*dotted.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def test_every_test_docs_security_names_exists() -> None:
    """docs/security.md's protection table names a test for each protection: each named
    test is defined in the file its prefix stands for, and each "enforced in" name is a
    kvalign module or a name defined in kvalign/ (a rename makes the table wrong and
    fails here)."""
    rows = _security_rows()
    assert len(rows) >= 30
    sources = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "kvalign").rglob("*.py"))
    for protection, enforced, tests in rows:
        named = re.findall(r"`([A-Z])::(test_\w+)`", tests)
        assert named, protection
        for prefix, name in named:
            body = (ROOT / SECURITY_FILES[prefix]).read_text(encoding="utf-8")
            assert re.search(rf"^def {name}\(", body, re.M), (prefix, name)
        for symbol in re.findall(r"`([\w.]+)", enforced):
            last = symbol.rsplit(".", 1)[-1]
            defined = rf"\b(def|class) {last}\b|^\s*(self\.)?{last}\b\s*[:=]"
            assert _is_module(symbol) or re.search(defined, sources, re.M), symbol
