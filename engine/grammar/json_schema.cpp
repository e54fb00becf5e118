// json_schema: see json_schema.h
