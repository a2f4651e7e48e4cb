// The checks on hwloc XML text that give operators a reason and a line instead of hwloc's "Invalid argument".
#include "gpuops/topo/hwloc_xml_check.hpp"

#include <fmt/format.h>

#include "gpuops/core/error.hpp"
#include "gpuops/core/text.hpp"
#include "gpuops/topo/xml_document.hpp"

namespace gpuops::topo {
void check_hwloc_xml_text(std::string_view text, const std::string& file) {
    tinyxml2::XMLDocument doc;
    parse_xml(doc, text, file);
    const tinyxml2::XMLElement* root = doc.RootElement();
    if (root == nullptr) throw DataError("invalid XML: no root element", {file, "", 0});
    const std::string_view name = root->Name();
    const int line = root->GetLineNum();
    if (name == "system") throw DataError("this is an NCCL topology file; use --nccl-xml", {file, "", line});
    if (name != "topology") {
        throw DataError(fmt::format("not an hwloc XML file: the root element is <{}>, expected <topology>", name),
                        {file, "", line});
    }
    // hwloc 1.x writes no version; 2.x writes "2.0"; hwloc 3.0 writes "3.0", which 2.x refuses.
    if (const char* version = root->Attribute("version")) {
        const auto major = text::leading_int(version);
        if (!major || *major > 2) {
            throw DataError(
                fmt::format("unsupported hwloc XML version {} (hwloc 2.9 reads 1.x and 2.x)", quote(version)),
                {file, "", line});
        }
    }
}

}  // namespace gpuops::topo
