"""Regression tests for ``kvalign audit``: shell words, split files, GPU and backend, fixes, tables,
bad input, bounds and scans.

Numbers are derived by hand from the bundled configs, as ``kvalign explain`` prints them:

* Qwen3.5-397B-A17B at TP 4: 2 KV heads → 1 per rank, head size 256, bfloat16 →
  ``a = 1 × (256 + 256) × 2 = 1024`` B/token; GDN state ``3×3072`` bf16 conv +
  ``16×128×128`` SSM: ``m = 18,432 + 1,048,576 = 1,067,008`` B with the float32 SSM
  (``ceil(m / a) = 1042``), ``18,432 + 524,288 = 542,720`` B with a bfloat16 SSM (530).
  FLASH_ATTN unit 16 → blocks 1056 (fp32) / 544 (bf16); with the 64-token GDN checkpoint
  alignment on H100 → ``64 × ceil(1042 / 64) = 1088``.
* Nemotron 3 Nano at TP 8 / TP 1: 528 / 2096 (golden, see tests/audit/test_audit.py).
"""

from __future__ import annotations

import dataclasses
import json
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvalign.audit import run_audit
from kvalign.backends import gpu_from_product
from kvalign.cli import app
from kvalign.deploy import read_paths, read_text
from kvalign.deploy.cmdline import evaluate
from kvalign.errors import InvalidConfig
from kvalign.safeio import load_yaml_documents
from kvalign.settings import MAX_BLOCK_SIZE, MAX_SPEC_TOKENS
from kvalign.shell import shown
from tests.resolve import rank_of

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "configs" / "deployments"
NANO = "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"
QWEN = "Qwen/Qwen3.5-397B-A17B"
runner = CliRunner()


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


# ---- shell variables, word splitting, quoting ------------------------------------
def shell_words(line: str, env: dict[str, str]) -> list[str]:
    """The words of the first command in ``line`` (evaluated with ``env``), unresolved
    pieces as written."""
    script = evaluate(line, env)
    return [shown(w) for w in script.commands[0].words]


def test_shell_words_split_unquoted_expansions_like_bash() -> None:
    env = {"M": "org/model a", "C": "--x 1  --y", "J": '{"k":"v"}'}
    # unquoted $C splits on blanks; quoted "$M" stays one word; single quotes are literal
    assert shell_words('vllm serve "$M" $C -tp 2 \'$C\'', env) == [
        "vllm", "serve", "org/model a", "--x", "1", "--y", "-tp", "2", "$C",
    ]  # fmt: skip
    assert shell_words("e a$C", {"C": "1 2"}) == ["e", "a1", "2"]
    # inner double quotes of a value survive "$J" (bash keeps them)
    assert shell_words('e --kv "$J"', env) == ["e", "--kv", '{"k":"v"}']
    assert shell_words("e ${U:-16} ${C-x} $EMPTY end", {"C": "7", "EMPTY": ""}) == [
        "e", "16", "7", "end",
    ]  # fmt: skip
    # unknown expansions are kept as written (never $(1) for $1)
    assert shell_words("e $U $1 $(hostname) `id` x;y", {}) == [
        "e", "$U", "$1", "$(hostname)", "`id`", "x",
    ]  # fmt: skip
    assert shell_words("e a # comment", {}) == ["e", "a"]


def test_assignments_do_not_split_and_keep_inner_quotes() -> None:
    script = evaluate(
        'B=32\nCOMMON="--kv-cache-dtype fp8 --block-size $B"\nKVCFG=\'{"a":"b"}\'\n'
        "export A=1 C\nVAR=x env\n"
    )
    command = script.commands[0]
    assert command.variables["COMMON"] == "--kv-cache-dtype fp8 --block-size 32"
    assert command.variables["KVCFG"] == '{"a":"b"}'
    # only exported variables and the command's own prefix reach its environment
    assert dict(command.env) == {"A": "1", "VAR": "x"}


