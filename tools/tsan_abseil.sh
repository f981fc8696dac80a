#!/usr/bin/env bash
# Builds the installed Abseil's shared libraries with ThreadSanitizer, from Debian's
# source package of the installed version, into DIR/lib, under the installed libraries'
# file names:
#
#   tools/tsan_abseil.sh DIR      (./dev test --config=tsan runs it)
#
# Why: ThreadSanitizer sees the happens-before of a lock or an atomic only where the code
# that takes it is instrumented. Debian's Abseil is not, so every field that an
# absl::Mutex guards would be reported as a race, and so would the last owner's delete
# of an absl::Status shared between threads (its reference count is decremented in
# libabsl_status). Tests under --config=tsan run with LD_LIBRARY_PATH=DIR/lib, so that
# these libraries replace the installed ones for the test and every server it starts
# (gRPC's own absl::Mutex use included). Same source, same options.h, same SONAMEs:
# the ABI is the installed one's.
#
# Needs cmake, make and dpkg-dev (apt-get source unpacks with dpkg-source). The source
# comes from the Debian archives that apt already uses, through a private apt state
# (no change to the machine's apt configuration). Does nothing when DIR/lib already
# holds a build of the installed version.
set -euo pipefail

out=${1:?usage: tsan_abseil.sh DIR}
binary_pkg=$(dpkg-query -W -f='${Package}\n' 'libabsl2*' 2>/dev/null | head -n1)
[ -n "$binary_pkg" ] || { echo "tsan_abseil.sh: no libabsl package installed" >&2; exit 1; }
source_pkg=$(dpkg-query -W -f='${source:Package}' "$binary_pkg")
version=$(dpkg-query -W -f='${source:Version}' "$binary_pkg")
stamp="$out/lib/.built-from-$source_pkg-$version"
[ -f "$stamp" ] && exit 0

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# deb-src entries for the Debian archives apt uses (deb822 .sources files and one-line
# .list files alike).
apt_dir="$work/apt"
mkdir -p "$apt_dir/sources.list.d" "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial"
: > "$apt_dir/sources.list"
for f in /etc/apt/sources.list.d/*.sources; do
  [ -f "$f" ] && grep -qi '^URIs:.*debian' "$f" || continue
  sed 's/^Types:.*/Types: deb-src/' "$f" > "$apt_dir/sources.list.d/$(basename "$f")"
done
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
  [ -f "$f" ] || continue
  sed -n 's/^deb \(.*debian.*\)$/deb-src \1/p' "$f" >> "$apt_dir/sources.list"
done
apt_opts=(
  -o "Dir::Etc::SourceList=$apt_dir/sources.list"
  -o "Dir::Etc::SourceParts=$apt_dir/sources.list.d"
  -o "Dir::State::Lists=$apt_dir/lists"
  -o "Dir::Cache=$apt_dir/cache"
)
echo "tsan_abseil.sh: fetching Debian's source of $source_pkg $version" >&2
apt-get -q "${apt_opts[@]}" update >&2
(cd "$work" && apt-get -q "${apt_opts[@]}" source --only-source "$source_pkg=$version" >&2)
src=$(find "$work" -mindepth 1 -maxdepth 1 -type d -name "$source_pkg-*" | head -n1)
[ -n "$src" ] || { echo "tsan_abseil.sh: apt-get source unpacked nothing" >&2; exit 1; }

# Debian's own configuration (debian/rules): C++17, shared libraries, no NDEBUG.
echo "tsan_abseil.sh: building Abseil with -fsanitize=thread" >&2
flags="-O1 -g -fsanitize=thread"
cmake -S "$src" -B "$work/build" -DCMAKE_BUILD_TYPE=None -DCMAKE_CXX_STANDARD=17 \
  -DBUILD_SHARED_LIBS=ON -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" \
  -DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=thread >&2
cmake --build "$work/build" -j "$(nproc)" >&2

rm -rf "$out/lib.new"
mkdir -p "$out/lib.new"
find "$work/build" -name 'libabsl_*.so.*' -type l -exec cp -L {} "$out/lib.new/" \;
ls "$out/lib.new" | grep -q '^libabsl_synchronization\.so\.' \
  || { echo "tsan_abseil.sh: no libabsl_synchronization was built" >&2; exit 1; }
touch "$out/lib.new/.built-from-$source_pkg-$version"
rm -rf "$out/lib"
mv "$out/lib.new" "$out/lib"
echo "tsan_abseil.sh: $(ls "$out/lib" | wc -l) libraries in $out/lib" >&2
