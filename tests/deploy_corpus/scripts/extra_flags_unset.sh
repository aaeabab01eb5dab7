#!/bin/bash
# B4 (negative): an unset variable among the arguments (not in a redirection) can hold any
# flag, TP included: that pool is not evaluated.
MODEL=tiiuae/Falcon-H1-0.5B-Base
vllm serve $MODEL $PREFILL_FLAGS --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_producer"}' > prefill.log 2>&1 &
vllm serve $MODEL --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_consumer"}' > decode.log 2>&1 &