SCRIPT = """\
#!/bin/bash
MODEL=Qwen/Qwen3.5-397B-A17B
COMMON="--kv-cache-dtype fp8 --block-size 32"
KVP='{"kv_connector":"NixlConnector","kv_role":"kv_producer"}'
export KVC='{"kv_connector":"NixlConnector","kv_role":"kv_consumer"}'
vllm serve "$MODEL" $COMMON -tp 2 --kv-transfer-config "$KVP"
vllm serve "$MODEL" ${COMMON} -tp 2 --kv-transfer-config "$KVC"
"""


def test_flags_inside_a_variable_and_quoted_json_reach_the_pools() -> None:
    deployment = read_text(SCRIPT, "run.sh")
    assert deployment is not None and not deployment.problems
    pools = deployment.pools
    # roles come from kv_role inside the single-quoted JSON (no "not JSON")
    assert [(p.role, p.settings.kv_cache_dtype, p.settings.block_size) for p in pools] == [
        ("prefill", "fp8", 32),
        ("decode", "fp8", 32),
    ]
    assert [p.location.line for p in pools] == [6, 7]


def test_an_unset_variable_holding_flags_is_reported_not_dropped(tmp_path: Path) -> None:
    path = _write(tmp_path, "run.sh", SCRIPT.replace("$COMMON -tp", "$EXTRA -tp"))
    result = runner.invoke(app, ["audit", str(path)])
    assert result.exit_code == 3
    assert "prefill/command-1: unresolved variable(s) argument: $EXTRA" in result.stdout


def test_verbose_lists_an_extra_positional_argument(tmp_path: Path) -> None:
    path = _write(tmp_path, "run.sh", SCRIPT.replace("-tp 2 --kv", "-tp 2 stray --kv", 1))
    result = runner.invoke(app, ["audit", str(path), "--verbose"])
    assert "prefill/command-1: ignored flags: stray" in result.stderr


# ---- prefill and decode in separate files ----------------------------------------------
def test_split_files_pair_through_their_label() -> None:
    # already fixed by --pair-by label: the two halves of split-bad/ form one pair
    deployments, _ = read_paths([str(EXAMPLES / "kubernetes" / "split-bad")])
    report = run_audit(deployments)
    assert [(len(g.pairs), g.grouping.basis) for g in report.groups] == [(1, "label")]


# ---- GPU and attention backend ---------------------------------------------------------
DSET = f"""\
apiVersion: llm-d.ai/v1alpha1
kind: DisaggregatedSet
metadata: {{name: q}}
spec:
  roles:
  - name: prefill
    template:
      spec:
        NODESELECTOR
        containers:
        - {{name: vllm, image: vllm/vllm-openai:v0.33.0, args: [{QWEN}, -tp, "4"]}}
  - name: decode
    template:
      spec:
        containers:
        - {{name: vllm, image: vllm/vllm-openai:v0.33.0, args: [{QWEN}, -tp, "4"]}}
"""


def _blocks(result_stdout: str) -> list[int]:
    data = json.loads(result_stdout)
    return [p["block_size"] for f in data["files"] for p in f["pools"]]


def test_gpu_option_applies_the_gdn_checkpoint_alignment(tmp_path: Path) -> None:
    path = _write(tmp_path, "q.yaml", DSET.replace("NODESELECTOR", "hostNetwork: false"))
    plain = runner.invoke(app, ["audit", str(path), "--format", "json"])
    assert _blocks(plain.stdout) == [1056, 1056]  # unit 16 (no GPU given)
    h100 = runner.invoke(app, ["audit", str(path), "--format", "json", "--gpu", "H100"])
    assert _blocks(h100.stdout) == [1088, 1088]  # 64-token GDN checkpoints on H100
    data = json.loads(h100.stdout)
    assert [p["gpu"] for p in data["files"][0]["pools"]] == ["H100", "H100"]
    assert data["assumptions"][0] == (
        "attention backend not given: FLASH_ATTN, what vLLM chooses on H100 [2 pool(s)]"
    )
    table = runner.invoke(app, ["audit", str(path), "--gpu", "H100"])
    assert (
        "assumed: attention backend not given: FLASH_ATTN, what vLLM chooses on H100 [2 pool(s)]"
        in table.stdout
    )
    assert "H100: GDN prefill on FlashInfer, checkpoints every 64 tokens" in table.stdout
    unknown = runner.invoke(app, ["audit", str(path), "--gpu", "Z80"])
    assert unknown.exit_code == 2 and "unknown GPU 'Z80'" in unknown.stderr


