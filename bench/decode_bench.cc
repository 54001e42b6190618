// Decode throughput of whole segment files, warm page cache, one thread (issues 2 and 3).
//
// The files come from the environment: KLF_BENCH_LOGS=/path/a.log:/path/b.log (scripts/bench.sh
// generates them with `klf-bench gen`). For each file:
//   Floor/stream/<name>  read(2) in 4 MiB chunks + batch header walk + CRC-32C of every batch
//   Floor/mapped/<name>  the same walk over a read-only mapping (klf reads through mappings)
//   Decode/<name>        LogReader + RecordDecoder, every record parsed and its fields touched
// Throughput (bytes_per_second) is of file bytes per wall-clock second (UseRealTime); the "records"
// counter is records per second.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "bench/workloads.h"
#include "segment_reader/file.h"

namespace {

using klf::bench::WalkResult;

void Account(benchmark::State& state, const WalkResult& r) {
  if (!r.ok || r.bad_crc != 0) state.SkipWithError("file does not decode cleanly");
  benchmark::DoNotOptimize(r.checksum);
}

void Finish(benchmark::State& state, uint64_t bytes, uint64_t records) {
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(bytes));
  state.counters["records"] =
      benchmark::Counter(double(records) * double(state.iterations()), benchmark::Counter::kIsRate);
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  const char* env = std::getenv("KLF_BENCH_LOGS");
  if (env == nullptr || *env == '\0') {
    std::fprintf(stderr, "decode_bench: set KLF_BENCH_LOGS to ':'-separated .log files (see scripts/bench.sh)\n");
    return 2;
  }
  std::vector<std::string> files;
  std::stringstream ss(env);
  for (std::string f; std::getline(ss, f, ':');) {
    if (!f.empty()) files.push_back(f);
  }
  std::vector<std::shared_ptr<klf::MappedFile>> mapped;
  for (const std::string& file : files) {
    std::string error;
    std::shared_ptr<klf::MappedFile> m = klf::MappedFile::Open(file, &error);
    if (!m) {
      std::fprintf(stderr, "decode_bench: %s\n", error.c_str());
      return 1;
    }
    mapped.push_back(m);
    // The name: the data set's directory (scripts/bench.sh: <set>/bench-0/<segment>.log), e.g. seg256-lz4.
    std::filesystem::path p(file);
    std::string name = p.parent_path().parent_path().filename().string();
    if (name.empty()) name = p.filename().string();
    benchmark::RegisterBenchmark(("Floor/stream/" + name).c_str(),
                                 [file](benchmark::State& state) {
                                   WalkResult r;
                                   for (auto _ : state) r = klf::bench::FloorStream(file);
                                   Account(state, r);
                                   Finish(state, r.bytes, 0);
                                 })
        ->Unit(benchmark::kMillisecond)
        ->MinTime(2.0)
        ->UseRealTime();
    benchmark::RegisterBenchmark(("Floor/mapped/" + name).c_str(),
                                 [m](benchmark::State& state) {
                                   WalkResult r;
                                   for (auto _ : state) r = klf::bench::FloorMapped(m->data());
                                   Account(state, r);
                                   Finish(state, r.bytes, 0);
                                 })
        ->Unit(benchmark::kMillisecond)
        ->MinTime(2.0)
        ->UseRealTime();
    benchmark::RegisterBenchmark(("Decode/stream/" + name).c_str(),
                                 [file](benchmark::State& state) {
                                   WalkResult r;
                                   for (auto _ : state) r = klf::bench::DecodeStream(file);
                                   Account(state, r);
                                   state.counters["file_bytes"] = double(r.bytes);
                                   Finish(state, r.bytes, r.records);
                                 })
        ->Unit(benchmark::kMillisecond)
        ->MinTime(2.0)
        ->UseRealTime();
    benchmark::RegisterBenchmark(("Decode/mapped/" + name).c_str(),
                                 [m, file](benchmark::State& state) {
                                   WalkResult r;
                                   for (auto _ : state) r = klf::bench::DecodeAll(file, m->data());
                                   Account(state, r);
                                   state.counters["file_bytes"] = double(r.bytes);
                                   Finish(state, r.bytes, r.records);
                                 })
        ->Unit(benchmark::kMillisecond)
        ->MinTime(2.0)
        ->UseRealTime();
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
