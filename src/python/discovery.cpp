#include "spyglass/python/discovery.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "spyglass/process/elf.hpp"
#include "spyglass/process/remote_field.hpp"
#include "spyglass/python/debug_offsets.hpp"

namespace spyglass::python {

namespace {

using process::ElfFile;
using process::MapEntry;

constexpr std::size_t kMaxScanBytes = 64u << 20;

bool is_libpython(std::string_view path) {
    std::string_view name = path.substr(path.rfind('/') + 1);
    return name.starts_with("libpython") && name.find(".so") != std::string_view::npos;
}

bool is_libc(std::string_view path) {
    std::string_view name = path.substr(path.rfind('/') + 1);
    return name.starts_with("libc.so") || name.starts_with("libc-2.") ||
           name.starts_with("ld-musl") || name.starts_with("libc.musl");
}

// Opens a file of the target as the target sees it (containers), else as we see it.
Result<ElfFile> open_target_file(pid_t pid, const std::string& path,
                                 const std::vector<MapEntry>& maps) {
    auto elf = ElfFile::open(process::path_in_target(pid, path));
    if (elf) return elf;
    for (const MapEntry& entry : maps) {
        if (entry.path != path) continue;
        auto mapped =
            ElfFile::open(fmt::format("/proc/{}/map_files/{:x}-{:x}", pid, entry.start, entry.end));
        if (mapped) return mapped;
        break;
    }
    auto direct = ElfFile::open(path);
    if (direct) return direct;
    return std::unexpected(elf.error());
}

std::optional<std::uint64_t> load_bias(const ElfFile& elf, const std::string& path,
                                       const std::vector<MapEntry>& maps) {
    std::optional<std::uint64_t> lowest;
    for (const MapEntry& entry : maps)
        if (entry.path == path && entry.offset == 0 && (!lowest || entry.start < *lowest))
            lowest = entry.start;
    if (!lowest) return std::nullopt;
    return *lowest - elf.first_load_address();
}

bool has_interpreter_symbols(const ElfFile& elf) {
    return elf.symbol("_PyRuntime") || elf.symbol("interp_head") ||
           elf.symbol("PyInterpreterState_Head") || elf.section(".PyRuntime") != nullptr;
}

struct Binary {
    std::string path;
    ElfFile elf;
    std::uint64_t bias;

