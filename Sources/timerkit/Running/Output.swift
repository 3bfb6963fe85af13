#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Unbuffered output: each line goes out with one `write(2)`, so lines from the tool, its timer's
/// thread and a child never interleave mid-line, and a pipe sees each line when it is written.
enum Output {
    static func line(_ text: String) { write(text + "\n", to: STDOUT_FILENO) }

    static func error(_ text: String) { write(text + "\n", to: STDERR_FILENO) }

    /// Writes without a newline (the terminal's redrawn line).
    static func raw(_ text: String) { write(text, to: STDOUT_FILENO) }

    /// Writes to standard error without a newline (a question before its answer).
    static func errorRaw(_ text: String) { write(text, to: STDERR_FILENO) }

    private static func write(_ text: String, to descriptor: Int32) {
        var bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeMutableBytes { buffer in
                #if canImport(Glibc)
                Glibc.write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                #else
                Darwin.write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                #endif
            }
            if written < 0 {
                if errno == EINTR { continue }
                return
            }
            offset += written
        }
    }
}
