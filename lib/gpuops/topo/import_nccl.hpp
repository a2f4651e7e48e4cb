// Imports NCCL topology XML (the NCCL_TOPO_FILE / NCCL_TOPO_DUMP_FILE format) into a one-node Topology.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "gpuops/topo/topology.hpp"

namespace gpuops::topo {

/// Reads an NCCL topology XML file into a one-node Topology. Warnings (e.g. "no GPU identified") are appended.
/// A missing file is an InputMissingError (66); invalid XML, a root other than <system> and malformed values
/// are DataErrors naming the file and line (65).
[[nodiscard]] Topology import_nccl_xml(std::string_view path, std::vector<std::string>& warnings);

/// The same for text already read; `source_name` names it in messages and in Topology::source.
[[nodiscard]] Topology import_nccl_xml_text(std::string_view text, std::string_view source_name,
                                            std::vector<std::string>& warnings);

}  // namespace gpuops::topo
