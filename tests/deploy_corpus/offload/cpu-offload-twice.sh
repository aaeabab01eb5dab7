#!/bin/bash
# Q5 (positive): two kv_both servers of one model whose connectors offload KV blocks to CPU
# memory (vLLM's OffloadingConnector; LMCache without its P/D mode): neither can send KV to
# another instance, so they are standalone servers (their own rules run), not a P/D pair
# whose roles are unknown.
MODEL=nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16
CUDA_VISIBLE_DEVICES=0 vllm serve $MODEL --port 8100 \
    --kv-transfer-config '{"kv_connector":"OffloadingConnector","kv_role":"kv_both","kv_connector_extra_config":{"num_cpu_blocks":4096}}' &
CUDA_VISIBLE_DEVICES=1 LMCACHE_CHUNK_SIZE=256 vllm serve $MODEL --port 8200 \
    --kv-transfer-config '{"kv_connector":"LMCacheConnectorV1","kv_role":"kv_both"}' &
wait