    // Symbol values plus the load bias wrap on purpose: a library linked above where it is
    // loaded has a "negative" bias. What these addresses are then read for is checked.
    [[nodiscard]] std::optional<Address> symbol(std::string_view name) const {
        auto sym = elf.symbol(name);
        if (!sym) return std::nullopt;
        return sym->value + bias;
    }
    [[nodiscard]] std::optional<std::pair<Address, std::uint64_t>>
    section(std::string_view name) const {
        const process::ElfSection* s = elf.section(name);
        if (s == nullptr || s->address == 0) return std::nullopt;
        return std::make_pair(s->address + bias, s->size);
    }
};

PythonVersion decode_version_hex(std::uint32_t hex) {
    return {static_cast<int>(hex >> 24), static_cast<int>((hex >> 16) & 0xff),
            static_cast<int>((hex >> 8) & 0xff)};
}

std::vector<std::uint8_t> read_region(process::RemoteMemory& memory, Address address,
                                      std::uint64_t size) {
    std::vector<std::uint8_t> bytes(std::min<std::uint64_t>(size, kMaxScanBytes));
    auto got = memory.read_prefix(address, bytes.data(), bytes.size());
    bytes.resize(got ? *got : 0);
    return bytes;
}

struct VersionFound {
    PythonVersion version;
    std::string source;
};

std::optional<VersionFound> detect_version(process::RemoteMemory& memory, const Binary& binary) {
    if (auto at = binary.symbol("Py_Version")) {
        if (auto hex = memory.read_value<std::uint32_t>(*at); hex && (*hex >> 24) == 3)
            return VersionFound{decode_version_hex(*hex), "Py_Version"};
    }
    for (const char* name : {".bss", ".data"}) {
        auto section = binary.section(name);
        if (!section) continue;
        auto bytes = read_region(memory, section->first, section->second);
        if (auto version = find_version_string(bytes))
            return VersionFound{*version, std::string("the sys.version text in ") + name};
    }
    if (auto version = version_from_file_name(binary.path))
        return VersionFound{*version, "the file name"};
    return std::nullopt;
}

TypeAddresses find_types(const Binary& binary) {
    TypeAddresses types;
    auto get = [&](const char* name) { return binary.symbol(name).value_or(0); };
    types.code = get("PyCode_Type");
    types.frame = get("PyFrame_Type");
    types.unicode = get("PyUnicode_Type");
    types.str = get("PyString_Type");
    types.bytes = get("PyBytes_Type");
    types.type = get("PyType_Type");
    types.dict = get("PyDict_Type");
    types.tuple = get("PyTuple_Type");
    types.list = get("PyList_Type");
    types.long_ = get("PyLong_Type");
    types.int_ = get("PyInt_Type");
    types.float_ = get("PyFloat_Type");
    types.bool_ = get("PyBool_Type");
    types.module = get("PyModule_Type");
    types.none = get("_Py_NoneStruct");
    types.true_ = get("_Py_TrueStruct");
    types.false_ = get("_Py_FalseStruct");
    return types;
}

// glibc publishes where the kernel TID sits in struct pthread for libthread_db:
// _thread_db_pthread_tid = {bit size, count, offset}.
int pthread_tid_offset_from_libc(pid_t pid, const std::vector<MapEntry>& maps) {
    for (const MapEntry& entry : maps) {
        if (!is_libc(entry.path)) continue;
        auto elf = open_target_file(pid, entry.path, maps);
        if (!elf) continue;
        auto sym = elf->symbol("_thread_db_pthread_tid");
        if (!sym) continue;
        auto bytes = elf->read_file_bytes(sym->value, 12);
        if (!bytes) continue;
        std::uint32_t descriptor[3];
        std::memcpy(descriptor, bytes->data(), sizeof descriptor);
        if (descriptor[0] == 32 && descriptor[1] == 1 && descriptor[2] < 4096)
            return static_cast<int>(descriptor[2]);
    }
    return -1;
}

Result<void> find_roots(process::RemoteMemory& memory, const Binary& binary,
                        const process::AddressSpace& space, TargetInfo& target) {
    const Layout& layout = target.layout;
    // A diagnostic: find the interpreter as if every symbol were stripped.
    const bool scan_only = std::getenv("SPYGLASS_ROOT_SCAN") != nullptr;
    if (scan_only) {
        target.notes.push_back("SPYGLASS_ROOT_SCAN is set: finding the interpreter by scanning");
    } else if (layout.version.at_least(3, 7)) {
        if (auto runtime = binary.symbol("_PyRuntime")) {
            target.runtime = *runtime;
        } else if (auto section = binary.section(".PyRuntime")) {
            target.runtime = section->first;
            target.notes.push_back("_PyRuntime found through the .PyRuntime section");
        }
        if (target.runtime != 0) {
            auto head =
                process::field_address(target.runtime, layout.off.runtime_interpreters_head, 8);
            if (!head)
                return fail(Errc::corrupt, "_PyRuntime at 0x{:x} leaves no room for its fields",
                            target.runtime);
            target.interp_head_slot = *head;
            return {};
        }
    } else {
        if (auto head = binary.symbol("interp_head")) {
            target.interp_head_slot = *head;
            return {};
        }
        if (auto function = binary.symbol("PyInterpreterState_Head")) {
            std::uint8_t code[16];
            if (memory.read(*function, code, sizeof code)) {
                if (auto slot = decode_interp_head_function(code, *function)) {
                    target.interp_head_slot = *slot;
                    target.notes.push_back(
                        "interp_head found by decoding PyInterpreterState_Head (no .symtab)");
                    return {};
                }
            }
        }
    }
    // Last resort: scan the binary's data for a pointer to a plausible interpreter state.
    for (const char* name : {".PyRuntime", ".data", ".bss"}) {
        auto section = binary.section(name);
        if (!section) continue;
        auto bytes = read_region(memory, section->first, section->second);
        if (auto slot =
                scan_for_interpreter(memory, layout, target.types, space, section->first, bytes)) {
            target.interp_head_slot = *slot;
            target.notes.push_back(
                fmt::format("interpreter state found by scanning {} of {} (stripped binary)", name,
                            binary.path));
            // .PyRuntime holds exactly _PyRuntime, whose GIL fields 3.10 and 3.11 need.
            if (std::string_view(name) == ".PyRuntime") target.runtime = section->first;
            if (layout.gil_model == GilModel::runtime_gil && target.runtime == 0)
                target.notes.push_back("without _PyRuntime the GIL holder cannot be read");
            return {};
        }
    }
    return fail(Errc::not_found,
                "found Python {} in {} but not its interpreter state (stripped binary, or the "
                "interpreter is not initialized yet)",
                target.version.to_string(), binary.path);
}

Result<TargetInfo> describe_target(pid_t pid, process::RemoteMemory& memory, Binary& binary,
                                   const std::vector<MapEntry>& maps, const std::string& exe) {
    TargetInfo target;
    target.pid = pid;
    target.executable = exe;
    target.python_binary = binary.path;
    target.load_bias = binary.bias;

    auto found = detect_version(memory, binary);
    if (!found) return fail(Errc::unsupported, "cannot tell the Python version of {}", binary.path);
    target.version = found->version;
    target.version_source = found->source;

    const Layout* table = layout_for(found->version.major, found->version.minor);
    std::optional<Address> runtime = binary.symbol("_PyRuntime");
    if (!runtime) {
        if (auto section = binary.section(".PyRuntime")) runtime = section->first;
    }
    if (found->version.at_least(3, 13) && runtime) {
        std::vector<std::uint8_t> bytes(kDebugOffsetsReadSize);
        if (!memory.read(*runtime, bytes.data(), bytes.size()))
            return fail(Errc::not_found, "cannot read _PyRuntime of process {}", pid);
        std::optional<std::uint64_t> section_size;
        if (auto section = binary.section(".PyRuntime")) section_size = section->second;
        if (is_free_threaded(bytes))
            return fail(Errc::unsupported, "{}", free_threaded_message(found->version));
        auto from_debug = layout_from_debug_offsets(bytes, section_size);
        if (!from_debug) {
            if (table == nullptr) return std::unexpected(from_debug.error());
            target.notes.push_back("ignoring _Py_DebugOffsets: " + from_debug.error().message);
            target.layout = *table;
        } else {
            target.layout = from_debug->layout;
            for (auto& note : from_debug->notes)
                target.notes.push_back(std::move(note));
        }
    } else if (table != nullptr) {
        target.layout = *table;
    } else {
        return fail(Errc::unsupported,
                    "Python {} (in {}) is not supported: spyglass reads 2.7 and 3.6 - {}.{}, and "
                    "newer versions through their _Py_DebugOffsets",
                    found->version.to_string(), binary.path, newest_layout().version.major,
                    newest_layout().version.minor);
    }

    target.types = find_types(binary);
    if (target.version.major == 2 || target.version.minor == 6)
        target.tstate_current = binary.symbol("_PyThreadState_Current").value_or(0);
    if (target.layout.gil_model == GilModel::static_globals) {
        target.gil_locked = binary.symbol("gil_locked").value_or(0);
        target.gil_last_holder = binary.symbol("gil_last_holder").value_or(0);
        for (const char* name : {"gil_cond", "gil_mutex", "switch_cond", "switch_mutex"})
            if (auto symbol = binary.elf.symbol(name); symbol && symbol->size > 0)
                target.gil_statics.emplace_back(symbol->value + binary.bias, symbol->size);
    }
    if (target.version.major == 2)
        target.gil_lock_slot = binary.symbol("interpreter_lock").value_or(0);
    if (binary.elf.has_symtab() == false)
        target.notes.push_back(fmt::format("{} has no .symtab (stripped)", binary.path));

    process::AddressSpace space(maps);
    if (auto roots = find_roots(memory, binary, space, target); !roots)
        return std::unexpected(roots.error());
    if (target.layout.off.tstate_native_thread_id == kAbsent)
        target.pthread_tid_offset = pthread_tid_offset_from_libc(pid, maps);
    return target;
}

} // namespace

std::string permission_advice(pid_t pid) {
    return fmt::format(
        "no permission to read process {}: run spyglass as root or as the process's user with "
        "ptrace allowed (sudo sysctl kernel.yama.ptrace_scope=0, or setcap cap_sys_ptrace+ep on "
        "the spyglass binary); in a container, start it with --cap-add SYS_PTRACE",
        pid);
}

Result<TargetInfo> discover(pid_t pid, process::RemoteMemory& memory) {
    if (!process::process_exists(pid))
        return fail(Errc::process_gone, "no process with PID {}", pid);
    if (auto stat = process::read_stat(pid); stat && (stat->state == 'Z' || stat->state == 'X'))
        return fail(Errc::process_gone, "process {} has exited", pid);
    auto exe = process::exe_path(pid);
    if (!exe) {
        if (exe.error().code == Errc::permission_denied)
            return std::unexpected(Error{Errc::permission_denied, permission_advice(pid)});
        return std::unexpected(exe.error());
    }
    auto maps = process::read_maps(pid);
    if (!maps) {
        if (maps.error().code == Errc::permission_denied)
            return std::unexpected(Error{Errc::permission_denied, permission_advice(pid)});
        return std::unexpected(maps.error());
    }
    // One read tells whether we may read the process at all.
    for (const MapEntry& entry : *maps) {
        if (!entry.readable || entry.path.empty() || entry.path.front() == '[') continue;
        std::uint8_t byte;
        auto status = memory.read(entry.start, &byte, 1);
        if (!status && status.error().code == Errc::permission_denied)
            return std::unexpected(Error{Errc::permission_denied, permission_advice(pid)});
        if (!status && status.error().code == Errc::process_gone)
            return fail(Errc::process_gone, "process {} exited", pid);
        break;
    }

    std::vector<std::string> candidates;
    for (const MapEntry& entry : *maps)
        if (is_libpython(entry.path) &&
            std::find(candidates.begin(), candidates.end(), entry.path) == candidates.end())
            candidates.push_back(entry.path);
    candidates.push_back(*exe);

    Error last{Errc::not_python, ""};
    for (const std::string& path : candidates) {
        auto elf = open_target_file(pid, path, *maps);
        if (!elf) {
            last = elf.error();
            continue;
        }
        if (!has_interpreter_symbols(*elf)) continue;
        auto bias = load_bias(*elf, path, *maps);
        if (!bias) continue;
        Binary binary{path, std::move(*elf), *bias};
        return describe_target(pid, memory, binary, *maps, *exe);
    }
    auto stat = process::read_stat(pid);
    std::string comm = stat ? stat->comm : "?";
    if (!process::process_exists(pid)) return fail(Errc::process_gone, "process {} exited", pid);
    return fail(Errc::not_python,
                "process {} ({}) is not a Python process: no libpython is mapped and {} has no "
                "CPython interpreter",
                pid, comm, *exe);
}

} // namespace spyglass::python
