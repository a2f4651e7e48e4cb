// Human and tool views of a topology: text tree + nvidia-smi style matrix, Graphviz dot, Slurm gres.conf.
#pragma once

#include <string>
#include <string_view>

#include "gpuops/topo/topology.hpp"

namespace gpuops::topo {

/// A tree like lstopo per node, then per node the GPU×GPU / GPU×NIC relationship matrix in
/// nvidia-smi topo -m words (X, PIX, PXB, PHB, NODE, SYS) with CPU and NUMA affinity, and a legend.
[[nodiscard]] std::string render_text(const Topology& topology);

/// Graphviz: one cluster per node, links labelled with their bandwidth.
[[nodiscard]] std::string render_dot(const Topology& topology);

/// Slurm gres.conf lines for the GPUs of every node: NodeName, Name=gpu, Type, File, Cores.
/// `generator` names the tool and version in the header comment.
[[nodiscard]] std::string render_gres_conf(const Topology& topology, std::string_view generator);

/// Slurm GRES type from a model name: "NVIDIA L40S" → "l40s", "Tesla V100-SXM3-32GB" → "v100".
[[nodiscard]] std::string gres_type(std::string_view model);

}  // namespace gpuops::topo
