#!/bin/bash
# S9 (positive): Dynamo's launcher modules (python -m dynamo.vllm.unified_main and
# python -m dynamo.vllm). The worker with --is-prefill-worker is prefill; the other worker
# of the pair, with no role flag, is decode (Dynamo's disaggregated layout).
MODEL=tiiuae/Falcon-H1-0.5B-Base
python -m dynamo.frontend --http-port 8000 &
CUDA_VISIBLE_DEVICES=0,1 python3 -m dynamo.vllm.unified_main --model $MODEL -tp 2 &
CUDA_VISIBLE_DEVICES=2,3 python3 -m dynamo.vllm --model $MODEL -tp 2 --is-prefill-worker
