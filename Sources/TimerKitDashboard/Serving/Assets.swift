import Foundation

/// The dashboard's own style and script, served from its mount point (no CDN: the pages work on
/// machines that reach no network).
enum Assets {
    static func response(_ text: String, type: String) -> DashboardResponse {
        DashboardResponse(
            status: 200, headers: Page.securityHeaders.filter { $0.name != "Cache-Control" } + [("Content-Type", type), ("Cache-Control", "max-age=300")],
            body: Data(text.utf8))
    }

    /// Refreshes `main` while the page is visible, every `data-refresh` milliseconds, by fetching
    /// the page again and swapping its `main` in; stops while a form field has the focus or text is
    /// selected. Without it, every page still works (reload it).
    static let script = """
        (function () {
          "use strict";
          var main = document.getElementById("main");
          if (!main || !main.dataset.refresh) { return; }
          var every = parseInt(main.dataset.refresh, 10);
          if (!(every > 0)) { return; }
          function busy() {
            var active = document.activeElement;
            if (active && /^(INPUT|SELECT|TEXTAREA)$/.test(active.tagName)) { return true; }
            var selection = window.getSelection && window.getSelection();
            return selection && selection.toString().length > 0;
          }
          function refresh() {
            if (document.visibilityState !== "visible" || busy()) { return; }
            fetch(window.location.href, { credentials: "same-origin", headers: { "Accept": "text/html" } })
              .then(function (response) { return response.ok || response.status === 404 ? response.text() : null; })
              .then(function (text) {
                if (text === null) { return; }
                var fresh = new DOMParser().parseFromString(text, "text/html").getElementById("main");
                var notice = document.getElementById("notice");
                if (fresh) {
                  main.innerHTML = fresh.innerHTML;
                  if (notice && !document.getElementById("notice")) { main.insertBefore(notice, main.firstChild); }
                  main.classList.remove("stale");
                }
              })
              .catch(function () { main.classList.add("stale"); });
          }
          window.setInterval(refresh, every);
        })();

        """

