"""`make mutation`: mutmut 3 over kvalign's rule-bearing modules, one module at a time.

Each module runs in its own scratch directory (build/mutation/<module>/) whose pyproject.toml
names only that module's files to mutate and only the test files that exercise it, so one run
takes minutes on a shared 2-core machine. mutmut keeps each directory's results, so a re-run
only tests mutants whose function changed. The results are written to docs/mutation-report.md:
the score per module and every surviving mutant with the reason recorded for it in
tests/mutation/survivors.yaml (the test that now kills it, or why it is equivalent).

Usage: python tests/mutation/run.py [MODULE ...]   (default: every module; --report-only
rewrites the report from the stored results without running mutmut). Never part of `make test`.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "build" / "mutation"
REPORT = ROOT / "docs" / "mutation-report.md"
SURVIVORS = Path(__file__).with_name("survivors.yaml")
RULE_MUTANTS = Path(__file__).with_name("rule_mutants.yaml")

# module -> (files mutated, test files run against each mutant). The lists are kept lean
# (the module's own unit tests, not the CLI-wide suites) so one module takes minutes on a
# shared 2-core machine: mutmut runs every test that covers a mutated function.
MODULES: dict[str, tuple[list[str], list[str]]] = {
    "versions": (
        ["kvalign/versions.py"],
        ["tests/arithmetic/test_versions.py", "tests/fidelity/test_release_facts.py",
         "tests/test_mutation_versions.py"],
    ),
    "dtypes": (
        ["kvalign/dtypes.py"],
        ["tests/test_mutation_dtypes.py", "tests/arithmetic/test_engine.py"],
    ),
    "families": (
        ["kvalign/families/*"],
        ["tests/test_mutation_families.py", "tests/test_mutation_families_readers.py",
         "tests/arithmetic/test_alignment.py"],
    ),
    "policy": (["kvalign/policy.py"], ["tests/test_mutation_policy.py"]),
    "backends": (
        ["kvalign/backends.py"],
        ["tests/test_mutation_backends.py", "tests/arithmetic/test_platforms.py"],
    ),
    "pd": (["kvalign/pd.py"], ["tests/test_mutation_pd.py", "tests/analysis/test_pd.py"]),
    # not tests/rules/test_rules_independent.py: it reads the rule modules' source, and
    # mutmut's copies carry module-level mutant tables, so it fails on the clean run
    "rules": (
        ["kvalign/rules/*"],
        [*(f"tests/rules/test_kva{n:03d}.py" for n in range(1, 14)),
         "tests/rules/test_rules_cli.py", "tests/audit/test_audit.py",
         "tests/test_mutation_rules.py"],
    ),
    "k8s": (
        ["kvalign/deploy/k8s.py"],
        ["tests/deploy/test_deploy_corpus.py", "tests/test_mutation_k8s.py"],
    ),
    "cmdline": (
        ["kvalign/deploy/cmdline.py"],
        ["tests/deploy/test_deploy_corpus.py", "tests/test_mutation_cmdline.py"],
    ),
    "own": (
        ["kvalign/deploy/own.py"],
        ["tests/test_mutation_own.py", "tests/deploy/test_deploy_readers.py"],
    ),
    "vllm_args": (
        ["kvalign/deploy/vllm_args.py"],
        ["tests/deploy/test_vllm_args.py", "tests/deploy/test_settings_builder.py",
         "tests/test_mutation_vllm_args.py"],
    ),
    "alignment": (
        ["kvalign/alignment.py"],
        ["tests/test_mutation_alignment.py", "tests/arithmetic/test_alignment.py",
         "tests/arithmetic/test_platforms.py"],
    ),
    "engine": (
        ["kvalign/engine.py"],
        ["tests/test_mutation_engine.py", "tests/arithmetic/test_engine.py",
         "tests/test_mutation_alignment.py", "tests/analysis/test_resolve_once.py",
         "tests/fidelity/test_release_facts.py"],
    ),
    "fixes": (
        ["kvalign/fixes.py"],
        ["tests/test_mutation_fixes.py", "tests/analysis/test_fix_proofs.py",
         "tests/analysis/test_policy.py"],
    ),
    "shell": (
        ["kvalign/shell/*"],
        ["tests/test_mutation_shell.py", "tests/shell/test_bash_eval.py",
         "tests/shell/test_shell_no_arguments.py", "tests/shell/test_mutation_expand.py",
         "tests/shell/test_mutation_evaluate.py", "tests/shell/test_mutation_commands.py",
         "tests/shell/test_mutation_survivors_A.py", "tests/shell/test_mutation_survivors_B.py"],
    ),
    "common": (
        ["kvalign/deploy/common.py"],
        ["tests/test_mutation_common.py", "tests/deploy/test_deploy_readers.py",
         "tests/deploy/test_settings_builder.py"],
    ),
    "compose": (
        ["kvalign/deploy/compose.py"],
        ["tests/test_mutation_compose.py", "tests/deploy/test_deploy_readers.py"],
    ),
    "render": (
        ["kvalign/deploy/render.py"],
        ["tests/test_mutation_render.py", "tests/deploy/test_render.py"],
    ),
    "justfile": (
        ["kvalign/deploy/justfile.py"],
        ["tests/test_mutation_justfile.py", "tests/deploy/test_deploy_readers.py",
         "tests/shell/test_shell_no_arguments.py"],
    ),
    "kustomize": (
        ["kvalign/deploy/kustomize.py"],
        ["tests/test_mutation_kustomize.py", "tests/deploy/test_kustomize_remote.py"],
    ),
    "aibrix": (
        ["kvalign/deploy/aibrix.py"],
        ["tests/test_mutation_aibrix.py", "tests/deploy/test_deploy_readers.py"],
    ),
    "templated": (
        ["kvalign/deploy/templated.py"],
        ["tests/test_mutation_templated.py", "tests/deploy/test_deploy_readers.py"],
    ),
    "project": (
        ["kvalign/deploy/project.py"],
        ["tests/test_mutation_project.py", "tests/audit/test_audit.py"],
    ),
    "lmcache": (
        ["kvalign/deploy/lmcache.py"],
        ["tests/test_mutation_lmcache.py", "tests/audit/test_audit_pairing.py"],
    ),
    "llmdbench": (
        ["kvalign/deploy/llmdbench.py"],
        ["tests/test_mutation_llmdbench.py", "tests/deploy/test_deploy_readers.py",
         "tests/deploy/test_deploy_corpus.py"],
    ),
    "stack": (
        ["kvalign/deploy/stack.py"],
        ["tests/test_mutation_stack.py", "tests/deploy/test_deploy_readers.py",
         "tests/deploy/test_deploy_corpus.py"],
    ),
    "rayserve": (
        ["kvalign/deploy/rayserve.py"],
        ["tests/test_mutation_rayserve.py", "tests/deploy/test_deploy_readers.py",
         "tests/deploy/test_deploy_corpus.py"],
    ),
}  # fmt: skip

#: tests of a module's files left out of its mutmut run (pytest --deselect), each for its
#: cost: mutmut runs every covering test per mutant. What they check is checked faster by
#: the module's own mutation tests (named beside each).
DESELECT: dict[str, list[str]] = {
    "shell": [
        # 20,010 commands, 2 s a mutant; the bound's rule is checked with it lowered to 3:
        # tests/shell/test_mutation_evaluate.py::test_the_command_bound_stops_reading_...
        "tests/shell/test_bash_eval.py::test_many_commands_stop_at_the_bound_with_a_note",
        # child processes only: mutmut's stats map it to no function (never run per mutant)
        "tests/shell/test_bash_eval.py::test_code_points_that_crash_the_grammar_are_replaced",
    ],
}

#: mutmut exit codes that mean a test noticed the mutant: a failure, pytest's internal
#: error, a timeout, the type checker, a crash. Anything else (survived, no tests,
#: skipped, suspicious) is reported as a survivor.
KILLED = {1, 3, 36, 37, -24, 24, 152, 255, -11, -9}


#: appended to the scratch copies' tests/conftest.py (and a plugin for rule mutants):
#: mutmut traces every call and the machine is shared, so Hypothesis' speed health
#: checks and deadlines would fail clean runs
HYPOTHESIS_PROFILE = """

