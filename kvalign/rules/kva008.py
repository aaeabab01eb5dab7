"""KVA008: ``VLLM_SSM_CONV_STATE_LAYOUT`` differs between prefill and decode (state models).

The conv state is stored ``SD`` (default) or ``DS`` (``vllm/model_executor/layers/mamba/
mamba_utils.py`` ``get_conv_state_layout``); NIXL's Mamba transfer requires ``DS``
(``nixl/base_worker.py``). With the variable on one side only, pages are read in the wrong
layout.
"""

from __future__ import annotations

from kvalign.rules.base import Finding, GroupResult, Severity, pair_labels

CODE = "KVA008"
SEVERITY: Severity = "error"
TITLE = "VLLM_SSM_CONV_STATE_LAYOUT set on one side only"
#: the vLLM source (file and function) the rule mirrors, for ``kvalign rules``.
SOURCE = (
    "vllm/model_executor/layers/mamba/mamba_utils.py get_conv_state_layout; "
    "nixl/base_worker.py (Mamba conv transfer requires DS)"
)
#: what to change, in general (each finding's remediation gives the values).
FIX = "set VLLM_SSM_CONV_STATE_LAYOUT=DS on every prefill and decode pool"
VAR = "VLLM_SSM_CONV_STATE_LAYOUT"


def find(group: GroupResult) -> list[Finding]:
    """One finding per pair of a model with state layers whose effective layouts differ."""
    out: list[Finding] = []
    for outcome in group.pairs:
        if outcome.prefill.geometry.state is None:
            continue
        p_raw = outcome.prefill.pool.env_value(VAR)
        d_raw = outcome.decode.pool.env_value(VAR)
        if (p_raw or "SD").upper() == (d_raw or "SD").upper():
            continue
        out.append(
            Finding(
                CODE, SEVERITY, pair_labels(outcome), outcome.decode.pool.location,
                f"{VAR} is {p_raw or 'unset (SD)'} on prefill, {d_raw or 'unset (SD)'} on decode",
                f"set {VAR}=DS on every prefill and decode pool",
            )
        )  # fmt: skip
    return out
