// open_record_store: memory for now; SqliteRecordStore(path) once it is merged.
#include "gpuops/rescale/open_record_store.hpp"

namespace gpuops::rescale {

OpenedStore open_record_store(const std::string& /*path*/) { return {std::make_unique<MemoryRecordStore>(), false}; }

}  // namespace gpuops::rescale