from hypothesis import HealthCheck as _HealthCheck
from hypothesis import settings as _settings

_settings.register_profile(
    "mutation", deadline=None, suppress_health_check=list(_HealthCheck), max_examples=25
)
_settings.load_profile("mutation")
"""


#: appended to one module's scratch tests/conftest.py. mutmut forks each mutant's test run
#: from the process that ran the clean tests, so a result cached there reaches the mutant
#: run without calling the mutated code: vllm_args keeps one parse per launch
#: (``_parse_once``), which is cleared before every test.
CONFTEST_EXTRA: dict[str, str] = {
    "vllm_args": """

import pytest as _pytest


@_pytest.fixture(autouse=True)
def _parse_each_launch_afresh():
    from kvalign.deploy import vllm_args as _vllm_args

    _vllm_args._parse_once.cache_clear()
    yield
""",
}


def _scratch(module: str) -> Path:
    """Lay out build/mutation/<module>/ with the sources and a pyproject naming the module."""
    mutate, tests = MODULES[module]
    tests = [t for t in tests if (ROOT / t).exists()]
    work = BUILD / module
    work.mkdir(parents=True, exist_ok=True)
    for name in ("kvalign", "tests", "configs", "docs"):
        dst = work / name
        if dst.is_symlink() or dst.exists():
            if dst.is_symlink() or dst.is_file():
                dst.unlink()
            else:
                shutil.rmtree(dst)
        shutil.copytree(ROOT / name, dst, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("README.md",):
        shutil.copy2(ROOT / name, work / name)
    with (work / "tests" / "conftest.py").open("a", encoding="utf-8") as conftest:
        conftest.write(HYPOTHESIS_PROFILE + CONFTEST_EXTRA.get(module, ""))
    base = (ROOT / "pyproject.toml").read_text()
    cfg = {
        "source_paths": ["kvalign"],
        "only_mutate": mutate,
        "also_copy": ["configs", "docs", "README.md"],
        "pytest_add_cli_args_test_selection": tests
        + [arg for test in DESELECT.get(module, []) for arg in ("--deselect", test)],
        "pytest_add_cli_args": ["-p", "no:cacheprovider", "-p", "no:cov", "-x", "-q"],
        "use_git_change_detection": False,
    }
    lines = ["", "[tool.mutmut]"] + [f"{k} = {json.dumps(v)}" for k, v in cfg.items()]
    (work / "pyproject.toml").write_text(base + "\n".join(lines) + "\n")
    return work


def run(module: str) -> None:
    """Run mutmut with one worker over one module (results stay in build/mutation/<module>)."""
    work = _scratch(module)
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    mutmut = [str(Path(sys.executable).with_name("mutmut")), "run", "--max-children", "1"]
    before = _survivor_names(work)
    subprocess.run(mutmut, cwd=work, env=env, check=False)
    # mutmut keeps a survivor's verdict: check the earlier survivors again against the
    # tests written since (new mutants were checked by the run above)
    if before:
        subprocess.run([*mutmut, *before], cwd=work, env=env, check=False)


def _survivor_names(work: Path) -> list[str]:
    """Mutants of a stored run that no test killed."""
    names: list[str] = []
    for meta in sorted((work / "mutants").rglob("*.meta")):
        data = json.loads(meta.read_text())
        for name, code in sorted(data.get("exit_code_by_key", {}).items()):
            if code is not None and code not in KILLED:
                names.append(name)
    return names


def not_run(module: str) -> int:
    """Mutants of a stored run that mutmut generated but never ran (a run stopped early)."""
    count = 0
    for meta in sorted((BUILD / module / "mutants").rglob("*.meta")):
        data = json.loads(meta.read_text())
        count += sum(1 for code in data.get("exit_code_by_key", {}).values() if code is None)
    return count


def results(module: str) -> tuple[int, int, list[tuple[str, str]]]:
    """(killed, total, survivors as (mutant name, diff)) from a module's stored run.

    "no tests" (no selected test ran the function) counts as a survivor."""
    work = BUILD / module
    killed = total = 0
    names: list[str] = []
    for meta in sorted((work / "mutants").rglob("*.meta")):
        data = json.loads(meta.read_text())
        for name, code in sorted(data.get("exit_code_by_key", {}).items()):
            if code is None:
                continue
            total += 1
            if code in KILLED:
                killed += 1
            else:
                names.append(name)
    diffs = _diffs(work, names) if names else {}
    return killed, total, [(name, diffs.get(name, "")) for name in names]


_DIFFS = """
import json, sys
from mutmut.mutation.diff_apply import find_mutant, get_diff_for_mutant
out = {}
for name in sys.argv[1:]:
    try:
        text = get_diff_for_mutant(name, path=find_mutant(name).path)
    except Exception as error:  # a mutant mutmut cannot show: say so, keep the others
        text = f"-(mutmut cannot show this mutant: {error})"
    out[name] = "\\n".join(
        ln for ln in text.splitlines() if ln[:1] in "+-" and ln[:3] not in ("+++", "---")
    )
