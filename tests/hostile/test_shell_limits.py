"""The shell evaluator's limits: no launch silently dropped, ordinary big scripts audited.

Each case is a script (or Justfile) built from the pairs in ``fixtures/shell/`` and run
through ``kvalign audit`` in a subprocess under ``RLIMIT_AS`` 1 GiB and ``RLIMIT_CPU`` 10 s
(the runner of :mod:`tests.hostile.test_hostile`), asserting the exit code, the one line that
names the limit, no traceback and no file changed.

* A launch the evaluator saw but could not read (nested deeper than 100 levels, ``eval``
  nested deeper than 8 levels, more than 20,000 commands, a value kept opaque for its length
  inside a ``vllm serve`` launch, a shell budget) makes its file *not evaluated* (exit 3),
  named with the limit, whether the file is named or found by a folder scan; the other
  launches of the file are still judged.
* Large but ordinary scripts are audited: the failing pair in them is found (exit 1 with
  its KVA001 finding): a 7.8 MB one-line ``echo``, 10,000 assignments of a 128 KB value,
  6,000 expansions of it, ``eval`` of a 200 KB value that holds the launch.
* A Justfile line with 200,000 unclosed ``{{`` is read in linear time (it took minutes);
  a value interpolated thousands of times is refused before it is built (not evaluated,
  naming the budget).
* A script of more shell syntax than the parser's tree can hold in memory (8 MB of
  ``a;``) is not evaluated, before it is parsed (it was a segmentation fault).
"""

from __future__ import annotations

import dataclasses
import json
import shlex
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.hostile.cases import Case
from tests.hostile.test_hostile import MEMORY_LIMIT, _run

FIXTURES = Path(__file__).parent / "fixtures" / "shell"
GOOD = (FIXTURES / "good_pair.sh").read_text(encoding="utf-8")
BAD = (FIXTURES / "bad_pair.sh").read_text(encoding="utf-8")
#: what the failing pair's audit says (prefill TP 4, decode TP 1 of Falcon-H1)
BAD_FINDING = "logical block size 400 (prefill TP 4) vs 800 (decode TP 1)"
LONG = "v" * (128 * 1024)
#: past MAX_WORD (256 KiB): a word kvalign does not read
TOO_LONG = "w" * 300_000


def _launches(pair: str) -> list[str]:
    return [line for line in pair.splitlines() if line.startswith("vllm serve")]


def _nested(line: str, levels: int) -> str:
    """``line`` inside ``levels`` nested ``eval "…"`` (each level quoted for the next)."""
    for _ in range(levels):
        line = 'eval "' + line.replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$") + '"'
    return line


def _bad_evals(levels: int) -> str:
    return "".join(_nested(launch.rstrip(" &"), levels) + " &\n" for launch in _launches(BAD))


def _deep(open_: str, close: str) -> str:
    return GOOD + open_ * 150 + BAD + close * 150


