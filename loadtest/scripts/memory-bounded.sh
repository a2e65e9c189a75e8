#!/usr/bin/env bash
# The hostile requests of issue 16 against a release gridd whose memory is bounded (2 GiB by
# default) by a cgroup: systemd-run --scope -p MemoryMax where systemd runs, else a cgroup made by
# hand (v2 memory.max, or v1 memory.limit_in_bytes). After each request: does /healthz answer
# within 2 s, is the process alive, did the cgroup OOM-kill anything, and the cgroup's peak.
#   1. 300 repeats of a column id over a 1 MiB cell (GET records and the share page)
#   2. 30,000 column creations (parallel curl), then a read timed while they are there
#   3. a huge multipart upload: 100,000 text parts and a 64 MiB text part
#   4. a zip bomb: one 1 GiB entry of zeros (about 1 MiB packed) mapped 50 times
#   5. a CSV import whose header names one column 25,000 times and has 25,000 long unknown ones
#   6. a formula that grows text (nested SUBSTITUTE doubling a cell 40 times), then a restart on
#      the same data directory (the write is in the WAL), bounded to 60 s
# Prints what each step did and a summary; exits non-zero if the server died, was OOM-killed,
# or /healthz stopped answering. Runs as root (cgroups); bounded by STEP_SECONDS per request.
# Usage: loadtest/scripts/memory-bounded.sh   MEMORY_MAX=2G STEP_SECONDS=120 STEPS=123456
#   GRIDD_BIN=target/debug/gridd (skip the release build)
set -euo pipefail
cd "$(dirname "$0")/../.."
MEMORY_MAX=${MEMORY_MAX:-2G}
STEP_SECONDS=${STEP_SECONDS:-120}
STEPS=${STEPS:-123456}
PORT=${PORT:-18094}
KEY=memory-bounded-admin-key-0123456789
U=http://127.0.0.1:$PORT
J='Content-Type: application/json'
WORK=$(mktemp -d)
DATA=$WORK/data
if [ -z "${GRIDD_BIN:-}" ]; then
  cargo build --release -q --bin gridd
  GRIDD_BIN=target/release/gridd
fi
BYTES=$(numfmt --from=iec "$MEMORY_MAX")

# --- the cgroup ---------------------------------------------------------------------------
CG=""
MODE=""
if systemd-run --scope -q -p MemoryMax="$BYTES" true 2>/dev/null; then
  MODE=systemd
elif grep -qw memory /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
  MODE=v2
  CG=/sys/fs/cgroup/gridd-bounded-$$
  mkdir "$CG"
  echo "$BYTES" >"$CG/memory.max"
  echo 0 >"$CG/memory.swap.max" 2>/dev/null || true
elif [ -d /sys/fs/cgroup/memory ]; then
  MODE=v1
  CG=/sys/fs/cgroup/memory/gridd-bounded-$$
  mkdir "$CG"
  echo "$BYTES" >"$CG/memory.limit_in_bytes"
else
  echo "no way to bound memory here (no systemd, no cgroup memory controller)" >&2
  exit 2
fi
oom_kills() {
  case $MODE in
    v2) awk '$1 == "oom_kill" {print $2}' "$CG/memory.events" ;;
    v1) awk '$1 == "oom_kill" {print $2}' "$CG/memory.oom_control" ;;
    *) echo 0 ;;
  esac
}
peak_mib() {
  case $MODE in
    v2) [ -f "$CG/memory.peak" ] && echo $(($(cat "$CG/memory.peak") / 1048576)) || echo "?" ;;
    v1) echo $(($(cat "$CG/memory.max_usage_in_bytes") / 1048576)) ;;
    *) awk '$1 == "VmHWM:" {print int($2 / 1024)}' /proc/$PID/status 2>/dev/null || echo "?" ;;
  esac
}

PID=""
start_server() { # the server, in the cgroup
  local log=$WORK/server.log
  if [ $MODE = systemd ]; then
    systemd-run --scope -q -p MemoryMax="$BYTES" -p MemorySwapMax=0 \
      "$GRIDD_BIN" --bind 127.0.0.1:$PORT --data-dir "$DATA" --api-key $KEY \
      --log-level warn >>"$log" 2>&1 &
  else
    sh -c 'echo $$ > "$1/cgroup.procs"; shift; exec "$@"' sh "$CG" \
      "$GRIDD_BIN" --bind 127.0.0.1:$PORT --data-dir "$DATA" --api-key $KEY \
      --log-level warn >>"$log" 2>&1 &
  fi
  PID=$!
  for _ in $(seq "${1:-100}"); do
    curl -sf -m 1 $U/healthz >/dev/null && return 0
    kill -0 $PID 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}
