#!/usr/bin/env python3
"""Build the canonical sports dataset (Resources/canonical/*.json).

Usage (from the repo root):  python3 scripts/dataset/build.py

Inputs: ../shared/data/raw/** (read-only public snapshots, see SOURCES.md there)
        scripts/dataset/manual.py (hand-maintained facts + source mappings)
Output is deterministic: sorted keys, stable ordering, 2-space indent,
trailing newline.  Python 3 standard library only.
"""
import csv
import datetime as dt
import json
import math
import os
import re
import sys
import unicodedata
import zoneinfo

SCRIPT_DIR = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.normpath(os.path.join(SCRIPT_DIR, "..", ".."))
RAW = os.path.normpath(os.path.join(REPO_ROOT, "..", "shared", "data", "raw"))
OUT_DIR = os.path.join(REPO_ROOT, "Resources", "canonical")

sys.dont_write_bytecode = True  # keep the tree clean
sys.path.insert(0, SCRIPT_DIR)
import manual  # noqa: E402

CROSSCHECK_KM = 1.0
WARNINGS = []


def warn(msg):
    WARNINGS.append(msg)


def fail(msg):
    sys.stderr.write("build.py: ERROR: " + msg + "\n")
    sys.exit(1)


# --------------------------------------------------------------------------- helpers
def slugify(text):
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii").lower()
    return re.sub(r"[^a-z0-9]+", "_", text).strip("_")


def norm_name(text):
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii").lower()
    return re.sub(r"[^a-z0-9]+", "", text)


def parse_date(value):
    """Return (iso_date or None, approximate: bool). See manual.py DATE NOTATION."""
    if value is None:
        return None, False
    s = str(value).strip()
    approx = s.endswith("~")
    s = s.rstrip("~")
    if re.fullmatch(r"\d{4}", s):
        return s + "-01-01", True
    if re.fullmatch(r"\d{4}-\d{2}", s):
        return s + "-01", True
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}", s):
        dt.date.fromisoformat(s)
        return s, approx
    fail("bad date %r" % value)


def haversine_km(a, b):
    lat1, lon1 = map(math.radians, a)
    lat2, lon2 = map(math.radians, b)
    h = math.sin((lat2 - lat1) / 2) ** 2 + math.cos(lat1) * math.cos(lat2) * math.sin((lon2 - lon1) / 2) ** 2
    return 2 * 6371.0 * math.asin(math.sqrt(h))


def raw_path(*parts):
    return os.path.join(RAW, *parts)


def read_csv(*parts):
    with open(raw_path(*parts), encoding="utf-8-sig", newline="") as f:
        return list(csv.DictReader(f))


def read_json(*parts):
    with open(raw_path(*parts), encoding="utf-8") as f:
        return json.load(f)


def num(x):
    if x is None:
        return None
    if isinstance(x, (int, float)):
        return x
    x = str(x).strip().replace(",", "")
    if not x:
        return None
    try:
        return float(x)
    except ValueError:
        return None


