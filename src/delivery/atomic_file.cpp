#include "spyglass/delivery/atomic_file.hpp"

#include "spyglass/delivery/output_file.hpp"

namespace spyglass::delivery {

Result<void> write_file_atomically(const std::string& path,
                                   const std::function<Result<void>(std::FILE*)>& write) {
    auto file = OutputFile::open(path, OutputFile::Role::whole_file);
    if (!file) return std::unexpected(file.error());
    auto stream = file->begin_write();
    if (!stream) return std::unexpected(stream.error());
    return file->finish(write(*stream));
}

} // namespace spyglass::delivery
