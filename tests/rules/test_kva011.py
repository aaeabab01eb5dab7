"""KVA011: LeaderWorkerSet size × GPUs per pod disagrees with TP × PP × DP."""

from __future__ import annotations

from pathlib import Path

import pytest

from kvalign.policy import fails
from tests.rules.harness import audit, lws


@pytest.mark.parametrize(
    ("size", "args", "resources", "message"),
    [
        # 2 pods x 4 GPUs = 8, but TP 4 x PP 1 x DP 1 = 4
        ('2', '"-tp", "4"', "{limits: {nvidia.com/gpu: 4}}",
         "LeaderWorkerSet size 2 × 4 GPU(s) per pod = 8 GPUs, but TP 4 × PP 1 × DP 1 = 4; "
         "audited at TP 4 (from the arguments)"),
        # no -tp: vLLM runs TP 1 on a 2-GPU pod (GPU count from requests)
        ('1', '"--port", "8000"', '{requests: {amd.com/gpu: "2"}}',
         "LeaderWorkerSet size 1 × 2 GPU(s) per pod = 2 GPUs, but TP 1 × PP 1 × DP 1 = 1; "
         "audited at TP 1 (from the arguments)"),
    ],
)  # fmt: skip
def test_kva011_fires(tmp_path: Path, size: str, args: str, resources: str, message: str) -> None:
    report = audit(lws(tmp_path, size, args, resources))
    (finding,) = [f for f in report.findings if f.rule == "KVA011"]
    assert (finding.severity, finding.pools, finding.message) == (
        "info", ("prefill/falcon-prefill",), message,
    )  # fmt: skip
    # info: fails only --fail-on info (the group's pair findings are gated on their own)
    assert fails(finding.severity, "info") and not fails(finding.severity, "warning")


@pytest.mark.parametrize(
    ("size", "args", "resources"),
    [
        ("2", '"-tp", "2", "--pipeline_parallel_size", "2"', "{limits: {nvidia.com/gpu: 2}}"),
        ("1", '"-tp", "2", "-dp", "2"', "{limits: {nvidia.com/gpu: '4'}}"),
        ("2", '"-tp", "4"', "{}"),  # GPU count unknown: nothing to compare
        ("2", '"-tp", "4"', "{limits: {nvidia.com/gpu: many}}"),
    ],
)
def test_kva011_stays_quiet(tmp_path: Path, size: str, args: str, resources: str) -> None:
    report = audit(lws(tmp_path, size, args, resources))
    assert "KVA011" not in {f.rule for f in report.findings}
