#!/bin/bash
# S7 (positive): docker / podman run whose options come from an array: the image is the
# first word after them; its entrypoint is vllm serve, its tag the release (0.32.1). An
# array left empty ("${auth_args[@]}": HF_TOKEN unset) is no word at all, not the image.
MODEL=tiiuae/Falcon-H1-0.5B-Base
IMAGE=docker.io/vllm/vllm-openai:v0.32.1
docker_env_args=(-e VLLM_LOGGING_LEVEL=INFO)
docker_env_args+=(--ipc host --shm-size 16g)
auth_args=()
[ -n "$HF_TOKEN" ] && auth_args+=(-e "HF_TOKEN=$HF_TOKEN")
# prefill
docker run -d --gpus '"device=0,1"' "${docker_env_args[@]}" "${auth_args[@]}" "$IMAGE" "$MODEL" -tp 2 --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_producer"}'
# decode
podman run -d --device nvidia.com/gpu=2 "${docker_env_args[@]}" "${auth_args[@]}" "$IMAGE" "$MODEL" -tp 2 --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_consumer"}'
