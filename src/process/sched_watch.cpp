#include "spyglass/process/sched_watch.hpp"

#include <algorithm>
#include <cstring>
#include <ctime>

#include <linux/perf_event.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace spyglass::process {

namespace {

constexpr std::size_t kDataPages = 64; // 256 KiB per CPU: a busy CPU's switches for 10+ ms
// Less free room than this: the next record may not have fit (the largest one asked for, a
// COMM with its sample id, is under 100 bytes).
constexpr std::size_t kFullMargin = 256;

// The tail of a switch record with sample_id_all and PERF_SAMPLE_TID | PERF_SAMPLE_TIME.
struct SwitchRecord {
    perf_event_header header;
    std::uint32_t next_prev_pid, next_prev_tid;
    std::uint32_t pid, tid; // the task the record is about (switching in, or out)
    std::uint64_t time;
};

// A fork or exit record (PERF_RECORD_FORK / EXIT) with its sample_id.
struct TaskRecord {
    perf_event_header header;
    std::uint32_t pid, ppid, tid, ptid;
    std::uint64_t time;
};

} // namespace

std::unique_ptr<SchedWatch> SchedWatch::open() {
    long cpus = ::sysconf(_SC_NPROCESSORS_ONLN);
    long page = ::sysconf(_SC_PAGESIZE);
    if (cpus <= 0 || page <= 0) return nullptr;
    std::unique_ptr<SchedWatch> watch(new SchedWatch());
    watch->data_size_ = kDataPages * static_cast<std::size_t>(page);
    for (long cpu = 0; cpu < cpus; ++cpu) {
        perf_event_attr attr{};
        attr.size = sizeof attr;
        attr.type = PERF_TYPE_SOFTWARE;
        attr.config = PERF_COUNT_SW_DUMMY;
        attr.context_switch = 1;
        attr.task = 1; // threads created and exited: the thread list changed
        attr.comm = 1;
        attr.comm_exec = 1; // a followed child that execs (Python, maybe, at last)
        attr.sample_id_all = 1;
        attr.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
        attr.use_clockid = 1; // times comparable with the pauses' own
        attr.clockid = CLOCK_MONOTONIC;
        // Never woken: the ring is read from memory at every pass.
        attr.watermark = 1;
        attr.wakeup_watermark = static_cast<std::uint32_t>(watch->data_size_);
        int fd = static_cast<int>(::syscall(SYS_perf_event_open, &attr, -1, static_cast<int>(cpu),
                                            -1, PERF_FLAG_FD_CLOEXEC));
        if (fd < 0) return nullptr; // refused (or that CPU is offline): the /proc path serves
        Ring ring;
        ring.fd = fd;
        ring.mapped = (1 + kDataPages) * static_cast<std::size_t>(page);
        ring.base = ::mmap(nullptr, ring.mapped, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (ring.base == MAP_FAILED) {
            ::close(fd);
            return nullptr;
        }
        watch->rings_.push_back(ring);
    }
    return watch;
}

SchedWatch::~SchedWatch() {
    for (Ring& ring : rings_) {
        if (ring.base != nullptr && ring.base != MAP_FAILED) ::munmap(ring.base, ring.mapped);
        if (ring.fd >= 0) ::close(ring.fd);
    }
}

void SchedWatch::handle(const unsigned char* bytes, std::size_t size) {
    perf_event_header header;
    std::memcpy(&header, bytes, sizeof header);
    if ((header.type == PERF_RECORD_FORK || header.type == PERF_RECORD_EXIT) &&
        size >= sizeof(TaskRecord)) {
        TaskRecord task;
        std::memcpy(&task, bytes, sizeof task);
        // A new process (not a thread) whose parent is followed: follow it, report it.
        if (header.type == PERF_RECORD_FORK && task.pid == task.tid &&
            ancestors_.contains(static_cast<pid_t>(task.ppid))) {
            ancestors_.insert(static_cast<pid_t>(task.pid));
            children_.push_back(static_cast<pid_t>(task.pid));
        }
        if (header.type == PERF_RECORD_EXIT && task.pid == task.tid)
            ancestors_.erase(static_cast<pid_t>(task.pid));
        if (tgids_.contains(static_cast<pid_t>(task.pid))) {
            changed_.insert(static_cast<pid_t>(task.pid));
            if (header.type == PERF_RECORD_EXIT) threads_.erase(static_cast<pid_t>(task.tid));
        }
        return;
    }
    if (header.type == PERF_RECORD_COMM && (header.misc & PERF_RECORD_MISC_COMM_EXEC) &&
        size >= sizeof(perf_event_header) + 8) {
        std::uint32_t pid = 0;
        std::memcpy(&pid, bytes + sizeof(perf_event_header), sizeof pid);
        if (ancestors_.contains(static_cast<pid_t>(pid))) execs_.push_back(static_cast<pid_t>(pid));
        return;
    }
    if (header.type != PERF_RECORD_SWITCH_CPU_WIDE || size < sizeof(SwitchRecord)) return;
    SwitchRecord record;
    std::memcpy(&record, bytes, sizeof record);
    if (!tgids_.contains(static_cast<pid_t>(record.pid))) return;
    ++records_;
    Thread& thread = threads_[static_cast<pid_t>(record.tid)];
    // The rings are read one CPU after another, not in time order: a thread that moved between
    // CPUs has its records in several. Only the latest says where it is now.
    const bool latest = record.time >= thread.latest_ns;
    if (latest) thread.latest_ns = record.time;
    if (header.misc & PERF_RECORD_MISC_SWITCH_OUT) {
        if (latest) {
            thread.running = false;
            thread.preempted = (header.misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT) != 0;
        }
    } else {
        thread.switched_in = poll_;
        ++thread.switch_ins;
        if (latest) {
            thread.running = true;
            thread.switched_in_ns = record.time;
        }
    }
}

bool SchedWatch::poll() {
    ++poll_;
    changed_.clear();
    bool complete = true;
    for (Ring& ring : rings_) {
        auto* meta = static_cast<perf_event_mmap_page*>(ring.base);
        const unsigned char* data =
            static_cast<const unsigned char*>(ring.base) + meta->data_offset;
        std::uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
        std::uint64_t tail = meta->data_tail;
        // The kernel writes its LOST record only once there is room again, after this poll
        // has freed some: a ring found (nearly) full has lost records that nothing here says.
        if (head - tail + kFullMargin > data_size_) complete = false;
        while (tail < head) {
            perf_event_header header;
            std::size_t at = tail % data_size_;
            // A header never wraps (records are 8-byte aligned); a body may.
            std::memcpy(&header, data + at, sizeof header);
            if (header.size < sizeof header || tail + header.size > head) break;
            if (header.type == PERF_RECORD_LOST) complete = false;
            if (at + header.size <= data_size_) {
                handle(data + at, header.size);
            } else {
                scratch_.resize(header.size);
                std::size_t first = data_size_ - at;
                std::memcpy(scratch_.data(), data + at, first);
                std::memcpy(scratch_.data() + first, data, header.size - first);
                handle(scratch_.data(), header.size);
            }
            tail += header.size;
        }
        __atomic_store_n(&meta->data_tail, tail, __ATOMIC_RELEASE);
    }
    if (!complete) {
        // A lost switch out would leave a thread "on a CPU since T" for good: what was seen of
        // every thread is forgotten, and /proc answers until its next switch is seen.
        ++lost_polls_;
        threads_.clear();
    }
    return complete;
}

std::optional<SchedWatch::OnCpu> SchedWatch::peek(pid_t tid) const {
    auto it = threads_.find(tid);
    if (it == threads_.end()) return std::nullopt;
    OnCpu state{it->second.running, it->second.preempted, it->second.switch_ins,
                it->second.switched_in_ns};
    // A thread runs on one CPU at a time: its latest record, whichever ring holds it, says
    // where it is.
    std::uint64_t latest = 0;
    for (const Ring& ring : rings_) {
        const auto* meta = static_cast<const perf_event_mmap_page*>(ring.base);
        const unsigned char* data =
            static_cast<const unsigned char*>(ring.base) + meta->data_offset;
        const std::uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
        for (std::uint64_t tail = meta->data_tail; tail < head;) {
            perf_event_header header;
            const std::size_t at = tail % data_size_;
            std::memcpy(&header, data + at, sizeof header);
            if (header.size < sizeof header || tail + header.size > head) break;
            tail += header.size;
            // Switch records are small; one that wraps around the ring's end is skipped.
            if (header.type != PERF_RECORD_SWITCH_CPU_WIDE || header.size < sizeof(SwitchRecord) ||
                at + header.size > data_size_)
                continue;
            SwitchRecord record;
            std::memcpy(&record, data + at, sizeof record);
            if (static_cast<pid_t>(record.tid) != tid) continue;
            const bool out = (header.misc & PERF_RECORD_MISC_SWITCH_OUT) != 0;
            if (!out) {
                ++state.switch_ins;
                state.switched_in_ns = std::max(state.switched_in_ns, record.time);
            }
            if (record.time >= latest) {
                latest = record.time;
                state.running = !out;
                state.preempted = out && (header.misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT) != 0;
            }
        }
    }
    return state;
}

SchedWatch::Seen SchedWatch::seen(pid_t tid) const noexcept {
    auto it = threads_.find(tid);
    if (it == threads_.end()) return Seen::unknown;
    return it->second.running || it->second.switched_in == poll_ ? Seen::ran : Seen::idle;
}

bool SchedWatch::runnable(pid_t tid) const noexcept {
    auto it = threads_.find(tid);
    return it != threads_.end() && (it->second.running || it->second.preempted);
}

std::optional<std::uint64_t> SchedWatch::on_cpu_since(pid_t tid) const noexcept {
    auto it = threads_.find(tid);
    if (it == threads_.end() || !it->second.running || it->second.switch_ins == 0)
        return std::nullopt;
    return it->second.switched_in_ns;
}

} // namespace spyglass::process
