#!/bin/bash
# B1 (negative): only the port differs between the branches: one pool per command.
MODEL=tiiuae/Falcon-H1-0.5B-Base
if [ -n "$SLURM_JOB_ID" ]; then
  PORT=9100
else
  PORT=8100
fi
vllm serve $MODEL --port $PORT --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_producer"}' &
vllm serve $MODEL --port 8200 --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_consumer"}'
