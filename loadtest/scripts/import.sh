#!/usr/bin/env bash
# End-to-end figures of CSV import and export over HTTP, on a release build: seeds RECORDS
# records x 12 columns with loadtest, exports the view as CSV (timed), imports that file into a
# new grid with the same columns (timed from the POST to the task reading successful), and
# reports the server's peak resident memory (VmHWM) around each step.
# Usage: loadtest/scripts/import.sh   (RECORDS=100000 by default; needs curl and jq)
set -euo pipefail
cd "$(dirname "$0")/../.."
RECORDS=${RECORDS:-100000}
PORT=${PORT:-18091}
KEY=import-bench-key-0123456789
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
mib() { awk -v k="$1:" '$1 == k {print int($2 / 1024)}' /proc/$PID/status; }

target/release/loadtest --url $U --key $KEY --records "$RECORDS" --keep-grid \
  --duration 1s --warmup 0s --rate 1 >/dev/null
DB=$(curl -s -H "$H" $U/v1/databases | jq -r '.[0].id')
GRID=$(curl -s -H "$H" "$U/v1/grids?dbId=$DB" | jq -r '.[-1].id')
VIEW=$(curl -s -H "$H" "$U/v1/grids/$GRID" | jq -r .defaultAccessViewId)
echo "seeded $RECORDS records; resident $(mib VmRSS) MiB, peak $(mib VmHWM) MiB"

start=$(ms)
curl -sf -H "$H" -o "$DIR/export.csv" "$U/v1/views/$VIEW/export"
took=$(($(ms) - start))
echo "export: $(stat -c %s "$DIR/export.csv") bytes in $took ms ($((RECORDS * 1000 / (took + 1))) rows/s); peak $(mib VmHWM) MiB"

COPY=$(curl -sf -H "$H" -H "$J" -X POST "$U/v1/grids?dbId=$DB" \
  -d "{\"name\":\"imported\",\"templateGridId\":\"$GRID\"}" | jq -r .defaultAccessViewId)
start=$(ms)
TASK=$(curl -sf -H "$H" -F "file=@$DIR/export.csv" "$U/v1/views/$COPY/import" | jq -r .id)
until [ "$(curl -s -H "$H" $U/v1/tasks/$TASK | jq -r .status)" != running ]; do sleep 0.05; done
took=$(($(ms) - start))
echo "import: $(curl -s -H "$H" $U/v1/tasks/$TASK | jq -c '{status, error}') in $took ms ($((RECORDS * 1000 / (took + 1))) rows/s); resident $(mib VmRSS) MiB, peak $(mib VmHWM) MiB"
COUNT=$(curl -s -D - -o /dev/null -H "$H" "$U/v1/views/$COPY/records" | awk 'tolower($1) == "x-total-count:" {print $2}' | tr -d '\r')
echo "records in the imported grid: $COUNT"
