#!/usr/bin/env python3
"""Fails when a dependency points up the layers of docs/design.md section 1.

Reads `bazel query --output=graph --nograph:factored` of the non-test rules on stdin
and checks every edge between packages; then checks every #include of the non-test
sources under the working directory the same way. A package may depend on its own
layer's package and on lower layers only; packages of one layer (the summary writer
and the checkpoint store) may not depend on each other.
"""
import os
import re
import sys

# (package prefix, layer), bottom first. The longest matching prefix wins.
LAYERS = [
    ("third_party", 0),
    ("proto", 1),
    ("core", 2),
    ("summary_writer", 3),
    ("checkpoint_store", 3),
    ("worker", 4),
    ("master", 5),
    ("server", 5.5),
    ("client/graph", 6.0),
    ("client/session", 6.1),
    ("client/summary", 6.2),
    ("client/training", 6.3),
    ("testing", 7),
    ("examples", 8),
    ("bench", 9),
    ("tests", 9),
    ("deploy", 9),
    ("tools", 9),
]


def layer_of(package):
    best = None
    for prefix, layer in LAYERS:
        if package == prefix or package.startswith(prefix + "/"):
            if best is None or len(prefix) > len(best[0]):
                best = (prefix, layer)
    return best


def check(src_pkg, dst_pkg, what, problems):
    src, dst = layer_of(src_pkg), layer_of(dst_pkg)
    if src is None or dst is None or src[0] == dst[0]:
        return
    if dst[1] >= src[1]:
        problems.append("%s: %s (layer %s) must not depend on %s (layer %s)" %
                        (what, src[0], src[1], dst[0], dst[1]))


def main():
    problems = []
    edges = 0
    for line in sys.stdin:
        m = re.match(r'\s*"//([^:"]*):[^"]*"\s*->\s*"//([^:"]*):[^"]*"', line)
        if not m:
            continue
        edges += 1
        check(m.group(1), m.group(2), line.strip().replace('"', ""), problems)
    if edges == 0:
        sys.exit("check_layers: no dependency edges on stdin (did bazel query fail?)")
    files = 0
    include = re.compile(r'^\s*#\s*include\s+"([^"]+)/[^/"]+"', re.M)
    for root, dirs, names in os.walk("."):
        dirs[:] = [d for d in dirs if not d.startswith((".", "bazel-")) and d != "testing"]
        for name in names:
            if not name.endswith((".cc", ".h")) or name.endswith(("_test.cc", "_test_util.h")):
                continue
            path = os.path.join(root, name)[2:]
            files += 1
            with open(path, encoding="utf-8") as f:
                for inc in include.findall(f.read()):
                    check(os.path.dirname(path), inc, "%s includes %s/" % (path, inc), problems)
    for p in problems:
        print("layering violation: " + p)
    print("check_layers: %d dependency edges and the includes of %d files checked, %d violations" %
          (edges, files, len(problems)))
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
