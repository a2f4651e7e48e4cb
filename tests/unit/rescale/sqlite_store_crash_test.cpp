// Crash recovery at the store level: a child process runs a coordinator over a SqliteRecordStore and is killed
// right after its k-th durable append, for every k of the schedule; the parent reopens the database, restarts the
// coordinator from it and checks research/rescale.md §7 invariants 1, 7 and 13 and the §6.7 recovery rules.
#include <catch2/catch.hpp>

#include <algorithm>
#include <csignal>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

#include "gpuops/rescale/coordinator.hpp"
#include "gpuops/rescale/sqlite_store.hpp"

#include "support/temp_dir.hpp"

using namespace gpuops;
using namespace gpuops::rescale;

namespace {

constexpr std::string_view job = "crash-job";

/// A process kill cannot tell a synced page from a cached one, so these databases may live on tmpfs, where fsync
/// costs nothing: the crash schedules sync several hundred times. Surviving power loss is synchronous=FULL's part,
/// which sqlite_store_test.cpp checks.
std::filesystem::path scratch_base() {
    std::error_code ec;
    if (std::filesystem::is_directory("/dev/shm", ec)) return "/dev/shm";
    return std::filesystem::temp_directory_path();
}

CoordinatorConfig crash_config() {
    CoordinatorConfig c;
    c.job = std::string(job);
    c.token = "t";
    c.admin_token = "a";
    c.batch_window_ms = 10;
    // Nobody expires while a schedule runs: only the crash changes what happens.
    c.lease_ms = 600'000;
    c.reconnect_grace_ms = 600'000;
    c.session_seed = 42;
    return c;
}

/// A coordinator shell over a SqliteRecordStore, like the server's: consecutive persists go to the store as one
/// batch, and each batch is durable before the send after it. Its workers answer like the client library (§6.4):
/// SAFE_POINT (and DRAINED when a victim) on TRANSITION, ACK on PREPARE (a NACK once told to refuse).
class Shell {
public:
    using OnDurable = std::function<void(std::span<const Record>)>;
    using OnSend = std::function<void(const std::string& worker, const Message&)>;

    Shell(SqliteRecordStore& store, Coordinator::Started started, TimeMs now, OnDurable on_durable = {},
          OnSend on_send = {})
        : store_(store),
          coord_(std::move(started.coordinator)),
          now_(now),
          on_durable_(std::move(on_durable)),
          on_send_(std::move(on_send)) {
        run(started.actions);
    }

    const Coordinator& coordinator() const { return coord_; }
    const std::vector<Record>& appended() const { return appended_; }
    /// From now on `worker` answers PREPARE with a NACK.
    void refuse_prepare(const std::string& worker) { refusing_.insert(worker); }

    /// A fresh registration, or a resume when `resume` is given. Returns the WELCOME, if one came.
    std::optional<Welcome> hello(const std::string& worker, std::optional<ResumeInfo> resume = std::nullopt) {
        const ConnId conn = next_conn_++;
        conns_[conn] = worker;
        conn_of_[worker] = conn;
        welcomes_.erase(worker);
        request(conn, Hello{std::string(job), "t", worker, worker + "#1", "host", "addr-" + worker, {}, resume});
        const auto it = welcomes_.find(worker);
        return it == welcomes_.end() ? std::nullopt : std::optional<Welcome>(it->second);
    }
    void put(const std::string& worker, Put m) { request(conn_of_.at(worker), std::move(m)); }
    void admin(const AdminCommand& command) {
        run(coord_.on_admin(now_, command).second);
        settle();
    }
    void tick(TimeMs dt) {
        now_ += dt;
        run(coord_.on_tick(now_));
        settle();
    }
    MemberId member(const std::string& worker) const { return members_.at(worker); }

private:
    void request(ConnId conn, Message m) {
        run(coord_.on_message(now_, conn, {++seq_, std::move(m)}));
        settle();
    }

    /// Worker answers go through the coordinator one at a time, in the order they were produced.
    void settle() {
        while (!inbox_.empty()) {
            auto [conn, m] = std::move(inbox_.front());
            inbox_.pop_front();
            run(coord_.on_message(now_, conn, {++seq_, std::move(m)}));
        }
    }

