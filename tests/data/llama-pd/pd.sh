#!/bin/sh
# a plain Llama prefill/decode pair over NIXL: attention-only, nothing to align
vllm serve tests/data/llama-pd/model --tensor-parallel-size 8 \
  --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_producer"}' &
vllm serve tests/data/llama-pd/model --tensor-parallel-size 1 \
  --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_consumer"}' &
