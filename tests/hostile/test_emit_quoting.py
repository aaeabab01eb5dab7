"""``plan --emit`` never lets a model path break out of its place in the snippet.

A model folder's name is input: with a newline it put a shell command line into the
emitted ``serve.sh`` header and a top-level key into the YAML snippets (issue #31). Each
hostile name below is a real folder holding a model config; ``kvalign plan PATH --emit
TARGET`` runs in a subprocess (``LANG=C.UTF-8``) and its snippet is

* run by bash (``vllm-args``) with ``vllm`` a stand-in that records its argv: the argv
  is exactly the intended words, and nothing else ran (no ``$(touch …)``);
* parsed by :func:`kvalign.safeio.load_yaml_documents` (the YAML targets): exactly the
  expected keys, the model path round-trips;
* audited by ``kvalign audit`` on the emitted file: it reads the same model folder
  (exit 0, no finding, both pools at the planned block size);

and no line of any snippet holds a raw control or bidi character, every comment is one
line (:func:`kvalign.emit.comment_text`).
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from kvalign.cli.app import app
from kvalign.emit import TARGETS, comment_text, model_word, shell_word
from kvalign.safeio import load_yaml_documents
from tests.hostile.cases import MODELS, sandbox_env

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")

#: a small hybrid model: plan and audit are quick, the block size is not 16.
MODEL = MODELS / "tiiuae" / "Falcon-H1-0.5B-Base" / "config.json"

#: model folder names that would break out of a snippet written by concatenation.
HOSTILE = {
    "newline": "nl\nrm -rf ~ #",
    "command-substitution": "$(touch pwned1)",
    "backticks": "`touch pwned2`",
    "semicolon": "a; touch pwned3",
    "quotes": "q'uo\"te",
    "hash": "hash #x: y",
    "esc": "esc\x1b[31m\x1b]8;;https:x\x1b\\",
    "bidi": "bidi\u202eexe.sh",
    "line-separator": "ls\u2028key: value",
    "yaml-key": "k\nservices: {}",
    "leading-dash": "-dash",
}

_SNIPPET_SUFFIX = {target: ".sh" if target == "vllm-args" else ".yaml" for target in TARGETS}


def _env(folder: Path, **extra: str) -> dict[str, str]:
    return sandbox_env(folder, LANG="C.UTF-8", **extra)


def _kvalign(folder: Path, *args: str | bytes) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "kvalign", *args],
        cwd=folder,
        env=_env(folder),
        capture_output=True,
        timeout=120,
        check=False,
    )


def _model_folder(folder: Path, name: str | bytes) -> bytes:
    """A folder ``name`` under ``folder`` holding the model config; its name as bytes."""
    raw = name if isinstance(name, bytes) else os.fsencode(name)
    target = os.path.join(os.fsencode(folder), raw)
    os.mkdir(target)
    shutil.copyfile(MODEL, os.path.join(target, b"config.json"))
    return raw


#: the release the snippets are planned for (the block size 800 below is 0.33's).
RELEASE = ("--vllm-version", "0.33.0")


def _emit(folder: Path, raw: bytes, target: str) -> str:
    """``kvalign plan --emit TARGET -- NAME`` (``--``: a name may start with ``-``), run in
    ``folder``: in this process for a name that is text (a subprocess each would make
    this file minutes long), in a subprocess for one that is not UTF-8."""
    try:
        name = raw.decode("utf-8")
    except UnicodeDecodeError:
        done = _kvalign(folder, "plan", "--emit", target, *RELEASE, "--", raw)
        assert done.returncode == 0, done.stderr.decode(errors="replace")
        assert done.stderr == b""
        return done.stdout.decode("ascii")  # the snippets are ASCII: no raw control or bidi
    here = os.getcwd()
    os.chdir(folder)
    try:
        result = CliRunner().invoke(app, ["plan", "--emit", target, *RELEASE, "--", name])
    finally:
        os.chdir(here)
    assert result.exit_code == 0, (result.stderr, result.exception)
    assert result.stderr == ""
    result.stdout.encode("ascii")  # the snippets are ASCII: no raw control or bidi
    return result.stdout


def _assert_clean_lines(text: str, comments: int) -> None:
    """Every line printable (no raw control, bidi or separator character), and exactly
    ``comments`` comment lines (a line break in a comment would make more, or a line
    that is no comment)."""
    lines = text.split("\n")
    assert all(line.isprintable() for line in lines), [x for x in lines if not x.isprintable()]
    assert len([line for line in lines if line.startswith("#")]) == comments


def _record_vllm(folder: Path) -> tuple[Path, Path]:
    """A ``vllm`` stand-in on PATH that writes its argv (NUL-separated) to a file of
    its own, and the folder those files go to."""
    bin_dir = folder / "bin"
    bin_dir.mkdir()
    log = folder / "argv"
    log.mkdir()
    stub = bin_dir / "vllm"
    stub.write_text('#!/bin/sh\nprintf \'%s\\0\' "$@" > "$ARGV_LOG/$$"\n', encoding="utf-8")
    stub.chmod(0o755)
    return bin_dir, log


def _run_serve(folder: Path, script: str) -> list[list[bytes]]:
    path = folder / "serve.sh"
    path.write_text(script, encoding="ascii")
    syntax = subprocess.run(["bash", "-n", str(path)], capture_output=True, check=False)
    assert syntax.returncode == 0, syntax.stderr
    bin_dir, log = _record_vllm(folder)
    env = _env(folder, ARGV_LOG=str(log))
    env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"
    before = sorted(os.listdir(folder))
    done = subprocess.run(
        ["bash", str(path)], cwd=folder, env=env, capture_output=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == b""
    assert sorted(os.listdir(folder)) == before  # no pwned file, nothing else created
    runs = [(log / name).read_bytes() for name in sorted(os.listdir(log))]
    return [run.split(b"\0")[:-1] for run in runs]


@pytest.fixture(scope="module")
def benign(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Every target's snippet for a folder of a plain name (the words that must follow
    the model path are the same for every name)."""
    folder = tmp_path_factory.mktemp("benign")
    raw = _model_folder(folder, "plain")
    return {target: _emit(folder, raw, target) for target in TARGETS}


