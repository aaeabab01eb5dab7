"""The hostile-input corpus (tests/corpus/): every case exits 2 (or 3 for a deployment that
was read but cannot be evaluated) with one line naming the file, never a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvalign.cli import app, main
from tests.corpus.generate import (
    CLI_OUT,
    DEPLOY_OUT,
    OUT,
    ROOT,
    cases,
    cli_cases,
    deployment_cases,
)

runner = CliRunner()
FILES = sorted(OUT.iterdir())
DEPLOYMENTS = sorted(DEPLOY_OUT.iterdir())
CLI_CASES = json.loads(CLI_OUT.read_text(encoding="utf-8"))


def test_corpus_is_committed_and_current() -> None:
    expected = cases()
    assert len(expected) >= 300
    assert sorted(p.name for p in FILES) == sorted(expected)
    for path in FILES:
        assert path.read_bytes() == expected[path.name], f"stale corpus file {path.name}"


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_hostile_config_is_rejected_cleanly(path: Path) -> None:
    result = runner.invoke(app, ["check", str(path)])
    err = result.stderr.strip()
    assert result.exit_code == 2, result.stdout[:300]
    assert err.startswith("kvalign: error: ")
    assert len(err.splitlines()) == 1
    assert path.name in err
    assert "Traceback" not in err + result.stdout
    # a field-level problem names the field
    if "--" in path.stem and path.stem.count("--") == 2:
        field = path.stem.split("--")[1]
        if not field.startswith(("truncated", "text_config-")):
            assert field.split(".")[-1] in err, err


def test_deployment_and_cli_corpus_is_committed_and_current() -> None:
    expected = deployment_cases()
    assert len(expected) >= 90
    assert sorted(p.name for p in DEPLOYMENTS) == sorted(expected)
    for path in DEPLOYMENTS:
        assert path.read_bytes() == expected[path.name], f"stale corpus file {path.name}"
    assert cli_cases() == CLI_CASES, "stale tests/corpus/cli-args.json: run generate.py"


def _assert_one_line_error(err: str, name: str) -> None:
    assert err.startswith("kvalign: error: "), err
    assert len(err.splitlines()) == 1, err
    assert name in err, err
    assert "Traceback" not in err


@pytest.mark.parametrize("path", DEPLOYMENTS, ids=[p.name for p in DEPLOYMENTS])
def test_hostile_deployment_is_rejected_cleanly(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)  # model paths inside the corpus are relative to the repository
    rel = str(path.relative_to(ROOT))
    result = runner.invoke(app, ["audit", rel, "--format", "github"])
    out, err = result.stdout, result.stderr.strip()
    assert "Traceback" not in out + err
    assert not isinstance(result.exception, Exception) or isinstance(
        result.exception, SystemExit
    ), repr(result.exception)
    if "--kva010-" in path.name:
        # a well-formed TP the model cannot use is audit rule KVA010 (an error finding)
        assert result.exit_code == 1
        assert f"file={rel}" in out and "KVA010" in out
    elif result.exit_code == 2:
        _assert_one_line_error(err, rel)
    else:
        assert result.exit_code == 3, (result.exit_code, out, err)
        lines = [ln for ln in out.splitlines() if "not evaluated" in ln]
        assert lines and all(f"file={rel}," in ln for ln in lines), out
        assert all(ln.split("::", 2)[2].strip() for ln in lines)  # a message follows


@pytest.mark.parametrize("case", CLI_CASES, ids=[c["id"] for c in CLI_CASES])
def test_hostile_command_line_is_rejected_cleanly(
    case: dict[str, object], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Through the console entry point, so click usage errors are covered too."""
    monkeypatch.chdir(ROOT)
    argv = case["argv"]
    assert isinstance(argv, list)
    with pytest.raises(SystemExit) as exit_info:
        main([str(a) for a in argv])
    captured = capsys.readouterr()
    assert exit_info.value.code == 2, (captured.out, captured.err)
    _assert_one_line_error(captured.err.strip(), str(case["names"]))


# ---- cases git cannot hold: made at runtime --------------------------------------------
def test_symlink_loop_is_rejected(tmp_path: Path) -> None:
    loop_a, loop_b = tmp_path / "a.json", tmp_path / "b.json"
    loop_a.symlink_to(loop_b)
    loop_b.symlink_to(loop_a)
    result = runner.invoke(app, ["check", str(loop_a)])
    assert result.exit_code == 2
    _assert_one_line_error(result.stderr.strip(), str(loop_a))
    assert "symbolic links" in result.stderr
    yaml_loop = tmp_path / "d.yaml"
    yaml_loop.symlink_to(tmp_path / "e.yaml")
    (tmp_path / "e.yaml").symlink_to(yaml_loop)
    result = runner.invoke(app, ["audit", str(yaml_loop)])
    assert result.exit_code == 2
    _assert_one_line_error(result.stderr.strip(), str(yaml_loop))


