#!/usr/bin/env python3
"""Bulk-load rate and server CPU per request, optionally under `perf record` (issue 17).

Starts a release gridd on a fresh data directory, adds N records (default 200,000) x 12
single-line columns of multilingual text, 1000 records a request on 4 keep-alive connections
whose answers are read but not parsed (so the client costs little of the two cores), and prints
the rate, the server's CPU per request and the request latency. With PERF=<file> the load runs
under `perf record --call-graph dwarf` attached to the server.

Usage: loadtest/scripts/ingest-profile.py GRIDD_BIN [N]
Only the Python standard library is needed (and perf for PERF).
"""
import http.client, importlib.util, json, os, shutil, signal, subprocess, sys, tempfile, threading, time, urllib.request
HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("hi", os.path.join(HERE, "heavy-isolation.py"))
hi = importlib.util.module_from_spec(spec); spec.loader.exec_module(hi)
BIN = sys.argv[1]; N = int(sys.argv[2]) if len(sys.argv) > 2 else 200_000
PERF = os.environ.get("PERF")
data = tempfile.mkdtemp(prefix="ingest-")
port = hi.free_port()
p = subprocess.Popen([BIN, "--data-dir", data, "--bind", f"127.0.0.1:{port}", "--api-key", hi.KEY, "--log-level", "error"])
while True:
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1); break
    except OSError: time.sleep(0.02)
c = hi.Client(f"http://127.0.0.1:{port}")
view = hi.grid(c, "A")
for k in range(11):
    c.call("POST", f"/v1/views/{view}/columns", {"id": f"c{k}", "name": f"C{k}", "type": "singleLine"})
W = hi.WORDS
bodies = []
for first in range(0, N, 1000):
    recs = [{"id": f"r{i}", "cells": [{"columnId": "t", "value": f"{W[i%8]} {i} {W[(i*7)%8]} source sentence"}] +
             [{"columnId": f"c{k}", "value": f"{W[(i+k)%8]} {W[(i*3+k)%8]} {i%997} übersetzt"} for k in range(11)]}
            for i in range(first, min(first + 1000, N))]
    bodies.append(json.dumps(recs).encode())
lock, local, latencies = threading.Lock(), threading.local(), []
def worker():
    while True:
        with lock:
            if not bodies: return
            body = bodies.pop()
        conn = local.__dict__.get("conn")
        if conn is None:
            conn = local.conn = http.client.HTTPConnection("127.0.0.1", port)
        sent = time.time()
        conn.request("POST", f"/v1/views/{view}/records", body=body,
                     headers={"Authorization": "ApiKey " + hi.KEY, "Content-Type": "application/json"})
        answer = conn.getresponse(); answer.read()
        latencies.append(time.time() - sent)
        assert answer.status == 201, answer.status
def cpu_ticks():
    return sum(int(x) for x in open(f"/proc/{p.pid}/stat").read().rsplit(")", 1)[1].split()[11:13])
perf = None
if PERF:
    perf = subprocess.Popen(["perf", "record", "--call-graph", "dwarf,16384", "-F", "499", "-o", PERF, "-p", str(p.pid)], stderr=subprocess.DEVNULL)
    time.sleep(0.5)
cpu0, t0 = cpu_ticks(), time.time()
threads = [threading.Thread(target=worker) for _ in range(4)]
[t.start() for t in threads]; [t.join() for t in threads]
dt, cpu = time.time() - t0, (cpu_ticks() - cpu0) / 100
latencies.sort()
print(f"added {N} records x 12 in {dt:.1f} s ({N/dt:.0f} records/s); server CPU {cpu:.1f} s "
      f"({cpu / (N / 1000) * 1000:.1f} ms per request of 1000); p50 {latencies[len(latencies)//2]*1000:.1f} ms, "
      f"p99 {latencies[int(len(latencies)*0.99)]*1000:.1f} ms")
if perf: perf.send_signal(signal.SIGINT); perf.wait()
p.terminate(); p.wait(); shutil.rmtree(data)
