// SqliteRecordStore: the sqlite3 C API behind small RAII handles, the flock that keeps one coordinator per database,
// the schema and its version and job checks.
#include "gpuops/rescale/sqlite_store.hpp"

#include <cerrno>
#include <charconv>
#include <cstdint>
#include <optional>
#include <system_error>
#include <utility>

#include <fcntl.h>
#include <fmt/format.h>
#include <sqlite3.h>
#include <sys/file.h>
#include <unistd.h>

#include "gpuops/core/error.hpp"
#include "gpuops/core/json_io.hpp"

namespace gpuops::rescale {
namespace {

constexpr int busy_timeout_ms = 5000;

std::string errno_text() { return std::generic_category().message(errno); }

std::string_view kind_of(const Record& record) {
    return std::visit([](const auto& r) { return std::decay_t<decltype(r)>::kind; }, record);
}

// ---- the lock --------------------------------------------------------------------------------------------------

/// An exclusive flock(2) on "<db>.lock", held for the store's lifetime. Why this and not something in SQLite:
/// - the kernel drops it when the holder dies, SIGKILL included, so a crashed coordinator never leaves a stale
///   lock behind (an `owner` row with a pid would: pids are reused, and mean nothing across hosts or pid
///   namespaces);
/// - it belongs to the open file description, so a second store in the same process is refused too (the POSIX
///   fcntl locks SQLite uses are per process, and all of them go when any descriptor of the file closes);
/// - the database stays readable: keeping SQLite's write lock (a BEGIN IMMEDIATE left open) would make no append
///   durable before that transaction ends, and locking_mode=EXCLUSIVE in WAL mode shuts out readers as well.
/// The lock file is never removed: unlinking it on exit would let a waiting opener lock the old inode while a third
/// creates a new file and locks that one, two holders at once.
class LockFile {
public:
    static LockFile acquire(const std::filesystem::path& path, const std::string& db_name) {
        const std::string name = path.string();
        // O_CLOEXEC: a program the coordinator starts must not inherit (and so keep holding) the lock.
        LockFile lock(::open(name.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
        if (lock.fd_ < 0) throw IoError(fmt::format("{}: cannot open the lock file: {}", quote(name), errno_text()));
        int rc = 0;
        do {
            rc = ::flock(lock.fd_, LOCK_EX | LOCK_NB);
        } while (rc != 0 && errno == EINTR);
        if (rc != 0 && errno == EWOULDBLOCK) {
            throw UnavailableError(fmt::format("{} is in use by another coordinator ({} holds {})", quote(db_name),
                                               lock.holder(), quote(name)));
        }
        if (rc != 0) throw IoError(fmt::format("{}: cannot lock: {}", quote(name), errno_text()));
        lock.write_pid(name);
        return lock;
    }

    ~LockFile() {
        if (fd_ >= 0) ::close(fd_);  // closing the last descriptor releases the flock
    }
    LockFile(LockFile&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
    LockFile& operator=(LockFile&& other) noexcept {
        std::swap(fd_, other.fd_);
        return *this;
    }
    LockFile(const LockFile&) = delete;
    LockFile& operator=(const LockFile&) = delete;

private:
    explicit LockFile(int fd) : fd_(fd) {}

    /// The holder's pid as it wrote it ("pid 123"), for the message only: the lock itself is the flock.
    [[nodiscard]] std::string holder() const {
        std::string text(24, '\0');
        const ssize_t n = ::pread(fd_, text.data(), text.size(), 0);
        text.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
        text.erase(text.find_last_not_of(" \n") + 1);
        if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos) return "it";
        return "pid " + text;
    }

    void write_pid(const std::string& name) const {
        const std::string text = std::to_string(::getpid()) + "\n";
        if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, text.data(), text.size(), 0) < 0)
            throw IoError(fmt::format("{}: cannot write the lock file: {}", quote(name), errno_text()));
    }