    void run(const Actions& actions) {
        std::vector<Record> batch;
        for (const Action& a : actions) {
            if (const auto* p = std::get_if<PersistAction>(&a)) {
                batch.push_back(p->record);
                continue;
            }
            flush(batch);  // write before send
            if (const auto* s = std::get_if<SendAction>(&a)) deliver(s->conn, *s->message);
        }
        flush(batch);
    }

    void flush(std::vector<Record>& batch) {
        if (batch.empty()) return;
        if (batch.size() == 1) {
            store_.append(batch.front());
        } else {
            store_.append_batch(batch);
        }
        appended_.insert(appended_.end(), batch.begin(), batch.end());
        if (on_durable_) on_durable_(batch);
        batch.clear();
    }

    void deliver(ConnId conn, const Message& message) {
        const auto it = conns_.find(conn);
        if (it == conns_.end()) return;
        const std::string& worker = it->second;
        if (on_send_) on_send_(worker, message);
        if (const auto* w = std::get_if<Welcome>(&message)) {
            welcomes_[worker] = *w;
            members_[worker] = w->member_id;
        } else if (const auto* t = std::get_if<Transition>(&message)) {
            inbox_.emplace_back(conn, SafePoint{t->from_epoch, t->transition_id});
            const auto m = members_.find(worker);
            if (m != members_.end() && std::count(t->victims.begin(), t->victims.end(), m->second) != 0)
                inbox_.emplace_back(conn, Drained{t->from_epoch, t->transition_id});
        } else if (const auto* p = std::get_if<Prepare>(&message)) {
            const bool ok = !refusing_.contains(worker);
            inbox_.emplace_back(conn, Ack{p->epoch, p->view_hash, ok, ok ? "" : "endpoints failed"});
        }
    }

