// gbnf: see gbnf.h
