// Imports a node's topology from hwloc: live discovery of this machine, or an hwloc XML file (1.x or 2.x).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpuops/topo/topology.hpp"

namespace gpuops::topo {

/// Reads an hwloc XML export (`lstopo --of xml`, hwloc 1.x or 2.x format); "-" reads stdin.
/// Missing file: InputMissingError. Malformed XML, an NCCL topology file, another root element, XML format 3.0 or
/// anything else hwloc refuses: DataError naming the file (and the line where known).
/// Notes that are not errors (no GPU found, a host bridge not local to one package) go to `warnings`.
[[nodiscard]] Topology import_hwloc_xml(std::string_view path, std::vector<std::string>& warnings);

/// Discovers this machine with hwloc, every I/O object included. PCIe link speeds come from sysfs
/// max_link_speed/max_link_width where the kernel has them, since hwloc reports the current (idle-throttled) speed.
/// Throws HwlocError (UnavailableError) when hwloc fails.
[[nodiscard]] Topology import_hwloc_live(std::vector<std::string>& warnings);

}  // namespace gpuops::topo
