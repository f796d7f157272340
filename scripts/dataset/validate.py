#!/usr/bin/env python3
"""Validate Resources/canonical/*.json.  Exits non-zero with a list of problems.

Usage (from the repo root):  python3 scripts/dataset/validate.py
"""
import datetime as dt
import json
import math
import os
import re
import sys
import zoneinfo

SCRIPT_DIR = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.normpath(os.path.join(SCRIPT_DIR, "..", ".."))
CANON = os.path.join(REPO_ROOT, "Resources", "canonical")
sys.dont_write_bytecode = True  # keep the tree clean
sys.path.insert(0, SCRIPT_DIR)
import manual  # noqa: E402  (expected counts, city centres)

ERRORS = []
SLUG = r"[a-z0-9]+(?:_[a-z0-9]+)*"
DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
FILES = ["leagues", "conferences", "divisions", "stadiums", "teams", "stadium_aliases", "team_aliases", "team_venues"]

# rough longitude bands per zone (plausibility, catches swapped/sign errors and wrong zones)
TZ_LON = {
    "America/Los_Angeles": (-125, -114), "America/Vancouver": (-125, -114), "America/Phoenix": (-115, -109),
    "America/Denver": (-115, -102), "America/Edmonton": (-120, -110), "America/Chicago": (-105, -84),
    "America/Winnipeg": (-102, -88), "America/Indiana/Indianapolis": (-88.1, -84.7), "America/Detroit": (-90, -82),
    "America/Kentucky/Louisville": (-87, -84.5), "America/New_York": (-88, -66), "America/Toronto": (-95, -64),
    "America/Mexico_City": (-106, -86), "America/Monterrey": (-106, -97), "America/Puerto_Rico": (-68, -65),
    "Europe/London": (-8, 2), "Europe/Berlin": (5, 16), "Asia/Tokyo": (128, 146), "Asia/Seoul": (124, 132),
    "America/Sao_Paulo": (-54, -34), "Europe/Dublin": (-11, -5), "Europe/Madrid": (-10, 5), "Europe/Paris": (-5, 10),
    "Europe/Stockholm": (10, 25), "Europe/Helsinki": (19, 32), "Europe/Prague": (12, 19),
    "Australia/Melbourne": (140, 150),
}


def err(msg):
    ERRORS.append(msg)


def load(name):
    path = os.path.join(CANON, name + ".json")
    if not os.path.exists(path):
        err("missing file %s" % os.path.relpath(path, REPO_ROOT))
        return []
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if not text.endswith("\n"):
        err("%s.json: no trailing newline" % name)
    data = json.loads(text)
    if json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n" != text:
        err("%s.json: not in canonical form (sorted keys, 2-space indent)" % name)
    if not isinstance(data, list):
        err("%s.json: top level must be an array" % name)
        return []
    return data


def check_date(where, value, nullable=True):
    if value is None:
        if not nullable:
            err("%s: date must not be null" % where)
        return None
    if not isinstance(value, str) or not DATE_RE.match(value):
        err("%s: bad date %r (want YYYY-MM-DD)" % (where, value))
        return None
    try:
        return dt.date.fromisoformat(value)
    except ValueError:
        err("%s: invalid date %r" % (where, value))
        return None


def km(a, b):
    lat1, lon1 = map(math.radians, a)
    lat2, lon2 = map(math.radians, b)
    h = math.sin((lat2 - lat1) / 2) ** 2 + math.cos(lat1) * math.cos(lat2) * math.sin((lon2 - lon1) / 2) ** 2
    return 2 * 6371.0 * math.asin(math.sqrt(h))


def check_ranges(kind, records, owner_key, owners):
    """Half-open [validFrom, validUntil) ranges of one owner must not overlap."""
    by_owner = {}
    for r in records:
        where = "%s %s" % (kind, r.get("id", r))
        f = check_date(where + " validFrom", r.get("validFrom"))
        u = check_date(where + " validUntil", r.get("validUntil"))
        if f and u and not f < u:
            err("%s: validFrom %s is not before validUntil %s" % (where, f, u))
        if r.get(owner_key) not in owners:
            err("%s: %s %r does not resolve" % (where, owner_key, r.get(owner_key)))
        by_owner.setdefault(r.get(owner_key), []).append((f or dt.date.min, u or dt.date.max, r))
    for owner, rs in by_owner.items():
        rs.sort(key=lambda x: (x[0], x[1]))
        for (f1, u1, r1), (f2, u2, r2) in zip(rs, rs[1:]):
            if f2 < u1:
                err("%s of %s overlap: %s [%s, %s) and %s [%s, %s)" % (kind, owner, r1.get("id"), r1.get("validFrom"),
                    r1.get("validUntil"), r2.get("id"), r2.get("validFrom"), r2.get("validUntil")))
        open_ = [r for f, u, r in rs if r.get("validUntil") is None]
        if len(open_) != 1:
            err("%s of %s: expected exactly one open-ended record (validUntil null), found %d" % (kind, owner, len(open_)))
    return by_owner


