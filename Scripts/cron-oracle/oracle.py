#!/usr/bin/env python3
"""croniter (PyPI `croniter` 7.0.0) as the oracle of a differential test of TimerKit's cron expressions.

    python3 oracle.py --out FILE [--count 2000] [--occurrences 500] [--seed 20260329] [--jobs 1]
                      [--stats]

Generates --count test cases from --seed (the same seed, the same croniter and the same tz database
give the same file, byte for byte, whatever --jobs is) and writes one JSON object per line:

    {"id": 17, "expr": "<TimerKit syntax>", "croniter": "<what croniter was given>",
     "zone": "Europe/Berlin", "start": 1774746000, "next": [epoch seconds, x N], "form": [...]}

with, when croniter refused the expression or failed part of the way, `"error": "<exception class:
message>"` after `next`, which then holds what croniter produced before it failed (often nothing).
`start` and `next` are integral Unix seconds (UTC); each `next` is croniter's `get_next` from the
previous one (the first from `start`; strictly after it), in `zone` (a `zoneinfo.ZoneInfo`-aware
start). `form` lists the forms the case covers (see FORMS below), for counting and for reading a
failure; a consumer may ignore it. One line on stderr sums the run up; `--stats` adds a table of the
cases per form.

TimerKit's syntax and what croniter is given instead
----------------------------------------------------
croniter's defaults are kept (day_or=True: when day-of-month and day-of-week are both restricted a
day matches if either does; implement_cron_bug=False: a field written `*/n` counts as restricted).
Six fields (a leading seconds field) go to croniter with `second_at_beginning=True`. Every
expression's translation is checked against croniter's own parse (`croniter._expand`) before it is
used: for each field, the set of values croniter expanded must be the set TimerKit's reading gives
(see `check_translation`), so a case in the file is one where both read the fields alike.

Translations (the only ones; everything else is passed as written, croniter lower-cases it):
  - day-of-week `nL` (last weekday n of the month)  ->  croniter's `Ln`  (e.g. `5L` -> `L5`).
  - a schedule croniter cannot take in one expression is given to it as several, separated by
    ` | ` in the "croniter" field, and the case's occurrences are their union, merged exactly as
    croniter merges the two halves of a day-of-month OR day-of-week expression itself
    (`croniter._calc_next`: from the same current instant, each part's get_next, the earliest wins;
    a part that can never match again is dropped; the union fails only when every part does):
      * day-of-month and day-of-week both restricted, and either holds an extension (`nW` in the
        day of month, `nL` or `n#k` in the day of week). croniter 7.0.0 does not OR these: it
        intersects the extension with the other field (`0 9 15 * 1#1` raises "failed to find next
        date", `0 9 15W * 1` ignores the Mondays, `0 9 L * 5L` gives only last Fridays).
        Given as  `... <dom> <mon> *`  and  `... * <mon> <dow>`.  (`L` in the day of month alone
        is ORed by croniter itself, natively.)
      * a day-of-week list mixing plain days with `nL`/`n#k` (`1#1,5`): croniter refuses it
        (CroniterUnsupportedSyntaxError). Given as one part with the plain days and one with the
        `nL`/`n#k` items.
      * `nW` in a day-of-month list (`1W,15`): croniter refuses W in a list. Given as one part per
        `nW` item and one with the other items.
Not generated (see NOT_GENERATED): forms croniter cannot express at all or reads differently from
TimerKit's definition.

The cases
---------
Curated ones (DST-targeted wall times, dense, sparse, never-matching, shorthands), each in several
zones, then random ones (5- and 6-field, extension-focused, both day fields restricted) up to
--count, shuffled. Zones: America/New_York, Europe/Berlin, Australia/Lord_Howe (30-minute shift),
America/Santiago and Asia/Beirut (shifts at midnight), and UTC for a few. ~60% of the starts lie
within a few hours of one of the zone's DST transitions of 2025-2028 (found by scanning hourly
utcoffset changes with zoneinfo, then bisecting to the second); starts before a transition are
drawn close enough for a dense expression's occurrences to cross it. The rest are uniform in
2025-2029; some are rounded to a minute or hour. The cases depend on --seed, --count and
--occurrences (the last sets how close to a transition a dense expression starts).

What croniter 7.0.0 does at DST transitions (all wall-clock; checked against a model of it over the
default run: 1,882 of the 1,884 cases in DST zones that produced occurrences agree with it)
--------------------------------------------------------------------------------------------
  - A wall time in a fall-back overlap fires twice, at both instants, whatever the hour field:
    `30 1 * * *` in New York fires at 01:30 EDT and again at 01:30 EST, as `*/30 * * * *` does.
  - A wall time in a spring-forward gap: if the hour field is `*` (or expands to all 24 hours) it is
    skipped (`0 * * * *` on Lord Howe's 02:00->02:30 day has no 02:00 and no stand-in). Otherwise the
    first such match fires at the first existing time reached by adding whole minutes to it (the
    gap's end plus the match's seconds: `30 2 * * *` -> 03:00 in New York/Berlin, `15 2 * * *` ->
    02:30 on Lord Howe, `30 0 * * *` and `0 0 * * *` -> 01:00 in Santiago/Beirut, `45 30 2 * * *`
    -> 03:00:45), and every other match in that gap, or before that time, is dropped
    (`0,30 1,2 * * *` fires 01:00, 01:30, 03:00).
  - A croniter bug in 30-minute overlaps (Lord Howe, 02:00 -> 01:30): the second instance is fired
    only for some minute patterns: `40 1 * * *`, `*/10`, `*/15`, `* * * * *` repeat 01:30-01:59, but
    `20,40 1 * * *` fires 01:40 once and `*/7 * * * *` skips 01:35-01:56 the second time.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import random
import signal
import sys
import time
from collections import Counter
from importlib import metadata
from dataclasses import dataclass, field
from datetime import datetime, timezone
from zoneinfo import ZoneInfo, TZPATH

import croniter as croniter_package
from croniter import croniter

DEFAULT_SEED = 20260329
DEFAULT_COUNT = 2000
DEFAULT_OCCURRENCES = 500
CASE_TIMEOUT_S = 120  # a case croniter has not finished by then is recorded with a TimeoutError

# The zones: four with a one-hour DST shift at different local times, one with a 30-minute shift.
DST_ZONES = [
    "America/New_York",  # 02:00 -> 03:00, 02:00 -> 01:00
    "Europe/Berlin",  # 02:00 -> 03:00, 03:00 -> 02:00
    "Australia/Lord_Howe",  # 02:00 -> 02:30, 02:00 -> 01:30 (a 30-minute shift)
    "America/Santiago",  # 24:00 -> 01:00 (Saturday night), 24:00 -> 23:00
    "Asia/Beirut",  # 00:00 -> 01:00, 00:00 -> 23:00 (the previous day)
]
ZONE_WEIGHTS = [(z, 0.188) for z in DST_ZONES] + [("UTC", 0.06)]
TRANSITION_YEARS = (2025, 2028)  # starts near a DST transition: one of those of 2025-2028
RANDOM_START_RANGE = (datetime(2025, 1, 1, tzinfo=timezone.utc), datetime(2030, 1, 1, tzinfo=timezone.utc))
NEAR_WINDOW_S = 5 * 3600  # "within a few hours" of a transition, before or after

# Forms TimerKit has that are not generated, and why (printed by --stats).
NOT_GENERATED = {
    "LW (last weekday of the month)": "croniter has no LW",
    "equal range a-a (e.g. 5-5)": "croniter reads a written equal range as the whole field (5-5 = *)",
    "reversed range a-b with a > b (e.g. 22-2, fri-mon)": "croniter wraps it around; TimerKit's "
    "definition has no wrap",
    "a/n in day of week reaching 7 (1/2, 0/7, 7/n)": "croniter wraps 7/n round to Sunday and on (7/2 is "
    "0,2,4,6, 7/1 every day); TimerKit's 7/n is Sunday alone. Both run 1/2 and 0/7 to Saturday (1,3,5; 0), "
    "but they are left out with 7/n",
    "a restricted day field that covers every day (1-31, 0-6, */1) beside the other restricted": "whether "
    "that is 'restricted' (Vixie's star bit) is a definition question, not a test",
    "nL with a weekday name (friL)": "croniter's L takes digits only (L5); its spelling would be a translation "
    "of ours that TimerKit may not have",
    "n#k or nL on a weekday range (mon-fri#2)": "not in TimerKit's syntax",
}


# --------------------------------------------------------------------------- fields and items

SEC, MIN, HOUR, DOM, MON, DOW = "second", "minute", "hour", "dom", "month", "dow"
BOUNDS = {SEC: (0, 59), MIN: (0, 59), HOUR: (0, 23), DOM: (1, 31), MON: (1, 12), DOW: (0, 7)}
# The set `*` stands for (day of week: 0-6, 7 being Sunday again).
FULL = {f: frozenset(range(lo, (6 if f == DOW else hi) + 1)) for f, (lo, hi) in BOUNDS.items()}
MONTH_NAMES = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
DAY_NAMES = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"]
FIELDS5 = [MIN, HOUR, DOM, MON, DOW]
FIELDS6 = [SEC, MIN, HOUR, DOM, MON, DOW]
# croniter's internal order of its expanded fields.
CRONITER_INDEX = {MIN: 0, HOUR: 1, DOM: 2, MON: 3, DOW: 4, SEC: 5}

SHORTHANDS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}


@dataclass(frozen=True)
class Item:
    ours: str  # TimerKit's spelling
    cron: str  # croniter's spelling
    values: frozenset  # the plain values it adds (day of week 7 read as 0); empty for an extension
    ext: tuple | None = None  # ("L",) | ("W", n) | ("nL", weekday) | ("#", weekday, k)
    star: bool = False  # `*` or `?`
    forms: tuple = ()


def dow_value(v: int) -> int:
    return 0 if v == 7 else v


def values_of(f: str, seq) -> frozenset:
    return frozenset(dow_value(v) for v in seq) if f == DOW else frozenset(seq)


def is_star(items: list[Item]) -> bool:
    return len(items) == 1 and items[0].star


@dataclass
class Expr:
    fields: dict  # field -> list[Item]
    six: bool
    shorthand: str | None = None
    forms: set = field(default_factory=set)

    def ours(self) -> str:
        if self.shorthand:
            return self.shorthand
        return " ".join(",".join(i.ours for i in self.fields[f]) for f in (FIELDS6 if self.six else FIELDS5))


# --------------------------------------------------------------------------- generating items


class Gen:
    def __init__(self, rnd: random.Random):
        self.r = rnd

    def styled(self, name: str) -> str:
        s = self.r.random()
        if s < 0.5:
            return name
        if s < 0.75:
            return name.upper()
        if s < 0.95:
            return name.capitalize()
        return name[0] + name[1:].upper()  # "mON": any case

    def step(self, f: str) -> int:
        top = {SEC: 30, MIN: 30, HOUR: 12, DOM: 15, MON: 6, DOW: 3}[f]
        n = self.r.randint(2, top)
        if f in (SEC, MIN) and self.r.random() < 0.1:
            n = self.r.choice([35, 40, 45, 59])  # one or two values an hour
        return n

    def item(self, f: str, kind: str) -> Item:
        r = self.r
        lo, hi = BOUNDS[f]
        if kind == "star":
            return Item("*", "*", FULL[f], star=True)
        if kind == "q":  # `?` = `*`, day fields only
            return Item("?", "?", FULL[f], star=True, forms=(f"{f}:?",))
        if kind == "number":
            v = r.randint(lo, hi)
            forms = (f"{f}:number",) + (("dow:7",) if f == DOW and v == 7 else ())
            return Item(str(v), str(v), values_of(f, [v]), forms=forms)
        if kind == "name":
            names = MONTH_NAMES if f == MON else DAY_NAMES
            k = r.randrange(len(names))
            s = self.styled(names[k])
            return Item(s, s, frozenset([k + 1 if f == MON else k]), forms=(f"{f}:name",))
        if kind in ("range", "steprange"):
            a = r.randint(lo, hi - 1)
            b = r.randint(a + 1, hi)
            text, vals = f"{a}-{b}", range(a, b + 1)
            forms = [f"{f}:{'range a-b' if kind == 'range' else 'step a-b/n'}"]
            if kind == "steprange":
                n = r.randint(2, max(2, b - a)) if r.random() < 0.85 else b - a + r.randint(1, 5)
                text, vals = f"{text}/{n}", range(a, b + 1, n)
            if f == DOW and b == 7:
                forms.append("dow:7")
            return Item(text, text, values_of(f, vals), forms=tuple(forms))
        if kind == "namerange":  # jan-mar, Mon-FRI (never reversed: sun is 0, so only a start)
            names = MONTH_NAMES if f == MON else DAY_NAMES
            a = r.randrange(len(names) - 1)
            b = r.randint(a + 1, len(names) - 1)
            text = f"{self.styled(names[a])}-{self.styled(names[b])}"
            base = 1 if f == MON else 0
            vals = range(a + base, b + base + 1)
            forms = [f"{f}:name range"]
            if r.random() < 0.25:
                n = r.randint(2, 3)
                text, vals = f"{text}/{n}", range(a + base, b + base + 1, n)
                forms.append(f"{f}:step a-b/n")
            return Item(text, text, frozenset(vals), forms=tuple(forms))
        if kind == "stepstar":
            n = self.step(f)
            top = 6 if f == DOW else hi
            return Item(f"*/{n}", f"*/{n}", frozenset(range(lo, top + 1, n)), forms=(f"{f}:step */n",))
        if kind == "stepfrom":  # a/n: from a to the field's maximum
            while True:
                n = self.step(f)
                if f == DOW:
                    a = r.randint(0, 6)
                    if (7 - a) % n == 0:
                        continue  # would reach 7 under a 0-7 maximum: see NOT_GENERATED
                    top = 6
                else:
                    a = r.randint(lo, hi)
                    top = hi
                break
            text = f"{a}/{n}"
            forms = [f"{f}:step a/n"]
            if f in (MON, DOW) and r.random() < 0.3:
                names = MONTH_NAMES if f == MON else DAY_NAMES
                text = f"{self.styled(names[a - 1 if f == MON else a])}/{n}"
                forms.append(f"{f}:name step")
            return Item(text, text, frozenset(range(a, top + 1, n)), forms=tuple(forms))
        if kind == "L":  # last day of the month
            return Item("L", "L", frozenset(), ext=("L",), forms=("dom:L",))
        if kind == "W":  # the weekday nearest day n
            n = r.randint(1, 28) if r.random() < 0.9 else r.randint(29, 31)
            forms = ["dom:nW"] + (["dom:nW n>28"] if n > 28 else [])
            return Item(f"{n}W", f"{n}W", frozenset(), ext=("W", n), forms=tuple(forms))
        if kind == "nL":  # last weekday n of the month; croniter spells it Ln
            n = r.randint(0, 7)
            forms = ["dow:nL"] + (["dow:7"] if n == 7 else [])
            return Item(f"{n}L", f"L{n}", frozenset(), ext=("nL", dow_value(n)), forms=tuple(forms))
        if kind == "hash":  # the k-th weekday n of the month
            k = r.randint(1, 5)
            forms = ["dow:n#k"]
            if r.random() < 0.3:
                n = r.randint(0, 6)
                s = self.styled(DAY_NAMES[n])
                forms.append("dow:name#k")
            else:
                n = r.randint(0, 7)
                s = str(n)
                if n == 7:
                    forms.append("dow:7")
            if k == 5:
                forms.append("dow:n#5")
            return Item(f"{s}#{k}", f"{s}#{k}", frozenset(), ext=("#", dow_value(n), k), forms=tuple(forms))
        raise ValueError(kind)

    def field(self, f: str, weights: dict) -> list[Item]:
        kind = self.r.choices(list(weights), list(weights.values()))[0]
        if kind != "list":
            return [self.item(f, kind)]
        inner = {k: w for k, w in weights.items() if k not in ("star", "q", "list")}
        n = self.r.choices([2, 3, 4], [6, 3, 1])[0]
        items = [self.item(f, self.r.choices(list(inner), list(inner.values()))[0]) for _ in range(n)]
        texts = [i.ours for i in items]
        if len(set(t.lower() for t in texts)) < len(texts):
            return self.field(f, weights)  # no repeated item
        return items


W_SEC = dict(number=30, star=25, list=12, range=8, stepstar=15, steprange=5, stepfrom=5)
W_MIN = dict(number=35, star=12, list=14, range=8, stepstar=14, steprange=9, stepfrom=8)
W_HOUR = dict(number=35, star=22, list=12, range=10, stepstar=10, steprange=6, stepfrom=5)
W_DOM = dict(star=52, q=4, number=14, list=7, range=6, stepstar=5, steprange=3, stepfrom=3, L=3, W=3)
W_MON = dict(star=62, number=9, name=9, list=7, range=4, namerange=3, stepstar=3, steprange=2, stepfrom=1)
W_DOW = dict(star=52, q=4, number=10, name=8, list=6, range=5, namerange=4, stepstar=3, steprange=2,
             stepfrom=2, nL=2, hash=2)
# Restricted day fields only (no star), plain or with extensions.
W_DOM_PLAIN = dict(number=40, list=20, range=15, stepstar=10, steprange=8, stepfrom=7)
W_DOW_PLAIN = dict(number=30, name=20, list=15, range=15, namerange=12, stepstar=4, steprange=2, stepfrom=2)
W_SIMPLE_MIN = dict(number=80, list=12, stepstar=8)
W_SIMPLE_HOUR = dict(number=75, list=15, range=5, stepstar=5)
W_SIMPLE_SEC = dict(number=85, list=10, stepstar=5)


# --------------------------------------------------------------------------- expressions


def make_expr(fields: dict, six: bool, extra_forms=()) -> Expr:
    e = Expr(fields=fields, six=six, forms=set(extra_forms))
    e.forms.add("6-field" if six else "5-field")
    for f, items in fields.items():
        for it in items:
            e.forms.update(it.forms)
        if len(items) > 1:
            e.forms.add(f"{f}:list")
    dom_r, dow_r = not is_star(fields[DOM]), not is_star(fields[DOW])
    if dom_r and dow_r:
        e.forms.add("dom+dow both restricted (OR)")
        if any(i.ours.startswith("*/") for i in fields[DOM] + fields[DOW]):
            e.forms.add("dom+dow both restricted, one written */n")
    exts = {i.ext[0] for f in (DOM, DOW) for i in fields[f] if i.ext}
    if dom_r and dow_r and exts:
        e.forms.add("dom+dow both restricted with an extension")
    return e


def plain_full(f: str, items: list[Item]) -> bool:
    """A restricted day field whose plain values are every day: see NOT_GENERATED."""
    vals = frozenset().union(*(i.values for i in items))
    return not is_star(items) and vals >= FULL[f]


def parse_simple(text: str, six: bool = False) -> Expr:
    """A curated expression, in TimerKit's syntax, to items (the subset of the syntax curated ones use)."""
    if text.startswith("@"):
        e = Expr(fields=parse_simple(SHORTHANDS[text]).fields, six=False, shorthand=text)
        e.forms = {"shorthand", f"shorthand:{text}"}
        return e
    parts = text.split()
    six = len(parts) == 6
    names = FIELDS6 if six else FIELDS5
    fields = {}
    for f, part in zip(names, parts):
        fields[f] = [parse_item(f, p) for p in part.split(",")]
    return make_expr(fields, six)


