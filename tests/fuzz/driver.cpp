// Runs the fuzz targets without libFuzzer: every file given on the command line, then
// `iterations` inputs from a seeded generator that mixes random bytes with small integers and
// pointers into the input itself (what makes walkers follow chains).
//   spyglass_fuzz [iterations] [seed] [file ...]
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <random>
#include <vector>

#include "cli_inputs.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

int main(int argc, char** argv) {
    long iterations = argc > 1 ? std::atol(argv[1]) : 20000;
    unsigned long seed = argc > 2 ? std::strtoul(argv[2], nullptr, 10) : 1;
    for (int i = 3; i < argc; ++i) {
        std::ifstream in(argv[i], std::ios::binary);
        std::vector<std::uint8_t> bytes{std::istreambuf_iterator<char>(in), {}};
        LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
    }
    std::mt19937_64 random(seed);
    std::vector<std::uint8_t> input;
    for (long n = 0; n < iterations; ++n) {
        std::size_t size = 1 + random() % 2048;
        input.resize(size);
        for (std::size_t i = 0; i < size; i += 8) {
            std::uint64_t word;
            switch (random() % 4) {
            case 0:
                word = random();
                break;
            case 1:
                word = random() % 256;
                break;
            case 2:
                word = (random() % size) & ~std::uint64_t{7};
                break; // a pointer into the input
            default:
                word = 0;
                break;
            }
            for (std::size_t k = 0; k < 8 && i + k < size; ++k)
                input[i + k] = static_cast<std::uint8_t>(word >> (8 * k));
        }
        input[0] = static_cast<std::uint8_t>(n % spyglass::fuzz::kFuzzTargets +
                                             spyglass::fuzz::kFuzzTargets * (random() % 28));
        LLVMFuzzerTestOneInput(input.data(), input.size());
    }
    std::printf("fuzz: %ld generated inputs, no crash\n", iterations);
    return 0;
}
