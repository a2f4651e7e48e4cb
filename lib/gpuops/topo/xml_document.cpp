// tinyxml2's error codes turned into short reasons, shared by the hwloc and NCCL importers.
#include "gpuops/topo/xml_document.hpp"

#include <fmt/format.h>

#include "gpuops/core/error.hpp"
#include "gpuops/core/text.hpp"

namespace gpuops::topo {
namespace {

std::string reason_of(const tinyxml2::XMLDocument& doc) {
    std::string reason;
    switch (doc.ErrorID()) {
        case tinyxml2::XML_ERROR_PARSING_ELEMENT: reason = "malformed element"; break;
        case tinyxml2::XML_ERROR_PARSING_ATTRIBUTE: reason = "malformed attribute"; break;
        case tinyxml2::XML_ERROR_PARSING_TEXT: reason = "malformed text"; break;
        case tinyxml2::XML_ERROR_PARSING_CDATA: reason = "malformed CDATA section"; break;
        case tinyxml2::XML_ERROR_PARSING_COMMENT: reason = "unterminated comment"; break;
        case tinyxml2::XML_ERROR_PARSING_DECLARATION: reason = "malformed declaration"; break;
        case tinyxml2::XML_ERROR_PARSING_UNKNOWN: reason = "malformed markup"; break;
        case tinyxml2::XML_ERROR_EMPTY_DOCUMENT: reason = "empty document"; break;
        case tinyxml2::XML_ERROR_MISMATCHED_ELEMENT: reason = "mismatched end tag"; break;
        case tinyxml2::XML_ERROR_PARSING: reason = "unclosed element"; break;
        case tinyxml2::XML_ELEMENT_DEPTH_EXCEEDED: reason = "elements nested too deeply"; break;
        default: reason = doc.ErrorName(); break;
    }
    // tinyxml2's verbose text ends in "XMLElement name=<name>" when it knows the element.
    const std::string_view detail = doc.ErrorStr() != nullptr ? doc.ErrorStr() : "";
    constexpr std::string_view marker = "XMLElement name=";
    if (const auto at = detail.find(marker); at != std::string_view::npos) {
        const auto name = detail.substr(at + marker.size());
        if (!name.empty()) reason += fmt::format(" in <{}>", name.substr(0, name.find(' ')));
    }
    return reason;
}

/// The name of the first element, skipping the declaration, comments and the DOCTYPE.
std::string_view root_name(std::string_view text) {
    for (std::size_t at = text.find('<'); at != std::string_view::npos; at = text.find('<', at + 1)) {
        if (at + 1 < text.size() &&
            (std::isalpha(static_cast<unsigned char>(text[at + 1])) != 0 || text[at + 1] == '_')) {
            const auto end = text.find_first_of(" \t\r\n/>", at + 1);
            return text.substr(at + 1, end == std::string_view::npos ? std::string_view::npos : end - at - 1);
        }
    }
    return {};
}

}  // namespace

void parse_xml(tinyxml2::XMLDocument& doc, std::string_view text, const std::string& file) {
    if (doc.Parse(text.data(), text.size()) == tinyxml2::XML_SUCCESS) return;
    std::string reason = "invalid XML: " + reason_of(doc);
    const std::string_view root = root_name(text);
    if (doc.ErrorID() != tinyxml2::XML_ERROR_EMPTY_DOCUMENT && !root.empty() &&
        !text::trim(text).ends_with(fmt::format("</{}>", root))) {
        reason += fmt::format("; the file ends before the closing </{}> (truncated?)", root);
    }
    throw DataError(reason, {file, "", doc.ErrorID() == tinyxml2::XML_ERROR_EMPTY_DOCUMENT ? 0 : doc.ErrorLineNum()});
}

}  // namespace gpuops::topo
