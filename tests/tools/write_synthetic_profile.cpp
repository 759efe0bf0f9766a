// Writes a synthetic recording with a given number of distinct stacks, for measuring how big
// and how fast to open the outputs are (tests/integration/test_flamegraph_view.py):
//
//   write_synthetic_profile STACKS OUTPUT [FORMAT]     (FORMAT: flamegraph, the default, ...)
//
// The call tree looks like a service's: a few hot paths hold most samples (counts fall off as
// 1/rank), under them a long tail of paths seen once or twice, 6 to 40 frames deep, from a pool
// of 20,000 functions in 300 files. The hottest stack ends in "hot_function", on-CPU.
// Fixed seed: the same arguments give the same file. Prints the number of samples.
#include <cstdio>
#include <cstdlib>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "spyglass/model/profile.hpp"
#include "spyglass/output/writer.hpp"

namespace {

using namespace spyglass;

constexpr double kFunctions = 20'000; // distinct functions, besides the root and the hot one

struct Node {
    model::FrameId frame;
    std::vector<std::size_t> children; // into the tree
};

} // namespace

int main(int argc, char** argv) {
    if (argc < 3) {
        std::fprintf(stderr, "usage: %s STACKS OUTPUT [FORMAT]\n", argv[0]);
        return 2;
    }
    const long wanted = std::strtol(argv[1], nullptr, 10);
    auto format = output::parse_format(argc > 3 ? argv[3] : "flamegraph");
    if (wanted <= 0 || !format) {
        std::fprintf(stderr, "%s: STACKS must be positive and FORMAT a format name\n", argv[0]);
        return 2;
    }
    model::FrameTable frames;
    model::StackTable stacks;
    model::StringTable& strings = frames.strings();
    std::mt19937_64 random(20240601);
    auto function = [&](std::size_t n) {
        std::string name = n == 0 ? "hot_function" : "function_" + std::to_string(n);
        std::string file = "/srv/app/module_" + std::to_string(n % 300) + ".py";
        auto line = static_cast<std::int32_t>(10 + n % 500);
        return frames.intern(
            {strings.intern(name), strings.intern(file), line, line, model::FrameKind::python});
    };
    std::vector<Node> tree = {{function(1), {}}};
    std::set<model::StackId> seen;
    std::vector<model::StackId> order;
    std::vector<model::FrameId> path; // innermost first, as the stack table keeps them
    // The hot stack first, so that it gets rank 1.
    path = {function(0), function(1)};
    order.push_back(stacks.intern(path));
    seen.insert(order.back());
    std::uniform_int_distribution<int> depth_of(6, 40);
    std::uniform_real_distribution<double> coin(0, 1);
    while (order.size() < static_cast<std::size_t>(wanted)) {
        std::vector<model::FrameId> root_first;
        std::size_t node = 0;
        root_first.push_back(tree[0].frame);
        int depth = depth_of(random);
        for (int level = 1; level < depth; ++level) {
            // Mostly an existing callee (preferring the first ones), sometimes a new one.
            std::vector<std::size_t>& children = tree[node].children;
            std::size_t child;
            if (children.empty() || coin(random) < 0.25) {
                // Functions are shared by many paths, as library code is.
                double pick = coin(random);
                child = tree.size();
                tree.push_back(
                    {function(2 + static_cast<std::size_t>(pick * pick * kFunctions)), {}});
                tree[node].children.push_back(child);
            } else {
                double pick = coin(random);
                child = children[static_cast<std::size_t>(pick * pick * pick *
                                                          static_cast<double>(children.size()))];
            }
            node = child;
            root_first.push_back(tree[node].frame);
        }
        path.assign(root_first.rbegin(), root_first.rend());
        model::StackId id = stacks.intern(path);
        if (seen.insert(id).second) order.push_back(id);
    }

    model::Profile profile;
    profile.frames = &frames;
    profile.stacks = &stacks;
    profile.threads = {{4242, 4242, 0x7f0000001000, "MainThread"}};
    profile.info.command = {"python3", "/srv/app/service.py"};
    profile.totals.pids = {4242};
    profile.totals.python_version = "3.11.4";
    profile.info.rate_hz = 100;
    profile.info.period_ns = 10'000'000;
    std::uint64_t total = 0;
    for (std::size_t rank = 0; rank < order.size(); ++rank) {
        std::uint64_t count = std::max<std::uint64_t>(1, 200'000 / (rank + 1));
        bool on_cpu = rank % 3 != 2;
        const std::uint64_t weight = count * profile.info.period_ns;
        profile.samples.push_back({{0, order[rank], on_cpu, on_cpu}, count, weight, 0});
        profile.timeline.push_back({0, order[rank], on_cpu, total * profile.info.period_ns,
                                    static_cast<std::uint32_t>(count), weight});
        total += count;
    }
    profile.totals.samples = profile.totals.ticks = total;
    profile.totals.elapsed_ns = total * profile.info.period_ns;

    std::FILE* file = std::fopen(argv[2], "wb");
    if (file == nullptr) {
        std::perror(argv[2]);
        return 1;
    }
    auto written = output::make_writer(*format)->write(profile, file);
    if (std::fclose(file) != 0 || !written) {
        std::fprintf(stderr, "%s: %s\n", argv[2],
                     written ? "close failed" : written.error().message.c_str());
        return 1;
    }
    std::printf("%llu\n", static_cast<unsigned long long>(total));
    return 0;
}
