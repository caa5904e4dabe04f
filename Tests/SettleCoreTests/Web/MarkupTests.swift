import XCTest
@testable import SettleApp

/// The one way pages are built: outside text is escaped, the source's own markup is not.
final class MarkupTests: XCTestCase {
    func testInterpolatedText_isEscaped_andMarkupIsInsertedAsItIs() {
        let id = "<script>alert('x') & \"y\"</script>"
        let link: Markup = "<a href=\"/orders/\(HTML.pathSegment(id))\">\(id)</a>"
        XCTAssertEqual(link.html, "<a href=\"/orders/%3Cscript%3Ealert%28%27x%27%29%20%26%20%22y%22%3C%2Fscript%3E\">"
                       + "&lt;script&gt;alert(&#39;x&#39;) &amp; &quot;y&quot;&lt;/script&gt;</a>")
        let inner: Markup = "<b>\(id)</b>"
        let outer: Markup = "<p>\(inner)</p>"
        XCTAssertEqual(outer.html, "<p><b>&lt;script&gt;alert(&#39;x&#39;) &amp; &quot;y&quot;&lt;/script&gt;</b></p>")
    }

    func testControlAndFormatCharacters_areShown_notPassedOn() {
        XCTAssertEqual(HTML.escape("a\u{1B}[31mb\u{202E}c\nd"), "a\\u{1b}[31mb\\u{202e}c\nd")
    }

    func testPathSegments_keepOnlyUnreservedCharacters() {
        XCTAssertEqual(HTML.pathSegment("o-1_a.b~c"), "o-1_a.b~c")
        XCTAssertEqual(HTML.pathSegment("a/b?c#d é"), "a%2Fb%3Fc%23d%20%C3%A9")
    }
}
