#!/bin/bash
# B4 (positive): redirections are not arguments, an unset $LOG_DIR in them changes nothing,
# and the log names give each command its role.
MODEL=tiiuae/Falcon-H1-0.5B-Base
vllm serve $MODEL --port 8100 -tp 2 \
  --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_both"}' > $LOG_DIR/prefill.log 2>&1 &
vllm serve $MODEL --port 8200 -tp 2 \
  --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_both"}' > $LOG_DIR/decode.log 2>&1 &
wait