SCRIPTS: dict[str, Callable[[], str]] = {
    "deep-if": lambda: _deep("if true; then\n", "fi\n"),
    "deep-subshell": lambda: _deep("(\n", ")\n"),
    "deep-group": lambda: _deep("{\n", "}\n"),
    "eval-12": lambda: GOOD + _bad_evals(12),
    "eval-3": lambda: _bad_evals(3),
    "long-echo": lambda: "echo " + "x" * 7_800_000 + "\n" + BAD,
    "assignments": lambda: f"V={LONG}\n" + "".join(f"A{i}=$V\n" for i in range(10_000)) + BAD,
    "expansions": lambda: f"V={LONG}\n" + 'echo "$V"\n' * 6_000 + BAD,
    "eval-long": lambda: (
        "CMD=" + shlex.quote("\n".join(_launches(BAD)) + "\n: " + "x" * 200_000) + '\neval "$CMD"\n'
    ),
    "long-in-launch": lambda: (
        f"V={LONG}\n"
        + _launches(BAD)[0].replace(" &", ' --served-model-name "$V" &')
        + "\n"
        + _launches(BAD)[1]
        + "\n"
    ),
    "too-long-in-launch": lambda: (
        f"V={TOO_LONG}\n"
        + _launches(BAD)[0].replace(" &", ' --served-model-name "$V" &')
        + "\n"
        + _launches(BAD)[1]
        + "\n"
    ),
    "steps": lambda: BAD + "A=1\n" * 120_000,
    # 8 MB of `a;`: the parser's tree would be 2 GB (and `(` or `$a` as bad); refused
    # before it is parsed (the syntax budget), in a fraction of a second
    "syntax": lambda: BAD + "a;" * 4_000_000,
    # thousands of variables and of commands: each command's snapshot of the variables is
    # a copy in C, decoded only for launches (it was built and decoded per command: 25 s)
    "variables-and-commands": lambda: (
        "".join(f"A{i}=1\n" for i in range(5_000)) + "echo ok\n" * 3_000 + BAD
    ),
    # all of them exported (`set -a`): each command's environment is built and sorted;
    # charged to the step budget (1 step per 20 exported): not evaluated within seconds
    "exported-and-commands": lambda: (
        "set -a\n" + BAD + "".join(f"A{i}=1\n" for i in range(2_000)) + "echo ok\n" * 15_000
    ),
    "commands": lambda: GOOD + ":\n" * 25_000 + BAD,
}


def _script(name: str) -> Callable[[Path], list[str]]:
    def build(folder: Path) -> list[str]:
        (folder / "run.sh").write_text("#!/bin/bash\n" + SCRIPTS[name](), encoding="utf-8")
        return ["audit", "run.sh"]

    return build


def _scanned(name: str) -> Callable[[Path], list[str]]:
    def build(folder: Path) -> list[str]:
        (folder / "deploy").mkdir()
        (folder / "deploy" / "run.sh").write_text(
            "#!/bin/bash\n" + SCRIPTS[name](), encoding="utf-8"
        )
        return ["audit", "deploy"]

    return build


def _audit(case: Case, tmp_path: Path) -> tuple[int, str, str]:
    """Run ``case`` (wide enough that no finding is wrapped); its exit code, stdout, stderr."""
    case = dataclasses.replace(case, env={"COLUMNS": "1000"})
    done, cpu, maxrss, before, after = _run(case, tmp_path / case.name)
    stdout = done.stdout.decode("utf-8", "replace")
    stderr = done.stderr.decode("utf-8", "replace")
    assert "Traceback" not in stderr and "internal error" not in stderr, stderr[-2000:]
    assert before == after
    assert cpu < 10, f"{cpu:.1f} s of CPU"
    assert maxrss < MEMORY_LIMIT
    return done.returncode, stdout, stderr


def _not_evaluated(stdout: str) -> list[str]:
    return [line for line in stdout.splitlines() if line.startswith("not evaluated: ")]


# ---- a launch too deep to read is never dropped -------------------------------------
@pytest.mark.parametrize(
    ("name", "line"), [("deep-if", 104), ("deep-subshell", 104), ("deep-group", 104)]
)
def test_a_pair_nested_deeper_than_100_levels_is_not_evaluated(
    name: str, line: int, tmp_path: Path
) -> None:
    code, stdout, stderr = _audit(Case(name, "budgets", _script(name), frozenset()), tmp_path)
    assert code == 3, stdout + stderr
    assert _not_evaluated(stdout) == [
        f"not evaluated: run.sh:{line}: shell: nested deeper than 100 levels: a vLLM launch "
        "there not read"
    ]
    # the good pair outside is still judged: it passes
    assert "in 1 pair(s) left out: they pass the gate" in stdout
    assert "1 file(s) evaluated, 1 not evaluated; 0 error(s)" in stdout


def test_a_pair_behind_12_nested_evals_is_not_evaluated(tmp_path: Path) -> None:
    code, stdout, stderr = _audit(Case("e12", "budgets", _script("eval-12"), frozenset()), tmp_path)
    assert code == 3, stdout + stderr
    assert _not_evaluated(stdout) == [
        f"not evaluated: run.sh:{line}: shell: eval nested deeper than 8 levels: a vLLM "
        "launch there not read"
        for line in (5, 6)
    ]


