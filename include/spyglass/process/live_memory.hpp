#pragma once

#include <vector>

#include <sys/types.h>
#include <sys/uio.h>

#include "spyglass/process/memory.hpp"

namespace spyglass::process {

// Reads a live process with process_vm_readv. When that system call is unavailable (seccomp in
// some containers), falls back to pread on /proc/PID/mem for the rest of its life.
class LiveMemory final : public RemoteMemory {
  public:
    explicit LiveMemory(pid_t pid) noexcept : pid_(pid) {}
    ~LiveMemory() override;
    LiveMemory(const LiveMemory&) = delete;
    LiveMemory& operator=(const LiveMemory&) = delete;

    ReadStatus read(Address address, void* destination, std::size_t length) override;
    ReadStatus read_many(std::span<const ReadOp> ops) override;
    std::expected<std::size_t, ReadError> read_prefix(Address address, void* destination,
                                                      std::size_t length) override;
    [[nodiscard]] std::uint64_t read_calls() const noexcept override { return calls_; }
    [[nodiscard]] pid_t pid() const noexcept { return pid_; }

  private:
    std::expected<std::size_t, ReadError> pread_mem(Address address, void* destination,
                                                    std::size_t length);
    ReadError error_from_errno(int err, Address address) const;

    pid_t pid_;
    int mem_fd_ = -1;
    bool use_proc_mem_ = false;
    std::uint64_t calls_ = 0;
    std::vector<iovec> local_iov_, remote_iov_; // reused by read_many
};

} // namespace spyglass::process
