"""Model loading: catalog, local paths, raw JSON for vLLM-only types, and clear errors."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from kvalign.errors import ConfigNotFound, InvalidConfig, UnsupportedModel
from kvalign.sources import catalog, load_model
from kvalign.sources.config_file import read_config_json
from tests.conftest import CATALOG

NANO_JSON = CATALOG / "nvidia" / "NVIDIA-Nemotron-3-Nano-30B-A3B-BF16" / "config.json"


def test_catalog_lists_every_bundled_config() -> None:
    ids = [e.model_id for e in catalog.entries()]
    assert len(ids) == 24
    assert "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16" in ids
    assert catalog.lookup("NVIDIA/nvidia-nemotron-3-nano-30b-a3b-bf16") is not None


def test_catalog_local_dir_and_file_agree(tmp_path: Path) -> None:
    by_id = load_model("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16")
    shutil.copy(NANO_JSON, tmp_path / "config.json")
    by_dir = load_model(str(tmp_path))
    by_file = load_model(str(tmp_path / "config.json"))
    assert by_id.source == "catalog" and by_dir.source == "local"
    assert by_id.state == by_dir.state == by_file.state
    assert by_id.attention == by_dir.attention
    # TP-independent facts of the model, read from the config
    assert by_id.state is not None and by_id.attention is not None
    assert by_id.state.params == {"I": 4096, "G": 8, "H": 64, "P": 64, "N": 128, "K": 4}
    assert (by_id.attention.total_kv_heads, by_id.attention.head_size) == (2, 128)
    assert by_id.ssm_dtype_default == "float32"
    assert by_id.provenance["H"] == "mamba_num_heads"


def test_vl_wrapper_reads_text_config() -> None:
    geo = load_model("Qwen/Qwen3.5-397B-A17B")
    assert geo.model_type == "qwen3_5_moe_text"
    assert geo.provenance["Hv"] == "text_config.linear_num_value_heads"
    assert geo.ssm_dtype_default == "float32"  # text_config.mamba_ssm_dtype


def test_kimi_k3_read_as_raw_json_with_a_note() -> None:
    geo = load_model("moonshotai/Kimi-K3")
    assert geo.loader == "raw-json"
    assert geo.attention is not None and geo.attention.use_mla
    assert geo.attention.head_size == 576  # kv_lora_rank 512 + qk_rope_head_dim 64
    assert any("remote code" in note for note in geo.notes)


def test_infinity_and_transformers_special_floats_load(tmp_path: Path) -> None:
    raw = NANO_JSON.read_text(encoding="utf-8")
    data = json.loads(raw)
    data["time_step_limit"] = [0.0, {"__float__": "Infinity"}]
    (tmp_path / "config.json").write_text(
        json.dumps(data).replace('"rms_norm_eps"', '"x_inf": Infinity, "rms_norm_eps"'),
        encoding="utf-8",
    )
    parsed = read_config_json(tmp_path / "config.json")
    assert parsed["time_step_limit"][1] == float("inf")
    assert load_model(str(tmp_path)).model_type == "nemotron_h"


def test_all_attention_hybrid_is_pure_attention(tmp_path: Path) -> None:
    data = json.loads((CATALOG / "LiquidAI" / "LFM2-2.6B" / "config.json").read_text())
    data["layer_types"] = ["full_attention"] * data["num_hidden_layers"]
    (tmp_path / "config.json").write_text(json.dumps(data), encoding="utf-8")
    geo = load_model(str(tmp_path))
    assert geo.state is None and geo.attention is not None
    assert any("pure attention" in note for note in geo.notes)


@pytest.mark.parametrize(
    ("content", "error", "match"),
    [
        ("{not json", InvalidConfig, "not valid JSON"),
        ("[1, 2]", InvalidConfig, "expected a JSON object"),
        ('{"hidden_size": 8}', InvalidConfig, "model_type"),
        ('{"model_type": "bert"}', UnsupportedModel, "'bert' is not a hybrid"),
        ('{"model_type": "kimi_linear"}', InvalidConfig, "num_heads"),
    ],
)
def test_bad_configs(tmp_path: Path, content: str, error: type[Exception], match: str) -> None:
    path = tmp_path / "config.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(error, match=match):
        load_model(str(path))


def test_bad_field_value_names_the_field(tmp_path: Path) -> None:
    data = json.loads(NANO_JSON.read_text())
    data["mamba_num_heads"] = -64
    (tmp_path / "config.json").write_text(json.dumps(data))
    with pytest.raises(InvalidConfig, match="mamba_num_heads"):
        load_model(str(tmp_path))


def test_binary_file(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(InvalidConfig, match="not UTF-8"):
        load_model(str(path))


def test_missing_paths(tmp_path: Path) -> None:
    with pytest.raises(ConfigNotFound, match="no such file"):
        load_model(str(tmp_path / "nope.json"))
    with pytest.raises(ConfigNotFound, match=r"no config\.json"):
        load_model(str(tmp_path))


def test_unknown_hub_id_offline_is_a_clear_error() -> None:
    # HF_HUB_OFFLINE=1 and an empty HF_HOME (conftest): nothing is fetched
    with pytest.raises(ConfigNotFound, match="not in the Hugging Face cache"):
        load_model("some-org/some-model")
    with pytest.raises(ConfigNotFound, match="org/name"):
        load_model("not a model")


def test_user_files_are_not_modified(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    shutil.copy(NANO_JSON, path)
    before = (path.read_bytes(), path.stat().st_mtime_ns)
    load_model(str(path))
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before


def test_fields_filled_by_transformers_defaults_are_named(tmp_path: Path) -> None:
    # a bare nemotron_h config parses (the class has defaults for everything), but the
    # report must say which geometry fields were not in the file
    (tmp_path / "config.json").write_text('{"model_type": "nemotron_h"}', encoding="utf-8")
    geo = load_model(str(tmp_path))
    note = next(n for n in geo.notes if "defaults" in n)
    for key in ("mamba_num_heads", "n_groups", "ssm_state_size", "num_attention_heads"):
        assert key in note
    # a complete real config has no such note (attention_head_dim counts for head_dim)
    assert not any("defaults" in n for n in load_model("nvidia/Nemotron-H-56B-Base-8K").notes)


def test_bad_model_ssm_dtype_names_the_field(tmp_path: Path) -> None:
    data = json.loads((CATALOG / "Qwen" / "Qwen3.5-27B" / "config.json").read_text())
    data["text_config"]["mamba_ssm_dtype"] = "8"
    (tmp_path / "config.json").write_text(json.dumps(data))
    with pytest.raises(InvalidConfig, match=r"text_config\.mamba_ssm_dtype"):
        load_model(str(tmp_path))


def test_local_folder_named_like_a_bundled_model_is_flagged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "Qwen" / "Qwen3.5-27B").mkdir(parents=True)
    shutil.copy(NANO_JSON, tmp_path / "Qwen" / "Qwen3.5-27B" / "config.json")
    monkeypatch.chdir(tmp_path)
    bundled = load_model("Qwen/Qwen3.5-27B")
    assert bundled.source == "catalog" and bundled.model_type == "qwen3_5_text"
    assert any("pass ./Qwen/Qwen3.5-27B" in note for note in bundled.notes)
    assert load_model("./Qwen/Qwen3.5-27B").model_type == "nemotron_h"


def test_an_unknown_layer_letter_names_its_field(tmp_path: Path) -> None:
    """transformers' NemotronHConfig looks each ``hybrid_override_pattern`` letter up in a
    table (M, *, -, E); an ``X`` raises KeyError('X'). The refusal names the field that
    holds the value, not just ``'X'``."""
    config = json.loads(NANO_JSON.read_text())
    config["hybrid_override_pattern"] = "MXM"
    config["num_hidden_layers"] = 3
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    with pytest.raises(InvalidConfig) as err:
        load_model(str(path), use_cache=False)
    assert str(err.value) == (
        f"{path}: hybrid_override_pattern: transformers NemotronHConfig does not know the "
        "value 'X' (KeyError)"
    )