    int fd_ = -1;
};

// ---- SQLite handles ----------------------------------------------------------------------------------------------

struct CloseDb {
    void operator()(sqlite3* db) const noexcept { sqlite3_close_v2(db); }
};
struct FinalizeStmt {
    void operator()(sqlite3_stmt* stmt) const noexcept { sqlite3_finalize(stmt); }
};
using Stmt = std::unique_ptr<sqlite3_stmt, FinalizeStmt>;

/// Resets a reused statement whatever happens, so the next append finds it ready (and unbound).
class ResetOnExit {
public:
    explicit ResetOnExit(sqlite3_stmt* stmt) : stmt_(stmt) {}
    ~ResetOnExit() {
        sqlite3_reset(stmt_);
        sqlite3_clear_bindings(stmt_);
    }
    ResetOnExit(const ResetOnExit&) = delete;
    ResetOnExit& operator=(const ResetOnExit&) = delete;

private:
    sqlite3_stmt* stmt_;
};

/// A connection that turns every SQLite failure into a gpuops error naming the file.
class Database {
public:
    static Database open(const std::string& file) {
        sqlite3* raw = nullptr;
        const int rc = sqlite3_open_v2(file.c_str(), &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
        Database db(raw, file);  // owns `raw` even when the open failed: it must be closed either way
        if (rc != SQLITE_OK) db.fail(rc, "sqlite3_open_v2");
        return db;
    }

    [[nodiscard]] sqlite3* get() const noexcept { return db_.get(); }
    [[nodiscard]] const std::string& file() const noexcept { return file_; }

    /// A damaged or foreign file is bad data; everything else (disk, permissions, locks) is I/O.
    [[noreturn]] void fail(int rc, std::string_view call) const {
        const char* message = db_ ? sqlite3_errmsg(db_.get()) : sqlite3_errstr(rc);
        const std::string reason = fmt::format("{} failed: {} (SQLite code {})", call, message, rc);
        const int primary = rc & 0xff;
        if (primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB) throw DataError(reason, {file_, {}, 0});
        throw IoError(fmt::format("{}: {}", quote(file_), reason));
    }

    void check(int rc, std::string_view call) const {
        if (rc != SQLITE_OK) fail(rc, call);
    }

    void exec(const std::string& sql) const {
        check(sqlite3_exec(db_.get(), sql.c_str(), nullptr, nullptr, nullptr), fmt::format("'{}'", sql));
    }

    [[nodiscard]] Stmt prepare(std::string_view sql) const {
        sqlite3_stmt* raw = nullptr;
        const int rc = sqlite3_prepare_v2(db_.get(), sql.data(), static_cast<int>(sql.size()), &raw, nullptr);
        Stmt stmt(raw);
        check(rc, fmt::format("preparing '{}'", sql));
        return stmt;
    }

    /// True while there is a row; false when the statement is done.
    bool step(sqlite3_stmt* stmt) const {
        const int rc = sqlite3_step(stmt);
        if (rc == SQLITE_ROW) return true;
        if (rc == SQLITE_DONE) return false;
        fail(rc, fmt::format("'{}'", sqlite3_sql(stmt)));
    }

    void bind(sqlite3_stmt* stmt, int index, std::string_view text) const {
        // A null destructor is SQLITE_STATIC: the caller keeps `text` alive until the statement is reset. A null
        // pointer would bind SQL NULL, so an empty view binds "".
        const char* chars = text.empty() ? "" : text.data();
        check(sqlite3_bind_text64(stmt, index, chars, text.size(), nullptr, SQLITE_UTF8), "sqlite3_bind_text64");
    }

    /// The first column of the first row of `sql` (a PRAGMA or a count), as text.
    [[nodiscard]] std::string text(const std::string& sql) const {
        const Stmt stmt = prepare(sql);
        if (!step(stmt.get())) return {};
        return column_text(stmt.get(), 0);
    }

    [[nodiscard]] std::int64_t integer(const std::string& sql) const {
        const Stmt stmt = prepare(sql);
        return step(stmt.get()) ? sqlite3_column_int64(stmt.get(), 0) : 0;
    }

    static std::string column_text(sqlite3_stmt* stmt, int column) {
        const unsigned char* chars = sqlite3_column_text(stmt, column);
        if (chars == nullptr) return {};
        return {reinterpret_cast<const char*>(chars), static_cast<std::size_t>(sqlite3_column_bytes(stmt, column))};
    }

private:
    Database(sqlite3* db, std::string file) : db_(db), file_(std::move(file)) {}

    std::unique_ptr<sqlite3, CloseDb> db_;
    std::string file_;
};

/// BEGIN IMMEDIATE takes the write lock up front, so a busy database fails at BEGIN, never halfway through.
/// Rolled back unless committed.
class Transaction {
public:
    explicit Transaction(const Database& db) : db_(db) { db_.exec("BEGIN IMMEDIATE"); }
    ~Transaction() {
        // After a failed COMMIT SQLite may already have rolled back; ROLLBACK then has nothing to do.
        if (!committed_ && sqlite3_get_autocommit(db_.get()) == 0)
            sqlite3_exec(db_.get(), "ROLLBACK", nullptr, nullptr, nullptr);
    }
    Transaction(const Transaction&) = delete;
    Transaction& operator=(const Transaction&) = delete;