    SqliteRecordStore& store_;
    Coordinator coord_;
    TimeMs now_;
    OnDurable on_durable_;
    OnSend on_send_;
    std::vector<Record> appended_;
    std::deque<std::pair<ConnId, Message>> inbox_;
    std::map<ConnId, std::string> conns_;
    std::map<std::string, ConnId> conn_of_;  ///< the worker's latest connection
    std::set<std::string> refusing_;
    std::map<std::string, Welcome> welcomes_;
    std::map<std::string, MemberId> members_;
    ConnId next_conn_ = 1;
    std::uint64_t seq_ = 0;
};

/// Everything the coordinator can record: registrations, an initial view, an expand, a job KV entry, a planned
/// shrink with a drained victim, and a joiner that NACKs (ABORT + DEAD, back to the committed view).
void schedule(Shell& shell) {
    for (const char* w : {"w0", "w1", "w2"})
        shell.hello(w);
    shell.tick(20);  // epoch 1
    shell.hello("w3");
    shell.tick(20);  // epoch 2: TRANSITION, SAFE_POINTs, PROPOSE, ACKs, COMMIT
    shell.put("w0", Put{2, "rkey", "AAEC", KvScope::job});
    shell.admin(ShrinkCmd{"a", {shell.member("w1")}, 0, std::nullopt});
    shell.tick(20);  // epoch 3 without w1
    shell.refuse_prepare("w4");
    shell.hello("w4");
    shell.tick(20);  // epoch 4 proposed, refused by w4: aborted
    shell.tick(20);
}

// ---- the child: runs the schedule and reports what became durable and what was sent, then dies ----------------------

void report(int fd, const json_io::Json& line) {
    const std::string text = line.dump() + "\n";
    std::size_t done = 0;
    while (done < text.size()) {
        const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
        if (n <= 0) ::_exit(3);
        done += static_cast<std::size_t>(n);
    }
}

/// Where the child dies: right after its n-th durable append, or right after the n-th COMMIT message it sends
/// (the moment when write-after-send would lose a decision that a worker already acted on).
struct CrashPoint {
    bool after_commit_send = false;
    std::size_t n = 0;
};

[[noreturn]] void child(const std::filesystem::path& file, CrashPoint crash, int fd) {
    try {
        SqliteRecordStore store(file, job);
        std::size_t appends = 0;
        std::size_t commits = 0;
        const auto on_durable = [&](std::span<const Record> batch) {
            for (const Record& r : batch)
                report(fd, {{"t", "R"}, {"rec", to_json(r)}});
            // The process dies with the database open and the WAL not checkpointed.
            if (!crash.after_commit_send && ++appends == crash.n) ::raise(SIGKILL);
        };
        const auto on_send = [&](const std::string& worker, const Message& m) {
            if (const auto* w = std::get_if<Welcome>(&m))
                report(fd, {{"t", "W"}, {"worker", worker}, {"member", w->member_id}});
            if (const auto* c = std::get_if<Commit>(&m)) {
                report(fd, {{"t", "C"}, {"epoch", c->epoch}, {"hash", c->view_hash}});
                if (crash.after_commit_send && ++commits == crash.n) ::raise(SIGKILL);
            }
        };
        Shell shell(store, Coordinator::start(crash_config(), store.load(), 0), 0, on_durable, on_send);
        schedule(shell);
        report(fd, {{"t", "END"}});
        ::_exit(0);
    } catch (const std::exception& e) {
        report(fd, {{"t", "ERR"}, {"what", e.what()}});
        ::_exit(2);
    }
}

struct ChildRun {
    std::vector<Record> durable;             ///< what the child's appends had made durable, in order
    std::vector<CommitRecord> commits_sent;  ///< COMMIT messages the child sent (one per epoch and worker)
    std::map<std::string, MemberId> welcomed;
    bool finished = false;
    std::string error;
    bool killed = false;
};

ChildRun run_child(const std::filesystem::path& file, CrashPoint crash) {
    int fds[2] = {-1, -1};
    REQUIRE(::pipe(fds) == 0);
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        ::close(fds[0]);
        child(file, crash, fds[1]);
    }
    ::close(fds[1]);
    std::string text;
    char buffer[4096];
    for (ssize_t n = 0; (n = ::read(fds[0], buffer, sizeof buffer)) > 0;)
        text.append(buffer, static_cast<std::size_t>(n));
    ::close(fds[0]);
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);

    ChildRun out;
    out.killed = WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
    std::istringstream lines(text);
    for (const json_io::Json& line : json_io::parse_lines(lines, "child")) {
        const auto t = line.at("t").get<std::string>();
        if (t == "R") out.durable.push_back(record_from_json(line.at("rec")));
        if (t == "C") out.commits_sent.push_back({line.at("epoch").get<Epoch>(), line.at("hash").get<std::string>()});
        if (t == "W") out.welcomed[line.at("worker").get<std::string>()] = line.at("member").get<MemberId>();
        if (t == "END") out.finished = WIFEXITED(status) && WEXITSTATUS(status) == 0;
        if (t == "ERR") out.error = line.at("what").get<std::string>();
    }
    return out;
}

// ---- the parent: what a restarted coordinator must find
// ---------------------------------------------------------------

template <typename R>
std::vector<R> all_of(const std::vector<Record>& records) {
    std::vector<R> out;
    for (const auto& r : records)
        if (const auto* x = std::get_if<R>(&r)) out.push_back(*x);
    return out;
}

/// What the log says the restart must come back to.
struct Expected {
    Epoch committed = 0;
    std::vector<MemberId> view;
    Epoch highest = 0;
    std::optional<Epoch> open;  ///< a PROPOSE with neither COMMIT nor ABORT after it
};

Expected expected_from(const std::vector<Record>& records) {
    Expected e;
    std::map<Epoch, std::vector<MemberId>> proposed;
    for (const Record& r : records) {
        if (const auto* p = std::get_if<ProposeRecord>(&r)) {
            proposed[p->epoch] = p->members;
            e.highest = std::max(e.highest, p->epoch);
            e.open = p->epoch;
        } else if (const auto* c = std::get_if<CommitRecord>(&r)) {
            e.committed = c->epoch;
            e.view = proposed.at(c->epoch);
            e.open.reset();
        } else if (std::holds_alternative<AbortRecord>(r)) {
            e.open.reset();
        }
    }
    return e;
}

