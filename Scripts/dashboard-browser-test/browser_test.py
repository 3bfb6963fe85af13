#!/usr/bin/env python3
"""The durable-timer dashboard (`timerkit durable serve`) in a real browser: headless Chromium
driven by Selenium, against the real server with a fleet running beside it.

    python3 browser_test.py --url http://127.0.0.1:PORT --token TOKEN --marker PATH --shots DIR
                            [--timeout 30] [--chromium /usr/bin/chromium] [--chromedriver /usr/bin/chromedriver]

Scripts/run-dashboard-browser-test starts the database, the fleet (timerkit-dashboard-fleet, which
seeds the namespace) and the server, then runs this. It prints a numbered line per step and ends
with "browser: N passed, N failed"; it stops at the first check that fails, says why, saves
failure.png and failure.html in DIR, and exits 1. Screenshots of each page go to DIR.

Every wait is explicit (a condition polled for at most --timeout seconds; a page that shows the
fleet's state is reloaded while it waits), except the one step whose point is a pause: a paused
handler's repeating timer (every 2 s) must not run for 6 s.

The page contract it checks: every page has <main id="main"> and the nav links a#nav-overview,
a#nav-timers, a#nav-parked, a#nav-orphans and a#nav-login or #nav-logout (a POST form). The overview:
table#handlers with tr[data-handler], table#instances with tr[data-instance], svg#lag-chart,
span#clock-offset, action links in the handler rows. Lists (/timers, /orphans): form#filters with
select[name=status] and button#filter-button, table#timers with tr.timer[data-key] holding a.key,
td.status and td.handler, a#next-page while there are more. A timer's page (/timer?key=KEY):
h1#timer-key, dd#status, p#why-text, table#plan, table#history with tr.run (td.outcome; a
data-sequence attribute, the occurrence's sequence number, when present), pre#payload, or an
element #not-found. Actions: a.action[data-action=…] opens a confirm page (form#confirm,
button#confirm-button), whose answer shows div#notice. /login: form#login with input[name=token]
and button#login-button. POST /actions/retry refuses (403) a request without a session, and one
whose csrf field is wrong.
"""
import argparse
import os
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

from selenium import webdriver
from selenium.common.exceptions import (NoAlertPresentException, NoSuchElementException, StaleElementReferenceException, TimeoutException,
                                        UnexpectedAlertPresentException)
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

EXPECTED_HANDLERS = ["email.send", "invoice.charge", "report.daily", "legacy.cleanup"]
SCRIPT_KEY = "<script>alert(1)</script>"
IMG_KEY = '"><img src=x onerror=alert(1)>'
# Text in both XSS timers' payloads (their JSON may escape the quotes and slashes around it).
PAYLOAD_TEXTS = ["<script>alert(2)", "<img src=x onerror=alert(2)>"]
NAV = ["nav-overview", "nav-timers", "nav-parked", "nav-orphans"]
# The one fixed wait: longer than two periods of the paused timer (every 2 s).
PAUSE_OBSERVATION = 6


class Failed(Exception):
    """A check that did not hold; its text says what was expected and what was seen."""