# --------------------------------------------------------------------------- raw loaders
def load_sources():
    """Return {key: record}; record has any of lat, lon, capacity, opened, name, abbr, founded, conf, div."""
    src = {}
    labels = {}

    def put(key, label, **rec):
        src[key] = rec
        labels[key] = label

    for r in read_json("tkirk21__mybaseballpassport-data", "arenas.json"):
        if r.get("league") == "MLB":
            put("mlb:" + r["teamCode"], "tkirk21-mlb", lat=num(r["latitude"]), lon=num(r["longitude"]),
                name=r["teamName"], arena=r["arena"], tz=r.get("timezone"))
    for r in read_json("tkirk21__mybaseballpassport-data", "historicalTeams.json"):
        if r.get("league") == "MLB":
            put("mlbhist:%s|%s" % (r["teamName"], r["arena"]), "tkirk21-mlb-history", lat=num(r["latitude"]), lon=num(r["longitude"]))
    for f in read_json("cageyjames__GeoJSON-Ballparks", "legacy_ballpark.geojson")["features"]:
        p = f["properties"]
        if p.get("Class") == "Majors":
            put("legacy:" + p["Team"], "cageyjames-legacy", lat=num(p["Lat"]), lon=num(p["Long"]), arena=p["Ballpark"])
    for f in read_json("cageyjames__GeoJSON-Ballparks", "ballparks.json")["features"]:
        p = {k.lower(): v for k, v in f["properties"].items()}
        if p.get("class") == "MLB":
            lon, lat = f["geometry"]["coordinates"]
            put("cagey:" + p["team"], "cageyjames-2025", lat=lat, lon=lon, conf=p["league"], div=p["division"], checkonly=True)
    for f in read_json("d-kilc__stadiums-dataset", "data.geojson"):
        p = f["properties"]
        lon, lat = f["geometry"]["coordinates"]
        put("dkilc:" + p["team"], "d-kilc", lat=lat, lon=lon, capacity=num(p.get("capacity")), opened=num(p.get("openedYear")))
    for r in read_csv("greerreNFL__Stadiums", "data", "stadiums.csv"):
        put("nfl:" + r["stadium_id"], "greerreNFL", lat=num(r["lat"]), lon=num(r["lon"]), capacity=num(r["capacity"]),
            opened=num(r["opened"]), tz=r["tz"], arena=r["stadium_name"])
    for r in read_csv("tkirk21__myhockeypassport-data", "EXCERPT_arenas_NHL_only.csv"):
        put("nhl:" + r["teamCode"], "tkirk21-nhl", lat=num(r["latitude"]), lon=num(r["longitude"]), name=r["teamName"],
            abbr=r["teamCode"], tz=r["timezone"], arena=r["arena"])
    for name, r in read_json("NHLScoreBot__arenas", "arenas.json").items():
        put("nhlsb:" + name, "NHLScoreBot", lat=num(r["lat"]), lon=num(r["long"]))
    for code, r in read_json("nlamberson__nhl-arenas", "backend", "app", "data", "arenas.json").items():
        put("nhlcap:" + code, "nlamberson", capacity=num(r["capacity"]), arena=r["name"])
    for r in read_csv("chenguanhua__nba-arenas", "nba_team_arena.csv"):
        put("nba:" + r["team name"], "chenguanhua", lat=num(r["latitude"]), lon=num(r["longitude"]), arena=r["stadium"])
    for r in read_csv("R-Becker__2025-26_NBA_Games_Explorer", "data", "nba_teams.csv"):
        put("rbecker:" + r["abbreviation"], "R-Becker", name=r["full_name"], abbr=r["abbreviation"],
            founded=num(r["year_founded"]), arena=r["arena"])
    for r in read_csv("gavinr__usa-soccer", "mls.csv"):
        put("mls:" + r["team"], "gavinr-mls", lat=num(r["latitude"]), lon=num(r["longitude"]), capacity=num(r["stadium_capacity"]),
            name=r["team"], founded=num(re.sub(r"\[.*?\]", "", r["joined"])), arena=r["stadium"])
    for r in read_csv("gavinr__usa-soccer", "nwsl.csv"):
        put("nwsl:" + r["team"], "gavinr-nwsl", lat=num(r["latitude"]), lon=num(r["longitude"]), name=r["team"],
            founded=num(re.sub(r"\[.*?\]", "", r["founded"])), arena=r["stadium"])
    for r in read_json("tkirk21__mysoccerpassport-data", "arenas.json"):
        if r.get("league") == "MLS":
            put("soc:" + r["teamName"], "tkirk21-soccer", lat=num(r["latitude"]), lon=num(r["longitude"]),
                capacity=num(r.get("capacity")), abbr=r["teamCode"], arena=r["arena"])
    for lg in ("mlb", "nba", "nfl", "nhl"):
        for r in read_json("dcho10__stadium-tracker", "server", "seeders", "%sSeeds.json" % lg):
            put("dcho:%s:%s" % (lg, r["teamName"]), "dcho10", name=r["teamName"],
                conf=r.get("league") or r.get("conference"), div=r.get("division"), arena=r["stadiumName"])
    return src, labels


SRC, LABELS = load_sources()


def lookup(key):
    if key not in SRC:
        fail("unknown source key %r" % key)
    return SRC[key]


# --------------------------------------------------------------------------- leagues
def build_leagues():
    leagues, confs, divs = [], [], []
    league_sport = {}
    for lid, name, abbr, sport in manual.LEAGUES:
        leagues.append({"id": "league_" + lid, "name": name, "abbreviation": abbr, "sport": sport, "source": "manual"})
        league_sport[lid] = sport
    for lg, cslug, cname, dlist in manual.CONFERENCES:
        cid = "conference_%s_%s" % (lg, cslug)
        confs.append({"id": cid, "leagueId": "league_" + lg, "name": cname, "source": "manual"})
        for dslug, dname in dlist:
            divs.append({"id": "division_%s_%s" % (lg, dslug), "leagueId": "league_" + lg, "conferenceId": cid,
                         "name": dname, "source": "manual"})
    return leagues, confs, divs, league_sport