def test_node_selector_gpu_wins_over_the_default(tmp_path: Path) -> None:
    selector = "nodeSelector: {nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}"
    path = _write(tmp_path, "q.yaml", DSET.replace("NODESELECTOR", selector))
    result = runner.invoke(app, ["audit", str(path), "--format", "json"])
    # prefill scheduled on H100 (1088), decode on the default unspecified GPU (1056):
    # 1088 % 1056 != 0 (gcd 32: the 0.33 split path) and the grids drift: both errors
    assert _blocks(result.stdout) == [1088, 1056]
    rules = {(f["rule"], f["severity"]) for f in json.loads(result.stdout)["findings"]}
    assert rules == {("KVA001", "error"), ("KVA003", "error")}
    assert result.exit_code == 1


def test_attention_backend_default_only_where_the_pool_sets_none(tmp_path: Path) -> None:
    path = _write(tmp_path, "q.yaml", DSET.replace("NODESELECTOR", "hostNetwork: false"))
    text = path.read_text().replace(
        '"4"]}\n  - name: decode', '"4", --attention-backend, FLASH_ATTN]}\n  - name: decode'
    )
    path.write_text(text)
    deployments, _ = read_paths([str(path)])
    from kvalign.audit import Platform

    report = run_audit(deployments, platform=Platform(attention_backend="triton_attn"))
    backends = [r.pool.settings.attention_backend for f in report.files for r in f.pools]
    assert backends == ["FLASH_ATTN", "TRITON_ATTN"]


@pytest.mark.parametrize(
    ("product", "gpu"),
    [
        ("NVIDIA-H100-80GB-HBM3", "H100"),
        ("NVIDIA-H200", "H200"),
        ("NVIDIA-H20", "H20"),
        ("NVIDIA-GH200-480GB", "GH200"),
        ("NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition", "RTX-PRO-6000"),
        ("Tesla-T4", None),
    ],
)
def test_gpu_product_labels(product: str, gpu: str | None) -> None:
    assert gpu_from_product(product) == gpu


# ---- the recommended block size honours every pool's settings --------------------------
def test_recommendation_makes_every_pool_choose_it() -> None:
    deployments, _ = read_paths([str(EXAMPLES / "llm-d" / "qwen35-disaggregatedset-bad.yaml")])
    report = run_audit(deployments)
    group = report.groups[0]
    # prefill bf16 SSM needs 544, decode fp32 SSM 1056; unit 16 → 1056 on A100, but on
    # H100/H200/B200 the FlashInfer GDN prefill makes the unit lcm(16, 64) = 64, and vLLM
    # aligns 1056 to lcm(1056, 64) = 2112 there: 1088 = 17 x 64 is the smallest that holds
    assert group.fix.text.startswith(
        "set --block-size 1088 on every prefill and decode pool (holds on A100 (SM80), "
        "H100/H200 (SM90), B200 (SM100), B300 (SM103), RTX-PRO-6000 (SM120))"
    )
    assert "fix KVA005 first" in group.fix.text
    for gpu in ("A100", "H100", "B200", "B300", "RTX-PRO-6000"):
        for result in group.pools:
            settings = dataclasses.replace(result.pool.settings, block_size=1088, gpu=gpu)
            assert rank_of(result.geometry, settings, result.pool.tp).block_size == 1088
    on_h100 = dataclasses.replace(group.pools[1].pool.settings, block_size=1056, gpu="H100")
    assert rank_of(group.pools[1].geometry, on_h100, group.pools[1].pool.tp).block_size == (2112)
    # same settings on both sides: the plain text, no KVA005 hint
    bad = EXAMPLES / "kvalign" / "nemotron-nano-bad.yaml"
    nano = run_audit(read_paths([str(bad)])[0]).groups[0]
    assert nano.fix.text == (
        "set --block-size 2096 on every prefill and decode pool (holds on A100 (SM80), "
        "H100/H200 (SM90), B200 (SM100), B300 (SM103), RTX-PRO-6000 (SM120))"
    )


