// Slurm hostlist expressions (node[01-04,07]) expanded and compressed without calling scontrol.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace gpuops::hostlist {

/// The most names one expression may expand to; beyond it expand() throws instead of exhausting memory.
inline constexpr std::size_t max_expanded_hosts = 1'000'000;

/// The longest name expand() produces (a DNS name has at most 253 characters), which bounds its memory.
inline constexpr std::size_t max_host_name_length = 255;

/// Host names in order, like `scontrol show hostnames`: `node[01-04,07],gpu-a[1-2]` gives node01..node04,
/// node07, gpu-a1, gpu-a2. Hosts are separated by commas outside brackets or by whitespace; several bracket
/// groups in one name give their cartesian product, the first group varying slowest; each range keeps the zero
/// padding of its lower bound; duplicates are kept. A blank expression gives no hosts. Throws DataError naming
/// the expression when it is malformed, expands to more than max_expanded_hosts names or to a name longer than
/// max_host_name_length.
[[nodiscard]] std::vector<std::string> expand(std::string_view expr);

/// The shortest usual expression for `hosts`, like `scontrol show hostlist`: duplicates dropped, names grouped by
/// the text before their trailing number, numbers sorted and merged into ranges (different zero paddings never
/// share a range), groups sorted by that text. Names without a trailing number pass through. expand() of the
/// result gives every distinct host exactly once. Throws DataError for a name that cannot appear in a hostlist
/// (empty, or containing brackets, commas or whitespace).
[[nodiscard]] std::string compress(std::span<const std::string> hosts);

}  // namespace gpuops::hostlist
