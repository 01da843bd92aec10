#!/usr/bin/env python3
"""--prometheus-port as Prometheus and a person's tools see it.

scrape: a run as processes (chief, 2 ps, 2 workers, an evaluator; the sparse `lr` model on a
  generated Criteo set), the chief and both ps tasks serving /metrics:
  - a real Prometheus (Debian's `prometheus`) scraping them every second: its HTTP API shows the
    job's samples counter, and the shards' pushes, rising between two queries (skipped, exit 77,
    only when the prometheus binary is missing);
  - prometheus_client's parser accepts every scrape; once the workers have reported every clock
    (the final evaluation held back: the evaluator is stopped), the chief's samples, clocks and
    staleness count equal what the metrics file says, and every ps task has rows in its table.
abuse: `simulate` serving /metrics while it trains: a malformed request and one with a 1 MiB
  header are refused, a path other than /metrics is not found, and 64 connections held open do
  not stop training; the endpoint answers after each, and the run ends as planned.

usage: tests/prometheus_test.py scrape|abuse path/to/actorps
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SKIP = 77
procs = []


def fail(why: str, tmp: str = "") -> None:
    print(f"FAIL: {why}", file=sys.stderr)
    if tmp:
        for name in sorted(os.listdir(tmp)):
            if name.endswith(".log"):
                with open(os.path.join(tmp, name), errors="replace") as f:
                    tail = f.readlines()[-15:]
                print(f"--- {name}\n{''.join(tail)}", file=sys.stderr)
    sys.exit(1)


def free_ports(n: int) -> list:
    out = subprocess.run([sys.executable, os.path.join(ROOT, "scripts/free_port_pairs.py"),
                          str(n)], capture_output=True, text=True, check=True).stdout
    return [int(p) for p in out.split()]


def until(what: str, check, seconds: float, tmp: str):
    """Waits for check() to return something truthy (bounded); returns it."""
    deadline = time.monotonic() + seconds
    pause = 0.05
    while time.monotonic() < deadline:
        got = check()
        if got:
            return got
        time.sleep(pause)  # what we wait for has no event of its own to block on (HTTP)
        pause = min(pause * 1.5, 0.5)
    fail(f"no {what} within {seconds} s", tmp)


def http_get(url: str, timeout: float = 5):
    """(status, body) of a GET; (None, why) when it cannot be had."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, ""
    except (OSError, ValueError) as e:
        return None, str(e)


def scrape(port: int):
    """The families of http://127.0.0.1:port/metrics, by name, or None."""
    from prometheus_client.parser import text_string_to_metric_families
    status, body = http_get(f"http://127.0.0.1:{port}/metrics")
    if status != 200:
        return None
    return {f.name: f for f in text_string_to_metric_families(body)}


def value(families, name: str, suffix: str = "", **labels) -> float:
    """The one sample of family `name` (its sample `name + suffix`) with these labels."""
    fam = families.get(name)
    if fam is None:
        fail(f"no family {name} in the scrape")
    found = [s.value for s in fam.samples if s.name == fam.name + suffix
             and all(s.labels.get(k) == v for k, v in labels.items())]
    if len(found) != 1:
        fail(f"{len(found)} samples of {name}{suffix} {labels} in the scrape")
    return found[0]


def train_events(path: str) -> list:
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [e for e in map(json.loads, f) if e.get("event") == "train"]


def start(tmp: str, name: str, args: list) -> subprocess.Popen:
    log = open(os.path.join(tmp, name + ".log"), "w")
    p = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    procs.append(p)
    return p


