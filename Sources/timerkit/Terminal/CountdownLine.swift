import TimerKit

/// What `timerkit countdown` shows for one tick: on a terminal, one line redrawn in place with a
/// progress bar; otherwise a plain line.
struct CountdownLine {
    var label: String?
    var color: Bool

    /// The plain line for pipes and files: `0:59 Tea`.
    func plain(_ tick: Countdown.Tick) -> String {
        [tick.formatted(), label].compactMap { $0 }.joined(separator: "  ")
    }

    /// The terminal line: `[██████░░░░░░]  0:42  Tea   p pause · q quit`, fitted to `columns`; at
    /// zero the keys are gone: `[████████████]  0:00  Tea   done`.
    func terminal(_ tick: Countdown.Tick, total: Duration, paused: Bool, columns: Int) -> String {
        let remaining = tick.formatted()
        let hint = tick.isFinished ? "done" : paused ? "paused · p resume · q quit" : "p pause · q quit"
        let labelText = label.map { "  \($0)" } ?? ""
        let fixed = 2 + 2 + remaining.count + labelText.count + 3 + hint.count
        let width = max(0, min(40, columns - fixed - 1))
        var line = ""
        if width >= 5 {
            let done = Self.fraction(done: total - tick.remaining, of: total)
            let filled = Int((done * Double(width)).rounded(.down))
            let bar = String(repeating: "█", count: filled) + String(repeating: "░", count: width - filled)
            line += "[" + paint(bar, paused ? Terminal.Escape.yellow : Terminal.Escape.green) + "]  "
        }
        line += remaining + labelText
        if columns - line.count - 3 >= hint.count || width >= 5 { line += "   " + paint(hint, Terminal.Escape.dim) }
        return Terminal.Escape.clearLine + line
    }

    private func paint(_ text: String, _ code: String) -> String {
        color ? code + text + Terminal.Escape.reset : text
    }

    /// `done / total`, clamped to 0...1.
    static func fraction(done: Duration, of total: Duration) -> Double {
        let whole = Double(DurationText.wholeNanoseconds(total))
        guard whole > 0 else { return 1 }
        return min(1, max(0, Double(DurationText.wholeNanoseconds(done)) / whole))
    }
}
