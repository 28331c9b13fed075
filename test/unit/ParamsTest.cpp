// The library's weights: the blob's checksum (XXH64, Driver/Params.h) against xxHash's own values, and the once
// steps uopc runs itself (Driver/OnceCopy.h): a re-layout, a copy that writes the destination sparsely, one that
// would read or write outside its buffers.
#include "Driver/OnceCopy.h"
#include "Driver/Params.h"
#include "IR/Error.h"

#include <catch2/catch.hpp>

#include <cstring>
#include <string>
#include <vector>

using namespace uopc;

namespace {

std::string pattern(size_t n) {
  std::string s;
  for (size_t i = 0; i < n; ++i) s += static_cast<char>((i * 7 + 3) & 255);
  return s;
}

uint64_t xxh64(std::string_view s) {
  Xxh64 h;
  h.update(s);
  return h.digest();
}

std::vector<float> run(const AffineCopy &c, const std::vector<float> &src, int64_t dstElems, size_t *pieces = nullptr) {
  std::string out;
  size_t n = 0;
  runAffineCopy(c, std::string_view(reinterpret_cast<const char *>(src.data()), src.size() * 4), static_cast<int64_t>(src.size()),
                dstElems, [&](std::string_view piece) { out += piece, ++n; });
  if (pieces) *pieces = n;
  std::vector<float> v(out.size() / 4);
  std::memcpy(v.data(), out.data(), out.size());
  return v;
}

} // namespace

TEST_CASE("XXH64 matches xxHash's values", "[params]") {
  // xxhash.xxh64(bytes((i*7+3) & 255 for i in range(n))).intdigest(), python-xxhash 3.x
  const std::vector<std::pair<size_t, uint64_t>> want = {
      {0, 0xef46db3751d8e999ULL},   {1, 0x1f25c8d0bc1f4bb6ULL},   {3, 0x31d2363f52e564c9ULL},   {4, 0x9bb64b7d66ee9fdaULL},
      {5, 0xc7608efddb7051feULL},   {7, 0x9a7b149959ce60d8ULL},   {8, 0xdab99d95c6f90092ULL},   {9, 0x170bb6bf975b4c02ULL},
      {31, 0xa2aa5f33cc4a6119ULL},  {32, 0x23c3c17ef790fd97ULL},  {33, 0x50a7cfc7ba588784ULL},  {63, 0x5e3e54b431c7493cULL},
      {64, 0x0eb64b3ef6eeb01fULL},  {65, 0xa383b724b2bd12f1ULL},  {100, 0xa61f8d4c170fe531ULL}, {1000, 0x5f235fa033f1a3fbULL},
      {4097, 0xda8d184207b32a00ULL}};
  for (const auto &[n, h] : want) {
    INFO("length " << n);
    CHECK(xxh64(pattern(n)) == h);
  }
}

TEST_CASE("XXH64 gives the same digest however the input is split", "[params]") {
  std::string msg = pattern(300);
  for (size_t cut : {0, 1, 7, 31, 32, 33, 64, 100, 299, 300}) {
    for (size_t cut2 : {cut, std::min<size_t>(cut + 5, 300), std::min<size_t>(cut + 40, 300)}) {
      Xxh64 h;
      h.update(std::string_view(msg).substr(0, cut));
      h.update(std::string_view(msg).substr(cut, cut2 - cut));
      h.update(std::string_view(msg).substr(cut2));
      CHECK(h.digest() == xxh64(msg));
    }
  }
}

TEST_CASE("A re-layout runs as the kernel would: Q[(o*stride + k)*lanes + l] = W[(o*lanes + l)*stride + k]", "[params]") {
  const int64_t rows = 6, lanes = 2, stride = 5;
  AffineCopy c;
  c.dstArg = 0, c.srcArg = 1, c.elemBytes = 4;
  c.sizes = {rows / lanes, stride, lanes};
  c.dstStrides = {stride * lanes, lanes, 1};
  c.srcStrides = {lanes * stride, 1, stride};
  std::vector<float> w(rows * stride);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i) + 0.5f;
  std::vector<float> q = run(c, w, rows * stride);
  REQUIRE(q.size() == w.size());
  for (int64_t o = 0; o < rows / lanes; ++o)
    for (int64_t k = 0; k < stride; ++k)
      for (int64_t l = 0; l < lanes; ++l) CHECK(q[(o * stride + k) * lanes + l] == w[(o * lanes + l) * stride + k]);
  // a loop order other than the kernel's, a loop of one point: the same
  AffineCopy d = c;
  d.sizes = {stride, 1, lanes, rows / lanes};
  d.dstStrides = {lanes, 7, 1, stride * lanes};
  d.srcStrides = {1, 9, stride, lanes * stride};
  CHECK(run(d, w, rows * stride) == q);
}

TEST_CASE("A large dense copy comes out in pieces, without the whole destination", "[params]") {
  AffineCopy c;
  c.elemBytes = 4;
  c.sizes = {1024, 1024};
  c.dstStrides = {1024, 1};
  c.srcStrides = {1, 1024}; // a transpose
  std::vector<float> w(1024 * 1024);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i);
  size_t pieces = 0;
  std::vector<float> q = run(c, w, 1024 * 1024, &pieces);
  CHECK(pieces == 4); // 4 MiB in 1 MiB pieces
  CHECK(q[1] == 1024.0f);
  CHECK(q[1024 * 1024 - 1] == static_cast<float>(1024 * 1024 - 1));
}

TEST_CASE("A copy that writes part of its destination: zeros elsewhere, the kernel's last write wins", "[params]") {
  AffineCopy c;
  c.elemBytes = 4;
  c.sizes = {3};
  c.dstStrides = {2};
  c.dstBase = 1;
  c.srcStrides = {1};
  CHECK(run(c, {1, 2, 3}, 7) == std::vector<float>{0, 1, 0, 2, 0, 3, 0});
  AffineCopy same = c; // every point to element 0: the last one stays
  same.dstStrides = {0};
  same.dstBase = 0;
  CHECK(run(same, {1, 2, 3}, 2) == std::vector<float>{3, 0});
  AffineCopy none = c; // a loop of no points: zeros
  none.sizes = {0};
  CHECK(run(none, {1, 2, 3}, 3) == std::vector<float>{0, 0, 0});
}

TEST_CASE("A copy outside its buffers is an error, not a write", "[params]") {
  AffineCopy c;
  c.elemBytes = 4;
  c.sizes = {4};
  c.dstStrides = {1};
  c.srcStrides = {1};
  CHECK_THROWS_AS(run(c, {1, 2, 3}, 4), Error);   // reads element 3 of 3
  CHECK_THROWS_AS(run(c, {1, 2, 3, 4}, 3), Error); // writes element 3 of 3
  c.srcStrides = {-1};
  CHECK_THROWS_AS(run(c, {1, 2, 3, 4}, 4), Error); // reads element -3
  c.srcStrides = {INT64_MAX / 2};
  CHECK_THROWS_AS(run(c, {1, 2, 3, 4}, 4), Error); // an index that overflows
}
