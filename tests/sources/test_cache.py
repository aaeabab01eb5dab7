"""The geometry cache ($XDG_CACHE_HOME/kvalign): keys, JSON entries, atomic writes, --no-cache."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvalign.cli import app
from kvalign.sources import cache, catalog, load_model
from tests.conftest import CATALOG, ROOT

runner = CliRunner()
NANO = "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"


def _entries() -> list[Path]:
    folder = cache.cache_dir()
    return sorted(folder.glob("geometry-*.json")) if folder.is_dir() else []


def test_cache_dir_honours_xdg_cache_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert cache.cache_dir() == tmp_path / "x" / "kvalign"
    # the XDG spec says relative paths are invalid and must be ignored
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/dir")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache.cache_dir() == tmp_path / "home" / ".cache" / "kvalign"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert cache.cache_dir() == tmp_path / "home" / ".cache" / "kvalign"


def test_key_covers_bytes_version_and_canonical_params(monkeypatch: pytest.MonkeyPatch) -> None:
    base = cache.cache_key(b"{}", {})
    assert len(base) == 64 and base == cache.cache_key(b"{}", None)
    assert cache.cache_key(b"{ }", {}) != base  # any byte change
    assert cache.cache_key(b"{}", {"hf_overrides": {"a": 1}}) != base
    # canonical JSON: key order of parameters (and of nested mappings) does not matter
    assert cache.cache_key(b"{}", {"x": {"b": 2, "a": 1}, "y": 3}) == cache.cache_key(
        b"{}", {"y": 3, "x": {"a": 1, "b": 2}}
    )
    assert cache.canonical_params({"b": [1, 2], "a": None}) == '{"a":null,"b":[1,2]}'
    monkeypatch.setattr(cache, "__version__", "9.9.9")
    assert cache.cache_key(b"{}", {}) != base


@pytest.mark.parametrize("entry", catalog.entries(), ids=lambda e: e.model_id)
def test_entry_round_trips_every_bundled_geometry(entry: catalog.CatalogEntry) -> None:
    geometry = load_model(entry.model_id)
    text = json.dumps(cache.geometry_to_dict(geometry), allow_nan=False)
    assert cache.geometry_from_json(json.loads(text)) == geometry


def test_warm_load_uses_the_entry_without_rebuilding(monkeypatch: pytest.MonkeyPatch) -> None:
    cold = load_model(NANO, use_cache=True)
    [entry] = _entries()
    stored = json.loads(entry.read_text(encoding="utf-8"))
    assert stored["geometry"]["model_type"] == "nemotron_h"
    assert stored["key"] == entry.stem.removeprefix("geometry-")

    import kvalign.sources.build as build

    def no_rebuild(*args: object, **kwargs: object) -> None:
        raise AssertionError("a cache hit must not rebuild the geometry")

    monkeypatch.setattr(build, "geometry_from_dict", no_rebuild)
    assert load_model(NANO, use_cache=True) == cold
    # the same bytes through a local path: a hit, but with the caller's name and source
    local = load_model(str(cold.config_path), use_cache=True)
    assert (local.source, local.model_id) == ("local", str(cold.config_path))
    assert local.attention == cold.attention and local.state == cold.state


def test_corrupt_entry_is_ignored_and_rewritten() -> None:
    good = load_model(NANO, use_cache=True)
    [entry] = _entries()
    for junk in (b"", b"{not json", b"[]", b'{"key": "other"}', b"\xff\xfe", b"{}" * 10):
        entry.write_bytes(junk)
        assert load_model(NANO, use_cache=True) == good
        assert json.loads(entry.read_text(encoding="utf-8"))["geometry"]["model_id"] == NANO
    payload = json.loads(entry.read_text(encoding="utf-8"))
    payload["geometry"]["attention"]["head_size"] = "128"  # wrong type
    entry.write_text(json.dumps(payload), encoding="utf-8")
    assert load_model(NANO, use_cache=True) == good


def test_library_default_and_no_cache_flag_write_nothing() -> None:
    load_model(NANO)
    assert _entries() == []
    for argv in (
        ["check", NANO, "--no-cache"],
        ["matrix", NANO, "--tp", "1,2", "--no-cache"],
        ["explain", NANO, "--no-cache"],
        ["survey", NANO, "--no-cache"],
        ["audit", "configs/deployments/kvalign", "--no-cache"],
    ):
        result = runner.invoke(app, argv)
        assert result.exit_code in (0, 1), (argv, result.stderr)
    assert _entries() == []
    result = runner.invoke(app, ["check", NANO])
    assert result.exit_code == 0 and len(_entries()) == 1


def test_unwritable_cache_is_silent(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    blocker = tmp_path / "file-not-dir"
    blocker.write_text("x", encoding="utf-8")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    geometry = load_model(NANO)
    assert cache.store("0" * 64, geometry) is False
    assert load_model(NANO, use_cache=True) == geometry
    assert list(tmp_path.iterdir()) == [blocker]  # no temporary files left behind


def test_concurrent_writers_and_readers_see_whole_entries() -> None:
    geometry = load_model(NANO)
    key = "f" * 64
    seen: list[object] = []
    errors: list[BaseException] = []

    def writer() -> None:
        try:
            for _ in range(40):
                assert cache.store(key, geometry)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    def reader() -> None:
        for _ in range(80):
            seen.append(cache.load(key))

    threads = [threading.Thread(target=writer) for _ in range(4)]
    threads += [threading.Thread(target=reader) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert all(hit is None or hit == geometry for hit in seen)
    assert cache.load(key) == geometry
    assert [p.name for p in cache.cache_dir().iterdir()] == [f"geometry-{key}.json"]


def test_racing_first_runs_share_one_whole_secret(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The HMAC key appears whole or not at all: a run that reads it while another creates
    it gets the same 32 bytes, never a half-written (empty) file. The concurrency test above
    failed in CI once when a reader caught the key between create and write."""
    for round_ in range(15):
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / f"r{round_}"))
        keys: list[bytes | None] = []
        barrier = threading.Barrier(6)

        def grab(keys: list[bytes | None], barrier: threading.Barrier) -> None:
            barrier.wait()
            keys.append(cache.secret(create=True))

        threads = [threading.Thread(target=grab, args=(keys, barrier)) for _ in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(keys) == 6 and keys[0] is not None and len(keys[0]) == 32
        assert set(keys) == {keys[0]}
        folder = tmp_path / f"r{round_}"
        assert [p.name for p in folder.iterdir()] == [cache.SECRET_NAME]  # no temp left
        assert (os.stat(folder / cache.SECRET_NAME).st_mode & 0o777) == 0o600


def test_warm_check_never_imports_transformers(tmp_path: Path) -> None:
    """Two processes sharing a cache: the second answers without importing transformers.
    (A local copy of a bundled config: bundled models answer from their precomputed
    geometry and never import transformers, tests/sources/test_bundled_geometry.py.)"""
    local = tmp_path / "nano" / "config.json"
    local.parent.mkdir()
    local.write_bytes((CATALOG / NANO / "config.json").read_bytes())
    probe = (
        "import sys\n"
        "from kvalign.cli import main\n"
        "try:\n"
        f"    main(['check', '{local}', '--format', 'json'])\n"
        "except SystemExit as exc:\n"
        "    code = exc.code\n"
        "sys.stderr.write(f'exit={code} transformers={\"transformers\" in sys.modules}\\n')\n"
    )
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path), HF_HUB_OFFLINE="1")
    runs = [
        subprocess.run(
            [sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True
        )
        for _ in range(2)
    ]
    assert runs[0].stderr.strip().splitlines()[-1] == "exit=0 transformers=True"
    assert runs[1].stderr.strip().splitlines()[-1] == "exit=0 transformers=False"
    assert json.loads(runs[0].stdout) == json.loads(runs[1].stdout)


def test_version_and_help_stay_light() -> None:
    probe = (
        "import sys\n"
        "from kvalign.cli import main\n"
        "for argv in (['--version'], ['--help'], ['check', '--help']):\n"
        "    try:\n"
        "        main(argv)\n"
        "    except SystemExit:\n"
        "        pass\n"
        "heavy = [m for m in ('transformers', 'huggingface_hub', 'kvalign.alignment',\n"
        "                     'kvalign.sources.build', 'yaml') if m in sys.modules]\n"
        "sys.stderr.write(f'heavy={heavy}\\n')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert done.stderr.strip().splitlines()[-1] == "heavy=[]"


def test_audit_loads_each_distinct_model_once(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import kvalign.audit as audit_module

    calls: list[str] = []
    real = audit_module.load_model

    def counting(name: str, **kwargs: object) -> object:
        calls.append(name)
        return real(name, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(audit_module, "load_model", counting)
    for index, (prefill, decode) in enumerate([(8, 1), (4, 2), (2, 2), (1, 1)]):
        (tmp_path / f"pair-{index}.yaml").write_text(
            f"model: {NANO}\nprefill: {{tp: {prefill}}}\ndecode: {{tp: {decode}}}\n",
            encoding="utf-8",
        )
    result = runner.invoke(app, ["audit", str(tmp_path), "--format", "json"])
    assert result.exit_code in (0, 1), result.stderr
    assert len(json.loads(result.stdout)["files"]) == 4
    assert calls == [NANO]  # 4 files × 2 pools, one load


def test_an_entry_whose_mac_is_not_ascii_is_a_miss() -> None:
    # hmac.compare_digest refuses non-ASCII str (TypeError): such an entry (forged or
    # corrupt) is a miss and rewritten, never an internal error (exit 70)
    good = load_model(NANO, use_cache=True)
    [entry] = _entries()
    payload = json.loads(entry.read_text(encoding="utf-8"))
    for forged in ("é" * 64, "\udcff", 7, None):
        payload["hmac"] = forged
        entry.write_text(json.dumps(payload), encoding="utf-8")
        assert load_model(NANO, use_cache=True) == good
        rewritten = json.loads(entry.read_text(encoding="utf-8"))["hmac"]
        assert isinstance(rewritten, str) and rewritten.isascii() and len(rewritten) == 64
