// SqliteRecordStore on real files: round trips, reopening, the WAL and sync settings, refusals (newer schema, other
// job, foreign files, damaged rows, a second opener) and all-or-nothing batches.
#include <catch2/catch.hpp>

#include <csignal>
#include <string>
#include <vector>

#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gpuops/core/error.hpp"
#include "gpuops/rescale/sqlite_store.hpp"

#include "support/temp_dir.hpp"

using namespace gpuops;
using namespace gpuops::rescale;

namespace {

/// A plain connection to look at (or damage) the file behind the store's back.
class RawDb {
public:
    explicit RawDb(const std::filesystem::path& file, int flags = SQLITE_OPEN_READWRITE) {
        REQUIRE(sqlite3_open_v2(file.c_str(), &db_, flags, nullptr) == SQLITE_OK);
    }
    ~RawDb() { sqlite3_close_v2(db_); }
    RawDb(const RawDb&) = delete;
    RawDb& operator=(const RawDb&) = delete;

    void exec(const std::string& sql) {
        INFO(sql);
        REQUIRE(sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, nullptr) == SQLITE_OK);
    }
    /// The first column of the first row, as text ("" when there is no row).
    std::string text(const std::string& sql) {
        sqlite3_stmt* stmt = nullptr;
        REQUIRE(sqlite3_prepare_v2(db_, sql.c_str(), -1, &stmt, nullptr) == SQLITE_OK);
        std::string out;
        if (sqlite3_step(stmt) == SQLITE_ROW) {
            if (const unsigned char* chars = sqlite3_column_text(stmt, 0)) out = reinterpret_cast<const char*>(chars);
        }
        sqlite3_finalize(stmt);
        return out;
    }

private:
    sqlite3* db_ = nullptr;
};

/// The message of the E that `f` throws; fails the test when it throws nothing.
template <typename E, typename F>
std::string error_of(F&& f) {
    try {
        f();
    } catch (const E& e) {
        return e.what();
    }
    FAIL("no error thrown");
    return {};
}

std::vector<Record> one_of_each_kind() {
    json_io::Json meta = json_io::Json::object();
    meta["gpus"] = 8;
    return {StartRecord{3},
            ConfigRecord{2, 16, 250},
            RegisterRecord{7, "i-0abc", "i-0abc#2", "00ff", "node-1", "QUJD", meta},
            ProposeRecord{4, 3, {7, 2, 9}, "hash-4"},
            CommitRecord{4, "hash-4"},
            AbortRecord{5},
            DeadRecord{9, 4, "lease expired"},
            LeftRecord{2, 4},
            KvPutRecord{4, KvScope::job, 7, "rkey", "AAEC"},
            CloseRecord{}};
}

}  // namespace

TEST_CASE("every record kind survives a round trip through the database file") {
    const test::TempDir dir;
    const auto file = dir.path() / "coord.db";
    const std::vector<Record> records = one_of_each_kind();
    {
        SqliteRecordStore store(file, "job-1");
        store.append(records[0]);
        store.append(records[1]);
        store.append_batch(std::span(records).subspan(2));
        store.append_batch({});  // nothing to do, and no empty transaction either
    }
    const SqliteRecordStore reopened(file, "job-1");
    CHECK(reopened.load() == records);
    RawDb raw(file, SQLITE_OPEN_READONLY);
    CHECK(raw.text("SELECT group_concat(kind, ',') FROM (SELECT kind FROM records ORDER BY lsn)") ==
          "START,CONFIG,REGISTER,PROPOSE,COMMIT,ABORT,DEAD,LEFT,KV_PUT,CLOSE");
    CHECK(raw.text("SELECT group_concat(lsn, ',') FROM (SELECT lsn FROM records ORDER BY lsn)") ==
          "1,2,3,4,5,6,7,8,9,10");
    CHECK(raw.text("SELECT body FROM records WHERE lsn = 5") == R"({"r":"COMMIT","epoch":4,"view_hash":"hash-4"})");
}

TEST_CASE("an append is visible to a store opened after the writer is gone") {
    const test::TempDir dir;
    const auto file = dir.path() / "coord.db";
    {
        SqliteRecordStore store(file, "job-1");
        CHECK(store.load().empty());
        store.append(StartRecord{1});
    }
    {
        SqliteRecordStore store(file, "job-1");
        CHECK(store.load() == std::vector<Record>{StartRecord{1}});
        SqliteRecordStore moved = std::move(store);  // the lock moves along with the connection
        moved.append(CommitRecord{1, "h"});
        CHECK(error_of<UnavailableError>([&] { SqliteRecordStore again(file, "job-1"); }).find("in use") !=
              std::string::npos);
    }
    const SqliteRecordStore store(file, "job-1");
    CHECK(store.load() == std::vector<Record>{StartRecord{1}, CommitRecord{1, "h"}});
    CHECK(store.file() == file);
    CHECK(std::filesystem::exists(SqliteRecordStore::lock_file(file)));
}

TEST_CASE("the database is in WAL mode with synchronous FULL and stays readable while held") {
    const test::TempDir dir;
    const auto file = dir.path() / "coord.db";
    SqliteRecordStore store(file, "job-1");
    CHECK(store.durability() == SqliteDurability{"wal", 2, 5000});
    store.append(StartRecord{1});

    // journal_mode is a property of the file; a second connection sees it, and WAL lets it read while we write.
    RawDb reader(file, SQLITE_OPEN_READONLY);
    CHECK(reader.text("PRAGMA journal_mode") == "wal");
    CHECK(reader.text("SELECT count(*) FROM records") == "1");
    store.append(StartRecord{2});
    CHECK(reader.text("SELECT count(*) FROM records") == "2");
    CHECK(std::filesystem::exists(file.string() + "-wal"));
}

