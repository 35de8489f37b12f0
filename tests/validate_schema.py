#!/usr/bin/env python3
"""Validate fabricbench result files against the JSON Schema in the repo.

usage: validate_schema.py SCHEMA FILE...   (exit 0 when every file validates)
"""
import json
import sys

import jsonschema


def main() -> int:
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    with open(sys.argv[1], encoding="utf-8") as f:
        schema = json.load(f)
    jsonschema.Draft7Validator.check_schema(schema)
    validator = jsonschema.Draft7Validator(schema)
    failed = 0
    for path in sys.argv[2:]:
        try:
            with open(path, encoding="utf-8") as f:
                doc = json.load(f)
        except (OSError, ValueError) as e:
            print(f"{path}: not readable JSON: {e}", file=sys.stderr)
            failed += 1
            continue
        errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.path))
        for e in errors[:10]:
            where = "/".join(str(p) for p in e.path) or "(root)"
            print(f"{path}: {where}: {e.message}", file=sys.stderr)
        if errors:
            failed += 1
        else:
            print(f"{path}: valid")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