def run_scrape(binary: str, tmp: str) -> int:
    try:
        import prometheus_client.parser  # noqa: F401
    except ImportError:
        fail("python3-prometheus-client is not installed (scripts/setup.sh installs it)")
    workers, steps = 2, 400
    data = os.path.join(tmp, "criteo")
    subprocess.run([binary, "gen-data", "criteo", "--out", data, "--rows", "8000",
                    "--test-rows", "1000"], check=True, capture_output=True)
    ports = free_ports(10)
    caf = [f"127.0.0.1:{p}" for p in ports[:6]]
    chief_prom, ps_prom, server = ports[6], ports[7:9], ports[9]
    cluster = os.path.join(tmp, "cluster.json")
    with open(cluster, "w") as f:
        json.dump({"cluster": {"chief": caf[:1], "ps": caf[1:3], "worker": caf[3:5],
                               "evaluator": caf[5:]}}, f)
    prometheus = shutil.which("prometheus")
    if prometheus:
        config = os.path.join(tmp, "prometheus.yml")
        with open(config, "w") as f:
            f.write("global: {scrape_interval: 1s, scrape_timeout: 1s, evaluation_interval: 1s}\n"
                    "scrape_configs:\n  - job_name: actorps\n    static_configs:\n"
                    f"      - targets: ['127.0.0.1:{chief_prom}', '127.0.0.1:{ps_prom[0]}',"
                    f" '127.0.0.1:{ps_prom[1]}']\n")
        start(tmp, "prometheus", [prometheus, f"--config.file={config}",
                                  f"--storage.tsdb.path={tmp}/tsdb",
                                  f"--web.listen-address=127.0.0.1:{server}"])
        # ready before the run starts: it scrapes the whole of training
        until("Prometheus ready", lambda: http_get(f"http://127.0.0.1:{server}/-/ready")[0] == 200,
              60, tmp)
    else:
        print("SKIP (Prometheus part): no `prometheus` binary on PATH (Debian's prometheus "
              "package; scripts/setup.sh installs it)")

    common = ["--insecure", "--cluster", cluster, "--connect-timeout", "30", "--peer-timeout-ms", "60000"]
    for i in range(2):
        start(tmp, f"ps{i}", [binary, "ps", *common, "--task", f"ps:{i}",
                              "--prometheus-port", str(ps_prom[i])])
    for i in range(workers):
        start(tmp, f"worker{i}", [binary, "worker", *common, "--task", f"worker:{i}"])
    evaluator = start(tmp, "evaluator", [binary, "evaluator", *common, "--task", "evaluator:0"])
    metrics = os.path.join(tmp, "metrics.jsonl")
    chief = start(tmp, "chief", [
        binary, "chief", *common, "--task", "chief:0", "--model", "lr",
        "--dataset", f"criteo:{data}/train.tsv", "--test", f"{data}/test.tsv",
        "--steps", str(steps), "--batch", "32", "--eval-every", "0", "--no-progress",
        "--admit-after", "2", "--admission-memory", "4096",
        "--request-timeout", "100", "--metrics", metrics, "--prometheus-port", str(chief_prom),
        *sum([["--slow", f"worker:{w}=25"] for w in range(workers)], [])])

    until("train event", lambda: train_events(metrics), 90, tmp)
    evaluator.send_signal(signal.SIGSTOP)  # the final evaluation waits: the run's end stays up

    if prometheus:
        api = f"http://127.0.0.1:{server}/api/v1/query?query="

        def query(expr: str):
            status, body = http_get(api + urllib.parse.quote(expr))
            if status != 200:
                return None
            result = json.loads(body)["data"]["result"]
            return result

        def samples_now():
            r = query("actorps_samples_total")
            return float(r[0]["value"][1]) if r else None

        first = until("samples counter in Prometheus", lambda: samples_now(), 60, tmp)
        second = until("samples counter rising in Prometheus",
                       lambda: (lambda v: v if v and v > first else None)(samples_now()), 60, tmp)
        print(f"Prometheus: actorps_samples_total {first:.0f} -> {second:.0f}")
        ups = query("up")
        up = {r["metric"]["instance"]: r["value"][1] for r in ups or []}
        for port in [chief_prom, *ps_prom]:
            if up.get(f"127.0.0.1:{port}") != "1":
                fail(f"Prometheus does not see 127.0.0.1:{port} up: {up}", tmp)
        pushes = query("sum(actorps_shard_pushes_total)")
        p1 = float(pushes[0]["value"][1]) if pushes else 0
        until("shard pushes rising in Prometheus", lambda: (lambda r: r and float(
            r[0]["value"][1]) > p1)(query("sum(actorps_shard_pushes_total)")), 60, tmp)
        shards = query("count(actorps_shard_pushes_total)")
        if not shards or shards[0]["value"][1] != "2":
            fail(f"Prometheus has not two shards' pushes: {shards}", tmp)

    # Every clock reported: the figures are final until the evaluator answers.
    until("every worker's last clock", lambda: len(train_events(metrics)) >= workers * steps, 120,
          tmp)
    events = train_events(metrics)
    fams = scrape(chief_prom)
    if fams is None:
        fail("the chief's /metrics does not answer", tmp)
    want = {"actorps_samples": sum(e["samples"] for e in events), "actorps_clocks": len(events)}
    for name, expected in want.items():
        if value(fams, name, "_total") != expected:
            fail(f"{name}_total is {value(fams, name, '_total')}, the metrics file says "
                 f"{expected}", tmp)
    if value(fams, "actorps_staleness", "_count") != len(events):
        fail("the staleness histogram did not count every train report", tmp)
    for w in range(workers):
        if value(fams, "actorps_worker_clock", worker=str(w)) != steps:
            fail(f"worker {w}'s clock is not {steps}", tmp)
    if not value(fams, "actorps_samples_per_second") > 0:
        fail("no samples per second", tmp)
    if not (value(fams, "process_cpu_seconds", "_total") > 0
            and value(fams, "process_resident_memory_bytes") > 1 << 20):
        fail("the chief's own CPU and memory are missing", tmp)
    for i, port in enumerate(ps_prom):
        ps = scrape(port)
        if ps is None:
            fail(f"ps:{i}'s /metrics does not answer", tmp)
        who = {"shard": str(i), "replica": "primary"}
        if value(ps, "actorps_shard_rows", table="0", **who) <= 0:
            fail(f"ps:{i} has no rows in its table", tmp)
        # the sketch's bytes, its spec carried to the ps process: there, and within its budget
        if not 0 < value(ps, "actorps_shard_admission_bytes", **who) <= 4096:
            fail(f"ps:{i} holds {value(ps, 'actorps_shard_admission_bytes', **who)} bytes of "
                 "admission counts, not 1..4096", tmp)
        pushes = value(ps, "actorps_shard_pushes", "_total", **who)
        if not 0 < pushes <= workers * steps:
            fail(f"ps:{i} accepted {pushes} pushes of {workers * steps}", tmp)
        if value(ps, "actorps_shard_link_bytes", "_total", direction="in", **who) <= 0:
            fail(f"ps:{i} counts no bytes received", tmp)
        if value(ps, "actorps_shard_refusals", "_total", reason="malformed", **who) != 0:
            fail(f"ps:{i} refused messages of a clean run", tmp)
        if "actorps_samples" in ps:
            fail(f"ps:{i} serves the chief's figures", tmp)
    print(f"parser: chief samples {want['actorps_samples']} clocks {want['actorps_clocks']} "
          "as the metrics file says; both ps tasks have rows")

    evaluator.send_signal(signal.SIGCONT)
    if chief.wait(timeout=120) != 0:
        fail(f"the chief exited {chief.returncode}", tmp)
    return SKIP if not prometheus else 0


