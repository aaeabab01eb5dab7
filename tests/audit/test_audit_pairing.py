"""kvalign audit --pair-by (file | label | model), and the inputs added with it: a worker's
own --kv-cache-block-size, LMCACHE_CONFIG_FILE, LeaderWorkerSet size (KVA011).

Block sizes (the arithmetic `kvalign matrix` prints, golden-tested elsewhere):
Falcon-H1-0.5B 800 / 800 / 400 / 208 at TP 1 / 2 / 4 / 8;
Qwen3.5-397B-A17B 528 / 272 at TP 8 / 16.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from kvalign.audit import AuditReport, run_audit
from kvalign.cli import app
from kvalign.deploy import read_paths
from kvalign.deploy.lmcache import candidate
from kvalign.deploy.model import DeploymentKey, Location, Pool
from kvalign.deploy.vllm_args import VllmArgs
from kvalign.grouping import folder_of, group_pools, grouping_of
from kvalign.settings import Settings
from tests.rules.harness import lws

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "configs" / "deployments"
SPLIT_BAD = EXAMPLES / "kubernetes" / "split-bad"
SPLIT_GOOD = EXAMPLES / "kubernetes" / "split-good"
FALCON = "tiiuae/Falcon-H1-0.5B-Base"
runner = CliRunner()


def _audit(*paths: str | Path, pair_by: str = "label") -> AuditReport:
    deployments, skipped = read_paths([str(p) for p in paths])
    return run_audit(deployments, skipped=tuple(skipped), pair_by=pair_by)  # type: ignore[arg-type]


def _rules(report: AuditReport) -> list[tuple[str, str, str]]:
    return sorted((Path(f.location.file).name, f.rule, f.severity) for f in report.findings)


def _write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(textwrap.dedent(text))
    return path


# ---- grouping (pure) ------------------------------------------------------------------------
def _pool(role: str, file: str, key: DeploymentKey | None = None, model: str = FALCON) -> Pool:
    return Pool(
        role=role,  # type: ignore[arg-type]
        name=role,
        model=model,
        tp=1,
        dp=1,
        settings=Settings(),
        location=Location(file, 1),
        args=VllmArgs(),
        deployment_key=key,
    )


def test_grouping_modes_on_hand_made_pools() -> None:
    part_of = DeploymentKey("app.kubernetes.io/part-of", "qwen")
    pools = [
        _pool("prefill", "a/prefill.yaml", part_of),
        _pool("decode", "a/decode.yaml", part_of),
        # same key, other folder: joined (folders stay apart only when each holds
        # both roles; b/ holds a decode pool only)
        _pool("decode", "b/decode.yaml", part_of),
        _pool("prefill", "a/keyless.yaml"),  # no key: its file
        _pool("decode", "a/other.yaml", DeploymentKey("app.kubernetes.io/part-of", "qwen", "ns")),
    ]
    label = group_pools(pools, "label")
    assert [(g.basis, idx) for g, idx in label] == [
        ("label", (0, 1, 2)), ("file", (3,)), ("label", (4,)),
    ]  # fmt: skip
    assert label[0][0].how == "label app.kubernetes.io/part-of=qwen in a/, b/"
    assert label[1][0].how == "file a/keyless.yaml (no deployment key)"
    assert label[2][0].how == "label app.kubernetes.io/part-of=qwen (namespace ns) in a/"
    # staging/ and prod/ side by side, each a whole deployment: kept apart
    sides = [_pool(r, f"{side}/{r}.yaml", part_of) for side in ("staging", "prod")
             for r in ("prefill", "decode")]  # fmt: skip
    assert [idx for _, idx in group_pools(sides, "label")] == [(0, 1), (2, 3)]
    # file mode ignores keys; model mode joins everything of the same model id
    assert [idx for _, idx in group_pools(pools, "file")] == [(0,), (1,), (2,), (3,), (4,)]
    assert [idx for _, idx in group_pools(pools, "model")] == [(0, 1, 2, 3, 4)]


def test_single_object_keys_never_join_files_and_stdin_is_its_own_folder() -> None:
    graph = DeploymentKey("DynamoGraphDeployment", "g", single_object=True)
    one, two = _pool("prefill", "x/one.yaml", graph), _pool("decode", "x/two.yaml", graph)
    assert grouping_of(one, "label").key != grouping_of(two, "label").key
    assert grouping_of(one, "label").how == "DynamoGraphDeployment g in x/one.yaml"
    name = DeploymentKey("kvalign name", "pd")
    ((alone, _),) = group_pools([_pool("prefill", "-", name)], "label")
    assert alone.how == "label kvalign name=pd in stdin"
    # stdin is one more input of the run; its halves join a file's by label
    assert [idx for _, idx in group_pools(
        [_pool("prefill", "-", name), _pool("decode", "pd.yaml", name)], "label"
    )] == [(0, 1)]  # fmt: skip


# ---- the split examples under each mode ------------------------------------------------------
def test_label_mode_pairs_the_split_halves_across_files() -> None:
    report = _audit(SPLIT_BAD, SPLIT_GOOD)
    assert [(g.grouping.basis, len(g.pairs), len(g.deployments)) for g in report.groups] == [
        ("label", 1, 2), ("label", 1, 2),
    ]  # fmt: skip
    bad, good = report.groups
    assert bad.grouping.how == (
        f"label llm-d.ai/model=ms-qwen35-llm-d-modelservice (namespace llm-d-pd) in {SPLIT_BAD}/"
    )
    assert bad.grouping.key != good.grouping.key  # each folder holds both roles: kept apart
    # TP 8 prefill (528) vs TP 16 decode (272): split path; split-good is TP 8 on both sides
    assert [o.pair.verdict for o in bad.pairs] == ["split"]
    assert [o.pair.verdict for o in good.pairs] == ["ok"]
    assert _rules(report) == [
        ("decode.yaml", "KVA001", "error"),
        ("decode.yaml", "KVA003", "error"),
        ("decode.yaml", "KVA008", "error"),
    ]
    # the two halves are in different files: each pool label names its file
    pools = report.findings[0].pools
    assert pools == (
        f"prefill/ms-qwen35-llm-d-modelservice-prefill ({SPLIT_BAD / 'prefill.yaml'})",
        f"decode/ms-qwen35-llm-d-modelservice-decode ({SPLIT_BAD / 'decode.yaml'})",
    )
    assert report.problems == ()


def test_file_and_label_modes_agree_on_every_single_file_example() -> None:
    """Every example except the split folders is one file per deployment, so --pair-by
    file and label report the same findings (the golden set in test_audit.py)."""
    singles = [
        *(p for p in sorted(EXAMPLES.iterdir()) if p.name != "kubernetes"),
        *sorted((EXAMPLES / "kubernetes").glob("*.yaml")),
    ]
    by_label = _audit(*singles)
    by_file = _audit(*singles, pair_by="file")
    assert [f.fingerprint for f in by_label.findings] == [f.fingerprint for f in by_file.findings]
    assert len(by_label.findings) == 23  # the 22 golden (file, rule) entries, KVA004 twice


def test_model_mode_pairs_every_prefill_with_every_decode_of_the_model() -> None:
    report = _audit(SPLIT_BAD, SPLIT_GOOD, pair_by="model")
    (group,) = report.groups
    assert group.grouping.how == "model Qwen/Qwen3.5-397B-A17B"
    # 2 prefills x 2 decodes; pairs with the TP 16 decode (split-bad) split, the others are ok
    folder = lambda pool: Path(pool.location.file).parent.name  # noqa: E731
    verdicts = sorted(
        (folder(o.prefill.pool), folder(o.decode.pool), o.pair.verdict) for o in group.pairs
    )
    assert verdicts == [
        ("split-bad", "split-bad", "split"),
        ("split-bad", "split-good", "ok"),
        ("split-good", "split-bad", "split"),
        ("split-good", "split-good", "ok"),
    ]
    # KVA001 / KVA003 / KVA008 once per prefill paired with the bad decode: 6 findings,
    # told apart (and baselined separately) by the prefill's file
    assert len(report.findings) == 6
    assert len({f.fingerprint for f in report.findings}) == 6


def test_json_reports_groups_pairs_and_keys() -> None:
    result = runner.invoke(app, ["audit", str(SPLIT_BAD), "--format", "json"])
    assert result.exit_code == 1  # KVA008 error
    data = json.loads(result.stdout)
    assert data["pair_by"] == "label"
    (group,) = data["groups"]
    assert group["grouped_by"] == "label"
    assert group["files"] == [str(SPLIT_BAD / "decode.yaml"), str(SPLIT_BAD / "prefill.yaml")]
    assert group["pairs"] == [
        {
            "prefill": {
                "pool": "prefill/ms-qwen35-llm-d-modelservice-prefill",
                "file": str(SPLIT_BAD / "prefill.yaml"),
                "line": 9,
            },
            "decode": {
                "pool": "decode/ms-qwen35-llm-d-modelservice-decode",
                "file": str(SPLIT_BAD / "decode.yaml"),
                "line": 8,
            },
            "verdict": "split",
            "block_size_ratio": None,
        }
    ]
    assert group["unpaired"] == []
    pools = [p for f in data["files"] for p in f["pools"]]
    assert {p["group"] for p in pools} == {group["key"]}
    assert {p["deployment_key"] for p in pools} == {
        "llm-d.ai/model=ms-qwen35-llm-d-modelservice (namespace llm-d-pd)"
    }


def test_table_and_markdown_show_pairs_and_unpaired_pools() -> None:
    table = runner.invoke(app, ["audit", str(SPLIT_GOOD), "--pair-by", "file"])
    assert table.exit_code == 1  # the unpaired halves are KVA013 errors
    assert "Pairs (--pair-by file)" in table.stdout and "not paired" in table.stdout
    assert "no decode pool in its deployment" in table.stdout  # a KVA013 finding
    md = runner.invoke(app, ["audit", str(SPLIT_GOOD), "--format", "markdown"]).stdout
    assert "### Pairs (`--pair-by label`)" in md
    assert "| ok |" in md


def test_pair_by_on_the_command_line() -> None:
    assert runner.invoke(app, ["audit", str(SPLIT_BAD)]).exit_code == 1
    # the unpaired halves are KVA013 errors (each could be the other's partner)
    assert runner.invoke(app, ["audit", str(SPLIT_BAD), "--pair-by", "file"]).exit_code == 1
    assert runner.invoke(app, ["audit", str(SPLIT_BAD), "--pair-by", "model"]).exit_code == 1
    bad = runner.invoke(app, ["audit", str(SPLIT_BAD), "--pair-by", "banana"])
    assert bad.exit_code == 2 and "--pair-by" in bad.stderr


# ---- kvalign YAML halves joined by `name` ---------------------------------------------------
def test_kvalign_yaml_halves_join_by_name(tmp_path: Path) -> None:
    _write(tmp_path, "prefill.yaml", f"model: {FALCON}\nname: falcon-pd\nprefill: {{tp: 4}}\n")
    _write(tmp_path, "decode.yaml", f"model: {FALCON}\nname: falcon-pd\ndecode: {{tp: 1}}\n")
    report = _audit(tmp_path)
    (group,) = report.groups
    assert group.grouping.how == f"label kvalign name=falcon-pd in {tmp_path}/"
    # TP 4 = 400 vs TP 1 = 800: drift and block_size_ratio 2
    assert _rules(report) == [
        ("decode.yaml", "KVA001", "error"),
        ("decode.yaml", "KVA002", "error"),
    ]
    # without `name`, a one-sided kvalign file is no deployment (a named file: exit 2)
    lone = _write(tmp_path / "lone", "p.yaml", f"model: {FALCON}\nprefill: {{tp: 4}}\n")
    result = runner.invoke(app, ["audit", str(lone)])
    assert result.exit_code == 2 and "no prefill/decode deployment found" in result.stderr
    bad_name = _write(tmp_path / "bad", "p.yaml", f"model: {FALCON}\nname: [x]\nprefill: {{}}\n")
    result = runner.invoke(app, ["audit", str(bad_name)])
    assert result.exit_code == 2
    assert result.stderr.strip() == f"kvalign: error: {bad_name}: name: expected a name, got ['x']"


def test_files_of_one_group_with_different_versions_are_noted(tmp_path: Path) -> None:
    _write(
        tmp_path, "p.yaml",
        f"model: {FALCON}\nname: pd\nvllm_version: '0.33.0'\nprefill: {{tp: 1}}\n",
    )  # fmt: skip
    _write(
        tmp_path, "d.yaml",
        f"model: {FALCON}\nname: pd\nvllm_version: '0.32.0'\ndecode: {{tp: 1}}\n",
    )  # fmt: skip
    report = _audit(tmp_path)
    # d.yaml sorts first: its version is the group's
    assert report.groups[0].version_note == "vLLM 0.32 rules (for --vllm-version 0.32.0)"
    (note,) = report.problems
    assert "files name different vllm_version (0.32.0, 0.33.0); pairs use 0.32.0" in note.message


# ---- a worker's own --kv-cache-block-size ---------------------------------------------------
@pytest.mark.parametrize(("value", "fires"), [(16, True), (800, False)])
def test_worker_kv_cache_block_size_is_a_router_side_size(
    tmp_path: Path, value: int, fires: bool
) -> None:
    _write(
        tmp_path, "dyn.sh",
        f"""\
        # prefill
        python -m dynamo.vllm --model {FALCON} --is-prefill-worker --kv-cache-block-size {value}
        # decode
        python -m dynamo.vllm --model {FALCON} --is-decode-worker
        """,
    )  # fmt: skip
    report = _audit(tmp_path / "dyn.sh")
    # the engine's block size is unchanged (TP 1: 800); the flag is checked by KVA006 only
    assert [r.rank.block_size for r in report.groups[0].pools] == [800, 800]
    kva006 = [f for f in report.findings if f.rule == "KVA006"]
    assert bool(kva006) is fires
    if fires:
        assert kva006[0].message == (
            "prefill/command-1 --kv-cache-block-size (router-side) = 16 tokens but vLLM uses "
            "decode/command-2 800, prefill/command-1 800"
        )


# ---- LMCACHE_CONFIG_FILE ----------------------------------------------------------------------
def _lmcache_pd(folder: Path, env: str, extra: str = "") -> Path:
    return _write(
        folder, "pd.yaml",
        f"model: {FALCON}\nprefill: {{tp: 1, env: {{{env}}}}}\ndecode: {{tp: 1}}\n{extra}",
    )  # fmt: skip


def test_lmcache_config_file_next_to_the_manifest(tmp_path: Path) -> None:
    # the path in the manifest is the in-container mount; the file is found by its name
    _write(tmp_path, "lmcache.yaml", "chunk_size: 256\nlocal_cpu: true\n")
    pd = _lmcache_pd(tmp_path, "LMCACHE_CONFIG_FILE: /etc/lmcache/lmcache.yaml")
    report = _audit(pd)
    (finding,) = report.findings
    assert finding.rule == "KVA007"
    assert finding.message == (
        f"LMCache chunk_size 256 (from {tmp_path / 'lmcache.yaml'}) is not a multiple of "
        "block size 800"
    )
    assert finding.remediation == "set LMCache chunk_size to a multiple of 800 (e.g. 800)"
    # a multiple of 800 is fine; LMCACHE_CHUNK_SIZE overrides the file (as in LMCache)
    (tmp_path / "lmcache.yaml").write_text("chunk_size: 1600\n")
    assert _audit(pd).findings == ()
    both = _lmcache_pd(
        tmp_path / "env", "LMCACHE_CONFIG_FILE: lmcache.yaml, LMCACHE_CHUNK_SIZE: '1000'"
    )
    _write(tmp_path / "env", "lmcache.yaml", "chunk_size: 1600\n")
    (finding,) = _audit(both).findings
    assert "chunk_size 1000 (from LMCACHE_CHUNK_SIZE)" in finding.message


def test_lmcache_relative_path_in_a_subfolder(tmp_path: Path) -> None:
    _write(tmp_path / "conf", "lmc.yaml", "chunk_size: 300\n")
    (finding,) = _audit(_lmcache_pd(tmp_path, "LMCACHE_CONFIG_FILE: conf/lmc.yaml")).findings
    assert f"(from {tmp_path / 'conf' / 'lmc.yaml'})" in finding.message


def test_lmcache_file_missing_or_unlooked_is_a_note(tmp_path: Path) -> None:
    # a ../ path is looked up by name only: the file one folder up is never read
    _write(tmp_path, "secret.yaml", "chunk_size: 1\n")
    pd = _lmcache_pd(tmp_path / "app", "LMCACHE_CONFIG_FILE: ../secret.yaml")
    report = _audit(pd)
    assert report.findings == () and report.unevaluated == ()
    (note,) = report.problems
    assert note.message == (
        "prefill/prefill: LMCACHE_CONFIG_FILE ../secret.yaml: not found next to the manifest "
        f"(looked for {tmp_path / 'app' / 'secret.yaml'}); LMCache chunk_size not checked"
    )
    # stdin: nothing is looked up
    text = pd.read_text()
    result = runner.invoke(app, ["audit", "-", "--format", "json"], input=text)
    assert result.exit_code == 0
    assert "not found next to the manifest; LMCache chunk_size not checked" in result.stderr
    # a file without chunk_size is noted too (LMCache would use its default)
    _write(tmp_path / "app", "secret.yaml", "local_cpu: true\n")
    assert "sets no chunk_size" in _audit(pd).problems[0].message


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("chunk_size: [256\n", "not valid YAML"),
        ("- 256\n", "expected a YAML mapping"),
        ("chunk_size: 0\n", "chunk_size: expected a positive integer, got 0"),
        ("chunk_size: big\n", "chunk_size: expected a positive integer, got 'big'"),
        ("chunk_size: true\n", "chunk_size: expected a positive integer, got True"),
        ("a: &a [*a]\n", "recursive YAML alias"),
    ],
)
def test_broken_lmcache_file_makes_the_pool_unevaluable(
    tmp_path: Path, content: str, message: str
) -> None:
    _write(tmp_path, "lmcache.yaml", content)
    pd = _lmcache_pd(tmp_path, "LMCACHE_CONFIG_FILE: lmcache.yaml")
    result = runner.invoke(app, ["audit", str(pd), "--format", "github"])
    assert result.exit_code == 3
    (line,) = [ln for ln in result.stdout.splitlines() if "not evaluated" in ln]
    assert message in line and "LMCACHE_CONFIG_FILE lmcache.yaml" in line
    assert "Traceback" not in result.stdout + result.stderr


def test_oversized_lmcache_file_is_refused_without_reading_it(tmp_path: Path) -> None:
    big = tmp_path / "lmcache.yaml"
    with big.open("wb") as handle:  # sparse: 9 MiB, larger than the 8 MiB cap
        handle.truncate(9 * 1024 * 1024)
    report = _audit(_lmcache_pd(tmp_path, "LMCACHE_CONFIG_FILE: lmcache.yaml"))
    assert report.exit_code("error") == 3
    assert report.unevaluated[0].message.endswith(f"{big}: larger than 8 MiB")


def test_lmcache_candidate_paths_stay_in_the_folder() -> None:
    base = Path("/deploy")
    assert candidate(base, "lmcache.yaml") == Path("/deploy/lmcache.yaml")
    assert candidate(base, "conf/lmcache.yaml") == Path("/deploy/conf/lmcache.yaml")
    assert candidate(base, "/etc/lmcache/lmcache.yaml") == Path("/deploy/lmcache.yaml")
    assert candidate(base, "a/../../x.yaml") == Path("/deploy/x.yaml")
    assert candidate(base, "") is None
    assert candidate(base, "/") is None
    assert candidate(base, "..") is None
    assert candidate(base, "x\x00.yaml") is None


# ---- LeaderWorkerSet size (KVA011: tests/rules/test_kva011.py) ---------------------------
def test_split_good_lws_matches_its_gpus() -> None:
    (group,) = _audit(SPLIT_GOOD).groups
    decode = next(r.pool for r in group.pools if r.pool.role == "decode")
    # 2 pods x 8 GPUs = TP 8 x PP 2 (--pipeline_parallel_size, underscore spelling)
    assert (decode.nodes, decode.gpus_per_node, decode.tp) == (2, 8, 8)
    assert decode.args.pipeline_parallel_size == 2


def test_invalid_lws_size_is_noted_and_not_used(tmp_path: Path) -> None:
    report = _audit(lws(tmp_path, "two", '"-tp", "4"', "{limits: {nvidia.com/gpu: 4}}"))
    assert "KVA011" not in {f.rule for f in report.findings}
    (note,) = [p for p in report.problems if "leaderWorkerTemplate.size" in p.message]
    assert note.message == (
        "falcon-prefill: leaderWorkerTemplate.size: expected a positive integer, got 'two' "
        "(not used)"
    )


def test_bad_pipeline_parallel_size_is_a_problem(tmp_path: Path) -> None:
    pd = _write(tmp_path, "pd.yaml", f"model: {FALCON}\nprefill: {{args: -pp 0}}\ndecode: {{}}\n")
    report = _audit(pd)
    assert report.exit_code("error") == 3
    assert "--pipeline-parallel-size: expected a positive integer, got 0" in (
        report.unevaluated[0].message
    )


# ---- grouping properties --------------------------------------------------------------------
_FILES = ("a/p.yaml", "a/d.yaml", "b/p.yaml", "-")
_KEYS = (
    None,
    DeploymentKey("llm-d.ai/model", "m"),
    DeploymentKey("llm-d.ai/model", "m", "ns"),
    DeploymentKey("app.kubernetes.io/part-of", "m"),
    DeploymentKey("DynamoGraphDeployment", "g", single_object=True),
)


@given(
    st.lists(
        st.tuples(
            st.sampled_from(("prefill", "decode")),
            st.sampled_from(_FILES),
            st.sampled_from(_KEYS),
            st.sampled_from(("m1", "m2")),
        ),
        max_size=12,
    ),
    st.sampled_from(("label", "file", "model")),
)
def test_grouping_is_a_partition_that_respects_its_scope(
    specs: list[tuple[str, str, DeploymentKey | None, str]], mode: str
) -> None:
    pools = [_pool(role, file, key, model) for role, file, key, model in specs]
    groups = group_pools(pools, mode)  # type: ignore[arg-type]
    indices = sorted(i for _, idx in groups for i in idx)
    assert indices == list(range(len(pools)))  # every pool in exactly one group
    for grouping, idx in groups:
        members = [pools[i] for i in idx]
        files = {p.location.file for p in members}
        if mode == "model":
            assert len({p.model for p in members}) == 1
        elif grouping.basis == "label":  # one key; several folders unless each is whole
            assert len({p.deployment_key for p in members}) == 1
            same_key = [p for p in pools if p.deployment_key == members[0].deployment_key]
            folders = {folder_of(p.location.file) for p in same_key}
            whole = all(
                {p.role for p in same_key if folder_of(p.location.file) == f}
                >= {"prefill", "decode"}
                for f in folders
            )
            assert len({folder_of(f) for f in files}) == (1 if whole else len(folders))
        else:  # file or single object: one file
            assert len(files) == 1
