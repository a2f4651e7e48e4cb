// Field-by-field JSON mapping of every protocol message; decode() is the one place that turns bad input into
// typed errors, so nothing above it sees an exception from a line a peer sent.
#include "gpuops/rescale/codec.hpp"

#include <algorithm>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>
#include <simdjson.h>

#include "gpuops/rescale/wire_reader.hpp"

namespace gpuops::rescale {
namespace {

using json_io::Json;

// ---- reading --------------------------------------------------------------------------------------------------

using detail::WireValue;

/// Typed access to one message object; every accessor throws DataError at the offending field, which decode()
/// turns into ERROR{PROTOCOL}.
class Reader {
public:
    explicit Reader(const WireValue& object) : object_(object) {}

    [[nodiscard]] std::uint64_t u64(std::string_view key) const { return to_u64(object_.at(key)); }
    [[nodiscard]] std::optional<std::uint64_t> opt_u64(std::string_view key) const {
        const auto v = object_.find(key);
        return v ? std::optional(to_u64(*v)) : std::nullopt;
    }
    [[nodiscard]] std::optional<TimeMs> opt_ms(std::string_view key) const {
        const auto v = object_.find(key);
        return v ? std::optional<TimeMs>(v->as_int(0, std::numeric_limits<TimeMs>::max())) : std::nullopt;
    }
    [[nodiscard]] std::string str(std::string_view key) const { return object_.at(key).as_string(); }
    [[nodiscard]] std::string str_or_empty(std::string_view key) const {
        const auto v = object_.find(key);
        return v ? v->as_string() : std::string();
    }
    [[nodiscard]] bool flag(std::string_view key, bool fallback) const {
        const auto v = object_.find(key);
        return v ? v->as_bool() : fallback;
    }
    [[nodiscard]] std::vector<MemberId> ids(std::string_view key) const {
        std::vector<MemberId> out;
        object_.at(key).for_each([&](const WireValue& item) { out.push_back(to_u64(item)); });
        return out;
    }
    [[nodiscard]] std::vector<std::string> strings(std::string_view key) const {
        std::vector<std::string> out;
        if (const auto list = object_.find(key))
            list->for_each([&](const WireValue& item) { out.push_back(item.as_string()); });
        return out;
    }
    template <typename E>
    [[nodiscard]] E enum_at(std::string_view key, std::optional<E> (*parse)(std::string_view)) const {
        const auto v = object_.at(key);
        const auto parsed = parse(v.as_string_view());
        if (!parsed) throw v.error(fmt::format("unknown value {}", quote(v.as_string_view())));
        return *parsed;
    }
    [[nodiscard]] WireValue at(std::string_view key) const { return object_.at(key); }
    [[nodiscard]] std::optional<WireValue> find(std::string_view key) const { return object_.find(key); }