def _serve_words(benign_snippet: str, folder: Path) -> list[bytes]:
    """The argv after ``serve MODEL`` of the prefill launch, for the plain name."""
    runs = _run_serve(folder, benign_snippet)
    prefill = [run for run in runs if b"8100" in run]
    assert len(prefill) == 1
    assert prefill[0][:2] == [b"serve", b"plain"]
    return prefill[0][2:]


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_serve_sh_runs_the_exact_argv_and_nothing_else(
    tmp_path: Path, case: str, benign: dict[str, str]
) -> None:
    (tmp_path / "plain").mkdir()
    words = _serve_words(benign["vllm-args"], tmp_path / "plain")
    raw = _model_folder(tmp_path, HOSTILE[case])
    script = _emit(tmp_path, raw, "vllm-args")
    _assert_clean_lines(script, 6)  # #!, three header lines, "# prefill", "# decode"
    runs = _run_serve(tmp_path, script)
    expected_model = b"./-dash" if case == "leading-dash" else raw
    assert len(runs) == 2
    assert [run[:2] for run in runs] == [[b"serve", expected_model]] * 2
    prefill = next(run for run in runs if b"8100" in run)
    assert prefill[2:] == words


def test_serve_sh_names_a_folder_that_is_not_utf8(tmp_path: Path) -> None:
    raw = _model_folder(tmp_path, b"bad\xff\xfename")
    script = _emit(tmp_path, raw, "vllm-args")
    assert "$'bad\\xff\\xfename'" in script
    assert "# kvalign plan: bad\\udcff\\udcfename," in script
    runs = _run_serve(tmp_path, script)
    assert [run[1] for run in runs] == [raw, raw]


@pytest.mark.parametrize("target", [t for t in TARGETS if t != "vllm-args"])
def test_yaml_target_refuses_a_folder_that_is_not_utf8(tmp_path: Path, target: str) -> None:
    raw = _model_folder(tmp_path, b"bad\xffname")
    done = _kvalign(tmp_path, "plan", raw, "--emit", target)
    assert done.returncode == 2
    assert done.stdout == b""
    assert done.stderr.decode() == (
        f"kvalign: error: --emit {target}: the model path bad\\udcffname is not UTF-8, "
        "which a YAML document cannot hold: rename it, or use --emit vllm-args\n"
    )


def _model_places(target: str, docs: list[Any], name: str) -> list[tuple[object, str]]:
    """(what the document holds, what it should hold) where each YAML target names the
    model: a command word (``./`` before a leading ``-``) or a URI / name (as given)."""
    word = f"./{name}" if name.startswith("-") else name
    first = docs[0]
    if target == "compose":
        services = first["services"]
        return [(services[s]["command"][0], word) for s in ("vllm-prefill", "vllm-decode")]
    if target == "llm-d-values":
        return [(first["modelArtifacts"]["uri"], f"hf://{name}")]
    if target == "kserve":
        spec = first["spec"]
        return [(spec["model"]["uri"], f"hf://{name}"), (spec["model"]["name"], name)]
    if target == "dynamo":
        workers = first["spec"]["components"][1:]
        return [(w["extraPodSpec"]["mainContainer"]["args"][1], word) for w in workers]
    assert target == "production-stack"
    specs = first["servingEngineSpec"]["modelSpec"]
    return [(spec["modelURL"], word) for spec in specs]


