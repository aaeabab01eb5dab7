"""``kvalign rules [ID]`` and ``kvalign audit --select/--ignore``.

The rule text comes from the rule modules (``CODE``, ``SEVERITY``, ``TITLE``, ``SOURCE``,
``FIX`` and the docstring); these tests check the CLI prints exactly that, and that the
selection changes which findings an audit reports and counts.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvalign.cli import app
from kvalign.errors import InvalidSettings
from kvalign.rules import RULES, find_rule, parse_rule_codes, rule_doc, rule_docs

ROOT = Path(__file__).resolve().parents[2]
#: Nemotron 3 Nano prefill TP 8 (block 528) vs decode TP 1 (2096): KVA001 (logical blocks
#: differ) and KVA003 (2096 % 528 != 0, a 16-token split needs 131 > 128 units).
BAD = str(ROOT / "configs" / "deployments" / "kvalign" / "nemotron-nano-bad.yaml")
runner = CliRunner()


def run(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args), env={"HF_HUB_OFFLINE": "1", "COLUMNS": "120"})
    return result.exit_code, result.stdout, result.stderr


# ---- the rule modules are the one source ------------------------------------------------
@pytest.mark.parametrize("module", RULES, ids=lambda m: m.CODE)
def test_every_rule_module_documents_itself(module: object) -> None:
    doc = rule_doc(module)  # type: ignore[arg-type]
    assert hasattr(module, "SOURCE") and hasattr(module, "FIX"), "the rule text needs both"
    assert (module.__doc__ or "").startswith(f"{doc.code}: ")
    assert doc.code == module.__name__.rsplit(".", 1)[1].upper()
    assert doc.severity in ("error", "warning", "info")
    assert doc.title and doc.source and doc.fix and doc.rationale
    # the rationale is prose for a user: no Sphinx roles, no RST double backticks left
    assert not any("``" in p or ":mod:" in p or ":func:" in p for p in doc.rationale)


def test_codes_are_consecutive_and_unique() -> None:
    codes = [d.code for d in rule_docs()]
    assert codes == [f"KVA{n:03d}" for n in range(1, len(RULES) + 1)]


def test_rationale_paragraphs_are_joined_lines_of_the_docstring() -> None:
    # kva003's docstring: one paragraph over four lines
    (paragraph,) = find_rule("KVA003").rationale
    assert paragraph.startswith("vLLM asserts `decode_kernel % prefill_kernel == 0` unless")
    assert "`_MAX_HYBRID_BLOCK_SPLIT` units" in paragraph and "\n" not in paragraph
    # kva005 refers to a module with :mod:, reduced to backticks
    assert "(`kvalign.dtypes`)" in find_rule("kva005").rationale[-1]


# ---- kvalign rules --------------------------------------------------------------------
def test_rules_lists_every_rule_with_severity_and_summary() -> None:
    code, out, err = run("rules")
    assert (code, err) == (0, "")
    rows = [line for line in out.splitlines() if re.match(r"│ KVA\d{3} ", line)]
    assert len(rows) == len(RULES) >= 11
    cells = [[c.strip() for c in row.strip("│").split("│")] for row in rows]
    assert cells[2] == ["KVA003", "error", "kernel block sizes do not divide (NIXL hard failure)"]
    assert cells[10][:2] == ["KVA011", "info"]
    assert [c[0] for c in cells] == [m.CODE for m in RULES]
    assert [c[1] for c in cells] == [m.SEVERITY for m in RULES]


def test_rules_id_prints_rationale_source_and_fix() -> None:
    code, out, err = run("rules", "kva008")  # codes are case-insensitive
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == "# KVA008: VLLM_SSM_CONV_STATE_LAYOUT set on one side only"
    assert "Severity: error" in lines
    assert lines.index("## Why") < lines.index("## vLLM source") < lines.index("## Fix")
    flat = " ".join(out.split())
    assert "NIXL's Mamba transfer requires `DS`" in flat  # from the docstring
    assert "mamba_utils.py get_conv_state_layout" in flat  # SOURCE
    assert flat.endswith("set VLLM_SSM_CONV_STATE_LAYOUT=DS on every prefill and decode pool")
    assert max(len(line) for line in lines) <= 88


@pytest.mark.parametrize("bad", ["KVA999", "E501", "KVA1", ""])
def test_unknown_rule_is_one_line_and_exit_2(bad: str) -> None:
    code, out, err = run("rules", bad)
    assert code == 2 and out == ""
    last = RULES[-1].CODE
    assert err == f"kvalign: error: unknown rule {bad!r} (known: KVA001 … {last}; see " \
        "`kvalign rules`)\n"  # fmt: skip


def test_rules_json_list_and_one() -> None:
    code, out, _ = run("rules", "--format", "json")
    assert code == 0
    data = json.loads(out)
    assert set(data) == {"schema_version", "kvalign_version", "rules"}
    assert data["schema_version"] == 1
    assert [r["code"] for r in data["rules"]] == [m.CODE for m in RULES]
    code, out, _ = run("rules", "KVA004", "--format", "json")
    one = json.loads(out)
    assert code == 0 and one == data["rules"][3]
    assert set(one) == {"code", "severity", "title", "rationale", "source", "fix"}
    assert one["source"] == "vllm/platforms/interface.py Platform._align_hybrid_block_size"
    assert one["severity"] == "warning"


def test_rules_markdown_is_the_docs_page_body() -> None:
    code, out, _ = run("rules", "--format", "markdown")
    assert code == 0
    assert out.startswith("| Code | Severity | Summary |\n|---|---|---|\n")
    # links point at GitHub's anchor of each rule's heading
    assert (
        "| [KVA002](#kva002-kernel-block-sizes-differ-block_size_ratio--1) | error | "
        "kernel block sizes differ (block_size_ratio != 1) |"
    ) in out
    assert "(#kva011-leaderworkerset-size--gpus-per-pod-disagrees-with-tp--pp--dp)" in out
    assert out.count("\n## KVA") == len(RULES) and out.count("\n### Fix\n") == len(RULES)


# ---- audit --select / --ignore --------------------------------------------------------
def _audit(*extra: str) -> tuple[int, list[str], str]:
    code, out, err = run("audit", BAD, "--format", "json", *extra)
    return code, [f["rule"] for f in json.loads(out)["findings"]] if out else [], err


def test_default_runs_every_rule() -> None:
    code, rules, _ = _audit()
    assert (code, rules) == (1, ["KVA001", "KVA003"])


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        (("--select", "KVA003"), ["KVA003"]),
        (("--select", "kva001,KVA003"), ["KVA001", "KVA003"]),
        (("--select", "KVA001", "--select", "KVA002"), ["KVA001"]),
        (("--ignore", "KVA003"), ["KVA001"]),
        (("--select", "KVA001,KVA003", "--ignore", "KVA001"), ["KVA003"]),
    ],
)
def test_selection_chooses_the_findings(extra: tuple[str, ...], expected: list[str]) -> None:
    code, rules, _ = _audit(*extra)
    assert rules == expected
    if expected == ["KVA003"]:  # a NIXL hard failure: an error under any gate
        assert code == 1


def test_ignored_rules_are_not_counted_in_any_format() -> None:
    code, rules, _ = _audit("--ignore", "KVA001, KVA003")
    assert (code, rules) == (0, [])
    code, out, _ = run("audit", BAD, "--format", "junit", "--ignore", "KVA001,KVA003")
    suite = ET.fromstring(out).find("testsuite")
    assert code == 0 and suite is not None and suite.get("failures") == "0"
    code, out, _ = run("audit", BAD, "--format", "sarif", "--select", "KVA003")
    results = json.loads(out)["runs"][0]["results"]
    assert code == 1 and [r["ruleId"] for r in results] == ["KVA003"]


@pytest.mark.parametrize("option", ["--select", "--ignore"])
def test_unknown_rule_code_is_a_usage_error(option: str) -> None:
    code, out, err = run("audit", BAD, option, "KVA001,KVA42")
    assert code == 2 and out == ""
    assert err.startswith(f"kvalign: error: {option}: unknown rule 'KVA42' (known: KVA001")
    assert err.count("\n") == 1


def test_parse_rule_codes() -> None:
    assert parse_rule_codes(None, "--select") is None
    assert parse_rule_codes(["kva001, KVA002", "KVA001"], "--select") == {"KVA001", "KVA002"}
    with pytest.raises(InvalidSettings, match=r"--ignore: unknown rule ''"):
        parse_rule_codes(["KVA001,"], "--ignore")
