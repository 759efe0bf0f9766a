// Placeholder: format selection and labels are being written.
#include "spyglass/output/writer.hpp"

namespace spyglass::output {
std::unique_ptr<ProfileWriter> make_writer(Format) { return nullptr; }
} // namespace spyglass::output
