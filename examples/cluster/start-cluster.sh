#!/bin/sh
# Starts a throwaway 3-master Redis Cluster on 127.0.0.1:7000-7002 (data in a temporary directory, no
# persistence) and waits until it serves every slot. Stop it with: redis-cli -p 7000 shutdown; ... 7002.
set -eu
dir=$(mktemp -d)
for port in 7000 7001 7002; do
  redis-server --port "$port" --bind 127.0.0.1 --dir "$dir" --save '' --appendonly no --daemonize yes \
    --cluster-enabled yes --cluster-config-file "nodes-$port.conf" --cluster-require-full-coverage no \
    --logfile "$dir/$port.log"
done
sleep 1
redis-cli --cluster create 127.0.0.1:7000 127.0.0.1:7001 127.0.0.1:7002 --cluster-yes >/dev/null
until redis-cli -p 7000 cluster info | grep -q 'cluster_state:ok'; do sleep 0.2; done
echo "Redis Cluster up on 127.0.0.1:7000-7002 (files in $dir)"
