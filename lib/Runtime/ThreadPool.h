//===- ThreadPool.h - the threads that run a split kernel's loop (uopc-run, uopc --tune) ===//
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace uopc {

/// n threads (the caller is thread 0) that run one job at a time: run(f) calls f(t) on every thread t
/// and returns when all are done. Between jobs a worker spins for a while (kSpin) before it sleeps, and so
/// does the caller waiting for the workers: a network runs its split kernels back to back, tens to hundreds
/// of microseconds each, and waking a sleeping thread (a futex wake, on a virtual machine an interrupt to an
/// idle virtual CPU) took about as long as such a kernel: DenseNet-121's 3x3 convolutions at 7x7 and 14x14
/// ran no faster on 2 threads than on 1.
class ThreadPool {
public:
  explicit ThreadPool(int n)
      : n_(std::max(1, n)), spin_(static_cast<unsigned>(n_) <= std::max(1u, std::thread::hardware_concurrency())) {
    for (int t = 1; t < n_; ++t) workers_.emplace_back([this, t] { work(t); });
  }
  ~ThreadPool() {
    {
      std::lock_guard<std::mutex> l(mu_);
      stop_.store(true, std::memory_order_relaxed);
      generation_.fetch_add(1, std::memory_order_release);
    }
    wake_.notify_all();
    for (std::thread &w : workers_) w.join();
  }
  int size() const { return n_; }
  void run(const std::function<void(int)> &f) {
    if (n_ == 1) return f(0);
    job_ = &f;
    pending_.store(n_ - 1, std::memory_order_relaxed);
    {
      std::lock_guard<std::mutex> l(mu_); // (a worker deciding to sleep checks the generation under it)
      generation_.fetch_add(1, std::memory_order_release);
    }
    wake_.notify_all();
    f(0);
    if (spinUntil([&] { return pending_.load(std::memory_order_acquire) == 0; })) return;
    std::unique_lock<std::mutex> l(mu_);
    done_.wait(l, [&] { return pending_.load(std::memory_order_acquire) == 0; });
  }

private:
  /// How long a thread spins for what it waits for before it sleeps.
  static constexpr std::chrono::microseconds kSpin{300};

  /// Spins until done() holds (true) or kSpin has passed (false); with more threads than cores, not at all (a
  /// spinning thread would take a core from one that computes).
  template <class Done> bool spinUntil(Done done) const {
    if (!spin_) return done();
    auto start = std::chrono::steady_clock::now();
    for (;;) {
      for (int k = 0; k < 64; ++k) {
        if (done()) return true;
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
      }
      if (std::chrono::steady_clock::now() - start > kSpin) return done();
    }
  }

  void work(int t) {
    uint64_t seen = 0;
    for (;;) {
      if (!spinUntil([&] { return generation_.load(std::memory_order_acquire) != seen; })) {
        std::unique_lock<std::mutex> l(mu_);
        wake_.wait(l, [&] { return generation_.load(std::memory_order_acquire) != seen; });
      }
      seen = generation_.load(std::memory_order_acquire);
      if (stop_.load(std::memory_order_relaxed)) return;
      (*job_)(t);
      if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        std::lock_guard<std::mutex> l(mu_); // (the caller checks pending_ under it before it sleeps)
        done_.notify_one();
      }
    }
  }
  int n_;
  bool spin_; ///< at most as many threads as cores
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable wake_, done_;
  const std::function<void(int)> *job_ = nullptr; ///< (written before the generation that publishes it)
  std::atomic<int> pending_{0};
  std::atomic<uint64_t> generation_{0};
  std::atomic<bool> stop_{false};
};

/// Runs a split loop's chunks [cuts[c], cuts[c + 1]) on the pool's threads, chunk(thread, lo, hi) each: in turns
/// (each thread the next chunk no thread took yet), or with `shares` each thread its own share of consecutive
/// chunks first (the t-th of size() runs), then what is left of the others' (the manifest's "split": IR/Kernel.h's
/// kernelSplitByShares). Either way a thread that is done early takes what a slow one left.
template <class F> void runChunks(ThreadPool &pool, const std::vector<int64_t> &cuts, bool shares, F chunk) {
  size_t chunks = cuts.size() - 1, threads = static_cast<size_t>(pool.size());
  std::vector<std::atomic<size_t>> taken(threads); // per share, how many of its chunks were taken
  for (std::atomic<size_t> &t : taken) t.store(0, std::memory_order_relaxed);
  auto firstOf = [&](size_t s) { return shares ? chunks * s / threads : s == 0 ? 0 : chunks; };
  auto endOf = [&](size_t s) { return shares ? chunks * (s + 1) / threads : chunks; };
  pool.run([&](int self) {
    for (size_t k = 0; k < threads; ++k) {
      size_t share = (static_cast<size_t>(self) + k) % threads, first = firstOf(share), end = endOf(share);
      for (size_t c; (c = first + taken[share].fetch_add(1, std::memory_order_relaxed)) < end;) chunk(self, cuts[c], cuts[c + 1]);
    }
  });
}

} // namespace uopc
