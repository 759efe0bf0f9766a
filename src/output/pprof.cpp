// Placeholder: the pprof writer is being written.
#include "spyglass/output/writer.hpp"