print(json.dumps(out))
"""


def _diffs(work: Path, names: list[str]) -> dict[str, str]:
    """The changed lines of each mutant (one process for all: mutmut's own diff helper)."""
    proc = subprocess.run(
        [sys.executable, "-c", _DIFFS, *names], cwd=work, capture_output=True, text=True,
        check=False,
    )  # fmt: skip
    try:
        return dict(json.loads(proc.stdout.strip().splitlines()[-1]))
    except (ValueError, IndexError):
        return {}


def rule_mutants() -> list[dict[str, str]]:
    """The hand-written rule mutants (tests/mutation/rule_mutants.yaml): realistic wrong
    rules in the places mutmut does not mutate (module-level tables and constants,
    properties, decorated functions) and six survivors of an earlier mutmut run."""
    return list(yaml.safe_load(RULE_MUTANTS.read_text()) or [])


def _rule_result_path(mutant: dict[str, str]) -> Path:
    return BUILD / "_rules" / f"{mutant['id']}.json"


def run_rule_mutant(mutant: dict[str, str]) -> bool:
    """Apply one rule mutant to a scratch copy of kvalign/, run its module's test files
    (stop at the first failure) and record whether a test failed (killed)."""
    target = ROOT / mutant["file"]
    source = target.read_text()
    if source.count(mutant["old"]) != 1:
        raise SystemExit(
            f"{RULE_MUTANTS.name}: {mutant['id']}: the text to replace occurs "
            f"{source.count(mutant['old'])} times in {mutant['file']} (update the entry)"
        )
    work = BUILD / "_rules" / f"tree-{mutant['module']}"
    if work.exists():
        shutil.rmtree(work)
    shutil.copytree(
        ROOT / "kvalign", work / "kvalign", ignore=shutil.ignore_patterns("__pycache__")
    )
    (work / "configs").symlink_to(ROOT / "configs")
    (work / "kvalign_mutation_profile.py").write_text(HYPOTHESIS_PROFILE)
    (work / mutant["file"]).write_text(source.replace(mutant["old"], mutant["new"]))
    tests = [t for t in MODULES[mutant["module"]][1] if (ROOT / t).exists()]
    tests += [t for t in mutant.get("tests", []) if t not in tests]
    # the checkout second: its tests/ package must win over the editable install's (a git
    # worktree's tests.conftest would otherwise clash with the main checkout's)
    env = dict(os.environ, HF_HUB_OFFLINE="1", PYTHONPATH=os.pathsep.join([str(work), str(ROOT)]))
    # the pytest script (not ``python -m``, which puts the checkout first on sys.path) with
    # --import-mode=append, so PYTHONPATH's mutated kvalign wins over the checkout's
    pytest = str(Path(sys.executable).with_name("pytest"))
    cmd = [pytest, "--import-mode=append", "-x", "-q", "-p", "no:cacheprovider", "-p", "no:cov"]
    cmd += ["-p", "kvalign_mutation_profile"]
    proc = subprocess.run(
        [*cmd, *tests], cwd=ROOT, env=env, capture_output=True, text=True, check=False
    )
    # exit 1: a test failed (killed); 0: every test passed (survived); 2 (a collection or
    # import error) also means the mutant broke the code: killed. 4 and 5 (pytest usage
    # error, no tests collected) say nothing about the mutant: a broken run, not a verdict
    if proc.returncode in (4, 5):
        raise SystemExit(
            f"rule mutant {mutant['id']}: pytest exit {proc.returncode} "
            f"(not a verdict): {(proc.stdout + proc.stderr).strip().splitlines()[-1:]}"
        )
    killed = proc.returncode != 0
    failed = [ln for ln in proc.stdout.splitlines() if ln.startswith("FAILED")]
    path = _rule_result_path(mutant)
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {"killed": killed, "by": failed[:1], "old": mutant["old"], "new": mutant["new"]}
    path.write_text(json.dumps(record))
    print(f"rule mutant {mutant['id']}: {'killed' if killed else 'SURVIVED'} {failed[:1]}")
    return killed


def rule_results(module: str) -> tuple[int, int, list[dict[str, str]]]:
    """(killed, run, survivors) of the rule mutants of ``module`` with a stored result
    that still matches the entry (an edited entry counts as not run)."""
    killed = total = 0
    survivors: list[dict[str, str]] = []
    for mutant in rule_mutants():
        path = _rule_result_path(mutant)
        if mutant["module"] != module or not path.exists():
            continue
        record = json.loads(path.read_text())
        if (record["old"], record["new"]) != (mutant["old"], mutant["new"]):
            continue
        total += 1
        if record["killed"]:
            killed += 1
        else:
            survivors.append(mutant)
    return killed, total, survivors


_STRING = re.compile(r"""(?:[rbfu]{0,2})("[^"\\]*(?:\\.[^"\\]*)*"|'[^'\\]*(?:\\.[^'\\]*)*')""")


def _message_only(diff: str) -> bool:
    """Whether a mutant changes nothing but the text inside string literals (a message's
    wording, not a rule)."""
    minus = [_STRING.sub('""', ln[1:]) for ln in diff.splitlines() if ln.startswith("-")]
    plus = [_STRING.sub('""', ln[1:]) for ln in diff.splitlines() if ln.startswith("+")]
    return bool(minus) and minus == plus


def _reason(name: str, diff: str, reasons: dict[str, str]) -> str:
    """The recorded reason for a survivor: by name, else by a glob over names, else
    flagged as unexplained (noting when only a message's wording changed)."""
    if name in reasons:
        return reasons[name]
    for pattern, why in reasons.items():
        if any(c in pattern for c in "*?[") and fnmatch.fnmatchcase(name, pattern):
            return why
    if _message_only(diff):
        return "UNEXPLAINED: changes only a string literal (a message, or a key no test names)"
    return "UNEXPLAINED"


#: what the weak-test review found and changed (kept by hand, printed in the report)
WEAK_TESTS = [
    "",
    "## Weak tests reviewed",
    "",
    "Every test function was scanned for: no assertion, an expectation computed by the function",
    "under test, snapshot tests that accept any output, exit-code-only checks where a value is",
    "available.",
    "",
    "- exit code only, value available: `tests/audit/test_audit_pairing.py::"
    "test_pair_by_on_the_command_line` asserted exit codes of `--pair-by label/file/model`;",
    "  `tests/test_mutation_weak.py::test_pair_by_names_the_pairs_and_their_verdicts` now",
    "  asserts the pools paired, the verdict (`split`, from the oracle's 528/272 and NIXL's",
    "  128-unit limit) and that `--pair-by file` pairs nothing (the original stays: its",
    "  assertions are kept).",
    "- no assertion in the test body: `test_fix_proofs.py::test_recommendations_hold_where_"
    "they_claim` and the three `test_fuzz.py::test_reader_on_*` tests assert in their helpers",
    "  (`_proven`, `_check_read`: every re-run pair `ok`; no traceback, only a one-line",
    "  error): not weak, unchanged.",
    "- exit code with the message checked (`test_audit_regressions.py` stdin tests, "
    "`test_corpus.py`",
    "  refusals) and the gate tests whose value is the exit code (`test_policy.py::"
    "test_fail_on_works_on_check_and_matrix`): not weak, unchanged.",
    "- no test computes its expectation with the function under test, and the snapshot tests",
    "  compare whole files (tests/snapshots/): none found to change.",
    "- engine, fixes, pd tests (second pass): `tests/analysis/test_fix_proofs.py::"
    "test_public_report_qwen35_tep8_vs_dep8_fix`",
    "  asserted only that the fix is a multiple of 64 where the value is derivable: it now",
    "  asserts 4,224 (64 · cdiv(4,168, 64), hand-derived in the test) and the pools' own",
    "  4,176 / 1,056. Substring checks of user-visible texts are kept and each text is now",
    "  also pinned whole: the unspecified-GPU checkpoint note (`test_checkpoint_alignment_"
    "per_branch`),",
    "  the packed KV-cache refusal (`test_engine.py::test_packed_checkpoint_scheme_is_not_"
    "modelled`), the",
    "  checkpoint KV-dtype source (`test_bundled_modelopt_checkpoint_resolves_fp8`) and the",
    "  fix texts of `test_pd.py::test_costly_recommendation_says_so` /",
    "  `test_recommendation_when_nothing_is_usable` (tests/test_mutation_engine.py,",
    "  tests/test_mutation_pd.py). No test without an assertion was found in these modules'",
    "  tests (`test_recommendations_hold_where_they_claim` asserts in `_proven`).",
    "- rule id only, value available: the `fires(...)` tests of tests/rules/test_kva0NN.py",
    "  assert that a rule is among the findings, not what it says; tests/test_mutation_rules.py",
    "  now pins the whole finding (severity, pools, location, message, remediation) of every",
    "  rule at Falcon-H1/Nemotron-Nano inputs whose block sizes come from the golden vectors",
    "  (the originals stay). `test_kva012` asserted a count and a remediation substring: the",
    "  message with its reason is pinned there too.",
    "- prefix or substring only where the whole text is shown: dtype errors",
    "  (`test_packed_and_unknown_kv_cache_dtypes`), MambaMixer2's load refusal",
    "  (`test_mamba2_load_problem_only_for_unshardable_groups`), the NIXL split reasons: the",
    "  whole messages are pinned in tests/test_mutation_dtypes.py,",
    "  tests/test_mutation_families_readers.py and tests/test_mutation_policy.py.",
    "- the k8s module's only selected test (tests/deploy/test_deploy_corpus.py) checks pairing",
    "  outcomes, not what the reader found per kind: tests/test_mutation_k8s.py asserts the",
    "  pools, components, keys and notes of Dynamo, StormService, DisaggregatedSet,",
    "  ModelService, LLMInferenceService and LeaderWorkerSet manifests written in the test.",
    "- exit code only: `tests/shell/test_bash_eval.py::test_code_points_that_crash_the_grammar_"
    "are_replaced`",
    "  asserts that a child process exits 0: the value under test is that the grammar does not",
    "  crash (stderr is shown on failure); not weak, unchanged.",
]


def _earlier_report() -> tuple[dict[str, str], dict[str, list[str]]]:
    """The table row and the survivor section of each module in the report as it stands,
    so that a module whose results are not in this checkout's build/mutation/ (run on
    another machine, or before a clean) keeps its last measured row instead of "not run"."""
    rows: dict[str, str] = {}
    sections: dict[str, list[str]] = {}
    if not REPORT.exists():
        return rows, sections
    current: list[str] | None = None
    for line in REPORT.read_text().splitlines():
        cells = [c.strip() for c in line.split("|")]
        if line.startswith("| ") and len(cells) > 2 and cells[1] in MODULES:
            rows[cells[1]] = line
        if line.startswith("## "):
            name = line[3:].strip()
            current = sections.setdefault(name, []) if name in MODULES else None
            continue
        if current is not None:
            current.append(line)
    return rows, sections


_SURVIVOR_LINE = re.compile(r"^- `([^`]+)`: (.*)$")


def _refreshed(row: str, body: list[str], reasons: dict[str, str]) -> tuple[str, list[str]]:
    """A kept module's row and survivor section (its counts measured by an earlier run that
    is not in this checkout's build/mutation/) with each mutmut survivor's reason looked up
    again in survivors.yaml: a reason written since is shown, and the row's "explained"
    and "killed or explained" columns count it. The measured counts are not changed."""
    entries: list[tuple[int, str, str]] = []  # (line index, name, diff)
    for index, line in enumerate(body):
        match = _SURVIVOR_LINE.match(line)
        if match is None or match.group(1).startswith("rule "):
            continue
        diff: list[str] = []
        for later in body[index + 1 :]:
            if _SURVIVOR_LINE.match(later):
                break
            if later.startswith("  ") and not later.strip().startswith("```"):
                diff.append(later[2:])
        entries.append((index, match.group(1), "\n".join(diff)))
    if not entries:
        return row, body
    before = after = 0
    for index, name, diff in entries:
        old = _SURVIVOR_LINE.match(body[index])
        assert old is not None
        before += not old.group(2).startswith("UNEXPL")
        why = _reason(name, diff, reasons)
        after += not why.startswith("UNEXPL")
        body[index] = f"- `{name}`: {why}"
    for index, line in enumerate(body):
        counted = re.match(r"^(\d+) mutmut survivors \((\d+) explained\)$", line)
        if counted:
            body[index] = f"{counted.group(1)} mutmut survivors ({after} explained)"
            break
    cells = [c.strip() for c in row.split("|")[1:-1]]
    mm, rule = re.match(r"(\d+) / (\d+)$", cells[1]), re.match(r"(\d+) / (\d+)$", cells[4])
    if len(cells) == 7 and mm and rule and cells[3].isdigit():
        explained = int(cells[3]) - before + after
        both = int(mm.group(1)) + int(rule.group(1))
        mutants = int(mm.group(2)) + int(rule.group(2))
        cells[3] = str(explained)
        cells[6] = f"{100 * (both + explained) / mutants:.1f} %" if mutants else "-"
        row = "| " + " | ".join(cells) + " |"
    return row, body


def write_report(modules: list[str]) -> None:
    """docs/mutation-report.md: score per module and every survivor with its recorded reason.

    A module with no results here keeps its row and survivors from the report as it was
    (its last run); one whose row was "not run" stays so."""
    earlier_rows, earlier_sections = _earlier_report()
    reasons: dict[str, str] = {}
    if SURVIVORS.exists():
        reasons = yaml.safe_load(SURVIVORS.read_text()) or {}
    out = [
        "# Mutation report",
        "",
        "Written by `make mutation` (tests/mutation/run.py). Two kinds of mutant, each run",
        "against the module's own test files (tests/mutation/run.py `MODULES`):",
        "",
        "- **mutmut**: mutmut 3's automatic mutants of every function body (one worker, one",
        "  module at a time). mutmut does not mutate module-level tables and constants,",
        "  properties or decorated functions, which is where many vLLM rules live, hence:",
        "- **rule**: hand-written wrong rules (tests/mutation/rule_mutants.yaml), one at a",
        "  time: the mistakes a developer makes when a release adds a rule, including the",
        "  six survivors of an earlier mutmut run.",
        "",
        "A survivor is a mutant no test noticed. Each one below carries its reason from",
        "tests/mutation/survivors.yaml: equivalent (no input gives a different output, and",
        "why), or the test that kills it (then a re-run drops it from this list).",
        "",
        "| module | mutmut killed / mutants | mutmut score | survivors explained | rule killed / "
        "mutants | killed (both) | killed or explained (both) |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    details: list[str] = []
    for module in modules:
        ran = (BUILD / module / "mutants").exists()
        killed, total, surv = results(module) if ran else (0, 0, [])
        r_killed, r_total, r_surv = rule_results(module)
        if not ran and not r_total:
            body = list(earlier_sections.get(module, []))
            while body and not body[-1].strip():
                body = body[:-1]
            row = earlier_rows.get(module, f"| {module} | not run | - | - | not run | - | - |")
            row, body = _refreshed(row, body, reasons)
            out.append(row)
            if body:
                details += ["", f"## {module}", *body]
            continue
        explained = sum(
            1 for name, diff in surv if not _reason(name, diff, reasons).startswith("UNEXPL")
        )
        r_explained = sum(1 for m in r_surv if m["id"] in reasons)
        score = f"{100 * killed / total:.1f} %" if total else "-"
        both, mutants = killed + r_killed, total + r_total
        overall = f"{100 * both / mutants:.1f} %" if mutants else "-"
        covered = both + explained + r_explained
        ok = f"{100 * covered / mutants:.1f} %" if mutants else "-"
        mm = f"{killed} / {total}" if ran else "not run"
        out.append(
            f"| {module} | {mm} | {score} | {explained + r_explained} | {r_killed} / {r_total} "
            f"| {overall} | {ok} |"
        )
        if surv or r_surv:
            details += ["", f"## {module}", ""]
            details += [f"{len(surv)} mutmut survivors ({explained} explained)", ""]
            pending = not_run(module)
            if pending:
                details += [
                    f"{pending} more mutants were generated but not run (the run was stopped "
                    f"before them): the score is over the {total} run.",
                    "",
                ]
        for name, diff in surv:
            details += [f"- `{name}`: {_reason(name, diff, reasons)}", "", "  ```diff"]
            details += [f"  {ln}" for ln in diff.splitlines()] + ["  ```"]
        for mutant in r_surv:
            why = reasons.get(mutant["id"], "UNEXPLAINED")
            details += [f"- rule `{mutant['id']}` ({mutant['file']}): {why}", "", "  ```diff"]
            details += [f"  - {mutant['old']}", f"  + {mutant['new']}", "  ```"]
    REPORT.write_text("\n".join(out + WEAK_TESTS + details) + "\n")
    print(f"wrote {REPORT.relative_to(ROOT)}")


def main() -> None:
    """Entry point of `make mutation`."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("modules", nargs="*", default=[], help=f"any of {', '.join(MODULES)}")
    ap.add_argument("--report-only", action="store_true", help="rewrite the report only")
    ap.add_argument("--rules-only", action="store_true", help="run only the rule mutants")
    args = ap.parse_args()
    unknown = [m for m in args.modules if m not in MODULES]
    if unknown:
        ap.error(f"unknown module(s) {', '.join(unknown)} (known: {', '.join(MODULES)})")
    chosen = args.modules or list(MODULES)
    if not args.report_only:
        for module in chosen:
            if not args.rules_only:
                run(module)
            for mutant in rule_mutants():
                if mutant["module"] == module:
                    run_rule_mutant(mutant)
    write_report(list(MODULES))


if __name__ == "__main__":
    main()
