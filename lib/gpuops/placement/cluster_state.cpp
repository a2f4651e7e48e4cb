// Reading, writing and checking gpuops.cluster-state documents.
#include "gpuops/placement/cluster_state.hpp"

#include <algorithm>
#include <optional>
#include <unordered_map>

#include <fmt/format.h>

namespace gpuops::placement {
namespace {

/// A DataError at element `index` of `kind` ("nodes" or "instances"), `sub` being a pointer below it.
DataError error_at(const StateOrigins* origins, std::string_view kind, std::size_t index, std::string_view sub,
                   std::string reason) {
    if (origins != nullptr) {
        const auto& list = kind == "nodes" ? origins->nodes : origins->instances;
        // An origin in another format (a Slurm row or object) is named as it is: `sub` is a gpuops pointer.
        if (index < list.size()) return DataError(std::move(reason), list[index]);
    }
    return DataError(std::move(reason), {"", fmt::format("/{}/{}{}", kind, index, sub), 0});
}

/// The instance of a well-formed entry without building JSON pointers (10,000-node states have tens of
/// thousands); nullopt sends the entry through the checked path, which names what is wrong.
std::optional<Instance> plain_instance(const json_io::Json& v) {
    if (!v.is_object()) return std::nullopt;
    const auto job = v.find("job");
    const auto node = v.find("node");
    const auto gpus = v.find("gpus");
    if (job == v.end() || node == v.end() || gpus == v.end() || !job->is_string() || !node->is_string() ||
        !gpus->is_number_unsigned() || gpus->get<std::uint64_t>() > max_node_gpus) {
        return std::nullopt;
    }
    Instance inst{job->get<std::string>(), node->get<std::string>(), gpus->get<int>(), {}};
    if (const auto ids = v.find("gpu_ids"); ids != v.end() && !ids->is_null()) {
        if (!ids->is_array()) return std::nullopt;
        inst.gpu_ids.reserve(ids->size());
        for (const auto& id : *ids) {
            if (!id.is_number_unsigned() || id.get<std::uint64_t>() > max_node_gpus) return std::nullopt;
            inst.gpu_ids.push_back(id.get<int>());
        }
    }
    return inst;
}

}  // namespace

std::string_view to_string(InstanceSource source) { return source == InstanceSource::listed ? "listed" : "node-usage"; }

void validate(const ClusterState& state, const StateOrigins* origins) {
    if (state.nodes.empty()) {
        throw DataError("a cluster state needs at least one node", {"", origins != nullptr ? "" : "/nodes", 0});
    }
    std::unordered_map<std::string_view, std::size_t> index_of;
    int largest = 0;
    for (std::size_t i = 0; i < state.nodes.size(); ++i) {
        const auto& node = state.nodes[i];
        if (node.name.empty()) throw error_at(origins, "nodes", i, "/name", "a node needs a name");
        if (node.gpus < 1 || node.gpus > max_node_gpus) {
            throw error_at(
                origins, "nodes", i, "/gpus",
                fmt::format("node {} needs 1 to {} GPUs, got {}", quote(node.name), max_node_gpus, node.gpus));
        }
        if (!index_of.emplace(node.name, i).second) {
            throw error_at(origins, "nodes", i, "/name", fmt::format("node {} is listed twice", quote(node.name)));
        }
        largest = std::max(largest, node.gpus);
    }
    std::vector<int> used(state.nodes.size(), 0);
    // Per node, which instance holds each GPU id (-1: free), filled only for nodes whose instances list ids.
    std::unordered_map<std::size_t, std::vector<int>> holder;
    for (std::size_t i = 0; i < state.instances.size(); ++i) {
        const auto& inst = state.instances[i];
        if (inst.gpus < 1) {
            throw error_at(origins, "instances", i, "/gpus",
                           fmt::format("an instance needs at least one GPU, got {}", inst.gpus));
        }
        if (inst.gpus > largest) {
            throw error_at(
                origins, "instances", i, "/gpus",
                fmt::format("an instance of {} GPUs is larger than any node (the largest has {})", inst.gpus, largest));
        }
        const auto found = index_of.find(inst.node);
        if (found == index_of.end()) {
            throw error_at(origins, "instances", i, "/node", fmt::format("no node {} in the state", quote(inst.node)));
        }
        const std::size_t n = found->second;
        const auto& node = state.nodes[n];
        used[n] += inst.gpus;
        if (used[n] > node.gpus) {
            throw error_at(
                origins, "instances", i, "",
                fmt::format("node {} has {} GPUs, but its instances hold {}", quote(node.name), node.gpus, used[n]));
        }
        if (inst.gpu_ids.empty()) continue;
        if (inst.gpu_ids.size() != static_cast<std::size_t>(inst.gpus)) {
            throw error_at(origins, "instances", i, "/gpu_ids",
                           fmt::format("{} GPU ids for an instance of {} GPUs", inst.gpu_ids.size(), inst.gpus));
        }
        auto& held = holder.try_emplace(n, static_cast<std::size_t>(node.gpus), -1).first->second;
        for (std::size_t k = 0; k < inst.gpu_ids.size(); ++k) {
            const int id = inst.gpu_ids[k];
            const auto sub = fmt::format("/gpu_ids/{}", k);
            if (id < 0 || id >= node.gpus) {
                throw error_at(
                    origins, "instances", i, sub,
                    fmt::format("GPU {} does not exist on node {} (GPUs 0-{})", id, quote(node.name), node.gpus - 1));
            }
            auto& h = held[static_cast<std::size_t>(id)];
            if (h >= 0) {
                const auto& other = state.instances[static_cast<std::size_t>(h)];
                throw error_at(origins, "instances", i, sub,
                               fmt::format("GPU {} of node {} is assigned twice: job {} and job {}", id,
                                           quote(node.name), quote(other.job), quote(inst.job)));
            }
            h = static_cast<int>(i);
        }
    }
}

ClusterState cluster_state_from_json(const json_io::Json& doc, std::string_view file) {
    try {
        json_io::check_header(doc, cluster_state_schema, cluster_state_version);
        const json_io::View root(doc);
        ClusterState state;
        const auto node_list = root.at("nodes");
        if (node_list.json().is_array()) state.nodes.reserve(node_list.json().size());
        for (const auto& v : node_list.items()) {
            if (const auto& j = v.json(); j.is_object()) {
                const auto name = j.find("name");
                const auto gpus = j.find("gpus");
                if (name != j.end() && gpus != j.end() && name->is_string() && gpus->is_number_unsigned() &&
                    gpus->get<std::uint64_t>() <= max_node_gpus) {
                    state.nodes.push_back({name->get<std::string>(), gpus->get<int>()});
                    continue;
                }
            }
            Node node;
            node.name = v.at("name").as_string();
            node.gpus = static_cast<int>(v.at("gpus").as_int(0, max_node_gpus));
            state.nodes.push_back(std::move(node));
        }
        if (const auto from = root.string_or_null("instances_from")) {
            if (*from == "listed") {
                state.instances_from = InstanceSource::listed;
            } else if (*from == "node-usage") {
                state.instances_from = InstanceSource::node_usage;
            } else {
                throw root.at("instances_from")
                    .error(fmt::format("expected 'listed' or 'node-usage', got {}", quote(*from)));
            }
        }
        if (const auto list = root.find("instances")) {
            if (list->json().is_array()) state.instances.reserve(list->json().size());
            for (const auto& v : list->items()) {
                if (auto fast = plain_instance(v.json())) {
                    state.instances.push_back(std::move(*fast));
                    continue;
                }
                Instance inst;
                inst.job = v.at("job").as_string();
                inst.node = v.at("node").as_string();
                inst.gpus = static_cast<int>(v.at("gpus").as_int(0, max_node_gpus + 1L));
                if (const auto ids = v.find("gpu_ids")) {
                    for (const auto& id : ids->items())
                        inst.gpu_ids.push_back(static_cast<int>(id.as_int(-1, max_node_gpus)));
                }
                state.instances.push_back(std::move(inst));
            }
        }
        validate(state);
        return state;
    } catch (const DataError& e) {
        throw e.in_file(std::string(file));
    }
}

json_io::Json to_json(const ClusterState& state, std::string_view tool) {
    auto doc = json_io::make_header(cluster_state_schema, cluster_state_version, tool);
    doc["instances_from"] = to_string(state.instances_from);
    auto& nodes = doc["nodes"] = json_io::Json::array();
    for (const auto& n : state.nodes)
        nodes.push_back({{"name", n.name}, {"gpus", n.gpus}});
    auto& instances = doc["instances"] = json_io::Json::array();
    for (const auto& i : state.instances) {
        json_io::Json item = {{"job", i.job}, {"node", i.node}, {"gpus", i.gpus}};
        if (!i.gpu_ids.empty()) item["gpu_ids"] = i.gpu_ids;
        instances.push_back(std::move(item));
    }
    return doc;
}

}  // namespace gpuops::placement
