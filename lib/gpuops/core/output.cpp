// Atomic file output and the registry of temp files that a timeout must clean up.
#include "gpuops/core/output.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <mutex>

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpuops/core/error.hpp"

namespace gpuops {
namespace {

std::mutex registry_mutex;
std::vector<std::string>& registry() {
    static std::vector<std::string> paths;
    return paths;
}

void register_temp(const std::string& path) {
    const std::lock_guard lock(registry_mutex);
    registry().push_back(path);
}

void unregister_temp(const std::string& path) noexcept {
    const std::lock_guard lock(registry_mutex);
    auto& paths = registry();
    paths.erase(std::remove(paths.begin(), paths.end(), path), paths.end());
}

}  // namespace

std::vector<std::string> pending_temp_files() {
    const std::lock_guard lock(registry_mutex);
    return registry();
}

Output::Output(std::string path) : path_(std::move(path)) {
    if (is_stdout()) return;
    // A device or FIFO (-o /dev/null, -o /dev/stderr) is written in place: renaming over it would replace
    // the device node with a regular file. A symlink is followed, so the link survives the rename.
    struct stat st {};
    if (::stat(path_.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
        if (S_ISDIR(st.st_mode)) throw IoError(fmt::format("cannot write {}: Is a directory", quote(path_)));
        file_.open(path_, std::ios::binary);
        if (!file_) throw IoError(fmt::format("cannot write {}: {}", quote(path_), std::strerror(errno)));
        direct_ = true;
        return;
    }
    std::error_code ec;
    const auto real = std::filesystem::canonical(path_, ec);  // an existing file, symlinks resolved
    target_ = ec ? path_ : real.string();
    std::string pattern = target_ + ".tmp.XXXXXX";
    const int fd = ::mkstemp(pattern.data());
    if (fd < 0) {
        throw IoError(fmt::format("cannot create {}: {}", quote(path_), std::strerror(errno)));
    }
    // mkstemp creates 0600; give the final file the mode a plain create would (0666 less the umask).
    const mode_t mask = ::umask(0);
    ::umask(mask);
    (void)::fchmod(fd, 0666 & ~mask);
    ::close(fd);
    temp_path_ = pattern;
    register_temp(temp_path_);
    file_.open(temp_path_, std::ios::binary | std::ios::trunc);
    if (!file_) {
        ::unlink(temp_path_.c_str());
        unregister_temp(temp_path_);
        throw IoError(fmt::format("cannot write {}", quote(path_)));
    }
}

Output::Output(Output&& other) noexcept
    : path_(std::move(other.path_)),
      target_(std::move(other.target_)),
      temp_path_(std::move(other.temp_path_)),
      file_(std::move(other.file_)),
      committed_(other.committed_),
      direct_(other.direct_) {
    other.temp_path_.clear();
    other.committed_ = true;
}

Output::~Output() noexcept {
    if (!committed_ && !temp_path_.empty()) {
        file_.close();
        ::unlink(temp_path_.c_str());
        unregister_temp(temp_path_);
    }
}

std::ostream& Output::stream() { return is_stdout() ? std::cout : static_cast<std::ostream&>(file_); }

void Output::commit() {
    if (committed_) return;
    if (is_stdout()) {
        std::cout.flush();
        if (!std::cout || std::fflush(stdout) != 0) throw IoError("cannot write standard output");
        committed_ = true;
        return;
    }
    file_.flush();
    const bool ok = static_cast<bool>(file_);
    file_.close();
    if (!ok || file_.fail()) throw IoError(fmt::format("cannot write {}", quote(path_)));
    if (direct_) {
        committed_ = true;
        return;
    }
    if (std::rename(temp_path_.c_str(), target_.c_str()) != 0) {
        throw IoError(fmt::format("cannot write {}: {}", quote(path_), std::strerror(errno)));
    }
    unregister_temp(temp_path_);
    temp_path_.clear();
    committed_ = true;
}

}  // namespace gpuops