TEST_CASE("a database of another job or of a newer schema is refused with one line") {
    const test::TempDir dir;
    const auto file = dir.path() / "coord.db";
    { SqliteRecordStore store(file, "job-a"); }

    const std::string other = error_of<DataError>([&] { SqliteRecordStore store(file, "job-b"); });
    CHECK(other == "'" + file.string() + "': belongs to job 'job-a', not to job 'job-b'");

    RawDb(file).exec("UPDATE meta SET value = 2 WHERE key = 'schema_version'");
    const std::string newer = error_of<DataError>([&] { SqliteRecordStore store(file, "job-a"); });
    CHECK(newer == "'" + file.string() + "': schema version 2 is newer than this build's 1: use a newer gpuops");

    RawDb(file).exec("UPDATE meta SET value = 'x' WHERE key = 'schema_version'");
    CHECK(error_of<DataError>([&] { SqliteRecordStore store(file, "job-a"); }).find("unknown schema version 'x'") !=
          std::string::npos);
}

TEST_CASE("a file that is not a database of ours is refused and left alone") {
    const test::TempDir dir;
    dir.write("notes.txt", std::string(4096, 'x'));
    const auto text = dir.path() / "notes.txt";
    const std::string not_db = error_of<DataError>([&] { SqliteRecordStore store(text, "job"); });
    CHECK(not_db.find("'" + text.string() + "'") == 0);
    CHECK(not_db.find("file is not a database") != std::string::npos);
    CHECK(not_db.find('\n') == std::string::npos);

    const auto foreign = dir.path() / "foreign.db";
    RawDb(foreign, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE).exec("CREATE TABLE t(x)");
    CHECK(error_of<DataError>([&] { SqliteRecordStore store(foreign, "job"); }).find("not a rescale") !=
          std::string::npos);
    CHECK(RawDb(foreign).text("SELECT count(*) FROM sqlite_master WHERE name = 'records'") == "0");

    CHECK(error_of<IoError>([&] {
              SqliteRecordStore store(dir.path() / "missing" / "coord.db", "job");
          }).find("cannot open the lock file") != std::string::npos);
}

TEST_CASE("a row that does not parse is a DataError naming the file and the lsn") {
    const test::TempDir dir;
    const auto file = dir.path() / "coord.db";
    {
        SqliteRecordStore store(file, "job-1");
        store.append_batch(std::vector<Record>{StartRecord{1}, CommitRecord{1, "h"}, AbortRecord{2}});
    }
    const std::vector<std::pair<std::string, std::string>> damage{
        {"not json", "syntax error"},
        {R"({"r":"COMMIT","epoch":1})", "view_hash"},
        {R"({"r":"TELEPORT"})", "unknown record kind 'TELEPORT'"},
        {R"({"r":"ABORT","epoch":1})", "the kind column says 'COMMIT'"},
    };
    for (const auto& [body, reason] : damage) {
        INFO(body);
        {
            RawDb raw(file);
            raw.exec("UPDATE records SET body = '" + body + "' WHERE lsn = 2");
        }
        const SqliteRecordStore store(file, "job-1");
        const std::string message = error_of<DataError>([&] { (void)store.load(); });
        CHECK(message.find("'" + file.string() + "': record lsn 2: ") == 0);
        CHECK(message.find(reason) != std::string::npos);
        CHECK(message.find('\n') == std::string::npos);
    }
}

TEST_CASE("a batch is stored whole or not at all") {
    const test::TempDir dir;
    const auto file = dir.path() / "coord.db";
    SqliteRecordStore store(file, "job-1");
    store.append(StartRecord{1});
    // Invalid UTF-8 cannot become JSON text: the second record fails after the first was inserted.
    const std::vector<Record> batch{CommitRecord{1, "h"}, RegisterRecord{1, "w\xff", "i", "s", "h", "", {}}};
    CHECK(error_of<DataError>([&] { store.append_batch(batch); }).find("cannot store a REGISTER record") !=
          std::string::npos);
    CHECK(store.load() == std::vector<Record>{StartRecord{1}});
    store.append(AbortRecord{2});  // the store is still usable
    CHECK(store.load() == std::vector<Record>{StartRecord{1}, AbortRecord{2}});
}

TEST_CASE("a second opener is refused while the store is held, also from another process") {
    const test::TempDir dir;
    const auto file = dir.path() / "coord.db";
    {
        const SqliteRecordStore holder(file, "job-1");
        const std::string message = error_of<UnavailableError>([&] { SqliteRecordStore second(file, "job-1"); });
        CHECK(message == "'" + file.string() + "' is in use by another coordinator (pid " + std::to_string(::getpid()) +
                             " holds '" + file.string() + ".lock')");

        const pid_t pid = ::fork();
        REQUIRE(pid >= 0);
        if (pid == 0) {
            int code = 1;
            try {
                SqliteRecordStore second(file, "job-1");
            } catch (const UnavailableError&) {
                code = 0;
            } catch (...) {
                code = 2;
            }
            ::_exit(code);
        }
        int status = 0;
        REQUIRE(::waitpid(pid, &status, 0) == pid);
        CHECK(WIFEXITED(status));
        CHECK(WEXITSTATUS(status) == 0);
    }
    // A holder killed outright leaves no stale lock: the kernel drops a flock with its last descriptor.
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        try {
            SqliteRecordStore store(file, "job-1");
            store.append(StartRecord{9});
            ::raise(SIGKILL);  // with the store (and its lock) still open
        } catch (...) {
            ::_exit(2);
        }
    }
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    CHECK(WIFSIGNALED(status));
    const SqliteRecordStore after(file, "job-1");
    CHECK(after.load() == std::vector<Record>{StartRecord{9}});
}
