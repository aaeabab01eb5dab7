#!/bin/bash
# B5 (negative): docker run of another engine's image: no vLLM pool (a script with no vLLM
# launch is no deployment).
docker run --gpus all lmsysorg/sglang:latest python3 -m sglang.launch_server --model-path x
