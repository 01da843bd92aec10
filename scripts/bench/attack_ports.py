#!/usr/bin/env python3
"""attack_ports.py: what a stranger on the network can do to a running cluster's tasks.

Starts a local cluster (one process per task: ps tasks, workers, evaluator, chief training for
long), then sends to each kind of port in turn (the CAF port of the chief, every ps task and the
evaluator; the data port of every ps task; TCP, no TLS): 1 GiB of random bytes, a
one-byte-per-second trickle (past the 10 s handshake deadline), 4 000 connections held open,
8 000 requests whose replies are never read (data port: raw frames; a ps task's CAF port:
actorps_bench_caf_unread, a CAF client behind a relay that stops reading), and a connection
storm up to the file descriptor limit (for a CAF port the target's RLIMIT_NOFILE is lowered to
--storm-nofile with prlimit while it lasts, below the port's 512-connection limit). After each
attack it checks that the cluster keeps training (the chief's metrics advance) and that each
port accepts a new client; it samples every attacked process's RSS, thread count and open
descriptors from /proc before, during (peak) and after. Writes JSON.

usage: scripts/bench/attack_ports.py [-o FILE] [-b BUILD_DIR] [--ps N] [--task-nofile N]
                                     [--storm-nofile N] [--only caf|data] [--attacks a,b,...]
A benchmark-style script (python3 standard library only), not a test: its figures go in notes.
"""
import argparse
import json
import os
import resource
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MAGIC, VERSION = 0x4C535041, 1
HELLO, SNAPSHOT, REPLY, FAILURE = 1, 4, 5, 6
HEADER = struct.Struct("<IHHQqqQ")  # actors/link/link_socket.hpp: frame_header, 40 bytes


def frame(kind, ident=0, a=0, b=0, size=0):
    return HEADER.pack(MAGIC, VERSION, kind, ident, a, b, size)


# --- the cluster ---------------------------------------------------------------------------------

