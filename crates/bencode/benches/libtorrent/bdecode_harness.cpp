// Reference harness around libtorrent 2.0's bdecode, used by the macro
// benchmark (timing) and the differential test (verdicts and offsets).
// Built only by crates/bencode/benches/run_macro.sh and tests/differential.sh:
//   g++ -O2 -std=c++17 bdecode_harness.cpp -ltorrent-rasterbar
//
//   bdecode_harness check FILE...    one line per file: "ok" or "error KIND OFFSET"
//   bdecode_harness stream           stdin: records of u32 LE length + bytes;
//                                    stdout: one verdict line per record
//   bdecode_harness bench MS FILE... median ns per bdecode call per file
#include <libtorrent/bdecode.hpp>
#include <libtorrent/error_code.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

namespace {

char const* kind_name(int ev) {
    switch (ev) {
        case lt::bdecode_errors::expected_digit: return "expected_digit";
        case lt::bdecode_errors::expected_colon: return "expected_colon";
        case lt::bdecode_errors::unexpected_eof: return "unexpected_eof";
        case lt::bdecode_errors::expected_value: return "expected_value";
        case lt::bdecode_errors::depth_exceeded: return "depth_exceeded";
        case lt::bdecode_errors::limit_exceeded: return "limit_exceeded";
        case lt::bdecode_errors::overflow: return "overflow";
        default: return "unknown";
    }
}

std::string verdict(std::vector<char> const& buf) {
    lt::error_code ec;
    int pos = -1;
    lt::bdecode_node node = lt::bdecode({buf.data(), static_cast<std::ptrdiff_t>(buf.size())}, ec, &pos);
    if (!ec) return "ok";
    return std::string("error ") + kind_name(ec.value()) + " " + std::to_string(pos);
}

std::vector<char> read_file(char const* path) {
    std::ifstream in(path, std::ios::binary);
    return std::vector<char>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: bdecode_harness check|stream|bench ...\n");
        return 2;
    }
    std::string mode = argv[1];
    if (mode == "check") {
        for (int i = 2; i < argc; ++i) std::printf("%s\n", verdict(read_file(argv[i])).c_str());
        return 0;
    }
    if (mode == "stream") {
        std::vector<char> buf;
        unsigned char len_bytes[4];
        while (std::fread(len_bytes, 1, 4, stdin) == 4) {
            std::uint32_t len = len_bytes[0] | (len_bytes[1] << 8) | (len_bytes[2] << 16)
                | (std::uint32_t(len_bytes[3]) << 24);
            buf.resize(len);
            if (len && std::fread(buf.data(), 1, len, stdin) != len) return 1;
            std::printf("%s\n", verdict(buf).c_str());
        }
        return 0;
    }
    if (mode == "bench" && argc >= 4) {
        double const ms = std::atof(argv[2]);
        for (int i = 3; i < argc; ++i) {
            std::vector<char> buf = read_file(argv[i]);
            std::vector<double> samples;
            auto const deadline = std::chrono::steady_clock::now()
                + std::chrono::microseconds(static_cast<long>(ms * 1000));
            std::size_t sink = 0;
            while (std::chrono::steady_clock::now() < deadline || samples.size() < 5) {
                int const reps = 200;
                auto const t0 = std::chrono::steady_clock::now();
                for (int r = 0; r < reps; ++r) {
                    lt::error_code ec;
                    lt::bdecode_node node = lt::bdecode({buf.data(), static_cast<std::ptrdiff_t>(buf.size())}, ec);
                    sink += static_cast<std::size_t>(node.type());
                }
                auto const t1 = std::chrono::steady_clock::now();
                samples.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / reps);
            }
            std::sort(samples.begin(), samples.end());
            std::printf("%s\t%.1f\t%zu\n", argv[i], samples[samples.size() / 2], sink);
        }
        return 0;
    }
    std::fprintf(stderr, "unknown mode\n");
    return 2;
}
