// small_vector.h: a vector that holds its first N elements inside itself (internal).
//
// The shape oracle makes a list of dims for nearly every value and node it visits; nearly all have
// four or fewer. A std::vector allocates each one on the heap; this holds them in place and moves
// to the heap only past N. Elements are trivially copyable (Int), so they move with memcpy. The
// subset of std::vector's interface the oracle uses, with its meaning.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <new>
#include <stdexcept>
#include <type_traits>

namespace headcount {

template <typename T, size_t N>
class SmallVector {
  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>, "elements move as bytes");
  static_assert(N > 0, "room for one element at least");

 public:
  using value_type = T;
  using size_type = size_t;
  using difference_type = std::ptrdiff_t;
  using reference = T&;
  using const_reference = const T&;
  using pointer = T*;
  using const_pointer = const T*;
  using iterator = T*;
  using const_iterator = const T*;

  SmallVector() noexcept : data_(local()) {}
  explicit SmallVector(size_t n, const T& value = T()) : SmallVector() { assign(n, value); }
  template <typename It, typename = std::enable_if_t<!std::is_integral_v<It>>>
  SmallVector(It first, It last) : SmallVector() {
    assign(first, last);
  }
  SmallVector(std::initializer_list<T> list) : SmallVector() { assign(list.begin(), list.end()); }
  SmallVector(const SmallVector& o) : SmallVector() { assign(o.begin(), o.end()); }
  SmallVector(SmallVector&& o) noexcept : SmallVector() { take(o); }
  SmallVector& operator=(const SmallVector& o) {
    if (this != &o) assign(o.begin(), o.end());
    return *this;
  }
  SmallVector& operator=(SmallVector&& o) noexcept {
    if (this != &o) {
      release();
      take(o);
    }
    return *this;
  }
  SmallVector& operator=(std::initializer_list<T> list) {
    assign(list.begin(), list.end());
    return *this;
  }
  ~SmallVector() { release(); }

  size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  size_t capacity() const noexcept { return capacity_; }
  T* data() noexcept { return data_; }
  const T* data() const noexcept { return data_; }
  T* begin() noexcept { return data_; }
  T* end() noexcept { return data_ + size_; }
  const T* begin() const noexcept { return data_; }
  const T* end() const noexcept { return data_ + size_; }
  const T* cbegin() const noexcept { return data_; }
  const T* cend() const noexcept { return data_ + size_; }
  std::reverse_iterator<T*> rbegin() noexcept { return std::reverse_iterator<T*>(end()); }
  std::reverse_iterator<T*> rend() noexcept { return std::reverse_iterator<T*>(begin()); }
  std::reverse_iterator<const T*> rbegin() const noexcept { return std::reverse_iterator<const T*>(end()); }
  std::reverse_iterator<const T*> rend() const noexcept { return std::reverse_iterator<const T*>(begin()); }
  T& operator[](size_t i) noexcept { return data_[i]; }
  const T& operator[](size_t i) const noexcept { return data_[i]; }
  T& at(size_t i) {
    if (i >= size_) throw std::out_of_range("SmallVector::at");
    return data_[i];
  }
  const T& at(size_t i) const {
    if (i >= size_) throw std::out_of_range("SmallVector::at");
    return data_[i];
  }
  T& front() noexcept { return data_[0]; }
  const T& front() const noexcept { return data_[0]; }
  T& back() noexcept { return data_[size_ - 1]; }
  const T& back() const noexcept { return data_[size_ - 1]; }

