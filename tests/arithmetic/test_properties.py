"""Property tests (hypothesis) over random valid geometries and settings."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from kvalign.alignment import MLA_ALIGNMENT_FLOOR, aligned_block_size, kernel_block_size
from kvalign.backends import BACKENDS
from kvalign.geometry import AttentionGeometry, ModelGeometry, StateGeometry
from kvalign.settings import Settings
from tests.resolve import rank_of

backends = st.sampled_from(sorted(BACKENDS))


@given(
    a=st.integers(1, 1 << 16),
    m=st.integers(1, 1 << 27),
    backend_name=backends,
    block_mult=st.integers(1, 64),
    use_mla=st.booleans(),
    checkpoint=st.sampled_from([1, 64]),
    prefix=st.booleans(),
)
def test_aligned_block_covers_mamba_page_and_is_aligned(
    a: int,
    m: int,
    backend_name: str,
    block_mult: int,
    use_mla: bool,
    checkpoint: int,
    prefix: bool,
) -> None:
    backend = BACKENDS[backend_name]
    user_block = backend.min_block * block_mult  # a size the backend family accepts
    block = aligned_block_size(
        a,
        m,
        block_size=user_block,
        backend=backend,
        use_mla=use_mla,
        checkpoint=checkpoint,
        prefix_caching=prefix,
    )
    assert block * a >= m
    align = max(backend.min_block, user_block)
    if use_mla:
        align = max(align, MLA_ALIGNMENT_FLOOR)
    if prefix:
        align = math.lcm(align, checkpoint)
    assert block % align == 0
    assert block >= user_block
    kernel = kernel_block_size(block, backend)
    if kernel is not None:
        assert block % kernel == 0
        assert backend.accepts(kernel)


@st.composite
def mamba2_models(draw: st.DrawFn) -> ModelGeometry:
    groups = draw(st.sampled_from([1, 2, 4, 8]))
    heads = draw(st.sampled_from([8, 16, 32, 64, 128]))
    head_dim = draw(st.sampled_from([32, 64, 128]))
    state = draw(st.sampled_from([16, 64, 128, 256]))
    kv_heads = draw(st.sampled_from([1, 2, 4, 8]))
    return ModelGeometry(
        model_id="random",
        model_type="nemotron_h",
        architecture="",
        config_path="-",
        source="test",
        loader="test",
        model_dtype=draw(st.sampled_from(["bfloat16", "float16"])),
        attention=AttentionGeometry(32, kv_heads, draw(st.sampled_from([64, 128, 256]))),
        state=StateGeometry(
            "mamba2",
            {"I": heads * head_dim, "G": groups, "H": heads, "P": head_dim, "N": state, "K": 4},
        ),
        ssm_dtype_default=draw(st.sampled_from([None, "float32"])),
    )


@settings(max_examples=150)
@given(
    geo=mamba2_models(),
    kv=st.sampled_from(["auto", "fp8"]),
    backend=st.sampled_from(["FLASH_ATTN", "FLASHINFER", "TRITON_ATTN"]),
    block=st.sampled_from([None, 16, 32, 64]),
)
def test_tp_stable_block_equal_across_tps_when_check_passes(
    geo: ModelGeometry, kv: str, backend: str, block: int | None
) -> None:
    s = Settings(kv_cache_dtype=kv, attention_backend=backend, block_size=block)
    results = [rank_of(geo, s, tp) for tp in (1, 2, 4, 8)]
    stable = {r.tp_stable_block_size for r in results if r.valid and not r.tp_stable_grown}
    assert len(stable) <= 1
    for r in results:
        if not r.valid:
            continue
        assert r.attn_page_bytes_per_token is not None and r.mamba_page_bytes is not None
        assert r.block_size is not None and r.tp_stable_block_size is not None
        # both algorithms give a page that covers the local mamba page
        assert r.block_size * r.attn_page_bytes_per_token >= r.mamba_page_bytes
        assert r.tp_stable_block_size * r.attn_page_bytes_per_token >= r.mamba_page_bytes
        # TP-stable is never smaller than what the local rank needs
        assert r.tp_stable_block_size >= r.block_size
        if r.kernel_block_size is not None:
            assert r.block_size % r.kernel_block_size == 0
