import Foundation
import SettleBase

/// What every console answer carries, and the few kinds of answer there are. The headers make
/// a page safe by construction: no script may run, no style but the console's stylesheet, no
/// form may post elsewhere, no other site may frame it, and nothing is cached or sent on.
enum WebResponse {
    static let securityHeaders = [
        HTTPHeader("Content-Security-Policy",
                   "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'"),
        HTTPHeader("X-Content-Type-Options", "nosniff"),
        HTTPHeader("Referrer-Policy", "no-referrer"),
        HTTPHeader("Cache-Control", "no-store"),
        HTTPHeader("X-Frame-Options", "DENY"),
    ]

    static func html(_ status: Int, _ page: Markup, extra: [HTTPHeader] = []) -> HTTPServerResponse {
        HTTPServerResponse(status: status, headers: securityHeaders + [HTTPHeader("Content-Type", "text/html; charset=utf-8")] + extra,
                           body: Data(page.html.utf8))
    }

    static func json(_ status: Int, _ value: JSONValue) -> HTTPServerResponse {
        HTTPServerResponse(status: status, headers: securityHeaders + [HTTPHeader("Content-Type", "application/json")],
                           body: Data((value.serialized(pretty: true) + "\n").utf8))
    }

    static func text(_ status: Int, _ message: String, extra: [HTTPHeader] = []) -> HTTPServerResponse {
        HTTPServerResponse(status: status, headers: securityHeaders + [HTTPHeader("Content-Type", "text/plain; charset=utf-8")] + extra,
                           body: Data((message + "\n").utf8))
    }

    /// 303 See Other: after a POST, the browser GETs `location`.
    static func seeOther(_ location: String) -> HTTPServerResponse {
        HTTPServerResponse(status: 303, headers: securityHeaders + [HTTPHeader("Location", location)], body: Data())
    }

    static func stylesheet() -> HTTPServerResponse {
        HTTPServerResponse(status: 200, headers: securityHeaders + [HTTPHeader("Content-Type", "text/css; charset=utf-8")],
                           body: Data(WebStylesheet.css.utf8))
    }
}
