// small_vector_test.cpp: SmallVector (include/headcount/small_vector.h) does what std::vector does
// for the operations the shape oracle uses, in place up to N elements and on the heap past them.
// Every expected sequence is the one std::vector gives for the same operations, built beside it.
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "headcount/checked.h"
#include "headcount/small_vector.h"

using headcount::Int;
using headcount::SmallVector;
using headcount::same;

namespace {

using Small = SmallVector<int64_t, 4>;

std::vector<int64_t> as_vector(const Small& s) { return std::vector<int64_t>(s.begin(), s.end()); }

}  // namespace

TEST_CASE("a small vector grows past its place and keeps its elements in order", "[small_vector]") {
  Small s;
  std::vector<int64_t> v;
  for (int64_t i = 0; i < 10; ++i) {  // 4 in place, then 5..10 on the heap
    s.push_back(i * 3);
    v.push_back(i * 3);
    CHECK(as_vector(s) == v);
  }
  CHECK(s.size() == 10);
  CHECK(s.capacity() >= 10);
  CHECK(s.front() == 0);
  CHECK(s.back() == 27);
  s.pop_back();
  v.pop_back();
  CHECK(as_vector(s) == v);
  s.push_back(s[2]);  // an element of itself, at a full vector's edge or not
  v.push_back(v[2]);
  CHECK(as_vector(s) == v);
}

TEST_CASE("a small vector's copies and moves are independent, in place or on the heap", "[small_vector]") {
  for (size_t n : {size_t{3}, size_t{9}}) {  // one fits in place, one does not
    Small a;
    for (size_t i = 0; i < n; ++i) a.push_back(static_cast<int64_t>(i) + 1);
    Small b = a;
    b[0] = 100;
    CHECK(a[0] == 1);  // a copy, not a view
    Small c = std::move(b);
    CHECK(c.size() == n);
    CHECK(c[0] == 100);
    CHECK(b.empty());  // NOLINT: moved from, left empty
    Small d;
    d = c;
    CHECK(d == c);
    d = std::move(c);
    CHECK(d[0] == 100);
    CHECK(d.size() == n);
    const Small& self = a;
    a = self;  // self-assignment keeps the elements
    CHECK(a.size() == n);
    CHECK(a[n - 1] == static_cast<int64_t>(n));
  }
}

TEST_CASE("a small vector assigns, resizes, inserts and erases as std::vector does", "[small_vector]") {
  Small s(3, 7);
  std::vector<int64_t> v(3, 7);
  CHECK(as_vector(s) == v);
  s.resize(6, 1);
  v.resize(6, 1);
  CHECK(as_vector(s) == v);  // {7, 7, 7, 1, 1, 1}
  s.resize(2);
  v.resize(2);
  CHECK(as_vector(s) == v);
  const std::vector<int64_t> more = {4, 5, 6, 8, 9};
  s.insert(s.begin() + 1, more.begin(), more.end());
  v.insert(v.begin() + 1, more.begin(), more.end());
  CHECK(as_vector(s) == v);  // {7, 4, 5, 6, 8, 9, 7}
  s.insert(s.begin(), s.begin() + 3, s.end());  // a range of itself
  const std::vector<int64_t> tail(v.begin() + 3, v.end());
  v.insert(v.begin(), tail.begin(), tail.end());
  CHECK(as_vector(s) == std::vector<int64_t>{6, 8, 9, 7, 7, 4, 5, 6, 8, 9, 7});
  CHECK(as_vector(s) == v);
  s.erase(s.begin() + 2, s.begin() + 5);
  v.erase(v.begin() + 2, v.begin() + 5);
  CHECK(as_vector(s) == v);  // {6, 8, 4, 5, 6, 8, 9, 7}
  s.erase(s.begin());
  v.erase(v.begin());
  CHECK(as_vector(s) == v);
  s.assign(s.begin() + 2, s.end());  // assigned from a range of itself
  const std::vector<int64_t> rest(v.begin() + 2, v.end());
  v.assign(rest.begin(), rest.end());
  CHECK(as_vector(s) == v);  // {5, 6, 8, 9, 7}
  s.assign({1, 2});
  CHECK(as_vector(s) == std::vector<int64_t>{1, 2});
  s.clear();
  CHECK(s.empty());
  CHECK(s != Small{1});
  CHECK(Small{1, 2, 3, 4, 5} == Small{1, 2, 3, 4, 5});
}

TEST_CASE("a small vector of Int starts its new elements unknown", "[small_vector]") {
  SmallVector<Int, 4> d(6);  // past the place for 4
  REQUIRE(d.size() == 6);
  for (const Int& x : d) CHECK_FALSE(x.known());
  d[5] = Int(64);
  d.resize(8);
  CHECK(same(d[5], Int(64)));
  CHECK_FALSE(d[7].known());
}
