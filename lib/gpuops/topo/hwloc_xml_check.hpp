// Vetting an hwloc XML file before hwloc loads it: hwloc itself only says "Invalid argument".
#pragma once

#include <string>
#include <string_view>

namespace gpuops::topo {

/// Rejects, with a one-line reason and the line, what hwloc 2.9 would refuse: malformed or truncated XML, an NCCL
/// topology file (<system>), another root element, and XML format versions above 2 (hwloc 3.0 writes "3.0").
void check_hwloc_xml_text(std::string_view text, const std::string& file);

}  // namespace gpuops::topo
