// Builds real CPython structures, laid out with a version's Layout, in FakeMemory: the same
// walker and resolver that read live processes then run over them.
#pragma once

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "spyglass/process/fake_memory.hpp"
#include "spyglass/python/interpreter.hpp"
#include "spyglass/python/layout.hpp"
#include "spyglass/python/line_table.hpp"

namespace spyglass::test_support {

using process::Address;
using python::Layout;
using python::LayoutOffsets;

class FakePython {
  public:
    static constexpr Address kHeap = 0x10000000;
    static constexpr std::size_t kHeapSize = 64u << 20;

    explicit FakePython(const Layout& layout, std::size_t heap_size = kHeapSize)
        : layout_(layout), heap_size_(heap_size) {
        memory_ = std::make_shared<process::FakeMemory>();
        memory_->map(kHeap, heap_size);
        target_.pid = 4242;
        target_.layout = layout;
        target_.version = layout.version;
        python::TypeAddresses& t = target_.types;
        t.code = type_object("code");
        t.frame = type_object("frame");
        t.unicode = type_object(layout.py2_strings ? "unicode" : "str");
        t.str = layout.py2_strings ? type_object("str") : 0;
        t.bytes = type_object(layout.py2_strings ? "str" : "bytes");
        if (layout.py2_strings) t.bytes = t.str;
        interp_head_slot_ = alloc(8);
        target_.interp_head_slot = interp_head_slot_;
    }

    const LayoutOffsets& off() const { return layout_.off; }
    std::size_t used() const { return next_; } // bytes of the heap allocated so far
    process::FakeMemory& memory() { return *memory_; }
    python::TargetInfo& target() { return target_; }

    Address alloc(std::size_t size, std::size_t align = 16) {
        next_ = (next_ + align - 1) / align * align;
        Address at = kHeap + next_;
        next_ += size;
        if (next_ > heap_size_) std::abort();
        return at;
    }
    template <class T>
    void put(Address at, std::uint32_t offset, T value) {
        if (offset == python::kAbsent) std::abort(); // the test used a field the layout lacks
        memory_->put(at + offset, value);
    }

    Address type_object(const char* name) {
        Address type = alloc(512);
        Address text = alloc(64);
        memory_->put_bytes(text, std::string(name) + '\0');
        put<std::uint64_t>(type, off().type_name, text);
        return type;
    }

    // A str object from UTF-8 text, in the kind CPython would choose (2.7: a byte str).
    Address str(const std::string& utf8) {
        if (layout_.py2_strings) {
            Address object = alloc(off().bytes_data + utf8.size() + 1);
            put<std::uint64_t>(object, off().object_type, target_.types.str);
            put<std::int64_t>(object, off().var_size, static_cast<std::int64_t>(utf8.size()));
            memory_->put_bytes(object + off().bytes_data, utf8);
            return object;
        }
        std::u32string points = decode(utf8);
        int kind = 1;
        bool ascii = true;
        for (char32_t c : points) {
            if (c > 0x7f) ascii = false;
            if (c > 0xff) kind = std::max(kind, 2);
            if (c > 0xffff) kind = 4;
        }
        std::size_t header = ascii ? off().unicode_ascii_data : off().unicode_compact_data;
        Address object = alloc(header + (points.size() + 1) * kind);
        put<std::uint64_t>(object, off().object_type, target_.types.unicode);
        put<std::int64_t>(object, off().unicode_length, static_cast<std::int64_t>(points.size()));
        std::uint32_t state = (static_cast<std::uint32_t>(kind) << off().unicode_kind_shift) |
                              (1u << off().unicode_compact_bit) |
                              (ascii ? 1u << off().unicode_ascii_bit : 0u);
        put<std::uint32_t>(object, off().unicode_state, state);
        for (std::size_t i = 0; i < points.size(); ++i) {
            std::uint32_t c = points[i];
            memory_->write(object + header + i * kind, &c, static_cast<std::size_t>(kind));
        }
        return object;
    }

    Address bytes(const std::vector<std::uint8_t>& content) {
        Address object = alloc(off().bytes_data + content.size() + 1);
        put<std::uint64_t>(object, off().object_type, target_.types.bytes);
        put<std::int64_t>(object, off().var_size, static_cast<std::int64_t>(content.size()));
        if (!content.empty())
            memory_->write(object + off().bytes_data, content.data(), content.size());
        return object;
    }

    // A line table in the version's format where instruction i (bytes for <= 3.10: offset
    // 2*i, or code unit i) is on line first_line + i.
    std::vector<std::uint8_t> line_table(int units) {
        std::vector<std::uint8_t> table;
        switch (layout_.line_table) {
        case python::LineTableFormat::lnotab_unsigned:
        case python::LineTableFormat::lnotab_signed:
            for (int i = 0; i < units; ++i)
                table.insert(table.end(), {2, 1});
            break;
        case python::LineTableFormat::linetable_310:
            table.insert(table.end(), {2, 0});
            for (int i = 1; i < units; ++i)
                table.insert(table.end(), {2, 1});
            break;
        case python::LineTableFormat::location_table:
            for (int i = 0; i < units; ++i)
                table.insert(table.end(), {static_cast<std::uint8_t>(0x80 | (13 << 3)),
                                           static_cast<std::uint8_t>(i == 0 ? 0 : 2)});
            break;
        }
        return table;
    }