def name_value(f: str, s: str) -> int | None:
    s = s.lower()
    if f == MON and s in MONTH_NAMES:
        return MONTH_NAMES.index(s) + 1
    if f == DOW and s in DAY_NAMES:
        return DAY_NAMES.index(s)
    return None


def num_or_name(f: str, s: str) -> int:
    v = name_value(f, s)
    return v if v is not None else int(s)


def parse_item(f: str, p: str) -> Item:
    lo, hi = BOUNDS[f]
    top = 6 if f == DOW else hi
    if p in ("*", "?"):
        return Item(p, p, FULL[f], star=True, forms=(f"{f}:?",) if p == "?" else ())
    if f == DOM and p.upper() == "L":
        return Item(p, p, frozenset(), ext=("L",), forms=("dom:L",))
    if f == DOM and p.upper().endswith("W"):
        n = int(p[:-1])
        return Item(p, p, frozenset(), ext=("W", n), forms=("dom:nW",) + (("dom:nW n>28",) if n > 28 else ()))
    if f == DOW and p.upper().endswith("L"):
        n = int(p[:-1])
        return Item(p, f"L{n}", frozenset(), ext=("nL", dow_value(n)), forms=("dow:nL",))
    if f == DOW and "#" in p:
        n, k = p.split("#")
        forms = ("dow:n#k",) + (("dow:name#k",) if name_value(f, n) is not None else ())
        return Item(p, p, frozenset(), ext=("#", dow_value(num_or_name(f, n)), int(k)), forms=forms)
    step = 1
    body = p
    if "/" in p:
        body, s = p.split("/")
        step = int(s)
    if body == "*":
        vals, form = range(lo, top + 1, step), "step */n"
    elif "-" in body:
        a, b = (num_or_name(f, x) for x in body.split("-"))
        vals, form = range(a, b + 1, step), ("step a-b/n" if "/" in p else "range a-b")
    elif "/" in p:
        a = num_or_name(f, body)
        vals, form = range(a, top + 1, step), "step a/n"
    else:
        a = num_or_name(f, body)
        vals, form = [a], ("name" if name_value(f, body) is not None else "number")
    forms = [f"{f}:{form}"]
    if f == DOW and any(x == "7" for x in body.replace("-", " ").split()):
        forms.append("dow:7")
    return Item(p, p, values_of(f, vals), forms=tuple(forms))


