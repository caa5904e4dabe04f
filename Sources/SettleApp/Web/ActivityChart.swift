import SettleBase
import SettleLedger

/// The overview's chart: orders settled (ended: finished or rejected) and recovered (delivered)
/// per hour over the last seven days, as inline SVG drawn on the server. No script, no image
/// fetched: the CSP allows neither, and the page needs neither.
enum ActivityChart {
    static let hours = 7 * 24
    static let barWidth = 5
    static let height = 150

    static func svg(_ settlements: [HourlySettlement], now: Int64) -> Markup {
        let lastHour = now - now % 3600
        let firstHour = lastHour - Int64(hours - 1) * 3600
        let byHour = Dictionary(settlements.map { ($0.hour, $0) }, uniquingKeysWith: { a, _ in a })
        let top = max(1, settlements.filter { $0.hour >= firstHour }.map(\.settled).max() ?? 1)
        let left = 40, width = hours * barWidth
        var bars: [Markup] = []
        var totals = (settled: 0, recovered: 0)
        for index in 0..<hours {
            let hour = firstHour + Int64(index) * 3600
            guard let entry = byHour[hour], entry.settled > 0 else { continue }
            totals.settled += entry.settled
            totals.recovered += entry.recovered
            let x = left + index * barWidth
            let settledHeight = max(1, entry.settled * height / top)
            let recoveredHeight = entry.recovered * height / top
            let label = "\(Timestamp.rfc3339(unixSeconds: hour)): \(entry.settled) settled, \(entry.recovered) recovered"
            bars.append("""
                <g><title>\(label)</title><rect class="settled" x="\(x)" y="\(10 + height - settledHeight)" width="\(barWidth - 1)" height="\(settledHeight)"/>\
                <rect class="recovered" x="\(x)" y="\(10 + height - recoveredHeight)" width="\(barWidth - 1)" height="\(recoveredHeight)"/></g>
                """)
        }
        var ticks: [Markup] = []
        for day in 0...7 {
            let hour = lastHour - Int64(7 - day) * 86400 + 3600
            let x = left + Int((hour - firstHour) / 3600) * barWidth
            let date = String(Timestamp.rfc3339(unixSeconds: hour).prefix(10).suffix(5))
            ticks.append("<line class=\"axis\" x1=\"\(x)\" y1=\"\(10 + height)\" x2=\"\(x)\" y2=\"\(15 + height)\"/>"
                         + "<text x=\"\(x)\" y=\"\(28 + height)\" text-anchor=\"middle\">\(date)</text>")
        }
        let chart: Markup = """
            <svg class="chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 \(left + width + 30) \(height + 36)" role="img" \
            aria-label="orders settled and recovered per hour over the last 7 days">
            <text x="\(left - 6)" y="18" text-anchor="end">\(top)</text><text x="\(left - 6)" y="\(10 + height)" text-anchor="end">0</text>
            <line class="axis" x1="\(left)" y1="\(10 + height)" x2="\(left + width)" y2="\(10 + height)"/>
            <line class="axis" x1="\(left)" y1="10" x2="\(left)" y2="\(10 + height)"/>
            \(bars)\(ticks)</svg>
            """
        return chart + """
            <p class="legend" id="chart-totals"><span class="swatch settled"></span>settled \(totals.settled)\
            <span class="swatch recovered"></span>recovered \(totals.recovered) <span class="muted">(per hour, UTC; settled: ended \
            finished or rejected; recovered: delivered)</span></p>
            """
    }
}
