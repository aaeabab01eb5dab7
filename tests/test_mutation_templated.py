"""The unrendered-Helm-template reader (kvalign/deploy/templated.py) pinned where a wrong
rule changes the answer, for its mutants (tests/mutation/run.py templated).

Expected values come from Helm's template syntax (``{{ … }}`` actions, rendered by
``helm template [NAME] [CHART]``), kvalign's stdin convention (``kvalign audit -`` reads
stdin), the module's documented rule (YAML or stdin holding ``{{``, unless the text before
the first ``{{`` launches vLLM as a plain command line; one blocking problem at the first
line holding ``{{``) and the files written in each test, read by hand.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kvalign.deploy.interface import Source
from kvalign.deploy.model import Deployment, Location, Problem
from kvalign.deploy.templated import HELM_HINT, Reader

HINT = "Helm template ({{ }}) not rendered: run `helm template RELEASE CHART | kvalign audit -`"


@pytest.mark.parametrize(
    ("file", "text", "taken"),
    [
        ("v.yaml", "image: {{ .Values.image }}\n", True),
        ("v.YML", "a: {{ x }}\n", True),
        ("-", "a: {{ x }}\n", True),  # stdin
        ("v.yaml", "a: { b: 1 }\n", False),  # no "{{"
        ("run.sh", "a: {{ x }}\n", False),  # no YAML name
        # a plain vLLM command line before the first "{{": a script, not a template
        ("-", "vllm serve org/m --port {{ port }}\n", False),
        # only the text before the first "{{" is looked at
        ("v.yaml", "a: {{ x }}\nvllm serve org/m\n", True),
    ],
)
def test_yaml_holding_a_template_action_is_taken(file: str, text: str, taken: bool) -> None:
    assert Reader().matches(Source(text, file, Path("."))) is taken


def test_one_blocking_problem_at_the_first_line_holding_an_action() -> None:
    assert HELM_HINT == HINT
    text = "a: 1\nb: {{ x }}\nc: {{ y }}\n"
    assert Reader().read(Source(text, "v.yaml", Path("."))) == Deployment(
        source="v.yaml",
        kind="helm-template",
        problems=(Problem(Location("v.yaml", 2), HINT, blocking=True),),
    )
    assert Reader.kind == "helm-template"


def test_the_first_line_counts_from_one() -> None:
    found = Reader().read(Source("{{ x }}\n", "-"))
    assert [p.location for p in found.problems] == [Location("-", 1)]
    # a text with no "{{" (matches never takes it): the problem has no line
    assert [p.location for p in Reader().read(Source("a\n", "-")).problems] == [Location("-", None)]
