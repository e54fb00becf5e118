// matcher: see matcher.h
