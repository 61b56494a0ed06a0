#!/usr/bin/env python3
"""Flatten the conformance vector files into one line per vector for the C
runner (tests/c/conformance.c), so that the C side needs no JSON parser.

This script only changes the notation; it knows nothing about operations and
computes no expectation. Each output line is tab-separated key=value pairs:

  group=<file group>  id=...  op=...  left.producer_id=5  expect.ok=true ...

- Nested objects become dotted paths; list items get their index
  (records.0.offset); a list of strings (categories_allowed) is comma-joined.
- Text fields (role, member, name, key, text, holder) are always given as
  <field>_hex, the UTF-8 bytes in hex: the vector's own _hex companion when
  present, else the hex of the text. A null text is "<field>=null".
- null is "null", booleans "true"/"false", numbers and 64-bit decimal strings
  as written. Descriptions are dropped.
"""
import json
import sys

TEXT = {"role", "member", "name", "key", "text", "holder"}


def emit(path, value, out):
    if isinstance(value, dict):
        for k, v in value.items():
            if k in ("description", "categories_by_reference"):
                continue
            if k in TEXT and k + "_hex" in value:
                continue  # the _hex companion is authoritative
            if k in TEXT and isinstance(v, str):
                out.append((path + k + "_hex", v.encode("utf-8").hex()))
                continue
            emit(path + k, v, out) if not isinstance(v, dict) and not isinstance(v, list) else emit(path + k + ".", v, out)
    elif isinstance(value, list):
        if all(isinstance(x, str) for x in value):
            out.append((path.rstrip("."), ",".join(value)))
        else:
            for i, v in enumerate(value):
                if isinstance(v, (dict, list)):
                    emit(path + str(i) + ".", v, out)
                else:
                    emit(path + str(i), v, out)
    else:
        if value is None:
            s = "null"
        elif value is True:
            s = "true"
        elif value is False:
            s = "false"
        else:
            s = str(value)
        if any(c in s for c in "\t\n\r=") or not s.isprintable():
            sys.exit("flatten_vectors: cannot flatten %s=%r" % (path, s))
        out.append((path, s))


def main(files):
    for name in files:
        with open(name, encoding="utf-8") as f:
            doc = json.load(f)
        for v in doc["vectors"]:
            out = [("group", doc["group"])]
            emit("", v, out)
            print("\t".join(k + "=" + s for k, s in out))


if __name__ == "__main__":
    main(sys.argv[1:])
