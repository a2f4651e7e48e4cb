// Building cluster states from sinfo/squeue --json and scontrol show nodes text.
#include "gpuops/placement/slurm_import.hpp"

#include <algorithm>
#include <cctype>
#include <unordered_map>

#include <fmt/format.h>

#include "gpuops/core/cpulist.hpp"
#include "gpuops/core/hostlist.hpp"
#include "gpuops/core/text.hpp"

namespace gpuops::placement {
namespace {

/// The entries of a GRES list, split at commas outside parentheses ("gpu:2(IDX:0,3),mps:100").
std::vector<std::string_view> gres_entries(std::string_view gres) {
    std::vector<std::string_view> out;
    int depth = 0;
    std::size_t start = 0;
    for (std::size_t i = 0; i <= gres.size(); ++i) {
        const char c = i < gres.size() ? gres[i] : ',';
        if (c == '(') ++depth;
        if (c == ')') --depth;
        if (i == gres.size() || (c == ',' && depth <= 0)) {
            const auto entry = text::trim(gres.substr(start, i - start));
            if (!entry.empty()) out.push_back(entry);
            start = i + 1;
        }
    }
    return out;
}

/// Jobs in these states hold their GPUs.
bool holds_gpus(std::string_view state) { return state == "RUNNING" || state == "SUSPENDED"; }

struct Builder {
    ClusterState state;
    StateOrigins origins;
    std::unordered_map<std::string, std::size_t> node_index;

    void add_node(std::string name, int gpus, DataLocation where) {
        node_index.emplace(name, state.nodes.size());
        state.nodes.push_back({std::move(name), gpus});
        origins.nodes.push_back(std::move(where));
    }
    void add_instance(Instance inst, DataLocation where) {
        state.instances.push_back(std::move(inst));
        origins.instances.push_back(std::move(where));
    }
    ClusterState finish(std::string_view what) {
        if (state.nodes.empty()) throw DataError(fmt::format("no node with GPUs in {}", what));
        validate(state, &origins);
        return std::move(state);
    }
};

/// Instances from squeue --json: one per running job and allocated node.
void add_jobs(Builder& b, const SlurmSource& squeue, SlurmImportNotes* notes) {
    try {
        const json_io::View root(*squeue.json);
        for (const auto& job : root.at("jobs").items()) {
            const std::string state = job.at("job_state").as_string();
            if (!holds_gpus(state)) {
                if (notes != nullptr) ++notes->jobs_not_running;
                continue;
            }
            const auto id = job.at("job_id");
            const std::string job_id = id.json().is_string() ? id.as_string() : std::to_string(id.as_int());
            std::vector<std::string> hosts;
            std::vector<std::string> host_pointers;
            if (const auto res = job.find("job_resources"); res && res->find("allocated_nodes")) {
                for (const auto& n : res->at("allocated_nodes").items()) {
                    hosts.push_back(n.at("nodename").as_string());
                    host_pointers.push_back(n.at("nodename").pointer());
                }
            } else {
                const auto nodes = job.at("nodes");
                for (auto& h : hostlist::expand(nodes.as_string())) {
                    hosts.push_back(std::move(h));
                    host_pointers.push_back(nodes.pointer());
                }
            }
            const auto detail = job.find("gres_detail");
            const std::size_t details = detail ? detail->size() : 0;
            GresGpus per_node;
            if (details == 0) {
                // Without gres_detail, every node gets what tres_per_node asks ("gres:gpu:4").
                if (const auto tres = job.string_or_null("tres_per_node")) {
                    std::string gres;
                    for (const auto entry : gres_entries(*tres))
                        if (entry.rfind("gres:", 0) == 0) gres += std::string(entry.substr(5)) + ",";
                    try {
                        per_node = parse_gres_gpus(gres);
                    } catch (const DataError& e) {
                        throw job.at("tres_per_node").error(e.reason());
                    }
                }
            } else if (details != hosts.size()) {
                throw detail->error(
                    fmt::format("{} gres_detail entries for {} allocated nodes", details, hosts.size()));
            }
            bool any = false;
            for (std::size_t k = 0; k < hosts.size(); ++k) {
                GresGpus gpus = per_node;
                std::string pointer = host_pointers[k];
                if (details > 0) {
                    const auto entry = detail->at(k);
                    try {
                        gpus = parse_gres_gpus(entry.as_string());
                    } catch (const DataError& e) {
                        throw entry.error(e.reason());
                    }
                    pointer = entry.pointer();
                }
                if (gpus.count == 0) continue;
                any = true;
                if (!b.node_index.contains(hosts[k])) {
                    throw DataError(fmt::format("job {} runs on node {}, which has no GPUs in the node list", job_id,
                                                quote(hosts[k])),
                                    {"", host_pointers[k], 0});
                }
                b.add_instance({job_id, hosts[k], gpus.count, gpus.ids}, {squeue.name, pointer, 0});
            }
            if (!any && notes != nullptr) ++notes->jobs_without_gpus;
        }
    } catch (const DataError& e) {
        throw e.where().file.empty() ? e.in_file(squeue.name) : e;
    }
}

/// key=value fields of scontrol output; a value may hold spaces (OS=Linux 6.1 ..., Reason=...), so a word
/// that does not look like `Key=` continues the previous value.
struct ScontrolRecord {
    int line = 0;
    std::unordered_map<std::string, std::string> fields;
};

bool starts_field(std::string_view word) {
    const auto eq = word.find('=');
    if (eq == std::string_view::npos || eq == 0) return false;
    for (const char c : word.substr(0, eq))
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == ':' || c == '/')) return false;
    return true;
}

