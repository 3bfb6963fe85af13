#!/usr/bin/env python3
"""Portability lint: the Linux-only patterns that once broke the Apple build (issue 16).

CI builds and tests on Linux only, so nothing else would notice when one of these comes back:

- `posix_spawn_file_actions_t()` / `posix_spawnattr_t()`: opaque pointers on Darwin, set by their
  `_init` function into an optional (`var x: posix_spawnattr_t? = nil`).
- `pthread_t` kept in a value: a pointer on Darwin, not Sendable.
- `/proc`, `timerfd`, `prctl`: Linux's.
- `%N` (nanoseconds of GNU `date`): BSD `date` prints an `N`.
- `Int(...)` of a 64-bit count handed to Dispatch (`.nanoseconds(Int(x))`) or to `timespec`
  (`tv_sec: Int(x)`): `Int` is 32-bit on watchOS (arm64_32) and traps; saturate or stay 64-bit.
- `weak let` (Swift 6.2, SE-0481) while Package.swift declares an older tools version.

Each is allowed inside a Linux-only branch: `#if os(Linux)`, `#if canImport(Glibc)` (or Musl,
Android), or the `#else` of `#if canImport(Darwin)` / `#if os(macOS)`.

usage: portability-lint.py [--self-test] [ROOT]   (ROOT: the package, default: this script's ../)
Exit status 1 when anything is found.
"""
import os
import re
import sys

LINUX = re.compile(r"os\((Linux|Android)\)|canImport\((Glibc|Musl|Android)\)")
DARWIN = re.compile(r"canImport\(Darwin\)|os\((macOS|iOS|tvOS|watchOS|visionOS)\)")

# (pattern, message, allowed in a Linux-only branch)
RULES = [
    (re.compile(r"posix_spawn(_file_actions|attr)_t\(\)"),
     "spawn types are opaque pointers on Darwin: declare `var x: posix_spawnattr_t? = nil` there", True),
    (re.compile(r"\bpthread_t\b"), "pthread_t is a pointer on Darwin and not Sendable: record a thread id (UInt64)", True),
    (re.compile(r"/proc\b"), "/proc exists on Linux only", True),
    (re.compile(r"timerfd|\bprctl\b"), "timerfd and prctl are Linux's", True),
    (re.compile(r"%N"), "%N is GNU date's; BSD date prints 'N'", True),
    (re.compile(r"\.(nanoseconds|microseconds|milliseconds|seconds)\(\s*Int\((?!clamping:|truncatingIfNeeded:)"),
     "Int(...) of a 64-bit count traps on watchOS's 32-bit Int: saturate, or stay in 64 bits", False),
    (re.compile(r"tv_sec:\s*Int\((?!clamping:|truncatingIfNeeded:)"),
     "time_t and Int are 32-bit on watchOS: Int(clamping:) the seconds", False),
]
WEAK_LET = re.compile(r"\bweak\s+let\b")


def tools_version(root):
    try:
        with open(os.path.join(root, "Package.swift"), encoding="utf-8") as f:
            match = re.search(r"swift-tools-version:\s*(\d+)\.(\d+)", f.readline())
    except OSError:
        return None
    return (int(match.group(1)), int(match.group(2))) if match else None


def lint_text(path, text, tools):
    """Returns (path, line, message) for each finding in one Swift file."""
    findings = []
    # A stack of (condition, in_else): whether each enclosing #if branch is Linux-only.
    stack = []

    def linux_only():
        for condition, in_else in stack:
            if not in_else and LINUX.search(condition) and not DARWIN.search(condition):
                return True
            if in_else and DARWIN.search(condition) and not LINUX.search(condition):
                return True
        return False

    for number, line in enumerate(text.split("\n"), 1):
        stripped = line.strip()
        if stripped.startswith("#if "):
            stack.append((stripped[4:], False))
            continue
        if stripped.startswith("#elseif ") and stack:
            stack[-1] = (stripped[8:], False)
            continue
        if stripped.startswith("#else") and stack:
            stack[-1] = (stack[-1][0], True)
            continue
        if stripped.startswith("#endif") and stack:
            stack.pop()
            continue
        if stripped.startswith("//"):
            continue
        code = line.split("//", 1)[0] if "\"" not in line else line
        for pattern, message, allowed_on_linux in RULES:
            if pattern.search(code) and not (allowed_on_linux and linux_only()):
                findings.append((path, number, message))
        if WEAK_LET.search(code) and tools is not None and tools < (6, 2):
            findings.append((path, number, f"`weak let` needs Swift 6.2; Package.swift declares tools {tools[0]}.{tools[1]}"))
    return findings


def lint(root):
    tools = tools_version(root)
    findings = []
    for folder in ("Sources", "Tests"):
        for directory, _, files in os.walk(os.path.join(root, folder)):
            for name in sorted(files):
                if name.endswith(".swift"):
                    path = os.path.join(directory, name)
                    with open(path, encoding="utf-8") as f:
                        findings += lint_text(os.path.relpath(path, root), f.read(), tools)
    return findings


def self_test():
    """Each rule fires on the pattern it names and stays quiet where the pattern is allowed."""
    bad = {
        "var a = posix_spawnattr_t()": 1,
        "let r = Recorder<pthread_t>()": 1,
        'let s = try String(contentsOfFile: "/proc/self/status")': 1,
        'run(["date", "+%s.%N"])': 1,
        "source.schedule(deadline: .now() + .nanoseconds(Int(delay)))": 1,
        "timespec(tv_sec: Int(x / 1_000_000_000), tv_nsec: 0)": 1,
        "weak let w = owner": 1,
        "_ = ctk_timerfd_arm(fd, 1)": 1,
    }
    good = [
        "#if canImport(Darwin)\nvar a: posix_spawnattr_t? = nil\n#else\nvar a = posix_spawnattr_t()\n#endif",
        '#if os(Linux)\nlet s = try String(contentsOfFile: "/proc/self/status")\n#endif',
        "timespec(tv_sec: Int(clamping: x / 1_000_000_000), tv_nsec: 0)",
        "let d: Duration = .nanoseconds(delay)",
        "// a comment about /proc and pthread_t",
    ]
    failures = []
    for snippet, expected in bad.items():
        found = len(lint_text("bad.swift", snippet, (6, 0)))
        if found != expected:
            failures.append(f"expected {expected} finding(s), got {found}: {snippet}")
    for snippet in good:
        found = lint_text("good.swift", snippet, (6, 0))
        if found:
            failures.append(f"expected none, got {found}: {snippet!r}")
    if lint_text("weak.swift", "weak let w = owner", (6, 2)):
        failures.append("weak let is fine with tools 6.2")
    for failure in failures:
        print("self-test: " + failure)
    total = len(bad) + len(good) + 1
    print(f"portability lint self-test: {total - len(failures)} of {total} cases as expected")
    return not failures


def main(arguments):
    if arguments and arguments[0] == "--self-test":
        return 0 if self_test() else 1
    root = arguments[0] if arguments else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    findings = lint(root)
    for path, number, message in findings:
        print(f"{path}:{number}: {message}")
    print(f"portability lint: {len(findings)} finding(s)")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
