#!/bin/bash
# S4 (negative): the guard tests a value the script itself sets (MODE=both): bash always
# takes its exit, so nothing after it runs: not evaluated (exit 3), never a pass.
MODE=both
if [ "$MODE" != prefill ] && [ "$MODE" != decode ]; then
  echo "MODE must be prefill or decode"
  exit 1
fi
MODEL=tiiuae/Falcon-H1-0.5B-Base
# prefill
vllm serve $MODEL -tp 2 --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_producer"}' &
# decode
vllm serve $MODEL -tp 2 --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_consumer"}'
