// Parsing the XML topology formats (hwloc, NCCL) with tinyxml2, with syntax errors in the gpuops error voice.
#pragma once

#include <string>
#include <string_view>

#include <tinyxml2.h>

namespace gpuops::topo {

/// Parses `text` into `doc`. A syntax error becomes DataError("invalid XML: <reason>", {file, "", line}),
/// e.g. "malformed attribute in <pci>", with "; the file ends before the closing </system> (truncated?)" when the
/// text stops before its root element is closed, as a cut-off copy does.
void parse_xml(tinyxml2::XMLDocument& doc, std::string_view text, const std::string& file);

}  // namespace gpuops::topo
