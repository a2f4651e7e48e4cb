// DeepEP's PCIe mode as a plan: one step, intra-node pairs hairpinned through the source's NIC.
#include "gpuops/alltoall/deepep.hpp"

namespace gpuops::alltoall {
namespace {

/// The path DeepEP's bounce buffers take: the NIC loopback inside a node, the default path across nodes.
topo::Path nic_path(const topo::Router& router, topo::DeviceId src, topo::DeviceId dst) {
    const auto& t = router.topology();
    if (t.devices[src].node != t.devices[dst].node) return router.route(src, dst);
    auto paths = router.alternatives(src, dst);
    for (auto& p : paths)
        if (p.kind == topo::PathKind::nic_loopback) return std::move(p);
    // A node without a NIC has no loopback; DeepEP would not run there at all, and the baseline degrades to
    // the direct P2P path (the default path, first among the alternatives) rather than refusing the demand.
    return std::move(paths.front());
}

}  // namespace

Plan plan_deepep_pcie(const Demand& demand, const topo::Router& router) {
    Plan plan;
    plan.algorithm = "deepep-pcie";
    plan.exclusive = false;
    Step step;
    const std::size_t n = demand.size();
    for (std::size_t i = 0; i < n; ++i) {
        std::uint64_t offset = 0;  // chunk (i, j) starts after the chunks for 0..j-1
        for (std::size_t j = 0; j < n; ++j) {
            const std::uint64_t bytes = demand.at(i, j);
            if (i != j && bytes > 0) {
                step.transfers.push_back(
                    make_transfer(demand, i, j, nic_path(router, demand.gpus[i], demand.gpus[j]), offset, bytes));
            }
            offset += bytes;
        }
    }
    if (!step.transfers.empty()) plan.steps.push_back(std::move(step));
    return plan;
}

}  // namespace gpuops::alltoall
