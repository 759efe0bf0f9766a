// pprof's Location.address for native frames: the instruction's address in its module's own
// ELF address space, on the Location of the native frame's mapping; none for Python frames and
// markers. The address is not part of a frame's identity.
#include <map>

#include "../tools/output_fixture.hpp"
#include "profile.pb.h"
#include <gtest/gtest.h>

#include "spyglass/output/writer.hpp"

namespace {

using namespace spyglass;
namespace pb = perftools::profiles;

pb::Profile decode(const model::Profile& profile) {
    std::string bytes = spyglass::test_support::write_to_string(profile, output::Format::pprof);
    pb::Profile decoded;
    EXPECT_TRUE(decoded.ParseFromString(spyglass::test_support::gunzip(bytes)));
    return decoded;
}

TEST(NativePprof, FramesOfOneFunctionAndLineAreOneFrameWhateverTheirAddress) {
    model::FrameTable frames;
    auto& strings = frames.strings();
    model::Frame first{strings.intern("qsort"),  strings.intern("libc.so.6"),     0, 0,
                       model::FrameKind::native, strings.intern("/lib/libc.so.6")};
    first.address = 0x4a1f0;
    model::Frame later = first;
    later.address = 0x4a230;
    model::FrameId id = frames.intern(first);
    EXPECT_EQ(frames.intern(later), id);
    EXPECT_EQ(frames.get(id).address, 0x4a1f0u); // the first one interned
    EXPECT_EQ(frames.size(), 1u);
}

TEST(NativePprof, NativeLocationsCarryTheirAddressPythonOnesNone) {
    auto fixture = spyglass::test_support::make_output_fixture();
    model::FrameTable& frames = fixture->frames;
    auto& strings = frames.strings();
    model::StringId libc = strings.intern("/usr/lib/x86_64-linux-gnu/libc.so.6");
    model::Frame sort{
        strings.intern("qsort"), strings.intern("libc.so.6"), 0, 0, model::FrameKind::native, libc};
    sort.address = 0x4a1f0;
    model::Frame read{strings.intern("read"),
                      strings.intern("./io/read.c"),
                      26,
                      0,
                      model::FrameKind::native,
                      libc};
    read.address = 0x1149fc;
    model::FrameId sort_id = frames.intern(sort), read_id = frames.intern(read);
    model::AggregatedSample sample = fixture->profile.samples.front();
    std::vector<model::FrameId> ids{read_id, sort_id};
    for (model::FrameId id : fixture->stacks.get(sample.key.stack))
        ids.push_back(id);
    sample.key.stack = fixture->stacks.intern(ids);
    fixture->profile.samples.push_back(sample);

    pb::Profile p = decode(fixture->profile);
    ASSERT_EQ(p.mapping_size(), 2);
    const pb::Mapping& mapping = p.mapping(1);
    // No memory range, no file offset: the addresses are the file's own, to be used as they
    // are (pprof's GetBase returns 0 for such a mapping).
    EXPECT_EQ(mapping.memory_start(), 0u);
    EXPECT_EQ(mapping.memory_limit(), 0u);
    EXPECT_EQ(mapping.file_offset(), 0u);
    std::map<std::string, std::uint64_t> native;
    std::size_t python = 0;
    for (const pb::Location& loc : p.location()) {
        const pb::Function& f = p.function(static_cast<int>(loc.line(0).function_id() - 1));
        const std::string& name = p.string_table(static_cast<int>(f.name()));
        if (loc.mapping_id() == mapping.id()) {
            native[name] = loc.address();
        } else {
            EXPECT_EQ(loc.address(), 0u) << name; // Python frames and markers
            ++python;
        }
    }
    EXPECT_GT(python, 0u);
    EXPECT_EQ(native,
              (std::map<std::string, std::uint64_t>{{"qsort", 0x4a1f0}, {"read", 0x1149fc}}));
}

} // namespace
