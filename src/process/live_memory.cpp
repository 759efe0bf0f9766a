#include "spyglass/process/live_memory.hpp"

#include <array>
#include <cerrno>
#include <climits>
#include <string>
#include <vector>

#include <fcntl.h>
#include <sys/uio.h>
#include <unistd.h>

namespace spyglass::process {

namespace {
constexpr std::size_t kMaxIov = 1024; // IOV_MAX on Linux
constexpr std::size_t kPage = 4096;
} // namespace

LiveMemory::~LiveMemory() {
    if (mem_fd_ >= 0) ::close(mem_fd_);
}

ReadError LiveMemory::error_from_errno(int err, Address address) const {
    switch (err) {
    case ESRCH:
        return {Errc::process_gone, address};
    case EPERM:
    case EACCES:
        return {Errc::permission_denied, address};
    default:
        return {Errc::bad_address, address};
    }
}

std::expected<std::size_t, ReadError> LiveMemory::pread_mem(Address address, void* destination,
                                                            std::size_t length) {
    if (mem_fd_ < 0) {
        std::string path = "/proc/" + std::to_string(pid_) + "/mem";
        mem_fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (mem_fd_ < 0) {
            int err = errno;
            return std::unexpected(error_from_errno(err == ENOENT ? ESRCH : err, address));
        }
    }
    ++calls_;
    ssize_t got = ::pread(mem_fd_, destination, length, static_cast<off_t>(address));
    if (got < 0) {
        int err = errno;
        // /proc/PID/mem answers EIO for unmapped memory and ESRCH once the process is gone.
        return std::unexpected(error_from_errno(err == EIO ? EFAULT : err, address));
    }
    return static_cast<std::size_t>(got);
}

ReadStatus LiveMemory::read(Address address, void* destination, std::size_t length) {
    if (length == 0) return {};
    if (!use_proc_mem_) {
        iovec local{destination, length};
        iovec remote{reinterpret_cast<void*>(address), length};
        ++calls_;
        ssize_t got = ::process_vm_readv(pid_, &local, 1, &remote, 1, 0);
        if (got == static_cast<ssize_t>(length)) return {};
        if (got >= 0) return std::unexpected(ReadError{Errc::bad_address, address + got});
        int err = errno;
        if (err != ENOSYS) return std::unexpected(error_from_errno(err, address));
        use_proc_mem_ = true;
    }
    auto got = pread_mem(address, destination, length);
    if (!got) return std::unexpected(got.error());
    if (*got != length) return std::unexpected(ReadError{Errc::bad_address, address + *got});
    return {};
}

ReadStatus LiveMemory::read_many(std::span<const ReadOp> ops) {
    if (use_proc_mem_) return RemoteMemory::read_many(ops);
    // Whole IOV_MAX batches: a deep stack's frames are one call per 1024, not per 64.
    std::vector<iovec>& local_small = local_iov_;
    std::vector<iovec>& remote_small = remote_iov_;
    local_small.resize(std::min(ops.size(), kMaxIov));
    remote_small.resize(local_small.size());
    while (!ops.empty()) {
        std::size_t batch = std::min(ops.size(), kMaxIov);
        std::size_t total = 0;
        for (std::size_t i = 0; i < batch; ++i) {
            local_small[i] = {ops[i].destination, ops[i].length};
            remote_small[i] = {reinterpret_cast<void*>(ops[i].address), ops[i].length};
            total += ops[i].length;
        }
        ++calls_;
        ssize_t got =
            ::process_vm_readv(pid_, local_small.data(), batch, remote_small.data(), batch, 0);
        if (got < 0) {
            int err = errno;
            if (err == ENOSYS) {
                use_proc_mem_ = true;
                return RemoteMemory::read_many(ops);
            }
            return std::unexpected(error_from_errno(err, ops[0].address));
        }
        if (static_cast<std::size_t>(got) != total) {
            // The kernel stops at the first fault; name the op that faulted.
            std::size_t done = static_cast<std::size_t>(got);
            for (std::size_t i = 0; i < batch; ++i) {
                if (done < ops[i].length)
                    return std::unexpected(ReadError{Errc::bad_address, ops[i].address + done});
                done -= ops[i].length;
            }
            return std::unexpected(ReadError{Errc::bad_address, ops[0].address});
        }
        ops = ops.subspan(batch);
    }
    return {};
}

std::expected<std::size_t, ReadError> LiveMemory::read_prefix(Address address, void* destination,
                                                              std::size_t length) {
    if (length == 0) return 0;
    if (!use_proc_mem_) {
        // One call: the remote range split at page boundaries, so that the kernel's copy ends
        // at the first page that is not mapped (it does not split an iovec element).
        remote_iov_.clear();
        for (std::size_t done = 0; done < length && remote_iov_.size() < kMaxIov;) {
            Address at = address + done;
            std::size_t chunk = std::min(length - done, kPage - (at % kPage));
            remote_iov_.push_back({reinterpret_cast<void*>(at), chunk});
            done += chunk;
        }
        iovec local{destination, length};
        ++calls_;
        ssize_t got =
            ::process_vm_readv(pid_, &local, 1, remote_iov_.data(), remote_iov_.size(), 0);
        if (got >= 0) return static_cast<std::size_t>(got);
        int err = errno;
        if (err == EFAULT) return 0;
        if (err != ENOSYS) return std::unexpected(error_from_errno(err, address));
        use_proc_mem_ = true;
    }
    // /proc/PID/mem stops at the first unmapped byte by itself.
    auto* out = static_cast<std::byte*>(destination);
    std::size_t done = 0;
    while (done < length) {
        auto got = pread_mem(address + done, out + done, length - done);
        if (!got) {
            if (got.error().code != Errc::bad_address) return std::unexpected(got.error());
            break;
        }
        if (*got == 0) break;
        done += *got;
    }
    return done;
}

} // namespace spyglass::process
