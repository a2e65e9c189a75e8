#!/bin/bash
# Text filters end to end against a gridd server in its own process: starts BIN on a fresh data
# directory (port 8098), seeds loadtest's 1M-record grid (seed 42: the same records for every
# binary), then per case 3 warm-up requests and 40 timed ones with curl (p50/p90 ms, page of
# 100). Needs a release build of loadtest (`cargo build --release -p loadtest`).
# usage: docs/perf/issue-18/text_filters_ab.sh BIN label
BIN=$1; L=$2; D=$(mktemp -d /tmp/ab18-$L.XXXX)
LOADTEST="$(dirname "$0")/../../../target/release/loadtest"
$BIN --data-dir $D --bind 127.0.0.1:8098 --api-key kkk --snapshot-every-records=100000000 > $D.log 2>&1 & PID=$!
sleep 1
V=$("$LOADTEST" --url http://127.0.0.1:8098 --key kkk --records 1000000 --keep-grid --mix page --rate 10 --duration 1s --warmup 1s 2>&1 | grep -o "view [a-z0-9]*" | awk '{print $2}')
sleep 5
for q in '{"enUS": {"contains": "please "}}' '{"ruRU": {"contains": "НАСТРОЙКИ"}}' '{"enUS": {"regexp": "^please .* again$"}}' '{"deDE": {"regexp": "Datei.+nicht"}}' '{"enUS": {"regexp": "^please "}}' '{"enUS": {"regexp": "please"}}' '{"enUS": {"regexp": "again$"}}' '{"enUS": {"regexp": "\\bagain\\b"}}'; do
  for i in 1 2 3; do curl -s -o /dev/null -G -H 'Authorization: ApiKey kkk' "http://127.0.0.1:8098/v1/views/$V/records" --data-urlencode "query=$q" --data-urlencode 'page={"offset":0,"limit":100}'; done
  R=$(for i in $(seq 40); do curl -s -o /dev/null -w '%{time_total}\n' -G -H 'Authorization: ApiKey kkk' "http://127.0.0.1:8098/v1/views/$V/records" --data-urlencode "query=$q" --data-urlencode 'page={"offset":0,"limit":100}'; done | sort -n | awk '{a[NR]=$1} END {printf "p50 %.2f p90 %.2f", a[int(NR/2)]*1000, a[int(NR*0.9)]*1000}')
  echo "$L | $q | $R"
done
kill $PID; wait $PID 2>/dev/null; rm -rf $D