# --------------------------------------------------------------------------- translation to croniter


def croniter_parts(e: Expr) -> list[str]:
    """What croniter is given: one expression, or several whose union is the schedule (module doc)."""
    if e.shorthand:
        return [e.shorthand]  # croniter 7.0.0 takes all seven, in any case
    order = FIELDS6 if e.six else FIELDS5
    dom, dow = e.fields[DOM], e.fields[DOW]
    dom_r, dow_r = not is_star(dom), not is_star(dow)
    dom_w = [i for i in dom if i.ext and i.ext[0] == "W"]
    dom_rest = [i for i in dom if not (i.ext and i.ext[0] == "W")]
    dom_groups = [g for g in [dom_rest] if g] + [[i] for i in dom_w]
    dow_nth = [i for i in dow if i.ext]
    dow_plain = [i for i in dow if not i.ext]
    dow_groups = [g for g in (dow_plain, dow_nth) if g]

    def text(dom_items, dow_items):
        fields = dict(e.fields, **{DOM: dom_items, DOW: dow_items})
        return " ".join(",".join(i.cron for i in fields[f]) for f in order)

    star = [Item("*", "*", FULL[DOM], star=True)]
    native = (
        len(dom_groups) == 1
        and len(dow_groups) == 1
        and not (dom_r and dow_r and (dom_w or dow_nth))
    )
    if native:
        return [text(dom, dow)]
    parts = []
    if dom_r:
        parts += [text(g, star) for g in dom_groups]
    if dow_r:
        parts += [text(star if dom_r else dom, g) for g in dow_groups]
    return parts


