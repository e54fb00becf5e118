#pragma once
// Bounds on what one request may make the grammar compilers do, so that no input can
// make them use unbounded time or memory. Exceeding one is a GrammarError naming it.
#include <cstddef>

namespace sluice::grammar {

struct GrammarLimits {
  size_t max_input_bytes = 256 * 1024;  // schema JSON, GBNF text or regex
  size_t max_elements = 1u << 18;       // Grammar::num_elements() of the result
  int max_depth = 64;                   // schema nesting, regex group nesting
  int max_repeat = 1000;                // a bounded repetition's upper bound ({m,n}, maxItems, maxLength)
  size_t max_ref_expansions = 10000;    // $ref resolutions while compiling one schema
  // A schema that contains itself ($ref recursion) is unrolled until its value is this
  // many objects/arrays deep; below, the recursive reference admits no value (an
  // optional property is left out, an array of it stays empty). OpenAI's documented
  // structured-output limit is 10 levels of nesting. Without a cap a sampled tree can
  // grow until max_tokens.
  int max_recursive_nesting = 10;
};

}  // namespace sluice::grammar
