import Foundation

/// An SVG of the precision scenario's lateness per peer, drawn by the benchmark itself: a box plot
/// (min, p25, p50, p75, p99, max) and the cumulative distribution, both on a log scale of
/// microseconds.
enum Plot {
    static let palette = ["#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf", "#7f7f7f"]

    static func precisionSVG(_ results: [Result]) -> String {
        let series = results.filter { $0.scenario == .precision && $0.status == .ok && !$0.samples.isEmpty }
            .map { (name: $0.peer, distribution: Distribution($0.samples.map { max($0, 0.1) }), count: $0.samples.count) }
        let width = 960.0
        let left = 190.0
        let right = 30.0
        let plotWidth = width - left - right
        let rowHeight = 34.0
        let boxTop = 70.0
        let boxHeight = rowHeight * Double(max(series.count, 1))
        let cdfTop = boxTop + boxHeight + 80
        let cdfHeight = 320.0
        let height = cdfTop + cdfHeight + 70 + 18 * Double((series.count + 2) / 3)

        let highest = series.map { $0.distribution.max }.max() ?? 1000
        let lowDecade = floor(log10(max(series.map { $0.distribution.min }.min() ?? 1, 0.1)))
        let highDecade = max(ceil(log10(max(highest, 10))), lowDecade + 1)
        func x(_ microseconds: Double) -> Double {
            let clamped = min(max(microseconds, pow(10, lowDecade)), pow(10, highDecade))
            return rounded(left + (log10(clamped) - lowDecade) / (highDecade - lowDecade) * plotWidth)
        }

        var svg = """
            <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(height))" viewBox="0 0 \(Int(width)) \(Int(height))" font-family="Helvetica, Arial, sans-serif" font-size="12">
            <rect width="100%" height="100%" fill="white"/>
            <text x="\(left)" y="28" font-size="16" font-weight="bold">Lateness of a 10 ms repeating timer (precision scenario)</text>
            <text x="\(left)" y="46" fill="#555">Actual time the handler ran minus its deadline, µs, log scale; every run's fires pooled.</text>
            <text x="\(left)" y="61" fill="#555">Box: p25–p75, bar: p50, ◆: p99, whiskers: min–max.</text>

            """

        func axis(top: Double, bottom: Double) {
            var decade = lowDecade
            while decade <= highDecade {
                let value = pow(10, decade)
                let px = x(value)
                svg += "<line x1=\"\(px)\" y1=\"\(top)\" x2=\"\(px)\" y2=\"\(bottom)\" stroke=\"#ddd\"/>\n"
                svg += "<text x=\"\(px)\" y=\"\(bottom + 16)\" text-anchor=\"middle\" fill=\"#333\">\(label(value))</text>\n"
                if decade < highDecade {
                    for step in 2...9 {
                        let minor = x(value * Double(step))
                        svg += "<line x1=\"\(minor)\" y1=\"\(top)\" x2=\"\(minor)\" y2=\"\(bottom)\" stroke=\"#f2f2f2\"/>\n"
                    }
                }
                decade += 1
            }
            svg += "<line x1=\"\(left)\" y1=\"\(bottom)\" x2=\"\(left + plotWidth)\" y2=\"\(bottom)\" stroke=\"#333\"/>\n"
        }

        // Box plot.
        axis(top: boxTop, bottom: boxTop + boxHeight)
        for (index, entry) in series.enumerated() {
            let color = palette[index % palette.count]
            let d = entry.distribution
            let mid = rounded(boxTop + rowHeight * (Double(index) + 0.5))
            svg += "<text x=\"\(left - 8)\" y=\"\(mid - 2)\" text-anchor=\"end\" font-weight=\"bold\">\(entry.name)</text>\n"
            svg +=
                "<text x=\"\(left - 8)\" y=\"\(mid + 11)\" text-anchor=\"end\" fill=\"#555\" font-size=\"10\">p50 \(short(d.median)) · p99 \(short(d.quantile(0.99))) µs</text>\n"
            svg += "<line x1=\"\(x(d.min))\" y1=\"\(mid)\" x2=\"\(x(d.max))\" y2=\"\(mid)\" stroke=\"\(color)\"/>\n"
            for end in [d.min, d.max] {
                svg += "<line x1=\"\(x(end))\" y1=\"\(mid - 6)\" x2=\"\(x(end))\" y2=\"\(mid + 6)\" stroke=\"\(color)\"/>\n"
            }
            let p25 = x(d.quantile(0.25))
            let p75 = x(d.quantile(0.75))
            svg +=
                "<rect x=\"\(p25)\" y=\"\(mid - 10)\" width=\"\(max(p75 - p25, 1))\" height=\"20\" fill=\"\(color)\" fill-opacity=\"0.25\" stroke=\"\(color)\"/>\n"
            svg += "<line x1=\"\(x(d.median))\" y1=\"\(mid - 10)\" x2=\"\(x(d.median))\" y2=\"\(mid + 10)\" stroke=\"\(color)\" stroke-width=\"3\"/>\n"
            let p99 = x(d.quantile(0.99))
            svg += "<path d=\"M \(p99) \(mid - 6) L \(p99 + 6) \(mid) L \(p99) \(mid + 6) L \(p99 - 6) \(mid) Z\" fill=\"\(color)\"/>\n"
        }
        svg += "<text x=\"\(left + plotWidth / 2)\" y=\"\(boxTop + boxHeight + 36)\" text-anchor=\"middle\" fill=\"#333\">lateness (µs)</text>\n"

        // Cumulative distribution.
        svg +=
            "<text x=\"\(left)\" y=\"\(cdfTop - 14)\" font-size=\"14\" font-weight=\"bold\">Cumulative distribution: fraction of fires at most this late</text>\n"
        axis(top: cdfTop, bottom: cdfTop + cdfHeight)
        for fraction in stride(from: 0.0, through: 1.0, by: 0.25) {
            let py = rounded(cdfTop + cdfHeight * (1 - fraction))
            svg += "<line x1=\"\(left)\" y1=\"\(py)\" x2=\"\(left + plotWidth)\" y2=\"\(py)\" stroke=\"#eee\"/>\n"
            svg += "<text x=\"\(left - 8)\" y=\"\(py + 4)\" text-anchor=\"end\" fill=\"#333\">\(Int(fraction * 100)) %</text>\n"
        }
        for (index, entry) in series.enumerated() {
            let color = palette[index % palette.count]
            let sorted = entry.distribution.sorted
            // At most 400 points per curve: every rank for small samples, evenly spaced ranks (and
            // the last) for large ones.
            var points: [String] = []
            let step = max(sorted.count / 400, 1)
            for rank in stride(from: 0, to: sorted.count, by: step).map({ $0 }) + [sorted.count - 1] {
                let fraction = Double(rank + 1) / Double(sorted.count)
                points.append(String(format: "%.1f,%.1f", x(sorted[rank]), cdfTop + cdfHeight * (1 - fraction)))
            }
            let dash = entry.name == "os-floor" ? " stroke-dasharray=\"5,3\"" : ""
            let widthAttribute = entry.name == "timerkit" ? "2.5" : "1.5"
            svg += "<polyline fill=\"none\" stroke=\"\(color)\" stroke-width=\"\(widthAttribute)\"\(dash) points=\"\(points.joined(separator: " "))\"/>\n"
        }
        svg += "<text x=\"\(left + plotWidth / 2)\" y=\"\(cdfTop + cdfHeight + 36)\" text-anchor=\"middle\" fill=\"#333\">lateness (µs)</text>\n"
        // Legend.
        for (index, entry) in series.enumerated() {
            let column = Double(index % 3)
            let row = Double(index / 3)
            let lx = left + column * 250
            let ly = cdfTop + cdfHeight + 56 + row * 18
            svg +=
                "<line x1=\"\(lx)\" y1=\"\(ly - 4)\" x2=\"\(lx + 24)\" y2=\"\(ly - 4)\" stroke=\"\(palette[index % palette.count])\" stroke-width=\"2.5\"/>\n"
            svg += "<text x=\"\(lx + 30)\" y=\"\(ly)\">\(entry.name) (\(entry.count) fires)</text>\n"
        }
        svg += "</svg>\n"
        // Float noise from arithmetic on coordinates (104.70000000000005): cut to one decimal.
        return svg.replacing(#/(\d+\.\d)\d{3,}/#) { String($0.output.1) }
    }

    /// One decimal is plenty for a pixel coordinate (and keeps the file small).
    static func rounded(_ value: Double) -> Double { (value * 10).rounded() / 10 }

    static func label(_ microseconds: Double) -> String {
        switch microseconds {
        case ..<1: String(format: "%.1f µs", microseconds)
        case ..<1000: "\(Int(microseconds)) µs"
        case ..<1_000_000: "\(Int(microseconds / 1000)) ms"
        default: "\(Int(microseconds / 1_000_000)) s"
        }
    }

    static func short(_ microseconds: Double) -> String {
        microseconds < 10 ? String(format: "%.1f", microseconds) : String(format: "%.0f", microseconds)
    }

    /// An SVG of the mtchurn scenario: aggregate pairs per second against threads, one line per
    /// peer (the median of its runs, with a bar for their range).
    static func scalingSVG(_ results: [Result]) -> String {
        let runs = results.filter { $0.scenario == .mtchurn && $0.status == .ok }
        var names: [String] = []
        for result in runs where !names.contains(result.peer) { names.append(result.peer) }
        let threadCounts = Array(Set(runs.compactMap { Int($0.parameter) })).sorted()
        let width = 960.0
        let height = 560.0
        let left = 80.0
        let right = 220.0
        let top = 70.0
        let bottom = 60.0
        let plotWidth = width - left - right
        let plotHeight = height - top - bottom
        let highest = runs.compactMap { $0.spread["pairs_per_s"]?.max ?? $0.number("pairs_per_s") }.max() ?? 1
        let ceiling = max(1, (highest / 1e6).rounded(.up))
        func x(_ threads: Int) -> Double {
            guard threadCounts.count > 1, let first = threadCounts.first, let last = threadCounts.last else { return left + plotWidth / 2 }
            return rounded(left + (log2(Double(threads)) - log2(Double(first))) / (log2(Double(last)) - log2(Double(first))) * plotWidth)
        }
        func y(_ pairs: Double) -> Double { rounded(top + plotHeight - pairs / 1e6 / ceiling * plotHeight) }

        var svg = """
            <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(height))" viewBox="0 0 \(Int(width)) \(Int(height))" font-family="Helvetica, Arial, sans-serif" font-size="12">
            <rect width="100%" height="100%" fill="white"/>
            <text x="\(left)" y="28" font-size="16" font-weight="bold">Schedule + cancel from T threads on one shared clock (mtchurn scenario)</text>
            <text x="\(left)" y="46" fill="#555">Aggregate million pairs per second against threads (log scale); median of the runs, bars: min–max.</text>

            """
        let step = ceiling <= 5 ? 0.5 : (ceiling <= 10 ? 1 : 2)
        var tick = 0.0
        while tick <= ceiling + 1e-9 {
            svg += "<line x1=\"\(left)\" y1=\"\(y(tick * 1e6))\" x2=\"\(left + plotWidth)\" y2=\"\(y(tick * 1e6))\" stroke=\"#e5e5e5\"/>\n"
            svg += "<text x=\"\(left - 8)\" y=\"\(y(tick * 1e6) + 4)\" text-anchor=\"end\">\(String(format: step < 1 ? "%.1f" : "%.0f", tick))</text>\n"
            tick += step
        }
        for threads in threadCounts {
            svg += "<line x1=\"\(x(threads))\" y1=\"\(top)\" x2=\"\(x(threads))\" y2=\"\(top + plotHeight)\" stroke=\"#e5e5e5\"/>\n"
            svg += "<text x=\"\(x(threads))\" y=\"\(top + plotHeight + 18)\" text-anchor=\"middle\">\(threads)</text>\n"
        }
        svg += "<text x=\"\(left + plotWidth / 2)\" y=\"\(height - 16)\" text-anchor=\"middle\">threads</text>\n"
        svg += "<text x=\"20\" y=\"\(top + plotHeight / 2)\" transform=\"rotate(-90 20 \(top + plotHeight / 2))\" text-anchor=\"middle\">M pairs/s</text>\n"
        for (slot, name) in names.enumerated() {
            let color = palette[slot % palette.count]
            let points = runs.filter { $0.peer == name }.compactMap { result -> (Int, Double, (min: Double, max: Double)?)? in
                guard let threads = Int(result.parameter), let pairs = result.number("pairs_per_s") else { return nil }
                return (threads, pairs, result.spread["pairs_per_s"])
            }.sorted { $0.0 < $1.0 }
            let path = points.map { "\(x($0.0)),\(y($0.1))" }.joined(separator: " ")
            svg += "<polyline points=\"\(path)\" fill=\"none\" stroke=\"\(color)\" stroke-width=\"2\"/>\n"
            for (threads, pairs, range) in points {
                if let range {
                    svg +=
                        "<line x1=\"\(x(threads))\" y1=\"\(y(range.min))\" x2=\"\(x(threads))\" y2=\"\(y(range.max))\" stroke=\"\(color)\" stroke-width=\"1\"/>\n"
                }
                svg += "<circle cx=\"\(x(threads))\" cy=\"\(y(pairs))\" r=\"3.5\" fill=\"\(color)\"/>\n"
            }
            let legendY = top + 10 + Double(slot) * 20
            svg +=
                "<line x1=\"\(left + plotWidth + 20)\" y1=\"\(legendY)\" x2=\"\(left + plotWidth + 44)\" y2=\"\(legendY)\" stroke=\"\(color)\" stroke-width=\"2\"/>\n"
            svg += "<text x=\"\(left + plotWidth + 50)\" y=\"\(legendY + 4)\">\(name)</text>\n"
        }
        return svg + "</svg>\n"
    }
}