std::vector<ScontrolRecord> scontrol_records(std::string_view text, std::string_view name) {
    std::vector<ScontrolRecord> records;
    std::string* last = nullptr;
    int line = 0;
    std::size_t pos = 0;
    while (pos <= text.size()) {
        const auto end = std::min(text.find('\n', pos), text.size());
        const auto row = text.substr(pos, end - pos);
        ++line;
        pos = end + 1;
        std::size_t i = 0;
        while (i < row.size()) {
            while (i < row.size() && text::is_space(row[i]))
                ++i;
            const auto j = std::min(row.find_first_of(" \t\r", i), row.size());
            const auto word = row.substr(i, j - i);
            i = j;
            if (word.empty()) continue;
            if (starts_field(word)) {
                const auto eq = word.find('=');
                const std::string key(word.substr(0, eq));
                if (key == "NodeName") records.push_back({line, {}});
                if (records.empty()) {
                    throw DataError(
                        fmt::format("expected scontrol show nodes output starting with NodeName=, got {}", quote(word)),
                        {std::string(name), "", line});
                }
                auto& value = records.back().fields[key];
                value = std::string(word.substr(eq + 1));
                last = &value;
            } else if (last != nullptr) {
                *last += ' ';
                *last += word;
            } else {
                throw DataError(fmt::format("expected scontrol show nodes output, got {}", quote(word)),
                                {std::string(name), "", line});
            }
        }
        if (end == text.size()) break;
    }
    return records;
}

}  // namespace