def test_symlinked_directory_loop_is_not_followed(tmp_path: Path) -> None:
    folder = tmp_path / "deploy"
    folder.mkdir()
    (folder / "self").symlink_to(folder, target_is_directory=True)
    good = ROOT / "configs" / "deployments" / "kvalign" / "nemotron-nano-good.yaml"
    (folder / "good.yaml").write_bytes(good.read_bytes())
    result = runner.invoke(app, ["audit", str(folder), "--format", "json"])
    assert result.exit_code == 0, result.stderr
    assert [f["file"] for f in json.loads(result.stdout)["files"]] == [str(folder / "good.yaml")]


def test_very_large_files_are_refused_without_reading_them(tmp_path: Path) -> None:
    big_json, big_yaml = tmp_path / "config.json", tmp_path / "big.yaml"
    for big in (big_json, big_yaml):
        with big.open("wb") as handle:  # sparse: 100 MB on paper, no disk used
            handle.truncate(100 * 1024 * 1024)
    result = runner.invoke(app, ["check", str(tmp_path)])
    assert result.exit_code == 2
    _assert_one_line_error(result.stderr.strip(), str(big_json))
    assert "larger than 8 MiB" in result.stderr
    result = runner.invoke(app, ["audit", str(big_yaml)])
    assert result.exit_code == 2
    _assert_one_line_error(result.stderr.strip(), str(big_yaml))


def test_large_stdin_is_capped() -> None:
    result = runner.invoke(app, ["audit", "-"], input="#" * (8 * 1024 * 1024 + 10))
    assert result.exit_code == 2
    _assert_one_line_error(result.stderr.strip(), "-: larger than 8 MiB")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "config.json"
    os.mkfifo(fifo)
    result = runner.invoke(app, ["check", str(fifo)])
    assert result.exit_code == 2
    _assert_one_line_error(result.stderr.strip(), f"{fifo}: not a regular file")


def test_directory_without_config_json(tmp_path: Path) -> None:
    result = runner.invoke(app, ["check", str(tmp_path)])
    assert result.exit_code == 2
    _assert_one_line_error(result.stderr.strip(), f"{tmp_path}: directory has no config.json")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_config_json_that_is_no_file_is_named_as_such(tmp_path: Path) -> None:
    """A folder whose config.json is a FIFO or a folder: the message names that entry,
    not "directory has no config.json" (it has one, of the wrong kind)."""
    (tmp_path / "fifo").mkdir()
    os.mkfifo(tmp_path / "fifo" / "config.json")
    (tmp_path / "dir" / "config.json").mkdir(parents=True)
    for name, kind in (("fifo", "not a regular file"), ("dir", "a directory")):
        result = runner.invoke(app, ["check", str(tmp_path / name)])
        assert result.exit_code == 2
        _assert_one_line_error(
            result.stderr.strip(),
            f"{tmp_path / name / 'config.json'}: {kind} (expected the model's config.json)",
        )


def test_whole_corpus_stays_within_memory(tmp_path: Path) -> None:
    """Every deployment and config case in one process: peak RSS stays in the low hundreds
    of MB (transformers alone is ~80 MB), i.e. no bomb or deep file blew up."""
    script = (
        "import os, resource, sys\n"
        "from pathlib import Path\n"
        "from typer.testing import CliRunner\n"
        "from kvalign.cli import app\n"
        "r = CliRunner()\n"
        "for p in sorted(Path('tests/corpus/deployments').iterdir()):\n"
        "    r.invoke(app, ['audit', str(p)])\n"
        "for p in sorted(Path('tests/corpus/configs').iterdir())[::7]:\n"
        "    r.invoke(app, ['check', str(p)])\n"
        # the child's own peak: ru_maxrss survives execve (it starts at the size of the
        # pytest process that forked it), VmHWM belongs to the new address space
        "hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM:')]\n"
        "print(int(hwm[0].split()[1]) if hwm else"
        " resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\n"
    )
    env = dict(os.environ, HF_HUB_OFFLINE="1", XDG_CACHE_HOME=str(tmp_path))
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True,
        check=True,
    )  # fmt: skip
    peak_kib = int(done.stdout.strip().splitlines()[-1])
    assert peak_kib < 400 * 1024, f"peak RSS {peak_kib // 1024} MiB"


