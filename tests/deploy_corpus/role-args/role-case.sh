#!/bin/bash
# Q3 (positive): one script for both roles, `./role-case.sh decode` on the decode host. The
# no-argument run is the prefill one, but the decode branch is as real a run: each branch
# is evaluated. `kvalign check MODEL --prefill-tp 8 --decode-tp 1 --block-size 1056` fails
# (ratio: decode kernel block 2112 = 2 x 1056); reading only the default hid it.
ROLE=${1:-prefill}
MODEL=nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16
case "$ROLE" in
  prefill)
    vllm serve $MODEL --port 8100 --tensor-parallel-size 8 --block-size 1056 \
      --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_producer"}' ;;
  decode)
    vllm serve $MODEL --port 8200 --tensor-parallel-size 1 --block-size 1056 \
      --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_consumer"}' ;;
esac
