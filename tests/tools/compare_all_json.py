#!/usr/bin/env python3
"""Compares two `kvlab all --format json` reports, ignoring what depends on timing.

    tests/tools/compare_all_json.py BEFORE.json AFTER.json [BEFORE_AGAIN.json]

A refactoring of the checks must leave every report at its defaults as it was. Wall-clock
figures (seconds, tokens/s, measured speedups) change from run to run; they are recognized two
ways: a metric key naming a time or rate and a table whose title starts with "timing" (the output
contract), and, when a second report of the old binary is given, any field that differs between
the two old reports. Expectation rows are matched by their quantity, so a row added or removed
reads as one line. Prints each remaining difference as "check: path: before -> after" and exits
1 when there is one, 0 otherwise, and 2 (one line) when a file is not such a report.
"""
import json
import re
import sys

TIMING_KEY = re.compile(r"seconds|tok_s|tokens_per_s|speedup_measured|cost_ratio_measured|wall|_ms$")


def flatten(value, path, out):
    if isinstance(value, dict):
        for key, item in value.items():
            flatten(item, f"{path}.{key}" if path else key, out)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            flatten(item, f"{path}[{i}]", out)
    else:
        out[path] = value
    return out


def keyed(result):
    result = dict(result)
    result["tables"] = [t for t in result.get("tables", []) if not t.get("title", "").startswith("timing")]
    result["expectations"] = {e["quantity"]: e for e in result.get("expectations", [])}
    return result


def by_check(report):
    return {r["check"]: flatten(keyed(r), "", {}) for r in report["results"]}


def main(argv):
    if len(argv) >= 2 and argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0
    if len(argv) not in (3, 4):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    reports = []
    for name in argv[1:]:
        try:
            with open(name, encoding="utf-8") as f:
                reports.append(by_check(json.load(f)))
        except (OSError, ValueError, KeyError, TypeError) as e:
            print(f"compare_all_json: {name}: not a readable `kvlab all --format json` report ({e})",
                  file=sys.stderr)
            return 2
    before, after = reports[0], reports[1]
    again = reports[2] if len(reports) == 3 else {}
    differences = 0
    for check in sorted(set(before) | set(after)):
        if check not in after or check not in before:
            print(f"{check}: only in {'before' if check in before else 'after'}")
            differences += 1
            continue
        old, new, old2 = before[check], after[check], again.get(check, {})
        rows_gone = {p.rsplit(".", 1)[0] for p in old if p.startswith("expectations.")} - \
                    {p.rsplit(".", 1)[0] for p in new if p.startswith("expectations.")}
        rows_new = {p.rsplit(".", 1)[0] for p in new if p.startswith("expectations.")} - \
                   {p.rsplit(".", 1)[0] for p in old if p.startswith("expectations.")}
        for row in sorted(rows_gone):
            print(f"{check}: row removed: {row[len('expectations.'):]}")
        for row in sorted(rows_new):
            print(f"{check}: row added: {row[len('expectations.'):]}")
        differences += len(rows_gone) + len(rows_new)
        for path in sorted(set(old) | set(new)):
            if TIMING_KEY.search(path) or (path in old2 and old2.get(path) != old.get(path)):
                continue
            if path.rsplit(".", 1)[0] in rows_gone | rows_new:
                continue
            if old.get(path) != new.get(path):
                print(f"{check}: {path}: {old.get(path)!r} -> {new.get(path)!r}")
                differences += 1
    print(f"{differences} difference(s) outside timing fields")
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
