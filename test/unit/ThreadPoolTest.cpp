// The CPU runtime's thread pool (Runtime/ThreadPool.h): every chunk of every job runs exactly once, whether
// the workers spin between jobs or sleep (a gap longer than their spin), with shares and in turns, with
// more threads than chunks and with one thread. (Also clean under -fsanitize=thread and =address, built by
// hand: g++ -std=c++20 -fsanitize=thread -Ilib test/unit/ThreadPoolTest.cpp test/unit/main.cpp -pthread.)
#include "Runtime/ThreadPool.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

using namespace uopc;

namespace {
// runs `jobs` jobs of `chunks` chunks each, pausing `gap` between them; true when each chunk ran once per job
bool eachOnce(ThreadPool &pool, int jobs, int64_t chunks, bool shares, std::chrono::microseconds gap, bool slow) {
  std::vector<int64_t> cuts;
  for (int64_t c = 0; c <= chunks; ++c) cuts.push_back(c * 3);
  for (int j = 0; j < jobs; ++j) {
    std::vector<std::atomic<int>> ran(static_cast<size_t>(chunks));
    for (auto &r : ran) r.store(0);
    runChunks(pool, cuts, shares, [&](int, int64_t lo, int64_t hi) {
      if (hi - lo != 3) ran[0].fetch_add(100);
      ran[static_cast<size_t>(lo / 3)].fetch_add(1);
      if (slow) std::this_thread::sleep_for(std::chrono::microseconds(20));
    });
    for (auto &r : ran)
      if (r.load() != 1) return false;
    if (gap.count() > 0) std::this_thread::sleep_for(gap);
  }
  return true;
}
} // namespace

TEST_CASE("thread pool: each chunk once, back to back", "[threadpool]") {
  ThreadPool pool(2);
  CHECK(eachOnce(pool, 2000, 3, true, std::chrono::microseconds(0), false));
  CHECK(eachOnce(pool, 2000, 7, false, std::chrono::microseconds(0), false));
  CHECK(eachOnce(pool, 200, 16, true, std::chrono::microseconds(0), true));
}

TEST_CASE("thread pool: each chunk once, workers asleep between jobs", "[threadpool]") {
  // (a gap longer than the workers' spin: each job starts with them asleep)
  ThreadPool pool(3);
  CHECK(eachOnce(pool, 40, 3, true, std::chrono::microseconds(1500), false));
  CHECK(eachOnce(pool, 40, 1, false, std::chrono::microseconds(1500), false));
  CHECK(eachOnce(pool, 20, 12, true, std::chrono::microseconds(1500), true));
}

TEST_CASE("thread pool: more threads than chunks, one thread", "[threadpool]") {
  ThreadPool many(8), one(1);
  CHECK(eachOnce(many, 500, 2, true, std::chrono::microseconds(0), false));
  CHECK(eachOnce(one, 50, 5, true, std::chrono::microseconds(0), false));
}