# ---- tables never truncate locations or numbers ----------------------------------------
def test_table_keeps_locations_whole_at_any_width(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    bad = "configs/deployments/llm-d/qwen35-disaggregatedset-bad.yaml"
    location = f"{bad}:18"  # 61 characters
    monkeypatch.setenv("COLUMNS", "80")  # the findings table needs ~150: vertical layout
    narrow = runner.invoke(app, ["audit", bad])
    assert "…" not in narrow.stdout
    assert f"  Location: {location}\n" in narrow.stdout
    assert "  Block size: 1056\n" in narrow.stdout  # numbers whole
    monkeypatch.setenv("COLUMNS", "40")  # narrower than a location: wrapped, never cut
    tiny = runner.invoke(app, ["audit", bad])
    assert "…" not in tiny.stdout and location in tiny.stdout.replace("\n", "")
    monkeypatch.setenv("COLUMNS", "250")
    wide = runner.invoke(app, ["audit", bad])
    assert "┃ Location" in wide.stdout  # a real table when the fixed columns fit
    assert f"│ {location} │" in wide.stdout and "…" not in wide.stdout
    out = tmp_path / "report.txt"
    runner.invoke(app, ["audit", bad, "--output", str(out)])
    # a file is no terminal: plain lines, neither wrapped nor padded (was a
    # 400-column rich table)
    assert f"  {location}: KVA003 error: " in out.read_text() and "…" not in out.read_text()
    assert not any(line != line.rstrip() for line in out.read_text().splitlines())


# ---- deep JSON --------------------------------------------------------------------------
def test_deep_json_in_a_script_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    deep = '{"a":' * 5000 + "1" + "}" * 5000
    path = _write(tmp_path, "run.sh", f"vllm serve {NANO} -tp 8 --kv-transfer-config '{deep}'\n")
    result = runner.invoke(app, ["audit", str(path)])
    assert result.exit_code == 3
    assert "JSON nested deeper than 64 levels" in result.stdout
    baseline = _write(tmp_path, "base.json", "[" * 5000 + "]" * 5000)
    good = str(EXAMPLES / "kvalign" / "nemotron-nano-good.yaml")
    result = runner.invoke(app, ["audit", good, "--baseline", str(baseline)])
    assert result.exit_code == 2 and "not a `kvalign audit --format json` output" in result.stderr


# ---- a named --config must exist --------------------------------------------------------
def test_missing_config_file_is_a_usage_error() -> None:
    good = str(EXAMPLES / "kvalign" / "nemotron-nano-good.yaml")
    result = runner.invoke(app, ["audit", good, "--config", "/nonexistent.yaml"])
    assert result.exit_code == 2
    assert "--config /nonexistent.yaml: no such file" in result.stderr


# ---- errors point at the pool that caused them ------------------------------------------
def test_a_rejected_setting_is_reported_at_its_pool(tmp_path: Path) -> None:
    script = f"""\
    #!/bin/sh
    # prefill
    vllm serve {NANO} -tp 8 \\
      --kv-transfer-config '{{"kv_connector":"NixlConnector","kv_role":"kv_producer"}}'

    # decode
    vllm serve {NANO} -tp 1 --kv-cache-dtype int4 \\
      --kv-transfer-config '{{"kv_connector":"NixlConnector","kv_role":"kv_consumer"}}'
    """
    path = _write(tmp_path, "run.sh", script)
    result = runner.invoke(app, ["audit", str(path), "--format", "github"])
    assert result.exit_code == 3
    assert f"file={path},line=7," in result.stdout
    assert "decode/command-2: " in result.stdout and "int4" in result.stdout
    # the same in kvalign YAML: the decode block's line (4), not the prefill one
    own = _write(
        tmp_path,
        "d.yaml",
        f'model: {NANO}\nprefill:\n  tp: 8\ndecode:\n  tp: 1\n  args: "--kv-cache-dtype int4"\n',
    )
    result = runner.invoke(app, ["audit", str(own), "--format", "github"])
    assert f"file={own},line=4," in result.stdout and "decode/decode: " in result.stdout


# ---- check's bounds apply to audit ------------------------------------------------------
@pytest.mark.parametrize(
    ("args", "ok"),
    [
        (f"--block-size {MAX_BLOCK_SIZE}", True),
        (f"--block-size {MAX_BLOCK_SIZE + 1}", False),
        (f"--speculative-config.num_speculative_tokens {MAX_SPEC_TOKENS + 1}", False),
        ("-tp 4097", False),
    ],
)
def test_audit_uses_checks_bounds(tmp_path: Path, args: str, ok: bool) -> None:
    path = _write(
        tmp_path,
        "d.yaml",
        f'model: {NANO}\nprefill: {{tp: 8, args: "{args}"}}\ndecode: {{tp: 8}}\n',
    )
    deployment = read_text(path.read_text(), str(path))
    assert deployment is not None
    blocking = [p.message for p in deployment.problems if p.blocking]
    assert (not blocking) is ok, blocking
    if not ok:
        assert blocking[0].startswith("prefill/prefill: ") and "up to" in blocking[0]


def test_cli_bounds_come_from_settings() -> None:
    import kvalign.cli as cli
    import kvalign.settings as settings

    assert (cli.MAX_TP, cli.MAX_BLOCK_SIZE, cli.MAX_SPEC_TOKENS) == (
        settings.MAX_TP, settings.MAX_BLOCK_SIZE, settings.MAX_SPEC_TOKENS,
    )  # fmt: skip
    assert settings.MAX_BLOCK_SIZE == 1 << 20 and settings.MAX_SPEC_TOKENS == 1024


# ---- one bad file does not stop a directory scan ---------------------------------------
def test_directory_scan_reports_a_bad_file_and_goes_on(tmp_path: Path) -> None:
    good = (EXAMPLES / "kvalign" / "nemotron-nano-good.yaml").read_text()
    (tmp_path / "a-bad.yaml").write_text("model: [\n")
    (tmp_path / "b-good.yaml").write_text(good)
    result = runner.invoke(app, ["audit", str(tmp_path), "--format", "json"])
    data = json.loads(result.stdout)
    assert result.exit_code == 3
    assert [f["file"] for f in data["files"]] == [str(tmp_path / "b-good.yaml")]
    [problem] = data["unevaluated"]
    assert problem["file"] == str(tmp_path / "a-bad.yaml") and problem["line"] == 2
    assert problem["message"].startswith("not valid YAML")
    # the same file named on its own is still a usage error
    assert runner.invoke(app, ["audit", str(tmp_path / "a-bad.yaml")]).exit_code == 2


def test_stdin_yaml_errors_are_reported_as_such() -> None:
    bomb = (ROOT / "tests" / "corpus" / "deployments" / "bomb--billion-laughs.yaml").read_text()
    result = runner.invoke(app, ["audit", "-"], input=bomb)
    assert result.exit_code == 2 and "alias/anchor bomb" in result.stderr
    result = runner.invoke(app, ["audit", "-"], input="model: [\n")
    assert result.exit_code == 2 and "-:2: not valid YAML" in result.stderr


# ---- duplicate YAML keys ---------------------------------------------------------------
def test_duplicate_keys_are_refused_with_both_lines() -> None:
    with pytest.raises(
        InvalidConfig, match=r"f.yaml:3: duplicate YAML key 'decode' \(first at line 2\)"
    ):
        load_yaml_documents("model: m\ndecode: {tp: 1}\ndecode: {tp: 2}\n", "f.yaml")
    # merge keys may repeat; the same key in two documents is fine
    assert load_yaml_documents("a: &a {x: 1}\nb: {<<: *a, y: 2}\n---\na: 2\n", "f")[1][1] == {
        "a": 2
    }


def test_concatenated_halves_on_stdin_are_caught() -> None:
    split = EXAMPLES / "kubernetes" / "split-bad"
    text = (split / "prefill.yaml").read_text() + (split / "decode.yaml").read_text()
    result = runner.invoke(app, ["audit", "-"], input=text)
    assert result.exit_code == 2 and "duplicate YAML key" in result.stderr


# ---- pre-commit and unrelated YAML files -----------------------------------------------
def test_skip_unrelated_skips_a_named_file_without_a_pool(tmp_path: Path) -> None:
    service = _write(tmp_path, "svc.yaml", "apiVersion: v1\nkind: Service\nmetadata: {name: s}\n")
    good = str(EXAMPLES / "kvalign" / "nemotron-nano-good.yaml")
    assert runner.invoke(app, ["audit", str(service), good]).exit_code == 2
    result = runner.invoke(app, ["audit", str(service), good, "--skip-unrelated"])
    assert result.exit_code == 0
    assert f"{service}: no vLLM pool found: skipped (--skip-unrelated)" in result.stderr
    hooks = (ROOT / ".pre-commit-hooks.yaml").read_text()
    assert "args: [--skip-unrelated]" in hooks


# ---- --output never overwrites an input ------------------------------------------------
def test_output_over_an_input_is_refused(tmp_path: Path) -> None:
    source = EXAMPLES / "kvalign" / "nemotron-nano-bad.yaml"
    copy = tmp_path / "x.yaml"
    copy.write_text(source.read_text())
    for target in (copy, tmp_path / "." / "x.yaml"):
        result = runner.invoke(app, ["audit", str(copy), "--output", str(target)])
        assert result.exit_code == 2 and "is one of the inputs" in result.stderr
    result = runner.invoke(app, ["audit", str(tmp_path), "--output", str(copy)])
    assert result.exit_code == 2
    assert copy.read_text() == source.read_text()


# ---- minor ------------------------------------------------------------------------------
def test_unknown_rule_in_an_ignore_is_warned(tmp_path: Path) -> None:
    text = (EXAMPLES / "kvalign" / "nemotron-nano-good.yaml").read_text()
    path = _write(tmp_path, "d.yaml", "# kvalign: ignore=KVA999 reason=typo\n" + text)
    result = runner.invoke(app, ["audit", str(path)])
    assert result.exit_code == 0
    assert f"{path}:1: ignore names unknown rule 'KVA999' (known: KVA001 … KVA013)" in (
        result.stderr
    )


def test_args_only_container_with_another_image_is_noted_with_verbose(tmp_path: Path) -> None:
    manifest = f"""\
    apiVersion: apps/v1
    kind: Deployment
    metadata: {{name: prefill}}
    spec:
      template:
        spec:
          containers:
          - {{name: server, image: registry.example.com/infer:1, args: [{NANO}, -tp, "8"]}}
    """
    path = _write(tmp_path, "d.yaml", manifest)
    quiet = runner.invoke(app, ["audit", str(tmp_path)])
    assert "not a vllm image" not in quiet.stderr
    loud = runner.invoke(app, ["audit", str(tmp_path), "--verbose"])
    assert (
        f"{path}:3: prefill: container 'server' has args but no command and its image "
        "'registry.example.com/infer:1' is not a vllm image" in loud.stderr
    )


def test_tp_errors_name_the_role(tmp_path: Path) -> None:
    path = _write(tmp_path, "run.sh", f"# decode\nvllm serve {NANO} -tp two\n")
    result = runner.invoke(app, ["audit", str(path)])
    assert result.exit_code == 3
    assert "decode/command-1: --tensor-parallel-size: 'two' is not an integer" in result.stdout


@pytest.mark.parametrize(
    ("line", "words"),
    [
        (r'"a \"b\" \$c \\ d"', ['a "b" $c \\ d']),  # escapes inside double quotes
        (r"a\ b c", ["a b", "c"]),  # an escaped blank joins
        ('"$(date +%s)" "`id`" ${1} ${#X}', ["$(date +%s)", "`id`", "${1}", "${#X}"]),
        ('"${X}" ${X:-d} $', ["v w", "v", "w", "$"]),  # quoted: one word; unquoted: split
        ("${Y:-a b}", ["a", "b"]),  # a default splits like any unquoted value
        ('${Y:-"org/model"}', ["org/model"]),  # B2: the default's quotes are removed
        ("$(echo $(nested)) x", ["$(echo $(nested))", "x"]),
        ('" x "$X', [" x v", "w"]),
        ("$X-", ["v", "w-"]),
        ("$((2*4)) $((X+1))", ["8", "$((X+1))"]),
    ],
)
def test_shell_word_edge_cases(line: str, words: list[str]) -> None:
    assert shell_words("e " + line, {"X": "v w"})[1:] == words


@pytest.mark.parametrize("line", ['e "open', "e ${X", "e $(echo", "e `id", 'e "`id'])
def test_unterminated_shell_constructs_are_noted_not_fatal(line: str) -> None:
    # tree-sitter recovers; what it cannot read is noted with its line, never raised
    script = evaluate(line)
    assert script.notes and script.notes[0][0] == 1


# ---- README mismatches: survey's all-models row --------------------------------------------
def test_survey_all_models_row_lists_only_accepted_tps() -> None:
    # Nemotron 3 Nano rejects TP 16 (n_groups 8): no TP is valid, so the row shows "–"
    result = runner.invoke(app, ["survey", NANO, "--tp", "16", "--format", "markdown"])
    row = next(line for line in result.stdout.splitlines() if "All models" in line)
    assert row.split("|")[2].strip() == "**–**"


def test_pool_hf_overrides_are_applied(tmp_path: Path) -> None:
    # --hf-overrides in a pool's args changes that pool's model exactly as `check` does:
    # Nemotron-3-Nano with n_groups 4 -> conv (3, 5120), Mamba page 2,127,872 B -> 2080
    # tokens (hand-derived in tests/arithmetic/test_platforms.py); the other pool keeps 2096.
    path = tmp_path / "pools.yaml"
    path.write_text(
        "model: nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16\n"
        'prefill:\n  tp: 1\n  args: "--hf-overrides \'{\\"n_groups\\": 4}\'"\n'
        "decode:\n  tp: 1\n",
        encoding="utf-8",
    )
    result = CliRunner().invoke(app, ["audit", str(path), "--format", "json"])
    assert result.exit_code == 1, result.stdout
    text = result.stdout
    assert '"block_size": 2080' in text and '"block_size": 2096' in text


def test_command_line_platform_choices_are_usage_errors(tmp_path: Path) -> None:
    good = str(EXAMPLES / "kvalign" / "nemotron-nano-good.yaml")
    bad = runner.invoke(app, ["audit", good, "--attention-backend", "NOPE"])
    assert bad.exit_code == 2
    assert bad.stderr.startswith("kvalign: error: --attention-backend: unknown backend 'NOPE'")
    # --gpu alone: pools naming no backend get the one vLLM picks on that GPU (ROCm:
    # TRITON_ATTN), so the audit runs
    rocm = runner.invoke(app, ["audit", good, "--gpu", "MI300X", "--format", "json"])
    assert rocm.exit_code == 0, rocm.stdout
    assert any("TRITON_ATTN, what vLLM chooses on MI300X" in a
               for a in json.loads(rocm.stdout)["assumptions"])  # fmt: skip
    ok = runner.invoke(app, ["audit", good, "--gpu", "MI300X", "--attention-backend", "ROCM_ATTN"])
    assert ok.exit_code == 0, ok.stdout


def test_empty_path_does_not_pass_silently(tmp_path: Path) -> None:
    empty = runner.invoke(app, ["audit", str(tmp_path)])
    assert empty.exit_code == 2
    assert "no vLLM prefill/decode deployment found" in empty.stderr
    accepted = runner.invoke(app, ["audit", str(tmp_path), "--skip-unrelated"])
    assert accepted.exit_code == 0
