"""Reads a junit.xml as CI systems do and prints one JSON document.

Usage: python read_junit.py JUNIT_XML SCHEMA_XSD

First validates the file against SCHEMA_XSD (xmlschema), the JUnit shape
Jenkins and GitLab accept; then reads it with junitparser, the JUnit reader
many CI integrations use, and prints per testsuite the counts junitparser
reports from its attributes (tests, failures, errors, skipped) and every
testcase with its outcome as junitparser sees it.
"""

import json
import sys

import xmlschema
from junitparser import Error, Failure, JUnitXml, Skipped

junit, xsd = sys.argv[1], sys.argv[2]
xmlschema.XMLSchema(xsd).validate(junit)

suites = []
for suite in JUnitXml.fromfile(junit):
    cases = []
    for case in suite:
        kinds = [
            kind
            for cls, kind in ((Failure, "failure"), (Error, "error"), (Skipped, "skipped"))
            if any(isinstance(r, cls) for r in case.result)
        ]
        detail = case.result[0].text if case.result else None
        cases.append(
            {
                "name": case.name,
                "classname": case.classname,
                "outcome": kinds[0] if kinds else "passed",
                "text": detail,
            }
        )
    suites.append(
        {
            "name": suite.name,
            "tests": suite.tests,
            "failures": suite.failures,
            "errors": suite.errors,
            "skipped": suite.skipped,
            "cases": cases,
        }
    )
print(json.dumps({"valid": True, "suites": suites}))
