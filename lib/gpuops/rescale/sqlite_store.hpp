// The coordinator's records in an SQLite database (WAL mode, synced at every commit), held by one coordinator.
#pragma once

#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpuops/rescale/records.hpp"

namespace gpuops::rescale {

/// The connection's durability settings as SQLite reports them, for status output and tests.
struct SqliteDurability {
    std::string journal_mode;  ///< "wal"
    int synchronous = 0;       ///< 2 = FULL
    int busy_timeout_ms = 0;
    bool operator==(const SqliteDurability&) const = default;
};

/// Records in `records(lsn, kind, body)`, body = to_json(record). Each append (or append_batch) is one SQLite
/// transaction that is synced before it returns. While the store lives it holds an exclusive flock on "<file>.lock", so
/// a second coordinator for the same database fails at once; readers of the database itself are not blocked. The
/// database must be on a local file system (WAL needs shared memory between its users). Move-only; a moved-from store
/// may only be destroyed or assigned to.
class SqliteRecordStore final : public RecordStore {
public:
    static constexpr int schema_version = 1;

    /// Opens `file` for job `job`, creating it when absent.
    /// UnavailableError: another store (process) holds it. DataError: another job's database, a newer schema,
    /// not a database of ours. IoError: anything else SQLite or the file system refuses.
    SqliteRecordStore(const std::filesystem::path& file, std::string_view job);
    ~SqliteRecordStore() override;
    SqliteRecordStore(SqliteRecordStore&& other) noexcept;
    SqliteRecordStore& operator=(SqliteRecordStore&& other) noexcept;

    /// One INSERT in its own transaction: durable (WAL synced) when it returns.
    void append(const Record& record) override;
    /// Records in one transaction (one WAL sync): all of them are durable, or none.
    void append_batch(std::span<const Record> records) override;
    /// Every record in lsn order. DataError naming the file and the lsn for a row that does not parse.
    [[nodiscard]] std::vector<Record> load() const override;

    [[nodiscard]] SqliteDurability durability() const;
    [[nodiscard]] const std::filesystem::path& file() const noexcept;
    /// The lock file next to a database: "<file>.lock". It is never removed (see sqlite_store.cpp).
    [[nodiscard]] static std::filesystem::path lock_file(const std::filesystem::path& file);

private:
    struct State;
    std::unique_ptr<State> state_;
};

}  // namespace gpuops::rescale
