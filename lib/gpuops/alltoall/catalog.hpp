// The channel catalog (vp-catalog): maximal contention-free channels of a topology, one representative per
// orbit of its symmetry, exact for a node and hierarchical (domains × port patterns) for clusters and for
// nodes too large to search whole.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gpuops/alltoall/orbits.hpp"
#include "gpuops/core/json_io.hpp"
#include "gpuops/topo/routing.hpp"
#include "gpuops/topo/topology.hpp"

namespace gpuops::alltoall {

inline constexpr int catalog_schema_version = 1;

enum class CatalogMethod {
    automatic,     ///< exact for a node of at most `exact_gpu_limit` GPUs; hierarchical otherwise
    exact,         ///< the whole topology is one space: every maximal channel, up to symmetry
    hierarchical,  ///< domains (nodes of a cluster, or sockets of a node) joined by port patterns
};

struct CatalogOptions {
    CatalogMethod method = CatalogMethod::automatic;
    std::size_t exact_gpu_limit = 12;  ///< automatic: larger single nodes are split by socket
    OrbitSearch search;                ///< limits and progress of each orbit search
};

/// One orbit of maximal channels of a domain class: a representative and what the planner searches by.
struct CatalogChannel {
    FlowIds flows;                     ///< the representative, in the class's space
    double orbit_size = 0;             ///< channels in the orbit
    double rate = 0;                   ///< bytes/s of the slowest flow
    std::vector<std::uint32_t> shape;  ///< per edge class: how many of its edges the channel uses
};

/// A directed edge orbit of a domain class: edges no symmetry tells apart (same capacity).
struct EdgeClass {
    std::vector<topo::EdgeId> edges;  ///< edges of the class's local topology
    double capacity = 0;              ///< bytes/s
};

/// A part of the topology cataloged exactly: the whole topology (exact), a node of a cluster, or a socket.
/// Its local topology is the part's devices plus one "port" device per link leaving the part (a NIC's
/// fabric cable, a socket interconnect), so traffic that leaves or enters the part is a flow to or from a
/// port.
struct Domain {
    std::string name;                      ///< "node", a host name, or a socket's label
    std::size_t domain_class = 0;          ///< index into Catalog::classes
    std::vector<topo::DeviceId> global;    ///< per device of the class's local topology: the device here
    std::vector<topo::LinkId> port_links;  ///< per port of the class: the global link it stands for
};

/// Domains that are isomorphic share one class: one local topology, one space, one list of orbits.
struct DomainClass {
    std::unique_ptr<topo::Topology> local;
    std::unique_ptr<topo::Router> router;
    std::unique_ptr<ChannelSpace> space;
    std::vector<topo::DeviceId> ports;  ///< the port devices of the local topology, in port order
    std::vector<EdgeClass> edge_classes;
    std::vector<CatalogChannel> channels;
    double raw_channels = 0;           ///< Σ orbit sizes
    std::vector<std::size_t> members;  ///< indexes into Catalog::domains
};

/// How the ports of the domains are joined in hierarchical catalogs.
struct PortPattern {
    std::string
        kind;  ///< "socket-links" (fixed by the interconnect) or "rail-aligned" (a derangement of nodes per rail)
    std::size_t rails = 0;  ///< rail-aligned: ports per node
    double count = 1;       ///< port pairings the pattern stands for
    double count_log10 = 0;
};

struct CatalogStats {
    std::size_t orbits = 0;
    double raw_channels = 0;  ///< concrete channels represented (exact below 2^53; may be inf when huge)
    double raw_channels_log10 = 0;
    bool raw_exact = false;  ///< every maximal channel of the topology is represented
    double compression = 0;  ///< raw channels per stored orbit
    double compression_log10 = 0;
    double build_seconds = 0;
};

class Catalog {
public:
    /// Builds the catalog. DataError for a topology without GPUs, with fewer than two GPUs, with a part no
    /// path reaches (a disconnected graph), or with a link of zero bandwidth.
    [[nodiscard]] static Catalog build(const topo::Topology& topology, const CatalogOptions& options = {});
    /// Reads a gpuops.catalog document against the topology it describes; the orbits are taken as written
    /// (check() verifies them). DataError with a JSON pointer for anything that does not resolve.
    [[nodiscard]] static Catalog read(const json_io::Json& doc, const topo::Topology& topology,
                                      std::string_view source_name);

    /// The same, against the topology the document carries (topology.document): what vp-plan uses.
    [[nodiscard]] static Catalog read(const json_io::Json& doc, std::string_view source_name);

    [[nodiscard]] json_io::Json to_json(bool with_instances, std::size_t instance_limit) const;
    [[nodiscard]] std::string summary() const;  ///< the --format text report

    /// Every violation found (empty when the catalog is right): each channel contention-free, maximal and
    /// of the stated orbit size and shape; orbits distinct; the totals; a composed channel of the whole
    /// topology; and, when the raw count is at most `brute_force_limit`, the expanded set against
    /// Bron–Kerbosch. Stops after `max_violations`.
    [[nodiscard]] std::vector<std::string> check(std::size_t brute_force_limit, std::size_t max_violations) const;

    [[nodiscard]] const topo::Topology& topology() const { return *topology_; }
    [[nodiscard]] CatalogMethod method() const { return method_; }
    [[nodiscard]] const std::vector<Domain>& domains() const { return domains_; }
    [[nodiscard]] const std::vector<DomainClass>& classes() const { return classes_; }
    [[nodiscard]] const std::optional<PortPattern>& pattern() const { return pattern_; }
    [[nodiscard]] const CatalogStats& stats() const { return stats_; }
    [[nodiscard]] const std::string& fingerprint() const { return fingerprint_; }

    /// Every channel of the orbit of channel `index` of class `cls`, in the class's space.
    [[nodiscard]] std::vector<FlowIds> instances(std::size_t cls, std::size_t index, std::size_t limit) const;
    /// One concrete channel of the whole topology: per domain a channel of its class's space (sorted flow ids),
    /// and for hierarchical catalogs per rail a derangement of the nodes (node index → peer node index). Port
    /// flows are joined across the pattern through the global router. DataError when the halves do not meet.
    [[nodiscard]] Channel compose(const std::vector<FlowIds>& per_domain,
                                  const std::vector<std::vector<std::size_t>>& rail_peers) const;

private:
    Catalog() = default;
    /// Everything but the orbit search: the parts, their classes and spaces, the port pattern.
    [[nodiscard]] static Catalog decompose(const topo::Topology& topology, CatalogMethod method,
                                           std::size_t exact_gpu_limit);
    void finish_class(DomainClass& c) const;
    void compute_stats();

    std::shared_ptr<const topo::Topology> topology_;
    std::unique_ptr<topo::Router> router_;
    CatalogMethod method_ = CatalogMethod::exact;
    std::vector<Domain> domains_;
    std::vector<DomainClass> classes_;
    std::optional<PortPattern> pattern_;
    CatalogStats stats_;
    std::string fingerprint_;
    std::string read_fingerprint_;  ///< as written in a document read back
    std::vector<double> read_raw_;  ///< per class: raw_channels as written
};

/// "exact", "hierarchical", "auto".
[[nodiscard]] std::string_view to_string(CatalogMethod method);

/// A digest of what channels depend on (devices, links, capacities): equal topologies, equal fingerprints.
[[nodiscard]] std::string topology_fingerprint(const topo::Topology& topology);

}  // namespace gpuops::alltoall
