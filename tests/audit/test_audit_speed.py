"""audit's answer at scale: which findings name a pool is looked up through an index
(:class:`kvalign.report.audit.answer._Naming`), and gives exactly what asking every
finding about every pool gives (the rule it replaces: ``_names_pool``)."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from kvalign.auditing import AuditRequest, run
from kvalign.policy import fails
from kvalign.report.audit.answer import _names_pool, _Naming, failing_pairs

EXAMPLES = Path(__file__).resolve().parents[2] / "configs" / "deployments"


def test_index_names_the_same_pools_as_every_finding_asked(tmp_path: Path) -> None:
    # two copies of every example: the same role/name labels in many files, and pairs
    # grouped across files (labels that carry their file)
    for copy in ("a", "b"):
        shutil.copytree(EXAMPLES, tmp_path / copy)
    report = run(AuditRequest(paths=(str(tmp_path),), use_cache=False)).report
    for floor in ("error", "warning", "info"):
        findings = report.failing(floor)
        naming = _Naming(findings)
        pools = [r.pool for f in report.files for r in f.pools]
        assert findings and pools
        for pool in pools:
            brute = {i for i, f in enumerate(findings) if _names_pool(f, pool)}
            assert naming.of(pool) == brute
        assert any(naming.of(pool) for pool in pools)  # the index is not empty


def test_failing_pairs_as_the_rule_states_it(tmp_path: Path) -> None:
    shutil.copytree(EXAMPLES, tmp_path / "a")
    report = run(AuditRequest(paths=(str(tmp_path),), use_cache=False)).report
    failing = report.failing()
    expected = [
        o
        for g in report.groups
        for o in g.pairs
        if fails(o.pair.level, report.fail_on)
        or any(_names_pool(f, o.prefill.pool) and _names_pool(f, o.decode.pool) for f in failing)
    ]
    assert failing_pairs(report) == expected and expected


def test_a_folder_is_listed_once_and_each_file_read_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the references pass (ConfigMaps, KServe configs) and the read itself share one
    # scan and one read per file: before, every folder was listed three times and every
    # file read twice
    import kvalign.deploy as deploy

    shutil.copytree(EXAMPLES, tmp_path / "a")
    scans: list[Path] = []
    reads: Counter[Path] = Counter()
    scanned, read_file = deploy._scanned, deploy._read_file

    def counting_scan(path: Path, *args: Any) -> list[Path]:
        scans.append(path)
        return scanned(path, *args)

    def counting_read(path: Path) -> str:
        reads[path] += 1
        return read_file(path)

    monkeypatch.setattr(deploy, "_scanned", counting_scan)
    monkeypatch.setattr(deploy, "_read_file", counting_read)
    deployments, _ = deploy.read_paths([str(tmp_path)])
    assert deployments
    assert scans == [tmp_path]
    # every file the scan reads, once (the --config YAMLs the scripts name are read
    # again by the script that names them, through Source.load_config, not here)
    scanned_files = scanned(tmp_path)
    assert set(reads) == set(scanned_files)
    assert max(reads.values()) == 1
