"""Bundled models' precomputed geometry (kvalign/sources/bundled_geometry.json) is what
transformers computes from the bundled configs, and a bundled check never imports it."""

from __future__ import annotations

import json
import subprocess
import sys

from kvalign.sources import bundled, catalog, load_model
from kvalign.sources.config_file import read_config_bytes
from tests.conftest import CATALOG, ROOT

NANO = "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"


def test_data_file_is_what_transformers_computes() -> None:
    # recomputed here through transformers' config classes; `make geometry` rewrites it
    assert bundled.DATA.read_text(encoding="utf-8") == bundled.render(bundled.compute())


def test_every_bundled_model_is_precomputed() -> None:
    stored = json.loads(bundled.DATA.read_text(encoding="utf-8"))["models"]
    assert sorted(stored) == sorted(e.model_id for e in catalog.entries())
    assert len(stored) == len(list(CATALOG.glob("*/*/config.json")))


def test_other_bytes_fall_back_to_transformers() -> None:
    entry = catalog.lookup(NANO)
    assert entry is not None
    data = read_config_bytes(entry.config_path)
    found = bundled.lookup(NANO, data)
    assert found is not None and found.attention is not None
    assert found.attention.total_kv_heads == 2  # config.json: num_key_value_heads 2
    assert bundled.lookup(NANO, data + b"\n") is None
    assert bundled.lookup("org/not-bundled", data) is None


def test_loaded_geometry_names_the_bundled_file() -> None:
    geometry = load_model(NANO)
    assert geometry.source == "catalog" and geometry.model_id == NANO
    assert geometry.config_path.endswith("NVIDIA-Nemotron-3-Nano-30B-A3B-BF16/config.json")


def test_cold_check_of_a_bundled_model_never_imports_transformers() -> None:
    probe = (
        "import sys\n"
        "from kvalign.cli import main\n"
        "try:\n"
        f"    main(['check', '{NANO}', '--no-cache', '--format', 'json'])\n"
        "except SystemExit as exc:\n"
        "    code = exc.code\n"
        "sys.stderr.write(f'exit={code} transformers={\"transformers\" in sys.modules}\\n')\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert run.stderr.strip().splitlines()[-1] == "exit=0 transformers=False"
    assert json.loads(run.stdout)["model"]["id"] == NANO