# --------------------------------------------------------------------------- venues
def resolve_int(spec, field, used):
    if spec is None:
        return None
    if isinstance(spec, int):
        used.add("manual")
        return spec
    rec = lookup(spec)
    val = rec.get(field)
    if val is None:
        fail("source %s has no %s" % (spec, field))
    used.add(LABELS[spec])
    return int(round(val))


def venue_coords(v, notes):
    chosen, chosen_key = None, None
    candidates = []
    for key in v["coords"]:
        if key.startswith("ll:"):
            lat, lon = (float(x) for x in key[3:].split(","))
            label = "manual"
        else:
            rec = lookup(key)
            lat, lon, label = rec.get("lat"), rec.get("lon"), LABELS[key]
            if lat is None or lon is None:
                continue
            if abs(lat) < 1e-6 and abs(lon) < 1e-6:
                notes.append("%s point [0,0] ignored" % label)
                continue
            if v["country"] in ("US", "CA") and lon > 0:
                notes.append("%s longitude sign fixed" % label)
                lon = -lon
            if v["country"] in ("US", "CA") and lat < 0:
                notes.append("%s latitude/longitude swapped - ignored" % label)
                continue
        checkonly = key.startswith("cagey:")
        candidates.append((key, label, (lat, lon), checkonly))
        if chosen is None and not checkonly:
            chosen, chosen_key = (lat, lon), (key, label)
    if chosen is None:
        fail("no coordinates for %s" % v["id"])
    for key, label, pt, checkonly in candidates:
        if key == chosen_key[0]:
            continue
        d = haversine_km(chosen, pt)
        if d > CROSSCHECK_KM:
            tag = "(known-bad source, ignored)" if checkonly else ""
            warn("coords %s: %s differs from %s by %.1f km %s" % (v["id"], key, chosen_key[0], d, tag))
    agreeing = sorted({lab for key, lab, pt, co in candidates
                       if not co and key != chosen_key[0] and haversine_km(chosen, pt) <= CROSSCHECK_KM})
    return chosen, chosen_key[1], agreeing


def venue_timezone(v, notes):
    tz = v.get("tz") or manual.TZ_BY_STATE.get((v["country"], v["state"]))
    if tz is None:
        fail("no time zone rule for %s %s (%s)" % (v["country"], v["state"], v["id"]))
    zoneinfo.ZoneInfo(tz)
    # cross-check with sources that carry a (valid) zone
    for key in v["coords"]:
        rec = SRC.get(key) or {}
        stz = rec.get("tz")
        if stz and key.split(":")[0] in ("nfl", "nhl"):
            alias_ok = {"America/Indianapolis": "America/Indiana/Indianapolis"}
            if alias_ok.get(stz, stz) != tz:
                warn("tz %s: derived %s but %s says %s" % (v["id"], tz, key, stz))
    return tz


def build_aliases_for(owner_id, prefix, entries, fields):
    """entries: list of tuples (name, [city,] from[, until]). Returns list of dicts."""
    out = []
    n = len(entries)
    for i, e in enumerate(entries):
        e = list(e)
        if fields == 2:   # (name, from[, until])
            name, city, vf = e[0], None, e[1]
            vu_explicit = e[2] if len(e) > 2 else "NEXT"
        else:             # (name, city, from[, until])
            name, city, vf = e[0], e[1], e[2]
            vu_explicit = e[3] if len(e) > 3 else "NEXT"
        if vu_explicit == "NEXT":
            vu_raw = None if i == n - 1 else (entries[i + 1][1] if fields == 2 else entries[i + 1][2])
        else:
            vu_raw = vu_explicit
        f, fa = parse_date(vf)
        u, ua = parse_date(vu_raw)
        rec = {"id": "%s_%d" % (prefix, i + 1), "name": name, "validFrom": f, "validUntil": u, "datesApproximate": fa or ua}
        if city is not None:
            rec["city"] = city
        out.append(rec)
    return out


