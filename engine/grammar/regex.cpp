// regex: see regex.h
