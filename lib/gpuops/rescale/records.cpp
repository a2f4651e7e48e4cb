// JSON form of the coordinator's records, for the WAL file and the SQLite store.
#include "gpuops/rescale/records.hpp"

#include <limits>
#include <utility>

#include <fmt/format.h>

namespace gpuops::rescale {
namespace {

using json_io::Json;

std::uint64_t u64_at(const json_io::View& v, std::string_view key) {
    return static_cast<std::uint64_t>(v.at(key).as_int(0, std::numeric_limits<std::int64_t>::max()));
}

std::vector<MemberId> ids_at(const json_io::View& v, std::string_view key) {
    std::vector<MemberId> out;
    for (const auto& item : v.at(key).items())
        out.push_back(static_cast<MemberId>(item.as_int(0, std::numeric_limits<std::int64_t>::max())));
    return out;
}

void write_fields(Json& j, const StartRecord& r) { j["coord_incarnation"] = r.coord_incarnation; }
void write_fields(Json& j, const ConfigRecord& r) {
    j["min_size"] = r.min_size;
    j["max_size"] = r.max_size;
    j["batch_window_ms"] = r.batch_window_ms;
}
void write_fields(Json& j, const RegisterRecord& r) {
    j["member_id"] = r.member_id;
    j["worker_id"] = r.worker_id;
    j["incarnation"] = r.incarnation;
    j["session"] = r.session;
    j["host"] = r.host;
    j["addr_b64"] = r.addr_b64;
    j["meta"] = r.meta;
}
void write_fields(Json& j, const ProposeRecord& r) {
    j["epoch"] = r.epoch;
    j["from_epoch"] = r.from_epoch;
    j["members"] = r.members;
    j["view_hash"] = r.view_hash;
}
void write_fields(Json& j, const CommitRecord& r) {
    j["epoch"] = r.epoch;
    j["view_hash"] = r.view_hash;
}
void write_fields(Json& j, const AbortRecord& r) { j["epoch"] = r.epoch; }
void write_fields(Json& j, const DeadRecord& r) {
    j["member_id"] = r.member_id;
    j["epoch"] = r.epoch;
    j["reason"] = r.reason;
}
void write_fields(Json& j, const LeftRecord& r) {
    j["member_id"] = r.member_id;
    j["epoch"] = r.epoch;
}
void write_fields(Json& j, const KvPutRecord& r) {
    j["epoch"] = r.epoch;
    j["scope"] = to_string(r.scope);
    j["member_id"] = r.member_id;
    j["key"] = r.key;
    j["val_b64"] = r.val_b64;
}
void write_fields(Json& /*j*/, const CloseRecord& /*r*/) {}

void read_fields(const json_io::View& v, StartRecord& r) { r.coord_incarnation = u64_at(v, "coord_incarnation"); }
void read_fields(const json_io::View& v, ConfigRecord& r) {
    r.min_size = u64_at(v, "min_size");
    r.max_size = u64_at(v, "max_size");
    r.batch_window_ms = static_cast<TimeMs>(u64_at(v, "batch_window_ms"));
}
void read_fields(const json_io::View& v, RegisterRecord& r) {
    r.member_id = u64_at(v, "member_id");
    r.worker_id = v.at("worker_id").as_string();
    r.incarnation = v.at("incarnation").as_string();
    r.session = v.at("session").as_string();
    r.host = v.at("host").as_string();
    r.addr_b64 = v.at("addr_b64").as_string();
    r.meta = v.at("meta").json();
}
void read_fields(const json_io::View& v, ProposeRecord& r) {
    r.epoch = u64_at(v, "epoch");
    r.from_epoch = u64_at(v, "from_epoch");
    r.members = ids_at(v, "members");
    r.view_hash = v.at("view_hash").as_string();
}
void read_fields(const json_io::View& v, CommitRecord& r) {
    r.epoch = u64_at(v, "epoch");
    r.view_hash = v.at("view_hash").as_string();
}
void read_fields(const json_io::View& v, AbortRecord& r) { r.epoch = u64_at(v, "epoch"); }
void read_fields(const json_io::View& v, DeadRecord& r) {
    r.member_id = u64_at(v, "member_id");
    r.epoch = u64_at(v, "epoch");
    r.reason = v.string_or_null("reason").value_or("");
}
void read_fields(const json_io::View& v, LeftRecord& r) {
    r.member_id = u64_at(v, "member_id");
    r.epoch = u64_at(v, "epoch");
}
void read_fields(const json_io::View& v, KvPutRecord& r) {
    r.epoch = u64_at(v, "epoch");
    const auto scope = v.at("scope");
    const auto parsed = kv_scope_from_string(scope.as_string());
    if (!parsed) throw scope.error(fmt::format("unknown scope {}", quote(scope.as_string())));
    r.scope = *parsed;
    r.member_id = u64_at(v, "member_id");
    r.key = v.at("key").as_string();
    r.val_b64 = v.at("val_b64").as_string();
}
void read_fields(const json_io::View& /*v*/, CloseRecord& /*r*/) {}

template <std::size_t... I>
std::optional<Record> read_record(std::string_view kind, const json_io::View& v, std::index_sequence<I...> /*unused*/) {
    std::optional<Record> out;
    const auto try_one = [&]<typename R>(R candidate) {
        if (R::kind != kind) return false;
        read_fields(v, candidate);
        out = std::move(candidate);
        return true;
    };
    (try_one(std::variant_alternative_t<I, Record>{}) || ...);
    return out;
}

}  // namespace

Json to_json(const Record& record) {
    Json j = Json::object();
    std::visit(
        [&](const auto& r) {
            j["r"] = std::decay_t<decltype(r)>::kind;
            write_fields(j, r);
        },
        record);
    return j;
}

Record record_from_json(const Json& doc) {
    const json_io::View v(doc);
    const auto kind = v.at("r");
    auto record = read_record(kind.as_string(), v, std::make_index_sequence<std::variant_size_v<Record>>{});
    if (!record) throw kind.error(fmt::format("unknown record kind {}", quote(kind.as_string())));
    return std::move(*record);
}

}  // namespace gpuops::rescale
