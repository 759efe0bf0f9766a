// spyglass top: being written.
#include "spyglass/cli/options.hpp"

namespace spyglass::cli {

int run_top(const TopOptions&) {
    print_error("spyglass top is not available yet");
    return 1;
}

} // namespace spyglass::cli
