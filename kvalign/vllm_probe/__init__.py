"""Drive a real vLLM release's own configuration code CPU-only (``kvalign verify``).

Only :mod:`kvalign.vllm_probe.run` and :mod:`kvalign.vllm_probe.boot` import vLLM, and
only when called. ``boot`` makes the code runnable without a GPU, ``releases`` holds
the per-release glue, ``run`` the shared call sequence, ``types`` the plain values.
"""

from kvalign.vllm_probe.releases import TESTED_RELEASES, in_tested_range, range_note
from kvalign.vllm_probe.types import ProbeRequest, Resolved, VllmAnswer

__all__ = [
    "TESTED_RELEASES",
    "ProbeRequest",
    "Resolved",
    "VllmAnswer",
    "in_tested_range",
    "range_note",
]
