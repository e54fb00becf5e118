// token_table: see token_table.h
