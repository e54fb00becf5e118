#pragma once
// A host array's bytes, as Backend::upload takes them: a vector, a span or an array
// of trivially copyable values, viewed (never copied).
#include <cstddef>
#include <ranges>
#include <span>

namespace sluice::backends {

template <std::ranges::contiguous_range Values>
std::span<const std::byte> host_bytes(const Values& values) {
  return std::as_bytes(std::span(std::ranges::data(values), std::ranges::size(values)));
}

}  // namespace sluice::backends
