"""Security properties: safe YAML only, no writes to user files, hub only when asked,
remote code only behind its flag, no secrets or locals in errors, quick offline failure."""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import kvalign.sources as sources
from kvalign.cli import app
from kvalign.errors import InvalidConfig, UnsupportedModel
from kvalign.safeio import MAX_YAML_DEPTH, load_yaml, load_yaml_documents
from kvalign.sources import hub, load_model
from tests.conftest import CATALOG, ROOT

runner = CliRunner()
NANO = "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"
KVALIGN = ROOT / "kvalign"


def test_yaml_is_only_parsed_by_the_safe_loader() -> None:
    """Grep: PyYAML is imported in one module only, and never with an unsafe loader."""
    importers = []
    for path in sorted(KVALIGN.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if re.search(r"^\s*(import yaml|from yaml)", text, re.M):
            importers.append(path.relative_to(ROOT).as_posix())
        unsafe = re.findall(
            r"yaml\.(load|load_all|unsafe_load|full_load)\(|FullLoader|UnsafeLoader|yaml\.Loader",
            text,
        )
        assert not unsafe, (path, unsafe)
    assert importers == ["kvalign/safeio.py"]


def test_yaml_tags_never_construct_python_objects() -> None:
    with pytest.raises(InvalidConfig, match="could not determine a constructor"):
        load_yaml("x: !!python/object/apply:os.system [echo pwned]\n", "t.yaml")
    with pytest.raises(InvalidConfig, match="could not determine a constructor"):
        load_yaml("x: !!python/name:os.system\n", "t.yaml")


def test_yaml_guards_allow_real_aliases_and_reject_bombs() -> None:
    # ordinary anchors/aliases (shared env blocks) are fine and keep their line numbers
    docs = load_yaml_documents("a: &env {A: 1}\nb: *env\n---\n# two\nc: [1]\n", "t")
    assert docs == [(1, {"a": {"A": 1}, "b": {"A": 1}}), (5, {"c": [1]})]
    shared = load_yaml("base: &b {x: 1, y: [1, 2]}\none: *b\ntwo: *b\n", "t.yaml")
    assert shared["one"] == shared["two"] == {"x": 1, "y": [1, 2]}
    # exactly at the depth limit loads; one level more does not
    at_limit = "[" * (MAX_YAML_DEPTH - 1) + "]" * (MAX_YAML_DEPTH - 1)
    assert load_yaml(f"x: {at_limit}\n", "t.yaml") is not None
    with pytest.raises(InvalidConfig, match="deeper than 64"):
        load_yaml(f"x: [{at_limit}]\n", "t.yaml")
    # a shared subtree reused deeper than where it was first seen is also caught
    deep_alias = f"a: &d {at_limit[:-1]}]\nb: [[*d]]\n"
    with pytest.raises(InvalidConfig, match="deeper than 64"):
        load_yaml(deep_alias, "t.yaml")
    with pytest.raises(InvalidConfig, match="expected one YAML document, found 2"):
        load_yaml("a: 1\n---\nb: 2\n", "t.yaml")


def _snapshot(folder: Path) -> dict[str, tuple[bytes, int]]:
    return {
        str(p.relative_to(folder)): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def test_user_files_are_never_modified(tmp_path: Path) -> None:
    """Read-only copies of a config and deployments: every command leaves bytes, mtimes
    and the folder listing unchanged (the cache lives elsewhere)."""
    work = tmp_path / "user"
    shutil.copytree(CATALOG / NANO, work / "model")
    shutil.copytree(ROOT / "configs" / "deployments", work / "deployments")
    for path in work.rglob("*"):
        mode = stat.S_IMODE(path.stat().st_mode)
        path.chmod(mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    empty_config = tmp_path / "kvalign.yaml"  # a named --config must exist
    empty_config.write_text("ignore: []\n")
    before = _snapshot(work)
    model = str(work / "model")
    try:
        for argv in (
            ["check", model, "--prefill-tp", "8", "--decode-tp", "1"],
            ["check", str(work / "model" / "config.json"), "--format", "json"],
            ["matrix", model, "--tp", "1,2,4,8"],
            ["explain", model, "--tp", "2"],
            ["survey", model],
            ["audit", str(work / "deployments"), "--format", "sarif"],
            ["audit", str(work / "deployments"), "--config", str(empty_config)],
        ):
            result = runner.invoke(app, argv)
            assert result.exit_code in (0, 1), (argv, result.stderr)
    finally:
        after = _snapshot(work)
        for path in work.rglob("*"):
            path.chmod(stat.S_IMODE(path.stat().st_mode) | stat.S_IWUSR)
    assert after == before


def test_hub_is_only_reached_for_hub_ids(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_hub(*args: object, **kwargs: object) -> Path:
        raise AssertionError("the hub was asked for a bundled or local model")

    monkeypatch.setattr(hub, "fetch_config", no_hub)
    assert load_model(NANO).source == "catalog"
    assert load_model(str(CATALOG / NANO)).source == "local"
    assert runner.invoke(app, ["audit", "configs/deployments/kvalign"]).exit_code == 1


def test_remote_code_stays_behind_its_flag(monkeypatch: pytest.MonkeyPatch) -> None:
    unknown = ROOT / "tests" / "corpus" / "configs" / "nano--unknown-model-type.json"
    monkeypatch.setattr(hub, "fetch_config", lambda repo_id, revision=None: unknown)
    calls: list[str] = []
    monkeypatch.setattr(
        sources, "_remote_code_geometry", lambda name, rev, path, overrides=None: calls.append(name)
    )
    with pytest.raises(UnsupportedModel, match="mystery_hybrid"):
        load_model("example-org/mystery")
    assert calls == []
    load_model("example-org/mystery", trust_remote_code=True)
    assert calls == ["example-org/mystery"]
    # the CLI warns on stderr whenever the flag is given
    result = runner.invoke(app, ["check", NANO, "--trust-remote-code"])
    assert result.exit_code == 0
    assert "kvalign: warning: --trust-remote-code lets a hub repository run code" in (result.stderr)


def test_internal_errors_show_no_traceback_locals_or_token(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    secret = "hf_notARealTokenButSecret123"
    monkeypatch.setenv("HF_TOKEN", secret)

    def buggy(*args: object, **kwargs: object) -> None:
        token = os.environ["HF_TOKEN"]  # a local holding the secret
        raise RuntimeError(f"boom ({len(token)} chars)")

    monkeypatch.setattr(sources, "load_model", buggy)
    result = runner.invoke(app, ["check", NANO])
    assert result.exit_code == 70
    err = result.stderr.strip()
    assert err == (
        "kvalign: error: internal error (RuntimeError: boom (28 chars)); rerun with "
        "KVALIGN_DEBUG=1 and report it"
    )
    assert secret not in result.stdout + err and "Traceback" not in err


def _fake_hf_cache(hf_home: Path, repo: str) -> None:
    """The layout huggingface_hub uses: refs/main → commit, snapshots/<commit>/config.json."""
    commit = "0123456789abcdef0123456789abcdef01234567"
    folder = hf_home / "hub" / f"models--{repo.replace('/', '--')}"
    (folder / "refs").mkdir(parents=True)
    (folder / "refs" / "main").write_text(commit, encoding="utf-8")
    snapshot = folder / "snapshots" / commit
    snapshot.mkdir(parents=True)
    shutil.copy(CATALOG / NANO / "config.json", snapshot / "config.json")


def _run(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "TRANSFORMERS_"))}
    return subprocess.run(
        [sys.executable, "-m", "kvalign", *argv],
        cwd=ROOT,
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_unreachable_hub_fails_in_one_quiet_line_and_cache_still_works(tmp_path: Path) -> None:
    """No HF_HUB_OFFLINE, the endpoint refuses connections: no retries, no logged
    traceback, no token in the output; a config in the HF cache is still found, with
    HF_HUB_OFFLINE unset and with HF_HUB_OFFLINE=1."""
    secret = "hf_notARealTokenButSecret123"
    env = {
        "HF_HOME": str(tmp_path / "hf"),
        "HF_ENDPOINT": "http://127.0.0.1:9",
        "HF_TOKEN": secret,
        "XDG_CACHE_HOME": str(tmp_path / "xdg"),
    }
    done = _run(["check", "example-org/not-cached"], env)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "kvalign: error: example-org/not-cached: not bundled and not in the Hugging Face "
        "cache, and the Hub cannot be reached (offline or HF_HUB_OFFLINE=1); pass a local "
        "config.json or see `kvalign models`"
    ]
    assert "Retry" not in done.stderr and secret not in done.stdout + done.stderr
    _fake_hf_cache(tmp_path / "hf", "example-org/cached-nano")
    for offline in ({}, {"HF_HUB_OFFLINE": "1"}):
        done = _run(["check", "example-org/cached-nano", "--format", "json"], env | offline)
        assert done.returncode == 0, done.stderr
        payload = json.loads(done.stdout)
        assert payload["model"]["id"] == "example-org/cached-nano"
        assert payload["model"]["source"] == "hub"


def test_probe_failure_reads_only_the_hf_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    import huggingface_hub
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.delenv("HF_HUB_OFFLINE")

    def down(*args: object, **kwargs: object) -> None:
        raise ConnectionError("network unreachable")

    asked: list[bool] = []

    def download(repo_id: str, filename: str, **kwargs: object) -> str:
        asked.append(bool(kwargs.get("local_files_only")))
        return str(CATALOG / NANO / "config.json")

    monkeypatch.setattr(huggingface_hub, "get_hf_file_metadata", down)
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", download)
    assert hub.fetch_config("example-org/x") == CATALOG / NANO / "config.json"
    monkeypatch.setattr(huggingface_hub, "get_hf_file_metadata", lambda *a, **k: None)
    hub.fetch_config("example-org/x")
    assert asked == [True, False]  # unreachable → cache only; reachable → normal download

    def no_probe(*args: object, **kwargs: object) -> None:
        raise AssertionError("offline: no request may be made")

    # HF_HUB_OFFLINE set after huggingface_hub was imported is honoured as well
    monkeypatch.setattr(huggingface_hub, "get_hf_file_metadata", no_probe)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    hub.fetch_config("example-org/x")
    assert asked == [True, False, True]


def test_probe_timeout_honours_hf_hub_etag_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HF_HUB_ETAG_TIMEOUT", raising=False)
    assert hub._probe_timeout() == hub.PROBE_TIMEOUT
    monkeypatch.setenv("HF_HUB_ETAG_TIMEOUT", "2.5")
    assert hub._probe_timeout() == 2.5
    monkeypatch.setenv("HF_HUB_ETAG_TIMEOUT", "soon")
    assert hub._probe_timeout() == hub.PROBE_TIMEOUT


def _hub_error(name: str, status: int) -> Exception:
    import httpx2
    from huggingface_hub import errors

    request = httpx2.Request("HEAD", "https://huggingface.co/x/y/resolve/main/config.json")
    response = httpx2.Response(status, request=request)
    cls = getattr(errors, name)
    if name in ("LocalEntryNotFoundError",):
        return cls("not cached")  # type: ignore[no-any-return]
    return cls(f"{name} message", response=response)  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("error", "status", "message"),
    [
        ("GatedRepoError", 401, "example-org/x: gated repository; log in"),
        ("RepositoryNotFoundError", 404, "example-org/x: not a bundled model, a local path, or"),
        ("RevisionNotFoundError", 404, "example-org/x: revision 'v9' not found on the Hub"),
        ("RemoteEntryNotFoundError", 404, "example-org/x: the repository has no config.json"),
        ("LocalEntryNotFoundError", 0, "revision 'v9' of example-org/x: not in the Hugging Face"),
        ("HfHubHTTPError", 403, "example-org/x: the Hub answered HTTP 403"),
    ],
)
def test_hub_errors_become_one_line_config_not_found(
    monkeypatch: pytest.MonkeyPatch, error: str, status: int, message: str
) -> None:
    import huggingface_hub
    from huggingface_hub import constants

    from kvalign.errors import ConfigNotFound

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)  # no probe: straight to download
    exc = _hub_error(error, status)

    def download(*args: object, **kwargs: object) -> str:
        raise exc

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", download)
    with pytest.raises(ConfigNotFound) as info:
        hub.fetch_config("example-org/x", "v9")
    assert str(info.value).startswith(message)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(("status", "reachable"), [(503, False), (429, False), (403, None)])
def test_probe_treats_server_trouble_as_unreachable(
    monkeypatch: pytest.MonkeyPatch, status: int, reachable: bool | None
) -> None:
    import huggingface_hub
    from huggingface_hub.errors import HfHubHTTPError

    exc = _hub_error("HfHubHTTPError", status)

    def head(*args: object, **kwargs: object) -> None:
        raise exc

    monkeypatch.setattr(huggingface_hub, "get_hf_file_metadata", head)
    if reachable is None:
        with pytest.raises(HfHubHTTPError):
            hub._hub_reachable("example-org/x", None)
    else:
        assert hub._hub_reachable("example-org/x", None) is reachable
