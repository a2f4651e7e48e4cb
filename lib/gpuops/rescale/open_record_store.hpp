// The one place that decides what `rescale-coord serve --db PATH` keeps its decisions in.
#pragma once

#include <memory>
#include <string>

#include "gpuops/rescale/records.hpp"

namespace gpuops::rescale {

struct OpenedStore {
    std::unique_ptr<RecordStore> store;
    bool durable = false;  ///< false: decisions die with the process, and a restart starts a fresh job
};

/// The record store at `path`. This build has no durable store yet and keeps the records in memory (the path is
/// not touched); the SQLite store (sqlite_store.hpp) replaces the body of this function.
[[nodiscard]] OpenedStore open_record_store(const std::string& path);

}  // namespace gpuops::rescale