def main():
    d = {n: load(n) for n in FILES}
    leagues = {x["id"]: x for x in d["leagues"]}
    confs = {x["id"]: x for x in d["conferences"]}
    divs = {x["id"]: x for x in d["divisions"]}
    stadiums = {x["id"]: x for x in d["stadiums"]}
    teams = {x["id"]: x for x in d["teams"]}
    for n in FILES:
        ids = [x.get("id") for x in d[n]]
        dups = sorted({i for i in ids if ids.count(i) > 1})
        if dups:
            err("%s.json: duplicate ids %s" % (n, dups))
    lg_codes = {lid[len("league_"):] for lid in leagues}

    # ---- id formats and league structure
    for lid, l in leagues.items():
        if not re.fullmatch(r"league_[a-z]+", lid):
            err("bad league id %s" % lid)
        for k in ("name", "abbreviation", "sport"):
            if not l.get(k):
                err("league %s: missing %s" % (lid, k))
    for cid, c in confs.items():
        lg = c.get("leagueId", "")[len("league_"):]
        if c.get("leagueId") not in leagues or not re.fullmatch(r"conference_%s_%s" % (lg, SLUG), cid):
            err("conference %s: bad id or leagueId %r" % (cid, c.get("leagueId")))
    for did, v in divs.items():
        lg = v.get("leagueId", "")[len("league_"):]
        if v.get("leagueId") not in leagues or not re.fullmatch(r"division_%s_%s" % (lg, SLUG), did):
            err("division %s: bad id or leagueId" % did)
        c = confs.get(v.get("conferenceId"))
        if not c or c["leagueId"] != v.get("leagueId"):
            err("division %s: conferenceId %r does not resolve within its league" % (did, v.get("conferenceId")))

    # ---- stadiums
    for sid, s in stadiums.items():
        m = re.fullmatch(r"stadium_([a-z]+)_(%s)" % SLUG, sid)
        if not m or m.group(1) not in lg_codes:
            err("stadium %s: id must be stadium_<league>_<slug>" % sid)
        for k in ("name", "city", "country", "timeZone", "source"):
            if not s.get(k):
                err("stadium %s: missing %s" % (sid, k))
        lat, lon = s.get("latitude"), s.get("longitude")
        if not isinstance(lat, (int, float)) or not isinstance(lon, (int, float)) or not (-90 <= lat <= 90 and -180 <= lon <= 180):
            err("stadium %s: missing/invalid latitude/longitude %r,%r" % (sid, lat, lon))
            continue
        try:
            zoneinfo.ZoneInfo(s.get("timeZone", ""))
        except Exception:
            err("stadium %s: %r is not an IANA time zone" % (sid, s.get("timeZone")))
        band = TZ_LON.get(s.get("timeZone"))
        if band is None:
            err("stadium %s: unexpected time zone %s (add a longitude band if intended)" % (sid, s.get("timeZone")))
        elif not band[0] <= lon <= band[1]:
            err("stadium %s: longitude %.3f implausible for %s" % (sid, lon, s["timeZone"]))
        centre = manual.CITY_CENTERS.get(s.get("city"))
        if centre is None:
            err("stadium %s: no reference centre for city %r (add to manual.CITY_CENTERS)" % (sid, s.get("city")))
        elif km((lat, lon), centre) > manual.CITY_RADIUS_KM:
            err("stadium %s: point %.4f,%.4f is %.0f km from %s" % (sid, lat, lon, km((lat, lon), centre), s["city"]))
        if s.get("country") in ("US", "CA") and not (isinstance(s.get("state"), str) and re.fullmatch(r"[A-Z]{2}", s["state"])):
            err("stadium %s: state must be a 2-letter code" % sid)
        if not isinstance(s.get("capacity"), int) or s["capacity"] <= 0:
            err("stadium %s: capacity must be a positive int" % sid)
        if not isinstance(s.get("yearOpened"), int) or not 1850 <= s["yearOpened"] <= 2030:
            err("stadium %s: yearOpened must be an int" % sid)
        check_date("stadium %s deprecatedAt" % sid, s.get("deprecatedAt"))
        if not s.get("sports"):
            err("stadium %s: sports empty" % sid)

    # ---- teams
    for tid, t in teams.items():
        lg = t.get("leagueId", "")[len("league_"):]
        if t.get("leagueId") not in leagues:
            err("team %s: leagueId %r does not resolve" % (tid, t.get("leagueId")))
        if not re.fullmatch(r"team_%s_%s" % (lg, SLUG), tid):
            err("team %s: id must be team_<league>_<slug>" % tid)
        for k in ("name", "city", "abbreviation", "homeStadiumId", "source"):
            if not t.get(k):
                err("team %s: missing %s" % (tid, k))
        s = stadiums.get(t.get("homeStadiumId"))
        if s is None:
            err("team %s: homeStadiumId %r does not resolve" % (tid, t.get("homeStadiumId")))
        elif s.get("deprecatedAt") is not None:
            err("team %s: home venue %s is deprecated" % (tid, s["id"]))
        league_confs = [c for c in confs.values() if c["leagueId"] == t.get("leagueId")]
        league_divs = [v for v in divs.values() if v["leagueId"] == t.get("leagueId")]
        c = t.get("conferenceId")
        if c is not None and (c not in confs or confs[c]["leagueId"] != t.get("leagueId")):
            err("team %s: conferenceId %r does not resolve within its league" % (tid, c))
        if league_confs and c is None:
            err("team %s: league has conferences but team has none" % tid)
        v = t.get("divisionId")
        if v is not None and (v not in divs or divs[v]["conferenceId"] != c):
            err("team %s: divisionId %r does not resolve / not in conference %r" % (tid, v, c))
        if league_divs and v is None:
            err("team %s: league has divisions but team has none" % tid)

    # ---- aliases and tenancies
    sa = check_ranges("stadium aliases", d["stadium_aliases"], "stadiumId", stadiums)
    ta = check_ranges("team aliases", d["team_aliases"], "teamId", teams)
    tv = check_ranges("team venues", d["team_venues"], "teamId", teams)
    for a in d["stadium_aliases"]:
        sid = a.get("stadiumId", "")
        if not re.fullmatch(r"stadium_alias_%s_\d+" % re.escape(sid[len("stadium_"):]), a.get("id", "")):
            err("stadium alias %s: id must be stadium_alias_<stadium slug>_<n>" % a.get("id"))
        if a.get("validUntil") is None and sid in stadiums and a.get("name") != stadiums[sid]["name"]:
            err("stadium %s: current alias %r != name %r" % (sid, a.get("name"), stadiums[sid]["name"]))
    for a in d["team_aliases"]:
        tid = a.get("teamId", "")
        if not re.fullmatch(r"team_alias_%s_\d+" % re.escape(tid[len("team_"):]), a.get("id", "")):
            err("team alias %s: id must be team_alias_<team slug>_<n>" % a.get("id"))
        if not a.get("name") or not a.get("city"):
            err("team alias %s: name and city required" % a.get("id"))
        if a.get("validUntil") is None and tid in teams and a.get("name") != teams[tid]["name"]:
            err("team %s: current alias %r != name %r" % (tid, a.get("name"), teams[tid]["name"]))
    for x in d["team_venues"]:
        if x.get("stadiumId") not in stadiums:
            err("team venue %s: stadiumId %r does not resolve" % (x.get("id"), x.get("stadiumId")))
        if x.get("validUntil") is None and x.get("teamId") in teams and teams[x["teamId"]]["homeStadiumId"] != x.get("stadiumId"):
            err("team %s: open tenancy %s != homeStadiumId" % (x["teamId"], x.get("stadiumId")))
    for sid in stadiums:
        if sid not in sa:
            err("stadium %s: no aliases" % sid)
    for tid in teams:
        if tid not in ta:
            err("team %s: no aliases" % tid)
        if tid not in tv:
            err("team %s: no team_venues" % tid)
    # league prefix of a stadium id = league of one of its tenants
    neutral = {v["id"] for v in manual.NEUTRAL_VENUES}
    tenants = {}
    for x in d["team_venues"]:
        tenants.setdefault(x.get("stadiumId"), []).append(x)
    for sid, s in stadiums.items():
        ts = tenants.get(sid, [])
        if not ts:
            # Neutral and international game sites (manual.NEUTRAL_VENUES) are no team's home.
            if sid not in neutral:
                err("stadium %s: not a home venue of any team" % sid)
            elif s.get("deprecatedAt"):
                err("stadium %s: a neutral site is not deprecated for having no tenant" % sid)
            continue
        prefix = sid.split("_")[1]
        if prefix not in {teams[x["teamId"]]["leagueId"][len("league_"):] for x in ts if x["teamId"] in teams}:
            err("stadium %s: league prefix %r matches none of its tenants" % (sid, prefix))
        open_ = [x for x in ts if x.get("validUntil") is None]
        if open_ and s.get("deprecatedAt") is not None:
            err("stadium %s: deprecatedAt set but still home of %s" % (sid, [x["teamId"] for x in open_]))
        if not open_:
            last = max(dt.date.fromisoformat(x["validUntil"]) for x in ts)
            want = (last - dt.timedelta(days=1)).isoformat()
            if s.get("deprecatedAt") != want:
                err("stadium %s: deprecatedAt %r, expected %s (day before the last tenancy's validUntil)" % (sid, s.get("deprecatedAt"), want))

    # ---- tenancy vs. venue names: a team cannot play at a venue before its first name is valid
    first_alias = {}
    for a in d["stadium_aliases"]:
        if a.get("validFrom"):
            sid = a.get("stadiumId")
            first_alias[sid] = min(first_alias.get(sid, a["validFrom"]), a["validFrom"])
    for x in d["team_venues"]:
        fa = first_alias.get(x.get("stadiumId"))
        if fa and x.get("validFrom") and x["validFrom"] < fa:
            err("team venue %s: validFrom %s is before %s's earliest name (validFrom %s)" % (x.get("id"), x["validFrom"], x["stadiumId"], fa))
    # a team with firstSeason has no tenancy before that season
    for x in d["team_venues"]:
        fs = teams.get(x.get("teamId"), {}).get("firstSeason")
        if fs and x.get("validFrom") and x["validFrom"] < "%04d-01-01" % fs:
            err("team venue %s: validFrom %s is before the team's firstSeason %d" % (x.get("id"), x["validFrom"], fs))

    # ---- per-sport capacity of venues used by 2+ sports (manual.CAPACITY_BY_SPORT_EXEMPT: former shared venues)
    league_sport = {lid: l.get("sport") for lid, l in leagues.items()}
    exempt = manual.CAPACITY_BY_SPORT_EXEMPT
    for sid, s in stadiums.items():
        sports = s.get("sports") or []
        cbs = s.get("capacityBySport") or {}
        for sport, cap in cbs.items():
            if sport not in sports:
                err("stadium %s: capacityBySport has %r, not one of its sports %s" % (sid, sport, sports))
            if not isinstance(cap, int) or cap <= 0:
                err("stadium %s: capacityBySport[%r] must be a positive int" % (sid, sport))
        missing = [sp for sp in sports if sp not in cbs]
        current_sports = {league_sport.get(teams[x["teamId"]]["leagueId"]) for x in tenants.get(sid, [])
                          if x.get("validUntil") is None and x.get("teamId") in teams}
        if sid in exempt:
            if len(sports) < 2 or not missing:
                err("stadium %s: listed in manual.CAPACITY_BY_SPORT_EXEMPT but needs no exemption (remove it)" % sid)
            if len(current_sports) > 1:
                err("stadium %s: currently used by %s, so it needs capacityBySport (exemption is for former shared venues)" % (sid, sorted(current_sports)))
        elif len(sports) > 1 and missing:
            err("stadium %s: used by sports %s but capacityBySport lacks %s" % (sid, sports, missing))
    for sid in exempt:
        if sid not in stadiums:
            err("manual.CAPACITY_BY_SPORT_EXEMPT: unknown stadium %s" % sid)

    # ---- coordinates checked against an independent consensus (GAPS 4)
    # Xfinity Mobile Arena (ex Wells Fargo Center): NHLScoreBot 39.90111,-75.17194 and chenguanhua
    # 39.901111,-75.171944 agree; tkirk21's point (39.9042,-75.1712) is ~0.35 km off the building.
    for sid, ref, tol_km, what in [("stadium_nba_xfinity_mobile_arena", (39.9011105, -75.171942), 0.1, "NHLScoreBot/chenguanhua consensus")]:
        s = stadiums.get(sid)
        if s is None:
            err("stadium %s missing" % sid)
        elif isinstance(s.get("latitude"), (int, float)) and isinstance(s.get("longitude"), (int, float)):
            dist = km((s["latitude"], s["longitude"]), ref)
            if dist > tol_km:
                err("stadium %s: point is %.0f m from the %s (max %.0f m)" % (sid, dist * 1000, what, tol_km * 1000))

    # ---- league completeness
    counts = {}
    for lg, seasons in sorted(manual.EXPECTED_TEAM_COUNTS.items()):
        if "league_" + lg not in leagues:
            err("league %s missing" % lg)
        for season, expected in sorted(seasons.items()):
            n = sum(1 for t in teams.values() if t["leagueId"] == "league_" + lg and t.get("firstSeason", 0) <= season)
            counts[(lg, season)] = n
            if n != expected:
                err("league %s: %d teams for %d, expected %d" % (lg, n, season, expected))
    for lid in leagues:
        if lid[len("league_"):] not in manual.EXPECTED_TEAM_COUNTS:
            err("league %s has no expected team count" % lid)

    # ---- seed scenarios (must be present as data)
    def alias_names(sid):
        return [(a["name"], a["validFrom"], a["validUntil"]) for a in sorted(d["stadium_aliases"], key=lambda a: a["validFrom"] or "") if a["stadiumId"] == sid]

    def expect(cond, msg):
        if not cond:
            err("seed scenario: " + msg)

    op = alias_names("stadium_mlb_oracle_park")
    expect([n for n, f, u in op] == ["Pacific Bell Park", "SBC Park", "AT&T Park", "Oracle Park"], "Oracle Park naming chain %r" % op)
    expect(("Oracle Park", "2019-01-10", None) in op, "Oracle Park from 2019-01-10")
    cc = alias_names("stadium_nba_crypto_com_arena")
    expect(("Crypto.com Arena", "2021-12-25", None) in cc and any(n == "Staples Center" and u == "2021-12-25" for n, f, u in cc), "Staples -> Crypto.com 2021-12-25")
    expect(stadiums.get("stadium_mlb_oakland_coliseum", {}).get("deprecatedAt") == "2024-09-26", "Oakland Coliseum deprecatedAt 2024-09-26")
    ath = teams.get("team_mlb_athletics", {})
    expect(ath.get("name") == "Athletics" and ath.get("homeStadiumId") == "stadium_mlb_sutter_health_park", "Athletics at Sutter Health Park")
    ta_names = lambda tid: [a["name"] for a in sorted(d["team_aliases"], key=lambda a: a["validFrom"] or "") if a["teamId"] == tid]
    expect(ta_names("team_mlb_athletics")[-2:] == ["Oakland Athletics", "Athletics"], "A's aliases")
    expect(ta_names("team_nhl_utah_mammoth")[-3:] == ["Arizona Coyotes", "Utah Hockey Club", "Utah Mammoth"], "Coyotes -> Utah aliases")
    ut = [x["stadiumId"] for x in sorted(d["team_venues"], key=lambda x: x["validFrom"]) if x["teamId"] == "team_nhl_utah_mammoth"]
    expect(ut[-3:] == ["stadium_nhl_desert_diamond_arena", "stadium_nhl_mullett_arena", "stadium_nba_delta_center"], "Utah venue history %r" % ut)
    expect(stadiums.get("stadium_nhl_mullett_arena", {}).get("deprecatedAt") is not None, "Mullett Arena deprecated")

    def current_tenants(sid):
        return {x["teamId"] for x in d["team_venues"] if x["stadiumId"] == sid and x["validUntil"] is None}
    expect(current_tenants("stadium_nfl_metlife_stadium") == {"team_nfl_giants", "team_nfl_jets"}, "MetLife shared by Giants/Jets")
    expect(current_tenants("stadium_nfl_sofi_stadium") == {"team_nfl_rams", "team_nfl_chargers"}, "SoFi shared by Rams/Chargers")
    expect({"team_nba_lakers", "team_nhl_kings", "team_wnba_sparks"} <= current_tenants("stadium_nba_crypto_com_arena"), "Crypto.com tenants")
    expect(teams.get("team_nba_clippers", {}).get("homeStadiumId") == "stadium_nba_intuit_dome", "Clippers at Intuit Dome")
    expect({"team_nba_knicks", "team_nhl_rangers"} <= current_tenants("stadium_nba_madison_square_garden"), "MSG shared")
    for tid in ("team_nwsl_boston_legacy", "team_nwsl_denver_summit"):
        expect(teams.get(tid, {}).get("firstSeason") == 2026 and teams[tid].get("leagueId") == "league_nwsl",
               "%s: NWSL 2026 expansion team with firstSeason 2026" % tid)
    expect("team_nwsl_denver_summit" in current_tenants("stadium_mls_dick_s_sporting_goods_park"), "Denver Summit at Dick's Sporting Goods Park (2026)")
    expect("team_nwsl_boston_legacy" in current_tenants("stadium_nfl_gillette_stadium"), "Boston Legacy at Gillette Stadium (2026)")
    cpa = stadiums.get("stadium_nhl_climate_pledge_arena", {}).get("capacityBySport", {})
    expect(set(cpa) == {"basketball", "ice_hockey"}, "Climate Pledge Arena capacityBySport basketball + ice_hockey, got %r" % cpa)

    check_achievements(leagues, confs, divs)
    game_summary = check_games(stadiums, teams, d["team_venues"])

    # ---- report
    if ERRORS:
        sys.stderr.write("validate.py: %d problem(s):\n" % len(ERRORS))
        for e in ERRORS:
            sys.stderr.write("  - " + e + "\n")
        sys.exit(1)
    per_league = ", ".join(
        "%s %s" % (leagues["league_" + lg]["abbreviation"],
                   " / ".join("%d (%d)" % (counts[(lg, s)], s) for s in sorted(manual.EXPECTED_TEAM_COUNTS[lg])))
        for lg in sorted(manual.EXPECTED_TEAM_COUNTS))
    active = [s for s in stadiums.values() if s["deprecatedAt"] is None]
    shared = [sid for sid in stadiums if len(current_tenants(sid)) > 1]
    approx_sa = sum(1 for a in d["stadium_aliases"] if a.get("datesApproximate"))
    print("validate.py: OK. Coverage: %d leagues, %d conferences, %d divisions; teams per league (season): %s; "
          "%d teams in total. %d venues (%d current homes, %d deprecated, %d currently shared by 2+ teams), "
          "%d venue name aliases (%d with approximate dates), %d team name aliases, %d home-venue tenancies (%d closed)."
          % (len(leagues), len(confs), len(divs), per_league, len(teams), len(stadiums), len(active),
             len(stadiums) - len(active), len(shared), len(d["stadium_aliases"]), approx_sa, len(d["team_aliases"]),
             len(d["team_venues"]), sum(1 for x in d["team_venues"] if x["validUntil"])))
    print(game_summary)


