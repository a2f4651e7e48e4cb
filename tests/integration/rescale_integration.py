#!/usr/bin/env python3
"""rescale-coord with real processes on 127.0.0.1: a coordinator (serve, SQLite store) and reference workers.

Scenarios (issue 6): bootstrap 32 workers; shrink 8 at once from notices; expand 8; kill -9 a worker while a
proposal is open; kill -9 the coordinator right after each kind of durable write and restart it. After each,
every surviving worker must end in the same view with its state intact, and nothing may hang (every wait has a
deadline; a scenario that runs past it fails).

Usage: rescale_integration.py PATH/TO/rescale-coord [SCENARIO...]
"""
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

TOOL = None
FAILURES = []


def check(condition, message):
    if not condition:
        FAILURES.append(message)
        print(f"  FAIL: {message}", flush=True)
    return condition


def wait_until(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    raise TimeoutError(f"timed out after {timeout} s waiting for {what}")


class Worker:
    """A `rescale-coord worker` process and the JSON events it prints."""

    def __init__(self, cluster, worker_id, extra):
        self.id = worker_id
        self.events = []
        self.lock = threading.Lock()
        args = [TOOL, "worker", "--coord", f"127.0.0.1:{cluster.port}", "--token-file", cluster.token,
                "--id", worker_id, "--heartbeat-ms", "200", "--buffer-bytes", "65536"] + extra
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                event = {"event": "garbage", "line": line}
            with self.lock:
                self.events.append(event)

    def commits(self):
        with self.lock:
            return [e for e in self.events if e.get("event") == "commit"]

    def last_commit(self):
        c = self.commits()
        return c[-1] if c else None

    def exit_event(self):
        with self.lock:
            return next((e for e in self.events if e.get("event") == "exit"), None)

    def kill(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.reader.join(timeout=2)


class Cluster:
    """One job: its coordinator (restartable on the same port and database) and its workers."""

    def __init__(self, tmp, name, serve_args):
        self.dir = os.path.join(tmp, name)
        os.makedirs(self.dir)
        self.token = os.path.join(self.dir, "token")
        with open(self.token, "w") as f:
            f.write("integration-secret\n")
        os.chmod(self.token, 0o600)
        self.db = os.path.join(self.dir, "coord.db")
        self.serve_args = serve_args
        self.port = 0
        self.coord = None
        self.workers = {}

    def start_coordinator(self, env_extra=None):
        port_file = os.path.join(self.dir, "port")
        if os.path.exists(port_file):
            os.unlink(port_file)
        env = dict(os.environ)
        env.pop("GPUOPS_RESCALE_CRASH_AFTER", None)
        env.update(env_extra or {})
        args = [TOOL, "serve", "-q", "--listen", f"127.0.0.1:{self.port}", "--db", self.db, "--job", "itest",
                "--token-file", self.token, "--port-file", port_file] + self.serve_args
        self.coord = subprocess.Popen(args, env=env, stderr=subprocess.PIPE, text=True)
        wait_until(lambda: os.path.exists(port_file) or self.coord.poll() is not None, 10, "the coordinator to listen")
        if self.coord.poll() is not None:
            raise RuntimeError(f"the coordinator exited: {self.coord.stderr.read()}")
        with open(port_file) as f:
            self.port = int(f.read())

    def add_workers(self, ids, extra=None):
        for worker_id in ids:
            self.workers[worker_id] = Worker(self, worker_id, extra or [])

    def live(self):
        return [w for w in self.workers.values() if w.proc.poll() is None and w.exit_event() is None]

    def status(self):
        out = subprocess.run([TOOL, "status", "--coord", f"127.0.0.1:{self.port}", "--token-file", self.token,
                              "--timeout", "5s"], capture_output=True, text=True, timeout=10)
        if out.returncode != 0:
            raise RuntimeError(f"status failed ({out.returncode}): {out.stderr.strip()}")
        return json.loads(out.stdout)

    def admin(self, *args):
        out = subprocess.run([TOOL, *args, "--coord", f"127.0.0.1:{self.port}", "--token-file", self.token,
                              "--timeout", "5s"], capture_output=True, text=True, timeout=10)
        return out.returncode, out.stdout, out.stderr

    def notice(self, worker_id):
        """What a spot agent sends: a NOTICE with the job token on a connection of its own."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=5) as s:
            line = {"v": 1, "t": "NOTICE", "seq": 1, "worker_id": worker_id, "source": "manual",
                    "deadline_utc": "", "deadline_in_ms": 10000, "token": "integration-secret"}
            s.sendall((json.dumps(line) + "\n").encode())
            reply = s.makefile().readline()
        return json.loads(reply)

    def converged(self, size):
        """Every live worker's last commit is the same view of `size` members."""
        live = self.live()
        if len(live) != size:
            return False
        last = [w.last_commit() for w in live]
        if any(c is None for c in last):
            return False
        return len({(c["epoch"], c["hash"]) for c in last}) == 1 and all(c["size"] == size for c in last)

    def stop(self):
        for w in self.workers.values():
            w.stop()
        if self.coord and self.coord.poll() is None:
            self.coord.send_signal(signal.SIGTERM)
            try:
                self.coord.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.coord.kill()


def check_view(cluster, size, what):
    """The shared view: one hash, ranks 0..size-1 once each, state intact, the address exchange complete."""
    last = {w.id: w.last_commit() for w in cluster.live()}
    check(len(last) == size, f"{what}: {len(last)} live workers, expected {size}")
    check(len({(c["epoch"], c["hash"]) for c in last.values()}) == 1, f"{what}: workers disagree on the view")
    check(sorted(c["rank"] for c in last.values()) == list(range(size)), f"{what}: ranks are not 0..{size - 1}")
    check(all(c["buffer_ok"] for c in last.values()), f"{what}: a worker's buffer was corrupted")
    check(all(c.get("exchange_ok", True) for c in last.values()),
          f"{what}: an address exchange failed: {[c.get('exchange_error') for c in last.values()]}")
    return last


def check_history(cluster, what):
    """Per worker: epochs only grow, the member id never changes, the counter only grows."""
    for w in cluster.workers.values():
        commits = w.commits()
        epochs = [c["epoch"] for c in commits]
        check(epochs == sorted(set(epochs)), f"{what}: {w.id} committed epochs out of order: {epochs}")
        check(len({c["member"] for c in commits}) <= 1, f"{what}: {w.id} changed member id")
        counters = [c["counter"] for c in commits]
        check(counters == sorted(counters), f"{what}: {w.id}'s counter went back")


def scenario_bootstrap_shrink_expand(tmp):
    print("bootstrap 32, shrink 8 from notices, expand 8", flush=True)
    c = Cluster(tmp, "grow", ["--min", "32", "--batch-window-ms", "300", "--lease-ms", "3000"])
    try:
        c.start_coordinator()
        started = time.monotonic()
        c.add_workers([f"w{i:02d}" for i in range(32)])
        wait_until(lambda: c.converged(32), 60, "32 workers in one view")
        print(f"  bootstrap of 32 worker processes: {time.monotonic() - started:.2f} s", flush=True)
        first = check_view(c, 32, "bootstrap")
        check(all(v["epoch"] == 1 for v in first.values()), "bootstrap: the first view is not epoch 1")

        # Eight interruption notices at once: one epoch without all eight, the victims released.
        victims = sorted(first, key=lambda w: first[w]["rank"])[3::4]
        check(c.admin("set", "--min", "8")[0] == 0, "set --min 8 was refused")
        for v in victims:
            reply = c.notice(v)
            check(reply.get("ok") is True, f"notice for {v} not taken: {reply}")
        wait_until(lambda: all(c.workers[v].exit_event() for v in victims), 30, "the 8 victims to be released")
        wait_until(lambda: c.converged(24), 30, "24 survivors in one view")
        after = check_view(c, 24, "shrink")
        check(len({v["epoch"] for v in after.values()}) == 1 and next(iter(after.values()))["epoch"] == 2,
              "shrink: the eight notices did not coalesce into epoch 2")
        for v in victims:
            check(c.workers[v].exit_event()["state"] == "released", f"shrink: victim {v} was not released")
        order = sorted(after, key=lambda w: first[w]["rank"])
        check([after[w]["rank"] for w in order] == list(range(24)), "shrink: survivors did not keep their order")

        # Eight joiners: appended after the survivors, who keep their ranks.
        c.add_workers([f"j{i}" for i in range(8)])
        wait_until(lambda: c.converged(32), 30, "32 workers after the expand")
        grown = check_view(c, 32, "expand")
        check(all(grown[w]["rank"] == after[w]["rank"] for w in after), "expand: a survivor's rank moved")
        check(sorted(grown[f"j{i}"]["rank"] for i in range(8)) == list(range(24, 32)),
              "expand: joiners were not appended")
        check(c.status()["epoch"] == next(iter(grown.values()))["epoch"], "expand: status disagrees with workers")
        check_history(c, "grow")
    finally:
        c.stop()


def scenario_kill_worker_mid_prepare(tmp):
    print("kill -9 a worker while a proposal is open", flush=True)
    # Reconciliation (1 s) runs on the client's thread and holds its heartbeats back: the lease must outlast it.
    c = Cluster(tmp, "kill", ["--lease-ms", "3000", "--reconnect-grace-ms", "1000", "--prepare-timeout-ms", "4000",
                              "--batch-window-ms", "100"])
    try:
        c.start_coordinator()
        c.add_workers([f"w{i}" for i in range(4)], ["--prepare-delay-ms", "1000"])
        wait_until(lambda: c.converged(4), 30, "4 workers in one view")
        c.add_workers(["w4"], ["--prepare-delay-ms", "1000"])
        wait_until(lambda: c.status()["phase"] == "preparing", 10, "the expand's proposal")
        c.workers["w1"].kill()
        wait_until(lambda: c.converged(4), 30, "the 4 others in a view without the killed worker")
        last = check_view(c, 4, "kill")
        check("w1" not in last, "kill: the killed worker is still in the view")
        check_history(c, "kill")
    finally:
        c.stop()


def scenario_kill_coordinator(tmp, crash_point):
    print(f"kill -9 the coordinator after {crash_point}, restart it", flush=True)
    c = Cluster(tmp, "crash-" + crash_point.replace(":", "-"),
                ["--lease-ms", "3000", "--reconnect-grace-ms", "8000", "--batch-window-ms", "100"])
    try:
        c.start_coordinator({"GPUOPS_RESCALE_CRASH_AFTER": crash_point})
        c.add_workers([f"w{i}" for i in range(4)])
        # The crash comes during the bootstrap or during the shrink that follows it.
        try:
            wait_until(lambda: c.converged(4) or c.coord.poll() is not None, 20, "the first view or the crash")
            if c.coord.poll() is None:
                c.admin("shrink", "--count", "1")
        except TimeoutError:
            pass
        wait_until(lambda: c.coord.poll() is not None, 20, f"the coordinator to crash after {crash_point}")
        check(c.coord.returncode == -signal.SIGKILL, f"{crash_point}: the coordinator did not die by SIGKILL")
        committed_before = max((w.last_commit() or {"epoch": 0})["epoch"] for w in c.workers.values())
        c.start_coordinator()  # same database, same port, no crash point
        # The restarted coordinator's view is authoritative: a victim whose removal committed just before the
        # crash learns it on resume and leaves.
        def settled():
            s = c.status()
            return s["phase"] == "idle" and c.converged(s["size"])
        wait_until(settled, 30, "the workers agreeing with the restarted coordinator")
        status = c.status()
        size = status["size"]
        last = check_view(c, size, crash_point)
        check(status["epoch"] >= committed_before, f"{crash_point}: committed epoch {committed_before} was lost")
        check(status["epoch"] == next(iter(last.values()))["epoch"], f"{crash_point}: status disagrees with workers")
        # The restarted coordinator still makes progress: one more member leaves.
        if size > 1:
            rc, _, err = c.admin("shrink", "--count", "1")
            check(rc == 0, f"{crash_point}: shrink after the restart refused: {err.strip()}")
            wait_until(lambda: c.converged(size - 1), 30, "the shrink after the restart")
            check_view(c, size - 1, f"{crash_point} then shrink")
        check_history(c, crash_point)
        print(f"  epochs: {committed_before} committed before the crash, {status['epoch']} after the restart, "
              f"{c.status()['epoch']} after one more shrink; {sum(w.proc.poll() is None for w in c.workers.values())} "
              f"workers running", flush=True)
    finally:
        c.stop()


def main():
    global TOOL
    TOOL = os.path.abspath(sys.argv[1])
    wanted = set(sys.argv[2:])
    with tempfile.TemporaryDirectory(prefix="rescale-it-") as tmp:
        scenarios = [("grow", lambda: scenario_bootstrap_shrink_expand(tmp)),
                     ("kill-worker", lambda: scenario_kill_worker_mid_prepare(tmp))]
        for point in ["REGISTER:3", "PROPOSE:1", "COMMIT:1", "PROPOSE:2", "COMMIT:2"]:
            scenarios.append((f"crash-{point}", lambda p=point: scenario_kill_coordinator(tmp, p)))
        for name, run in scenarios:
            if wanted and name not in wanted:
                continue
            started = time.monotonic()
            try:
                run()
            except (TimeoutError, RuntimeError) as e:
                check(False, f"{name}: {e}")
            print(f"  {name}: {time.monotonic() - started:.1f} s", flush=True)
    if FAILURES:
        print(f"{len(FAILURES)} failures", flush=True)
        return 1
    print("all scenarios passed", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