def intended(e: Expr, dom_items: list[Item], dow_items: list[Item]) -> dict:
    """TimerKit's reading of one croniter part: the value set of each field, L/W/nth apart."""
    out = {}
    for f in (FIELDS6 if e.six else FIELDS5):
        items = dom_items if f == DOM else dow_items if f == DOW else e.fields[f]
        out[f] = frozenset().union(*(i.values for i in items))
    out["L"] = any(i.ext == ("L",) for i in dom_items)
    out["W"] = {i.ext[1] for i in dom_items if i.ext and i.ext[0] == "W"}
    nth: dict = {}
    for i in dow_items:
        if i.ext and i.ext[0] == "nL":
            nth.setdefault(i.ext[1], set()).add("l")
        elif i.ext and i.ext[0] == "#":
            nth.setdefault(i.ext[1], set()).add(i.ext[2])
    out["nth"] = nth
    return out


def check_translation(e: Expr, parts: list[str]) -> None:
    """Every part as croniter parses it must be TimerKit's reading of it (else: a generator bug)."""
    if e.shorthand:
        a = croniter._expand(e.shorthand)
        b = croniter._expand(SHORTHANDS[e.shorthand])
        assert a[0] == b[0] and a[1] == b[1], (e.shorthand, a, b)
        return
    order = FIELDS6 if e.six else FIELDS5
    for part in parts:
        texts = part.split()
        # Recover which of our items went into this part's day fields.
        def items_for(f):
            t = texts[order.index(f)]
            if t == "*" and not (len(e.fields[f]) == 1 and e.fields[f][0].cron == "*"):
                return [Item("*", "*", FULL[f], star=True)]
            by_cron = {i.cron: i for i in e.fields[f]}
            return [by_cron[x] for x in t.split(",")]

        want = intended(e, items_for(DOM), items_for(DOW))
        expanded, nth, _exprs, nearest = croniter._expand(part, second_at_beginning=e.six)
        for f in order:
            got = expanded[CRONITER_INDEX[f]]
            if f == DOM:
                got_set = FULL[DOM] if got == ["*"] else frozenset(v for v in got if v != "l")
                assert ("l" in got) == want["L"], (part, f, got, want)
                assert set(nearest) == want["W"], (part, nearest, want)
                assert got_set == want[DOM] | frozenset(want["W"]), (part, f, got, want)
            elif f == DOW:
                got_set = FULL[DOW] if got == ["*"] else frozenset(got)
                assert {k: set(v) for k, v in nth.items()} == want["nth"], (part, nth, want)
                assert got_set == want[DOW] | frozenset(want["nth"]), (part, f, got, want)
            else:
                got_set = FULL[f] if got == ["*"] else frozenset(got)
                assert got_set == want[f], (part, f, got, want)


