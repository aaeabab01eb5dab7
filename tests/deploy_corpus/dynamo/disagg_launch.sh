#!/bin/bash
# A3 (positive): Dynamo launch script with the worker module and the launcher in variables.
set -e
trap 'echo Cleaning up...; kill 0' EXIT

MODEL="${MODEL:-"tiiuae/Falcon-H1-0.5B-Base"}"
WORKER_MODULE=dynamo.vllm
PYTHON=python3

# run ingress
$PYTHON -m dynamo.frontend --http-port=8000 &

# run decode worker
CUDA_VISIBLE_DEVICES=0 $PYTHON -m "$WORKER_MODULE" --model "$MODEL" \
    --disaggregation-mode decode &

# run prefill worker
CUDA_VISIBLE_DEVICES=1 $PYTHON -m "$WORKER_MODULE" --model "$MODEL" \
    --disaggregation-mode prefill \
    --kv-events-config '{"publisher":"zmq","topic":"kv-events","endpoint":"tcp://*:20081"}'