def _without_names(plain: list[Any], hostile: list[Any]) -> list[Any]:
    """``plain`` with the Kubernetes object names (made from the folder name) of
    ``hostile``."""
    docs = copy.deepcopy(plain)
    for doc, other in zip(docs, hostile, strict=True):
        for key in ("metadata", "modelArtifacts"):
            if key in doc:
                doc[key]["name"] = other[key]["name"]
    return docs


#: the top-level keys of each YAML target's documents.
TOP_KEYS = {
    "compose": [{"services"}],
    "llm-d-values": [
        {"modelArtifacts", "decode", "prefill"},
        {"apiVersion", "kind", "plugins", "schedulingProfiles"},
    ],
    "kserve": [{"apiVersion", "kind", "metadata", "spec"}],
    "dynamo": [{"apiVersion", "kind", "metadata", "spec"}],
    "production-stack": [{"servingEngineSpec", "routerSpec"}],
}


@pytest.mark.parametrize("target", [t for t in TARGETS if t != "vllm-args"])
@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_yaml_snippet_keeps_the_path_in_its_value(
    tmp_path: Path, target: str, case: str, benign: dict[str, str]
) -> None:
    name = HOSTILE[case]
    raw = _model_folder(tmp_path, name)
    text = _emit(tmp_path, raw, target)
    _assert_clean_lines(text, 3)
    docs = [doc for _, doc in load_yaml_documents(text, target)]
    assert [set(doc) for doc in docs] == TOP_KEYS[target]  # no key injected
    places = _model_places(target, docs, name)
    assert [found for found, _ in places] == [wanted for _, wanted in places]
    # the same document as for a plain name, once the model path is swapped back
    plain = [doc for _, doc in load_yaml_documents(benign[target], target)]
    swapped = json.dumps(docs)
    for spelling in (f"./{name}", name):
        swapped = swapped.replace(json.dumps(spelling)[1:-1], "plain")
    assert json.loads(swapped) == _without_names(plain, docs)
    header = text.split("\n", 1)[0]
    assert header == (
        f"# kvalign plan: {comment_text(name)}, prefill TP 1, decode TP 1, vLLM 0.33.0"
    )


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("case", ["newline", "esc", "bidi", "command-substitution"])
def test_audit_reads_the_emitted_snippet_back(tmp_path: Path, target: str, case: str) -> None:
    raw = _model_folder(tmp_path, HOSTILE[case])
    snippet = tmp_path / f"snippet{_SNIPPET_SUFFIX[target]}"
    snippet.write_text(_emit(tmp_path, raw, target), encoding="ascii")
    done = _kvalign(tmp_path, "audit", snippet.name, "--vllm-version", "0.33.0", "--format", "json")
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    doc = json.loads(done.stdout)
    assert doc["findings"] == [] and doc["unevaluated"] == []
    pools = [pool for f in doc["files"] for pool in f["pools"]]
    # the local folder was read (a path it could not read would stop the audit), by
    # the very name, at the planned block size
    assert sorted((p["role"], p["model"], p["block_size"]) for p in pools) == [
        ("decode", HOSTILE[case], 800),
        ("prefill", HOSTILE[case], 800),
    ]


def test_shell_word_quotes_each_kind() -> None:
    assert shell_word("plain/model-1.5") == "plain/model-1.5"
    assert shell_word("a b'c") == "'a b'\"'\"'c'"
    assert shell_word("x\ny") == "$'x\\x0ay'"
    assert shell_word("it's\\\x1b") == "$'it\\x27s\\x5c\\x1b'"
    assert shell_word("\u202e") == "$'\\xe2\\x80\\xae'"
    assert shell_word("\udcff") == "$'\\xff'"
    assert shell_word("é") == "$'\\xc3\\xa9'"


def test_comment_text_is_one_line() -> None:
    assert comment_text("a\nb\rc\x1bd\u202ee\u2028f\u2029g\x85h") == (
        "a\\nb\\x0dc\\x1bd\\u202ee\\u2028f\\u2029g\\x85h"
    )


def test_model_word_protects_a_leading_dash() -> None:
    from types import SimpleNamespace

    assert model_word(SimpleNamespace(model="--trust-remote-code")) == "./--trust-remote-code"  # type: ignore[arg-type]
    assert model_word(SimpleNamespace(model="org/model")) == "org/model"  # type: ignore[arg-type]


def test_audit_reads_a_serve_sh_naming_a_folder_that_is_not_utf8(tmp_path: Path) -> None:
    raw = _model_folder(tmp_path, b"bad\xffname")
    (tmp_path / "serve.sh").write_text(_emit(tmp_path, raw, "vllm-args"), encoding="ascii")
    done = _kvalign(tmp_path, "audit", "serve.sh", "--vllm-version", "0.33.0", "--format", "json")
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    pools = [pool for f in json.loads(done.stdout)["files"] for pool in f["pools"]]
    assert sorted((p["role"], p["model"], p["block_size"]) for p in pools) == [
        ("decode", "bad\udcffname", 800),
        ("prefill", "bad\udcffname", 800),
    ]
