// Rendering an accepted admin command's reply as JSON or text.
#include "gpuops/rescale/admin_report.hpp"

#include <fmt/format.h>

namespace gpuops::rescale {
namespace {

using json_io::Json;

std::string text_of(const Json& value) {
    if (value.is_string()) return value.get<std::string>();
    if (value.is_null()) return "-";
    if (value.is_boolean()) return value.get<bool>() ? "yes" : "no";
    if (value.is_array() && value.empty()) return "-";
    if (value.is_array()) {
        std::string out;
        for (const Json& item : value)
            out += (out.empty() ? "" : ",") + text_of(item);
        return out;
    }
    return value.dump();
}

std::string field(const Json& doc, const char* key) { return doc.contains(key) ? text_of(doc.at(key)) : "-"; }

std::string transition_text(const Json& t) {
    return fmt::format("transition {} {} from epoch {}: victims {}, joiners {}\n", field(t, "transition_id"),
                       field(t, "kind"), field(t, "from_epoch"), field(t, "victims"), field(t, "joiners"));
}

std::string members_text(const Json& members) {
    std::string out = fmt::format("{:>6}  {:<20}  {:<16}  {:<8}  {:>5}  {}\n", "member", "worker", "host", "status",
                                  "rank", "connected");
    for (const Json& m : members) {
        out += fmt::format("{:>6}  {:<20}  {:<16}  {:<8}  {:>5}  {}\n", field(m, "member_id"), field(m, "worker_id"),
                           field(m, "host"), field(m, "status"), field(m, "rank"), field(m, "connected"));
    }
    return out;
}

}  // namespace

Json admin_report_json(const AdminReply& reply, std::string_view tool) {
    Json doc = json_io::make_header(status_schema, status_schema_version, tool);
    doc["message"] = reply.msg;
    if (reply.status.is_object()) {
        for (const auto& [key, value] : reply.status.items())
            doc[key] = value;
    }
    return doc;
}

std::string admin_report_text(const AdminReply& reply) {
    std::string out = reply.msg + "\n";
    const Json& s = reply.status;
    if (!s.is_object()) return out;
    out += fmt::format("job {} epoch {} size {} phase {} (min {}, max {}){}\n", field(s, "job"), field(s, "epoch"),
                       field(s, "size"), field(s, "phase"), field(s, "min_size"), field(s, "max_size"),
                       s.value("closed", false) ? ", closed" : "");
    if (s.contains("transition") && s.at("transition").is_object()) out += transition_text(s.at("transition"));
    if (s.contains("members")) out += members_text(s.at("members"));
    return out;
}

}  // namespace gpuops::rescale