class Cluster:
    def __init__(self, binary, ps, workers, nofile, workdir):
        self.dir = workdir
        out = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "free_port_pairs.py"),
                              str(1 + ps + workers + 1)], capture_output=True, text=True, check=True)
        ports = iter(map(int, out.stdout.split()))
        addr = lambda: f"127.0.0.1:{next(ports)}"
        self.spec = {"chief": [addr()], "ps": [addr() for _ in range(ps)],
                     "worker": [addr() for _ in range(workers)], "evaluator": [addr()]}
        self.cluster_file = os.path.join(workdir, "cluster.json")
        json.dump({"cluster": self.spec}, open(self.cluster_file, "w"))
        self.metrics = os.path.join(workdir, "metrics.jsonl")
        self.procs = {}

        def limit():  # every task gets the descriptor limit a stock Debian shell gives
            resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

        def start(kind, index, extra=()):
            task = f"{kind}:{index}"
            log = open(os.path.join(workdir, f"{kind}-{index}.log"), "wb")
            self.procs[task] = subprocess.Popen(
                [binary, kind, "--cluster", self.cluster_file, "--task", task,
                 "--connect-timeout", "60", "--insecure", *extra],
                stdout=log, stderr=subprocess.STDOUT, preexec_fn=limit)
        for i in range(ps):
            start("ps", i)
        for i in range(workers):
            start("worker", i)
        start("evaluator", 0)
        start("chief", 0, ["--epochs", "100000", "--eval-every", "20", "--metrics", self.metrics])

    def ps_ports(self, kind):
        """(task, pid, port) of every ps task; the data port is the task's port + 1."""
        out = []
        for i, address in enumerate(self.spec["ps"]):
            port = int(address.rsplit(":", 1)[1])
            out.append((f"ps:{i}", self.procs[f"ps:{i}"].pid, port + (1 if kind == "data" else 0)))
        return out

    def targets(self, kind):
        """(task, pid, port) of every port of that kind: CAF ports of the chief, the ps tasks and
        the evaluator; data ports of the ps tasks."""
        if kind == "data":
            return self.ps_ports("data")
        port = lambda task: int(self.spec[task.split(":")[0]][0].rsplit(":", 1)[1])
        return ([("chief:0", self.procs["chief:0"].pid, port("chief:0"))] + self.ps_ports("caf")
                + [("evaluator:0", self.procs["evaluator:0"].pid, port("evaluator:0"))])

    def clock(self):
        """The newest global clock in the chief's metrics (-1: none yet)."""
        best = -1
        try:
            for line in open(self.metrics):
                try:
                    best = max(best, int(json.loads(line).get("clock", -1)))
                except (ValueError, TypeError):
                    pass
        except FileNotFoundError:
            pass
        return best

    def alive(self):
        return {task: p.poll() is None for task, p in self.procs.items()}

    def log_bytes(self):
        return {task: os.path.getsize(os.path.join(self.dir, f"{task.replace(':', '-')}.log"))
                for task in self.procs}

    def stop(self):
        for p in self.procs.values():
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        deadline = time.time() + 15
        for p in self.procs.values():
            try:
                p.wait(max(0.1, deadline - time.time()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def proc_figures(pid):
    out = {}
    try:
        for line in open(f"/proc/{pid}/status"):
            key, _, value = line.partition(":")
            if key == "VmRSS":
                out["rss_mib"] = round(int(value.split()[0]) / 1024, 1)
            elif key == "Threads":
                out["threads"] = int(value)
        out["fds"] = len(os.listdir(f"/proc/{pid}/fd"))
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        out["gone"] = True
    return out


class Sampler:
    """Peaks of every ps process's figures while an attack runs (every 0.2 s)."""

    def __init__(self, pids):
        self.pids, self.peak, self.stop_flag = pids, {p: {} for p in pids}, threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.stop_flag.wait(0.2):
            for pid in self.pids:
                for key, value in proc_figures(pid).items():
                    if key != "gone":
                        self.peak[pid][key] = max(self.peak[pid].get(key, 0), value)

    def stop(self):
        self.stop_flag.set()
        self.thread.join()
        return self.peak


# --- probes ----------------------------------------------------------------------------------

def connect(port, timeout=5.0):
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.settimeout(timeout)
    return s


def recv_exact(s, n):
    data = b""
    while len(data) < n:
        chunk = s.recv(n - len(data))
        if not chunk:
            break
        data += chunk
    return data


def new_client_ok(kind, port, shard):
    """A fresh client is served: a hello answered (data port), CAF's handshake sent (CAF port)."""
    try:
        s = connect(port)
        try:
            if kind == "data":
                s.sendall(frame(HELLO, 0, shard, 10000))
                h = recv_exact(s, HEADER.size)
                return len(h) == HEADER.size and HEADER.unpack(h)[2] == REPLY
            return len(s.recv(64)) > 0  # CAF 0.17 sends its server handshake on accept
        finally:
            s.close()
    except OSError:
        return False


def await_progress(cluster, since, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        clock = cluster.clock()
        if clock > since:
            return clock
        time.sleep(0.5)
    return cluster.clock()


# --- attacks -----------------------------------------------------------------------------------

def random_bytes(kind, port, shard, total=1 << 30, seconds=120):
    block, sent, conns, refused_fast = os.urandom(4 << 20), 0, 0, 0
    t0 = time.time()
    while sent < total and time.time() - t0 < seconds:
        try:
            s = connect(port)
        except OSError:
            time.sleep(0.05)
            continue
        conns += 1
        try:
            while sent < total:
                sent += s.send(block[: min(len(block), total - sent)])
        except OSError:
            refused_fast += 1  # the server closed it
        finally:
            s.close()
    return {"bytes_sent": sent, "connections": conns, "closed_by_server": refused_fast,
            "seconds": round(time.time() - t0, 1)}


def trickle(kind, port, shard, conns=10, seconds=15):
    payload = frame(HELLO, 0, shard, 10000) if kind == "data" else os.urandom(64)
    socks = [connect(port) for _ in range(conns)]
    closed_at = [None] * conns
    t0 = time.time()
    for second in range(seconds):
        for i, s in enumerate(socks):
            if closed_at[i] is not None:
                continue
            try:
                s.send(payload[second % len(payload): second % len(payload) + 1])
                s.setblocking(False)
                try:
                    if s.recv(1) == b"":
                        closed_at[i] = round(time.time() - t0, 1)
                except BlockingIOError:
                    pass
                finally:
                    s.setblocking(True)
            except OSError:
                closed_at[i] = round(time.time() - t0, 1)
        time.sleep(1)
    for s in socks:
        s.close()
    still_open = sum(c is None for c in closed_at)
    return {"connections": conns, "seconds": seconds, "closed_by_server_after_s": closed_at,
            "still_open": still_open}


def hold_open(kind, port, shard, conns=4000, hold=12):
    socks, failed = [], 0
    for _ in range(conns):
        try:
            s = socket.socket()
            s.setblocking(False)
            s.connect_ex(("127.0.0.1", port))
            socks.append(s)
        except OSError:
            failed += 1
    time.sleep(1)
    hello = frame(HELLO, 0, shard, 10000)
    if kind == "data":
        for s in socks:
            try:
                s.send(hello)
            except OSError:
                pass
    time.sleep(hold)
    answered = refused = 0
    for s in socks:
        try:
            data = s.recv(HEADER.size)
            if len(data) == HEADER.size:
                kind_of = HEADER.unpack(data)[2]
                answered += kind_of == REPLY
                refused += kind_of == FAILURE
        except OSError:
            pass
        s.close()
    return {"connections": len(socks), "failed_to_open": failed, "held_s": hold,
            "hello_answered": answered if kind == "data" else None,
            "refused_with_failure_frame": refused if kind == "data" else None}


def unread_requests(kind, port, shard, requests=8000, hold=15):
    if kind != "data":
        if shard < 0:
            return None  # the chief's and the evaluator's ports: no snapshot to ask
        out = subprocess.run([os.path.join(BUILD, "actorps_bench_caf_unread"), str(port),
                              str(requests), str(hold)], capture_output=True, text=True)
        try:
            return json.loads(out.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            return {"error": out.stdout + out.stderr}
    s = connect(port, timeout=10)
    s.sendall(frame(HELLO, 0, shard, 10000))
    recv_exact(s, HEADER.size)
    sent = 0
    try:
        for i in range(requests):
            s.sendall(frame(SNAPSHOT, i + 1))
            sent += 1
    except OSError:
        pass  # the server stopped reading it: its socket and ours are full
    time.sleep(hold)
    s.close()
    return {"requests": requests, "sent_before_blocking": sent, "held_unread_s": hold}


def storm(kind, port, shard, limit=30000, seconds=30, hold=5, pid=None):
    """Connects as fast as it can until the attacker's own descriptors, 30 s or 200 failed
    connects end it, holds them, and meanwhile tries a client on the task's other port (a ps
    task's). On a CAF port the task's descriptor limit is lowered to --storm-nofile meanwhile."""
    lowered = None
    if kind == "caf" and pid is not None:
        lowered = resource.prlimit(pid, resource.RLIMIT_NOFILE)
        resource.prlimit(pid, resource.RLIMIT_NOFILE, (STORM_NOFILE, lowered[1]))
    socks, failed, errors, stopped_by = [], 0, {}, "limit"
    t0 = time.time()
    while len(socks) < limit and time.time() - t0 < seconds:
        try:
            s = socket.socket()
        except OSError as e:
            stopped_by = "attacker out of descriptors: " + str(e.strerror)
            break
        s.settimeout(2)
        try:
            s.connect(("127.0.0.1", port))
            socks.append(s)
        except OSError as e:
            s.close()
            failed += 1
            errors[str(e.strerror or e)] = errors.get(str(e.strerror or e), 0) + 1
            if failed > 200:
                stopped_by = "200 connects failed"
                break
    else:
        stopped_by = "time" if len(socks) < limit else "limit"
    connected = len(socks)
    # The attacker's descriptors may be spent: give one back for the probe.
    if socks:
        socks.pop().close()
    other = "data" if kind == "caf" else "caf"
    other_port = port + 1 if kind == "caf" else port - 1
    during = new_client_ok(other, other_port, shard) if shard >= 0 else None
    time.sleep(hold)
    for s in socks:
        s.close()
    if lowered:
        resource.prlimit(pid, resource.RLIMIT_NOFILE, lowered)
    return {"connected": connected, "failed": failed, "errors": errors,
            "stopped_by": stopped_by, f"new_{other}_client_during_storm": during,
            "task_nofile_during": STORM_NOFILE if lowered else None,
            "seconds": round(time.time() - t0, 1)}


BUILD = os.path.join(ROOT, "build")
STORM_NOFILE = 256
ATTACKS = {"random_1GiB": random_bytes, "trickle_1Bps": trickle, "hold_4000": hold_open,
           "unread_8000": unread_requests, "storm_fd_limit": storm}


def main():
    global BUILD, STORM_NOFILE
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-o", default=os.path.join(ROOT, "build", "bench", "attack_ports.json"))
    ap.add_argument("-b", default=os.path.join(ROOT, "build"))
    ap.add_argument("--ps", type=int, default=2)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--task-nofile", type=int, default=1024)
    ap.add_argument("--storm-nofile", type=int, default=STORM_NOFILE)
    ap.add_argument("--only", choices=["caf", "data"])
    ap.add_argument("--attacks", default=",".join(ATTACKS))
    args = ap.parse_args()
    BUILD, STORM_NOFILE = args.b, args.storm_nofile
    binary = os.path.join(args.b, "actorps")
    if not os.access(binary, os.X_OK):
        sys.exit(f"{binary} is missing: run scripts/setup.sh first")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # the attacker needs more than the ps

    workdir = tempfile.mkdtemp(prefix="actorps-attack.")
    cluster = Cluster(binary, args.ps, args.workers, args.task_nofile, workdir)
    result = {"bench": "attack_ports", "ps": args.ps, "workers": args.workers,
              "task_nofile": args.task_nofile, "storm_nofile": args.storm_nofile,
              "attacker_nofile": hard, "workdir": workdir,
              "attacks": []}
    try:
        start = await_progress(cluster, 0, timeout=180)
        if start <= 0:
            sys.exit(f"the cluster did not start training; see {workdir}")
        pids = [pid for _, pid, _ in cluster.targets("caf")]
        result["baseline"] = {task: proc_figures(pid) for task, pid, _ in cluster.targets("caf")}
        kinds = [args.only] if args.only else ["caf", "data"]
        for kind in kinds:
            for name in args.attacks.split(","):
                before = {task: proc_figures(pid) for task, pid, _ in cluster.targets(kind)}
                clock_before = cluster.clock()
                sampler = Sampler(pids)
                outcomes = {}
                threads = []
                for task, pid, port in cluster.targets(kind):  # every port at once
                    shard = int(task.split(":")[1]) if task.startswith("ps:") else -1
                    def run(task=task, port=port, shard=shard, pid=pid):
                        try:
                            extra = {"pid": pid} if name == "storm_fd_limit" else {}
                            outcomes[task] = ATTACKS[name](kind, port, shard, **extra)
                        except OSError as e:
                            outcomes[task] = {"error": str(e)}
                    threads.append(threading.Thread(target=run))
                    threads[-1].start()
                for t in threads:
                    t.join()
                peak = sampler.stop()
                if all(v is None for v in outcomes.values()):
                    continue  # not an attack for this kind of port
                clock_after = await_progress(cluster, cluster.clock())
                entry = {
                    "port": kind, "attack": name, "outcome": outcomes,
                    "before": before,
                    "peak_during": {task: peak[pid] for task, pid, _ in cluster.targets(kind)},
                    "after": {task: proc_figures(pid) for task, pid, _ in cluster.targets(kind)},
                    "clock_before": clock_before, "clock_after": clock_after,
                    "keeps_training": clock_after > clock_before,
                    "new_client_accepted": {
                        task: {k: new_client_ok(k, p, int(task.split(":")[1]))
                               for k in ("caf", "data")
                               for t2, _, p in cluster.targets(k) if t2 == task}
                        for task, _, _ in cluster.targets(kind)},
                    "tasks_alive": cluster.alive(),
                }
                result["attacks"].append(entry)
                print(f"{kind:4} {name:15} training {clock_before}->{clock_after} "
                      f"peak " + ", ".join(f"{t} {v.get('rss_mib')} MiB/{v.get('threads')} thr/"
                                           f"{v.get('fds')} fds"
                                           for t, v in entry["peak_during"].items())
                      + f" new clients {entry['new_client_accepted']}", flush=True)
        result["log_bytes"] = cluster.log_bytes()
    finally:
        cluster.stop()
    os.makedirs(os.path.dirname(os.path.abspath(args.o)), exist_ok=True)
    json.dump(result, open(args.o, "w"), indent=1)
    print(f"-> {args.o} (task logs in {workdir})")


if __name__ == "__main__":
    main()
