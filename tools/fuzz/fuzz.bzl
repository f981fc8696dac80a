"""overseer_fuzz_test: a libFuzzer target that is also a regression test.

    overseer_fuzz_test(
        name = "state_file_fuzz",
        srcs = ["state_file_fuzz.cc"],     # defines LLVMFuzzerTestOneInput
        deps = [":state_file"],
    )

Its corpus is the package's testdata/fuzz/<name>/ (seeds, and every input that once
crashed it). In the normal build the test replays that corpus (tools/fuzz/standalone_main.cc),
so each crash found stays fixed; under --config=fuzz (./dev fuzz) the same target links
libFuzzer's main and explores from the corpus. Tagged "fuzz_target" for ./dev fuzz.
"""

def overseer_fuzz_test(name, srcs, deps = [], **kwargs):
    corpus = "testdata/fuzz/" + name
    native.cc_test(
        name = name,
        srcs = srcs,
        deps = deps + select({
            "//tools/fuzz:fuzzing": [],
            "//conditions:default": ["//tools/fuzz:standalone_main"],
        }),
        linkopts = select({
            "//tools/fuzz:fuzzing": ["-fsanitize=fuzzer"],
            "//conditions:default": [],
        }),
        data = native.glob([corpus + "/**"]),
        args = [native.package_name() + "/" + corpus],
        tags = ["fuzz_target"] + kwargs.pop("tags", []),
        **kwargs
    )
