#!/usr/bin/env bash
# API fuzz run generated from the server's own /v1/openapi.json with schemathesis (pinned, in a
# venv under target/): builds a release gridd, starts it on 127.0.0.1 with a temporary data
# directory and a known admin key, seeds a project, database, grid (a column of most types),
# records and a share link, then runs two passes:
#   1. "seeded": path and query ids pinned to the seeded resources, so generated bodies and
#      parameters reach validation and the grid actors (deletes of containers are left out so
#      the grid survives the pass);
#   2. "random": every operation with generated ids and ids learnt from responses (deletes
#      included, so it runs last).
# Checks `not_a_server_error` on every response; afterwards the server must still answer
# /healthz and must not have logged a panic. Prints requests per status per pass and every 5xx
# (method, URL, body, response) and exits non-zero on any 5xx, crash or panic.
#
# Usage: loadtest/scripts/api-fuzz.sh
#   MAX_EXAMPLES=25 (per operation and pass)  FUZZ_SECONDS=600 (time bound per pass)
#   WORKERS=2  SEED=<n> (reproducible)  GRIDD_BIN=target/debug/gridd (skip the release build)
# Needs python3 (venv), curl and jq.
set -euo pipefail
cd "$(dirname "$0")/../.."
SCHEMATHESIS_VERSION=4.32.5
MAX_EXAMPLES=${MAX_EXAMPLES:-25}
FUZZ_SECONDS=${FUZZ_SECONDS:-600}
WORKERS=${WORKERS:-2}
PORT=${PORT:-18093}
KEY=api-fuzz-admin-key-0123456789
U=http://127.0.0.1:$PORT
H="Authorization: ApiKey $KEY"
J='Content-Type: application/json'
VENV=$PWD/target/api-fuzz/venv
OUT=$PWD/target/api-fuzz/run
rm -rf "$OUT"
mkdir -p "$OUT"

if [ ! -x "$VENV/bin/schemathesis" ] ||
  ! "$VENV/bin/schemathesis" --version | grep -q "$SCHEMATHESIS_VERSION"; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q "schemathesis==$SCHEMATHESIS_VERSION"
fi
if [ -z "${GRIDD_BIN:-}" ]; then
  cargo build --release -q --bin gridd
  GRIDD_BIN=target/release/gridd
fi

DATA=$(mktemp -d)
"$GRIDD_BIN" --bind 127.0.0.1:$PORT --data-dir "$DATA" --api-key $KEY --log-level warn \
  >"$OUT/server.log" 2>&1 &
PID=$!
trap 'kill $PID 2>/dev/null; wait $PID 2>/dev/null; rm -rf "$DATA"' EXIT
for _ in $(seq 100); do curl -sf $U/healthz >/dev/null && break; sleep 0.1; done

# Seed: project, database, grid with columns, records, a dependency, a share link, a task.
post() { curl -sf -H "$H" -H "$J" -X "${3:-POST}" "$U$1" -d "$2"; }
PROJECT=$(post /v1/projects '{"name":"fuzz"}' | jq -r .id)
DB=$(post "/v1/databases?projectId=$PROJECT" '{"name":"fuzz"}' | jq -r .id)
GRID_JSON=$(post "/v1/grids?dbId=$DB" '{"name":"fuzz","columns":[
  {"id":"t","name":"t","type":"singleLine"},
  {"id":"n","name":"n","type":"number"},
  {"id":"b","name":"b","type":"boolean"},
  {"id":"d","name":"d","type":"datetime"},
  {"id":"s","name":"s","type":"singleSelection","selection":{"options":[{"value":"a"},{"value":"b"}]}},
  {"id":"m","name":"m","type":"multipleSelections","selection":{"options":[{"value":"a"}]}},
  {"id":"en","name":"en","type":"language","languageCode":"enUS","localizationType":"sourceLanguage"},
  {"id":"fr","name":"fr","type":"language","languageCode":"frFR","localizationType":"targetLanguage"},
  {"id":"f","name":"f","type":"formula","formula":{"formulaText":"[t] & [n]"}},
  {"id":"fl","name":"fl","type":"files"}]}')
GRID=$(echo "$GRID_JSON" | jq -r .id)
VIEW=$(echo "$GRID_JSON" | jq -r .defaultAccessViewId)
post /v1/views/$VIEW/dependencies '{"sourceColumnId":"en","targetColumnId":"fr"}' >/dev/null
DEP=$(curl -sf -H "$H" $U/v1/views/$VIEW/dependencies | jq -r '.[0].id')
post /v1/views/$VIEW/records '[{"id":"r1","cells":[{"columnId":"t","value":"hello"},
  {"columnId":"n","value":2.5},{"columnId":"en","value":"Start"}]},{"id":"r2","cells":[]}]' >/dev/null
TOKEN=$(post /v1/views/$VIEW/shares '{"includeGridHistory":true}' PUT | jq -r '.link' | sed 's#.*/share/##')
TASK=$(post /v1/views/$VIEW/record-histories/export \
  "{\"fromTime\":\"$(date -u -d '30 days ago' +%FT%TZ)\",\"toTime\":\"$(date -u +%FT%TZ)\",\"format\":\"csv\"}" | jq -r .id)
