#!/usr/bin/env python3
"""Ingest rate, resident memory and restart time after SIGKILL (issue 17).

Starts a release gridd on a fresh data directory, loads N records (default 1,000,000) x 12
single-line columns of multilingual text over HTTP, 1000 records a request on 4 connections,
prints the rate and the server's RSS, SIGKILLs it right after the load, and times the next
start until /healthz answers (recovery runs before the server listens).

Usage: loadtest/scripts/restart-after-kill.py GRIDD_BIN [N]
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
for start_ in range(0, N, 1000):
    recs = [{"id": f"r{i}", "cells": [{"columnId": "t", "value": f"{W[i%8]} {i} {W[(i*7)%8]} source sentence"}] +
             [{"columnId": f"c{k}", "value": f"{W[(i+k)%8]} {W[(i*3+k)%8]} {i%997} übersetzt"} for k in range(11)]}
            for i in range(start_, min(start_+1000, N))]
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
rss = int(open(f"/proc/{p.pid}/status").read().split("VmRSS:")[1].split()[0]) // 1024
print(f"RSS after load {rss} MiB")
p.send_signal(signal.SIGKILL); p.wait()
p, dt = start()
print(f"restart after SIGKILL: {dt:.2f} s")
st, recs = c.call("GET", f"/v1/views/{a}/records?page=%7B%22limit%22%3A1%7D")
print("read ok", st)
p.terminate(); p.wait(); shutil.rmtree(data)
