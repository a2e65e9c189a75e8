#!/usr/bin/env bash
# End-to-end figures of branching and merging a large grid over HTTP, on a release build:
# seeds RECORDS records x 12 columns with loadtest, then times
#   - POST /v1/branches (the answer comes once the copy's WAL position is durable),
#   - the server's resident memory before and after the branch, and once quiet after the merge
#     against once quiet after seeding,
#   - the merge of the branch into master after 1% of the cells changed on each side (deDE
#     cells of RECORDS*12/100 records per side, half of them the same cells), from the POST to
#     the task reading successful.
# Usage: loadtest/scripts/branch-merge.sh   (RECORDS=1000000 by default; needs curl and jq)
set -euo pipefail
cd "$(dirname "$0")/../.."
RECORDS=${RECORDS:-1000000}
PORT=${PORT:-18090}
KEY=branch-merge-bench-key-0123456789
U=http://127.0.0.1:$PORT
H="Authorization: ApiKey $KEY"
J='Content-Type: application/json'
DIR=$(mktemp -d)
cargo build --release -q -p gridd -p loadtest
target/release/gridd --bind 127.0.0.1:$PORT --data-dir "$DIR/data" --api-key $KEY \
  --log-level warn &
PID=$!
trap 'kill $PID 2>/dev/null; wait $PID 2>/dev/null; rm -rf "$DIR"' EXIT
until curl -sf $U/healthz >/dev/null; do sleep 0.1; done

ms() { date +%s%3N; }
rss_mib() { awk '/VmRSS/ {print int($2 / 1024)}' /proc/$PID/status; }
# Resident memory once the server is quiet: its threads give freed memory back after a second
# without requests (src/worker_memory.rs; the snapshot thread when its image is written).
settled_mib() { sleep 3; rss_mib; }
# Heap by branch and part, in MiB (a chunk two branches share counts in each).
heap_mib() {
  curl -s -H "$H" $U/metrics | awk -F'[{}]' '/^gridd_branch_heap_bytes\{/ {
      n = split($2, kv, ","); b = ""; p = ""
      for (i = 1; i <= n; i++) { split(kv[i], f, "=\""); sub(/"$/, "", f[2])
        if (f[1] == "branch") b = f[2]; if (f[1] == "part") p = f[2] }
      printf "%s/%s %d, ", substr(b, 1, 4), p, $3 / 1048576 }'
}

target/release/loadtest --url $U --key $KEY --records "$RECORDS" --keep-grid \
  --duration 1s --warmup 0s --rate 1 >/dev/null
DB=$(curl -s -H "$H" $U/v1/databases | jq -r '.[0].id')
GRID=$(curl -s -H "$H" "$U/v1/grids?dbId=$DB" | jq -r '.[-1].id')
VIEW=$(curl -s -H "$H" "$U/v1/grids/$GRID" | jq -r .defaultAccessViewId)
SEEDED=$(settled_mib)
echo "seeded $RECORDS records; resident memory $SEEDED MiB once quiet; heap by part: $(heap_mib)"

start=$(ms)
BRANCH=$(curl -sf -H "$H" -H "$J" -X POST "$U/v1/branches?branchId=$GRID" -d '{"name":"bench"}')
echo "POST /v1/branches: $(($(ms) - start)) ms; resident memory after it $(rss_mib) MiB"
BVIEW=$(echo "$BRANCH" | jq -r .defaultAccessViewId)
BID=$(echo "$BRANCH" | jq -r .id)

# 1% of the cells of each side: RECORDS*12/100 deDE cells, in pages of 1000 records spread
# over the grid; master's pages are shifted by half a page, so half the cells are the same.
PAGES=$((RECORDS * 12 / 100 / 1000))
STRIDE=$((RECORDS / PAGES))
edit() { # view, shift, label
  for ((i = 0; i < PAGES; i++)); do
    local page="{\"offset\":$((i * STRIDE + $2)),\"limit\":1000}"
    curl -s -G -H "$H" "$U/v1/views/$1/records" --data-urlencode "page=$page" \
      --data-urlencode 'columnIds=deDE' |
      jq -c --arg l "$3" '[.[] | {id, cells: [{columnId: "deDE", value: ($l + " " + .id)}]}]' |
      curl -sf -o /dev/null -H "$H" -H "$J" -X PATCH "$U/v1/views/$1/records" -d @-
  done
}
start=$(ms)
edit "$BVIEW" 0 branch
edit "$VIEW" 500 master
echo "edited $((PAGES * 1000)) cells on each side in $(($(ms) - start)) ms"

start=$(ms)
TASK=$(curl -sf -H "$H" -X POST \
  "$U/v1/branches/$BID/merge?destinationBranchId=$GRID&mergeRecordOptions=add,update,delete" |
  jq -r .id)
until [ "$(curl -s -H "$H" $U/v1/tasks/$TASK | jq -r .status)" != running ]; do sleep 0.02; done
echo "merge: $(($(ms) - start)) ms, task $(curl -s -H "$H" $U/v1/tasks/$TASK | jq -c '{status, error}')"
echo "resident memory at the end $(rss_mib) MiB; heap by part: $(heap_mib)"
END=$(settled_mib)
echo "resident memory once quiet $END MiB: $(awk -v e="$END" -v s="$SEEDED" 'BEGIN {printf "%.2f", e / s}')x the seeded grid's"
