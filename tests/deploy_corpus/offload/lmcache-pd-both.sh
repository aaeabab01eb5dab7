#!/bin/bash
# Q5 (negative): the same two kv_both LMCache servers with LMCache's P/D mode on
# (LMCACHE_ENABLE_PD): they could be each other's partner, so the roles are unknown (exit 3).
MODEL=nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16
CUDA_VISIBLE_DEVICES=0 LMCACHE_ENABLE_PD=True vllm serve $MODEL --port 8100 \
    --kv-transfer-config '{"kv_connector":"LMCacheConnectorV1","kv_role":"kv_both"}' &
CUDA_VISIBLE_DEVICES=1 LMCACHE_ENABLE_PD=True vllm serve $MODEL --port 8200 \
    --kv-transfer-config '{"kv_connector":"LMCacheConnectorV1","kv_role":"kv_both"}' &
wait
