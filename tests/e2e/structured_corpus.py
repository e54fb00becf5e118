"""Thirty JSON schemas of the kinds extraction pipelines and agent frameworks send:
nested objects, bounded arrays, enums, recursion through $ref, patterns, formats,
unions and integer ranges. test_structured_outputs.py samples each at temperature 1
on SmolLM2 and validates every output with Python's `jsonschema`.

Bounds on strings, arrays and numbers keep the outputs short, as real extraction
schemas have them: without, a small model sampling at temperature 1 can write digits,
or invent properties, until max_tokens (with any engine; the grammar allows it).
"""

NAME = {"type": "string", "minLength": 1, "maxLength": 24}
SHORT = {"type": "string", "maxLength": 32}

CORPUS = {
    "person": {"type": "object", "properties": {"name": NAME, "age": {"type": "integer", "minimum": 0, "maximum": 120}},
               "required": ["name", "age"], "additionalProperties": False},
    "address": {"type": "object", "properties": {
        "street": SHORT, "city": NAME, "zip": {"type": "string", "pattern": "^[0-9]{5}$"},
        "country": {"type": "string", "enum": ["US", "CA", "FR", "DE", "JP"]}},
        "required": ["street", "city", "zip", "country"], "additionalProperties": False},
    "invoice": {"type": "object", "properties": {
        "number": {"type": "string", "pattern": "^INV-[0-9]{4}$"},
        "date": {"type": "string", "format": "date"},
        "lines": {"type": "array", "minItems": 1, "maxItems": 3, "items": {
            "type": "object", "properties": {"item": SHORT, "qty": {"type": "integer", "minimum": 1, "maximum": 99}},
            "required": ["item", "qty"], "additionalProperties": False}},
        "paid": {"type": "boolean"}},
        "required": ["number", "date", "lines", "paid"], "additionalProperties": False},
    "sentiment": {"type": "object", "properties": {
        "label": {"enum": ["positive", "negative", "neutral"]},
        "confidence_pct": {"type": "integer", "minimum": 0, "maximum": 100}},
        "required": ["label", "confidence_pct"], "additionalProperties": False},
    "tags": {"type": "array", "items": {"type": "string", "pattern": "^[a-z]{2,10}$"}, "minItems": 1, "maxItems": 5},
    "event": {"type": "object", "properties": {
        "title": SHORT, "start": {"type": "string", "format": "date-time"},
        "attendees": {"type": "array", "maxItems": 3, "items": {"type": "string", "format": "email"}}},
        "required": ["title", "start", "attendees"], "additionalProperties": False},
    "uuid_record": {"type": "object", "properties": {"id": {"type": "string", "format": "uuid"}, "name": NAME},
                    "required": ["id", "name"], "additionalProperties": False},
    "tree": {"$defs": {"node": {"type": "object", "properties": {
        "value": {"type": "integer", "minimum": 0, "maximum": 9},
        "children": {"type": "array", "maxItems": 2, "items": {"$ref": "#/$defs/node"}}},
        "required": ["value"], "additionalProperties": False}}, "$ref": "#/$defs/node"},
    "linked_list": {"definitions": {"cell": {"type": "object", "properties": {
        "head": {"type": "integer", "minimum": -50, "maximum": 50},
        "tail": {"anyOf": [{"$ref": "#/definitions/cell"}, {"type": "null"}]}},
        "required": ["head", "tail"], "additionalProperties": False}}, "$ref": "#/definitions/cell"},
    "optional_fields": {"type": "object", "properties": {
        "a": {"type": "integer", "minimum": 0, "maximum": 1000}, "b": SHORT, "c": {"type": "boolean"},
        "d": {"type": "null"}}, "required": ["a"], "additionalProperties": False},
    "nullable_union": {"type": "object", "properties": {"nickname": {"type": ["string", "null"], "maxLength": 16},
                                                         "score": {"type": ["integer", "null"], "minimum": 0, "maximum": 10}},
                       "required": ["nickname", "score"], "additionalProperties": False},
    "one_of_shapes": {"oneOf": [
        {"type": "object", "properties": {"kind": {"const": "circle"}, "r": {"type": "integer", "minimum": 1, "maximum": 100}},
         "required": ["kind", "r"], "additionalProperties": False},
        {"type": "object", "properties": {"kind": {"const": "square"}, "side": {"type": "integer", "minimum": 1, "maximum": 100}},
         "required": ["kind", "side"], "additionalProperties": False}]},
    "tuple": {"type": "array", "prefixItems": [{"type": "string", "maxLength": 10}, {"type": "integer", "minimum": 0, "maximum": 9},
                                               {"type": "boolean"}], "minItems": 3, "maxItems": 3},
    "matrix": {"type": "array", "minItems": 2, "maxItems": 2,
               "items": {"type": "array", "minItems": 2, "maxItems": 2, "items": {"type": "integer", "minimum": -9, "maximum": 9}}},
    "color": {"type": "object", "properties": {"hex": {"type": "string", "pattern": "^#[0-9a-f]{6}$"},
                                               "name": {"enum": ["red", "green", "blue", "other"]}},
              "required": ["hex", "name"], "additionalProperties": False},
    "phone_book": {"type": "array", "maxItems": 3, "items": {"type": "object", "properties": {
        "name": NAME, "phone": {"type": "string", "pattern": "^\\+[0-9]{7,12}$"}},
        "required": ["name", "phone"], "additionalProperties": False}},
    "product": {"type": "object", "properties": {
        "sku": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{3}$"}, "price_cents": {"type": "integer", "minimum": 1, "maximum": 99999},
        "in_stock": {"type": "boolean"}, "category": {"enum": ["book", "toy", "food"]}},
        "required": ["sku", "price_cents", "in_stock", "category"], "additionalProperties": False},
    "ip_entry": {"type": "object", "properties": {"host": NAME, "ip": {"type": "string", "format": "ipv4"}},
                 "required": ["host", "ip"], "additionalProperties": False},
    "time_slot": {"type": "object", "properties": {"day": {"enum": ["mon", "tue", "wed", "thu", "fri"]},
                                                   "at": {"type": "string", "format": "time"}},
                  "required": ["day", "at"], "additionalProperties": False},
    "all_of_merge": {"allOf": [
        {"type": "object", "properties": {"id": {"type": "integer", "minimum": 1, "maximum": 999}, "label": SHORT},
         "required": ["id"], "additionalProperties": False},
        {"required": ["label"]},
        {"properties": {"id": {"maximum": 50}}}]},
    "enum_mixed": {"enum": ["auto", 1, 2, None, True]},
    "const_version": {"type": "object", "properties": {"version": {"const": "v1"}, "payload": SHORT},
                      "required": ["version", "payload"], "additionalProperties": False},
    "bounded_strings": {"type": "array", "minItems": 2, "maxItems": 4, "items": {"type": "string", "minLength": 2, "maxLength": 5}},
    "classification": {"type": "object", "properties": {
        "labels": {"type": "array", "minItems": 1, "maxItems": 3, "items": {"enum": ["spam", "ham", "promo", "urgent"]}},
        "reason": SHORT}, "required": ["labels", "reason"], "additionalProperties": False},
    "rating": {"type": "integer", "minimum": 1, "maximum": 5},
    "boolean_answer": {"type": "boolean"},
    "coordinates": {"type": "object", "properties": {"lat_e4": {"type": "integer", "minimum": -900000, "maximum": 900000},
                                                     "lon_e4": {"type": "integer", "minimum": -1800000, "maximum": 1800000}},
                    "required": ["lat_e4", "lon_e4"], "additionalProperties": False},
    "recipe": {"type": "object", "properties": {
        "title": SHORT, "servings": {"type": "integer", "minimum": 1, "maximum": 12},
        "steps": {"type": "array", "minItems": 1, "maxItems": 3, "items": SHORT}},
        "required": ["title", "servings", "steps"], "additionalProperties": False},
    "nested_config": {"type": "object", "properties": {
        "server": {"type": "object", "properties": {"port": {"type": "integer", "minimum": 1024, "maximum": 65535},
                                                    "tls": {"type": "boolean"}},
                   "required": ["port", "tls"], "additionalProperties": False},
        "mode": {"enum": ["dev", "prod"]}}, "required": ["server", "mode"], "additionalProperties": False},
    "scores": {"type": "object", "properties": {"math": {"type": "integer", "minimum": 0, "maximum": 20},
                                                "art": {"type": "integer", "minimum": 0, "maximum": 20},
                                                "music": {"type": "integer", "minimum": 0, "maximum": 20}},
               "required": ["math"], "additionalProperties": False},
}

# Recursive schemas let a sampled output nest until max_tokens: their prompts show a
# short example, as a caller of a real extraction pipeline would.
PROMPTS = {
    "linked_list": 'A linked list of two numbers, as JSON: {"head": 3, "tail": {"head": 7, "tail": null}}. '
                   'Now another one with two numbers:',
    "tree": 'A tree of two nodes, as JSON: {"value": 1, "children": [{"value": 2}]}. Now another tree of two nodes:',
}

assert len(CORPUS) >= 30, len(CORPUS)
