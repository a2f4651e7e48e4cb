#!/usr/bin/env python3
"""rescale-coord with real processes on 127.0.0.1: a coordinator (serve, SQLite store) and reference workers.

Scenarios (issue 6): bootstrap 32 workers; shrink 8 at once from notices; expand 8; kill -9 a worker while a
proposal is open; kill -9 the coordinator right after each kind of durable write and restart it on the same
database and port. After each, every surviving worker must end in the same view with its state intact, and
nothing may hang (every wait has a deadline; a scenario that runs past it fails).

The coordinator kills itself with SIGKILL right after the chosen append (GPUOPS_RESCALE_CRASH_AFTER=KIND:n, counted
within one coordinator process). Every record kind is covered, each by a driver that causes the write:

  crash-REGISTER:3, crash-PROPOSE:1, crash-COMMIT:1   during the bootstrap of 4 workers
  crash-PROPOSE:2, crash-COMMIT:2                     during the shrink (`shrink --count 1`) that follows it
  crash-START:1      a restart of a restarted coordinator: the first dies after PROPOSE:2 (a shrink's proposal
                     open), the second right after its own START (before the ABORT that recovery writes); the
                     third must abort the open proposal, run as incarnation 3 and never commit its epoch
  crash-CONFIG:2     after `set --min 3` (serve --min 4): the restarted coordinator keeps min 3 over its command
                     line, so the shrink to 3 that follows is accepted
  crash-ABORT:1      a joiner that never ACKs (long --prepare-delay-ms) is killed while the expand's proposal is
                     open: DEAD, then ABORT, and the crash before the ABORT goes out. The survivors ACKed that
                     proposal: they must hear its ABORT when they resume (or they would ignore the next TRANSITION);
                     the aborted epoch is never committed, and the next view skips it
  crash-DEAD:1       a member killed, its reconnect grace expiring: it stays dead and leaves the view
  crash-LEFT:1       a member stopped (SIGTERM: LEAVE); it stays left (not dead) and leaves the view. (A victim of
                     a planned shrink writes no LEFT: a COMMIT releases it.)
  crash-KV_PUT:4     after the last PUT of the first epoch's PUT/FENCE address exchange, before its fence completes:
                     every worker's fence fails at once (it never hangs), the view survives, and the next epoch's
                     exchange succeeds
  crash-CLOSE:1      after `close`, before any RELEASE: the restarted coordinator keeps the job closed (status
                     says so), the workers end stopped ("the job is closed"), a new worker is refused, admin
                     changes are refused, and the coordinator then stops by itself

After every crash the last durable record must be of the armed kind, no worker may have seen a commit that is not
durable, no committed epoch may be lost, an epoch proposed but not committed before the crash is never committed,
and (but for CLOSE) the survivors agree on one view with state intact and the restarted coordinator still makes
progress: one more member leaves by `shrink --count 1`, drained and released (not evicted at its drain deadline).

Usage: rescale_integration.py PATH/TO/rescale-coord [SCENARIO...]
"""
import json
import os
import signal
import socket
import sqlite3
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

    def start_coordinator(self, env_extra=None, may_die=False):
        """Starts `serve` and waits for it to listen; with `may_die`, dying first (a crash point hit while starting)
        is no error."""
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
            if may_die:
                return
            raise RuntimeError(f"the coordinator exited: {self.coord.stderr.read()}")
        with open(port_file) as f:
            self.port = int(f.read())

    def coord_exited(self):
        return self.coord is not None and self.coord.poll() is not None

    def records(self):
        """The coordinator's durable records in order, as (kind, body). Readers never block the coordinator."""
        con = sqlite3.connect(f"file:{self.db}?mode=ro", uri=True, timeout=5)
        try:
            rows = con.execute("SELECT kind, body FROM records ORDER BY lsn")
            return [(kind, json.loads(body)) for kind, body in rows]
        finally:
            con.close()

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

    def member_status(self, status, worker_id):
        """The coordinator's status ("active", "dead", "left", ...) of `worker_id`'s member in a status document."""
        return next((m["status"] for m in status["members"] if m["worker_id"] == worker_id), None)

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


