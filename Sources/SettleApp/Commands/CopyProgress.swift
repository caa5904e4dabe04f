import Foundation

/// The progress line of `settle ledger copy` on a terminal: one line on standard error,
/// rewritten in place as rows go ("orders: 420,000 rows, 61,000 a second"). Nothing when
/// standard error is not a terminal (a log, a pipe): there it would be noise.
final class CopyProgress: @unchecked Sendable {
    private let write: @Sendable (String) -> Void
    /// The table being copied and when it started (the previous table's last rows): the rate
    /// is of that table's rows.
    private var table = ""
    private var started = Date()
    private var last = Date()
    private var shown = false

    /// A progress line when standard error is a terminal; nil otherwise.
    static func onTerminal(_ context: CommandContext) -> CopyProgress? {
        isatty(STDERR_FILENO) == 1 ? CopyProgress(write: context.standardError) : nil
    }

    init(write: @escaping @Sendable (String) -> Void) { self.write = write }

    func update(table: String, rows: Int) {
        let now = Date()
        if table != self.table {
            self.table = table
            started = last
        }
        last = now
        let seconds = max(now.timeIntervalSince(started), 0.001)
        write("\r\u{1B}[K\(table): \(rows.formatted()) rows, \(Int(Double(rows) / seconds).formatted()) a second")
        shown = true
    }

    /// Clears the line, so the report that follows starts on a clean one.
    func end() {
        if shown { write("\r\u{1B}[K") }
        shown = false
    }
}