stop_server() {
  [ -n "$PID" ] && kill $PID 2>/dev/null && { timeout 30 tail --pid=$PID -f /dev/null || kill -9 $PID; }
  wait $PID 2>/dev/null || true
  PID=""
}
cleanup() {
  stop_server
  [ -n "$CG" ] && rmdir "$CG" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT

FAILED=0
SUMMARY=()
# Checks the server after a step: alive, /healthz within 2 s, OOM kills, peak.
check() { # step name
  local status=ok alive=yes health took
  kill -0 $PID 2>/dev/null || alive=no
  local t0=$(date +%s%3N)
  if curl -sf -m 2 $U/healthz >/dev/null; then
    health="$(($(date +%s%3N) - t0)) ms"
  else
    health="no answer"
    status=FAILED
  fi
  [ $alive = no ] && status=FAILED
  local kills=$(oom_kills)
  [ "${kills:-0}" != "${OOM_BEFORE:-0}" ] && status=FAILED
  local line="$1: $status (alive: $alive, /healthz: $health, OOM kills: ${kills:-0}, cgroup peak: $(peak_mib) MiB)"
  echo "  -> $line"
  SUMMARY+=("$line")
  [ $status = ok ] || FAILED=1
  OOM_BEFORE=$kills
  if [ $alive = no ]; then # the next steps need a server: start it again
    wait $PID 2>/dev/null || echo "  the server exited with status $?"
    start_server 600 || echo "  and did not come back within 60 s"
  fi
}
req() { curl -s -m "$STEP_SECONDS" -H "Authorization: ApiKey $OWNER" "$@"; }
# Runs a request and prints its status, size and time.
show() { # label curl-args...
  local label=$1
  shift
  : >"$WORK/out"
  local code
  code=$(req -o "$WORK/out" -w '%{http_code} %{size_download} %{time_total}' "$@") || true
  read -r code size took <<<"$code"
  echo "$label: ${code:-000}, ${size:-0} bytes in ${took:-?} s"
  head -c 300 "$WORK/out" 2>/dev/null | tr '\n' ' '
  echo
  if [ "${code:-000}" = 000 ] || [ "${code:-000}" -ge 500 ]; then
    echo "  -> FAILED: no answer within $STEP_SECONDS s or a server error"
    SUMMARY+=("$label: FAILED (status ${code:-000} after ${took:-?} s)")
    FAILED=1
  fi
}

echo "bounding memory with $MODE at $MEMORY_MAX ($BYTES bytes)"
start_server || { echo "the server did not start under the bound"; cat "$WORK/server.log"; exit 1; }
OOM_BEFORE=$(oom_kills)
# An enterprise company (zip uploads need a Team plan) with its owner key.
COMPANY=$(curl -sf -H "Authorization: ApiKey $KEY" -H "$J" -X POST $U/admin/v1/companies \
  -d '{"name":"bounded","tier":"enterprise"}')
OWNER=$(echo "$COMPANY" | jq -r .ownerKey)
DB=$(echo "$COMPANY" | jq -r .databaseId)
new_grid() { # name -> "grid view"
  req -H "$J" -X POST "$U/v1/grids?dbId=$DB" -d "{\"name\":\"$1\",\"columns\":[
    {\"id\":\"t\",\"name\":\"t\",\"type\":\"multipleLines\"},
    {\"id\":\"fl\",\"name\":\"fl\",\"type\":\"files\"}]}" | jq -r '.id + " " + .defaultAccessViewId'
}

read -r GRID VIEW <<<"$(new_grid hostile)" # steps 1, 3, 4 and 5 write here

if [[ $STEPS == *1* ]]; then
echo "== 1. 300 repeats of a column id over a 1 MiB cell"
python3 -c 'import json; print(json.dumps([{"id": "r1", "cells": [{"columnId": "t", "value": "x" * (1 << 20)}]}]))' >"$WORK/big.json"
show "write a 1 MiB cell" -H "$J" -X POST --data-binary @"$WORK/big.json" $U/v1/views/$VIEW/records
IDS=$(printf 't,%.0s' $(seq 300))
show "GET records with 300 x t" "$U/v1/views/$VIEW/records?columnIds=${IDS%,}"
TOKEN=$(req -H "$J" -X PUT $U/v1/views/$VIEW/shares -d '{}' | jq -r .link | sed 's#.*/share/##')
show "share page records with 300 x t" "$U/share/$TOKEN/records?columnIds=${IDS%,}"
check "300 repeated column ids"
fi

if [[ $STEPS == *2* ]]; then
echo "== 2. 30,000 column creations"
read -r GRID2 VIEW2 <<<"$(new_grid columns)"
{
  for i in $(seq 30000); do
    printf 'next\nsilent\nurl = "%s"\nrequest = "POST"\nheader = "%s"\nheader = "Authorization: ApiKey %s"\ndata = "{\\"id\\":\\"c%d\\",\\"name\\":\\"c%d\\",\\"type\\":\\"singleLine\\"}"\noutput = "/dev/null"\nwrite-out = "%%{http_code}\\n"\n' \
      "$U/v1/views/$VIEW2/columns" "$J" "$OWNER" "$i" "$i"
  done
} | tail -n +2 >"$WORK/columns.curl"
t0=$(date +%s)
timeout $((STEP_SECONDS * 5)) curl -s -Z --parallel-max 4 -m 30 -K "$WORK/columns.curl" 2>/dev/null |
  sort | uniq -c | awk '{printf "  %s x %s\n", $1, $2}' || echo "  stopped by the time bound"
echo "  took $(($(date +%s) - t0)) s"
show "GET records of that grid" "$U/v1/views/$VIEW2/records?page=%7B%22limit%22%3A1%7D"
check "30k column creations"
fi

if [[ $STEPS == *3* ]]; then
echo "== 3. a huge multipart upload"
python3 - "$WORK/multipart.body" <<'PY'
import sys
with open(sys.argv[1], "wb") as out:
    for i in range(100_000):
        out.write(b"--B\r\nContent-Disposition: form-data; name=\"x%d\"\r\n\r\nv\r\n" % i)
    out.write(b"--B\r\nContent-Disposition: form-data; name=\"recordId\"\r\n\r\n")
    chunk = b"r" * (1 << 20)
    for _ in range(64):
        out.write(chunk)
    out.write(b"\r\n--B--\r\n")
PY
show "POST files, 100k text parts + 64 MiB part ($(stat -c %s "$WORK/multipart.body") bytes)" \
  -H 'Content-Type: multipart/form-data; boundary=B' --data-binary @"$WORK/multipart.body" \
  $U/v1/views/$VIEW/files
rm -f "$WORK/multipart.body"
check "huge multipart"
fi

if [[ $STEPS == *4* ]]; then
echo "== 4. a zip bomb"
python3 - "$WORK/bomb.zip" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1], "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
    with z.open("bomb.bin", "w", force_zip64=True) as entry:
        zeros = bytes(1 << 20)
        for _ in range(1024):
            entry.write(zeros)
PY
MAPPING=$(python3 -c 'import json; print(json.dumps({"r1": ["bomb.bin"] * 50}))')
show "POST files/zip, 1 GiB entry in $(stat -c %s "$WORK/bomb.zip") bytes, mapped 50 times" \
  -F file=@"$WORK/bomb.zip" -F columnId=fl -F "fileMappings=$MAPPING" $U/v1/views/$VIEW/files/zip
check "zip bomb"
fi

if [[ $STEPS == *5* ]]; then
echo "== 5. a CSV import with a huge header"
python3 - "$WORK/header.csv" <<'PY'
import sys
with open(sys.argv[1], "w") as out:
    # 25,000 columns all named "t" (one target) and 25,000 long unknown names.
    header = ["t"] * 25_000 + ["column_%05d_%s" % (i, "h" * 1000) for i in range(25_000)]
    out.write(",".join(header) + "\n")
    for r in range(3):
        out.write(",".join("v%d" % r for _ in header) + "\n")
PY
TASK=$(req -F file=@"$WORK/header.csv" $U/v1/views/$VIEW/import | tee "$WORK/out" | jq -r '.id // empty')
echo "  import of $(stat -c %s "$WORK/header.csv") bytes: $(head -c 200 "$WORK/out")"
if [ -n "$TASK" ]; then
  for _ in $(seq $((STEP_SECONDS * 2))); do
    [ "$(req $U/v1/tasks/$TASK | jq -r .status)" != running ] && break
    sleep 0.5
  done
  show "the task" $U/v1/tasks/$TASK
fi
check "huge CSV header"
fi

if [[ $STEPS == *6* ]]; then
echo "== 6. a formula that grows text"
FORMULA='[t]'
for _ in $(seq 40); do FORMULA="SUBSTITUTE($FORMULA, \"x\", \"xx\")"; done
read -r GRID3 VIEW3 <<<"$(new_grid formula)"
show "write a record" -H "$J" -X POST $U/v1/views/$VIEW3/records \
  -d '[{"id":"r1","cells":[{"columnId":"t","value":"x"}]}]'
show "create the formula column (40 doublings)" -H "$J" -X POST $U/v1/views/$VIEW3/columns \
  -d "{\"id\":\"f\",\"name\":\"f\",\"type\":\"formula\",\"formula\":{\"formulaText\":\"${FORMULA//\"/\\\"}\"}}"
for _ in $(seq "$STEP_SECONDS"); do # the work may go on after the request gave up
  kill -0 $PID 2>/dev/null || break
  [ "$(oom_kills)" != "$OOM_BEFORE" ] && break
  sleep 1
done
check "growing formula"
echo "  restart on the same data directory (replays the WAL), at most 60 s"
stop_server
OOM_BEFORE=$(oom_kills)
if start_server 600; then
  check "restart after the growing formula"
else
  echo "  -> the server did not answer within 60 s of its restart"
  SUMMARY+=("restart after the growing formula: FAILED (no /healthz within 60 s, OOM kills: $(oom_kills))")
  FAILED=1
fi
fi

echo
echo "summary (memory bound $MEMORY_MAX via $MODE):"
printf '  %s\n' "${SUMMARY[@]}"
exit $FAILED
