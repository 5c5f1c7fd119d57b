#!/usr/bin/env python3
"""Writes a JUnit XML report (what scripts/summarize.py counts) for checks
that are not gtest, lit or pytest: the fuzz runs and the sanitizer builds.

    junit.py OUT SUITE < cases

Each line of standard input is one testcase, tab-separated:
    NAME  pass|fail  MESSAGE  [LOG]
MESSAGE goes into the failure (or, for a pass, into system-out); the last
80 lines of the file LOG, when given, follow it.
"""

import re
import sys
import xml.etree.ElementTree as ET

# Characters XML 1.0 cannot hold (sanitizer logs carry colour escapes, fuzz
# logs bytes of inputs).
NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def tail(path, lines=80):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-lines:])
    except OSError as err:
        return f"(no log: {err})\n"


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    out, suite_name = argv[1], argv[2]
    suite = ET.Element("testsuite", name=suite_name)
    failures = tests = 0
    for line in sys.stdin:
        line = line.rstrip("\n")
        if not line:
            continue
        fields = line.split("\t")
        while len(fields) < 4:
            fields.append("")
        name, status, message, log = fields[:4]
        tests += 1
        case = ET.SubElement(suite, "testcase", classname=suite_name,
                             name=name)
        text = NOT_XML.sub("?", message + "\n" + (tail(log) if log else ""))
        message = NOT_XML.sub("?", message)
        if status == "pass":
            ET.SubElement(case, "system-out").text = text
        else:
            failures += 1
            failure = ET.SubElement(case, "failure", message=message)
            failure.text = text
    suite.set("tests", str(tests))
    suite.set("failures", str(failures))
    ET.ElementTree(suite).write(out, encoding="unicode", xml_declaration=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
