#!/usr/bin/env python3
"""Tests of clang_check.py's cache with the real clang++-14 (./dev check runs them first).

Each test lays out a small execution root (sources and a header), the aquery JSON of
their gcc compile actions, and runs clang_check.py on them twice or more, as ./dev check
does, reading what it parsed from its summary line.
"""

import json
import os
import re
import subprocess
import sys
import tempfile
import unittest
from collections import namedtuple

CHECK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "clang_check.py")
SUMMARY = re.compile(
    r"clang -Wthread-safety: (\d+) files checked \((\d+) unchanged since a clean check\), "
    r"(\d+) with errors"
)

# What a run of clang_check.py did: its exit code, its output, and its summary's counts.
Run = namedtuple("Run", "code out files unchanged failed")


class ClangCheckCacheTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory(prefix="clang_check_test.")
        self.root = os.path.join(self.dir.name, "execroot")
        self.cache = os.path.join(self.dir.name, "cache")
        os.makedirs(os.path.join(self.root, "pkg"))
        self.sources = []

    def tearDown(self):
        self.dir.cleanup()

    def write(self, path, text):
        with open(os.path.join(self.root, path), "w") as f:
            f.write(text)

    def add_source(self, path, text):
        self.write(path, text)
        self.sources.append(path)

    def run_check(self, cache=True, flags=()):
        """Runs clang_check.py on the sources compiled with `flags` as a gcc action would
        be; returns a Run."""
        actions = {
            "actions": [
                {"arguments": ["/usr/bin/gcc", "-I.", "-Wall", *flags, "-MD", "-MF", "x.d",
                               "-c", s, "-o", s + ".o"]}
                for s in self.sources
            ]
        }
        aquery = os.path.join(self.dir.name, "aquery.json")
        with open(aquery, "w") as f:
            json.dump(actions, f)
        args = [sys.executable, CHECK, aquery, self.root] + ([self.cache] if cache else [])
        result = subprocess.run(args, capture_output=True, text=True)
        match = SUMMARY.search(result.stdout)
        self.assertIsNotNone(match, result.stdout + result.stderr)
        files, unchanged, failed = (int(g) for g in match.groups())
        return Run(result.returncode, result.stdout, files, unchanged, failed)

    def test_clean_file_is_parsed_again_only_when_it_or_a_header_changes(self):
        self.write("pkg/a.h", "inline int A() { return 1; }\n")
        self.add_source("pkg/a.cc", '#include "pkg/a.h"\nint B() { return A(); }\n')
        self.add_source("pkg/b.cc", "int C() { return 2; }\n")
        run = self.run_check()
        self.assertEqual((run.code, run.files, run.unchanged, run.failed), (0, 2, 0, 0))
        self.assertEqual(self.run_check().unchanged, 2)

        self.write("pkg/a.h", "inline int A() { return 3; }\n")  # The header changes.
        run = self.run_check()
        self.assertEqual((run.code, run.unchanged), (0, 1))
        self.assertEqual(self.run_check().unchanged, 2)

        self.write("pkg/a.h", "inline int A() { return undeclared; }\n")  # It breaks.
        run = self.run_check()
        self.assertEqual((run.code, run.unchanged, run.failed), (1, 1, 1))
        self.assertIn("pkg/a.cc", run.out)
        self.assertIn("undeclared", run.out)
        # A failed file is never taken as clean, however often it is checked.
        run = self.run_check()
        self.assertEqual((run.code, run.unchanged, run.failed), (1, 1, 1))

        os.remove(os.path.join(self.root, "pkg/a.h"))  # Gone: parsed again, and fails.
        run = self.run_check()
        self.assertEqual((run.code, run.unchanged, run.failed), (1, 1, 1))
        self.assertIn("not found", run.out)

    def test_source_change_is_parsed_again(self):
        self.add_source("pkg/b.cc", "int C() { return 2; }\n")
        self.assertEqual(self.run_check().unchanged, 0)
        self.assertEqual(self.run_check().unchanged, 1)
        self.write("pkg/b.cc", "int C() { return 2 }\n")
        run = self.run_check()
        self.assertEqual((run.code, run.unchanged, run.failed), (1, 0, 1))
        self.assertIn("expected ';'", run.out)

    def test_file_with_a_warning_is_never_cached(self):
        self.add_source("pkg/w.cc", "int F() { int unused = 0; return 1; }\n")
        for _ in range(2):
            run = self.run_check()
            self.assertEqual((run.code, run.files, run.unchanged, run.failed), (0, 1, 0, 0))
            self.assertIn("unused", run.out)

    def test_without_a_cache_every_file_is_parsed(self):
        self.add_source("pkg/b.cc", "int C() { return 2; }\n")
        for _ in range(2):
            run = self.run_check(cache=False)
            self.assertEqual((run.code, run.files, run.unchanged), (0, 1, 0))
        self.assertFalse(os.path.exists(self.cache))

    def test_other_flags_are_another_entry(self):
        self.add_source("pkg/b.cc", "#ifdef X\nint C() { return 2 }\n#endif\n")
        self.assertEqual(self.run_check().code, 0)
        self.assertEqual(self.run_check().unchanged, 1)
        # The same bytes under -DX are a command never checked: parsed, and it fails.
        run = self.run_check(flags=["-DX"])
        self.assertEqual((run.code, run.unchanged, run.failed), (1, 0, 1))


if __name__ == "__main__":
    unittest.main()