    void commit() {
        db_.exec("COMMIT");
        committed_ = true;
    }

private:
    const Database& db_;
    bool committed_ = false;
};

// ---- opening: settings, schema, job --------------------------------------------------------------------------------

void configure(const Database& db) {
    // Readers (a status tool, a backup) hold the database briefly; wait for them instead of failing.
    db.check(sqlite3_busy_timeout(db.get(), busy_timeout_ms), "sqlite3_busy_timeout");
    const std::string mode = db.text("PRAGMA journal_mode=WAL");
    if (mode != "wal") {
        throw IoError(fmt::format("{}: SQLite kept journal mode {} instead of WAL (is it on a local file system?)",
                                  quote(db.file()), quote(mode)));
    }
    // In WAL mode synchronous=NORMAL syncs only at checkpoints: a commit then survives a process crash but not a
    // power loss. FULL syncs the WAL at every commit, so a COMMIT record is on the disk before any worker hears
    // of it, whatever fails next.
    db.exec("PRAGMA synchronous=FULL");
}

void create_schema(const Database& db, std::string_view job) {
    if (db.integer("SELECT count(*) FROM sqlite_master WHERE type = 'table'") != 0) {
        throw DataError("not a rescale coordinator database (it has tables, but no 'meta' table)", {db.file(), {}, 0});
    }
    db.exec("CREATE TABLE meta(key TEXT PRIMARY KEY NOT NULL, value NOT NULL)");
    // AUTOINCREMENT: an lsn is never handed out twice, even if the last rows were ever deleted.
    db.exec("CREATE TABLE records(lsn INTEGER PRIMARY KEY AUTOINCREMENT, kind TEXT NOT NULL, body TEXT NOT NULL)");
    const Stmt insert = db.prepare("INSERT INTO meta(key, value) VALUES ('schema_version', ?1), ('job', ?2)");
    db.check(sqlite3_bind_int(insert.get(), 1, SqliteRecordStore::schema_version), "sqlite3_bind_int");
    db.bind(insert.get(), 2, job);
    db.step(insert.get());
}

std::optional<std::string> meta_value(const Database& db, std::string_view key) {
    const Stmt select = db.prepare("SELECT value FROM meta WHERE key = ?1");
    db.bind(select.get(), 1, key);
    if (!db.step(select.get())) return std::nullopt;
    return Database::column_text(select.get(), 0);
}

/// The version first: a newer schema may keep the job elsewhere.
void check_meta(const Database& db, std::string_view job) {
    const DataLocation where{db.file(), {}, 0};
    const std::string text = meta_value(db, "schema_version").value_or("");
    int version = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), version);
    if (ec != std::errc() || end != text.data() + text.size() || version < 1)
        throw DataError(fmt::format("unknown schema version {}", quote(text)), where);
    if (version > SqliteRecordStore::schema_version) {
        throw DataError(fmt::format("schema version {} is newer than this build's {}: use a newer gpuops", version,
                                    SqliteRecordStore::schema_version),
                        where);
    }
    const std::string owner = meta_value(db, "job").value_or("");
    if (owner != job) throw DataError(fmt::format("belongs to job {}, not to job {}", quote(owner), quote(job)), where);
}

void init_schema(const Database& db, std::string_view job) {
    Transaction tx(db);
    if (db.integer("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'meta'") != 0) {
        check_meta(db, job);
    } else {
        create_schema(db, job);
    }
    tx.commit();
}

/// A new database's directory entry must reach the disk too, or a power loss could take the whole file with its
/// first synced commits (SQLite syncs the directory for the WAL and journals it creates, not for the database).
void sync_directory(const std::filesystem::path& file) {
    const std::filesystem::path dir = file.has_parent_path() ? file.parent_path() : ".";
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    const bool ok = fd >= 0 && ::fsync(fd) == 0;
    const std::string why = ok ? std::string() : errno_text();
    if (fd >= 0) ::close(fd);
    if (!ok) throw IoError(fmt::format("{}: cannot sync the directory: {}", quote(dir.string()), why));
}

std::string encode(const Record& record, const std::string& file) {
    try {
        return to_json(record).dump();
    } catch (const nlohmann::json::exception& e) {  // invalid UTF-8 in a string field
        throw DataError(fmt::format("cannot store a {} record: {}", kind_of(record), e.what()), {file, {}, 0});
    }
}

Record parse_row(std::int64_t lsn, std::string_view kind, std::string_view body, const std::string& file) {
    try {
        Record record = record_from_json(json_io::parse_document(body, ""));
        if (kind_of(record) != kind) {
            throw DataError(
                fmt::format("the kind column says {} but the body holds {}", quote(kind), quote(kind_of(record))));
        }
        return record;
    } catch (const DataError& e) {
        throw DataError(fmt::format("record lsn {}: {}", lsn, e.what()), {file, {}, 0});
    }
}

}  // namespace

