#!/usr/bin/env python3
"""test-summary.py BUILDDIR... - one line over meson's test logs of every
build directory given: "N passed, N failed, N skipped". Lists each failed
test first. Exits 1 when any test failed or none ran."""
import json
import os
import sys

passed = failed = skipped = 0
failures = []
for build in sys.argv[1:]:
    log = os.path.join(build, "meson-logs", "testlog.json")
    if not os.path.exists(log):
        print(f"test-summary: no test log in {build}", file=sys.stderr)
        failed += 1
        continue
    with open(log) as f:
        for line in f:
            t = json.loads(line)
            result = t.get("result")
            if result in ("OK", "EXPECTEDFAIL"):
                passed += 1
            elif result == "SKIP":
                skipped += 1
            else:
                failed += 1
                failures.append(f"{build}: {t.get('name')} ({result})")

for f in failures:
    print(f"FAILED {f}")
print(f"{passed} passed, {failed} failed, {skipped} skipped")
sys.exit(1 if failed or passed == 0 else 0)
