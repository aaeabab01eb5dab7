"""Start-up failures: configurations vLLM accepts at configuration time, then fails to start.

``vllm serve`` builds its ``VllmConfig`` (sizes resolved, block size aligned) before it
builds the model and its KV-cache specs. Some releases accept a configuration there and
fail later, in the model constructor or the first forward pass. kvalign still reports the
sizes vLLM computed (they are what the start-up log prints) and marks the pool unusable
with the failure named. Each rule cites the release source it was read in.

Pure arithmetic on resolved inputs; no I/O.
"""

from __future__ import annotations

from kvalign.geometry import ModelGeometry
from kvalign.versions import Profile


def mamba_block_size_problem(
    geometry: ModelGeometry, profile: Profile, mode: str, mamba_block_size: int | None
) -> str:
    """Why ``--mamba-block-size`` crashes the engine in Mamba cache mode ``all``
    (``""`` when it does not).

    Mamba2 layers in mode ``all`` save one state per Mamba block by striding over the
    kernel's chunks, ``chunk_stride = mamba_block_size // chunk_size``
    (``vllm/model_executor/layers/mamba/mamba_mixer2.py`` ``MambaMixer2.forward``, read in
    0.27.1): a block size smaller than the chunk size gives stride 0 (a zero slice step,
    EngineCore dies on the first prefill), one that is not a multiple saves states at the
    wrong offsets. vLLM 0.27.1 does not validate it (vLLM issue 57266, PR 57278).

    Args:
        geometry: the model (only Mamba2-family state layers are affected).
        profile: the release profile (only releases with cache mode ``all``).
        mode: the Mamba cache mode vLLM settled on.
        mamba_block_size: ``--mamba-block-size`` in tokens, ``None`` when not given.
    """
    state = geometry.state
    if mamba_block_size is None or mode != "all" or state is None or state.family != "mamba2":
        return ""
    if not profile.chunk_alignment:
        return ""
    chunk = geometry.mamba_chunk_size or 2048  # ModelConfig.get_mamba_chunk_size default
    if mamba_block_size % chunk == 0:
        return ""
    return (
        f"vLLM {profile.name} fails at start-up: --mamba-block-size {mamba_block_size} is not "
        f"a multiple of the Mamba chunk size {chunk} in Mamba cache mode 'all' (MambaMixer2 "
        f"strides the saved states by mamba_block_size // chunk_size = "
        f"{mamba_block_size // chunk}; vLLM issue 57266): use a multiple of {chunk}"
    )


def stand_in_problem(
    architecture: str, stand_in: str, release: str, first_release: str | None
) -> str:
    """The start-up failure of a text-only checkpoint served by its multimodal class.

    vLLM's model registry normalises an unregistered ``…ForCausalLM`` to a registered class
    with another default suffix (``ModelRegistry._normalize_arch``,
    ``vllm/model_executor/models/registry.py``, read in 0.17.0), so the configuration
    builds and the block size is aligned; the multimodal constructor then reads
    ``config.vision_config``, which a text-only config lacks
    (``vllm/model_executor/models/qwen3_5.py``). The model-default hooks
    (``MODELS_CONFIG_MAP``) key on the checkpoint's own name, so Qwen3.5's
    ``mamba_ssm_dtype`` is not applied and the state stays in the model dtype.
    ``first_release``: the first release that registers ``architecture``.
    """
    first = first_release or "a later release"
    return (
        f"vLLM {release} fails at start-up: it registers no {architecture} (from {first}) and "
        f"runs the text-only checkpoint as the multimodal {stand_in}, which needs a "
        f"vision_config (sizes as its start-up log prints them; upgrade to vLLM {first})"
    )


def speculative_page_problem(
    model_type: str,
    profile: Profile,
    num_speculative_tokens: int,
    layer_page_bytes: int,
    padded_page_bytes: int,
) -> str:
    """Why the Mamba layers' own KV-cache spec fails vLLM's page check with speculative
    decoding (``""`` when it fits).

    From vLLM 0.17 ``MambaMixer2.get_state_shape`` gives the conv state one row per
    speculative token (``mamba_utils.py`` ``mamba2_state_shape(…, num_spec)``), while the
    state-shape functions of Falcon-H1, Granite-4.0-H and Zamba2 ignore it until 0.32
    (vLLM issues 57721 and 47635). The block size is aligned to the smaller page, and the
    layer's ``MambaSpec`` then asserts ``page_size_padded >= page_size``
    (``vllm/v1/kv_cache_interface.py``, read in 0.17.0 and 0.27.1): with enough speculative
    tokens (two or more in practice) the rows no longer fit in the padding.

    Args:
        model_type: the config's ``model_type``.
        profile: the release profile.
        num_speculative_tokens: speculative tokens.
        layer_page_bytes: the layer's per-rank state page with the speculative rows.
        padded_page_bytes: the page the block size gives (block × attention page per token).
    """
    if not num_speculative_tokens or layer_page_bytes <= padded_page_bytes:
        return ""
    return (
        f"vLLM {profile.name} fails at start-up with {num_speculative_tokens} speculative "
        f"tokens: {model_type}'s Mamba layers keep {num_speculative_tokens} more conv-state "
        f"rows ({layer_page_bytes:,} B per page) than its state-shape function sized the "
        f"block for ({padded_page_bytes:,} B padded): AssertionError page_size_padded >= "
        "page_size (vLLM issues 57721, 47635; fixed in 0.32)"
    )


def skip_layers_mamba_problem(release: str, ratio: int, first_release: str) -> str:
    """The start-up failure of a hybrid whose ``--kv-cache-dtype-skip-layers`` layers keep
    the model dtype next to a quantized KV cache, on releases before ``first_release``.

    The skipped layers' page is ``ratio`` times the quantized attention page that the
    Mamba page was padded to, so the KV-cache grouping must bring every page up to it.
    ``unify_kv_cache_spec_page_size`` (``vllm/v1/core/kv_cache_utils.py``, read in 0.19.1,
    0.20.0, 0.24.0 and 0.25.0) does that by multiplying each smaller spec's block size,
    which leaves a Mamba page as it was, and its own ``assert new_spec.page_size_bytes ==
    max_page_size`` fails; 0.26.0 pads the Mamba page instead.
    """
    return (
        f"vLLM {release} fails at start-up: the --kv-cache-dtype-skip-layers layers keep "
        f"the model dtype, a page {ratio}x the quantized attention page the Mamba page "
        "was padded to, and its unify_kv_cache_spec_page_size cannot pad a Mamba page "
        f"(AssertionError): drop the flag or upgrade to vLLM {first_release}"
    )
