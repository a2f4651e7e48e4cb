// A fixed-size bit set of flow indexes (internal to the alltoall module).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace gpuops::alltoall {

/// A fixed-size set of flow indexes; the compatibility graph of a node has a few hundred flows.
class FlowSet {
public:
    FlowSet() = default;
    explicit FlowSet(std::size_t size) : words_((size + 63) / 64, 0) {}
    void set(std::size_t i) { words_[i / 64] |= std::uint64_t{1} << (i % 64); }
    void reset(std::size_t i) { words_[i / 64] &= ~(std::uint64_t{1} << (i % 64)); }
    [[nodiscard]] bool test(std::size_t i) const { return ((words_[i / 64] >> (i % 64)) & 1U) != 0; }
    [[nodiscard]] bool empty() const {
        return std::all_of(words_.begin(), words_.end(), [](std::uint64_t w) { return w == 0; });
    }
    [[nodiscard]] FlowSet operator&(const FlowSet& o) const {
        FlowSet r = *this;
        for (std::size_t k = 0; k < words_.size(); ++k)
            r.words_[k] &= o.words_[k];
        return r;
    }
    [[nodiscard]] FlowSet operator|(const FlowSet& o) const {
        FlowSet r = *this;
        for (std::size_t k = 0; k < words_.size(); ++k)
            r.words_[k] |= o.words_[k];
        return r;
    }
    [[nodiscard]] FlowSet without(const FlowSet& o) const {
        FlowSet r = *this;
        for (std::size_t k = 0; k < words_.size(); ++k)
            r.words_[k] &= ~o.words_[k];
        return r;
    }
    [[nodiscard]] std::size_t count() const {
        std::size_t n = 0;
        for (auto w : words_)
            n += static_cast<std::size_t>(__builtin_popcountll(w));
        return n;
    }
    template <typename F>
    void for_each(F&& f) const {
        for (std::size_t k = 0; k < words_.size(); ++k) {
            for (std::uint64_t w = words_[k]; w != 0; w &= w - 1)
                f(k * 64 + static_cast<std::size_t>(__builtin_ctzll(w)));
        }
    }

    bool operator==(const FlowSet&) const = default;

private:
    std::vector<std::uint64_t> words_;
};

}  // namespace gpuops::alltoall
