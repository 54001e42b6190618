// OrderedParallelFor (segment_reader/parallel.h): every item is finished once, in index order, and no
// more than `jobs` items exist at once however many there are (what klf diff relies on to keep at most
// `jobs` partitions' replicas in memory).
#include "segment_reader/parallel.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

namespace klf {
namespace {

// An item that counts how many of its kind are alive, and the most there ever were.
struct Counted {
  static std::atomic<int> alive, peak;
  size_t index = 0;
  explicit Counted(size_t i) : index(i) {
    int now = ++alive;
    for (int p = peak.load(); now > p && !peak.compare_exchange_weak(p, now);) {
    }
  }
  ~Counted() { --alive; }
  Counted(const Counted&) = delete;
  Counted& operator=(const Counted&) = delete;
};
std::atomic<int> Counted::alive{0};
std::atomic<int> Counted::peak{0};

TEST(OrderedParallelForTest, FinishesInIndexOrderWithAtMostJobsItemsAlive) {
  for (unsigned jobs : {1u, 2u, 4u}) {
    Counted::alive = 0;
    Counted::peak = 0;
    const size_t n = 200;
    std::vector<size_t> finished;
    OrderedParallelFor(
        n, jobs,
        [&](size_t i) {
          auto item = std::make_unique<Counted>(i);
          // Items of uneven cost, the later ones often cheaper: workers that finish early must wait
          // for their turn while holding their item, never take another.
          if (i % 7 == 0) std::this_thread::sleep_for(std::chrono::microseconds(300));
          return item;
        },
        [&](size_t i, std::unique_ptr<Counted> item) {
          EXPECT_EQ(item->index, i);
          finished.push_back(i);
        });
    ASSERT_EQ(finished.size(), n) << "jobs " << jobs;
    for (size_t i = 0; i < n; ++i) EXPECT_EQ(finished[i], i) << "jobs " << jobs;
    EXPECT_EQ(Counted::alive.load(), 0);
    EXPECT_GE(Counted::peak.load(), 1);
    EXPECT_LE(Counted::peak.load(), int(jobs)) << "more items alive at once than workers";
  }
}

TEST(OrderedParallelForTest, NoItems) {
  bool called = false;
  OrderedParallelFor(
      0, 2,
      [&](size_t) {
        called = true;
        return 0;
      },
      [&](size_t, int) { called = true; });
  EXPECT_FALSE(called);
}

}  // namespace
}  // namespace klf