    static std::uint64_t to_u64(const WireValue& v) {
        return static_cast<std::uint64_t>(v.as_int(0, std::numeric_limits<std::int64_t>::max()));
    }

private:
    const WireValue& object_;
};

/// A peer table: one pass over each entry's fields (a joiner reads 1024 of them), looked up by name only to name
/// a missing one.
std::vector<Peer> read_peers(const WireValue& list) {
    std::vector<Peer> out;
    list.for_each([&](const WireValue& item) {
        Peer peer;
        unsigned seen = 0;
        item.for_each_field([&](std::string_view key, const WireValue& value) {
            if (key == "member_id") {
                peer.member_id = Reader::to_u64(value);
                seen |= 1U;
            } else if (key == "rank") {
                peer.rank = Reader::to_u64(value);
                seen |= 2U;
            } else if (key == "addr_b64") {
                peer.addr_b64 = value.as_string();
                seen |= 4U;
            }
        });
        if (seen != 7U) {
            const Reader r(item);
            peer = {r.u64("member_id"), r.u64("rank"), r.str("addr_b64")};  // throws at the missing field
        }
        out.push_back(std::move(peer));
    });
    return out;
}

std::vector<KvEntry> read_kv(const Reader& r, std::string_view key) {
    std::vector<KvEntry> out;
    if (const auto list = r.find(key)) {
        list->for_each([&](const WireValue& item) {
            const Reader e(item);
            out.push_back({e.u64("member_id"), e.str("key"), e.str("val_b64")});
        });
    }
    return out;
}

/// `members`: the member ids in rank order (index = rank); each id at most once.
std::vector<MemberId> read_members(const Reader& r) {
    std::vector<MemberId> members = r.ids("members");
    if (std::ranges::adjacent_find(members, std::greater_equal<>()) == members.end()) return members;  // ascending
    std::vector<MemberId> sorted = members;
    std::ranges::sort(sorted);
    if (const auto twice = std::ranges::adjacent_find(sorted); twice != sorted.end()) {
        throw r.at("members").error(fmt::format("member {} appears twice", *twice));
    }
    return members;
}

void read_fields(const Reader& r, Hello& m) {
    m.job = r.str("job");
    m.token = r.str("token");
    m.worker_id = r.str("worker_id");
    m.incarnation = r.str("incarnation");
    m.host = r.str_or_empty("host");
    m.addr_b64 = r.str_or_empty("addr_b64");
    if (const auto meta = r.find("meta")) {
        if (!meta->is_object()) throw meta->error("expected an object");
        m.meta = meta->to_json();
    }
    if (const auto resume = r.find("resume")) {
        const Reader s(*resume);
        m.resume = ResumeInfo{s.u64("member_id"), s.str("session"), s.opt_u64("last_epoch").value_or(0)};
    }
}
void read_fields(const Reader& r, Heartbeat& m) { m.epoch = r.u64("epoch"); }
void read_fields(const Reader& r, SafePoint& m) {
    m.epoch = r.u64("epoch");
    m.transition_id = r.u64("transition_id");
}
void read_fields(const Reader& r, Drained& m) {
    m.epoch = r.u64("epoch");
    m.transition_id = r.u64("transition_id");
}
void read_fields(const Reader& r, Ack& m) {
    m.epoch = r.u64("epoch");
    m.view_hash = r.str("view_hash");
    m.ok = r.flag("ok", true);
    m.err = r.str_or_empty("err");
}
void read_fields(const Reader& r, Ready& m) { m.epoch = r.u64("epoch"); }
void read_fields(const Reader& r, Put& m) {
    m.epoch = r.u64("epoch");
    m.key = r.str("key");
    m.val_b64 = r.str("val_b64");
    if (r.find("scope")) m.scope = r.enum_at("scope", kv_scope_from_string);
}
void read_fields(const Reader& r, Fence& m) {
    m.epoch = r.u64("epoch");
    m.fence_id = r.str("fence_id");
    m.collect = r.flag("collect", false);
}
void read_fields(const Reader& r, Get& m) {
    m.epoch = r.u64("epoch");
    m.key = r.str("key");
    m.member_id = r.u64("member_id");
    if (r.find("scope")) m.scope = r.enum_at("scope", kv_scope_from_string);
}
void read_fields(const Reader& r, Notice& m) {
    m.worker_id = r.str("worker_id");
    m.source = r.str_or_empty("source");
    m.deadline_utc = r.str_or_empty("deadline_utc");
    m.deadline_in_ms = r.opt_ms("deadline_in_ms");
    m.token = r.str_or_empty("token");
}
void read_fields(const Reader& r, Leave& m) { m.reason = r.str_or_empty("reason"); }
void read_fields(const Reader& r, Welcome& m) {
    m.member_id = r.u64("member_id");
    m.session = r.str("session");
    m.coord_incarnation = r.u64("coord_incarnation");
    m.state = r.enum_at("state", join_state_from_string);
    if (const auto view = r.find("view")) {
        const Reader v(*view);
        m.view = ViewInfo{v.u64("epoch"), v.str("view_hash"), read_peers(v.at("peers"))};
    }
}
void read_fields(const Reader& r, HbAck& m) {
    m.epoch = r.u64("epoch");
    if (const auto pending = r.find("pending")) {
        const Reader p(*pending);
        m.pending =
            PendingInfo{p.u64("transition_id"), p.enum_at("kind", transition_kind_from_string), p.ids("victims")};
    }
}
void read_fields(const Reader& r, Transition& m) {
    m.transition_id = r.u64("transition_id");
    m.from_epoch = r.u64("from_epoch");
    m.kind = r.enum_at("kind", transition_kind_from_string);
    m.victims = r.ids("victims");
    m.joiners = r.ids("joiners");
    m.deadline_ms = r.opt_ms("deadline_ms").value_or(0);
}
void read_fields(const Reader& r, Prepare& m) {
    m.epoch = r.u64("epoch");
    m.from_epoch = r.u64("from_epoch");
    m.view_hash = r.str("view_hash");
    m.members = read_members(r);
    if (const auto size = r.opt_u64("size"); size && *size != m.members.size()) {
        throw r.at("size").error(fmt::format("size {} disagrees with members of {}", *size, m.members.size()));
    }
    m.added = read_peers(r.at("added"));
    m.removed = r.ids("removed");
    m.full_table = r.flag("full_table", false);
}
void read_fields(const Reader& r, Commit& m) {
    m.epoch = r.u64("epoch");
    m.view_hash = r.str("view_hash");
}
void read_fields(const Reader& r, Abort& m) {
    m.epoch = r.opt_u64("epoch");
    m.transition_id = r.u64("transition_id");
    m.reason = r.str_or_empty("reason");
}
void read_fields(const Reader& r, Release& m) { m.epoch = r.u64("epoch"); }
void read_fields(const Reader& r, FenceDone& m) {
    m.epoch = r.u64("epoch");
    m.fence_id = r.str("fence_id");
    m.ok = r.flag("ok", true);
    m.reason = r.str_or_empty("reason");
    m.kv = read_kv(r, "kv");
}
void read_fields(const Reader& r, GetReply& m) {
    m.epoch = r.u64("epoch");
    m.key = r.str("key");
    m.member_id = r.u64("member_id");
    m.ok = r.flag("ok", true);
    m.val_b64 = r.str_or_empty("val_b64");
    m.reason = r.str_or_empty("reason");
}
void read_fields(const Reader& r, Evicted& m) {
    m.epoch = r.u64("epoch");
    m.reason = r.str_or_empty("reason");
}
void read_fields(const Reader& r, ErrorReply& m) {
    m.code = r.enum_at("code", error_code_from_string);
    m.msg = r.str_or_empty("msg");
    m.re = r.opt_u64("re");
}
void read_fields(const Reader& r, StatusCmd& m) { m.token = r.str("token"); }
void read_fields(const Reader& r, ShrinkCmd& m) {
    m.token = r.str("token");
    if (r.find("members")) m.members = r.ids("members");
    m.count = r.opt_u64("count").value_or(0);
    m.deadline_in_ms = r.opt_ms("deadline_in_ms");
}
void read_fields(const Reader& r, ExpandCmd& m) {
    m.token = r.str("token");
    m.count = r.opt_u64("count").value_or(0);
    m.worker_ids = r.strings("worker_ids");
}
void read_fields(const Reader& r, DrainHostCmd& m) {
    m.token = r.str("token");
    m.host = r.str("host");
    m.deadline_in_ms = r.opt_ms("deadline_in_ms");
}
void read_fields(const Reader& r, SetCmd& m) {
    m.token = r.str("token");
    m.min_size = r.opt_u64("min_size");
    m.max_size = r.opt_u64("max_size");
    m.batch_window_ms = r.opt_ms("batch_window_ms");
}
void read_fields(const Reader& r, CloseCmd& m) { m.token = r.str("token"); }
void read_fields(const Reader& r, AdminReply& m) {
    m.ok = r.flag("ok", true);
    if (r.find("code")) m.code = r.enum_at("code", error_code_from_string);
    m.msg = r.str_or_empty("msg");
    if (const auto status = r.find("status")) m.status = status->to_json();
}

/// Tries each alternative of Message in turn; the one whose `type` matches `t` reads the fields.
template <std::size_t... I>
std::optional<Message> read_message(std::string_view t, const Reader& r, std::index_sequence<I...> /*unused*/) {
    std::optional<Message> out;
    const auto try_one = [&]<typename M>(M candidate) {
        if (M::type != t) return false;
        read_fields(r, candidate);
        out = std::move(candidate);
        return true;
    };
    (try_one(std::variant_alternative_t<I, Message>{}) || ...);
    return out;
}

// ---- writing --------------------------------------------------------------------------------------------------

Json peers_json(const std::vector<Peer>& peers) {
    Json out = Json::array();
    for (const auto& p : peers)
        out.push_back({{"member_id", p.member_id}, {"rank", p.rank}, {"addr_b64", p.addr_b64}});
    return out;
}

Json kv_json(const std::vector<KvEntry>& kv) {
    Json out = Json::array();
    for (const auto& e : kv)
        out.push_back({{"member_id", e.member_id}, {"key", e.key}, {"val_b64", e.val_b64}});
    return out;
}

template <typename T>
void put_optional(Json& j, std::string_view key, const std::optional<T>& value) {
    if (value) j[std::string(key)] = *value;
}

void write_fields(Json& j, const Hello& m) {
    j["job"] = m.job;
    j["token"] = m.token;
    j["worker_id"] = m.worker_id;
    j["incarnation"] = m.incarnation;
    j["host"] = m.host;
    j["addr_b64"] = m.addr_b64;
    j["meta"] = m.meta;
    if (m.resume) {
        j["resume"] = {
            {"member_id", m.resume->member_id}, {"session", m.resume->session}, {"last_epoch", m.resume->last_epoch}};
    }
}
void write_fields(Json& j, const Heartbeat& m) { j["epoch"] = m.epoch; }
void write_fields(Json& j, const SafePoint& m) {
    j["epoch"] = m.epoch;
    j["transition_id"] = m.transition_id;
}
void write_fields(Json& j, const Drained& m) {
    j["epoch"] = m.epoch;
    j["transition_id"] = m.transition_id;
}
void write_fields(Json& j, const Ack& m) {
    j["epoch"] = m.epoch;
    j["view_hash"] = m.view_hash;
    j["ok"] = m.ok;
    if (!m.err.empty()) j["err"] = m.err;
}
void write_fields(Json& j, const Ready& m) { j["epoch"] = m.epoch; }
void write_fields(Json& j, const Put& m) {
    j["epoch"] = m.epoch;
    j["key"] = m.key;
    j["val_b64"] = m.val_b64;
    j["scope"] = to_string(m.scope);
}
void write_fields(Json& j, const Fence& m) {
    j["epoch"] = m.epoch;
    j["fence_id"] = m.fence_id;
    j["collect"] = m.collect;
}
void write_fields(Json& j, const Get& m) {
    j["epoch"] = m.epoch;
    j["key"] = m.key;
    j["member_id"] = m.member_id;
    j["scope"] = to_string(m.scope);
}
void write_fields(Json& j, const Notice& m) {
    j["worker_id"] = m.worker_id;
    j["source"] = m.source;
    if (!m.deadline_utc.empty()) j["deadline_utc"] = m.deadline_utc;
    put_optional(j, "deadline_in_ms", m.deadline_in_ms);
    if (!m.token.empty()) j["token"] = m.token;
}
void write_fields(Json& j, const Leave& m) { j["reason"] = m.reason; }
void write_fields(Json& j, const Welcome& m) {
    j["member_id"] = m.member_id;
    j["session"] = m.session;
    j["coord_incarnation"] = m.coord_incarnation;
    j["state"] = to_string(m.state);
    if (m.view) {
        j["view"] = {{"epoch", m.view->epoch}, {"view_hash", m.view->view_hash}, {"peers", peers_json(m.view->peers)}};
    }
}
void write_fields(Json& j, const HbAck& m) {
    j["epoch"] = m.epoch;
    if (m.pending) {
        j["pending"] = {{"transition_id", m.pending->transition_id},
                        {"kind", to_string(m.pending->kind)},
                        {"victims", m.pending->victims}};
    }
}
void write_fields(Json& j, const Transition& m) {
    j["transition_id"] = m.transition_id;
    j["from_epoch"] = m.from_epoch;
    j["kind"] = to_string(m.kind);
    j["victims"] = m.victims;
    j["joiners"] = m.joiners;
    j["deadline_ms"] = m.deadline_ms;
}
void write_fields(Json& j, const Prepare& m) {
    j["epoch"] = m.epoch;
    j["from_epoch"] = m.from_epoch;
    j["view_hash"] = m.view_hash;
    // An array, not an object {id: rank}: ordered_json looks keys up linearly, so parsing an object of n members
    // costs n² (seconds at 1024 members, in every joiner).
    j["members"] = m.members;
    j["added"] = peers_json(m.added);
    j["removed"] = m.removed;
    j["size"] = m.members.size();
    j["full_table"] = m.full_table;
}
void write_fields(Json& j, const Commit& m) {
    j["epoch"] = m.epoch;
    j["view_hash"] = m.view_hash;
}
void write_fields(Json& j, const Abort& m) {
    j["epoch"] = m.epoch ? Json(*m.epoch) : Json(nullptr);
    j["transition_id"] = m.transition_id;
    j["reason"] = m.reason;
}
void write_fields(Json& j, const Release& m) { j["epoch"] = m.epoch; }
void write_fields(Json& j, const FenceDone& m) {
    j["epoch"] = m.epoch;
    j["fence_id"] = m.fence_id;
    j["ok"] = m.ok;
    if (!m.reason.empty()) j["reason"] = m.reason;
    if (!m.kv.empty()) j["kv"] = kv_json(m.kv);
}
void write_fields(Json& j, const GetReply& m) {
    j["epoch"] = m.epoch;
    j["key"] = m.key;
    j["member_id"] = m.member_id;
    j["ok"] = m.ok;
    if (m.ok) j["val_b64"] = m.val_b64;
    if (!m.reason.empty()) j["reason"] = m.reason;
}
void write_fields(Json& j, const Evicted& m) {
    j["epoch"] = m.epoch;
    j["reason"] = m.reason;
}
void write_fields(Json& j, const ErrorReply& m) {
    j["code"] = to_string(m.code);
    j["msg"] = m.msg;
    put_optional(j, "re", m.re);
}
void write_fields(Json& j, const StatusCmd& m) { j["token"] = m.token; }
void write_fields(Json& j, const ShrinkCmd& m) {
    j["token"] = m.token;
    if (!m.members.empty()) j["members"] = m.members;
    if (m.count != 0) j["count"] = m.count;
    put_optional(j, "deadline_in_ms", m.deadline_in_ms);
}
void write_fields(Json& j, const ExpandCmd& m) {
    j["token"] = m.token;
    if (m.count != 0) j["count"] = m.count;
    if (!m.worker_ids.empty()) j["worker_ids"] = m.worker_ids;
}
void write_fields(Json& j, const DrainHostCmd& m) {
    j["token"] = m.token;
    j["host"] = m.host;
    put_optional(j, "deadline_in_ms", m.deadline_in_ms);
}
void write_fields(Json& j, const SetCmd& m) {
    j["token"] = m.token;
    put_optional(j, "min_size", m.min_size);
    put_optional(j, "max_size", m.max_size);
    put_optional(j, "batch_window_ms", m.batch_window_ms);
}
void write_fields(Json& j, const CloseCmd& m) { j["token"] = m.token; }
void write_fields(Json& j, const AdminReply& m) {
    j["ok"] = m.ok;
    if (m.code) j["code"] = to_string(*m.code);
    j["msg"] = m.msg;
    if (!m.status.is_null()) j["status"] = m.status;
}

/// A parser borrowed from a process-wide pool. A parser keeps buffers of about ten times the largest line it has
/// read; one per thread would cost a process of 1024 client threads gigabytes, while only as many parsers as
/// threads decoding at the same moment are ever needed.
class ParserLease {
public:
    ParserLease() {
        const std::scoped_lock lock(mutex());
        auto& free = idle();
        if (free.empty()) {
            parser_ = std::make_unique<simdjson::dom::parser>();
        } else {
            parser_ = std::move(free.back());
            free.pop_back();
        }
    }
    ParserLease(const ParserLease&) = delete;
    ParserLease& operator=(const ParserLease&) = delete;
    ~ParserLease() {
        const std::scoped_lock lock(mutex());
        idle().push_back(std::move(parser_));
    }
    simdjson::dom::parser* operator->() const { return parser_.get(); }

private:
    static std::mutex& mutex() {
        static std::mutex m;
        return m;
    }
    static std::vector<std::unique_ptr<simdjson::dom::parser>>& idle() {
        static std::vector<std::unique_ptr<simdjson::dom::parser>> parsers;
        return parsers;
    }
    std::unique_ptr<simdjson::dom::parser> parser_;
};

/// The request's seq, read leniently so that even a rejected message can be answered with `re`.
std::optional<std::uint64_t> lenient_seq(const simdjson::dom::element& doc) {
    std::int64_t seq = 0;
    if (!doc.is_object() || doc["seq"].get_int64().get(seq) != simdjson::SUCCESS || seq < 0) return std::nullopt;
    return static_cast<std::uint64_t>(seq);
}

Decoded decode_object(const simdjson::dom::element& doc) {
    const auto seq = lenient_seq(doc);
    if (!doc.is_object()) return DecodeError{ErrorCode::protocol, "expected a JSON object", seq};
    try {
        const WireValue root(doc);
        const Reader r(root);
        if (const auto v = r.opt_u64("v"); v && *v != protocol_version) {
            return DecodeError{ErrorCode::protocol, fmt::format("unsupported protocol version {}", *v), seq};
        }
        const std::string t = r.str("t");
        auto message = read_message(t, r, std::make_index_sequence<std::variant_size_v<Message>>{});
        if (!message) {
            return DecodeError{ErrorCode::unknown_type, fmt::format("unknown message type {}", quote(t)), seq};
        }
        return Envelope{r.opt_u64("seq").value_or(0), std::move(*message)};
    } catch (const std::exception& e) {  // DataError at a field, or a free-form field that nlohmann refused
        return DecodeError{ErrorCode::protocol, e.what(), seq};
    }
}

}  // namespace

Json to_json(const Envelope& envelope) {
    Json j = Json::object();
    j["v"] = protocol_version;
    j["t"] = type_of(envelope.body);
    j["seq"] = envelope.seq;
    std::visit([&](const auto& m) { write_fields(j, m); }, envelope.body);
    return j;
}

std::string encode(const Envelope& envelope) {
    // Replacing invalid UTF-8 keeps one bad byte from a peer's host name from making the line unencodable.
    return to_json(envelope).dump(-1, ' ', false, Json::error_handler_t::replace);
}

EncodedMessage::EncodedMessage(const Message& message) {
    std::string line = encode(Envelope{0, message});
    // "v" and "t" come first and a type name holds no quote, so the first `"seq":0` is the envelope's.
    constexpr std::string_view seq_key = R"("seq":)";
    const std::size_t at = line.find(std::string(seq_key) + "0");
    if (at == std::string::npos) throw std::logic_error("an encoded message has no seq");
    head_ = line.substr(0, at + seq_key.size());
    tail_ = line.substr(at + seq_key.size() + 1);
}

std::string EncodedMessage::line(std::uint64_t seq) const {
    std::string out;
    out.reserve(head_.size() + 20 + tail_.size());
    out += head_;
    out += std::to_string(seq);
    out += tail_;
    return out;
}

Decoded decode(std::string_view line, std::size_t max_line_bytes) noexcept {
    if (line.size() > max_line_bytes) {
        return DecodeError{ErrorCode::too_large,
                           fmt::format("line of {} bytes exceeds the limit of {}", line.size(), max_line_bytes),
                           {}};
    }
    try {
        const ParserLease parser;
        simdjson::dom::element doc;
        if (parser->parse(line.data(), line.size(), true).get(doc) != simdjson::SUCCESS) {
            return DecodeError{ErrorCode::protocol, "malformed JSON", {}};
        }
        return decode_object(doc);
    } catch (const std::exception& e) {  // allocation failure
        return DecodeError{ErrorCode::protocol, e.what(), {}};
    }
}

}  // namespace gpuops::rescale