def test_a_pair_behind_3_nested_evals_is_read(tmp_path: Path) -> None:
    code, stdout, stderr = _audit(Case("e3", "budgets", _script("eval-3"), frozenset()), tmp_path)
    assert code == 1, stdout + stderr
    assert "KVA001" in stdout and BAD_FINDING in stdout
    assert _not_evaluated(stdout) == []


def test_a_pair_after_more_than_20000_commands_is_not_evaluated(tmp_path: Path) -> None:
    code, stdout, stderr = _audit(
        Case("cmds", "budgets", _script("commands"), frozenset()), tmp_path
    )
    assert code == 3, stdout + stderr
    assert _not_evaluated(stdout) == [
        "not evaluated: run.sh:20003: shell: more than 20000 commands: the rest not read, and "
        "the script launches vLLM"
    ]


def _manifest(folder: Path) -> list[str]:
    """Two Pods: the prefill launch plainly, the decode launch in a ``bash -c`` script
    behind 150 nested groups."""
    prefill, decode = (launch.rstrip(" &") for launch in _launches(BAD))
    pods = [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": role},
            "spec": {
                "containers": [
                    {
                        "name": "vllm",
                        "image": "vllm/vllm-openai:v0.11.0",
                        "command": ["bash", "-c", script],
                    }
                ]
            },
        }
        for role, script in (("prefill", prefill), ("decode", "{\n" * 150 + decode + "\n}" * 150))
    ]
    (folder / "pd.yaml").write_text("\n---\n".join(json.dumps(p) for p in pods))
    return ["audit", "pd.yaml"]


def test_a_container_script_nested_too_deep_is_not_evaluated(tmp_path: Path) -> None:
    # before: the decode pod's launch vanished and the prefill pod passed alone (exit 0)
    code, stdout, stderr = _audit(Case("k8s-deep", "budgets", _manifest, frozenset()), tmp_path)
    assert code == 3, stdout + stderr
    assert _not_evaluated(stdout) == [
        "not evaluated: pd.yaml: a shell script it runs, line 100: nested deeper than 100 "
        "levels: a vLLM launch there not read"
    ]


# ---- large but ordinary scripts are audited -----------------------------------------
@pytest.mark.parametrize(
    "name",
    [
        "long-echo",
        "assignments",
        "expansions",
        "eval-long",
        "long-in-launch",
        "variables-and-commands",
    ],
)
def test_a_large_ordinary_script_is_audited(name: str, tmp_path: Path) -> None:
    code, stdout, stderr = _audit(Case(name, "budgets", _script(name), frozenset()), tmp_path)
    assert code == 1, stdout[-3000:] + stderr[-3000:]
    assert "KVA001" in stdout and BAD_FINDING in stdout
    assert _not_evaluated(stdout) == []
    # the one-line echo's word (7.8 MB) is past MAX_WORD: noted, never read (it is no launch)
    warnings = [line for line in stderr.splitlines() if "warning" in line]
    assert warnings == (
        ["kvalign: warning: run.sh:2: shell: expands to more than 262144 characters: not read"]
        if name == "long-echo"
        else []
    )


def test_a_word_too_long_to_read_inside_a_launch_makes_it_not_evaluated(tmp_path: Path) -> None:
    case = Case("too-long-in-launch", "budgets", _script("too-long-in-launch"), frozenset())
    code, stdout, stderr = _audit(case, tmp_path)
    assert code == 3, stdout + stderr
    assert _not_evaluated(stdout) == [
        "not evaluated: run.sh:3: shell: an argument expands to more than 262144 characters: "
        "this launch not evaluated"
    ]
    # the decode launch, read, is judged (alone: it pairs with nothing)
    assert "1 file(s) evaluated, 1 not evaluated; 0 error(s)" in stdout


