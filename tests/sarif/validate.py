#!/usr/bin/env python3
"""validate.py SCHEMA FILE...: check each JSON FILE against the JSON
Schema SCHEMA with python3-jsonschema (the validator class the schema's
"$schema" names).  Prints one line per error, "FILE: PATH: MESSAGE", and
exits 1 if any file is invalid, 2 if the validator is missing."""
import json
import sys

try:
    import jsonschema
except ImportError:
    print("validate.py: python3-jsonschema is not installed", file=sys.stderr)
    sys.exit(2)


def main():
    with open(sys.argv[1]) as f:
        schema = json.load(f)
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    validator = cls(schema)
    bad = 0
    for path in sys.argv[2:]:
        with open(path) as f:
            doc = json.load(f)
        for e in sorted(validator.iter_errors(doc), key=str):
            where = "/".join(str(p) for p in e.absolute_path)
            print("%s: %s: %s" % (path, where or "(top)", e.message))
            bad = 1
    sys.exit(bad)


if __name__ == "__main__":
    main()