# --------------------------------------------------------------------------- zones and starts


def transitions(zone: str) -> list[int]:
    """Every UTC instant (to the second) at which the zone's UTC offset changes, in TRANSITION_YEARS."""
    tz = ZoneInfo(zone)
    t = int(datetime(TRANSITION_YEARS[0], 1, 1, tzinfo=timezone.utc).timestamp())
    end = int(datetime(TRANSITION_YEARS[1] + 1, 1, 1, tzinfo=timezone.utc).timestamp())
    off = lambda s: datetime.fromtimestamp(s, tz).utcoffset()  # noqa: E731
    out, prev = [], off(t)
    while t < end:
        nxt = t + 3600
        o = off(nxt)
        if o != prev:
            lo, hi = t, nxt  # off(lo) == prev, off(hi) == o
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if off(mid) == prev:
                    lo = mid
                else:
                    hi = mid
            out.append(hi)
        prev, t = o, nxt
    return out


def coverage_s(e: Expr, occurrences: int) -> float:
    """Roughly how long `occurrences` occurrences last, for an expression firing every day; else inf."""
    if any(not is_star(e.fields[f]) for f in (DOM, MON, DOW)):
        return float("inf")
    per_day = 1
    for f in (SEC, MIN, HOUR):
        if f in e.fields:
            per_day *= len(frozenset().union(*(i.values for i in e.fields[f])))
    return occurrences * 86400 / per_day


