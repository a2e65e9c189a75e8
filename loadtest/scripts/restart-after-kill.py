#!/usr/bin/env python3
"""Ingest rate, memory and restart time after SIGKILL (issue 17).

Starts a release gridd on a fresh data directory, loads N records (default 1,000,000) x 12
single-line columns of multilingual text over HTTP, 1000 records a request on 4 connections,
prints the rate, the server's RSS and its heap by part (/metrics) against the raw cell bytes,
SIGKILLs it right after the load and times the next start until /healthz answers (recovery
runs before the server listens: a WAL replay), then stops it with SIGTERM (every branch
snapshots) and times a start from that snapshot.

Usage: loadtest/scripts/restart-after-kill.py GRIDD_BIN [N]
With KEEP_DATA=1 it stops after the SIGKILL and prints the data directory (to profile a start).
Only the Python standard library is needed.
"""
import os, sys, time, subprocess, signal, urllib.request, shutil, tempfile, json, threading
import importlib.util
HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("hi", os.path.join(HERE, "heavy-isolation.py"))
hi = importlib.util.module_from_spec(spec); spec.loader.exec_module(hi)
BIN = sys.argv[1]; N = int(sys.argv[2]) if len(sys.argv) > 2 else 1_000_000
data = tempfile.mkdtemp(prefix="restart-")
port = hi.free_port()
def start():
    p = subprocess.Popen([BIN, "--data-dir", data, "--bind", f"127.0.0.1:{port}", "--api-key", hi.KEY, "--log-level", "error"])
    t0 = time.time()
    while True:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1); break
        except OSError: time.sleep(0.02)
    return p, time.time() - t0
p, _ = start()
c = hi.Client(f"http://127.0.0.1:{port}")
a = hi.grid(c, "A")
for k in range(11):
    st, _ = c.call("POST", f"/v1/views/{a}/columns", {"id": f"c{k}", "name": f"C{k}", "type": "singleLine"})
W = hi.WORDS
bodies = []
raw_bytes = 0
for start_ in range(0, N, 1000):
    recs = [{"id": f"r{i}", "cells": [{"columnId": "t", "value": f"{W[i%8]} {i} {W[(i*7)%8]} source sentence"}] +
             [{"columnId": f"c{k}", "value": f"{W[(i+k)%8]} {W[(i*3+k)%8]} {i%997} übersetzt"} for k in range(11)]}
            for i in range(start_, min(start_+1000, N))]
    raw_bytes += sum(len(c["value"].encode()) for r in recs for c in r["cells"]) + sum(len(r["id"]) for r in recs)
    bodies.append(json.dumps(recs).encode())
print("bodies built", flush=True)
lock = threading.Lock()
def worker():
    while True:
        with lock:
            if not bodies: return
            b = bodies.pop()
        st, body = c.call("POST", f"/v1/views/{a}/records", b)
        assert st == 201, st
t0 = time.time()
ts = [threading.Thread(target=worker) for _ in range(4)]
[t.start() for t in ts]; [t.join() for t in ts]
dt = time.time() - t0
print(f"seeded {N} x 12 in {dt:.1f} s ({N/dt:.0f} records/s)")
def rss_mib(p):
    return int(open(f"/proc/{p.pid}/status").read().split("VmRSS:")[1].split()[0]) // 1024
def heap_parts():
    req = urllib.request.Request(f"http://127.0.0.1:{port}/metrics", headers={"Authorization": "ApiKey " + hi.KEY})
    text = urllib.request.urlopen(req).read().decode()
    parts = {}
    for line in text.splitlines():
        if line.startswith("gridd_branch_heap_bytes{"):
            part = line.split('part="')[1].split('"')[0]
            parts[part] = parts.get(part, 0) + int(float(line.split()[-1]))
    return parts
def report(when):
    parts = heap_parts(); heap = sum(parts.values()); rss = rss_mib(p)
    time.sleep(5); settled = rss_mib(p)
    print(f"{when}: RSS {rss} MiB ({rss * 2**20 / raw_bytes:.2f}x the raw cell bytes), {settled} MiB 5 s later; heap {heap / 2**20:.0f} MiB: " +
          ", ".join(f"{k} {v / 2**20:.0f} MiB ({v / (N * 12):.1f} B/cell)" for k, v in sorted(parts.items())))
print(f"raw cell bytes (values and ids as UTF-8): {raw_bytes / 2**20:.0f} MiB")
report("after load")
p.send_signal(signal.SIGKILL); p.wait()
if os.environ.get("KEEP_DATA"):
    print(f"killed; data directory kept: {data}"); sys.exit()
p, dt = start()
print(f"restart after SIGKILL (WAL replay): {dt:.2f} s")
report("after the replay")
st, recs = c.call("GET", f"/v1/views/{a}/records?page=%7B%22limit%22%3A1%7D")
assert st == 200, st
t0 = time.time(); p.terminate(); p.wait()
print(f"graceful stop (snapshots every branch): {time.time() - t0:.2f} s")
p, dt = start()
print(f"restart from the snapshot: {dt:.2f} s")
report("after the snapshot load")
p.terminate(); p.wait(); shutil.rmtree(data)
