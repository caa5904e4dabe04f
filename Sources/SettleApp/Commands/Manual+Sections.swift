/// The man page's ENVIRONMENT and EXAMPLES: every variable settle reads (ManualPageTests finds
/// each `environment["…"]` in the sources here), and the commands a first day and an ordinary
/// day use.
extension Manual {
    static let environment = """
        .SH ENVIRONMENT
        .TP
        .B SETTLE_CONFIG
        the configuration when no \\fB\\-\\-config\\fR is given (else /etc/settle/settle.json); \\fBsettle simulator\\fR
        reads a configuration only when it or \\fB\\-\\-config\\fR names one
        .TP
        .B CREDENTIALS_DIRECTORY
        where secret files (*_file) are looked for first, as systemd's LoadCredential= passes them
        .TP
        .BR SUDO_USER ", " USER ", " LOGNAME
        the first one set names the operator in an order's history for retry, assign, resolve, transfer and redeliver
        (\\fBsudo settle ...\\fR records who ran sudo)
        .TP
        .BR NOTIFY_SOCKET ", " WATCHDOG_USEC ", " WATCHDOG_PID
        \\fBsettle run\\fR speaks sd_notify (READY, STATUS, WATCHDOG, RELOADING, STOPPING) when systemd sets them
        .TP
        .BR LISTEN_FDS ", " LISTEN_PID
        \\fBsettle run\\fR takes the notification listener systemd passed (settle.socket) instead of
        notifications.listen
        .TP
        .B JOURNAL_STREAM
        when it names standard error, log lines carry their priority for journald (<N>) instead of a time stamp
        .TP
        .BR https_proxy ", " http_proxy ", " no_proxy
        requests to the stores go through a proxy as libcurl reads these
        .TP
        .BR MALLOC_ARENA_MAX ", " GLIBC_TUNABLES
        settle keeps glibc's malloc to two arenas a core unless one of these sets a bound (MALLOC_ARENA_MAX, or
        glibc.malloc.arena_max in GLIBC_TUNABLES), which then stands
        .TP
        .BR SETTLE_ORDER_ID ", " SETTLE_IDEMPOTENCY_KEY ", " SETTLE_EXIT_ALREADY_GRANTED ", " SETTLE_BATCH
        set by settle for the delivery and revoke commands, which get a clean environment: these, PATH, LANG, TZ and
        the names in delivery.environment, nothing else
        .PP
        settle never colours its output, so NO_COLOR changes nothing.

        """

    static let examples = """
        .SH EXAMPLES
        A test setup with a purchase of each store the simulator plays, settled against it:
        .PP
        .nf
        .RS
        settle simulator \\-\\-init ./sim
        settle simulator \\-\\-listen 127.0.0.1:8700 \\-\\-config ./sim/settle.json \\-\\-script ./sim/plans.json &
        settle enqueue \\-\\-config ./sim/settle.json \\-\\-order o\\-1001 \\-\\-user u\\-42 \\e
            \\-\\-product com.example.game.coins100 \\-\\-receipt\\-file ./sim/receipt.b64
        settle reconcile \\-\\-config ./sim/settle.json
        settle status \\-\\-config ./sim/settle.json o\\-1001
        .RE
        .fi
        .PP
        An ordinary day with the installed daemon:
        .PP
        .nf
        .RS
        settle check\\-config                   # is the configuration ready?
        settle status \\-\\-check                 # OK and 0, or what is wrong and 69
        settle status \\-\\-state needs_attention # the orders waiting for a person
        settle retry o\\-1001                   # try one of them again now
        printf '%s\\en' "$PASSWORD" | settle web\\-passwd alice >> /etc/settle/credentials/web\\-users
        .RE
        .fi

        """
}