def raw_request(port: int, data: bytes, timeout: float = 10) -> bytes:
    """Sends `data` and returns what comes back until the server closes (b"" for a reset)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    out = b""
    try:
        try:
            s.sendall(data)
        except OSError:
            pass  # the server closed mid-request: what it answered before may still be there
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            out += chunk
    except OSError:
        pass
    finally:
        s.close()
    return out


def status_of(reply: bytes) -> str:
    return reply.split(b"\r\n", 1)[0].decode(errors="replace")


def run_abuse(binary: str, tmp: str) -> int:
    port = free_ports(1)[0]
    metrics = os.path.join(tmp, "metrics.jsonl")
    steps, workers = 400, 2
    run = start(tmp, "simulate", [
        binary, "simulate", "--dataset", "synthetic", "--model", "784-32-10", "--steps",
        str(steps), "--eval-every", "0", "--synthetic-rows", "4096", "--no-progress",
        "--metrics", metrics, "--prometheus-port", str(port),
        "--slow", "worker:0=15", "--slow", "worker:1=15"])
    until("train event", lambda: train_events(metrics), 60, tmp)

    def answers() -> bool:
        fams = scrape(port)
        return fams is not None and value(fams, "actorps_samples", "_total") > 0

    if not answers():
        fail("/metrics does not answer", tmp)
    reply = raw_request(port, b"THIS IS NOT HTTP\r\n\r\n")
    if reply and status_of(reply) not in ("HTTP/1.1 400 Bad Request", "HTTP/1.0 400 Bad Request"):
        fail(f"a malformed request was not refused as one: {status_of(reply)}", tmp)
    print(f"malformed request: {status_of(reply) or 'closed'}")
    until("/metrics after a malformed request", answers, 10, tmp)
    big = b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * (1 << 20) + b"\r\n\r\n"
    reply = raw_request(port, big)
    if status_of(reply).split(" ")[1:2] == ["200"]:
        fail(f"a request with a 1 MiB header was answered: {status_of(reply)}", tmp)
    print(f"1 MiB header: {status_of(reply) or 'closed'}")
    until("/metrics after an oversized request", answers, 10, tmp)
    # civetweb's own answers to these overflowed its threads' small stacks: a crashed run
    for request, status in [(b"GET /elsewhere HTTP/1.1\r\nHost: x\r\n\r\n", "404"),
                            (b"POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\nx",
                             "405")]:
        reply = raw_request(port, request)
        if status_of(reply).split(" ")[1:2] != [status]:
            fail(f"{request[:20]!r}: {status_of(reply) or 'no answer'}, not {status}", tmp)
        until(f"/metrics after {request[:20]!r}", answers, 10, tmp)

    held = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(64)]
    before = len(train_events(metrics))
    until("training going on while 64 connections are held",
          lambda: len(train_events(metrics)) >= before + 20, 60, tmp)
    for s in held:
        s.close()
    until("/metrics after the connections closed", answers, 15, tmp)
    if run.wait(timeout=120) != 0:
        fail(f"simulate exited {run.returncode}", tmp)
    events = train_events(metrics)
    if len(events) != workers * steps:
        fail(f"{len(events)} train reports, not {workers * steps}", tmp)
    print(f"64 held connections: training went on ({before} -> {before + 20}+ reports); the run "
          f"ended with all {len(events)}")
    return 0


def main() -> int:
    mode, binary = sys.argv[1], sys.argv[2]
    tmp = tempfile.mkdtemp(prefix=f"actorps-prometheus-{mode}.")
    try:
        status = {"scrape": run_scrape, "abuse": run_abuse}[mode](binary, tmp)
        print("PASS" if status == 0 else "PASS (Prometheus part skipped)")
        return status
    finally:
        for p in procs:
            if p.poll() is None:
                try:
                    p.send_signal(signal.SIGCONT)
                    p.kill()
                except OSError:
                    pass
                p.wait()
        if not os.environ.get("KEEP"):
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
