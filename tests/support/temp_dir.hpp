// A scratch folder for tests that lay out files (sysfs, /proc, outputs), removed when the test ends.
#pragma once

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

namespace gpuops::test {

class TempDir {
public:
    /// A new folder below `base` (the system's temp folder unless a test needs another file system).
    explicit TempDir(const std::filesystem::path& base = std::filesystem::temp_directory_path()) {
        std::string pattern = (base / "gpuops-test-XXXXXX").string();
        REQUIRE(::mkdtemp(pattern.data()) != nullptr);
        path_ = pattern;
    }
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(path_, ec);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;

    [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }
    [[nodiscard]] std::string str() const { return path_.string(); }

    /// Writes `text` to `relative` below the folder, creating the folders on the way.
    void write(const std::string& relative, const std::string& text) const {
        const auto file = path_ / relative;
        std::filesystem::create_directories(file.parent_path());
        std::ofstream out(file);
        out << text;
        REQUIRE(out.good());
    }
    /// Creates the folder `relative` (and its parents) below the folder.
    void mkdir(const std::string& relative) const { std::filesystem::create_directories(path_ / relative); }

private:
    std::filesystem::path path_;
};

}  // namespace gpuops::test
