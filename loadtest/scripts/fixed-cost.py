#!/usr/bin/env python3
"""What every request pays (issue 18): p50/p99 latency and the server's CPU per request of
`/healthz`, `GET /v1/views/<id>`, a page of one record and a page of 100, one request at a time
on one keep-alive connection (a closed loop: no queueing, so the latency is the request's own).

Starts a release gridd (GRIDD_BIN, default target/release/gridd) on a fresh data directory,
seeds a grid of 10,000 records x 12 text columns, then sends N (default 3000) GETs of each kind
after 200 to warm up. The server's CPU comes from /proc/<pid>/stat (Linux).

Usage: loadtest/scripts/fixed-cost.py   N=3000 GRIDD_BIN=target/release/gridd
Only the Python standard library is needed.
"""

import http.client
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time

BIN = os.environ.get("GRIDD_BIN", "target/release/gridd")
N = int(os.environ.get("N", "3000"))
KEY = "fixed-cost-key-0123456789"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def main():
    data = tempfile.mkdtemp(prefix="fixed-cost-")
    port = free_port()
    server = subprocess.Popen(
        [BIN, "--data-dir", data, "--bind", f"127.0.0.1:{port}", "--api-key", KEY,
         "--log-level", "error"])
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port)
        headers = {"Authorization": "ApiKey " + KEY, "Content-Type": "application/json"}

        def call(method, path, body=None):
            payload = json.dumps(body) if body is not None else None
            conn.request(method, path, body=payload, headers=headers)
            res = conn.getresponse()
            return res.status, res.read()

        for _ in range(100):
            try:
                call("GET", "/healthz")
                break
            except OSError:
                conn.close()
                time.sleep(0.05)
        _, body = call("GET", "/v1/databases")
        db = json.loads(body)[0]["id"]
        _, body = call("POST", f"/v1/grids?dbId={db}", {"name": "fixed cost"})
        view = json.loads(body)["defaultAccessViewId"]
        for k in range(12):
            call("POST", f"/v1/views/{view}/columns",
                 {"id": f"c{k}", "name": f"C{k}", "type": "singleLine"})
        for start in range(0, 10000, 1000):
            records = [{"id": f"r{i}", "cells": [{"columnId": f"c{k}", "value": f"value {i} {k}"}
                                                 for k in range(12)]}
                       for i in range(start, start + 1000)]
            status, _ = call("POST", f"/v1/views/{view}/records", records)
            assert status == 201, status

        def page(limit):
            return f"/v1/views/{view}/records?page=%7B%22offset%22%3A5000%2C%22limit%22%3A{limit}%7D"

        cases = [("/healthz", "/healthz"), ("GET /v1/views/<id>", f"/v1/views/{view}"),
                 ("page of 1", page(1)), ("page of 100", page(100))]
        for name, path in cases:
            for _ in range(200):
                call("GET", path)
            before = cpu_ticks(server.pid)
            latencies = []
            for _ in range(N):
                started = time.perf_counter()
                status, _ = call("GET", path)
                latencies.append(time.perf_counter() - started)
                assert status == 200, (path, status)
            cpu_ms = (cpu_ticks(server.pid) - before) * 10 / N
            latencies.sort()
            print(f"{name:20s} p50 {latencies[N // 2] * 1e3:.3f} ms  "
                  f"p99 {latencies[int(N * 0.99)] * 1e3:.3f} ms  server CPU {cpu_ms:.3f} ms")
    finally:
        server.terminate()
        server.wait()
        shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    main()