# --------------------------------------------------------------------------- games (Resources/canonical/games)
# Expected games per league-season file: (games, final). Each number is explained in DATASET.md ("Games").
EXPECTED_GAMES = {
    "mlb_2018": (2432, 2431), "mlb_2019": (2430, 2429), "mlb_2020": (900, 898), "mlb_2021": (2430, 2429),
    "mlb_2022": (2430, 2430), "mlb_2023": (2430, 2430), "mlb_2024": (2430, 2429), "mlb_2025": (2430, 2430),
    "mlb_2026": (2430, 1934), "mlb_2027": (2430, 0),
    "nfl_2020": (269, 269), "nfl_2021": (285, 285), "nfl_2022": (284, 284), "nfl_2023": (285, 285), "nfl_2024": (285, 285),
    "nfl_2025": (285, 285),
    "nfl_2026": (272, 0),
    "nba_2022": (1230, 1230), "nba_2023": (1231, 1231), "nba_2024": (1321, 1321), "nba_2025": (1322, 1322),
    "nba_2026": (1200, 0),
    "nhl_2009": (1318, 1318), "nhl_2016": (1317, 1317), "nhl_2022": (1400, 1400), "nhl_2024": (1398, 1398),
    "nhl_2025": (1386, 1378), "nhl_2026": (1344, 0),
    "wnba_2025": (311, 311), "wnba_2026": (331, 275),
    "mls_2025": (510, 164),
    "nwsl_2022": (137, 137), "nwsl_2023": (137, 137), "nwsl_2024": (189, 189), "nwsl_2025": (91, 91),
}
# Complete regular-season schedules (raw/games/README.md): (games, home games) of each of the league's teams that season,
# and how many games are timeTBD — exactly those whose source gives no start time (MLB 2027: all but the one timed event).
SCHEDULES = {"nhl_2026": (84, 42, 0), "mlb_2027": (162, 81, 2429)}
GAME_KEYS = {"id", "leagueId", "season", "seasonLabel", "gameType", "startTime", "timeTBD", "localDate", "homeTeamId",
             "awayTeamId", "stadiumId", "neutralSite", "status", "homeScore", "awayScore", "source", "sourceGameId"}
