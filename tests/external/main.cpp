// Runs the tests over ../shared/data (real machines); exits 77 (ctest: skipped) when the folder is absent.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <filesystem>
#include <iostream>

#include "external/data_dir.hpp"

int main(int argc, char** argv) {
    const auto dir = gpuops::test::external_data_dir();
    if (!std::filesystem::is_directory(dir / "topologies")) {
        std::cout << "skipped: external data not found at '" << dir.string()
                  << "' (set GPUOPS_EXTERNAL_DATA to the shared data folder)\n";
        return 77;
    }
    return Catch::Session().run(argc, argv);
}