    static let css = """
        :root { --fg: #1d2330; --muted: #5f6b7a; --line: #e3e7ee; --bg: #f6f8fb; --card: #fff; --accent: #2f6fde;
          --scheduled: #2f6fde; --due: #b7791f; --running: #2b8a3e; --retrying: #c2410c; --parked: #c53030; --paused: #6b46c1; }
        * { box-sizing: border-box; }
        body { margin: 0; font: 15px/1.45 -apple-system, BlinkMacSystemFont, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
          color: var(--fg); background: var(--bg); }
        a { color: var(--accent); text-decoration: none; }
        a:hover { text-decoration: underline; }
        header.top { display: flex; flex-wrap: wrap; align-items: center; justify-content: space-between; gap: 8px;
          padding: 10px 20px; background: #1d2330; color: #fff; }
        header.top a { color: #dfe6f3; }
        .brand { font-weight: 700; color: #fff !important; }
        .brand span { font-weight: 400; opacity: .7; margin-left: 6px; }
        nav { display: flex; flex-wrap: wrap; gap: 14px; align-items: center; }
        button.link { background: none; border: 0; color: #dfe6f3; font: inherit; cursor: pointer; padding: 0; }
        form.inline { display: inline; margin: 0; }
        main { max-width: 1180px; margin: 0 auto; padding: 18px 20px 40px; }
        main.stale { opacity: .6; }
        h1 { font-size: 1.5rem; margin: 6px 0 10px; overflow-wrap: anywhere; }
        h2 { font-size: 1.1rem; margin: 26px 0 8px; }
        .heading { display: flex; flex-wrap: wrap; align-items: center; justify-content: space-between; gap: 10px; }
        .meta { color: var(--muted); }
        .cards { display: grid; grid-template-columns: repeat(auto-fit, minmax(120px, 1fr)); gap: 10px; margin: 14px 0; }
        .card { background: var(--card); border: 1px solid var(--line); border-left: 4px solid var(--accent); border-radius: 8px; padding: 10px 12px; color: var(--fg); }
        .card .number { display: block; font-size: 1.6rem; font-weight: 700; }
        .card .label { color: var(--muted); }
        .card.due { border-left-color: var(--due); } .card.running { border-left-color: var(--running); }
        .card.retrying { border-left-color: var(--retrying); } .card.parked { border-left-color: var(--parked); } .card.paused { border-left-color: var(--paused); }
        .table-wrap { overflow-x: auto; background: var(--card); border: 1px solid var(--line); border-radius: 8px; }
        table { border-collapse: collapse; width: 100%; }
        th, td { text-align: left; padding: 7px 10px; border-bottom: 1px solid var(--line); vertical-align: top; }
        thead th { font-size: .8rem; text-transform: uppercase; letter-spacing: .03em; color: var(--muted); background: #fafbfd; }
        td.count, td.late, td.attempts { text-align: right; font-variant-numeric: tabular-nums; }
        td.error { color: var(--parked); max-width: 360px; overflow-wrap: anywhere; }
        td .key, a.key { overflow-wrap: anywhere; }
        #handlers th[scope="row"], #instances td { white-space: nowrap; }
        .zero { color: #b3bac5; }
        .empty { color: var(--muted); text-align: center; }
        .badge { display: inline-block; padding: 1px 8px; border-radius: 10px; font-size: .8rem; background: #e9eef7; color: var(--fg); }
        .badge.scheduled { background: #e5eefc; color: var(--scheduled); } .badge.due { background: #fdf3e1; color: var(--due); }
        .badge.running, .badge.completed, .badge.alive { background: #e3f4e8; color: var(--running); }
        .badge.retrying, .badge.failed { background: #fdebe1; color: var(--retrying); }
        .badge.parked, .badge.gone { background: #fbe5e5; color: var(--parked); } .badge.paused { background: #efe7fb; color: var(--paused); }
        .button, button { display: inline-block; padding: 5px 12px; border-radius: 6px; border: 1px solid var(--line); background: var(--card);
          color: var(--fg); font: inherit; cursor: pointer; }
        .button:hover, button:hover { border-color: var(--accent); text-decoration: none; }
        button.danger { background: var(--parked); border-color: var(--parked); color: #fff; }
        .actions { display: flex; flex-wrap: wrap; gap: 8px; }
        .notice { background: #e3f4e8; border: 1px solid #b7e1c4; border-radius: 8px; padding: 9px 12px; margin-bottom: 12px; overflow-wrap: anywhere; }
        .notice.failed, .error { background: #fbe5e5; border-color: #f1b9b9; color: #7f1d1d; }
        p.error { border: 1px solid #f1b9b9; border-radius: 8px; padding: 9px 12px; }
        form.filters { display: flex; flex-wrap: wrap; gap: 10px; align-items: flex-end; margin: 10px 0 14px; }
        label { display: flex; flex-direction: column; gap: 3px; font-size: .85rem; color: var(--muted); }
        input, select { font: inherit; padding: 5px 8px; border: 1px solid #cfd6e1; border-radius: 6px; background: #fff; color: var(--fg); min-width: 0; }
        form.confirm, form.login { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 16px; max-width: 560px; }
        form.confirm .question { overflow-wrap: anywhere; font-size: 1.05rem; }
        form.login { display: flex; flex-direction: column; gap: 12px; }
        dl.fields { display: grid; grid-template-columns: max-content 1fr; gap: 6px 16px; background: var(--card); border: 1px solid var(--line);
          border-radius: 8px; padding: 12px 16px; }
        dl.fields dt { color: var(--muted); } dl.fields dd { margin: 0; overflow-wrap: anywhere; }
        pre#payload { background: #0f1420; color: #e6edf7; padding: 12px; border-radius: 8px; overflow-x: auto; white-space: pre-wrap; overflow-wrap: anywhere; }
        ul.why { margin: 4px 0; padding-left: 20px; color: var(--muted); }
        svg.chart { width: 100%; height: auto; background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 10px; }
        svg.chart text { font-size: 12px; fill: var(--fg); } svg.chart .value { fill: var(--muted); }
        svg.chart .p99 { fill: #f2b8a0; } svg.chart .median { fill: var(--accent); }
        .paging { display: flex; gap: 16px; }
        @media (max-width: 640px) {
          main { padding: 12px 10px 30px; }
          dl.fields { grid-template-columns: 1fr; } dl.fields dt { margin-top: 6px; }
          th, td { padding: 6px 7px; }
        }

        """
}
