import SettleBase
import SettleModel

/// The man page, settle(1), generated from the same help texts the commands print, so the
/// two never disagree. `settle --generate-manual > settle.1`; the packages install it.
enum Manual {
    static func roff(commands: [SettleCommand.Subcommand], overview: String) -> String {
        var page = """
        .TH SETTLE 1 "" "settle \(SettleVersion.number)" "User Commands"
        .SH NAME
        settle \\- re-verify \(StoreNames.displayNames()) purchases and grant them exactly once
        .SH SYNOPSIS
        .B settle
        [\\fB\\-\\-config\\fR \\fIPATH\\fR] \\fICOMMAND\\fR [\\fIoptions\\fR]
        .SH DESCRIPTION
        .nf

        """
        page += escape(overview) + "\n.fi\n.SH COMMANDS\n"
        for command in commands {
            page += ".SS \(escape(command.name))\n.nf\n" + escape(command.help) + "\n.fi\n"
        }
        page += """
        .SH EXIT STATUS
        0 success; 64 usage error; 65 bad input data; 69 a store unavailable for the whole pass (or its breaker open);
        74 ledger I/O error or permission denied; 75 try again later; 78 configuration error.
        \(environment)\(examples).SH FILES
        .TP
        .I /etc/settle/settle.json
        the configuration (or \\fB$SETTLE_CONFIG\\fR)
        .TP
        .I /var/lib/settle/ledger.sqlite3
        the ledger (the configuration's \\fBledger\\fR)
        .SH SEE ALSO
        .BR systemctl (1),
        .BR journalctl (1),
        .BR sqlite3 (1);
        /usr/share/doc/settle/README.md and the guides in /usr/share/doc/settle/docs/ (one a store:
        \(StoreNames.displayNames()); operations, support); the alert rules and Grafana dashboard in /usr/share/settle/
        """
        return page
    }

    /// Text as roff shows it literally: backslashes doubled, a leading dot or quote guarded.
    static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "\\", with: "\\e").split(separator: "\n", omittingEmptySubsequences: false).map { line in
            line.hasPrefix(".") || line.hasPrefix("'") ? "\\&" + line : String(line)
        }.joined(separator: "\n")
    }
}
