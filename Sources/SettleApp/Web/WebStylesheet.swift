/// The console's one stylesheet, served at /static/settle.css: the CSP allows no inline style.
enum WebStylesheet {
    static let path = "/static/settle.css"

    static let css = """
    :root { --ink: #1d2330; --muted: #5b6475; --line: #d9dee7; --bg: #f6f7f9; --card: #fff;
            --ok: #1f7a4d; --warn: #a35a00; --bad: #b3261e; --accent: #2456c7; }
    * { box-sizing: border-box; }
    body { margin: 0; font: 15px/1.45 "DejaVu Sans", system-ui, sans-serif; color: var(--ink); background: var(--bg); }
    header { background: #1d2330; color: #fff; padding: 10px 24px; display: flex; gap: 24px; align-items: center; flex-wrap: wrap; }
    header a { color: #fff; text-decoration: none; font-weight: 600; }
    header .brand { font-size: 18px; letter-spacing: .5px; }
    header form { margin-left: auto; display: flex; gap: 6px; }
    header input[type=search] { width: 320px; padding: 5px 8px; border-radius: 4px; border: 0; }
    .banner { background: #fdecea; color: #7a1c12; border-bottom: 2px solid #c0392b; padding: 8px 24px; }
    #retry-selected-form, #retry-page-form { margin: 8px 0; }
    .banner ul { margin: 4px 0 0 18px; padding: 0; }
    header .who { color: #c9d1e0; font-size: 13px; }
    main { max-width: 1180px; margin: 0 auto; padding: 18px 24px 48px; }
    h1 { font-size: 22px; margin: 8px 0 14px; }
    h2 { font-size: 17px; margin: 0 0 10px; }
    section.card { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 14px 18px; margin-bottom: 16px; }
    .grid { display: grid; grid-template-columns: repeat(auto-fit, minmax(340px, 1fr)); gap: 16px; }
    table { border-collapse: collapse; width: 100%; font-size: 14px; }
    th, td { text-align: left; padding: 5px 8px; border-bottom: 1px solid var(--line); vertical-align: top; }
    #history-table td:first-child { white-space: nowrap; }
    #history-table td:last-child { overflow-wrap: anywhere; }
    th { color: var(--muted); font-weight: 600; }
    td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
    dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 4px 16px; margin: 0; }
    dl.facts dt { color: var(--muted); }
    dl.facts dd { margin: 0; overflow-wrap: anywhere; }
    .verdict { font-size: 16px; }
    .verdict dt { font-weight: 600; color: var(--ink); }
    .muted { color: var(--muted); }
    .state { display: inline-block; padding: 0 8px; border-radius: 10px; font-size: 13px; background: #e8ebf1; }
    .state.finished { background: #dff3e8; color: var(--ok); }
    .state.needs_attention, .state.rejected { background: #fbe4e2; color: var(--bad); }
    .state.pending, .state.verifying, .state.delivering { background: #fff1dc; color: var(--warn); }
    .bad { color: var(--bad); font-weight: 600; }
    .ok { color: var(--ok); }
    .notice { border-left: 4px solid var(--accent); background: #eef3fe; padding: 8px 12px; margin-bottom: 14px; }
    .refusal { border-left: 4px solid var(--bad); background: #fdeceb; padding: 8px 12px; margin-bottom: 14px; }
    pre { white-space: pre-wrap; overflow-wrap: anywhere; margin: 2px 0; font-size: 13px; }
    form.action { display: flex; gap: 8px; flex-wrap: wrap; align-items: center; margin: 6px 0; }
    form.action input[type=text], form.action select { padding: 4px 6px; }
    button { background: var(--accent); color: #fff; border: 0; border-radius: 4px; padding: 5px 12px; cursor: pointer; }
    a { color: var(--accent); }
    td a { white-space: nowrap; }
    td pre { font-size: 12px; }
    svg.chart { width: 100%; height: auto; }
    svg.chart .settled { fill: #9fb6ea; }
    svg.chart .recovered { fill: #1f7a4d; }
    svg.chart .axis { stroke: #9aa3b2; stroke-width: 1; }
    svg.chart text { font-size: 11px; fill: #5b6475; }
    .legend .swatch { display: inline-block; width: 10px; height: 10px; margin: 0 4px 0 12px; }
    .legend .settled { background: #9fb6ea; }
    .legend .recovered { background: #1f7a4d; }
    """
}