def check_view(cluster, size, what, exchange=True):
    """The shared view: one hash, ranks 0..size-1 once each, state intact, the address exchange complete (unless
    `exchange` is false: the exchange of a view committed just before a coordinator crash fails)."""
    last = {w.id: w.last_commit() for w in cluster.live()}
    check(len(last) == size, f"{what}: {len(last)} live workers, expected {size}")
    check(len({(c["epoch"], c["hash"]) for c in last.values()}) == 1, f"{what}: workers disagree on the view")
    check(sorted(c["rank"] for c in last.values()) == list(range(size)), f"{what}: ranks are not 0..{size - 1}")
    check(all(c["buffer_ok"] for c in last.values()), f"{what}: a worker's buffer was corrupted")
    check(not exchange or all(c.get("exchange_ok", True) for c in last.values()),
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


# ---- kill -9 the coordinator after a durable write, restart it ----------------------------------------------------

CRASH_ENV = "GPUOPS_RESCALE_CRASH_AFTER"
# A long grace: no member may die while the coordinator is down or restarting (a restart grants max(grace, lease)).
CRASH_SERVE = ["--lease-ms", "3000", "--reconnect-grace-ms", "8000", "--batch-window-ms", "100"]
# A short grace, for scenarios that wait for a killed worker to be declared dead; the restart grants the (longer) lease.
SHORT_GRACE_SERVE = ["--lease-ms", "6000", "--reconnect-grace-ms", "400", "--batch-window-ms", "100"]


def bootstrapped(c, size=4):
    """Waits for `size` workers in one view, or for the coordinator to die first; whether it still runs."""
    wait_until(lambda: c.converged(size) or c.coord_exited(), 20, f"{size} workers in one view (or the crash)")
    return not c.coord_exited()


def drive_bootstrap(c):
    bootstrapped(c)


def drive_shrink(c):
    if bootstrapped(c):
        c.admin("shrink", "--count", "1")  # its reply may be lost in the crash


def drive_set_min(c):
    if bootstrapped(c):
        c.admin("set", "--min", "3")


def drive_kill_joiner_in_prepare(c):
    """A joiner whose endpoint reconciliation outlasts the prepare timeout is killed while the expand's proposal
    waits for its ACK: its grace (or, at the latest, the prepare timeout) declares it dead and aborts the proposal."""
    if not bootstrapped(c):
        return
    c.add_workers(["j0"], ["--prepare-delay-ms", "30000"])

    def preparing_or_crashed():
        try:
            return c.status()["phase"] == "preparing"
        except RuntimeError:  # the crash came first: no status to ask for
            return c.coord_exited()
    wait_until(preparing_or_crashed, 15, "the expand's proposal")
    c.workers["j0"].kill()


def drive_kill_member(c):
    if bootstrapped(c):
        c.workers["w3"].kill()


def drive_leave(c):
    if bootstrapped(c):
        c.workers["w3"].stop()  # SIGTERM: the worker sends LEAVE before it exits


def drive_close(c):
    if bootstrapped(c):
        c.admin("close")


def crash_once(c, point, drive, workers=()):
    """Starts the coordinator armed with `point`, starts `workers`, lets `drive` cause the write, and waits for the
    SIGKILL. The crash must come, and right after a record of the armed kind; returns the durable records."""
    c.start_coordinator({CRASH_ENV: point}, may_die=True)
    c.add_workers(workers)
    if drive is not None and not c.coord_exited():
        drive(c)
    wait_until(c.coord_exited, 20, f"the coordinator to crash after {point}")
    check(c.coord.returncode == -signal.SIGKILL,
          f"{point}: the coordinator did not die by SIGKILL (exit {c.coord.returncode}): {c.coord.stderr.read()}")
    records = c.records()
    kind = point.split(":")[0]
    check(records and records[-1][0] == kind,
          f"{point}: the last durable record is {records[-1][0] if records else None}, not {kind}")
    return records


def uncommitted_epochs(records):
    """Epochs proposed but not committed in `records`: they may never be committed later."""
    proposed = {body["epoch"] for kind, body in records if kind == "PROPOSE"}
    return proposed - {body["epoch"] for kind, body in records if kind == "COMMIT"}


def check_recovered(c, name, committed_before, exchange=True):
    """After the restart: the workers agree with the coordinator on one view with state intact, no committed epoch
    is lost, and the coordinator still makes progress (one more member leaves). Returns the status after the
    restart."""
    # The restarted coordinator's view is authoritative: a victim whose removal committed just before the crash
    # learns it on resume and leaves.
    def settled():
        s = c.status()
        return s["phase"] == "idle" and c.converged(s["size"])
    wait_until(settled, 30, "the workers agreeing with the restarted coordinator")
    status = c.status()
    size = status["size"]
    last = check_view(c, size, name, exchange)
    check(status["epoch"] >= committed_before, f"{name}: committed epoch {committed_before} was lost")
    check(status["epoch"] == next(iter(last.values()))["epoch"], f"{name}: status disagrees with workers")
    if size > 1:
        if size - 1 < status["min_size"]:  # a scenario that needed --min for a deterministic bootstrap
            rc, _, err = c.admin("set", "--min", str(size - 1))
            check(rc == 0, f"{name}: set --min after the restart refused: {err.strip()}")
        victim = c.workers[next(w for w, v in last.items() if v["rank"] == size - 1)]
        rc, _, err = c.admin("shrink", "--count", "1")
        check(rc == 0, f"{name}: shrink after the restart refused: {err.strip()}")
        wait_until(lambda: c.converged(size - 1) and victim.exit_event(), 30, "the shrink after the restart")
        check_view(c, size - 1, f"{name} then shrink")
        # Drained and released: not evicted at the drain deadline because a survivor never reached its safe point.
        check(victim.exit_event()["state"] == "released",
              f"{name}: the shrink's victim {victim.id} ended {victim.exit_event()['state']}, not released")
    check_history(c, name)
    print(f"  epochs: {committed_before} committed before the crash, {status['epoch']} after the restart, "
          f"{c.status()['epoch']} after one more shrink; {sum(w.proc.poll() is None for w in c.workers.values())} "
          f"workers running", flush=True)
    return status


def check_closed_after_restart(c, name, committed_before):
    """A job closed just before the crash stays closed: the coordinator says so, the workers that missed their
    RELEASE learn it when they resume (ERROR CLOSED: they end stopped), a new worker and admin changes are refused,
    and the coordinator then stops by itself (once the resume window is over)."""
    status = c.status()
    check(status["closed"] is True, f"{name}: the restarted coordinator does not say the job is closed")
    check(status.get("close_reason") == "closed before the restart",
          f"{name}: close reason {status.get('close_reason')}")
    check(status["epoch"] == committed_before, f"{name}: epoch {status['epoch']}, expected {committed_before}")
    c.add_workers(["late"])
    wait_until(lambda: all(w.exit_event() for w in c.workers.values()), 20,
               "every worker to learn that the job is closed")
    for w in c.workers.values():
        e = w.exit_event()
        check(e["state"] == "stopped" and e["reason"] == "the job is closed",
              f"{name}: {w.id} ended {e['state']} ({e['reason']}), not stopped by the close")
        check(e["buffer_ok"], f"{name}: {w.id}'s buffer was corrupted")
    check(not c.workers["late"].commits(), f"{name}: a worker joined the closed job")
    check_history(c, name)
    rc, _, err = c.admin("shrink", "--count", "1")
    check(rc != 0 and "CLOSED" in err, f"{name}: shrink of a closed job was not refused as CLOSED: {rc} {err.strip()}")
    wait_until(c.coord_exited, 20, "the coordinator of the closed job to stop by itself")
    check(c.coord.returncode == 0, f"{name}: the coordinator of the closed job exited {c.coord.returncode}")
    print(f"  epoch {committed_before} kept; {len(c.workers)} workers stopped by the close", flush=True)
    return status


def scenario_kill_coordinator(tmp, name, crashes, serve_args=CRASH_SERVE, closed=False, exchange=True, expect=None):
    """Four workers; the coordinator is started armed with each (crash point, driver) of `crashes` in turn, the
    driver causes the write, and the coordinator must die right after it. Then it is restarted on the same
    database and port without a crash point, and must recover (or, with `closed`, stay closed). `expect(c, records,
    status)` checks what the scenario's record must have changed after the restart."""
    print(f"kill -9 the coordinator after {' then '.join(p for p, _ in crashes)}, restart it", flush=True)
    c = Cluster(tmp, name.replace(":", "-"), serve_args)
    try:
        records = []
        for i, (point, drive) in enumerate(crashes):
            records = crash_once(c, point, drive, [f"w{k}" for k in range(4)] if i == 0 else [])
        committed_before = max((body["epoch"] for kind, body in records if kind == "COMMIT"), default=0)
        seen_before = max((w.last_commit() or {"epoch": 0})["epoch"] for w in c.workers.values())
        check(seen_before <= committed_before,
              f"{name}: a worker saw epoch {seen_before}, but the last durable COMMIT is {committed_before}")
        c.start_coordinator()  # same database, same port, no crash point
        if closed:
            status = check_closed_after_restart(c, name, committed_before)
        else:
            status = check_recovered(c, name, committed_before, exchange)
        reused = {c2["epoch"] for w in c.workers.values() for c2 in w.commits()} & uncommitted_epochs(records)
        check(not reused,
              f"{name}: epoch(s) {sorted(reused)}, proposed but not committed before the crash, were committed")
        if expect:
            expect(c, records, status)
    finally:
        c.stop()


def expect_start(c, records, status):
    check(status["coord_incarnation"] == 3,
          f"START: incarnation {status['coord_incarnation']} after two crashed starts, expected 3")
    check(records[-1][1].get("coord_incarnation") == 2, f"START: the second start wrote {records[-1][1]}")
    open_epochs = uncommitted_epochs(records)
    check(bool(open_epochs), "START: no proposal was open at the crash")
    after = c.records()[len(records):]
    aborted = {body["epoch"] for kind, body in after if kind == "ABORT"}
    check(open_epochs <= aborted, f"START: the open proposal {sorted(open_epochs)} was not aborted on recovery")


def expect_config(c, records, status):
    check(records[-1][1]["min_size"] == 3, f"CONFIG: the crash came after {records[-1][1]}, not after set --min 3")
    check(status["min_size"] == 3, f"CONFIG: min size {status['min_size']} after the restart, expected the set 3")


def expect_abort(c, records, status):
    aborted = records[-1][1]["epoch"]
    proposals = [body for kind, body in records if kind == "PROPOSE"]
    joiner = next(body["member_id"] for kind, body in records if kind == "REGISTER" and body["worker_id"] == "j0")
    check(proposals and proposals[-1]["epoch"] == aborted and joiner in proposals[-1]["members"],
          f"ABORT: aborted epoch {aborted} is not the expand's proposal {proposals[-1] if proposals else None}")
    check(records[-2][0] == "DEAD" and records[-2][1]["member_id"] == joiner,
          f"ABORT: the abort did not follow the joiner's DEAD record: {records[-2]}")
    check(c.member_status(status, "j0") == "dead", f"ABORT: the killed joiner is {c.member_status(status, 'j0')}")
    final = c.status()["epoch"]
    check(final > aborted, f"ABORT: the view after the restart ({final}) is not past the aborted epoch {aborted}")


def expect_gone(worker_id, member_status):
    def expect(c, records, status):
        check(c.member_status(status, worker_id) == member_status,
              f"{member_status}: {worker_id} is {c.member_status(status, worker_id)} after the restart")
        check(status["size"] == 3, f"{member_status}: view of {status['size']} after the restart, expected 3")
        exit_event = c.workers[worker_id].exit_event()
        if member_status == "left":
            check(exit_event is not None and exit_event["state"] == "stopped",
                  f"LEFT: the worker that left ended {exit_event}")
    return expect


def expect_kv(c, records, status):
    puts = [body for kind, body in records if kind == "KV_PUT"]
    check(len(puts) == 4 and {p["epoch"] for p in puts} == {1} and len({p["member_id"] for p in puts}) == 4,
          f"KV_PUT: durable PUTs {puts}")
    # The fence of epoch 1 cannot complete: it fails when the connection drops (or, for a FENCE the client had not
    # sent yet when it did, at the worker's fence timeout), and the worker goes on.
    for w in c.workers.values():
        interrupted = [e for e in w.commits() if e["epoch"] == 1]
        check(len(interrupted) == 1 and interrupted[0].get("exchange_ok") is False and
              interrupted[0].get("exchange_error"),
              f"KV_PUT: {w.id}'s exchange in epoch 1 did not fail on the crash: {interrupted}")


# (name, crashes, options): every record kind at least once.
CRASH_SCENARIOS = [
    ("crash-REGISTER:3", [("REGISTER:3", drive_shrink)], {}),
    ("crash-PROPOSE:1", [("PROPOSE:1", drive_shrink)], {}),
    ("crash-COMMIT:1", [("COMMIT:1", drive_shrink)], {}),
    ("crash-PROPOSE:2", [("PROPOSE:2", drive_shrink)], {}),
    ("crash-COMMIT:2", [("COMMIT:2", drive_shrink)], {}),
    # The hook counts appends within one process, and each start writes one START: START:1 of the second process.
    ("crash-START:1", [("PROPOSE:2", drive_shrink), ("START:1", None)], {"expect": expect_start}),
    ("crash-CONFIG:2", [("CONFIG:2", drive_set_min)],
     {"serve_args": CRASH_SERVE + ["--min", "4"], "expect": expect_config}),
    ("crash-ABORT:1", [("ABORT:1", drive_kill_joiner_in_prepare)],
     {"serve_args": SHORT_GRACE_SERVE + ["--prepare-timeout-ms", "3000"], "expect": expect_abort}),
    ("crash-DEAD:1", [("DEAD:1", drive_kill_member)],
     {"serve_args": SHORT_GRACE_SERVE, "expect": expect_gone("w3", "dead")}),
    ("crash-LEFT:1", [("LEFT:1", drive_leave)], {"expect": expect_gone("w3", "left")}),
    # The last PUT of epoch 1 (4 members): every worker has sent its PUT and FENCE, no fence can complete.
    ("crash-KV_PUT:4", [("KV_PUT:4", drive_bootstrap)],
     {"serve_args": CRASH_SERVE + ["--min", "4"], "exchange": False, "expect": expect_kv}),
    # The restarted coordinator of the closed job serves for max(lease, grace) = 4 s, then stops by itself.
    ("crash-CLOSE:1", [("CLOSE:1", drive_close)],
     {"serve_args": ["--lease-ms", "4000", "--reconnect-grace-ms", "1000", "--batch-window-ms", "100"],
      "closed": True}),
]


def main():
    global TOOL
    TOOL = os.path.abspath(sys.argv[1])
    wanted = set(sys.argv[2:])
    with tempfile.TemporaryDirectory(prefix="rescale-it-") as tmp:
        scenarios = [("grow", lambda: scenario_bootstrap_shrink_expand(tmp)),
                     ("kill-worker", lambda: scenario_kill_worker_mid_prepare(tmp))]
        for name, crashes, options in CRASH_SCENARIOS:
            scenarios.append((name, lambda n=name, cr=crashes, o=options: scenario_kill_coordinator(tmp, n, cr, **o)))
        unknown = wanted - {name for name, _ in scenarios}
        if unknown:
            print(f"unknown scenario(s): {', '.join(sorted(unknown))}; known: {', '.join(n for n, _ in scenarios)}")
            return 2
        all_started = time.monotonic()
        for name, run in scenarios:
            if wanted and name not in wanted:
                continue
            started = time.monotonic()
            try:
                run()
            except (TimeoutError, RuntimeError, sqlite3.Error) as e:
                check(False, f"{name}: {e}")
            print(f"  {name}: {time.monotonic() - started:.1f} s", flush=True)
        print(f"total: {time.monotonic() - all_started:.1f} s", flush=True)
    if FAILURES:
        print(f"{len(FAILURES)} failures", flush=True)
        return 1
    print("all scenarios passed", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