class Starts:
    def __init__(self, rnd: random.Random):
        self.r = rnd
        self.trans = {z: transitions(z) for z in DST_ZONES}
        self.trans["UTC"] = []

    def zone(self) -> str:
        return self.r.choices([z for z, _ in ZONE_WEIGHTS], [w for _, w in ZONE_WEIGHTS])[0]

    def pick(self, zone: str, coverage: float, near_p: float) -> tuple[int, str]:
        r = self.r
        ts = self.trans[zone]
        if ts and r.random() < near_p:
            t = r.choice(ts)
            u = r.random()
            if u < 0.05:
                start, how = t, "start:at a transition"
            elif u < 0.10:
                start, how = t - 1, "start:1 s before a transition"
            elif u < 0.72:
                start, how = t - r.randint(2, int(max(2, min(0.9 * coverage, NEAR_WINDOW_S)))), "start:before a transition"
            else:
                start, how = t + r.randint(1, NEAR_WINDOW_S), "start:after a transition"
        else:
            lo, hi = (int(d.timestamp()) for d in RANDOM_START_RANGE)
            start, how = r.randint(lo, hi), "start:random 2025-2030"
        if how in ("start:before a transition", "start:after a transition", "start:random 2025-2030"):
            u = r.random()
            if u < 0.2:
                start -= start % 60  # on a minute: strictly-after matters
            elif u < 0.3:
                start -= start % 3600
        return start, how


# --------------------------------------------------------------------------- the curated cases

# DST-targeted: wall times in, or beside, the gaps and overlaps of the five zones.
DST_TARGETED = [
    "30 2 * * *", "30 1 * * *", "0 2 * * *", "0 1 * * *", "15 2 * * *", "45 1 * * *", "59 1 * * *",
    "0 3 * * *", "30 3 * * *", "0 0 * * *", "30 0 * * *", "30 23 * * *", "0 23 * * *", "30 */2 * * *",
    "0 */2 * * *", "30 1-3 * * *", "*/10 2 * * *", "0,30 1,2 * * *", "0 0 * * 0", "30 2 * * 0",
    "0 0 * * 6", "30 23 * * 6", "0 30 2 * * *", "30 30 1 * * *", "*/15 59 1 * * *", "0 0 0 * * *",
    "0 */20 2 * * *",
]
DENSE = [
    "* * * * *", "*/5 * * * *", "0 * * * *", "*/30 * * * *", "*/15 * * * *", "30 * * * *",
    "15,45 * * * *", "*/7 * * * *", "0 */3 * * *", "* * * * * *", "*/10 * * * * *", "0 * * * * *",
    "30 */5 * * * *", "0 0 * * * *",
]
SPARSE = [
    "0 0 29 2 *", "0 12 L 2 *", "0 9 * * 1#1", "0 0 1 1 *", "0 9 29 2 1", "0 0 31 * *", "0 0 L * *",
    "0 9 * * 5L", "0 9 L * 5", "0 0 1,15 * 1-5", "0 9 * * mon-fri", "0 0 13 * 5", "0 12 15W * *",
    "0 12 1W * *", "0 12 31W * *", "0 0 29 2 0", "59 23 31 12 *", "0 0 L 2 *", "0 0 29 2 mon",
    "0 9 * * fri#2", "0 9 * * 7#1", "0 9 * * 0L", "30 8 1W * mon", "0 9 1 * 1#1", "0 9 L * 5L",
    "0 9 * * 1#1,5", "0 9 1W,15 * *", "0 0 ? * sun", "0 0 1 * ?",
    "0 0 0 1 1 *", "0 0 12 L * ?",
]
NEVER = [
    "0 0 30 2 *", "0 0 31 4 *", "0 0 31 2,4,6,9,11 *", "0 0 30,31 feb *", "0 0 0 30 2 *",
    "0 0 31 apr,jun *", "0 0 31 9 *",
]
NOT_NEVER = ["0 0 30 2 1", "0 0 31 4 5L"]  # the day of month never matches, the day of week does (OR)
TO_YEAR_9999 = ["0 0 * 2 1#5"]  # a fifth Monday in February: ~28 years apart, past year 9999 by 500


def curated_cases(starts: Starts, rnd: random.Random) -> list[tuple[Expr, str, int, str]]:
    out = []

    def add(text, zone, near_p, label, occurrences_hint=None):
        e = parse_simple(text)
        e.forms.add(label)
        start, how = starts.pick(zone, coverage_s(e, occurrences_hint or DEFAULT_OCCURRENCES), near_p)
        out.append((e, zone, start, how))

    for text in DST_TARGETED:
        for z in DST_ZONES:
            for _ in range(2):
                add(text, z, 0.95, "curated:DST-targeted")
    for text in DENSE:
        for z in DST_ZONES:
            for _ in range(3):
                add(text, z, 0.9, "curated:dense")
        add(text, "UTC", 0, "curated:dense")
    for text in SPARSE:
        for _ in range(3):
            add(text, starts.zone(), 0.5, "curated:sparse")
    for text in NEVER:
        for _ in range(2):
            add(text, starts.zone(), 0.5, "curated:never matches")
    for text in NOT_NEVER:
        for _ in range(2):
            add(text, starts.zone(), 0.5, "curated:dom never, dow does")
    for text in TO_YEAR_9999:
        add(text, starts.zone(), 0.5, "curated:runs past year 9999")
    return out