class NoRedirect(urllib.request.HTTPRedirectHandler):
    """Answers a redirect as it is: a refusal that redirects to /login must not read as a 200."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


class BrowserTest:
    def __init__(self, args):
        self.base = args.url.rstrip("/")
        self.token = args.token
        self.marker = args.marker
        self.shots = args.shots
        self.timeout = args.timeout
        self.args = args
        self.driver = None
        self.passed = 0

    # MARK: The browser

    def make_driver(self, javascript=True):
        options = Options()
        options.binary_location = self.args.chromium
        for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1280,900", "--lang=en-US"):
            options.add_argument(flag)
        # An alert that an unescaped key opened stays open, for step 8 to find (the default
        # dismisses it and fails the next command instead).
        options.unhandled_prompt_behavior = "ignore"
        if not javascript:
            options.add_experimental_option("prefs", {"profile.managed_default_content_settings.javascript": 2})
        driver = webdriver.Chrome(options=options, service=Service(executable_path=self.args.chromedriver))
        driver.set_window_size(1280, 900)
        driver.set_page_load_timeout(max(60, self.timeout))
        return driver

    def wait(self, condition, what, timeout=None, driver=None):
        """Polls `condition(driver)` until it returns something true, and returns that. `what` (text,
        or a function that makes it when the wait fails) says what was expected."""
        timeout = timeout or self.timeout
        try:
            return WebDriverWait(driver or self.driver, timeout, poll_frequency=0.25,
                                 ignored_exceptions=(StaleElementReferenceException, NoSuchElementException)).until(condition)
        except TimeoutException:
            raise Failed(f"after {timeout:g} s: {what() if callable(what) else what}") from None

    def reloading(self, check, every=2.0, load=None):
        """A condition that holds when `check` does, and reloads the page (or calls `load`) every
        `every` seconds while it does not: the page shows the fleet's state as it was when it was
        rendered."""
        loaded = [time.monotonic()]

        def condition(driver):
            result = check(driver)
            if result:
                return result
            if time.monotonic() - loaded[0] >= every:
                if load:
                    load()
                else:
                    driver.refresh()
                    self.page_ready(driver)
                loaded[0] = time.monotonic()
            return False

        return condition

    def page_ready(self, driver=None):
        driver = driver or self.driver
        self.wait(lambda d: d.find_elements(By.CSS_SELECTOR, "main#main"),
                  lambda: f"{driver.current_url} (title {driver.title!r}) has no <main id=\"main\">", driver=driver)

    def get(self, path, driver=None):
        """Loads a page of the dashboard and checks its frame: <main id="main"> and the nav."""
        driver = driver or self.driver
        driver.get(self.base + path)
        self.page_ready(driver)
        self.check_nav(driver)

    def check_nav(self, driver=None):
        driver = driver or self.driver
        for ident in NAV:
            if not driver.find_elements(By.ID, ident):
                raise Failed(f"{driver.current_url}: no a#{ident} in the nav")
        if not driver.find_elements(By.ID, "nav-login") and not driver.find_elements(By.ID, "nav-logout"):
            raise Failed(f"{driver.current_url}: neither a#nav-login nor #nav-logout in the nav")

    def one(self, css, what=None, driver=None):
        """The element `css` selects, waited for."""
        return self.wait(lambda d: (d.find_elements(By.CSS_SELECTOR, css) or [None])[0], what or f"no {css} on {self.driver.current_url}",
                         driver=driver)

    @staticmethod
    def steady(read):
        """`read()`, again if a live update replaced the elements it was reading."""
        for _ in range(4):
            try:
                return read()
            except StaleElementReferenceException:
                time.sleep(0.2)
        return read()

    def text(self, css, driver=None):
        def read():
            elements = (driver or self.driver).find_elements(By.CSS_SELECTOR, css)
            return elements[0].text.strip() if elements else None
        return self.steady(read)

    def rows(self, driver=None):
        """The list's rows as (data-key, a.key's text, td.status's text, td.handler's text)."""
        def read():
            result = []
            for row in (driver or self.driver).find_elements(By.CSS_SELECTOR, "table#timers tr.timer"):
                def cell(css):
                    found = row.find_elements(By.CSS_SELECTOR, css)
                    return found[0].text.strip() if found else None
                result.append((row.get_dom_attribute("data-key"), cell("a.key"), cell("td.status"), cell("td.handler")))
            return result
        return self.steady(read)

    def click(self, css, what):
        """Clicks the element `css` selects, once there (found again if a live update replaced it)."""
        def condition(driver):
            found = driver.find_elements(By.CSS_SELECTOR, css)
            if not found:
                return False
            found[0].click()
            return True
        self.wait(condition, what)

    def click_key(self, key, what):
        """Clicks the a.key of the list's row for `key`."""
        def condition(driver):
            row = self.row_with_key(key)
            if row is None:
                return False
            row.find_element(By.CSS_SELECTOR, "a.key").click()
            return True
        self.wait(condition, what)

    def row_with_key(self, key, driver=None):
        for row in (driver or self.driver).find_elements(By.CSS_SELECTOR, "table#timers tr.timer"):
            if row.get_dom_attribute("data-key") == key:
                return row
        return None

    def shot(self, name, driver=None):
        path = os.path.join(self.shots, name)
        if not (driver or self.driver).save_screenshot(path):
            raise Failed(f"could not save the screenshot {path}")
        return name

    def no_alert(self, where):
        try:
            alert = self.driver.switch_to.alert
            text = alert.text
        except NoAlertPresentException:
            return
        raise Failed(f"{where}: an alert is open ({text!r}): markup from the data ran")

    def confirm(self, action, scope=None):
        """Clicks `a.action[data-action=ACTION]` (inside `scope`, a CSS selector, if given),
        confirms, and returns the notice's text."""
        css = f'a.action[data-action="{action}"]'
        self.click(f"{scope} {css}" if scope else css, f"no {css}{' in ' + scope if scope else ''} on {self.driver.current_url}")
        self.one("form#confirm", f"clicking {css} showed no form#confirm (at {self.driver.current_url})")
        self.check_nav()
        return self.confirm_form()

    def confirm_form(self):
        self.click("button#confirm-button", f"no button#confirm-button on {self.driver.current_url}")
        notice = self.one("div#notice", f"confirming showed no div#notice (at {self.driver.current_url})")
        return " ".join(notice.text.split())

    def timer_path(self, key):
        return "/timer?key=" + urllib.parse.quote(key, safe="")

    def run_progress(self):
        """How far the timer's runs have come, as the history shows: the newest run's sequence
        number when the rows carry data-sequence (a history cut to its last N runs still moves),
        else the number of rows."""
        rows, sequences = self.steady(lambda: self.history_sequences())
        if rows and all(s is not None and s.strip().lstrip("-").isdigit() for s in sequences):
            return ("newest run's sequence", max(int(s) for s in sequences))
        return ("runs", len(rows))

    def history_sequences(self):
        rows = self.driver.find_elements(By.CSS_SELECTOR, "table#history tr.run")
        return rows, [row.get_dom_attribute("data-sequence") for row in rows]

    # MARK: Outside the browser

    def post(self, path, fields, cookie=None):
        """POSTs a form with urllib (no cookie jar, no redirects followed); returns the status."""
        data = urllib.parse.urlencode(fields).encode()
        request = urllib.request.Request(self.base + path, data=data, method="POST")
        request.add_header("Content-Type", "application/x-www-form-urlencoded")
        # As a browser on the page would send it: the refusal must come from the token or the
        # csrf field, not from a missing Origin.
        request.add_header("Origin", self.base)
        request.add_header("Referer", self.base + "/")
        if cookie:
            request.add_header("Cookie", cookie)
        opener = urllib.request.build_opener(NoRedirect)
        try:
            with opener.open(request, timeout=self.timeout) as response:
                return response.status
        except urllib.error.HTTPError as error:
            return error.code

    # MARK: The steps

    def step1_overview(self):
        self.get("/")
        self.wait(self.reloading(lambda d: set(EXPECTED_HANDLERS) <= self.handler_rows()),
                  lambda: f"table#handlers should have tr[data-handler] for {', '.join(EXPECTED_HANDLERS)}; it has {sorted(self.handler_rows())}")
        instances = self.wait(self.reloading(lambda d: len(d.find_elements(By.CSS_SELECTOR, "table#instances tr[data-instance]")) == 2 and 2),
                              lambda: "table#instances should list 2 instances (tr[data-instance]); it lists "
                              f"{len(self.driver.find_elements(By.CSS_SELECTOR, 'table#instances tr[data-instance]'))}")
        self.one("svg#lag-chart", "the overview has no svg#lag-chart")
        offset = self.one("span#clock-offset", "the overview has no span#clock-offset")
        offset_text = offset.text.strip()
        shots = [self.shot("overview.png")]

        # A phone: 390×844 CSS pixels, as a phone's browser lays a page out.
        self.driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {"width": 390, "height": 844, "deviceScaleFactor": 1, "mobile": True})
        try:
            self.get("/")
            self.one("table#handlers")
            scroll_width, inner_width = self.driver.execute_script("return [document.documentElement.scrollWidth, window.innerWidth]")
            if inner_width > 400:
                raise Failed(f"on a phone the page is laid out {inner_width} px wide, not 390: it needs "
                             "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">")
            if scroll_width > inner_width + 1:
                raise Failed(f"on a phone (390 px) the page overflows horizontally: scrollWidth {scroll_width} > innerWidth {inner_width}")
            shots.append(self.shot("phone-overview.png"))
        finally:
            self.driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
        return (f"overview: {len(self.handler_rows())} handlers ({', '.join(sorted(self.handler_rows()))}), {instances} instances, "
                f"lag chart, clock offset {offset_text!r}; on a phone no horizontal overflow ({scroll_width} <= {inner_width} px); "
                f"{', '.join(shots)}")

    def handler_rows(self):
        return self.steady(
            lambda: {row.get_dom_attribute("data-handler") for row in self.driver.find_elements(By.CSS_SELECTOR, "table#handlers tr[data-handler]")})

    def step2_without_token(self):
        status = self.post("/actions/retry", {"key": "invoice/42"})
        if status != 403:
            raise Failed(f"POST /actions/retry key=invoice/42 without a session answered {status}, not 403")
        return "an action without the token is refused: POST /actions/retry (no cookie) -> 403"

    def step2_wrong_csrf(self):
        cookies = self.driver.get_cookies()
        if not cookies:
            raise Failed("after the login the browser holds no cookie for the dashboard")
        cookie = "; ".join(f"{c['name']}={c['value']}" for c in cookies)
        status = self.post("/actions/retry", {"key": "invoice/42", "csrf": "wrong"}, cookie=cookie)
        if status != 403:
            raise Failed(f"POST /actions/retry with the session cookie and a wrong csrf field answered {status}, not 403")
        return f"an action with the session cookie ({', '.join(c['name'] for c in cookies)}) but a wrong csrf field is refused: 403"

    def step3_list(self):
        self.get("/timers")
        Select(self.one("form#filters select[name=status]")).select_by_value("parked")
        self.click("button#filter-button", "no button#filter-button on /timers")

        def parked_row(driver):
            rows = self.rows()
            return rows if any(key == "invoice/42" for key, _, _, _ in rows) else None

        rows = self.wait(self.reloading(parked_row),
                         lambda: f"the parked list never showed invoice/42 (at {self.driver.current_url}; rows: {self.rows()})")
        statuses = sorted({status for _, _, status, _ in rows})
        if statuses != ["parked"]:
            raise Failed(f"the list filtered on 'parked' shows statuses {statuses}")
        shot = self.shot("list.png")

        self.get("/timers?limit=10")
        first = [key for key, _, _, _ in self.wait(lambda d: self.rows() or None, "/timers?limit=10 shows no rows")]
        if len(first) != 10:
            raise Failed(f"/timers?limit=10 shows {len(first)} rows, not 10")
        next_link = self.one("a#next-page", "/timers?limit=10 has no a#next-page (37 timers are stored)")
        old_row = self.driver.find_element(By.CSS_SELECTOR, "table#timers tr.timer")
        next_link.click()
        self.wait(lambda d: self.is_stale(old_row), "following a#next-page did not load another page")
        self.page_ready()
        second = [key for key, _, _, _ in self.wait(lambda d: self.rows() or None, f"the next page ({self.driver.current_url}) shows no rows")]
        repeated = set(first) & set(second)
        if repeated:
            raise Failed(f"the next page repeats {sorted(repeated)}")
        if min(k.encode() for k in second) <= max(k.encode() for k in first):
            raise Failed(f"the pages are not in key order: page 1 ends at {max(first)!r}, page 2 holds {min(second)!r}")
        return (f"list: filtered on 'parked' it shows invoice/42 ({len(rows)} rows, all parked); {shot}; "
                f"paging: 10 rows, a#next-page -> {len(second)} more ({second[0]} …), none repeated")

    @staticmethod
    def is_stale(element):
        try:
            element.is_enabled()
            return False
        except StaleElementReferenceException:
            return True

    def step4_login(self):
        self.get("/login")
        field = self.one("form#login input[name=token]")
        field.clear()
        field.send_keys(self.token)
        self.click("button#login-button", "no button#login-button on /login")
        self.one("#nav-logout", f"after the login the nav has no #nav-logout (a POST form, CSRF-protected) (at {self.driver.current_url})")
        return f"log in: form#login with the token -> the nav shows #nav-logout (at {self.path()})"

    def path(self):
        parts = urllib.parse.urlsplit(self.driver.current_url)
        return parts.path + (f"?{parts.query}" if parts.query else "")

    def step5_parked_timer(self):
        self.get("/timers?status=parked")
        self.click_key("invoice/42", "the parked list has no row for invoice/42")
        self.wait(lambda d: self.text("h1#timer-key") == "invoice/42", lambda: f"h1#timer-key is {self.text('h1#timer-key')!r}, not 'invoice/42'")
        self.check_nav()
        status = self.text("dd#status")
        if status != "parked":
            raise Failed(f"dd#status is {status!r}, not 'parked'")
        why = self.text("p#why-text")
        if why is None or "card declined" not in why:
            raise Failed(f"p#why-text does not mention 'card declined': {why!r}")
        outcomes = self.steady(lambda: [o.text.strip() for o in self.driver.find_elements(By.CSS_SELECTOR, "table#history tr.run td.outcome")])
        if not outcomes:
            raise Failed("table#history has no tr.run with a td.outcome")
        if self.driver.find_elements(By.CSS_SELECTOR, "pre#payload") == []:
            raise Failed("the timer's page has no pre#payload")
        return (f"parked timer: h1 invoice/42, status parked, why: {' '.join(why.split())[:90]!r}, history {outcomes}; "
                f"{self.shot('timer.png')}")

    def step6_retry(self):
        with open(self.marker, "w") as marker:
            marker.write("the card goes through now\n")
        self.click('a.action[data-action="retry"]', "the parked timer's page has no a.action[data-action=\"retry\"]")
        self.one("form#confirm", f"clicking retry showed no form#confirm (at {self.driver.current_url})")
        self.check_nav()
        shot = self.shot("confirm.png")
        notice = self.confirm_form()
        timer = self.timer_path("invoice/42")

        def ran(driver):
            if driver.find_elements(By.ID, "not-found"):
                return "it ran and is gone (the timer's page shows #not-found)"
            outcomes = [o.text.strip().lower() for o in driver.find_elements(By.CSS_SELECTOR, "table#history tr.run td.outcome")]
            if "completed" in outcomes or "succeeded" in outcomes:
                return f"its history shows a completed run ({outcomes})"
            return None

        self.get(timer)
        how = self.wait(self.reloading(ran, load=lambda: self.get(timer)),
                        lambda: f"after the retry invoice/42 neither vanished (#not-found) nor shows a completed run: dd#status {self.text('dd#status')!r}")
        return f"retry: {shot}, confirmed -> notice {notice!r}; {how}"

    def step7_pause_handler(self):
        row = 'table#handlers tr[data-handler="report.daily"]'
        self.get("/")
        notice = self.confirm("pause-handler", row)
        listing = "/timers?handler=report.daily"
        self.get(listing)

        def all_paused(driver):
            rows = self.rows()
            return rows if len(rows) >= 2 and all(status == "paused" for _, _, status, _ in rows) else None

        rows = self.wait(self.reloading(all_paused, load=lambda: self.get(listing)),
                         lambda: f"{listing} should show report/daily and report/hourly paused; it shows {self.rows()}")
        timer = self.timer_path("report/daily")
        self.get(timer)
        self.one("table#plan", "report/daily's page has no table#plan")
        # A run that had started before the pause may still be written: wait until two readings
        # 2 s apart agree.
        last = [self.run_progress(), time.monotonic()]

        def settled(driver):
            progress = self.run_progress()
            if progress != last[0]:
                last[0], last[1] = progress, time.monotonic()
                return None
            return progress if time.monotonic() - last[1] >= 2 else None

        before = self.wait(self.reloading(settled, every=1, load=lambda: self.get(timer)), "report/daily's history did not settle after the pause")
        time.sleep(PAUSE_OBSERVATION)  # the point of the check: a timer every 2 s must not run while paused
        self.get(timer)
        after = self.run_progress()
        if after != before:
            raise Failed(f"report/daily ran while its handler was paused: {before[0]} {before[1]} -> {after[1]} in {PAUSE_OBSERVATION} s")

        self.get("/")
        resumed = self.confirm("resume-handler", row)
        self.get(timer)
        grown = self.wait(self.reloading(lambda d: (p := self.run_progress()) > before and p, load=lambda: self.get(timer)),
                          lambda: f"report/daily did not run again after the resume ({before[0]} stays {self.run_progress()[1]})"
                          + ("; a history cut to its last runs keeps its count: give tr.run a data-sequence" if before[0] == "runs" else ""))
        return (f"pause handler report.daily: notice {notice!r}; {len(rows)} timers paused; {before[0]} stayed {before[1]} for "
                f"{PAUSE_OBSERVATION} s; resumed (notice {resumed!r}) -> {grown[1]}")

    def step8_escaping(self):
        seen = []
        for prefix, key in (("%3C", SCRIPT_KEY), ("%22", IMG_KEY)):
            self.get(f"/timers?prefix={prefix}")
            self.no_alert(f"/timers?prefix={prefix}")
            rows = self.wait(lambda d: self.rows() or None, f"/timers?prefix={prefix} shows no rows")
            texts = [text for _, text, _, _ in rows]
            keys = [data_key for data_key, _, _, _ in rows]
            if texts != [key] or keys != [key]:
                raise Failed(f"/timers?prefix={prefix} should show the one key {key!r} as text; a.key texts {texts}, data-key {keys}")
            if self.driver.find_elements(By.CSS_SELECTOR, 'img[src="x"]'):
                raise Failed(f"/timers?prefix={prefix} holds an <img src=x>: a key became markup")
            seen.append(key)
        self.get("/timers?prefix=%3C")
        self.click_key(SCRIPT_KEY, "the script key's row is gone")
        self.wait(lambda d: self.text("h1#timer-key") == SCRIPT_KEY, lambda: f"the script key's page shows h1#timer-key {self.text('h1#timer-key')!r}")
        self.no_alert("the script key's page")
        payload = self.one("pre#payload").text
        missing = [text for text in PAYLOAD_TEXTS if text not in payload]
        if missing:
            raise Failed(f"pre#payload does not show {missing} as text: {payload!r}")
        if self.driver.find_elements(By.CSS_SELECTOR, 'img[src="x"]'):
            raise Failed("the script key's page holds an <img src=x>: the payload became markup")
        return f"escaping: keys {seen} shown as text, no alert, no img[src=x]; the payload shown as text; {self.shot('xss.png')}"

    def step9_orphans(self):
        self.get("/orphans")
        row = self.wait(lambda d: self.row_with_key("cleanup/old"), "/orphans has no tr.timer[data-key=\"cleanup/old\"]")
        handler = row.find_elements(By.CSS_SELECTOR, "td.handler")
        handler_text = handler[0].text.strip() if handler else None
        # Only orphans: every other row's handler is run by a live instance of the fleet.
        handlers = {cell.text.strip() for cell in self.driver.find_elements(By.CSS_SELECTOR, "table#timers tr.timer td.handler")}
        if handlers != {"legacy.cleanup"}:
            raise Failed(f"/orphans lists timers of handlers the fleet runs: {sorted(handlers)}")
        return f"orphans: cleanup/old ({handler_text}) listed, and only legacy.cleanup's timers; {self.shot('orphans.png')}"

    def step10_without_javascript(self):
        driver = self.make_driver(javascript=False)
        try:
            self.get("/timers?status=parked", driver=driver)
            self.wait(lambda d: self.row_with_key("invoice/43", driver=d), "without JavaScript /timers?status=parked has no row for invoice/43",
                      driver=driver)
            count = len(driver.find_elements(By.CSS_SELECTOR, "table#timers tr.timer"))
            self.shot("list-without-javascript.png", driver=driver)
        finally:
            driver.quit()
        return f"without JavaScript: /timers?status=parked lists invoice/43 ({count} row{'s' if count != 1 else ''}); list-without-javascript.png"

    # MARK: Running

    def run(self):
        os.makedirs(self.shots, exist_ok=True)
        steps = [
            ("1", "overview", self.step1_overview),
            ("2", "an action without the token", self.step2_without_token),
            ("3", "the list", self.step3_list),
            ("4", "log in", self.step4_login),
            ("2b", "an action with a wrong csrf field", self.step2_wrong_csrf),
            ("5", "the parked timer", self.step5_parked_timer),
            ("6", "retry", self.step6_retry),
            ("7", "pause a handler", self.step7_pause_handler),
            ("8", "escaping", self.step8_escaping),
            ("9", "orphans", self.step9_orphans),
            ("10", "without JavaScript", self.step10_without_javascript),
        ]
        print(f"browser test of {self.base}; screenshots in {self.shots}", flush=True)
        self.driver = self.make_driver()
        started = time.monotonic()
        try:
            for number, title, step in steps:
                began = time.monotonic()
                try:
                    said = step()
                except Exception as error:  # a check that failed, or the browser, the server or this script
                    reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
                    if isinstance(error, UnexpectedAlertPresentException):
                        reason = f"an alert opened ({error.alert_text!r}): markup from the data ran"
                    elif not isinstance(error, Failed):
                        reason = f"{type(error).__name__}: {reason}"
                    print(f"{number}. {title}: FAILED after {time.monotonic() - began:.1f} s: {reason}", flush=True)
                    self.save_failure()
                    print(f"browser: {self.passed} passed, 1 failed", flush=True)
                    return 1
                self.passed += 1
                print(f"{number}. {said} … ok ({time.monotonic() - began:.1f} s)", flush=True)
        finally:
            self.driver.quit()
        print(f"every step held in {time.monotonic() - started:.0f} s", flush=True)
        print(f"browser: {self.passed} passed, 0 failed", flush=True)
        return 0

    def save_failure(self):
        for _ in range(5):  # alerts that markup from the data opened, one after another
            try:
                self.driver.switch_to.alert.dismiss()
            except Exception:  # none (left): the usual case
                break
        try:
            print(f"   at {self.driver.current_url}", flush=True)
            self.driver.save_screenshot(os.path.join(self.shots, "failure.png"))
            with open(os.path.join(self.shots, "failure.html"), "w", encoding="utf-8") as page:
                page.write(self.driver.page_source)
            print(f"   saved failure.png and failure.html in {self.shots}", flush=True)
        except Exception as error:  # an open alert, a dead browser: the reason above is what counts
            print(f"   (no failure screenshot: {type(error).__name__})", flush=True)


def main():
    parser = argparse.ArgumentParser(description="The durable-timer dashboard in headless Chromium.")
    parser.add_argument("--url", required=True, help="the dashboard, http://127.0.0.1:PORT")
    parser.add_argument("--token", required=True, help="the token the server was started with")
    parser.add_argument("--marker", required=True, help="the file whose existence makes invoice.charge succeed")
    parser.add_argument("--shots", required=True, help="the folder for screenshots")
    parser.add_argument("--timeout", type=float, default=30, help="the longest wait for one condition, in seconds (30)")
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    parser.add_argument("--chromedriver", default="/usr/bin/chromedriver")
    args = parser.parse_args()
    # Selenium asks its manager for a driver only when given none; it sends no statistics either.
    os.environ.setdefault("SE_AVOID_STATS", "true")
    return BrowserTest(args).run()


if __name__ == "__main__":
    sys.exit(main())
