#include "spyglass/process/open_limit.hpp"

namespace spyglass::cli {
int run_cli(int argc, char** argv);
}

int main(int argc, char** argv) {
    spyglass::process::raise_open_limit();
    return spyglass::cli::run_cli(argc, argv);
}
