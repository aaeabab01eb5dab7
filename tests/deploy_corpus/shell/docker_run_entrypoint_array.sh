#!/bin/bash
# S7 (negative): the image is not vLLM's (llm-d's CUDA base), so its entrypoint is not
# vllm serve; the options array sets --entrypoint vllm, and the words after the image are
# "serve MODEL …": read, with no release taken from the image (default profile).
MODEL=tiiuae/Falcon-H1-0.5B-Base
opts=(--rm --entrypoint vllm -e VLLM_LOGGING_LEVEL=INFO)
# prefill
docker run "${opts[@]}" ghcr.io/llm-d/llm-d-cuda:v0.4.0 serve $MODEL -tp 2 --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_producer"}' &
# decode
docker run "${opts[@]}" ghcr.io/llm-d/llm-d-cuda:v0.4.0 serve $MODEL -tp 2 --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_consumer"}'