def build_venues(league_sport, team_venues):
    stadiums, aliases = [], []
    seen = set()
    for v in manual.VENUES + manual.NEUTRAL_VENUES:
        if v["id"] in seen:
            fail("duplicate venue id " + v["id"])
        seen.add(v["id"])
        notes = []
        used = set()
        (lat, lon), coord_label, agreeing = venue_coords(v, notes)
        capacity = resolve_int(v["capacity"], "capacity", used)
        opened = resolve_int(v["opened"], "opened", used)
        tz = venue_timezone(v, notes)
        tenancies = [tv for tv in team_venues if tv["stadiumId"] == v["id"]]
        if not tenancies and not v.get("neutral"):
            fail("venue %s has no team tenancy" % v["id"])
        deprecated, dep_approx = None, False
        if tenancies and all(tv["validUntil"] is not None for tv in tenancies):
            last = max(tenancies, key=lambda tv: tv["validUntil"])
            deprecated = (dt.date.fromisoformat(last["validUntil"]) - dt.timedelta(days=1)).isoformat()
            dep_approx = last["datesApproximate"]
        sports = set(v["sports"])
        for tv in tenancies:
            sports.add(league_sport[tv["teamId"].split("_")[1]])
        src_parts = ["coordinates: %s%s" % (coord_label, (" (agrees: %s)" % ", ".join(agreeing)) if agreeing else "")]
        if used:
            src_parts.append("capacity/yearOpened: " + ", ".join(sorted(used)))
        src_parts.append("names/dates/timeZone: manual")
        rec = {
            "id": v["id"], "name": v["name"], "city": v["city"], "state": v["state"], "country": v["country"],
            "latitude": round(lat, 6), "longitude": round(lon, 6), "timeZone": tz,
            "capacity": capacity, "yearOpened": opened, "deprecatedAt": deprecated,
            "deprecatedAtApproximate": dep_approx, "sports": sorted(sports),
            "source": "; ".join(src_parts),
        }
        if v.get("capacity_by_sport"):
            cbs = {}
            for sport, spec in sorted(v["capacity_by_sport"].items()):
                cbs[sport] = resolve_int(spec, "capacity", set())
            rec["capacityBySport"] = cbs
        note = " ".join(([v["note"]] if v.get("note") else []) + (["Build: " + "; ".join(notes) + "."] if notes else []))
        if note:
            rec["note"] = note
        if manual.LEGACY_STADIUM_IDS.get(v["id"]):
            rec["legacyIds"] = sorted(i.upper() for i in manual.LEGACY_STADIUM_IDS[v["id"]])
        stadiums.append(rec)
        slug = v["id"][len("stadium_"):]
        for a in build_aliases_for(v["id"], "stadium_alias_" + slug, v["aliases"], 2):
            a["stadiumId"] = v["id"]
            a["source"] = "manual"
            aliases.append(a)
        if aliases[-1]["name"] != v["name"]:
            fail("last alias of %s (%s) != current name %s" % (v["id"], aliases[-1]["name"], v["name"]))
    return stadiums, aliases


# --------------------------------------------------------------------------- teams
CONF_MAP = {
    ("mlb", "American"): "american_league", ("mlb", "National"): "national_league",
    ("mlb", "AL"): "american_league", ("mlb", "NL"): "national_league",
    ("nfl", "AFC"): "afc", ("nfl", "NFC"): "nfc",
    ("nba", "Eastern"): "eastern", ("nba", "Western"): "western",
    ("nhl", "Eastern"): "eastern", ("nhl", "Western"): "western",
}


def confdiv_from_source(league, key):
    rec = lookup(key)
    conf = CONF_MAP[(league, rec["conf"])]
    div = rec["div"]
    if league == "mlb":
        if not div.startswith(("AL ", "NL ")):
            div = ("AL " if conf == "american_league" else "NL ") + div
        div = slugify(div)
    elif league == "nfl":
        div = slugify(conf + " " + div)
    else:
        div = slugify(div)
    return conf, div


def resolve_field(value, field, league, used):
    if not (isinstance(value, str) and value.startswith("@")):
        if value is not None:
            used.setdefault(field, set()).add("manual")
        return value
    key = value[1:]
    if key.startswith("nba:"):
        key = "rbecker:" + key[4:]
    rec = lookup(key)
    out = rec.get({"name": "name", "abbr": "abbr", "founded": "founded"}[field])
    if out is None:
        fail("source %s has no %s" % (key, field))
    used.setdefault(field, set()).add(LABELS[key])
    return int(out) if field == "founded" else out


