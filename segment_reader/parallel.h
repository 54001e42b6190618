// A fixed pool for work split by index (partitions): fn(i) for every i in [0, n), on `jobs` threads (0:
// one per core; never more than n), the caller's thread among them; items are handed out in index order.
// fn must be safe to call concurrently for different i; results go to slots the caller indexes by i, so
// the output order does not depend on which thread finishes first.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <functional>
#include <thread>
#include <vector>

namespace klf {

inline unsigned ResolveJobs(unsigned jobs, size_t n) {
  if (jobs == 0) jobs = std::max(1u, std::thread::hardware_concurrency());
  return unsigned(std::clamp<size_t>(jobs, 1, std::max<size_t>(n, 1)));
}

inline void ParallelFor(size_t n, unsigned jobs, const std::function<void(size_t)>& fn) {
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i = next++; i < n; i = next++) fn(i);
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < ResolveJobs(jobs, n); ++t) pool.emplace_back(worker);
  worker();
  for (std::thread& t : pool) t.join();
}

}  // namespace klf
