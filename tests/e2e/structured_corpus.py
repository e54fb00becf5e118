"""Thirty JSON schemas of the kinds extraction pipelines and agent frameworks send:
nested objects, bounded arrays, enums, recursion through $ref, patterns, formats,
unions and integer ranges. test_structured_outputs.py samples each at temperature 1
on SmolLM2 and validates every output with Python's `jsonschema`.

Bounds on strings, arrays and numbers keep the outputs short, as real extraction
schemas have them: without, a small model sampling at temperature 1 can write digits,
or invent properties, until max_tokens (with any engine; the grammar allows it).
"""

import json
from pathlib import Path

# The schemas live in a JSON fixture so that the C++ compile-time benchmark reads the
# same list (tests/unit/engine/grammar/test_compile_time.cpp).
CORPUS = json.loads((Path(__file__).resolve().parents[1] / "fixtures" / "grammar" / "structured_corpus.json")
                    .read_text())

# Recursive schemas let a sampled output nest until max_tokens: their prompts show a
# short example, as a caller of a real extraction pipeline would.
PROMPTS = {
    "linked_list": 'A linked list of two numbers, as JSON: {"head": 3, "tail": {"head": 7, "tail": null}}. '
                   'Now another one with two numbers:',
    "tree": 'A tree of two nodes, as JSON: {"value": 1, "children": [{"value": 2}]}. Now another tree of two nodes:',
}

assert len(CORPUS) >= 30, len(CORPUS)