GAME_TYPES = {"regular", "playoff", "playin", "cup", "allstar"}
GAME_STATUSES = {"scheduled", "final", "postponed", "cancelled"}
SPLIT_SEASON = {"nba", "nhl"}  # seasonLabel "2025-26"
DOUBLEHEADER_LEAGUES = {"mlb"}  # the only league where the same two teams meet twice at the same ground on one day
MIN_GAP = dt.timedelta(hours=2, minutes=30)  # two games of one team closer than this = a double booking


def check_achievements(leagues, confs, divs):
    """Every definition has a canonical id, a known requirement and a scope that exists and nests."""
    for a in load("achievements"):
        where = "achievements.json %s" % a.get("id")
        if not re.fullmatch(r"achievement(_[a-z0-9]+)+", a.get("id") or ""):
            err("%s: bad id" % where)
        if a.get("requirement") not in ("allVenues", "venueCount"):
            err("%s: requirement must be allVenues or venueCount" % where)
        if a.get("requirement") == "venueCount" and not (isinstance(a.get("count"), int) and a["count"] > 0):
            err("%s: venueCount needs a positive count" % where)
        if a.get("requirement") == "allVenues" and not a.get("leagueId"):
            err("%s: allVenues needs a league scope" % where)
        for key, known in (("leagueId", leagues), ("conferenceId", confs), ("divisionId", divs)):
            if a.get(key) is not None and a[key] not in known:
                err("%s: unknown %s %s" % (where, key, a[key]))
        if a.get("divisionId") in divs and divs[a["divisionId"]]["leagueId"] != a.get("leagueId"):
            err("%s: division %s is not in league %s" % (where, a["divisionId"], a.get("leagueId")))


