"""KVA012: hybrid KV-cache manager off with --kv-transfer-config: hybrids cannot be served."""

from __future__ import annotations

from pathlib import Path

import pytest

from kvalign.audit import run_audit
from kvalign.deploy import read_paths

SCRIPT = """\
vllm serve tiiuae/Falcon-H1-0.5B-Base --port 8100 {extra} \\
  --kv-transfer-config '{{"kv_connector":"NixlConnector","kv_role":"kv_producer"}}' &
vllm serve tiiuae/Falcon-H1-0.5B-Base --port 8200 {extra} \\
  --kv-transfer-config '{{"kv_connector":"NixlConnector","kv_role":"kv_consumer"}}' &
"""


@pytest.mark.parametrize(
    ("version", "extra", "fires"),
    [
        ("0.20.0", "", True),  # 0.18-0.21: the connector turns the manager off
        ("0.20.0", "--no-disable-hybrid-kv-cache-manager", False),
        ("0.22.0", "", False),  # kept on for connectors that support it
        ("0.33.0", "--disable-hybrid-kv-cache-manager", True),
        ("0.17.0", "", False),  # NIXL does not serve hybrids at all (a pair verdict)
    ],
)
def test_kva012(tmp_path: Path, version: str, extra: str, fires: bool) -> None:
    path = tmp_path / "pd.sh"
    path.write_text(SCRIPT.format(extra=extra))
    deployments, skipped = read_paths([str(path)])
    report = run_audit(deployments, vllm_version=version, skipped=tuple(skipped))
    found = [f for f in report.findings if f.rule == "KVA012"]
    assert len(found) == (2 if fires else 0)
    if fires:
        assert found[0].severity == "error"
        assert "--no-disable-hybrid-kv-cache-manager" in found[0].remediation
