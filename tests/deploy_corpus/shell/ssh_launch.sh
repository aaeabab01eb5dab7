#!/bin/bash
# S6 (positive): ssh HOST "cmd" runs cmd on HOST; the double-quoted command is expanded here
# first (MODEL, TP): prefill TP 2 on node-a, decode TP 2 on node-b.
MODEL=tiiuae/Falcon-H1-0.5B-Base
TP=2
ssh -p 2222 -o StrictHostKeyChecking=no node-a "vllm serve $MODEL -tp $TP --kv-transfer-config '{\"kv_connector\":\"NixlConnector\",\"kv_role\":\"kv_producer\"}'" &
ssh node-b "vllm serve $MODEL -tp $TP --kv-transfer-config '{\"kv_connector\":\"NixlConnector\",\"kv_role\":\"kv_consumer\"}'"
