#!/bin/bash
# B5 (positive): the image-entrypoint form (the image runs `vllm serve`); the tag gives the
# release profile (C1).
MODEL=tiiuae/Falcon-H1-0.5B-Base
# prefill node
docker run -d --gpus all --ipc=host -p 8100:8000 -v ~/.cache/huggingface:/root/.cache/huggingface \
  -e HF_TOKEN=$HF_TOKEN vllm/vllm-openai:v0.32.1 $MODEL --tensor-parallel-size 2 \
  --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_producer"}'
# decode node
docker run -d --gpus all --ipc=host -p 8200:8000 vllm/vllm-openai:v0.32.1 $MODEL \
  --tensor-parallel-size 2 --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_consumer"}'