def build_teams():
    teams, team_aliases, team_venues = [], [], []
    seen = set()
    for t in manual.TEAMS:
        if t["id"] in seen:
            fail("duplicate team id " + t["id"])
        seen.add(t["id"])
        lg = t["league"]
        used = {}
        name = resolve_field(t["name"], "name", lg, used)
        abbr = resolve_field(t["abbr"], "abbr", lg, used)
        founded = resolve_field(t["founded"], "founded", lg, used)
        conf = div = None
        if isinstance(t["confdiv"], str):
            key = t["confdiv"][1:]
            conf, div = confdiv_from_source(lg, key)
            used.setdefault("conference/division", set()).add(LABELS[key])
            if key.startswith("cagey:"):  # cross-check with dcho10
                alt = "dcho:mlb:" + lookup("mlb:" + t["name"][5:])["name"] if t["name"].startswith("@mlb:") else None
                if alt and alt in SRC and confdiv_from_source(lg, alt) != (conf, div):
                    warn("conf/div %s: cageyjames %s vs dcho10 %s" % (t["id"], (conf, div), confdiv_from_source(lg, alt)))
        elif isinstance(t["confdiv"], tuple):
            conf, div = t["confdiv"]
            used.setdefault("conference/division", set()).add("manual")
            # report overrides of a source value
            dkey = "dcho:%s:%s" % (lg, name)
            if dkey in SRC:
                sc = confdiv_from_source(lg, dkey)
                if sc != (conf, div):
                    warn("conf/div override %s: dcho10 says %s, manual %s" % (t["id"], sc, (conf, div)))
        rec = {"id": t["id"], "leagueId": "league_" + lg, "name": name, "city": t["city"], "abbreviation": abbr}
        if conf:
            rec["conferenceId"] = "conference_%s_%s" % (lg, conf)
        if div:
            rec["divisionId"] = "division_%s_%s" % (lg, div)
        if founded is not None:
            rec["yearFounded"] = founded
        if t.get("first_season"):
            rec["firstSeason"] = t["first_season"]
        if t.get("note"):
            rec["note"] = t["note"]
        current = [v for v in t["venues"] if v[2] is None]
        if len(current) != 1:
            fail("team %s must have exactly one open tenancy" % t["id"])
        rec["homeStadiumId"] = current[0][0]
        parts = ["%s: %s" % (k, ", ".join(sorted(v))) for k, v in sorted(used.items())]
        parts.append("city/venues/aliases: manual")
        rec["source"] = "; ".join(parts)
        teams.append(rec)
        slug = t["id"][len("team_"):]
        for i, (sid, vf, vu) in enumerate(t["venues"]):
            f, fa = parse_date(vf)
            u, ua = parse_date(vu)
            team_venues.append({"id": "team_venue_%s_%d" % (slug, i + 1), "teamId": t["id"], "stadiumId": sid,
                                "validFrom": f, "validUntil": u, "datesApproximate": fa or ua, "source": "manual"})
        als = build_aliases_for(t["id"], "team_alias_" + slug, t["aliases"], 3)
        if als[-1]["name"] != name:
            fail("last alias of %s (%s) != current name %s" % (t["id"], als[-1]["name"], name))
        for a in als:
            a["teamId"] = t["id"]
            a["source"] = "manual"
            # The code the team went by under that name: the current one for the current name, else a known former one.
            code = rec.get("abbreviation") if a["validUntil"] is None else manual.FORMER_ABBREVIATIONS.get((t["id"], a["name"]))
            if code:
                a["abbreviation"] = code
            team_aliases.append(a)
    unused = sorted(set(manual.FORMER_ABBREVIATIONS) - {(a["teamId"], a["name"]) for a in team_aliases})
    if unused:
        fail("FORMER_ABBREVIATIONS names aliases that do not exist: %s" % unused)
    return teams, team_aliases, team_venues


# --------------------------------------------------------------------------- Databank cross-check (informational)
DATABANK_FRANCH = {
    "ARI": "team_mlb_diamondbacks", "OAK": "team_mlb_athletics", "ATL": "team_mlb_braves", "BAL": "team_mlb_orioles",
    "BOS": "team_mlb_red_sox", "CHC": "team_mlb_cubs", "CHW": "team_mlb_white_sox", "CIN": "team_mlb_reds",
    "CLE": "team_mlb_guardians", "COL": "team_mlb_rockies", "DET": "team_mlb_tigers", "HOU": "team_mlb_astros",
    "KCR": "team_mlb_royals", "ANA": "team_mlb_angels", "LAD": "team_mlb_dodgers", "FLA": "team_mlb_marlins",
    "MIL": "team_mlb_brewers", "MIN": "team_mlb_twins", "NYM": "team_mlb_mets", "NYY": "team_mlb_yankees",
    "PHI": "team_mlb_phillies", "PIT": "team_mlb_pirates", "SDP": "team_mlb_padres", "SFG": "team_mlb_giants",
    "SEA": "team_mlb_mariners", "STL": "team_mlb_cardinals", "TBD": "team_mlb_rays", "TEX": "team_mlb_rangers",
    "TOR": "team_mlb_blue_jays", "WSN": "team_mlb_nationals",
}


