// Placeholder: the folded writer is being written.
#include "spyglass/output/writer.hpp"
