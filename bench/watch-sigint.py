#!/usr/bin/env python3
"""SIGINT latency of rpv's watch modes (-d, --pipeline, -Q); see BENCHMARKS.md. Usage:
bench/watch-sigint.py RPV [RUNS [WRITERS]]. Starts the watch, waits for its first output,
then a random 0.2-1.2 s, sends SIGINT, and times until the process has ended."""
import os, random, signal, subprocess, sys, time, statistics, tempfile

RPV = sys.argv[1]
RUNS = int(sys.argv[2]) if len(sys.argv) > 2 else 10
WRITERS = int(sys.argv[3]) if len(sys.argv) > 3 else 0
tmp = tempfile.mkdtemp(prefix="rel-lat-")
procs = []

def start(cmd, **kw):
    p = subprocess.Popen(cmd, start_new_session=True, **kw)
    procs.append(p)
    return p

# 400 writers (each a shell appending to its own file every 0.3 s), as in the review.
for i in range(WRITERS):
    start(["sh", "-c", f"exec 3>>{tmp}/w{i}; while :; do echo x >&3; sleep 0.3; done"],
          stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

# -d: a process holding 200 files open, writing to each every 0.1 s.
holder = start([sys.executable, "-c", f"""
import os, time
fs = [open('{tmp}/h%d' % i, 'wb', buffering=0) for i in range(200)]
while True:
    for f in fs: f.write(b'x' * 100)
    time.sleep(0.1)
"""])
# --pipeline: a 12-stage pipeline with an rpv at 5 MB/s in it.
stages = " | ".join(["cat"] * 10)
pipeline = start(["sh", "-c", f"head -c 100G /dev/zero | {stages} | {RPV} -q -L 5M | wc -c"],
                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
time.sleep(2.0)
def find(cmdline_start):
    for pid in os.listdir("/proc"):
        if not pid.isdigit(): continue
        try:
            c = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
        except OSError:
            continue
        if c[:3] == cmdline_start: return int(pid)
    raise SystemExit(f"not found: {cmdline_start}")
rpv_stage = find([RPV.encode(), b"-q", b"-L"])
modes = {
    "-d": [RPV, "--json", "-i", "0.5", "-d", str(holder.pid)],
    "--pipeline": [RPV, "--json", "-i", "0.5", f"--pipeline={rpv_stage}"],
    "-Q": [RPV, "--json", "-i", "0.5", "-Q", str(rpv_stage)],
}
for name, cmd in modes.items():
    lat = []
    for _ in range(RUNS):
        out = open(f"{tmp}/out", "w+b")
        p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=out)
        deadline = time.monotonic() + 30
        while os.path.getsize(f"{tmp}/out") < 200 and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(random.uniform(0.2, 1.2))
        t0 = time.monotonic()
        p.send_signal(signal.SIGINT)
        rc = p.wait()
        lat.append(time.monotonic() - t0)
        assert rc == 32, (name, rc)
    lat.sort()
    print(f"{name:11} writers={WRITERS} runs={RUNS} p50={statistics.median(lat)*1000:.0f} ms "
          f"max={lat[-1]*1000:.0f} ms min={lat[0]*1000:.0f} ms", flush=True)
for p in procs:
    try: os.killpg(p.pid, signal.SIGTERM)
    except ProcessLookupError: pass
for p in procs:
    p.wait()
import shutil
shutil.rmtree(tmp, ignore_errors=True)