# --------------------------------------------------------------------------- the random cases


def random_expr(g: Gen, category: str) -> Expr:
    r = g.r
    while True:
        six = category == "random 6-field" or (category == "extension" and r.random() < 0.15)
        fields = {}
        if category in ("random 5-field", "random 6-field"):
            if six:
                fields[SEC] = g.field(SEC, W_SEC)
            fields[MIN] = g.field(MIN, W_MIN)
            fields[HOUR] = g.field(HOUR, W_HOUR)
            fields[DOM] = g.field(DOM, W_DOM)
            fields[MON] = g.field(MON, W_MON)
            fields[DOW] = g.field(DOW, W_DOW)
        else:
            if six:
                fields[SEC] = g.field(SEC, W_SIMPLE_SEC)
            fields[MIN] = g.field(MIN, W_SIMPLE_MIN)
            fields[HOUR] = g.field(HOUR, W_SIMPLE_HOUR if r.random() < 0.9 else dict(star=1))
            fields[MON] = g.field(MON, W_MON)
            star = lambda f: [g.item(f, "star" if r.random() < 0.85 else "q")]  # noqa: E731
            if category == "both restricted (plain)":
                fields[DOM] = g.field(DOM, W_DOM_PLAIN)
                fields[DOW] = g.field(DOW, W_DOW_PLAIN)
            else:  # extension
                sub = r.choices(["L", "W", "nL", "hash", "both", "union"], [18, 18, 16, 20, 20, 8])[0]
                if sub == "L":
                    fields[DOM] = [g.item(DOM, "L")] if r.random() < 0.75 else \
                        [g.item(DOM, "L")] + g.field(DOM, dict(number=3, range=1, stepfrom=1))
                    fields[DOW] = star(DOW)
                elif sub == "W":
                    fields[DOM] = [g.item(DOM, "W")]
                    fields[DOW] = star(DOW)
                elif sub == "nL":
                    fields[DOM] = star(DOM)
                    fields[DOW] = g.field(DOW, dict(nL=80, list=20)) if r.random() < 0.8 else [g.item(DOW, "nL")]
                    if len(fields[DOW]) > 1:
                        fields[DOW] = [i for i in fields[DOW] if i.ext] or [g.item(DOW, "nL")]
                elif sub == "hash":
                    fields[DOM] = star(DOM)
                    fields[DOW] = g.field(DOW, dict(hash=80, list=20))
                    fields[DOW] = [i for i in fields[DOW] if i.ext] or [g.item(DOW, "hash")]
                elif sub == "both":
                    fields[DOM] = g.field(DOM, dict(L=30, W=30, number=25, list=10, range=5))
                    if not any(i.ext for i in fields[DOM]) or r.random() < 0.5:
                        fields[DOW] = g.field(DOW, dict(nL=40, hash=45, list=15))
                    else:
                        fields[DOW] = g.field(DOW, W_DOW_PLAIN)
                    if not any(i.ext for i in fields[DOM] + fields[DOW]):
                        continue
                else:  # union: lists croniter refuses
                    if r.random() < 0.6:
                        fields[DOM] = star(DOM) if r.random() < 0.8 else g.field(DOM, W_DOM_PLAIN)
                        fields[DOW] = [g.item(DOW, r.choice(["nL", "hash"])),
                                       g.item(DOW, r.choice(["number", "name", "range"]))]
                        if r.random() < 0.3:
                            fields[DOW].append(g.item(DOW, r.choice(["nL", "hash"])))
                        r.shuffle(fields[DOW])
                    else:
                        fields[DOM] = [g.item(DOM, "W"), g.item(DOM, r.choice(["number", "L", "range"]))]
                        r.shuffle(fields[DOM])
                        fields[DOW] = star(DOW) if r.random() < 0.8 else g.field(DOW, W_DOW_PLAIN)
        dom_r, dow_r = not is_star(fields[DOM]), not is_star(fields[DOW])
        if dom_r and dow_r and (plain_full(DOM, fields[DOM]) or plain_full(DOW, fields[DOW])):
            continue  # see NOT_GENERATED
        return make_expr(fields, six, extra_forms=[f"random:{category}"])


def build_cases(count: int, occurrences: int, seed: int) -> list[dict]:
    rnd = random.Random(seed)
    g = Gen(rnd)
    starts = Starts(rnd)
    chosen: list[tuple[Expr, str, int, str]] = curated_cases(starts, rnd)
    for sh in SHORTHANDS:
        for _ in range(max(1, round(count * 0.005))):  # 10 each for 2,000
            e = parse_simple(sh)
            z = rnd.choice(["Asia/Beirut", "America/Santiago"]) if rnd.random() < 0.5 else starts.zone()
            start, how = starts.pick(z, coverage_s(e, occurrences), 0.7)
            chosen.append((e, z, start, how))
    categories = [("random 5-field", 40), ("random 6-field", 14), ("extension", 38), ("both restricted (plain)", 8)]
    while len(chosen) < count:
        cat = rnd.choices([c for c, _ in categories], [w for _, w in categories])[0]
        e = random_expr(g, cat)
        z = starts.zone()
        start, how = starts.pick(z, coverage_s(e, occurrences), 0.6)
        chosen.append((e, z, start, how))
    rnd.shuffle(chosen)
    chosen = chosen[:count]

    cases = []
    for i, (e, zone, start, how) in enumerate(chosen):
        parts = croniter_parts(e)
        check_translation(e, parts)
        forms = set(e.forms) | {how}
        if len(parts) > 1:
            forms.add(f"croniter:union of {len(parts)} parts")
        if any(it.ext and it.ext[0] == "nL" for it in e.fields[DOW]):
            forms.add("croniter:nL -> Ln")
        if zone == "UTC":
            forms.add("zone:UTC")
        cases.append(dict(id=i, expr=e.ours(), croniter=" | ".join(parts), parts=parts, six=e.six,
                          zone=zone, start=start, form=sorted(forms)))
    return cases


