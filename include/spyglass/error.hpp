// Typed errors shared by every layer. The sampling path never throws: it returns these.
#pragma once

#include <cstdint>
#include <expected>
#include <string>
#include <utility>

#include <fmt/format.h>

namespace spyglass {

enum class Errc : std::uint8_t {
    bad_address,       // a read hit unmapped memory: usually a race with the running target
    process_gone,      // the target (or the thread) exited
    permission_denied, // no ptrace access to the target
    corrupt,           // bytes were read but make no sense (torn or foreign data)
    unsupported,       // a Python version or build we cannot read
    not_found,         // a symbol, file or object that should exist does not
    not_python,        // the process has no CPython interpreter in it
    io,                // a local file could not be read or written
    invalid_argument,  // the user asked for something impossible
};

const char* errc_name(Errc code) noexcept;

// An error with the context of what failed, for the user and the logs.
struct Error {
    Errc code;
    std::string message;
};

template <class T>
using Result = std::expected<T, Error>;

template <class... Args>
[[nodiscard]] std::unexpected<Error> fail(Errc code, fmt::format_string<Args...> format,
                                          Args&&... args) {
    return std::unexpected(Error{code, fmt::format(format, std::forward<Args>(args)...)});
}

// The error of a single remote read: cheap to create, no allocation, so that the hot path can
// return it many times per second. Callers that need context turn it into an Error.
struct ReadError {
    Errc code;
    std::uint64_t address;
};

[[nodiscard]] Error describe(const ReadError& error, std::string_view what);

} // namespace spyglass
