import Foundation

/// An SVG of overload runs, one panel per system: offered and fired timers a second, with the
/// ceiling dashed, and below them the lag p99 of each second's fires on a log scale.
enum OverloadPlot {
    static func svg(_ runs: [(system: String, run: Overload)]) -> String {
        let width = 900.0
        let left = 70.0
        let right = 20.0
        let plotWidth = width - left - right
        let rateHeight = 200.0
        let lagHeight = 120.0
        let panelHeight = 40 + rateHeight + 30 + lagHeight + 50
        let height = 40 + panelHeight * Double(max(runs.count, 1))
        var svg = """
            <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(height))" viewBox="0 0 \(Int(width)) \(Int(height))" font-family="Helvetica, Arial, sans-serif" font-size="12">
            <rect width="100%" height="100%" fill="white"/>
            <text x="\(left)" y="24" font-size="16" font-weight="bold">Overload: 1.5× the ceiling, then 0.5× (one instance, seconds from the first due time)</text>

            """
        for (index, entry) in runs.enumerated() {
            let top = 40 + panelHeight * Double(index)
            let series = entry.run.series
            let seconds = Double(max(series.count, 1))
            let highest = Double(max(series.map { max($0.offered, $0.fired) }.max() ?? 1, entry.run.ceiling * 2, 1))
            func x(_ second: Double) -> Double { (left + second / seconds * plotWidth).rounded(toPlaces: 1) }
            func y(_ rate: Double) -> Double { (top + 40 + rateHeight - rate / highest * rateHeight).rounded(toPlaces: 1) }
            let lagTop = top + 40 + rateHeight + 30
            // Lag from 1 ms to 100 s, log scale.
            func ly(_ milliseconds: Double) -> Double {
                let clamped = min(max(milliseconds, 1), 100_000)
                return (lagTop + lagHeight - log10(clamped) / 5 * lagHeight).rounded(toPlaces: 1)
            }
            svg += "<text x=\"\(left)\" y=\"\(top + 24)\" font-size=\"14\" font-weight=\"bold\">\(entry.system): ceiling \(entry.run.ceiling)/s</text>\n"
            // Rate axis.
            for step in 0...4 {
                let rate = highest * Double(step) / 4
                svg += "<line x1=\"\(left)\" y1=\"\(y(rate))\" x2=\"\(left + plotWidth)\" y2=\"\(y(rate))\" stroke=\"#eee\"/>\n"
                svg += "<text x=\"\(left - 6)\" y=\"\(y(rate) + 4)\" text-anchor=\"end\" fill=\"#333\">\(Int(rate))</text>\n"
            }
            svg += "<text x=\"\(left)\" y=\"\(top + 36)\" fill=\"#555\">timers a second: offered (grey), fired (blue); ceiling dashed</text>\n"
            let ceilingY = y(Double(entry.run.ceiling))
            svg += "<line x1=\"\(left)\" y1=\"\(ceilingY)\" x2=\"\(left + plotWidth)\" y2=\"\(ceilingY)\" stroke=\"#d62728\" stroke-dasharray=\"6 4\"/>\n"
            svg += polyline(series.map { (x(Double($0.second) + 0.5), y(Double($0.offered))) }, color: "#999")
            svg += polyline(series.map { (x(Double($0.second) + 0.5), y(Double($0.fired))) }, color: "#1f77b4")
            // Lag axis.
            for decade in 0...5 {
                let value = pow(10, Double(decade))
                svg += "<line x1=\"\(left)\" y1=\"\(ly(value))\" x2=\"\(left + plotWidth)\" y2=\"\(ly(value))\" stroke=\"#eee\"/>\n"
                let label = value >= 1000 ? "\(Int(value / 1000)) s" : "\(Int(value)) ms"
                svg += "<text x=\"\(left - 6)\" y=\"\(ly(value) + 4)\" text-anchor=\"end\" fill=\"#333\">\(label)</text>\n"
            }
            svg += "<text x=\"\(left)\" y=\"\(lagTop - 6)\" fill=\"#555\">lag p99 of the second's fires (log scale)</text>\n"
            svg += polyline(series.filter { $0.fired > 0 }.map { (x(Double($0.second) + 0.5), ly($0.lagP99)) }, color: "#ff7f0e")
            // Time axis.
            let bottom = lagTop + lagHeight
            var second = 0
            while Double(second) <= seconds {
                svg += "<text x=\"\(x(Double(second)))\" y=\"\(bottom + 16)\" text-anchor=\"middle\" fill=\"#333\">\(second)</text>\n"
                second += 5
            }
            svg += "<line x1=\"\(left)\" y1=\"\(bottom)\" x2=\"\(left + plotWidth)\" y2=\"\(bottom)\" stroke=\"#333\"/>\n"
        }
        return svg + "</svg>\n"
    }

    static func polyline(_ points: [(Double, Double)], color: String) -> String {
        let list = points.map { "\($0.0),\($0.1)" }.joined(separator: " ")
        return "<polyline fill=\"none\" stroke=\"\(color)\" stroke-width=\"2\" points=\"\(list)\"/>\n"
    }
}

extension Double {
    fileprivate func rounded(toPlaces places: Int) -> Double {
        let scale = pow(10, Double(places))
        return (self * scale).rounded() / scale
    }
}
