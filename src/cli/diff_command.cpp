// spyglass diff: placeholder replaced below.
#include "spyglass/cli/options.hpp"

namespace spyglass::cli {
int run_diff(const DiffOptions&) {
    print_error("diff is not built yet");
    return 1;
}
} // namespace spyglass::cli