void check_restart(const std::filesystem::path& file, const ChildRun& run) {
    SqliteRecordStore store(file, job);  // the dead child's lock is gone with it
    const std::vector<Record> records = store.load();
    // Every append the child saw return is there, in order, and nothing else.
    CHECK(records == run.durable);
    // Write-before-send (§7.7): every COMMIT a worker received is in the database.
    const auto commits = all_of<CommitRecord>(records);
    for (const CommitRecord& sent : run.commits_sent)
        CHECK(std::find(commits.begin(), commits.end(), sent) != commits.end());

    const Expected expected = expected_from(records);
    auto started = Coordinator::start(crash_config(), records, 1'000);
    CHECK(started.coordinator.view().epoch == expected.committed);
    CHECK(started.coordinator.view().members == expected.view);
    CHECK(started.coordinator.highest_epoch() == expected.highest);
    const bool aborts_open = std::any_of(started.actions.begin(), started.actions.end(), [&](const Action& a) {
        const auto* p = std::get_if<PersistAction>(&a);
        return p && expected.open && p->record == Record{AbortRecord{*expected.open}};
    });
    CHECK(aborts_open == expected.open.has_value());

    Shell shell(store, std::move(started), 1'000);
    // Every member still in the job resumes with the session its REGISTER stored, and stays the same member.
    for (const RegisterRecord& r : all_of<RegisterRecord>(records)) {
        const MemberStatus status = shell.coordinator().members().at(r.member_id).status;
        if (status != MemberStatus::active && status != MemberStatus::joining) continue;
        const Epoch last = status == MemberStatus::active ? expected.committed : 0;
        const auto welcome = shell.hello(r.worker_id, ResumeInfo{r.member_id, r.session, last});
        REQUIRE(welcome.has_value());
        CHECK(welcome->member_id == r.member_id);
    }
    // A worker that heard WELCOME before the crash was registered durably first.
    for (const auto& [worker, id] : run.welcomed) {
        const auto regs = all_of<RegisterRecord>(records);
        CHECK(std::any_of(regs.begin(), regs.end(),
                          [&](const RegisterRecord& r) { return r.member_id == id && r.worker_id == worker; }));
    }

    // The next proposal takes a fresh epoch (§7.1), and the resumed job commits it.
    shell.hello("late");
    shell.tick(20);
    const auto proposals = all_of<ProposeRecord>(shell.appended());
    REQUIRE(!proposals.empty());
    CHECK(proposals.front().epoch > expected.highest);
    CHECK(shell.coordinator().view().epoch == proposals.back().epoch);
    CHECK(store.load().size() == records.size() + shell.appended().size());
}

}  // namespace

TEST_CASE("a coordinator killed after any durable append restarts from the database without losing a decision") {
    const test::TempDir dir(scratch_base());
    std::size_t crash_points = 0;
    std::set<std::string> kinds_at_crash;
    for (std::size_t k = 1;; ++k) {
        INFO("killed after durable append " << k);
        REQUIRE(k < 100);
        const auto file = dir.path() / ("append-" + std::to_string(k) + ".db");
        const ChildRun run = run_child(file, {false, k});
        REQUIRE(run.error.empty());
        REQUIRE((run.killed || run.finished));
        if (run.killed) {
            ++crash_points;
            REQUIRE(!run.durable.empty());
            kinds_at_crash.insert(std::string(std::visit([](const auto& r) { return r.kind; }, run.durable.back())));
        }
        check_restart(file, run);
        if (run.finished) break;
    }
    // The schedule makes every kind of decision the coordinator stores, and a crash follows each kind.
    CHECK(crash_points >= 15);
    CHECK(kinds_at_crash ==
          std::set<std::string>{"CONFIG", "REGISTER", "PROPOSE", "COMMIT", "ABORT", "DEAD", "KV_PUT"});
}

TEST_CASE("a coordinator killed right after sending a COMMIT finds that COMMIT in the database") {
    const test::TempDir dir(scratch_base());
    std::size_t crash_points = 0;
    for (std::size_t j = 1;; ++j) {
        INFO("killed after COMMIT message " << j);
        REQUIRE(j < 100);
        const auto file = dir.path() / ("commit-" + std::to_string(j) + ".db");
        const ChildRun run = run_child(file, {true, j});
        REQUIRE(run.error.empty());
        REQUIRE((run.killed || run.finished));
        if (run.killed) {
            ++crash_points;
            REQUIRE(run.commits_sent.size() == j);
        }
        check_restart(file, run);
        if (run.finished) break;
    }
    CHECK(crash_points >= 3);
}