GresGpus parse_gres_gpus(std::string_view gres) {
    GresGpus out;
    if (gres == "(null)" || gres == "N/A") return out;
    for (const auto raw : gres_entries(gres)) {
        // A type of "(null)" (gpu:(null):0) is no parenthesised suffix.
        std::string copy(raw);
        for (auto at = copy.find("(null)"); at != std::string::npos; at = copy.find("(null)"))
            copy.replace(at, 6, "null");
        std::string_view entry = copy;
        std::string_view extra;
        if (const auto paren = entry.find('('); paren != std::string_view::npos) {
            extra = entry.substr(paren + 1);
            if (extra.empty() || extra.back() != ')') throw DataError(fmt::format("unbalanced {}", quote(entry)));
            extra.remove_suffix(1);
            entry = entry.substr(0, paren);
        }
        if (entry.substr(0, entry.find(':')) != "gpu") continue;
        const auto colon = entry.rfind(':');
        if (colon == std::string_view::npos) throw DataError(fmt::format("no GPU count in {}", quote(entry)));
        const auto count_text = entry.substr(colon + 1);
        const auto count = text::leading_int(count_text);
        if (!count || *count < 0 || std::to_string(*count) != count_text) {
            throw DataError(fmt::format("expected a GPU count in {}, got {}", quote(entry), quote(count_text)));
        }
        out.count += *count;
        if (const auto idx = extra.find("IDX:"); idx != std::string_view::npos) {
            auto list = extra.substr(idx + 4);
            list = list.substr(0, list.find(')'));
            if (list != "N/A") {
                for (const int id : cpulist::parse(list))
                    out.ids.push_back(id);
            }
        }
    }
    // IDX lists only some GPUs when several types mix with and without indexes: then they name no instance.
    if (!out.ids.empty() && out.ids.size() != static_cast<std::size_t>(out.count)) out.ids.clear();
    return out;
}

ClusterState state_from_sinfo(const SlurmSource& sinfo, const SlurmSource* squeue, SlurmImportNotes* notes) {
    Builder b;
    try {
        const json_io::View root(*sinfo.json);
        for (const auto& node : root.at("nodes").items()) {
            const auto gres = node.at("gres");
            GresGpus gpus;
            try {
                gpus = parse_gres_gpus(gres.as_string());
            } catch (const DataError& e) {
                throw gres.error(e.reason());
            }
            if (gpus.count == 0) {
                if (notes != nullptr) ++notes->nodes_without_gpus;
                continue;
            }
            const std::string name = node.at("name").as_string();
            b.add_node(name, gpus.count, {sinfo.name, node.pointer(), 0});
            if (squeue != nullptr) continue;
            if (const auto used_view = node.find("gres_used")) {
                GresGpus used;
                try {
                    used = parse_gres_gpus(used_view->as_string());
                } catch (const DataError& e) {
                    throw used_view->error(e.reason());
                }
                if (used.count > 0)
                    b.add_instance({"", name, used.count, used.ids}, {sinfo.name, used_view->pointer(), 0});
            }
        }
    } catch (const DataError& e) {
        throw e.where().file.empty() ? e.in_file(sinfo.name) : e;
    }
    if (squeue != nullptr) {
        add_jobs(b, *squeue, notes);
    } else {
        b.state.instances_from = InstanceSource::node_usage;
    }
    return b.finish(quote(sinfo.name));
}

ClusterState state_from_scontrol(const SlurmSource& nodes, const SlurmSource* squeue, SlurmImportNotes* notes) {
    Builder b;
    for (const auto& record : scontrol_records(nodes.text, nodes.name)) {
        const DataLocation where{nodes.name, "", record.line};
        const auto field = [&](const char* key) -> std::string_view {
            const auto it = record.fields.find(key);
            return it == record.fields.end() ? std::string_view{} : std::string_view(it->second);
        };
        GresGpus gpus;
        GresGpus used;
        try {
            gpus = parse_gres_gpus(field("Gres"));
            used = parse_gres_gpus(field("GresUsed"));
        } catch (const DataError& e) {
            throw DataError(e.reason(), where);
        }
        if (gpus.count == 0) {
            if (notes != nullptr) ++notes->nodes_without_gpus;
            continue;
        }
        const std::string name(field("NodeName"));
        b.add_node(name, gpus.count, where);
        if (squeue == nullptr && used.count > 0) b.add_instance({"", name, used.count, used.ids}, where);
    }
    if (squeue != nullptr) {
        add_jobs(b, *squeue, notes);
    } else {
        b.state.instances_from = InstanceSource::node_usage;
    }
    return b.finish(quote(nodes.name));
}

}  // namespace gpuops::placement
