"""What kvalign writes: ``--output``, ``--plot``, stdout (issue #31).

* ``--output`` / ``--plot`` write only a regular file that is no symlink, never a file
  the run read (:func:`kvalign.safeio.note_input`), never outside the working tree by a
  relative path (``../x``, a symlinked folder); an absolute path is the user's choice.
  Each refusal is one line naming the option and the path, exit 2, nothing written.
* A file name that is not UTF-8, or holds a newline and ESC, is printed escaped in every
  ``audit --format`` (stdout and ``--output``), under ``LANG=C.UTF-8``, ``LANG=C`` and an
  ASCII stdout: exit 1 or 3 as the audit says, never 70 (internal error).
* stdout on a full device (``> /dev/full``) is one line and exit 2, never 70.

The hostile files are made by each test (a name that is not UTF-8 cannot be committed);
the deployments they hold are in ``tests/hostile/fixtures/outputs/``.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from kvalign import safeio
from kvalign.errors import InvalidSettings
from tests.hostile.cases import ROOT, sandbox_env

FIXTURES = Path(__file__).parent / "fixtures" / "outputs"
FINDING = (FIXTURES / "finding.yaml").read_text(encoding="utf-8")  # KVA001: exit 1
BROKEN = (FIXTURES / "broken.yaml").read_text(encoding="utf-8")  # not YAML: exit 3
PASSING = (FIXTURES / "pass.yaml").read_text(encoding="utf-8")  # exit 0

#: (the name's bytes, how every text format prints it).
NOT_UTF8 = (b"bad\xff\xfe.yaml", "bad\\udcff\\udcfe.yaml")
NEWLINE_ESC = (b"nl\n\x1b[31mred.yaml", "\\x1b[31mred.yaml")

AUDIT_FORMATS = ("table", "json", "markdown", "sarif", "junit", "github")
ENCODINGS = {
    "utf8": {"LANG": "C.UTF-8"},
    "c-locale": {"LANG": "C", "LC_ALL": "C"},
    "ascii-stdout": {"LANG": "C.UTF-8", "PYTHONIOENCODING": "ascii"},
}


def _kvalign(
    cwd: Path, *args: str | bytes, stdout: int | None = None, **env: str
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "kvalign", *args],
        cwd=cwd,
        env=sandbox_env(cwd, **(env or {"LANG": "C.UTF-8"})),
        stdout=stdout if stdout is not None else subprocess.PIPE,
        stderr=subprocess.PIPE,
        timeout=120,
        check=False,
    )


def _error_line(done: subprocess.CompletedProcess[bytes]) -> str:
    """The one stderr line of a refusal."""
    lines = done.stderr.decode("utf-8").splitlines()
    assert len(lines) == 1, lines
    return lines[0]


# ---- --output and --plot: links, the tree, inputs --------------------------------------------
@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """``tmp_path/outside.txt`` and ``tmp_path/tree/`` (the working tree) holding a
    passing deployment, a link to the outside file and a dangling link out of the tree."""
    (tmp_path / "outside.txt").write_text("precious\n", encoding="utf-8")
    folder = tmp_path / "tree"
    folder.mkdir()
    (folder / "d.yaml").write_text(PASSING, encoding="utf-8")
    (folder / "report.json").symlink_to("../outside.txt")
    (folder / "dangling.json").symlink_to("../created.json")
    (folder / "elsewhere").symlink_to(tmp_path, target_is_directory=True)
    return folder


def _outside_unchanged(tree: Path) -> None:
    assert (tree.parent / "outside.txt").read_text(encoding="utf-8") == "precious\n"
    assert not (tree.parent / "created.json").exists()
    assert sorted(os.listdir(tree.parent)) == ["outside.txt", "tree"]
    assert sorted(p for p in os.listdir(tree) if not p.startswith(".")) == [
        "d.yaml", "dangling.json", "elsewhere", "report.json",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("target", "reason"),
    [
        ("report.json", "is a symbolic link; refusing to write through it"),
        ("dangling.json", "is a symbolic link; refusing to write through it"),
        (
            "../x.json",
            "leaves the working tree (a relative path may not climb out with `..` or "
            "through a symlinked folder); give an absolute path to write outside it",
        ),
        (
            "elsewhere/x.json",
            "leaves the working tree (a relative path may not climb out with `..` or "
            "through a symlinked folder); give an absolute path to write outside it",
        ),
    ],
)
@pytest.mark.parametrize("output_format", ["table", "json"])
def test_audit_output_refuses_links_and_paths_out_of_the_tree(
    tree: Path, target: str, reason: str, output_format: str
) -> None:
    done = _kvalign(tree, "audit", "d.yaml", "--format", output_format, "--output", target)
    assert done.returncode == 2
    assert _error_line(done) == f"kvalign: error: --output {target}: {reason}"
    if output_format == "json":  # the error document goes to stdout, never to the file
        assert json.loads(done.stdout)["error"]["message"] == f"--output {target}: {reason}"
    else:
        assert done.stdout == b""
    _outside_unchanged(tree)


def test_plot_refuses_a_link_before_rendering(tree: Path) -> None:
    (tree / "grid.svg").symlink_to("../outside.txt")
    done = _kvalign(tree, "survey", "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", "--tp", "1,2",
                    "--format", "csv", "--plot", "grid.svg")  # fmt: skip
    assert done.returncode == 2
    assert _error_line(done) == (
        "kvalign: error: --plot grid.svg: is a symbolic link; refusing to write through it"
    )
    assert (tree.parent / "outside.txt").read_text(encoding="utf-8") == "precious\n"
    assert (tree / "grid.svg").is_symlink()


def test_absolute_path_outside_the_tree_is_the_users_choice(tree: Path) -> None:
    target = tree.parent / "chosen.txt"
    done = _kvalign(tree, "audit", "d.yaml", "--output", str(target))
    assert done.returncode == 0, done.stderr
    assert target.read_text(encoding="utf-8").startswith("PASS (exit 0")
    # ... but never through a link as its last component
    link = tree.parent / "link.txt"
    link.symlink_to(tree.parent / "outside.txt")
    done = _kvalign(tree, "audit", "d.yaml", "--output", str(link))
    assert done.returncode == 2
    assert _error_line(done) == (
        f"kvalign: error: --output {link}: is a symbolic link; refusing to write through it"
    )
    assert (tree.parent / "outside.txt").read_text(encoding="utf-8") == "precious\n"


def test_relative_path_inside_the_tree_is_written_in_place(tree: Path) -> None:
    (tree / "sub").mkdir()
    (tree / "sub" / "old.txt").write_text("old\n", encoding="utf-8")
    (tree / "sub" / "old.txt").chmod(0o640)
    inode = (tree / "sub" / "old.txt").stat().st_ino
    done = _kvalign(tree, "audit", "d.yaml", "--output", "sub/../sub/old.txt")
    assert done.returncode == 0, done.stderr
    written = tree / "sub" / "old.txt"
    assert written.read_text(encoding="utf-8").startswith("PASS (exit 0")
    assert stat.S_IMODE(written.stat().st_mode) == 0o640  # the mode is kept
    assert written.stat().st_ino != inode  # replaced by a rename, not written in place
    assert os.listdir(tree / "sub") == ["old.txt"]  # no temporary file left


# ---- the library rules, with note_input as the renderer-input recorder calls it -------------
@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    safeio.forget_inputs()
    yield tmp_path
    safeio.forget_inputs()


def test_write_output_refuses_a_noted_input_and_its_hard_link(in_tmp: Path) -> None:
    rendered = in_tmp / "values.yaml"  # e.g. a values file helm read during the run
    rendered.write_text("replicas: 1\n", encoding="utf-8")
    os.link(rendered, in_tmp / "alias.yaml")
    safeio.note_input(rendered)
    for name in ("values.yaml", "alias.yaml", str(rendered)):
        with pytest.raises(InvalidSettings) as caught:
            safeio.write_output(name, "report\n")
        assert str(caught.value) == (
            f"--output {name}: is one of this run's inputs; refusing to overwrite it"
        )
    assert rendered.read_text(encoding="utf-8") == "replicas: 1\n"
    safeio.forget_inputs()  # the same file once the run's inputs are forgotten
    safeio.write_output("values.yaml", "report\n")
    assert rendered.read_text(encoding="utf-8") == "report\n"


def test_write_output_refusals_name_option_and_path(in_tmp: Path) -> None:
    os.mkfifo(in_tmp / "fifo")
    (in_tmp / "folder").mkdir()
    (in_tmp / "link").symlink_to(in_tmp / "folder")
    cases = {
        "fifo": "not a regular file (directory, FIFO or device); refusing to write there",
        "folder": "not a regular file (directory, FIFO or device); refusing to write there",
        "link": "is a symbolic link; refusing to write through it",
        "folder/..": "names a directory, not a file; refusing to write there",
        "missing/x": "cannot write (its folder does not exist)",
        "a\x00b": "not a valid file name",
        "../up": (
            "leaves the working tree (a relative path may not climb out with `..` or "
            "through a symlinked folder); give an absolute path to write outside it"
        ),
    }
    for name, reason in cases.items():
        with pytest.raises(InvalidSettings) as caught:
            safeio.write_output(name, "x", option="--plot")
        shown = name.replace("\x00", "\\x00")
        assert str(caught.value) == f"--plot {shown}: {reason}"
    # a name with a newline and ESC is shown escaped, on one line
    (in_tmp / "l\n\x1b").symlink_to("elsewhere")
    with pytest.raises(InvalidSettings) as caught:
        safeio.write_output("l\n\x1b", "x")
    assert str(caught.value) == (
        "--output l\\n\\x1b: is a symbolic link; refusing to write through it"
    )
    assert sorted(os.listdir(in_tmp)) == ["fifo", "folder", "l\n\x1b", "link"]


def test_write_output_error_document_never_replaces(in_tmp: Path) -> None:
    (in_tmp / "kept.json").write_text("kept\n", encoding="utf-8")
    with pytest.raises(InvalidSettings) as caught:
        safeio.write_output("kept.json", "{}\n", replace=False)
    assert str(caught.value) == "--output kept.json: exists; an error never overwrites a file"
    assert (in_tmp / "kept.json").read_text(encoding="utf-8") == "kept\n"
    safeio.write_output("new.json", "{}\n", replace=False)
    assert (in_tmp / "new.json").read_text(encoding="utf-8") == "{}\n"
    assert sorted(os.listdir(in_tmp)) == ["kept.json", "new.json"]


def test_write_output_writes_what_utf8_cannot_hold_as_escapes(in_tmp: Path) -> None:
    safeio.write_output("out.md", "file bad\udcff.yaml\n")
    assert (in_tmp / "out.md").read_bytes() == b"file bad\\udcff.yaml\n"


def test_write_output_new_file_gets_the_umask(in_tmp: Path) -> None:
    old = os.umask(0o027)
    try:
        safeio.write_output("new.txt", "x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((in_tmp / "new.txt").stat().st_mode) == 0o640


# ---- file names in every format: never exit 70 ------------------------------------------------
def _hostile_tree(folder: Path) -> Path:
    """``folder/t/``: a file with a finding and a broken file, under each hostile name."""
    base = os.fsencode(folder / "t")
    os.mkdir(base)
    for raw, _ in (NOT_UTF8, NEWLINE_ESC):
        with open(os.path.join(base, raw), "w", encoding="utf-8") as handle:
            handle.write(FINDING)
        with open(os.path.join(base, b"broken-" + raw), "w", encoding="utf-8") as handle:
            handle.write(BROKEN)
    return folder / "t"


def _shows_names_escaped(output_format: str, text: str) -> None:
    assert "\x1b" not in text
    if output_format in ("json", "sarif"):
        doc = json.loads(text)
        dumped = json.dumps(doc)  # ASCII: JSON escapes, \udcff for a byte that is not UTF-8
        assert "bad\\udcff\\udcfe.yaml" in dumped
        assert "nl\\n\\u001b[31mred.yaml" in dumped
        return
    assert NOT_UTF8[1] in text
    assert NEWLINE_ESC[1] in text
    assert "broken-" + NOT_UTF8[1] in text


@pytest.mark.parametrize("encoding", sorted(ENCODINGS))
@pytest.mark.parametrize("output_format", AUDIT_FORMATS)
def test_audit_prints_hostile_file_names_escaped(
    tmp_path: Path, output_format: str, encoding: str
) -> None:
    _hostile_tree(tmp_path)
    done = _kvalign(tmp_path, "audit", "t", "--format", output_format, **ENCODINGS[encoding])
    stderr = done.stderr.decode("ascii", "strict")  # escaped: ASCII whatever the locale
    assert done.returncode == 3, stderr  # findings, and files that could not be evaluated
    assert "internal error" not in stderr and "\x1b" not in stderr
    _shows_names_escaped(output_format, done.stdout.decode("utf-8"))


@pytest.mark.parametrize("output_format", AUDIT_FORMATS)
def test_audit_output_file_holds_hostile_names_escaped(tmp_path: Path, output_format: str) -> None:
    _hostile_tree(tmp_path)
    done = _kvalign(tmp_path, "audit", "t", "--format", output_format, "--output", "report.out")
    assert done.returncode == 3, done.stderr
    assert "internal error" not in done.stderr.decode("ascii")
    text = (tmp_path / "report.out").read_bytes().decode("utf-8")  # valid UTF-8
    _shows_names_escaped(output_format, text)


@pytest.mark.parametrize("output_format", AUDIT_FORMATS)
def test_audit_of_a_passing_file_with_a_name_that_is_not_utf8(
    tmp_path: Path, output_format: str
) -> None:
    os.mkdir(os.fsencode(tmp_path / "t"))
    with open(os.path.join(os.fsencode(tmp_path / "t"), NOT_UTF8[0]), "w") as handle:
        handle.write(PASSING)
    done = _kvalign(tmp_path, "audit", "t", "--format", output_format, "--verbose")
    assert done.returncode == 0, done.stderr
    assert b"\x1b" not in done.stdout


# ---- stdout on a full device -------------------------------------------------------------------
FULL_LINE = "kvalign: error: stdout: cannot write the output (No space left on device)"


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize(
    "args",
    [
        ("audit", "d.yaml"),
        ("audit", "d.yaml", "--format", "json"),
        ("audit", "d.yaml", "--select", "BOGUS", "--format", "json"),  # the error document
        ("check", "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", "--prefill-tp", "8"),
        ("matrix", "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", "--tp", "1,2", "--format", "json"),
        ("plan", "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", "--emit", "compose"),
        ("models",),
        ("--help",),
    ],
    ids=lambda args: "-".join(a.lstrip("-") for a in args if "/" not in a),
)
def test_stdout_on_a_full_device_is_one_line_exit_2(tmp_path: Path, args: tuple[str, ...]) -> None:
    (tmp_path / "d.yaml").write_text(PASSING, encoding="utf-8")
    with open("/dev/full", "wb") as full:
        done = _kvalign(tmp_path, *args, stdout=full.fileno())
    assert done.returncode == 2
    assert done.stderr.decode("utf-8").splitlines() == [FULL_LINE]


# ---- a terminal: what typer.echo would not strip -----------------------------------------------
def _on_a_terminal(cwd: Path, *args: str | bytes) -> tuple[int, bytes]:
    """Run kvalign with stdout on a pseudo-terminal (where ESC is not stripped); its exit
    code and what it printed there."""
    import pty

    master, slave = pty.openpty()
    env = sandbox_env(cwd, LANG="C.UTF-8", NO_COLOR="1", COLUMNS="200", TERM="dumb")
    process = subprocess.Popen(
        [sys.executable, "-m", "kvalign", *args],
        cwd=cwd, env=env, stdout=slave, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    os.close(slave)
    chunks = []
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the other end closed
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(master)
    return process.wait(timeout=120), b"".join(chunks)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="pty on Linux")
@pytest.mark.parametrize(
    "args",
    [
        ("survey", "--tp", "1,2", "--format", "markdown"),
        ("survey", "--tp", "1,2", "--format", "csv"),
        ("check", "--prefill-tp", "1", "--decode-tp", "2", "--format", "markdown"),
        ("explain", "--tp", "2", "--format", "markdown"),
    ],
    ids=lambda args: f"{args[0]}-{args[-1]}",
)
def test_model_folder_name_reaches_a_terminal_escaped(
    tmp_path: Path, args: tuple[str, ...]
) -> None:
    name = "e\x1b[31m\x1b]8;;https:x\x1b\\"
    (tmp_path / name).mkdir()
    config = ROOT / "configs" / "models" / "tiiuae" / "Falcon-H1-0.5B-Base" / "config.json"
    (tmp_path / name / "config.json").write_bytes(config.read_bytes())
    code, out = _on_a_terminal(tmp_path, args[0], f"./{name}", *args[1:])
    assert code == 0
    assert b"\x1b[31m" not in out and b"\x1b]8" not in out
    assert b"./e\\x1b[31m\\x1b]8;;https:x\\x1b\\" in out


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="pty on Linux")
def test_audit_markdown_reaches_a_terminal_escaped(tmp_path: Path) -> None:
    _hostile_tree(tmp_path)
    code, out = _on_a_terminal(tmp_path, "audit", "t", "--format", "markdown")
    assert code == 3
    assert b"\x1b" not in out
    assert b"**Not evaluated** `t/broken-nl \\x1b[31mred.yaml:2`" in out


def test_write_output_checks_the_name_again_before_replacing(
    in_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A link planted after the first check (a race) is still never written through."""
    (in_tmp / "late").symlink_to("outside.txt")
    (in_tmp / "outside.txt").write_text("precious\n", encoding="utf-8")
    monkeypatch.setattr(
        safeio, "refuse_output", lambda path, option="--output": (str(in_tmp / path), None)
    )
    with pytest.raises(InvalidSettings) as caught:
        safeio.write_output("late", "report\n")
    assert str(caught.value) == (
        "--output late: changed while writing (now a link, special file or input); "
        "refusing to write there"
    )
    assert (in_tmp / "outside.txt").read_text(encoding="utf-8") == "precious\n"
    assert (in_tmp / "late").is_symlink()
    assert sorted(os.listdir(in_tmp)) == ["late", "outside.txt"]  # no temporary file left


def test_junit_bodies_keep_a_file_name_on_one_line(tmp_path: Path) -> None:
    _hostile_tree(tmp_path)
    done = _kvalign(tmp_path, "audit", "t", "--format", "junit")
    assert done.returncode == 3
    text = done.stdout.decode("utf-8")
    assert "t/nl\\n\\x1b[31mred.yaml:4: logical block size" in text
    assert "t/broken-nl\\n\\x1b[31mred.yaml:2: not valid YAML" in text
    assert not any(line.startswith("\\x1b[31mred") for line in text.splitlines())
