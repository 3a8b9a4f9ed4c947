//===- ThreadPoolTest.cpp - the runtime's parallel_for --------------------===//

#include "ThreadPool.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <vector>

namespace {
struct Coverage {
  std::vector<std::atomic<int>> hits;
  explicit Coverage(size_t n) : hits(n) {}
};

void mark(void *ctx, int64_t begin, int64_t end) {
  auto *c = static_cast<Coverage *>(ctx);
  for (int64_t i = begin; i < end; ++i)
    c->hits[i]++;
}
} // namespace

TEST_CASE("parallel_for covers [0, n) exactly once", "[threadpool]") {
  for (int threads : {1, 2, 3, 8}) {
    kiln::rt::ThreadPool pool(threads);
    CHECK(pool.size() == threads);
    for (int64_t n : {0, 1, 2, 7, 64, 1000}) {
      Coverage c(n);
      kiln::rt::ThreadPool::parallelForThunk(&pool, n, &mark, &c);
      for (int64_t i = 0; i < n; ++i)
        REQUIRE(c.hits[i] == 1);
    }
  }
}

TEST_CASE("a pool runs many jobs back to back", "[threadpool]") {
  kiln::rt::ThreadPool pool(4);
  Coverage c(100);
  for (int round = 0; round < 200; ++round)
    pool.parallelFor(100, &mark, &c);
  for (auto &h : c.hits)
    REQUIRE(h == 200);
}

TEST_CASE("jobs with fewer chunks than workers run once each, back to back", "[threadpool]") {
  // Workers left out of a job (2 chunks, 7 workers) must not pick up the
  // next job's fields as their own and run a chunk twice.
  kiln::rt::ThreadPool pool(8);
  for (int round = 0; round < 2000; ++round) {
    int64_t n = round % 2 ? 2 : 8;
    Coverage c(n);
    pool.parallelFor(n, &mark, &c);
    for (int64_t i = 0; i < n; ++i)
      REQUIRE(c.hits[i] == 1);
  }
}
