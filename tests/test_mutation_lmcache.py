"""The LMCache config-file lookup (kvalign/deploy/lmcache.py) pinned where a wrong rule
changes the answer, for its mutants (tests/mutation/run.py lmcache).

Sources: LMCache's configuration docs (the YAML file named by ``LMCACHE_CONFIG_FILE``
holds top-level keys such as ``chunk_size: 256``; ``LMCACHE_*`` variables override the
file), kvalign's own lookup rules (the module docstring: a relative path below the
manifest's folder as written, an absolute or ``..`` path by its file name only, else one
file of that name among the run's files), and the files written in each test, read by
hand (which file sits where, what it sets).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import yaml

from kvalign.deploy.lmcache import _chunk, apply, candidate, elsewhere
from kvalign.deploy.model import Location, Pool, Problem
from kvalign.deploy.own import read
from kvalign.shell.commands import unresolved

FALCON = "tiiuae/Falcon-H1-0.5B-Base"
VAR = "LMCACHE_CONFIG_FILE"


def _pools(*envs: str) -> list[Pool]:
    """One prefill pool per env mapping. kvalign's schema: the entries of the list under
    ``prefill:`` (line 2) are all located at that line; one entry is named ``prefill``,
    several ``prefill-INDEX``."""
    entries = "".join(f"  - {{tp: 1, env: {{{env}}}}}\n" for env in envs)
    text = f"model: {FALCON}\nprefill:\n{entries}decode: {{tp: 1}}\n"
    found = read(yaml.safe_load(text), text, "pd.yaml", None)
    return [p for p in found.pools if p.role == "prefill"]


def _one(env: str) -> Pool:
    (pool,) = _pools(env)
    return pool


# ---- candidate -------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("lmcache.yaml", "lmcache.yaml"),
        # relative below the folder: kept as written (its subfolder too)
        ("conf/lmc.yaml", "conf/lmc.yaml"),
        # surrounding blanks are not part of the path
        ("  conf/lmc.yaml \n", "conf/lmc.yaml"),
        # absolute (the in-container mount): the file name only
        ("/etc/lmcache/lmc.yaml", "lmc.yaml"),
        # climbing with ..: the file name only
        ("conf/../lmc.yaml", "lmc.yaml"),
        ("../up/lmc.yaml", "lmc.yaml"),
    ],
)
def test_candidate_paths(tmp_path: Path, raw: str, expected: str) -> None:
    assert candidate(tmp_path, raw) == tmp_path / expected


@pytest.mark.parametrize("raw", ["", "   ", "a\x00b.yaml", "/", ".", "conf/..", "..", " / "])
def test_candidate_names_no_file(tmp_path: Path, raw: str) -> None:
    # empty, blank, a NUL byte, the root, the folder itself or its parent: no file named
    assert candidate(tmp_path, raw) is None


# ---- _chunk ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (256, 256),
        (1, 1),  # the smallest positive integer
        (0, None),
        (-256, None),
        (True, None),  # YAML true is a bool, not a size
        (False, None),
        ("512", 512),  # chunk_size: "512" (a quoted number)
        (" 512 ", 512),
        ("1", 1),
        ("0", None),
        ("-5", None),
        ("big", None),
        (256.0, None),  # not an integer in YAML's sense
        (None, None),
        ([256], None),
    ],
)
def test_chunk_values(value: object, expected: int | None) -> None:
    assert _chunk(value) == expected


# ---- elsewhere -------------------------------------------------------------------------
def test_elsewhere_matches_the_file_name_only() -> None:
    run = [Path("deploy/lmcache/prefill.yaml"), Path("deploy/prefill/pd.yaml"),
           Path("other/prefill.yaml"), Path("deploy/prefill.yml")]  # fmt: skip
    # the name of " /etc/lmcache/prefill.yaml " is prefill.yaml: two files have it
    assert elsewhere(" /etc/lmcache/prefill.yaml ", run) == [run[0], run[2]]
    assert elsewhere("pd.yaml", run) == [run[1]]
    # no name (empty, the root): nothing, even though every path has a name
    assert elsewhere("", run) == []
    assert elsewhere("/", run) == []


# ---- apply -----------------------------------------------------------------------------
def test_a_pool_without_the_variable_or_with_a_chunk_already_is_kept(tmp_path: Path) -> None:
    (tmp_path / "lmc.yaml").write_text("chunk_size: 256\n")
    plain = _one("A: x")
    # LMCACHE_CHUNK_SIZE overrides the file (LMCache docs): the file is not read
    overridden = _one(f"{VAR}: lmc.yaml, LMCACHE_CHUNK_SIZE: '1000'")
    assert overridden.args.lmcache_chunk_size == 1000
    pools, problems = apply([plain, overridden], tmp_path)
    assert pools == [plain, overridden] and problems == []


def test_the_file_next_to_the_manifest_fills_the_chunk(tmp_path: Path) -> None:
    (tmp_path / "lmc.yaml").write_text("local_cpu: true\nchunk_size: 256\n")
    pool = _one(f"{VAR}: /etc/lmcache/lmc.yaml")
    pools, problems = apply([pool], tmp_path)
    assert problems == []
    (out,) = pools
    assert out.args.lmcache_chunk_size == 256
    assert out.args.lmcache_chunk_source == str(tmp_path / "lmc.yaml")
    # nothing else changes
    assert (
        dataclasses.replace(
            out,
            args=dataclasses.replace(out.args, lmcache_chunk_size=None, lmcache_chunk_source=None),
        )
        == pool
    )


def test_a_dangling_symlink_is_read_and_refused(tmp_path: Path) -> None:
    # the name exists (as a link to a missing file in the folder): it is read, and the
    # read fails (blocking), rather than being reported as not there
    (tmp_path / "lmc.yaml").symlink_to(tmp_path / "gone.yaml")
    pool = _one(f"{VAR}: lmc.yaml")
    pools, problems = apply([pool], tmp_path, [Path("/other/lmc.yaml")])
    assert pools == []
    (problem,) = problems
    assert problem.blocking and problem.location == Location("pd.yaml", 2)
    assert problem.message.startswith(f"prefill/prefill: {VAR} lmc.yaml: ")


def test_unresolved_paths_are_a_note_naming_each_reference_once(tmp_path: Path) -> None:
    pool = _one(f"{VAR}: x")
    raw = f"{unresolved('$DIR')}/{unresolved('$NAME')}-{unresolved('$DIR')}.yaml"
    pool = dataclasses.replace(pool, env=((VAR, raw),))
    pools, problems = apply([pool], tmp_path)
    assert pools == [pool]
    assert problems == [
        Problem(
            Location("pd.yaml", 2),
            f"prefill/prefill: {VAR} $DIR/$NAME-$DIR.yaml: path not resolved ($DIR, $NAME); "
            "LMCache chunk_size not checked",
            blocking=False,
        )
    ]


def test_not_found_is_a_note_with_where_it_looked(tmp_path: Path) -> None:
    pool = _one(f"{VAR}: conf/lmc.yaml")
    pools, problems = apply([pool], tmp_path, [tmp_path / "pd.yaml"])
    assert pools == [pool]
    assert problems == [
        Problem(
            Location("pd.yaml", 2),
            f"prefill/prefill: {VAR} conf/lmc.yaml: not found next to the manifest (looked "
            f"for {tmp_path / 'conf' / 'lmc.yaml'}); LMCache chunk_size not checked",
            blocking=False,
        )
    ]


def test_a_name_that_names_no_file_looks_nowhere(tmp_path: Path) -> None:
    # "/" names no file: no candidate, and no file of the run is taken for it
    pool = _one(f"{VAR}: /")
    pools, problems = apply([pool], tmp_path, [tmp_path / "pd.yaml"])
    assert pools == [pool]
    assert problems == [
        Problem(
            Location("pd.yaml", 2),
            f"prefill/prefill: {VAR} /: not found next to the manifest; LMCache chunk_size "
            "not checked",
            blocking=False,
        )
    ]


def test_stdin_looks_up_nothing_even_among_the_run_files(tmp_path: Path) -> None:
    (tmp_path / "lmc.yaml").write_text("chunk_size: 256\n")
    pool = _one(f"{VAR}: lmc.yaml")
    pools, problems = apply([pool], None, [tmp_path / "lmc.yaml"])
    assert pools == [pool]
    assert problems == [
        Problem(
            Location("pd.yaml", 2),
            f"prefill/prefill: {VAR} lmc.yaml: not found next to the manifest; LMCache "
            "chunk_size not checked",
            blocking=False,
        )
    ]


def test_one_file_of_the_run_with_the_name_is_read_with_a_note(tmp_path: Path) -> None:
    other = tmp_path / "lmcache" / "lmc.yaml"
    other.parent.mkdir()
    other.write_text("chunk_size: 512\n")
    pool = _one(f"{VAR}: /etc/lmc.yaml")
    pools, problems = apply([pool], tmp_path / "prefill", [tmp_path / "x.yaml", other])
    (out,) = pools
    assert (out.args.lmcache_chunk_size, out.args.lmcache_chunk_source) == (512, str(other))
    assert problems == [
        Problem(
            Location("pd.yaml", 2),
            f"prefill/prefill: {VAR} /etc/lmc.yaml: read from {other} (another file of this run)",
            blocking=False,
        )
    ]


def test_several_files_of_the_run_with_the_name_are_a_warning(tmp_path: Path) -> None:
    first, second = tmp_path / "a" / "lmc.yaml", tmp_path / "b" / "lmc.yaml"
    pool = _one(f"{VAR}: lmc.yaml")
    pools, problems = apply([pool], tmp_path / "prefill", [first, second])
    assert pools == [pool]
    assert problems == [
        Problem(
            Location("pd.yaml", 2),
            f"prefill/prefill: {VAR} lmc.yaml: not found next to the manifest (looked for "
            f"{tmp_path / 'prefill' / 'lmc.yaml'}); several files of this run have its name "
            f"({first}, {second}); LMCache chunk_size not checked",
            blocking=False,
        )
    ]


@pytest.mark.parametrize(
    ("content", "blocking", "kept", "tail"),
    [
        # no chunk_size: LMCache uses its default; not checked, the pool stays
        ("local_cpu: true\n", False, True, "{path} sets no chunk_size; LMCache chunk_size not "
         "checked"),
        ("- 256\n", True, False, "{path}: expected a YAML mapping"),
        ("chunk_size: 0\n", True, False, "{path}: chunk_size: expected a positive integer, got 0"),
        ("chunk_size: yes please\n", True, False,
         "{path}: chunk_size: expected a positive integer, got 'yes please'"),
    ],
)  # fmt: skip
def test_what_the_file_says(
    tmp_path: Path, content: str, blocking: bool, kept: bool, tail: str
) -> None:
    path = tmp_path / "lmc.yaml"
    path.write_text(content)
    pool = _one(f"{VAR}: lmc.yaml")
    pools, problems = apply([pool], tmp_path)
    assert pools == ([pool] if kept else [])
    assert problems == [
        Problem(
            Location("pd.yaml", 2),
            f"prefill/prefill: {VAR} lmc.yaml: " + tail.format(path=path),
            blocking=blocking,
        )
    ]


def test_invalid_yaml_is_blocking_and_the_pool_is_dropped(tmp_path: Path) -> None:
    (tmp_path / "lmc.yaml").write_text("chunk_size: [256\n")
    pool = _one(f"{VAR}: lmc.yaml")
    pools, problems = apply([pool], tmp_path)
    assert pools == []
    (problem,) = problems
    assert problem.blocking and problem.location == Location("pd.yaml", 2)
    # the error names the file read and its line: the flow sequence opened on line 1 is
    # still open where the text ends (line 2, after the newline)
    assert problem.message.startswith(
        f"prefill/prefill: {VAR} lmc.yaml: {tmp_path / 'lmc.yaml'}:2: not valid YAML"
    )


def test_each_pool_is_handled_on_its_own_in_order(tmp_path: Path) -> None:
    # three pools (entries of prefill:, line 2): a broken file drops the first, the second
    # has no variable, the third reads a good file; a problem of one never stops the next
    (tmp_path / "bad.yaml").write_text("chunk_size: 0\n")
    (tmp_path / "good.yaml").write_text("chunk_size: 768\n")
    bad, plain, good = _pools(f"{VAR}: bad.yaml", "A: x", f"{VAR}: good.yaml")
    pools, problems = apply([bad, plain, good], tmp_path)
    assert [p.name for p in pools] == ["prefill-1", "prefill-2"]
    assert pools[0] == plain
    assert pools[1].args.lmcache_chunk_size == 768
    assert [(p.location, p.blocking) for p in problems] == [(Location("pd.yaml", 2), True)]
    # a not-found pool first does not stop the next either
    missing = _pools(f"{VAR}: none.yaml", f"{VAR}: good.yaml")
    pools, problems = apply(missing, tmp_path)
    assert [p.args.lmcache_chunk_size for p in pools] == [None, 768]
    assert [p.blocking for p in problems] == [False]
    # nor does an unresolved one, or one without chunk_size
    (tmp_path / "none.yaml").write_text("local_cpu: true\n")
    first = dataclasses.replace(missing[0], env=((VAR, unresolved("$X")),))
    for head in (first, missing[0]):
        pools, problems = apply([head, missing[1]], tmp_path)
        assert [p.args.lmcache_chunk_size for p in pools] == [None, 768]
        assert len(problems) == 1
    # nor does an invalid YAML file
    (tmp_path / "none.yaml").write_text("chunk_size: [1\n")
    pools, problems = apply(missing, tmp_path)
    assert [p.args.lmcache_chunk_size for p in pools] == [768]
    # a file that is not a mapping neither
    (tmp_path / "none.yaml").write_text("- 1\n")
    pools, problems = apply(missing, tmp_path)
    assert [p.args.lmcache_chunk_size for p in pools] == [768]
