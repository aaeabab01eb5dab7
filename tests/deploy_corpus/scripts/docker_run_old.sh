#!/bin/bash
# C1 (positive): an old vLLM image: its own release profile (0.14) is used, not the newest;
# the assumptions say it came from the image (--vllm-version overrides it).
docker run --gpus all vllm/vllm-openai:v0.14.0 tiiuae/Falcon-H1-0.5B-Base \
  --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_producer"}'
docker run --gpus all vllm/vllm-openai:v0.14.0 tiiuae/Falcon-H1-0.5B-Base \
  --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_consumer"}'
