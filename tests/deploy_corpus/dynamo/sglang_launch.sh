#!/bin/bash
# A3 (negative): the launcher variable names another engine: no vLLM pool.
MODULE=sglang.launch_server
python3 -m "$MODULE" --model-path tiiuae/Falcon-H1-0.5B-Base --disaggregation-mode prefill &
python3 -m "$MODULE" --model-path tiiuae/Falcon-H1-0.5B-Base --disaggregation-mode decode
