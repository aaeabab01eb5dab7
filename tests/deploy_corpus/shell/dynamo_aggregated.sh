#!/bin/bash
# S9 (negative): one Dynamo vLLM worker and no prefill worker: an aggregated server, not
# a decode pool (no role is read, so it is no prefill/decode pool).
MODEL=tiiuae/Falcon-H1-0.5B-Base
python -m dynamo.frontend --http-port 8000 &
python3 -m dynamo.vllm --model $MODEL -tp 2
