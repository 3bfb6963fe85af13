#!/usr/bin/env python3
"""Type-checks every ```swift block of README.md and the DocC catalogs against the built modules.

Each block is compiled as it is written, as the main file of a module of its own (top-level code
and `await` allowed), with `swiftc -typecheck` against `.build/<triple>/debug/Modules` — run it
after `swift build --build-tests`. A block that uses names it does not define (a fragment that
continues the one before it, or stands for code of the reader's) gets them from STUBS below, and
only those it uses: the context is written out here, not hidden in the page.

  .ci/doc-snippets.py              check every block; exit 1 on any failure
  .ci/doc-snippets.py --list       print the blocks found (file:line)
  .ci/doc-snippets.py --self-test  check that a block that does not compile is caught

A block that imports an Apple-only framework (SwiftUI) cannot be compiled on Linux: it is listed
as not checked here — by name, never counted as passing — and each page that has one shows the
same model code in a block that is checked.
"""
import concurrent.futures
import glob
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Names that fragments use without defining: a declaration for each, given to a block only when it
# uses the name and does not declare it itself.
STUBS = {
    "poller": "final class DocPoller: Sendable { func poll() {}; func invalidateAndWait() async {} }\nlet poller = DocPoller()",
    "database": "final class DocDatabase: Sendable { func close() {} }\nlet database = DocDatabase()",
    "api": "struct DocAPI: Sendable { func fetchProfile() async throws -> String { \"\" } }\nlet api = DocAPI()",
    "ConnectionID": "typealias ConnectionID = Int",
    "Connection": "struct Connection { let id = 1 }",
    "Request": "struct Request {}",
    "connection": "struct DocConnection: Sendable { let id = 1 }\nlet connection = DocConnection()",
    "close": "func close(_ id: Int) {}",
    "hosts": "let hosts = [\"a.example\", \"b.example\"]",
    "ping": "func ping(_ host: String) async throws {}",
    "run": "func run(_ query: String) {}",
    "redraw": "func redraw(_ fraction: Double) {}",
    "render": "func render<Frame>(_ frame: Frame) {}",
    "queries": "let queries = AsyncStream<String> { $0.finish() }",
    "offsets": "let offsets = AsyncStream<Double> { $0.finish() }",
    "results": "nonisolated(unsafe) var results: [String] = []",
    "find": "func find(_ query: String) async throws -> [String] { [] }",
    "updateHeader": "func updateHeader(_ offset: Double) {}",
    "morning": "let morning = Date().addingTimeInterval(3_600)",
    "userSeconds": "let userSeconds = 5.0",
    "timer": "import TimerKit\nlet timer = try! ScheduledTimer.repeating(every: .seconds(1)) { _, _ in }",
    "FakeAPI": (
        "import Synchronization\n"
        "final class FakeAPI: Sendable {\n"
        "    private let count = Mutex(0)\n"
        "    let readyAfter: Int\n"
        "    init(readyAfter: Int) { self.readyAfter = readyAfter }\n"
        "    var requests: Int { count.withLock { $0 } }\n"
        "    func isReady() async -> Bool { count.withLock { $0 += 1; return $0 >= readyAfter } }\n"
        "}"
    ),
    "SaleEnd": "struct SaleEnd: Codable, Sendable { var sale: String }",
    "closeSale": "func closeSale(_ sale: String, idempotencyKey: String) async throws {}",
    "eightPM": "let eightPM = Date().addingTimeInterval(3_600)",
    "secret": "let secret = \"secret\"",
    "configuration": (
        "import PostgresNIO\n"
        "let configuration = PostgresClient.Configuration(host: \"localhost\", username: \"app\", password: \"secret\", database: \"app\", tls: .disable)"
    ),
    "waitUntilReady": "func waitUntilReady(_ api: FakeAPI, every interval: Duration, clock: some Clock<Duration>) async throws {}",
}

# Blocks that continue an earlier block on the same page: (page, line) → line of the block whose
# declarations they use.
CONTINUES = {
    ("Sources/TimerKit/TimerKit.docc/Examples.md", 450): 426,
}

# The modules a block may import; every one is built by `swift build --build-tests`.
def find_blocks():
    files = ["README.md"] + sorted(glob.glob("Sources/*/*.docc/*.md"))
    for path in files:
        text = open(os.path.join(ROOT, path), encoding="utf-8").read()
        for match in re.finditer(r"```swift\n(.*?)```", text, re.S):
            line = text[: match.start()].count("\n") + 2
            yield path, line, match.group(1)


def declared(body, name):
    return re.search(r"\b(let|var|func|class|struct|enum|actor|typealias)\s+" + re.escape(name) + r"\b", body) is not None


