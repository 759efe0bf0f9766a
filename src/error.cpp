#include "spyglass/error.hpp"

namespace spyglass {

const char* errc_name(Errc code) noexcept {
    switch (code) {
    case Errc::bad_address:
        return "bad address";
    case Errc::process_gone:
        return "process gone";
    case Errc::permission_denied:
        return "permission denied";
    case Errc::corrupt:
        return "corrupt data";
    case Errc::unsupported:
        return "unsupported";
    case Errc::not_found:
        return "not found";
    case Errc::not_python:
        return "not a Python process";
    case Errc::io:
        return "I/O error";
    case Errc::invalid_argument:
        return "invalid argument";
    }
    return "unknown error";
}

Error describe(const ReadError& error, std::string_view what) {
    return Error{error.code,
                 fmt::format("{}: {} at 0x{:x}", what, errc_name(error.code), error.address)};
}

} // namespace spyglass
