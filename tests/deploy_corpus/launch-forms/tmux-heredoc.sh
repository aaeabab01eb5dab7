#!/bin/bash
# Q2 (positive): the prefill server started in a detached tmux session, the decode server
# in a here-document fed to bash: both are launches bash runs, read as a pair.
MODEL=nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16
tmux new -d -s prefill "vllm serve $MODEL --port 8100 --tensor-parallel-size 8 --block-size 2096 --kv-transfer-config '{\"kv_connector\":\"NixlConnector\",\"kv_role\":\"kv_producer\"}'"
CUDA_VISIBLE_DEVICES=7 bash <<'EOF_DECODE'
vllm serve nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16 --port 8200 --block-size 2096 \
  --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_consumer"}'
EOF_DECODE