# ---- a shell budget: not evaluated, named or scanned --------------------------------
def test_a_named_script_over_the_step_budget_is_not_evaluated(tmp_path: Path) -> None:
    code, stdout, stderr = _audit(Case("steps", "budgets", _script("steps"), frozenset()), tmp_path)
    assert code == 3, stdout + stderr
    assert _not_evaluated(stdout) == [
        "not evaluated: run.sh: shell budget exceeded: more than 100,000 evaluation steps "
        "(statements and expansions)"
    ]
    assert "kvalign: error" not in stderr


def test_thousands_of_exported_variables_times_commands_meet_the_step_budget(
    tmp_path: Path,
) -> None:
    case = Case("exported", "budgets", _script("exported-and-commands"), frozenset())
    code, stdout, stderr = _audit(case, tmp_path)
    assert code == 3, stdout + stderr
    assert _not_evaluated(stdout) == [
        "not evaluated: run.sh: shell budget exceeded: more than 100,000 evaluation steps "
        "(statements and expansions)"
    ]


def test_a_script_over_the_syntax_budget_is_not_evaluated_before_it_is_parsed(
    tmp_path: Path,
) -> None:
    # before: a segmentation fault under RLIMIT_AS 1 GiB (tree-sitter out of memory)
    code, stdout, stderr = _audit(
        Case("syntax", "budgets", _script("syntax"), frozenset()), tmp_path
    )
    assert code == 3, stdout + stderr
    assert _not_evaluated(stdout) == [
        "not evaluated: run.sh: shell budget exceeded: more than 524,288 characters of shell "
        "syntax (blanks, operators, quotes)"
    ]


def test_a_scanned_script_over_the_step_budget_is_not_evaluated(tmp_path: Path) -> None:
    case = Case("steps-scan", "budgets", _scanned("steps"), frozenset())
    code, stdout, stderr = _audit(case, tmp_path)
    assert code == 3, stdout + stderr
    assert _not_evaluated(stdout) == [
        "not evaluated: deploy/run.sh: shell budget exceeded: more than 100,000 evaluation "
        "steps (statements and expansions)"
    ]


def test_a_scanned_deep_pair_is_not_evaluated(tmp_path: Path) -> None:
    case = Case("deep-scan", "budgets", _scanned("deep-if"), frozenset())
    code, stdout, stderr = _audit(case, tmp_path)
    assert code == 3, stdout + stderr
    assert _not_evaluated(stdout) == [
        "not evaluated: deploy/run.sh:104: shell: nested deeper than 100 levels: a vLLM "
        "launch there not read"
    ]


# ---- Justfiles --------------------------------------------------------------------------
def _justfile(body: str) -> Callable[[Path], list[str]]:
    def build(folder: Path) -> list[str]:
        (folder / "justfile").write_text(body, encoding="utf-8")
        return ["audit", "justfile"]

    return build


def _recipes(extra: str) -> str:
    prefill, decode = _launches(BAD)
    return f"prefill:\n    {prefill.rstrip(' &')}\n\ndecode:\n    {decode.rstrip(' &')}\n{extra}"


def test_a_justfile_line_of_unclosed_interpolations_is_read_in_linear_time(
    tmp_path: Path,
) -> None:
    body = _recipes("\nnoise:\n    echo '" + "{{" * 200_000 + "'\n")
    case = Case("just-open", "budgets", _justfile(body), frozenset())
    code, stdout, stderr = _audit(case, tmp_path)
    assert code == 1, stdout + stderr
    assert "KVA001" in stdout and BAD_FINDING in stdout


def test_a_justfile_interpolation_bomb_is_refused_before_it_is_built(tmp_path: Path) -> None:
    bomb = "\nbomb:\n    echo " + "{{big}}" * 2_000 + "\n"
    body = f'big := "{"x" * 1_000_000}"\n' + _recipes(bomb)
    case = Case("just-bomb", "budgets", _justfile(body), frozenset())
    code, stdout, stderr = _audit(case, tmp_path)
    assert code == 3, stdout + stderr
    assert _not_evaluated(stdout) == [
        "not evaluated: justfile:9: justfile: interpolation budget exceeded: more than 8 MiB "
        "of interpolated text"
    ]
