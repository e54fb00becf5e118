#pragma once
// SLUICE_CHECK: the one way a broken invariant stops the process. It prints where
// and why to stderr and aborts; it never throws, so it is safe on the hot path.
// User mistakes are values and 4xx responses, never CHECK failures. Every layer
// (backends, engine, server) depends on backends/, so the macro lives here.
#include <cstdio>
#include <cstdlib>

#define SLUICE_CHECK(cond, msg)                                                          \
  do {                                                                                   \
    if (!(cond)) [[unlikely]] {                                                          \
      std::fprintf(stderr, "%s:%d: CHECK failed: %s (%s)\n", __FILE__, __LINE__, #cond, \
                   msg);                                                                 \
      std::abort();                                                                      \
    }                                                                                    \
  } while (0)