echo "seeded project $PROJECT, database $DB, grid $GRID, view $VIEW, share $TOKEN, task $TASK"

# The seeded pass's config: every id parameter pinned to the seeded resource it names.
cat >"$OUT/seeded.toml" <<EOF
[parameters]
"path.viewId" = "$VIEW"
"path.token" = "$TOKEN"
"path.recordId" = "r1"
"path.taskId" = "$TASK"
"query.projectId" = "$PROJECT"
"query.dbId" = "$DB"
"query.gridId" = "$GRID"
"query.branchId" = "$GRID"

[[operations]]
include-method = "DELETE"
exclude-path-regex = "^/v1/views/\\\\{viewId\\\\}/(records|files|shares)$"
enabled = false

[[operations]]
include-path-regex = "^/v1/projects/"
parameters = { "path.id" = "$PROJECT" }
[[operations]]
include-path-regex = "^/v1/databases/"
parameters = { "path.id" = "$DB" }
[[operations]]
include-path-regex = "^/v1/(grids|branches)/"
parameters = { "path.id" = "$GRID" }
[[operations]]
include-path = "/v1/views/{id}"
parameters = { "path.id" = "$VIEW" }
[[operations]]
include-path-regex = "^/v1/views/\\\\{viewId\\\\}/columns/"
parameters = { "path.id" = "t" }
[[operations]]
include-path-regex = "^/v1/views/\\\\{viewId\\\\}/dependencies/"
parameters = { "path.id" = "$DEP" }
[[operations]]
include-path = "/v1/views/{viewId}/records/{id}"
parameters = { "path.id" = "r1" }
[[operations]]
include-path = "/v1/tasks/{id}"
parameters = { "path.id" = "$TASK" }
EOF
# Both passes: the run's own key must survive it (the admin key may revoke itself or delete
# its company: both succeed, and every later request would be a 401).
KEEP_KEY='
[[operations]]
include-operation-id = "revoke_key"
enabled = false
[[operations]]
include-operation-id = "delete_company"
enabled = false'
echo "$KEEP_KEY" >"$OUT/random.toml"
echo "$KEEP_KEY" >>"$OUT/seeded.toml"

status=0
run_pass() { # name config
  local name=$1 config=$2 rc=0
  echo "== pass $name: up to $MAX_EXAMPLES examples per operation, at most $FUZZ_SECONDS s"
  # From $OUT: schemathesis keeps its cache in the working directory.
  (cd "$OUT" && timeout --signal=INT "$FUZZ_SECONDS" "$VENV/bin/schemathesis" --config-file "$config" run \
    "$U/v1/openapi.json" --url "$U" -H "$H" --checks not_a_server_error \
    --max-examples "$MAX_EXAMPLES" --workers "$WORKERS" --request-timeout 30 \
    --phases examples,coverage,fuzzing,stateful ${SEED:+--seed "$SEED"} \
    --suppress-health-check all --generation-database none --no-color \
    --report har --report-har-path "$OUT/$name.har" >"$OUT/$name.log" 2>&1) || rc=$?
  tail -n 25 "$OUT/$name.log" | grep -E "passed|failed|errors?|Test cases|Operations|Seed" || true
  echo "schemathesis exit code: $rc (124 = stopped by the time bound)"
  "$VENV/bin/python" - "$OUT/$name.har" <<'PY' || status=1
import collections, json, sys
entries = json.load(open(sys.argv[1]))["log"]["entries"]
by_status = collections.Counter(e["response"]["status"] for e in entries)
print(f"requests: {len(entries)}; by status: " +
      ", ".join(f"{s}: {n}" for s, n in sorted(by_status.items())))
errors = [e for e in entries if e["response"]["status"] >= 500 or e["response"]["status"] == 0]
for e in errors[:50]:
    req, resp = e["request"], e["response"]
    body = (req.get("postData") or {}).get("text", "")[:300]
    print(f"  {resp['status']} {req['method']} {req['url'][:300]}\n    body: {body}\n"
          f"    response: {resp.get('content', {}).get('text', '')[:300]}")
sys.exit(1 if errors else 0)
PY
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && ! grep -q "not_a_server_error" "$OUT/$name.log"; then
    # A failure other than a failed check (schema, network): show it, count it.
    grep -iE "error|failed" "$OUT/$name.log" | head -n 20 || true
  fi
  grep -q "Server error" "$OUT/$name.log" && status=1
  if ! kill -0 $PID 2>/dev/null || ! curl -sf -m 5 $U/healthz >/dev/null; then
    echo "CRASH: the server is gone or /healthz does not answer after pass $name"
    status=1
  fi
}
run_pass seeded "$OUT/seeded.toml"
run_pass random "$OUT/random.toml"
if grep -n "panicked" "$OUT/server.log"; then
  echo "PANIC in the server log"
  status=1
fi
echo "logs and HAR files in $OUT"
[ $status -eq 0 ] && echo "api fuzz: no 5xx, no crash" || echo "api fuzz: FAILED"
exit $status
