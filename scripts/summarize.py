#!/usr/bin/env python3
"""Counts test results from JUnit-style XML reports (lit --xunit-xml-output,
gtest --gtest_output=xml, pytest --junitxml) and prints one line per suite
and a last line `N passed, N failed`. Exit status 1 if anything failed or a
named report is missing."""

import sys
import xml.etree.ElementTree as ET


def count(path):
    root = ET.parse(path).getroot()
    passed = failed = skipped = 0
    for case in root.iter("testcase"):
        kinds = {child.tag for child in case}
        if "failure" in kinds or "error" in kinds:
            failed += 1
        elif "skipped" in kinds:
            skipped += 1
        else:
            passed += 1
    return passed, failed, skipped


def main(argv):
    extra_failed = 0
    total_p = total_f = total_s = 0
    for arg in argv[1:]:
        if arg.startswith("--failed="):
            extra_failed += int(arg.split("=", 1)[1])
            continue
        name, _, path = arg.partition("=")
        try:
            p, f, s = count(path)
        except (OSError, ET.ParseError) as err:
            print(f"  {name}: no report ({err}); counted as 1 failure")
            p, f, s = 0, 1, 0
        print(f"  {name}: {p} passed, {f} failed, {s} skipped")
        total_p, total_f, total_s = total_p + p, total_f + f, total_s + s
    total_f += extra_failed
    line = f"{total_p} passed, {total_f} failed"
    if total_s:
        line += f", {total_s} skipped"
    print(line)
    return 1 if total_f else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
