import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A password typed at a terminal, as passwd(1) asks for it: the prompt on standard error, what
/// is typed not echoed (termios ECHO off, restored afterwards, also when the person presses
/// Ctrl-C), asked twice so a typo is not hashed into the users file.
enum TerminalPassword {
    enum Outcome: Equatable {
        case entered(String)
        /// The two entries differ.
        case differ
        /// End of input before a line.
        case ended
    }

    /// The terminal's settings while echo is off, for the signal handler to put back.
    nonisolated(unsafe) private static var saved = termios()

    /// Whether standard input is a terminal (else the password is read from it as a line).
    static var isTerminal: Bool { isatty(STDIN_FILENO) == 1 }

    /// Prompts on standard error, reads two lines from the terminal on standard input with echo
    /// off, and compares them.
    static func ask(_ prompt: String, again: String) -> Outcome {
        guard tcgetattr(STDIN_FILENO, &saved) == 0 else { return .ended }
        var quiet = saved
        quiet.c_lflag &= ~tcflag_t(ECHO)
        quiet.c_lflag |= tcflag_t(ECHONL)
        // Ctrl-C or a kill while echo is off would leave the shell typing blind.
        let restoreAndExit: @convention(c) (Int32) -> Void = { signal in
            tcsetattr(STDIN_FILENO, TCSANOW, &TerminalPassword.saved)
            _exit(128 + signal)
        }
        let previous = [SIGINT, SIGTERM, SIGHUP, SIGQUIT].map { ($0, Glibc.signal($0, restoreAndExit)) }
        defer {
            tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved)
            for (number, handler) in previous { _ = Glibc.signal(number, handler) }
        }
        guard tcsetattr(STDIN_FILENO, TCSAFLUSH, &quiet) == 0 else { return .ended }
        write(prompt)
        guard let first = readLine() else { return .ended }
        write(again)
        guard let second = readLine() else { return .ended }
        return first == second ? .entered(first) : .differ
    }

    private static func write(_ text: String) {
        let bytes = Array(text.utf8)
        _ = bytes.withUnsafeBytes { Glibc.write(STDERR_FILENO, $0.baseAddress, $0.count) }
    }

    /// One line from standard input, byte by byte so nothing past it is consumed; nil at end.
    private static func readLine() -> String? {
        var bytes: [UInt8] = []
        var byte: UInt8 = 0
        while true {
            let n = read(STDIN_FILENO, &byte, 1)
            if n < 0 && errno == EINTR { continue }
            guard n == 1 else { return bytes.isEmpty ? nil : String(decoding: bytes, as: UTF8.self) }
            if byte == UInt8(ascii: "\n") { break }
            bytes.append(byte)
        }
        if bytes.last == UInt8(ascii: "\r") { bytes.removeLast() }
        return String(decoding: bytes, as: UTF8.self)
    }
}
