// Placeholder: the speedscope writer is being written.
#include "spyglass/output/writer.hpp"