# --------------------------------------------------------------------------- running croniter


class CaseTimeout(Exception):
    pass


def _alarm(signum, frame):
    raise CaseTimeout(f"no answer within {CASE_TIMEOUT_S} s")


def run_case(args: tuple[dict, int]) -> dict:
    case, occurrences = args
    tz = ZoneInfo(case["zone"])
    start_dt = datetime.fromtimestamp(case["start"], tz)
    out = {k: case[k] for k in ("id", "expr", "croniter", "zone", "start")}
    nexts: list[int] = []
    error = None
    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(CASE_TIMEOUT_S)
    try:
        its = [croniter(p, start_dt, second_at_beginning=case["six"]) for p in case["parts"]]
        if len(its) == 1:
            it = its[0]
            for _ in range(occurrences):
                nexts.append(as_int(it.get_next(float)))
        else:
            # croniter's own union of a day-of-month part and a day-of-week part (_calc_next): from the
            # same current instant each part's next, the earliest wins; a part that fails is dropped.
            cur = float(case["start"])
            alive = list(its)
            last_error = None
            for _ in range(occurrences):
                best = None
                for it in list(alive):
                    try:
                        t = it.get_next(float, start_time=cur)
                    except croniter_package.CroniterBadDateError as exc:
                        alive.remove(it)
                        last_error = exc
                        continue
                    best = t if best is None or t < best else best
                if best is None:
                    raise last_error
                nexts.append(as_int(best))
                cur = best
    except CaseTimeout as exc:
        error = f"TimeoutError: {exc}"
    except Exception as exc:  # noqa: BLE001 - every failure of croniter is a result to record
        error = f"{type(exc).__name__}: {exc}"
    finally:
        signal.alarm(0)
    out["next"] = nexts
    if error is not None:
        out["error"] = error
    out["form"] = case["form"]
    return out


def as_int(t: float) -> int:
    i = int(round(t))
    if i != t:
        raise ValueError(f"croniter gave a non-integral time {t!r}")
    return i


def tzdata_version() -> str:
    for d in TZPATH:
        if os.path.exists(os.path.join(d, "Europe", "Berlin")):
            try:
                with open(os.path.join(d, "tzdata.zi")) as fh:
                    first = fh.readline().strip()
                return f"{first.removeprefix('# version ').strip()} ({d})"
            except OSError:
                return f"unknown ({d})"
    try:
        import tzdata  # the PyPI package, used by zoneinfo when the system has no database

        return f"{tzdata.IANA_VERSION} (PyPI tzdata)"
    except ImportError:
        return "unknown"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="the JSON-lines file to write ('-' for stdout)")
    ap.add_argument("--count", type=int, default=DEFAULT_COUNT, help="expressions (default %(default)s)")
    ap.add_argument("--occurrences", type=int, default=DEFAULT_OCCURRENCES,
                    help="next occurrences per expression (default %(default)s)")
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED, help="generator seed (default %(default)s)")
    ap.add_argument("--jobs", type=int, default=1, help="worker processes (default %(default)s)")
    ap.add_argument("--stats", action="store_true", help="also print the cases per form to stderr")
    a = ap.parse_args()

    t0 = time.monotonic()
    cases = build_cases(a.count, a.occurrences, a.seed)
    work = [(c, a.occurrences) for c in cases]
    out = sys.stdout if a.out == "-" else open(a.out, "w")
    n_occ = 0
    errors: Counter = Counter()
    forms: Counter = Counter()
    try:
        if a.jobs > 1:
            pool = multiprocessing.get_context("fork").Pool(a.jobs)
            results = pool.imap(run_case, work, chunksize=4)
        else:
            pool = None
            results = map(run_case, work)
        for res in results:
            out.write(json.dumps(res, separators=(",", ":")) + "\n")
            n_occ += len(res["next"])
            forms.update(res["form"])
            if "error" in res:
                errors[res["error"].split(":")[0]] += 1
        if pool:
            pool.close()
            pool.join()
    finally:
        if out is not sys.stdout:
            out.close()
    took = time.monotonic() - t0
    err = ", ".join(f"{k} {v}" for k, v in sorted(errors.items())) or "none"
    print(
        f"cron-oracle: {len(cases)} cases, {n_occ} occurrences, {sum(errors.values())} errors ({err}), "
        f"{took:.1f} s; croniter {metadata.version('croniter')}, "
        f"tzdata {tzdata_version()}, seed {a.seed}, jobs {a.jobs}",
        file=sys.stderr,
    )
    if a.stats:
        for k, v in sorted(forms.items()):
            print(f"  {v:6d}  {k}", file=sys.stderr)
        print("  not generated:", file=sys.stderr)
        for k, why in NOT_GENERATED.items():
            print(f"    {k}: {why}", file=sys.stderr)


if __name__ == "__main__":
    main()
