"""kvalign's own deployment schema (kvalign/deploy/own.py) pinned where a wrong rule changes
the answer, for its mutants (tests/mutation/run.py own).

The schema is kvalign's own (the module docstring and docs/inputs.md are its definition):
every expected value is read by hand off the YAML written in each test (its lines, its
fields) and that definition: a block's ``gpu`` / ``model`` win over the top level's, one
entry is named after its role and several ``ROLE-INDEX``, unknown keys are warned about
at their line, ``tp`` / ``dp`` / ``router.block_size`` are positive integers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from kvalign.deploy.interface import Source
from kvalign.deploy.model import ComponentBlockSize, DeploymentKey, Location, Problem
from kvalign.deploy.own import Reader, matches, read
from kvalign.errors import InvalidConfig

FALCON = "tiiuae/Falcon-H1-0.5B-Base"

FULL = f"""\
model: {FALCON}
name: pd
vllm_version: "0.33.0"
gpu: h100
extra: 1
prefill: {{tp: 2, dp: 3, args: "--block-size 64", env: {{B: 2, A: x}}}}
decode:
  - {{tp: 4, args: ["--block-size", 64], gpu: H200, color: red}}
  - {{name: d2, model: ./weights}}
router:
  block_size: 64
"""


def _read(text: str, base: Path | None = None) -> Any:
    return read(yaml.safe_load(text), text, "x.yaml", base)


def test_the_whole_schema() -> None:
    found = _read(FULL)
    pools = [
        (p.role, p.name, p.model, p.tp, p.dp, p.location, p.env, p.role_source, p.settings.gpu,
         p.settings.vllm_version, p.settings.block_size)
        for p in found.pools
    ]  # fmt: skip
    assert pools == [
        # line 6: prefill; its env sorted, values as strings; the top-level gpu (h100 → H100)
        ("prefill", "prefill", FALCON, 2, 3, Location("x.yaml", 6), (("A", "x"), ("B", "2")),
         "field", "H100", "0.33.0", 64),
        # line 7: decode, two entries: decode-0 (its own gpu wins), and d2 by its name with
        # its own model (stdin-like: no base folder, so the path stays as written)
        ("decode", "decode-0", FALCON, 4, 1, Location("x.yaml", 7), (), "field", "H200",
         "0.33.0", 64),
        ("decode", "d2", "./weights", 1, 1, Location("x.yaml", 7), (), "field", "H100",
         "0.33.0", None),
    ]  # fmt: skip
    assert {p.deployment_key for p in found.pools} == {DeploymentKey("kvalign name", "pd")}
    assert found.problems == (
        Problem(
            Location("x.yaml", 5),
            "extra: not a kvalign field (known: decode, gpu, model, name, prefill, router, "
            "vllm_version); ignored",
            blocking=False,
        ),
        Problem(
            Location("x.yaml", 8),
            "decode.color: not a kvalign field (known: args, dp, env, gpu, model, name, tp); "
            "ignored",
            blocking=False,
        ),
    )
    # router block_size at line 11 (the block_size: after router: on line 10)
    assert found.components == (
        ComponentBlockSize("router block_size", 64, Location("x.yaml", 11)),
    )
    assert (found.kind, found.source, found.vllm_version) == ("kvalign", "x.yaml", "0.33.0")


def test_the_smallest_document() -> None:
    text = f"model: {FALCON}\nprefill: {{}}\ndecode: {{}}\n"
    found = _read(text)
    assert [
        (p.role, p.name, p.tp, p.dp, p.settings.gpu, p.deployment_key) for p in found.pools
    ] == [
        ("prefill", "prefill", 1, 1, None, None),
        ("decode", "decode", 1, 1, None, None),
    ]
    assert (found.problems, found.components, found.vllm_version) == ((), (), None)
    # a router block without block_size adds nothing
    assert _read(text + "router: {}\n").components == ()
    assert _read(text + "router: 64\n").components == ()


def test_a_half_deployment_with_a_name() -> None:
    found = _read(f"model: {FALCON}\nname: pd\ndecode: {{tp: 2}}\n")
    assert [(p.role, p.tp) for p in found.pools] == [("decode", 2)]


@pytest.mark.parametrize(
    ("doc", "taken"),
    [
        ({"model": "m", "prefill": {}, "decode": {}}, True),
        ({"model": "m", "prefill": [], "decode": {}}, True),
        ({"model": "m", "name": "n", "decode": {}}, True),
        ({"model": "m", "decode": {}}, False),  # half, with no name to pair it by
        ({"prefill": {}, "decode": {}}, False),  # no model
        ({"model": "m", "modelArtifacts": {}, "prefill": {}, "decode": {}}, False),  # llm-d
        ({"model": "m", "prefill": "x", "decode": {}}, False),
        ({"model": "m", "name": "n"}, False),
        (["model"], False),
    ],
)
def test_matches(doc: Any, taken: bool) -> None:
    assert matches(doc) is taken


def test_reader_takes_one_document_only() -> None:
    one = f"model: {FALCON}\nprefill: {{}}\ndecode: {{}}\n"
    assert Reader().matches(Source(one, "x.yaml"))
    assert not Reader().matches(Source(one + "---\n" + one, "x.yaml"))
    assert [p.role for p in Reader().read(Source(one, "x.yaml")).pools] == ["prefill", "decode"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("name: ''\n", "x.yaml: name: expected a name, got ''"),
        ("model: ' '\n", "x.yaml: model: expected a model id or path, got ' '"),
        ("model: 3\n", "x.yaml: model: expected a model id or path, got 3"),
        ("gpu: Z9\n", "x.yaml: gpu: unknown GPU 'Z9' (see `kvalign audit --help` --gpu)"),
        ("prefill: {tp: 0}\n", "x.yaml: prefill.tp: expected a positive integer, got 0"),
        ("prefill: {tp: true}\n", "x.yaml: prefill.tp: expected a positive integer, got True"),
        ("prefill: {tp: '2'}\n", "x.yaml: prefill.tp: expected a positive integer, got '2'"),
        ("prefill: {dp: -1}\n", "x.yaml: prefill.dp: expected a positive integer, got -1"),
        ("prefill: [3]\n", "x.yaml: prefill: expected a mapping"),
        ("prefill: {args: 5}\n", "x.yaml: prefill.args: expected a list or a string"),
        ("prefill: {env: [A]}\n", "x.yaml: prefill.env: expected a mapping"),
        ("prefill: {model: ''}\n", "x.yaml: prefill.model: expected a model id or path, got ''"),
        ("prefill: {gpu: Z9}\n",
         "x.yaml: prefill.gpu: unknown GPU 'Z9' (see `kvalign audit --help` --gpu)"),
        ("router: {block_size: 0}\n",
         "x.yaml: router.block_size: expected a positive integer, got 0"),
    ],
)  # fmt: skip
def test_wrong_types_are_refused_with_the_field_named(text: str, message: str) -> None:
    doc = {"model": FALCON, "prefill": {}, "decode": {}, "name": "n"}
    doc.update(yaml.safe_load(text))
    with pytest.raises(InvalidConfig) as error:
        read(doc, text, "x.yaml")
    assert str(error.value) == message


def test_env_none_is_no_environment() -> None:
    found = _read(f"model: {FALCON}\nprefill: {{env: null}}\ndecode: {{env: {{}}}}\n")
    assert [p.env for p in found.pools] == [(), ()]


def test_model_paths_relative_to_the_file(tmp_path: Path) -> None:
    (tmp_path / "weights").mkdir()
    base = tmp_path / "deploy"
    base.mkdir()
    (base / "local").mkdir()
    cases = {
        "./m": str(base / "m"),  # ./ and ../ are paths whether or not they exist
        "../weights": str(tmp_path / "weights"),
        "local": str(base / "local"),  # an existing folder there wins over a Hub id
        "org/model": "org/model",  # a Hub id: no such folder
        "/abs/m": "/abs/m",
        "~/m": "~/m",
    }
    for written, located in cases.items():
        text = f"model: {FALCON}\nprefill: {{model: '{written}'}}\ndecode: {{}}\n"
        found = _read(text, base)
        assert found.pools[0].model == located, written
        top = _read(f"model: '{written}'\nprefill: {{}}\ndecode: {{}}\n", base)
        assert top.pools[1].model == located, written
    # stdin (no folder): as written
    assert _read(f"model: {FALCON}\nprefill: {{model: ./m}}\ndecode: {{}}\n").pools[0].model == (
        "./m"
    )


def test_one_is_a_positive_integer() -> None:
    text = f"model: {FALCON}\nprefill: {{tp: 1, dp: 1}}\ndecode: {{}}\nrouter: {{block_size: 1}}\n"
    found = _read(text)
    assert [(p.tp, p.dp) for p in found.pools] == [(1, 1), (1, 1)]
    assert [c.value for c in found.components] == [1]


def test_the_router_block_size_is_located_after_router() -> None:
    # a "block_size:" before router: (an env key on line 3) is not the router's (line 6)
    text = (
        f"model: {FALCON}\n"
        "prefill:\n"
        "  env: {block_size: 1}\n"
        "decode: {}\n"
        "router:\n"
        "  block_size: 64\n"
    )
    assert _read(text).components == (
        ComponentBlockSize("router block_size", 64, Location("x.yaml", 6)),
    )


def test_paths_left_as_written_even_when_they_exist_beside_the_file(tmp_path: Path) -> None:
    base = tmp_path / "deploy"
    (base / "~" / "m").mkdir(parents=True)
    (tmp_path / "weights").mkdir()
    absolute = str(tmp_path / "weights") + "/"  # an absolute path, not normalised
    for written in ("~/m", absolute):
        text = f"model: {FALCON}\nprefill: {{model: '{written}'}}\ndecode: {{}}\n"
        assert _read(text, base).pools[0].model == written
    # ../ names a path beside the file even where nothing exists yet
    text = f"model: {FALCON}\nprefill: {{model: ../missing}}\ndecode: {{}}\n"
    assert _read(text, base).pools[0].model == str(tmp_path / "missing")


def test_reader_read_passes_the_file_text_and_folder(tmp_path: Path) -> None:
    (tmp_path / "w").mkdir()
    text = f"model: {FALCON}\n\nprefill: {{model: w}}\ndecode: {{}}\n"
    found = Reader().read(Source(text, "dir/x.yaml", base=tmp_path))
    assert [(p.model, p.location) for p in found.pools] == [
        (str(tmp_path / "w"), Location("dir/x.yaml", 3)),
        (FALCON, Location("dir/x.yaml", 4)),
    ]
    assert found.source == "dir/x.yaml"


@pytest.mark.parametrize(("written", "read_as"), [("0.30", "0.3"), ("1", "1"), ("true", "True")])
def test_an_unquoted_release_is_refused_not_read_as_another(written: str, read_as: str) -> None:
    # YAML 1.1 (PyYAML's safe_load) reads an unquoted 0.30 as the float 0.3, which names
    # another (older) release; 1 is an int and true a bool
    text = f"model: {FALCON}\nvllm_version: {written}\nprefill: {{}}\ndecode: {{}}\n"
    with pytest.raises(InvalidConfig) as error:
        read(yaml.safe_load(text), text, "x.yaml")
    assert str(error.value) == (
        f"x.yaml: vllm_version: {read_as} is not a string (an unquoted release such as 0.30 "
        'is read as a number); quote it: vllm_version: "0.30.0"'
    )
    quoted = text.replace(f"vllm_version: {written}", 'vllm_version: "0.30.0"')
    assert read(yaml.safe_load(quoted), quoted, "x.yaml").pools[0].settings.vllm_version == (
        "0.30.0"
    )
