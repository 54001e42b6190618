#include "segment_reader/read_throttle.h"

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

namespace klf {
namespace {

std::atomic<uint64_t> g_rate{0};
std::atomic<uint64_t> g_total{0};
std::mutex g_mu;
// The time at which the bytes charged so far are paid for at the rate (a virtual clock).
std::chrono::steady_clock::time_point g_paid_until{};

}  // namespace

void SetReadRateLimit(uint64_t bytes_per_second) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_rate.store(bytes_per_second, std::memory_order_relaxed);
  g_paid_until = std::chrono::steady_clock::now();
}

uint64_t BytesThrottled() { return g_total.load(std::memory_order_relaxed); }

void ThrottleRead(uint64_t bytes) {
  g_total.fetch_add(bytes, std::memory_order_relaxed);
  uint64_t rate = g_rate.load(std::memory_order_relaxed);
  if (rate == 0 || bytes == 0) return;
  std::chrono::steady_clock::time_point until;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    auto now = std::chrono::steady_clock::now();
    // Idle time is not banked beyond one second of reading (no burst after a pause).
    if (g_paid_until + std::chrono::seconds(1) < now) g_paid_until = now - std::chrono::seconds(1);
    g_paid_until += std::chrono::nanoseconds(uint64_t(double(bytes) / double(rate) * 1e9));
    until = g_paid_until;
  }
  std::this_thread::sleep_until(until);
}

}  // namespace klf