@pytest.mark.parametrize(
    ("name", "prefix", "note"),
    [
        # `a && b && …` nests one level per operator (RecursionError before the bound)
        ("and-chain.sh", "true && " * 3000, "nested deeper than 100 levels"),
        ("test-chain.sh", "[[ " + " && ".join(["-n x"] * 3000) + " ]] && ", None),
        # A="$A$A" 64 times: 2^65 characters (memory) before values were bounded
        ("doubling.sh", "A=xx\n" + 'A="$A$A"\n' * 64 + 'echo "$A"\n', "expands to more than"),
        # a 5 000-item case on an unknown subject (quadratic before paths were merged early)
        (
            "case.sh",
            "case $X in\n" + "".join(f"  {i}) Y={i} ;;\n" for i in range(5000)) + "esac\n",
            "more than 16 if/case alternatives",
        ),
    ],
)
def test_hostile_shell_scripts_are_bounded(
    name: str, prefix: str, note: str | None, tmp_path: Path
) -> None:
    """The corpus's two-pool script behind a hostile prefix: still read (prefill TP 8 →
    decode TP 1 is a block_size_ratio error, exit 1), the bound noted, no traceback."""
    from tests.corpus.generate import SHELL

    script = tmp_path / name
    first = "vllm serve nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16 --tensor-parallel-size 8"
    script.write_text(SHELL.replace(first, prefix + first), encoding="utf-8")
    result = runner.invoke(app, ["audit", str(script), "--format", "json"])
    assert result.exit_code == 1, result.stderr
    report = json.loads(result.stdout)
    assert [p["tp"] for f in report["files"] for p in f["pools"]] == [8, 1]
    if note is not None:
        assert note in result.stderr
    assert "Traceback" not in result.stdout + result.stderr


def test_doubling_kubernetes_env_references_are_bounded(tmp_path: Path) -> None:
    """``V2=$(V1)$(V1)`` … 3 000 times is 2^3000 characters (the process was killed for
    memory): substitution past MAX_SUBSTITUTED keeps the text as written."""
    from kvalign.deploy.common import MAX_SUBSTITUTED, substitute_k8s
    from tests.corpus.generate import K8S

    env = {"V1": "x" * 1000}
    assert substitute_k8s("$(V1)-$(V2)", env) == "x" * 1000 + "-$(V2)"  # V2 unknown: kept
    refs = "$(V1)" * (MAX_SUBSTITUTED // 1000 + 1)
    assert substitute_k8s(refs, env) == refs  # would exceed the bound: as written
    chain = "".join(
        f"        - {{name: V{i}, value: '$(V{i - 1})$(V{i - 1})'}}\n" for i in range(1, 3000)
    )
    manifest = tmp_path / "env.yaml"
    manifest.write_text(
        K8S.replace("        args:", "        env:\n" + chain + "        args:", 1),
        encoding="utf-8",
    )
    result = runner.invoke(app, ["audit", str(manifest), "--format", "json"])
    assert "Traceback" not in result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert [p["tp"] for f in report["files"] for p in f["pools"]] == [8, 1]


def test_line_numbers_of_a_manifest_with_thousands_of_containers(tmp_path: Path) -> None:
    """line_of split the whole text once per container (quadratic: 55 s for 20 000
    sidecars); it now splits once per text and must give the same lines as before."""
    from kvalign.deploy.common import line_of
    from tests.corpus.generate import K8S

    lines_text = "a\r\nb\x0cname: x\u2028name: y\nname: x\n"
    # lines as str.splitlines makes them: a | b\x0c → "b", "name: x" | "name: y" | "name: x"
    found = [line_of(lines_text, "name: x"), line_of(lines_text, "name: x", 4)]
    assert [*found, line_of(lines_text, "z")] == [
        3, 5, None
    ]  # fmt: skip
    sidecars = "".join(
        f"      - name: side{i}\n        image: busybox\n        args: [sleep, '1']\n"
        for i in range(3000)
    )
    manifest = tmp_path / "sidecars.yaml"
    text = K8S.replace("      containers:\n", "      containers:\n" + sidecars)
    manifest.write_text(text, encoding="utf-8")
    result = runner.invoke(app, ["audit", str(manifest), "--format", "json"])
    report = json.loads(result.stdout)
    lines = [p["line"] for f in report["files"] for p in f["pools"]]
    # each pool at its Deployment's `name:` line: 4 and 18 in K8S, the decode one moved
    # down by the prefill Deployment's 3 000 three-line sidecars
    assert lines == [4, 18 + 9000], lines
