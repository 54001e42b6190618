// A fixed pool for work split by index (partitions): fn(i) for every i in [0, n), on `jobs` threads (0:
// one per core; never more than n), the caller's thread among them; items are handed out in index order.
// fn must be safe to call concurrently for different i; results go to slots the caller indexes by i, so
// the output order does not depend on which thread finishes first.
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>
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

// ParallelFor whose items are finished in index order: work(i) runs on the pool and returns an item,
// then finish(i, item) runs on the same thread once finish(j, ...) has returned for every j < i, and the
// item is destroyed with it. A worker holds its item until its turn, so at most `jobs` items exist at
// once, whatever n: what an item holds (a partition's loaded replicas) is bounded by jobs times the
// largest, while what finish keeps is the caller's. Items are handed out in index order, so the lowest
// unfinished index always belongs to a worker that can finish it (no deadlock).
template <typename Work, typename Finish>
void OrderedParallelFor(size_t n, unsigned jobs, Work work, Finish finish) {
  std::mutex mu;
  std::condition_variable turn_changed;
  size_t turn = 0;
  ParallelFor(n, jobs, [&](size_t i) {
    auto item = work(i);
    std::unique_lock<std::mutex> lock(mu);
    turn_changed.wait(lock, [&] { return turn == i; });
    lock.unlock();
    finish(i, std::move(item));
    lock.lock();
    ++turn;
    turn_changed.notify_all();
  });
}

}  // namespace klf