def active_on(records, key, value, day):
    for r in records:
        if r[key] == value and (r["validFrom"] is None or r["validFrom"] <= day) and (r["validUntil"] is None or day < r["validUntil"]):
            yield r


def databank_crosscheck(team_aliases, team_venues, stadium_aliases):
    alias_names = {}
    for a in stadium_aliases:
        alias_names.setdefault(a["stadiumId"], set()).add(norm_name(a["name"]))
    for sid, extra in manual.EXTRA_NAME_VARIANTS.items():
        alias_names.setdefault(sid, set()).update(norm_name(x) for x in extra)
    notes = []
    for r in read_csv("chadwickbureau__baseballdatabank", "core", "Teams.csv"):
        year = int(r["yearID"])
        if year < 2000 or r["franchID"] not in DATABANK_FRANCH:
            continue
        tid = DATABANK_FRANCH[r["franchID"]]
        day = "%d-07-01" % year
        names = [a["name"] for a in active_on(team_aliases, "teamId", tid, day)]
        if names and r["name"] not in names:
            notes.append("Databank %d %s name %r vs dataset %r" % (year, tid, r["name"], names[0]))
        tvs = list(active_on(team_venues, "teamId", tid, day))
        if tvs:
            sid = tvs[0]["stadiumId"]
            if norm_name(r["park"]) not in alias_names.get(sid, set()):
                notes.append("Databank %d %s park %r is not a known name of %s" % (year, tid, r["park"], sid))
            else:
                cur = [a["name"] for a in active_on(stadium_aliases, "stadiumId", sid, day)]
                if cur and norm_name(cur[0]) != norm_name(r["park"]) and norm_name(r["park"]) not in {norm_name(x) for x in manual.EXTRA_NAME_VARIANTS.get(sid, [])}:
                    notes.append("Databank %d park label %r lags/leads dataset name %r (%s)" % (year, r["park"], cur[0], sid))
    return notes


# --------------------------------------------------------------------------- output
def dump(name, data):
    os.makedirs(OUT_DIR, exist_ok=True)
    path = os.path.join(OUT_DIR, name)
    text = json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write(text)


def main():
    leagues, confs, divs, league_sport = build_leagues()
    teams, team_aliases, team_venues = build_teams()
    stadiums, stadium_aliases = build_venues(league_sport, team_venues)
    db_notes = databank_crosscheck(team_aliases, team_venues, stadium_aliases)

    key = lambda r: r["id"]
    dump("leagues.json", sorted(leagues, key=key))
    dump("conferences.json", sorted(confs, key=key))
    dump("divisions.json", sorted(divs, key=key))
    dump("stadiums.json", sorted(stadiums, key=key))
    dump("teams.json", sorted(teams, key=key))
    dump("stadium_aliases.json", sorted(stadium_aliases, key=lambda a: (a["stadiumId"], a["validFrom"] or "", a["id"])))
    dump("team_aliases.json", sorted(team_aliases, key=lambda a: (a["teamId"], a["validFrom"] or "", a["id"])))
    dump("team_venues.json", sorted(team_venues, key=lambda a: (a["teamId"], a["validFrom"] or "", a["id"])))

    print("build.py: wrote %d leagues, %d conferences, %d divisions, %d stadiums, %d teams, %d stadium aliases, "
          "%d team aliases, %d team venues to %s" % (len(leagues), len(confs), len(divs), len(stadiums), len(teams),
                                                    len(stadium_aliases), len(team_aliases), len(team_venues),
                                                    os.path.relpath(OUT_DIR, REPO_ROOT)))
    if WARNINGS:
        print("build.py: %d source cross-check warnings (informational):" % len(WARNINGS))
        for w in sorted(WARNINGS):
            print("  - " + w)
    if db_notes:
        print("build.py: %d Baseball Databank (2000-2020) differences (informational):" % len(db_notes))
        for n in db_notes:
            print("  - " + n)


if __name__ == "__main__":
    main()
    import achievements  # after the files above are written: definitions follow the league structure
    import games  # games map onto their venues, teams and tenancies

    achievements.main()
    games.main()