    // A code object with `units` instructions (2-byte units).
    Address code(const std::string& name, const std::string& filename, int first_line,
                 int units = 16) {
        bool new_model = layout_.frame_model == python::FrameModel::interpreter_frames;
        std::size_t size = off().code_size + (new_model ? units * 2 : 0);
        Address object = alloc(size);
        put<std::uint64_t>(object, off().object_type, target_.types.code);
        put<std::uint64_t>(object, off().code_name, str(name));
        put<std::uint64_t>(object, off().code_filename, str(filename));
        if (off().code_qualname != python::kAbsent)
            put<std::uint64_t>(object, off().code_qualname, str("Q." + name));
        put<std::int32_t>(object, off().code_firstlineno, first_line);
        put<std::uint64_t>(object, off().code_linetable, bytes(line_table(units)));
        if (new_model) {
            put<std::int64_t>(object, off().var_size, units);
        } else {
            put<std::uint64_t>(
                object, off().code_code,
                bytes(std::vector<std::uint8_t>(static_cast<std::size_t>(units) * 2)));
        }
        return object;
    }

    // --- up to 3.10 -------------------------------------------------------------------------
    Address frame_object(Address code, Address back, int instruction) {
        Address frame = alloc(off().frame_localsplus + 64);
        put<std::int64_t>(frame, off().object_type - 8, 1); // ob_refcnt: a live frame
        put<std::uint64_t>(frame, off().object_type, target_.types.frame);
        put<std::uint64_t>(frame, off().frame_code, code);
        put<std::uint64_t>(frame, off().frame_back, back);
        put<std::int32_t>(frame, off().frame_lasti, instruction * 2 / layout_.lasti_scale);
        return frame;
    }

    // --- 3.11+ ------------------------------------------------------------------------------
    struct Chunk {
        Address base;
        std::size_t size;
        Address top; // next free byte
    };
    Chunk chunk(std::size_t size, Address previous = 0) {
        Chunk c{alloc(size), size, 0};
        put<std::uint64_t>(c.base, off().chunk_previous, previous);
        put<std::uint64_t>(c.base, off().chunk_size, size);
        c.top = c.base + off().chunk_data;
        return c;
    }
    // Closes `older` (records its top as CPython does when it pushes a new chunk).
    void close_chunk(const Chunk& older) {
        put<std::uint64_t>(older.base, off().chunk_top,
                           (older.top - older.base - off().chunk_data) / 8);
    }
    Address interpreter_frame(Address at, Address code, Address previous, int instruction,
                              std::uint8_t owner) {
        put<std::uint64_t>(at, off().iframe_code, code);
        put<std::uint64_t>(at, off().iframe_previous, previous);
        put<std::uint64_t>(at, off().iframe_instr,
                           code + off().code_code_adaptive +
                               static_cast<std::uint64_t>(instruction) * 2);
        put<std::uint8_t>(at, off().iframe_owner, owner);
        return at;
    }
    Address push_frame(Chunk& c, Address code, Address previous, int instruction) {
        Address at = c.top;
        c.top += off().iframe_size + 64;
        return interpreter_frame(at, code, previous, instruction,
                                 static_cast<std::uint8_t>(off().owner_thread));
    }

    // --- thread and interpreter states ------------------------------------------------------
    Address interpreter() {
        Address interp = alloc(off().interp_size + 64);
        memory_->put(interp_head_slot_, interp);
        return interp;
    }
    Address thread(Address interp, std::uint64_t thread_id, Address next = 0) {
        Address tstate = alloc(off().tstate_size + 64);
        put<std::uint64_t>(tstate, off().tstate_interp, interp);
        put<std::uint64_t>(tstate, off().tstate_next, next);
        put<std::uint64_t>(tstate, off().tstate_thread_id, thread_id);
        if (off().tstate_native_thread_id != python::kAbsent)
            put<std::uint64_t>(tstate, off().tstate_native_thread_id, thread_id & 0xffff);
        put<std::uint64_t>(interp, off().interp_threads_head, tstate);
        return tstate;
    }
    // Points the thread at its innermost frame (and, 3.11+, its current chunk).
    void set_frame(Address tstate, Address frame, const Chunk* current = nullptr) {
        if (off().tstate_frame != python::kAbsent) {
            put<std::uint64_t>(tstate, off().tstate_frame, frame);
        } else if (off().tstate_current_frame != python::kAbsent) {
            put<std::uint64_t>(tstate, off().tstate_current_frame, frame);
        } else {
            // One eval loop: its cframe stays, only its current frame changes.
            std::uint64_t cframe = 0;
            memory_->read(tstate + off().tstate_cframe, &cframe, sizeof cframe);
            if (cframe == 0) {
                cframe = alloc(64);
                put<std::uint64_t>(tstate, off().tstate_cframe, cframe);
            }
            put<std::uint64_t>(cframe, off().cframe_current_frame, frame);
        }
        if (current != nullptr) {
            put<std::uint64_t>(tstate, off().tstate_datastack_chunk, current->base);
            put<std::uint64_t>(tstate, off().tstate_datastack_top, current->top);
        }
    }

    std::unique_ptr<python::PythonProcess> process() {
        return std::make_unique<python::PythonProcess>(memory_, target_);
    }

  private:
    static std::u32string decode(const std::string& s) {
        std::u32string out;
        for (std::size_t i = 0; i < s.size();) {
            auto c = static_cast<unsigned char>(s[i]);
            int n = c < 0x80 ? 0 : c < 0xE0 ? 1 : c < 0xF0 ? 2 : 3;
            char32_t cp = n == 0 ? c : n == 1 ? c & 0x1F : n == 2 ? c & 0x0F : c & 0x07;
            for (int k = 1; k <= n; ++k)
                cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
            out.push_back(cp);
            i += static_cast<std::size_t>(n) + 1;
        }
        return out;
    }

    Layout layout_;
    std::size_t heap_size_;
    python::TargetInfo target_;
    std::shared_ptr<process::FakeMemory> memory_;
    std::size_t next_ = 0;
    Address interp_head_slot_ = 0;
};

} // namespace spyglass::test_support