  void reserve(size_t n) {
    if (n > capacity_) grow_to(n);
  }
  void clear() noexcept { size_ = 0; }
  void push_back(const T& v) {
    if (size_ == capacity_) {
      const T copy = v;  // v may be an element of this vector
      grow_to(size_ + 1);
      data_[size_++] = copy;
      return;
    }
    data_[size_++] = v;
  }
  template <typename... A>
  T& emplace_back(A&&... a) {
    push_back(T(std::forward<A>(a)...));
    return back();
  }
  void pop_back() noexcept { --size_; }
  void resize(size_t n, const T& value = T()) {
    if (n > size_) {
      const T copy = value;
      reserve(n);
      std::fill(data_ + size_, data_ + n, copy);
    }
    size_ = n;
  }
  void assign(size_t n, const T& value) {
    const T copy = value;
    clear();
    reserve(n);
    std::fill(data_, data_ + n, copy);
    size_ = n;
  }
  template <typename It, typename = std::enable_if_t<!std::is_integral_v<It>>>
  void assign(It first, It last) {
    if constexpr (std::is_base_of_v<std::forward_iterator_tag, typename std::iterator_traits<It>::iterator_category>) {
      const size_t n = static_cast<size_t>(std::distance(first, last));
      if (n > capacity_) {
        SmallVector fresh;  // `first` may point into this vector
        fresh.grow_to(n);
        std::copy(first, last, fresh.data_);
        fresh.size_ = n;
        *this = std::move(fresh);
        return;
      }
      T* out = data_;
      for (; first != last; ++first) *out++ = *first;  // overlapping forward copy is safe: out <= first
      size_ = n;
    } else {
      clear();
      for (; first != last; ++first) push_back(*first);
    }
  }
  void assign(std::initializer_list<T> list) { assign(list.begin(), list.end()); }
  T* insert(const T* pos, const T& v) { return insert(pos, &v, &v + 1); }
  template <typename It, typename = std::enable_if_t<!std::is_integral_v<It>>>
  T* insert(const T* pos, It first, It last) {
    const size_t at = static_cast<size_t>(pos - data_);
    SmallVector tail(data_ + at, data_ + size_);
    SmallVector added(first, last);  // copied first: the range may lie in this vector
    size_ = at;
    reserve(at + added.size() + tail.size());
    std::copy(added.begin(), added.end(), data_ + at);
    std::copy(tail.begin(), tail.end(), data_ + at + added.size());
    size_ = at + added.size() + tail.size();
    return data_ + at;
  }
  T* erase(const T* pos) { return erase(pos, pos + 1); }
  T* erase(const T* first, const T* last) {
    const size_t from = static_cast<size_t>(first - data_), to = static_cast<size_t>(last - data_);
    std::copy(data_ + to, data_ + size_, data_ + from);
    size_ -= to - from;
    return data_ + from;
  }

  friend bool operator==(const SmallVector& a, const SmallVector& b) {
    return a.size_ == b.size_ && std::equal(a.begin(), a.end(), b.begin());
  }
  friend bool operator!=(const SmallVector& a, const SmallVector& b) { return !(a == b); }

 private:
  T* local() noexcept { return reinterpret_cast<T*>(local_); }
  // Heap room for at least `n` elements (doubling), the elements kept.
  void grow_to(size_t n) {
    const size_t cap = std::max<size_t>(n, capacity_ * 2);
    T* heap = static_cast<T*>(::operator new(cap * sizeof(T)));
    if (size_) std::memcpy(static_cast<void*>(heap), data_, size_ * sizeof(T));
    release();
    data_ = heap;
    capacity_ = cap;
  }
  void release() noexcept {
    if (data_ != local()) ::operator delete(data_);
    data_ = local();
    capacity_ = N;
  }
  // Takes o's elements (o is left empty).
  void take(SmallVector& o) noexcept {
    if (o.data_ == o.local()) {
      std::memcpy(static_cast<void*>(local()), o.local(), o.size_ * sizeof(T));
      data_ = local();
      capacity_ = N;
    } else {
      data_ = o.data_;
      capacity_ = o.capacity_;
      o.data_ = o.local();
      o.capacity_ = N;
    }
    size_ = o.size_;
    o.size_ = 0;
  }

  T* data_;
  size_t size_ = 0;
  size_t capacity_ = N;
  alignas(T) unsigned char local_[N * sizeof(T)];
};

}  // namespace headcount
