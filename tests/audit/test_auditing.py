"""kvalign.auditing: the audit pipeline below the CLI returns its messages, never prints."""

from __future__ import annotations

from pathlib import Path

import pytest

from kvalign.auditing import AuditRequest, AuditStopped, run

EXAMPLES = Path(__file__).resolve().parents[2] / "configs" / "deployments"


def test_messages_are_returned_not_printed(capsys: pytest.CaptureFixture[str]) -> None:
    script = str(EXAMPLES / "command-line/falcon-h1-good.sh")
    quiet = run(AuditRequest(paths=(script,), use_cache=False))
    loud = run(AuditRequest(paths=(script,), verbose=True, use_cache=False))
    assert capsys.readouterr() == ("", "")
    # the script passes --port, a flag kvalign does not model: listed only with --verbose
    assert not any("ignored flags" in line for line in quiet.messages)
    assert any(line.endswith("ignored flags: --port") for line in loud.messages)
    assert quiet.report.exit_code() == 0 and quiet.unevaluated_messages() == ()


def test_an_empty_directory_stops_the_run_with_exit_2(tmp_path: Path) -> None:
    with pytest.raises(AuditStopped) as stop:
        run(AuditRequest(paths=(str(tmp_path),)))
    assert stop.value.exit_code == 2
    assert str(stop.value).startswith(f"no vLLM prefill/decode deployment found in: {tmp_path}")


def test_a_bad_rule_code_is_a_usage_error() -> None:
    with pytest.raises(AuditStopped) as stop:
        run(AuditRequest(paths=(str(EXAMPLES),), select=("KVA999",)))
    assert stop.value.exit_code == 2 and "KVA999" in str(stop.value)