def check_games(stadiums, teams, team_venues):
    gdir = os.path.join(CANON, "games")
    names = sorted(f[:-5] for f in os.listdir(gdir) if f.endswith(".json")) if os.path.isdir(gdir) else []
    tenancy = {}
    for x in team_venues:
        tenancy.setdefault(x["teamId"], []).append((x["validFrom"] or "", x["validUntil"] or "9999", x["stadiumId"]))
    seen_ids, by_id, per_team = set(), {}, {}
    summary = []
    for name in names:
        m = re.fullmatch(r"(mlb|nfl|nba|nhl|wnba|mls|nwsl)_(\d{4})", name)
        if not m:
            err("games/%s.json: file name must be <league>_<startYear>" % name)
            continue
        league, season = m.group(1), int(m.group(2))
        with open(os.path.join(gdir, name + ".json"), encoding="utf-8") as f:
            text = f.read()
        games = json.loads(text)
        want = "[\n" + ",\n".join(json.dumps(g, sort_keys=True, separators=(",", ":"), ensure_ascii=False) for g in games) + "\n]\n"
        if text != want:
            err("games/%s.json: not one compact game per line with sorted keys" % name)
        if [(g.get("startTime"), g.get("id")) for g in games] != sorted((g.get("startTime"), g.get("id")) for g in games):
            err("games/%s.json: not sorted by (startTime, id)" % name)
        label = "%d-%02d" % (season, (season + 1) % 100) if league in SPLIT_SEASON else str(season)
        # one game per (localDate, home, away): a second row is a duplicate from two sources (or a make-up kept twice);
        # MLB doubleheaders are the exception (two games, never more)
        meetings = {}
        for g in games:
            key = (g.get("localDate"), g.get("homeTeamId"), g.get("awayTeamId"))
            meetings.setdefault(key, []).append(g.get("id"))
        for key, ids in sorted(meetings.items(), key=lambda kv: [str(x) for x in kv[0]]):
            if len(ids) > (2 if league in DOUBLEHEADER_LEAGUES else 1):
                err("games/%s.json: %d games on %s with home %s and away %s: %s" % (name, len(ids), key[0], key[1], key[2], ", ".join(ids)))
        for g in games:
            gid = g.get("id")
            where = "game %s" % gid
            if set(g) != GAME_KEYS:
                err("%s: keys %s" % (where, sorted(set(g) ^ GAME_KEYS)))
                continue
            if not re.fullmatch(r"[a-z]+(_[a-z0-9]+)+", gid or "") or not gid.startswith("game_%s_%d_" % (league, season)):
                err("%s: bad id for %s" % (where, name))
            if gid in seen_ids:
                err("%s: duplicate id" % where)
            seen_ids.add(gid)
            by_id[gid] = g
            if g["leagueId"] != "league_" + league or g["season"] != season or g["seasonLabel"] != label:
                err("%s: leagueId/season/seasonLabel %s/%r/%r do not match the file %s" % (where, g["leagueId"], g["season"], g["seasonLabel"], name))
            if g["gameType"] not in GAME_TYPES or g["status"] not in GAME_STATUSES:
                err("%s: gameType %r / status %r" % (where, g["gameType"], g["status"]))
            if not isinstance(g["source"], str) or not g["source"] or not isinstance(g["sourceGameId"], str) or not g["sourceGameId"]:
                err("%s: source/sourceGameId missing" % where)
            if not isinstance(g["timeTBD"], bool) or not isinstance(g["neutralSite"], bool):
                err("%s: timeTBD/neutralSite must be booleans" % where)
            # teams: exist, in this league, playing that season
            for side in ("homeTeamId", "awayTeamId"):
                t = teams.get(g[side])
                if t is None or t["leagueId"] != "league_" + league:
                    err("%s: %s %r is no %s team" % (where, side, g[side], league))
                elif t.get("firstSeason", 0) > season:
                    err("%s: %s %s starts in %d" % (where, side, g[side], t["firstSeason"]))
            if g["homeTeamId"] == g["awayTeamId"]:
                err("%s: a team plays itself" % where)
            # time and local date
            try:
                start = dt.datetime.strptime(g["startTime"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.timezone.utc)
            except (TypeError, ValueError):
                err("%s: startTime %r is not UTC ISO 8601 (Z)" % (where, g["startTime"]))
                continue
            s = stadiums.get(g["stadiumId"])
            if s is None:
                err("%s: stadiumId %r does not resolve" % (where, g["stadiumId"]))
                continue
            local = start.astimezone(zoneinfo.ZoneInfo(s["timeZone"]))
            if g["localDate"] != local.date().isoformat():
                err("%s: localDate %s != %s (startTime in %s)" % (where, g["localDate"], local.date(), s["timeZone"]))
            if g["timeTBD"] and local.strftime("%H:%M") != "19:00":
                err("%s: timeTBD but startTime is not 19:00 venue-local" % where)
            day = g["localDate"]
            # venue open that day
            if s["yearOpened"] > int(day[:4]):
                err("%s: %s opened in %d, after the game (%s)" % (where, s["id"], s["yearOpened"], day))
            if s.get("deprecatedAt") and s["deprecatedAt"] < day:
                err("%s: %s deprecated %s, before the game (%s)" % (where, s["id"], s["deprecatedAt"], day))
            # home venue vs. neutral site
            home_venues = [v for f, u, v in tenancy.get(g["homeTeamId"], []) if f <= day < u]
            if not home_venues:
                err("%s: home team %s has no tenancy on %s" % (where, g["homeTeamId"], day))
            elif g["neutralSite"] != (g["stadiumId"] != home_venues[0]):
                err("%s: neutralSite %s but the home team's venue that day is %s (game at %s)" % (where, g["neutralSite"], home_venues[0], g["stadiumId"]))
            # scores iff final
            scored = isinstance(g["homeScore"], int) and isinstance(g["awayScore"], int) and g["homeScore"] >= 0 and g["awayScore"] >= 0
            if (g["status"] == "final") != scored or (not scored and (g["homeScore"] is not None or g["awayScore"] is not None)):
                err("%s: status %s with scores %r-%r" % (where, g["status"], g["homeScore"], g["awayScore"]))
            if not g["timeTBD"] and g["status"] not in ("postponed", "cancelled"):
                for side in ("homeTeamId", "awayTeamId"):
                    per_team.setdefault(g[side], []).append((start, gid))
        if name in SCHEDULES:
            each, at_home, tbd = SCHEDULES[name]
            played, hosted = {}, {}
            for g in games:
                played[g.get("homeTeamId")] = played.get(g.get("homeTeamId"), 0) + 1
                played[g.get("awayTeamId")] = played.get(g.get("awayTeamId"), 0) + 1
                hosted[g.get("homeTeamId")] = hosted.get(g.get("homeTeamId"), 0) + 1
            for tid in sorted(t for t, x in teams.items() if x["leagueId"] == "league_" + league and x.get("firstSeason", 0) <= season):
                if (played.get(tid, 0), hosted.get(tid, 0)) != (each, at_home):
                    err("games/%s.json: %s plays %d games, %d at home; expected %d, %d" % (
                        name, tid, played.get(tid, 0), hosted.get(tid, 0), each, at_home))
            types, got_tbd = sorted({g.get("gameType") for g in games}), sum(g.get("timeTBD") is True for g in games)
            if got_tbd != tbd or types != ["regular"]:
                err("games/%s.json: %d timeTBD (expected %d), game types %s (expected regular)" % (name, got_tbd, tbd, types))
        exp = EXPECTED_GAMES.get(name)
        got = (len(games), sum(g.get("status") == "final" for g in games))
        if exp is None:
            err("games/%s.json: no EXPECTED_GAMES entry (add it with its explanation in DATASET.md)" % name)
        elif got != exp:
            err("games/%s.json: %d games (%d final), expected %d (%d)" % (name, got[0], got[1], exp[0], exp[1]))
        summary.append("%s %d" % (name, len(games)))
    for name in sorted(set(EXPECTED_GAMES) - set(names)):
        err("games/%s.json missing" % name)
    # no team plays twice at once
    for tid, starts in sorted(per_team.items()):
        starts.sort()
        for (a, ga), (b, gb) in zip(starts, starts[1:]):
            if b - a < MIN_GAP:
                err("team %s: %s and %s start %s apart" % (tid, ga, gb, b - a))

    # spot checks (games the sources were checked against by hand, raw/games/README.md)
    def spot(gid, **want):
        g = by_id.get(gid)
        if g is None:
            err("games spot check: %s missing" % gid)
            return
        bad = {k: (g.get(k), v) for k, v in want.items() if g.get(k) != v}
        if bad:
            err("games spot check %s: %s" % (gid, ", ".join("%s is %r, want %r" % (k, a, b) for k, (a, b) in sorted(bad.items()))))
    spot("game_mlb_2025_778563", homeTeamId="team_mlb_cubs", awayTeamId="team_mlb_dodgers", homeScore=1, awayScore=4,
         stadiumId="stadium_mlb_tokyo_dome", localDate="2025-03-18", startTime="2025-03-18T10:10:00Z", neutralSite=True, status="final")
    if stadiums.get("stadium_mlb_tokyo_dome", {}).get("timeZone") != "Asia/Tokyo":
        err("games spot check: Tokyo Dome time zone is not Asia/Tokyo")
    spot("game_nba_2025_0022500001", homeTeamId="team_nba_thunder", awayTeamId="team_nba_rockets", homeScore=125, awayScore=124,
         stadiumId="stadium_nba_paycom_center", startTime="2025-10-21T23:30:00Z", status="final", gameType="regular", timeTBD=False)
    spot("game_nfl_2025_2025_01_kc_lac", homeTeamId="team_nfl_chargers", awayTeamId="team_nfl_chiefs", homeScore=27, awayScore=21,
         stadiumId="stadium_nfl_neo_quimica_arena", localDate="2025-09-05", startTime="2025-09-06T00:00:00Z", neutralSite=True)
    spot("game_nfl_2024_2024_22_kc_phi", homeTeamId="team_nfl_eagles", awayTeamId="team_nfl_chiefs", homeScore=40, awayScore=22,
         stadiumId="stadium_nfl_caesars_superdome", gameType="playoff", neutralSite=True)
    spot("game_nhl_2025_2025020001", homeTeamId="team_nhl_panthers", awayTeamId="team_nhl_blackhawks", homeScore=3, awayScore=2,
         stadiumId="stadium_nhl_amerant_bank_arena", startTime="2025-10-07T21:00:00Z")
    spot("game_nhl_2024_2024020001", homeTeamId="team_nhl_sabres", awayTeamId="team_nhl_devils", homeScore=1, awayScore=4,
         stadiumId="stadium_nhl_o2_arena", neutralSite=True)
    for gid, venue in (("game_nfl_2025_2025_04_min_pit", "stadium_nfl_croke_park"), ("game_nfl_2025_2025_05_min_cle", "stadium_nfl_tottenham_hotspur_stadium"),
                       ("game_nfl_2025_2025_06_den_nyj", "stadium_nfl_tottenham_hotspur_stadium"), ("game_nfl_2025_2025_07_la_jax", "stadium_nfl_wembley_stadium"),
                       ("game_nfl_2025_2025_10_atl_ind", "stadium_nfl_olympiastadion_berlin"), ("game_nfl_2025_2025_11_was_mia", "stadium_nfl_estadio_santiago_bernabeu")):
        spot(gid, stadiumId=venue, neutralSite=True)
    # ESPN (ismayc) seasons: raw/games/README.md spot checks
    spot("game_nba_2026_401909088", homeTeamId="team_nba_pistons", awayTeamId="team_nba_celtics", startTime="2026-10-20T19:00:00Z",
         stadiumId="stadium_nba_little_caesars_arena", status="scheduled", gameType="regular", sourceGameId="401909088")
    spot("game_nba_2026_401910334", homeTeamId="team_nba_spurs", awayTeamId="team_nba_pelicans", stadiumId="stadium_nba_accor_arena",
         neutralSite=True, localDate="2027-01-14")
    spot("game_nfl_2026_401872656", homeTeamId="team_nfl_seahawks", awayTeamId="team_nfl_patriots", startTime="2026-09-10T00:20:00Z",
         stadiumId="stadium_nfl_lumen_field", status="scheduled", timeTBD=False)
    spot("game_nfl_2026_401872965", homeTeamId="team_nfl_commanders", awayTeamId="team_nfl_colts", startTime="2026-10-04T13:30:00Z",
         stadiumId="stadium_nfl_tottenham_hotspur_stadium", neutralSite=True)
    spot("game_nfl_2026_401872660", homeTeamId="team_nfl_texans", stadiumId="stadium_nfl_nrg_stadium")  # ESPN: "Reliant Stadium"
    # the four games at the venues added for the current seasons (manual.NEUTRAL_VENUES; venue-local dates)
    for gid, venue, day in (("game_nba_2026_401910357", "stadium_nba_co_op_live", "2027-01-17"),
                            ("game_nfl_2026_401872657", "stadium_nfl_melbourne_cricket_ground", "2026-09-11"),  # 09-10 in the US
                            ("game_nfl_2026_401872960", "stadium_nfl_estadio_do_maracana", "2026-09-27"),  # ESPN: "Maracanã Stadium"
                            ("game_nfl_2026_401873011", "stadium_nfl_stade_de_france", "2026-10-25")):
        spot(gid, stadiumId=venue, localDate=day, neutralSite=True, status="scheduled")
    spot("game_nfl_2026_401873187", homeTeamId="team_nfl_texans", awayTeamId="team_nfl_titans", timeTBD=True, localDate="2027-01-10",
         startTime="2027-01-11T01:00:00Z")  # week 18: kick-off not set, 19:00 Houston
    # NHL 2026-27 (NHL API capture) and MLB 2027 (open-sports-cal): raw/games/README.md spot checks, the neutral sites of
    # gap 10 on their venue-local day, and the MLB games away from the home park
    spot("game_nhl_2026_2026020001", homeTeamId="team_nhl_hurricanes", awayTeamId="team_nhl_panthers", startTime="2026-09-29T21:00:00Z",
         stadiumId="stadium_nhl_lenovo_center", status="scheduled", timeTBD=False, neutralSite=False, seasonLabel="2026-27")
    spot("game_nhl_2026_2026020037", homeTeamId="team_nhl_ducks", awayTeamId="team_nhl_panthers", startTime="2026-10-05T00:00:00Z",
         localDate="2026-10-04", stadiumId="stadium_nhl_honda_center")
    for gid, venue, day in (("2026020182", "stadium_nhl_princess_auto_stadium", "2026-10-25"),
                            ("2026020309", "stadium_nhl_helsinki_halli", "2026-11-12"), ("2026020321", "stadium_nhl_helsinki_halli", "2026-11-14"),
                            ("2026020560", "stadium_nhl_psd_bank_dome", "2026-12-18"), ("2026020577", "stadium_nhl_psd_bank_dome", "2026-12-20"),
                            ("2026020647", "stadium_nhl_rice_eccles_stadium", "2026-12-31"),
                            ("2026020974", "stadium_nfl_at_t_stadium", "2027-02-20")):  # 2027-02-21T01:00Z
        spot("game_nhl_2026_" + gid, stadiumId=venue, localDate=day, neutralSite=True)
    spot("game_mlb_2027_2027_03_25_athletics_pirates_1", homeTeamId="team_mlb_pirates", awayTeamId="team_mlb_athletics",
         stadiumId="stadium_mlb_pnc_park", localDate="2027-03-25", startTime="2027-03-25T23:00:00Z", timeTBD=True,
         status="scheduled", sourceGameId="2027-03-25-athletics-pirates-1")
    spot("game_mlb_2027_2027_08_19_cubs_blue_jays_1", stadiumId="stadium_mlb_bowman_field", startTime="2027-08-19T23:10:00Z",
         timeTBD=False, neutralSite=True, localDate="2027-08-19")  # Journey Bank Ballpark, the one timed game
    spot("game_mlb_2027_2027_08_12_red_sox_royals_1", stadiumId="stadium_mlb_field_of_dreams", neutralSite=True, timeTBD=True)
    spot("game_mlb_2027_2027_05_31_padres_athletics_1", stadiumId="stadium_mlb_las_vegas_ballpark", neutralSite=True)
    spot("game_mlb_2027_2027_06_22_cubs_padres_2", homeTeamId="team_mlb_padres", localDate="2027-06-22", timeTBD=True)  # doubleheader
    spot("game_nba_2025_0022500644", localDate="2026-01-25", startTime="2026-01-25T22:30:00Z", homeScore=85, awayScore=111)  # make-up
    spot("game_nba_2025_0062500001", startTime="2025-12-17T01:30:00Z", timeTBD=False, stadiumId="stadium_nhl_t_mobile_arena", gameType="cup")
    spot("game_nba_2025_401859967", homeTeamId="team_nba_spurs", awayTeamId="team_nba_knicks", homeScore=90, awayScore=94,
         gameType="playoff", startTime="2026-06-14T00:30:00Z", stadiumId="stadium_nba_frost_bank_center")  # Finals game 5
    spot("game_nba_2025_401866755", homeTeamId="team_nba_hornets", awayTeamId="team_nba_heat", homeScore=127, awayScore=126, gameType="playin")
    spot("game_wnba_2026_401857321", homeTeamId="team_wnba_liberty", awayTeamId="team_wnba_aces", homeScore=93, awayScore=85,
         gameType="cup", stadiumId="stadium_nba_barclays_center", status="final")
    spot("game_wnba_2026_183", localDate="2026-07-20", homeScore=98, awayScore=99, status="final")  # make-up of 07-16
    fenway = [g for g in by_id.values() if g["season"] == 2024 and g["homeTeamId"] == "team_mlb_red_sox"
              and g["stadiumId"] == "stadium_mlb_fenway_park" and g["status"] == "final" and g["homeScore"] is not None]
    if not fenway:
        err("games spot check: no final 2024 Red Sox home game at Fenway Park")
    total = len(by_id)
    return ("validate.py: games OK: %d games in %d league-season files (%s); %d final, %d neutral site, %d timeTBD."
            % (total, len(names), ", ".join(summary), sum(g["status"] == "final" for g in by_id.values()),
               sum(g["neutralSite"] for g in by_id.values()), sum(g["timeTBD"] for g in by_id.values())))


if __name__ == "__main__":
    main()
