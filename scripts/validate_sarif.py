#!/usr/bin/env python3
"""Validate SARIF logs against a copy of the official SARIF 2.1.0 JSON schema.

The schema is not kept in this repository; scripts/sarif-schema.sh fetches
the pinned official file (sha256-checked) and prints its path:

    python3 scripts/validate_sarif.py "$(scripts/sarif-schema.sh)" out.sarif [more.sarif ...]

Needs the `jsonschema` package. Exits 0 when every log is valid, 1 when any
is not (each violation is printed with its JSON path), 2 on bad usage.
The Rust tests run the same check (crates/cake-diag/tests/sarif.rs, with
CAKE_SARIF_SCHEMA naming the schema, as scripts/test.sh does).
"""

import json
import sys


def main(argv):
    if len(argv) < 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    try:
        import jsonschema
    except ImportError:
        print("validate_sarif.py needs the jsonschema package (pip install jsonschema)", file=sys.stderr)
        return 2

    with open(argv[1], encoding="utf-8") as f:
        schema = json.load(f)
    validator_class = jsonschema.validators.validator_for(schema)
    validator_class.check_schema(schema)
    validator = validator_class(schema)

    failed = False
    for path in argv[2:]:
        with open(path, encoding="utf-8") as f:
            log = json.load(f)
        errors = sorted(validator.iter_errors(log), key=lambda e: list(e.absolute_path))
        for error in errors:
            where = "/".join(str(p) for p in error.absolute_path) or "(root)"
            print(f"{path}: {where}: {error.message}")
        if errors:
            failed = True
        else:
            print(f"{path}: valid SARIF 2.1.0")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
