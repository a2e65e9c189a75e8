#!/usr/bin/env python3
"""Does heavy work on one grid hold up other grids? (issue 16)

Starts a release gridd (GRIDD_BIN, default target/release/gridd) on a fresh data directory,
seeds grid A with RECORDS records (default 1,000,000) of multilingual text over HTTP, creates
two small grids B1 and B2 (grid actors are placed round robin over the grid threads, so one of
them shares A's thread whatever their number), then runs heavy requests on A: a formula column
over every record, a type change of that column's source, and a CSV import of every record.
While each runs, one client reads B1 and B2 in a loop; the script prints the heavy request's
time and the other grids' read latencies during it (p50, p99, max).

Usage: loadtest/scripts/heavy-isolation.py   RECORDS=1000000 GRIDD_BIN=target/release/gridd
Only the Python standard library is needed.
"""

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

KEY = "heavy-isolation-owner-key-0123456789"
RECORDS = int(os.environ.get("RECORDS", "1000000"))
BIN = os.environ.get("GRIDD_BIN", "target/release/gridd")
WORDS = ["chaîne", "文字列", "Zeichenkette", "строка", "cadena", "文字", "string", "ciąg"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Client:
    def __init__(self, base):
        self.base = base

    def call(self, method, path, body=None, content_type="application/json"):
        data = None
        if body is not None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data, method=method)
        req.add_header("Authorization", "ApiKey " + KEY)
        if data is not None:
            req.add_header("Content-Type", content_type)
        try:
            with urllib.request.urlopen(req, timeout=3600) as res:
                raw = res.read()
                return res.status, json.loads(raw) if raw else None
        except urllib.error.HTTPError as err:
            return err.code, err.read().decode()


def grid(c, name):
    status, dbs = c.call("GET", "/v1/databases")
    db = dbs[0]["id"]
    status, g = c.call("POST", f"/v1/grids?dbId={db}", {"name": name})
    assert status == 201, (status, g)
    status, views = c.call("GET", f"/v1/views?gridId={g['id']}")
    view = views[0]["id"]
    status, _ = c.call("POST", f"/v1/views/{view}/columns", {"id": "t", "name": "T", "type": "singleLine"})
    assert status == 201
    return view


def seed(c, view, n):
    def batch(start):
        recs = [{"id": f"r{i}", "cells": [{"columnId": "t",
                 "value": f"{WORDS[i % len(WORDS)]} {i} {WORDS[(i * 7) % len(WORDS)]}"}]}
                for i in range(start, min(start + 1000, n))]
        status, body = c.call("POST", f"/v1/views/{view}/records", recs)
        assert status == 201, (status, str(body)[:200])

    starts = list(range(0, n, 1000))
    lock = threading.Lock()

    def worker():
        while True:
            with lock:
                if not starts:
                    return
                s = starts.pop()
            batch(s)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * p))] if xs else float("nan")


def during(c, others, heavy):
    done = threading.Event()
    lat = []
    result = {}

    def run():
        t0 = time.perf_counter()
        result["answer"] = heavy()
        result["ms"] = (time.perf_counter() - t0) * 1000
        done.set()

    t = threading.Thread(target=run)
    t.start()
    while not done.is_set():
        for view in others:
            t0 = time.perf_counter()
            status, _ = c.call("GET", f"/v1/views/{view}/records")
            assert status == 200
            lat.append((time.perf_counter() - t0) * 1000)
    t.join()
    return result, lat


BOUNDARY = "heavy-isolation-boundary"


def import_body(n):
    """The multipart body of a CSV import of `n` records, built before the clock starts (the
    reading thread shares this process's interpreter lock)."""
    rows = "".join(f"r{i},réimporté {i} {WORDS[i % len(WORDS)]}\n" for i in range(n))
    return (f"--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.csv\"\r\n"
            f"Content-Type: text/csv\r\n\r\n_recordId,t\n{rows}\r\n--{BOUNDARY}--\r\n").encode()


def import_all(c, view, body):
    boundary = BOUNDARY
    status, task = c.call("POST", f"/v1/views/{view}/import", body,
                          f"multipart/form-data; boundary={boundary}")
    assert status == 202, (status, task)
    while True:
        status, t = c.call("GET", f"/v1/tasks/{task['id']}")
        if t["status"] != "running":
            return t["status"]
        time.sleep(0.05)


def main():
    data = tempfile.mkdtemp(prefix="heavy-isolation-")
    port = free_port()
    server = subprocess.Popen([BIN, "--data-dir", data, "--bind", f"127.0.0.1:{port}",
                               "--api-key", KEY, "--log-level", "warn"])
    try:
        c = Client(f"http://127.0.0.1:{port}")
        for _ in range(200):
            try:
                urllib.request.urlopen(c.base + "/healthz", timeout=1)
                break
            except OSError:
                time.sleep(0.1)
        a = grid(c, "A")
        others = [grid(c, "B1"), grid(c, "B2")]
        t0 = time.time()
        seed(c, a, RECORDS)
        print(f"seeded {RECORDS} records in {time.time() - t0:.1f} s", flush=True)
        body = import_body(RECORDS)
        steps = [
            ("formula column over every record", lambda: c.call(
                "POST", f"/v1/views/{a}/columns",
                {"id": "f", "name": "F", "type": "formula",
                 "formula": {"formulaText": "CONCAT(UPPER([t]), \" / \", LOWER([t]))"}})[0]),
            ("type change singleLine -> multipleLines", lambda: c.call(
                "PATCH", f"/v1/views/{a}/columns/t", {"type": "multipleLines"})[0]),
            ("CSV import of every record", lambda: import_all(c, a, body)),
        ]
        print("| heavy request on A | its time (ms) | reads of B1, B2 meanwhile | p50 (ms) | p99 (ms) | max (ms) |")
        print("|---|---|---|---|---|---|")
        for name, heavy in steps:
            result, lat = during(c, others, heavy)
            print(f"| {name} ({result['answer']}) | {result['ms']:.0f} | {len(lat)} | "
                  f"{pct(lat, 0.5):.2f} | {pct(lat, 0.99):.2f} | {max(lat):.1f} |", flush=True)
    finally:
        server.terminate()
        server.wait()
        shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
