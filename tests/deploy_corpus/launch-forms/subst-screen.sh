#!/bin/bash
# Q2 (positive): a launch inside a command substitution run in the background, and one in
# a detached screen session: each is a launch, read as a pair. Both at --block-size 1056:
# `kvalign check MODEL --prefill-tp 4 --decode-tp 1 --block-size 1056` fails (ratio: the
# decode kernel block is 2112 = 2 x 1056).
MODEL=nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16
PREFILL_LOG=$(vllm serve $MODEL --port 8100 --tensor-parallel-size 4 --block-size 1056 \
  --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_producer"}') &
screen -dmS decode vllm serve $MODEL --port 8200 --block-size 1056 \
  --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_consumer"}'
