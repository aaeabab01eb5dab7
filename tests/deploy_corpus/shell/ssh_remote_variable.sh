#!/bin/bash
# S6 (negative): the command is single-quoted, so $TP is expanded by the remote shell,
# which never sees this script's TP: unresolved on both hosts, named as written.
TP=2
ssh node-a 'vllm serve tiiuae/Falcon-H1-0.5B-Base -tp $TP --kv-transfer-config "{\"kv_connector\":\"NixlConnector\",\"kv_role\":\"kv_producer\"}"' &
ssh node-b 'vllm serve tiiuae/Falcon-H1-0.5B-Base -tp $TP --kv-transfer-config "{\"kv_connector\":\"NixlConnector\",\"kv_role\":\"kv_consumer\"}"'