def check(block, modules, module_maps, blocks):
    path, line, body = block
    with tempfile.TemporaryDirectory(prefix="doc-snippet-") as directory:
        stubs = [code for name, code in STUBS.items() if re.search(r"\b" + re.escape(name) + r"\b", body) and not declared(body, name)]
        if (path, line) in CONTINUES:
            earlier = CONTINUES[(path, line)]
            stubs += [text for page, start, text in blocks if page == path and start == earlier]
        sources = [os.path.join(directory, "main.swift")]
        # A fragment (no import of its own) reads as the pages present it: with TimerKit and
        # Foundation imported, and the test libraries when it uses them.
        implicit = []
        if not re.search(r"^import ", body, re.M):
            implicit = ["import Foundation", "import TimerKit"]
            if "VirtualClock" in body:
                implicit.append("import TimerKitTesting")
            if "@Test" in body or "#expect" in body:
                implicit.append("import Testing")
            if "Mutex" in body:
                implicit.append("import Synchronization")
        with open(sources[0], "w", encoding="utf-8") as file:
            file.write("".join(line + "; " for line in implicit) + body)
        if stubs:
            imports = sorted({l for code in stubs for l in code.splitlines() if l.startswith("import ")})
            declarations = [l for code in stubs for l in code.splitlines() if not l.startswith("import ")]
            sources.append(os.path.join(directory, "Context.swift"))
            with open(sources[1], "w", encoding="utf-8") as file:
                file.write("import Foundation\n" + "\n".join(imports + declarations) + "\n")
        command = ["swiftc", "-typecheck", "-swift-version", "6", "-module-name", "Snippet", "-I", modules]
        for module_map in module_maps:
            command += ["-Xcc", "-fmodule-map-file=" + module_map]
        result = subprocess.run(command + sources, capture_output=True, text=True)
        output = (result.stdout + result.stderr).replace(sources[0], f"{path}:{line}+")
        problems = [l for l in output.splitlines() if ": error:" in l or ": warning:" in l]
        return path, line, result.returncode == 0 and not problems, output


def main():
    blocks = list(find_blocks())
    if "--list" in sys.argv:
        for path, line, _ in blocks:
            print(f"{path}:{line}")
        return 0
    if "--self-test" in sys.argv:
        blocks = [("self-test", 1, "let ok = 1\n"), ("self-test", 2, "let wrong: Int = \"a\"\n"),
                  ("self-test", 3, "let debouncer = try Debouncer<String>(delay: .seconds(1)) { _ in }\ndebouncer.send(\"a\")\n")]
    debug = subprocess.run(["swift", "build", "--show-bin-path"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    modules = os.path.join(debug, "Modules")
    if not os.path.isdir(modules):
        print(f"doc-snippets: {modules} is missing: run `swift build --build-tests` first", file=sys.stderr)
        return 1
    module_maps = sorted(glob.glob(os.path.join(debug, "*.build", "module.modulemap")))
    # C targets of dependencies that SwiftPM builds without a module map of its own (they ship
    # one, as GRDB's SQLite and swift-atomics' shims do) keep it in their checkout.
    built = {os.path.basename(os.path.dirname(path))[: -len(".build")] for path in module_maps}
    for path in sorted(glob.glob(os.path.join(ROOT, ".build", "checkouts", "*", "Sources", "*", "module.modulemap"))
                       + glob.glob(os.path.join(ROOT, ".build", "checkouts", "*", "Sources", "*", "include", "module.modulemap"))):
        target = path.split(os.sep)[-2] if not path.endswith(os.path.join("include", "module.modulemap")) else path.split(os.sep)[-3]
        if target not in built:
            module_maps.append(path)
    failures = 0
    apple_only = [block for block in blocks if re.search(r"^import (SwiftUI|UIKit|AppKit)\b", block[2], re.M)]
    if sys.platform != "darwin":
        for path, line, _ in apple_only:
            print(f"not checked here (it needs Apple's SDK): {path}:{line}")
        blocks = [block for block in blocks if block not in apple_only]
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        for path, line, passed, output in pool.map(lambda block: check(block, modules, module_maps, blocks), blocks):
            if passed:
                continue
            failures += 1
            print(f"FAIL {path}:{line}\n{output}")
    if "--self-test" in sys.argv:
        # The first compiles; the second is a type error; the third calls a throwing method without try.
        passed = failures == 2
        print("doc-snippets: self-test " + ("passed" if passed else "FAILED"))
        return 0 if passed else 1
    print(f"doc-snippets: {len(blocks) - failures} of {len(blocks)} Swift blocks type-check as written")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