// ---- the store ---------------------------------------------------------------------------------------------------

/// Declared in this order so that the statement goes before the connection, and the lock last of all.
struct SqliteRecordStore::State {
    std::filesystem::path path;
    LockFile lock;
    Database db;
    Stmt insert;
};

SqliteRecordStore::SqliteRecordStore(const std::filesystem::path& file, std::string_view job) {
    const std::string name = file.string();
    // The lock comes first: a second coordinator must not even touch (or create) the schema.
    LockFile lock = LockFile::acquire(lock_file(file), name);
    std::error_code ec;
    const bool existed = std::filesystem::exists(file, ec);
    Database db = Database::open(name);
    configure(db);
    init_schema(db, job);
    if (!existed) sync_directory(file);
    Stmt insert = db.prepare("INSERT INTO records(kind, body) VALUES (?1, ?2)");
    state_ = std::make_unique<State>(State{file, std::move(lock), std::move(db), std::move(insert)});
}

SqliteRecordStore::~SqliteRecordStore() = default;
SqliteRecordStore::SqliteRecordStore(SqliteRecordStore&& other) noexcept = default;
SqliteRecordStore& SqliteRecordStore::operator=(SqliteRecordStore&& other) noexcept = default;

std::filesystem::path SqliteRecordStore::lock_file(const std::filesystem::path& file) {
    std::filesystem::path lock = file;
    lock += ".lock";
    return lock;
}

const std::filesystem::path& SqliteRecordStore::file() const noexcept { return state_->path; }

namespace {

void insert(const Database& db, sqlite3_stmt* stmt, const Record& record) {
    const std::string body = encode(record, db.file());
    const ResetOnExit reset(stmt);  // declared after `body`: reset (and unbound) before the text goes away
    db.bind(stmt, 1, kind_of(record));
    db.bind(stmt, 2, body);
    db.step(stmt);
}

}  // namespace

void SqliteRecordStore::append(const Record& record) {
    // Outside a transaction the INSERT is one: with synchronous=FULL it is synced when step() returns.
    insert(state_->db, state_->insert.get(), record);
}

void SqliteRecordStore::append_batch(std::span<const Record> records) {
    if (records.empty()) return;
    Transaction tx(state_->db);
    for (const Record& record : records)
        insert(state_->db, state_->insert.get(), record);
    tx.commit();
}

std::vector<Record> SqliteRecordStore::load() const {
    const Database& db = state_->db;
    const Stmt select = db.prepare("SELECT lsn, kind, body FROM records ORDER BY lsn");
    std::vector<Record> out;
    while (db.step(select.get())) {
        const std::int64_t lsn = sqlite3_column_int64(select.get(), 0);
        out.push_back(
            parse_row(lsn, Database::column_text(select.get(), 1), Database::column_text(select.get(), 2), db.file()));
    }
    return out;
}

SqliteDurability SqliteRecordStore::durability() const {
    const Database& db = state_->db;
    return {db.text("PRAGMA journal_mode"), static_cast<int>(db.integer("PRAGMA synchronous")),
            static_cast<int>(db.integer("PRAGMA busy_timeout"))};
}

}  // namespace gpuops::rescale
