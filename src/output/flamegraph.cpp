// Placeholder: the flamegraph writer is being written.
#include "spyglass/output/writer.hpp"
