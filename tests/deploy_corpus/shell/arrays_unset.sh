#!/bin/bash
# S2 (negative): "${SERVE_ARGS[@]}" of an array the script never sets (it comes from the
# caller's environment, which bash does not pass as an array): unresolved, named as written.
MODEL=tiiuae/Falcon-H1-0.5B-Base
# prefill
vllm serve "$MODEL" "${SERVE_ARGS[@]}" --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_producer"}' &
# decode
vllm serve "$MODEL" -tp 2 --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_consumer"}'
