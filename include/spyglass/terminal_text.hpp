// Text read from a target (function, file, thread and module names, command lines, socket
// paths, local values) made safe to print on an operator's terminal: spyglass runs as root, and
// a name with an escape sequence in it could retitle, clear or reprogram that terminal.
#pragma once

#include <string>
#include <string_view>

namespace spyglass {

// Appends `text` with every byte a terminal would act on made visible: C0 controls and DEL as
// \n, \t, \r or \xNN; C1 controls (U+0080-U+009F, which some terminals take as CSI) and the
// bidirectional overrides (which reorder what is shown) as \uNNNN; bytes that are not UTF-8 as
// \xNN. Everything else, including valid UTF-8, is kept as it is.
void append_terminal_safe(std::string& out, std::string_view text);
[[nodiscard]] std::string terminal_safe(std::string_view text);
// The same for a whole multi-line text of spyglass's own making: its newlines stay newlines.
[[nodiscard]] std::string terminal_safe_lines(std::string_view text);

} // namespace spyglass
