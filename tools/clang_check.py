#!/usr/bin/env python3
"""Compiles Overseer's C++ files with clang for its checks only (./dev check).

Usage: clang_check.py AQUERY_JSON EXECROOT

AQUERY_JSON is `bazel aquery --output=jsonproto 'mnemonic("CppCompile", //...)'` of the
normal (gcc) build; EXECROOT is `bazel info execution_root`, where the generated headers
the files include must exist already. Each compile action is rerun with clang++-14 and
-fsyntax-only, with the action's own flags (include paths, defines, -Wall -Wextra
-Werror) plus -Wthread-safety, so clang checks the ABSL_GUARDED_BY and
ABSL_EXCLUSIVE_LOCKS_REQUIRED annotations, which gcc ignores. Code that protoc generates
is skipped. Prints clang's diagnostics; exits 1 if any file has an error.
"""

import concurrent.futures
import json
import os
import subprocess
import sys

CLANG = "clang++-14"
EXTRA_FLAGS = ["-fsyntax-only", "-Wthread-safety"]
# gcc flags that clang does not know.
DROP_FLAGS = {"-fno-canonical-system-headers"}
# Flags followed by a value that only matter when an object is written.
DROP_WITH_VALUE = {"-MF", "-MQ", "-MT", "-o"}
DROP_ALONE = {"-MD", "-MMD", "-c"}


def clang_command(arguments):
    """The clang command for a gcc compile action's arguments, and its source file."""
    args = arguments[1:]  # Without the compiler.
    out, source, skip = [CLANG], None, False
    for i, arg in enumerate(args):
        if skip:
            skip = False
            continue
        if arg in DROP_WITH_VALUE:
            skip = True
            continue
        if arg in DROP_ALONE or arg in DROP_FLAGS or arg.startswith("-frandom-seed="):
            continue
        if i > 0 and args[i - 1] == "-c":
            source = arg
        out.append(arg)
    return out + EXTRA_FLAGS, source


def main():
    aquery_json, execroot = sys.argv[1], sys.argv[2]
    with open(aquery_json) as f:
        actions = json.load(f).get("actions", [])
    commands = {}
    for action in actions:
        command, source = clang_command(action["arguments"])
        if source is None or source.startswith("bazel-out/") or source.endswith(".pb.cc"):
            continue
        commands.setdefault(source, command)  # A source compiled twice is checked once.
    if not commands:
        print("clang_check.py: no compile actions found", file=sys.stderr)
        return 2

    def check(source):
        result = subprocess.run(commands[source], cwd=execroot, capture_output=True, text=True)
        return source, result.returncode, result.stderr

    failed = []
    workers = os.cpu_count() or 1
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        for source, code, stderr in pool.map(check, sorted(commands)):
            if stderr:
                sys.stdout.write(stderr)
            if code != 0:
                failed.append(source)
    print(f"clang -Wthread-safety: {len(commands)} files checked, {len(failed)} with errors")
    for source in failed:
        print(f"  {source}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
