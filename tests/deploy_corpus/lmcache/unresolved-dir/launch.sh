#!/bin/bash
# B3 (negative): the config folder comes from a command kvalign cannot run: the LMCache file is
# not looked up, and a note says why (chunk_size not checked); the pools are evaluated.
CONFIG_DIR=$(git rev-parse --show-toplevel)/lmcache
MODEL=tiiuae/Falcon-H1-0.5B-Base
LMCACHE_CONFIG_FILE=$CONFIG_DIR/prefill.yaml vllm serve $MODEL --port 8100 \
    --kv-transfer-config '{"kv_connector":"LMCacheConnectorV1","kv_role":"kv_producer"}' &
LMCACHE_CONFIG_FILE=$CONFIG_DIR/decode.yaml vllm serve $MODEL --port 8200 \
    --kv-transfer-config '{"kv_connector":"LMCacheConnectorV1","kv_role":"kv_consumer"}'
