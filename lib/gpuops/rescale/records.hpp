// The coordinator's durable decisions (research/rescale.md §6.7) and the store interface that keeps them.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "gpuops/core/json_io.hpp"
#include "gpuops/rescale/protocol.hpp"

namespace gpuops::rescale {

/// Written first by every coordinator start; the incarnation counts starts, so transition ids stay unique.
struct StartRecord {
    static constexpr std::string_view kind = "START";
    std::uint64_t coord_incarnation = 0;
    bool operator==(const StartRecord&) const = default;
};

/// The admin-settable limits, so that a restarted coordinator keeps what `set` changed.
struct ConfigRecord {
    static constexpr std::string_view kind = "CONFIG";
    std::uint64_t min_size = 0;
    std::uint64_t max_size = 0;
    TimeMs batch_window_ms = 0;
    bool operator==(const ConfigRecord&) const = default;
};

/// A member id handed out: written before the WELCOME that reveals it, so a resume finds it after a restart.
struct RegisterRecord {
    static constexpr std::string_view kind = "REGISTER";
    MemberId member_id = 0;
    std::string worker_id;
    std::string incarnation;
    std::string session;
    std::string host;
    std::string addr_b64;
    json_io::Json meta = json_io::Json::object();
    bool operator==(const RegisterRecord&) const = default;
};

/// A proposed view; the epoch is allocated here and never reused, whatever happens to the proposal.
struct ProposeRecord {
    static constexpr std::string_view kind = "PROPOSE";
    Epoch epoch = 0;
    Epoch from_epoch = 0;
    std::vector<MemberId> members;
    std::string view_hash;
    bool operator==(const ProposeRecord&) const = default;
};

/// The decision: written (and synced) before any COMMIT leaves the coordinator.
struct CommitRecord {
    static constexpr std::string_view kind = "COMMIT";
    Epoch epoch = 0;
    std::string view_hash;
    bool operator==(const CommitRecord&) const = default;
};

struct AbortRecord {
    static constexpr std::string_view kind = "ABORT";
    Epoch epoch = 0;
    bool operator==(const AbortRecord&) const = default;
};

/// A member declared dead (lease, grace or drain deadline passed, NACK, superseded incarnation); never undone.
struct DeadRecord {
    static constexpr std::string_view kind = "DEAD";
    MemberId member_id = 0;
    Epoch epoch = 0;  ///< the committed epoch when it was declared
    std::string reason;
    bool operator==(const DeadRecord&) const = default;
};

/// A member that left on its own (LEAVE): removed at the next view like a dead one, but counted as drained.
struct LeftRecord {
    static constexpr std::string_view kind = "LEFT";
    MemberId member_id = 0;
    Epoch epoch = 0;
    bool operator==(const LeftRecord&) const = default;
};

/// A PUT, so that GETs after a restart still see it (epoch scope: only while that epoch is the committed one).
struct KvPutRecord {
    static constexpr std::string_view kind = "KV_PUT";
    Epoch epoch = 0;
    KvScope scope = KvScope::epoch;
    MemberId member_id = 0;
    std::string key;
    std::string val_b64;
    bool operator==(const KvPutRecord&) const = default;
};

struct CloseRecord {
    static constexpr std::string_view kind = "CLOSE";
    bool operator==(const CloseRecord&) const = default;
};

using Record = std::variant<StartRecord, ConfigRecord, RegisterRecord, ProposeRecord, CommitRecord, AbortRecord,
                            DeadRecord, LeftRecord, KvPutRecord, CloseRecord>;

/// One record as JSON: {"r":"<KIND>", ...fields} (a WAL line or an SQLite row's payload).
[[nodiscard]] json_io::Json to_json(const Record& record);
/// DataError (with the JSON pointer) when the record is not one this build wrote.
[[nodiscard]] Record record_from_json(const json_io::Json& doc);

/// Where decisions go. append() returns only once the record is durable: the coordinator's actions put a
/// record before any send that reveals it, and the shell runs them in order. (A store may group consecutive
/// appends of one action list into one transaction, since nothing is sent between them.)
class RecordStore {
public:
    RecordStore() = default;
    RecordStore(const RecordStore&) = delete;
    RecordStore& operator=(const RecordStore&) = delete;
    virtual ~RecordStore() = default;

    /// Durable when it returns.
    virtual void append(const Record& record) = 0;
    /// All of `records`, in order, durable when it returns: a store that can makes them one write (group commit).
    virtual void append_batch(std::span<const Record> records) {
        for (const Record& record : records)
            append(record);
    }
    [[nodiscard]] virtual std::vector<Record> load() const = 0;

protected:
    RecordStore(RecordStore&&) = default;
    RecordStore& operator=(RecordStore&&) = default;
};

/// The store for tests and for a coordinator run without a database.
class MemoryRecordStore final : public RecordStore {
public:
    void append(const Record& record) override { records_.push_back(record); }
    [[nodiscard]] std::vector<Record> load() const override { return records_; }
    [[nodiscard]] const std::vector<Record>& records() const noexcept { return records_; }

private:
    std::vector<Record> records_;
};

}  // namespace gpuops::rescale
