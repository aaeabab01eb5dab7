"""The AIBrix StormService reader (kvalign/deploy/aibrix.py) pinned where a wrong rule
changes the answer, for its mutants (tests/mutation/run.py aibrix).

Expected values come from AIBrix's StormService schema (``orchestration.aibrix.ai``:
``spec.template.spec.roles[]``, each with a ``name`` and a pod ``template``), KServe's
``LLMInferenceService`` ``baseRefs`` (``LLMInferenceServiceConfig`` objects by name, here
one of another file of the run), vLLM 0.33.0's flags (``--tensor-parallel-size``,
``--block-size``) and the manifests written in each test, read by hand.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kvalign.deploy.aibrix import Reader
from kvalign.deploy.interface import Source
from kvalign.deploy.model import DeploymentKey

STORM = """\
apiVersion: orchestration.aibrix.ai/v1alpha1
kind: StormService
metadata: {name: pd}
spec:
  template:
    spec:
      roles:
      - name: prefill
        template:
          spec:
            containers:
            - name: vllm
              image: vllm/vllm-openai:v0.33.0
              args: [vllm, serve, org/m, --tensor-parallel-size, "2"]
      - name: decode
        template:
          spec:
            containers:
            - name: vllm
              image: vllm/vllm-openai:v0.33.0
              args: [vllm, serve, org/m, --tensor-parallel-size, "4"]
"""

SERVICE = """\
---
apiVersion: serving.kserve.io/v1alpha1
kind: LLMInferenceService
metadata: {name: svc}
spec:
  baseRefs: [{name: remote}]
  model: {uri: hf://org/m}
"""

#: the LLMInferenceServiceConfig ``remote`` of another file of the run
REFERENCES = {
    "remote": (
        "cfgs.yaml",
        {"template": {"containers": [{"name": "main", "args": ["--block-size", "64"]}]}},
    ),
}


@pytest.mark.parametrize(
    ("file", "text", "taken"),
    [
        ("s.yaml", STORM, True),
        ("s.YML", STORM, True),
        ("-", STORM, True),  # stdin is read as YAML
        ("s.txt", STORM, False),  # not a YAML file name
        ("s.yaml", "kind: Deployment\n---\n" + STORM, True),  # any document
        ("s.yaml", "- kind: StormService\n", False),  # a list is no object
        ("s.yaml", "kind: StormServiceX\n", False),
        ("s.yaml", "kind: Deployment\n", False),
    ],
)
def test_a_stormservice_document_is_taken(file: str, text: str, taken: bool) -> None:
    assert Reader().matches(Source(text, file, Path("."))) is taken


def test_the_roles_are_read_as_pools() -> None:
    found = Reader().read(Source(STORM, "s.yaml", Path(".")))
    assert (found.kind, found.source, Reader.kind) == ("aibrix", "s.yaml", "aibrix")
    # one pool per role, its name the P/D role; TP from each role's args
    assert [(p.role, p.model, p.tp) for p in found.pools] == [
        ("prefill", "org/m", 2),
        ("decode", "org/m", 4),
    ]
    # the object's name ties the two roles together (a single-object key)
    key = DeploymentKey("StormService", "pd", single_object=True)
    assert [p.deployment_key for p in found.pools] == [key, key]


def test_the_other_files_objects_are_passed_on() -> None:
    # svc's vLLM arguments come from the config "remote" of cfgs.yaml: --block-size 64
    source = Source(STORM + SERVICE, "s.yaml", Path("."), references=REFERENCES)
    found = Reader().read(source)
    assert [p.settings.block_size for p in found.pools if p.name.startswith("svc")] == [64]
