#!/usr/bin/env python3
"""Compiles Overseer's C++ files with clang for its checks only (./dev check).

Usage: clang_check.py AQUERY_JSON EXECROOT [CACHE_DIR]

AQUERY_JSON is `bazel aquery --output=jsonproto 'mnemonic("CppCompile", //...)'` of the
normal (gcc) build; EXECROOT is `bazel info execution_root`, where the generated headers
the files include must exist already. Each compile action is rerun with clang++-14 and
-fsyntax-only, with the action's own flags (include paths, defines, -Wall -Wextra
-Werror) plus -Wthread-safety, so clang checks the ABSL_GUARDED_BY and
ABSL_EXCLUSIVE_LOCKS_REQUIRED annotations, which gcc ignores. Code that protoc generates
is skipped. Prints clang's diagnostics; exits 1 if any file has an error.

With CACHE_DIR, a file that passed clean (no diagnostic at all) is not parsed again
while nothing it was parsed from changed: the same clang (its --version), the same
command, and the same bytes in the source and in every file clang read for it (its
dependency list, which clang writes as it parses: -MD). A file that failed, or printed
a warning, is always parsed again. The entries are keyed by the command, which names
paths relative to EXECROOT, so checkouts of the same code share them.
"""

import concurrent.futures
import hashlib
import json
import os
import subprocess
import sys
import tempfile

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


class Cache:
    """Clean results of earlier runs in a directory: one file per command, holding the
    digest of what clang read and the list of those files."""

    def __init__(self, directory, execroot):
        self.directory = directory
        self.execroot = execroot
        os.makedirs(directory, exist_ok=True)
        version = subprocess.run([CLANG, "--version"], capture_output=True, text=True, check=True)
        self.clang = version.stdout
        self.hashes = {}  # Path -> sha256 of its bytes, or None if it cannot be read.

    def _entry(self, command):
        key = hashlib.sha256(json.dumps([self.clang, command]).encode()).hexdigest()
        return os.path.join(self.directory, key)

    def _hash(self, path):
        if path not in self.hashes:
            try:
                with open(os.path.join(self.execroot, path), "rb") as f:
                    self.hashes[path] = hashlib.sha256(f.read()).hexdigest()
            except OSError:
                self.hashes[path] = None
        return self.hashes[path]

    def _digest(self, deps):
        digest = hashlib.sha256()
        for path in deps:
            h = self._hash(path)
            if h is None:
                return None
            digest.update(f"{path}\0{h}\n".encode())
        return digest.hexdigest()

    def clean(self, command):
        """True when `command` passed clean and nothing it read has changed since."""
        try:
            with open(self._entry(command)) as f:
                lines = f.read().splitlines()
        except OSError:
            return False
        if len(lines) < 2:
            return False
        digest = self._digest(lines[1:])
        return digest is not None and digest == lines[0]

    def record(self, command, depfile):
        """Records that `command` passed clean, reading what it read from `depfile`."""
        with open(depfile) as f:
            # Make's syntax, "target: dep dep \<newline> dep ...": no path here has spaces.
            words = f.read().replace("\\\n", " ").split()
        deps = sorted(set(w for w in words[1:] if not w.endswith(":")))
        digest = self._digest(deps)
        if not deps or digest is None:
            return
        fd, tmp = tempfile.mkstemp(dir=self.directory)
        with os.fdopen(fd, "w") as f:
            f.write("\n".join([digest] + deps) + "\n")
        os.replace(tmp, self._entry(command))


def main():
    if len(sys.argv) not in (3, 4):
        print(__doc__, file=sys.stderr)
        return 2
    aquery_json, execroot = sys.argv[1], sys.argv[2]
    cache = Cache(sys.argv[3], execroot) if len(sys.argv) == 4 else None
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
    cached = set(s for s in commands if cache is not None and cache.clean(commands[s]))

    def check(source, depdir):
        command = commands[source]
        depfile = os.path.join(depdir, hashlib.sha256(source.encode()).hexdigest() + ".d")
        if cache is not None:
            command = command + ["-MD", "-MF", depfile]
        result = subprocess.run(command, cwd=execroot, capture_output=True, text=True)
        return source, result.returncode, result.stderr, depfile

    failed = []
    workers = os.cpu_count() or 1
    with tempfile.TemporaryDirectory(prefix="clang_check.") as depdir, \
            concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        to_check = sorted(s for s in commands if s not in cached)
        for source, code, stderr, depfile in pool.map(lambda s: check(s, depdir), to_check):
            if stderr:
                sys.stdout.write(stderr)
            if code != 0:
                failed.append(source)
            elif not stderr and cache is not None:
                cache.record(commands[source], depfile)
    print(
        f"clang -Wthread-safety: {len(commands)} files checked "
        f"({len(cached)} unchanged since a clean check), {len(failed)} with errors"
    )
    for source in failed:
        print(f"  {source}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
