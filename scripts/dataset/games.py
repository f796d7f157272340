#!/usr/bin/env python3
"""Builds Resources/canonical/games/<league>_<startYear>.json from ../shared/data/raw/games (Resources/DATASET.md,
"Games"; format agreed with the Swift side: one JSON array per league-season, sorted by (startTime, id), one game per
line). Standard library only; reads the already built venues, teams, aliases and tenancies. Deterministic.

Usage (from the repo root):  python3 scripts/dataset/games.py   (build.py runs it at the end)

Covered: MLB 2018-2027, NFL 2020-2026, NBA 2022-23 to 2026-27, NHL 2009-10, 2016-17, 2022-23, 2024-25, 2025-26
(the seasons whose source rows carry names/scores/venues) and 2026-27, WNBA 2025-2026, MLS 2025, NWSL 2022-2025.
NHL 2026-27 and MLB 2027 are schedules without results (nhl_2026, mlb_2027).
Every game's teams and venue must map to canonical ids: anything unmapped fails the build (exit 1, listed).

ESPN site-API data from ismayc/{nba,nfl,wnba}-schedule (`schedule.js`/`history.js`, one JSON game per line; UTC tips,
ESPN abbreviations, `score` home first): NBA 2026-27 and NFL 2026 are built from it alone (ids
`game_<league>_<season>_<ESPN event id>`; NFL kick-offs still to be set are timeTBD). NBA 2025-26 (ismayc@04393ec),
WNBA 2026 (schedule.js) and the WNBA 2025 playoffs (history.js) are merged into the seasons built from the other
sources (espn_merge: same localDate + home + away = same game, existing ids kept; postponed slots follow their make-up;
ESPN adds scores, tips and venues, and the games the other sources lack). The NFL 2021-2025 playoffs are cross-checked
against history.js (NOTEs only). ESPN venues that are not in stadiums.json (VENUES_NOT_IN_DATASET) leave their game
out with a NOTE; no venue is invented here.
"""
import csv
import datetime as dt
import json
import os
import re
import sys
import unicodedata
import zoneinfo

SCRIPT_DIR = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.normpath(os.path.join(SCRIPT_DIR, "..", ".."))
RAW = os.path.normpath(os.path.join(REPO_ROOT, "..", "shared", "data", "raw", "games"))
CANON = os.path.join(REPO_ROOT, "Resources", "canonical")
OUT = os.path.join(CANON, "games")
PROBLEMS = []
NOTES = []  # informational: what was filled in (printed, and summarised in DATASET.md)
UTC = dt.timezone.utc
ET = zoneinfo.ZoneInfo("America/New_York")

# Source venue spellings that are no alias of the venue (translations, sponsor-less or truncated forms, API labels):
# name -> venue id. Checked after the alias table fails, so a real alias always wins.
VENUE_NAMES = {
    "UNIQLO Field at Dodger Stadium": "stadium_mlb_dodger_stadium",  # naming rights from 2026, alias not yet in the dataset
    "Estadio de Beisbol Monterrey": "stadium_mlb_estadio_de_beisbol_monterrey",
    "Estadio Alfredo Harp Helu": "stadium_mlb_estadio_alfredo_harp_helu",
    # NFL (nflverse / PFR names)
    "TIAA Bank Stadium": "stadium_nfl_everbank_stadium",  # TIAA Bank Field 2018-2023
    "Tottenham Stadium": "stadium_nfl_tottenham_hotspur_stadium",
    "Azteca Stadium": "stadium_nfl_estadio_azteca",
    # NBA (fixturedownload)
    "Mexico City Arena": "stadium_nba_arena_cdmx",  # English form of Arena Ciudad de México
    # NHL (NHL API venue labels)
    "Exhibition Stadium": "stadium_mls_bmo_field",  # 2017 Centennial Classic: the NHL API names BMO Field after its site
    "O2 Czech Republic": "stadium_nhl_o2_arena",  # O2 arena, Prague (API label)
    "Globe Arena": "stadium_nhl_avicii_arena",  # Ericsson Globe in 2009 (API label)
    "Centre Bell": "stadium_nhl_bell_centre",  # French form
    "SAP Center at San Jose": "stadium_nhl_sap_center",  # full official name
    # NWSL (FBref, some truncated with "...")
    "First Horizon Stadium at WakeMed Soccer ...": "stadium_nwsl_wakemed_soccer_park",
    "Sahlen's Stadium at WakeMed Soccer Park": "stadium_nwsl_wakemed_soccer_park",
    "Daytona International Speedway Stadium": "stadium_nwsl_daytona_international_speedway",
    # WNBA (fixturedownload)
    "Gateway Center Arena @ College Park": "stadium_wnba_gateway_center_arena",
    # ESPN site API (ismayc/*-schedule). "Reliant Stadium" (ESPN's name for NRG Stadium in 2026) and "Arrowhead
    # Stadium" need no entry: both are former names in stadium_aliases.json.
    "Toyota Center (Houston)": "stadium_nba_toyota_center",
    "The O2": "stadium_nba_the_o2_arena",  # London, 2026-01-18
    "Gateway Center": "stadium_wnba_gateway_center_arena",
    "Highmark Stadium (Old)": "stadium_nfl_highmark_stadium",  # ESPN's label for the Bills' stadium until 2025-26
    "Estadio Banorte": "stadium_nfl_estadio_azteca",  # Estadio Azteca's sponsor name from 2025 (Mexico City)
    "FC Bayern Munich Stadium": "stadium_nfl_allianz_arena",  # Allianz Arena under its sponsor-free UEFA/FIFA name
    "Santiago Bernabéu": "stadium_nfl_estadio_santiago_bernabeu",
    "Maracanã Stadium": "stadium_nfl_estadio_do_maracana",  # English form of Estádio do Maracanã (Rio de Janeiro, 2026-09-27)
}
# ESPN venues of real games that are not in stadiums.json (no venue is invented here): their games are left out with
# a NOTE, and listed in DATASET.md. A venue added to the dataset later resolves through its alias and stops the skip
# (remove its entry here when its ESPN name is only a VENUE_NAMES spelling).
# None at present: Co-op Live (NBA 2026-27), Melbourne Cricket Ground, Maracanã and Stade de France (NFL 2026), listed
# here before, are now manual.NEUTRAL_VENUES. Entry format: ESPN venue name -> "City, country" (for the NOTE).
VENUES_NOT_IN_DATASET = {}

# Source errors corrected here (each listed in DATASET.md, "Games" -> corrections).
# nflverse gives the designated home team's own stadium for the seven 2025 international games (location=Neutral).
NFL_VENUE_FIXES = {
    "2025_01_KC_LAC": "stadium_nfl_neo_quimica_arena",  # São Paulo, Arena Corinthians / Neo Química Arena (2025-09-05)
    "2025_04_MIN_PIT": "stadium_nfl_croke_park",  # Dublin (2025-09-28)
    "2025_05_MIN_CLE": "stadium_nfl_tottenham_hotspur_stadium",  # London (2025-10-05)
    "2025_06_DEN_NYJ": "stadium_nfl_tottenham_hotspur_stadium",  # London (2025-10-12)
    "2025_07_LA_JAX": "stadium_nfl_wembley_stadium",  # London (2025-10-19)
    "2025_10_ATL_IND": "stadium_nfl_olympiastadion_berlin",  # Berlin (2025-11-09)
    "2025_11_WAS_MIA": "stadium_nfl_estadio_santiago_bernabeu",  # Madrid (2025-11-16)
}
# FBref lists one 2023 Angel City home match at "BMO Field" (Toronto's stadium); all 11 of the club's 2023 home matches
# were in Los Angeles, at BMO Stadium: (league, home team, source name, season) -> venue id.
VENUE_FIXES_BY_TEAM = {
    ("nwsl", "team_nwsl_angel_city", "BMO Field", 2023): "stadium_mls_bmo_stadium",
}


def norm(text):
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode().lower()
    return re.sub(r"[^a-z0-9]", "", text)


def slug(text):
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode().lower()
    return re.sub(r"[^a-z0-9]+", "_", text).strip("_")


def load(name):
    with open(os.path.join(CANON, name + ".json"), encoding="utf-8") as f:
        return json.load(f)


STADIUMS = {s["id"]: s for s in load("stadiums")}
TEAMS = {t["id"]: t for t in load("teams")}
TENANCIES = load("team_venues")
VENUE_ALIASES = {}  # norm(name) -> [(stadiumId, validFrom, validUntil)]
for _a in load("stadium_aliases"):
    VENUE_ALIASES.setdefault(norm(_a["name"]), []).append((_a["stadiumId"], _a["validFrom"] or "", _a["validUntil"] or "9999"))
TEAM_NAMES = {}  # (leagueId, norm(name)) -> [(teamId, validFrom, validUntil)]
for _t in TEAMS.values():
    TEAM_NAMES.setdefault((_t["leagueId"], norm(_t["name"])), []).append((_t["id"], "", "9999"))
for _a in load("team_aliases"):
    TEAM_NAMES.setdefault((TEAMS[_a["teamId"]]["leagueId"], norm(_a["name"])), []).append(
        (_a["teamId"], _a["validFrom"] or "", _a["validUntil"] or "9999"))


def pick(cands, day, prefer=None):
    """One id out of (id, from, until) candidates: those valid on `day` first, then any; `prefer` breaks ties."""
    for pool in ({c[0] for c in cands if c[1] <= day < c[2]}, {c[0] for c in cands}):
        if len(pool) == 1:
            return next(iter(pool))
        if prefer in pool:
            return prefer
    return None


def home_venue(team_id, day):
    """The team's tenancy venue on a local day (YYYY-MM-DD)."""
    for t in TENANCIES:
        if t["teamId"] == team_id and (t["validFrom"] or "") <= day < (t["validUntil"] or "9999"):
            return t["stadiumId"]
    return None


def venue_id(league, name, day, home, season=None):
    """Canonical venue of a source venue name on a local day; `home` = the home team id (tie-break, fixes)."""
    name = re.sub(r"\s*\(Neutral Site\)$", "", name.strip())  # FBref marks neutral sites in the name
    fix = VENUE_FIXES_BY_TEAM.get((league, home, name, season))
    if fix:
        return fix
    sid = pick(VENUE_ALIASES.get(norm(name), []), day, home_venue(home, day))
    if sid is None:
        sid = VENUE_NAMES.get(name)
    if sid is None or sid not in STADIUMS:
        PROBLEMS.append("%s: unmapped venue %r (%s)" % (league, name, day))
        return None
    return sid


def team_id(league, name, day, table=None):
    """Canonical franchise id of a source team name/code (`table`: explicit source-specific codes)."""
    if table and name in table:
        return table[name]
    tid = pick(TEAM_NAMES.get(("league_" + league, norm(name)), []), day)
    if tid is None:
        PROBLEMS.append("%s: unmapped team %r (%s)" % (league, name, day))
    return tid


def abbreviations(league):
    return {t["abbreviation"]: t["id"] for t in TEAMS.values() if t["leagueId"] == "league_" + league}


def zone(stadium_id):
    return zoneinfo.ZoneInfo(STADIUMS[stadium_id]["timeZone"])


def local_day(start, stadium_id):
    return start.astimezone(zone(stadium_id)).date().isoformat()


def at_local(day, hhmm, stadium_id):
    """UTC instant of a wall-clock time at the venue."""
    naive = dt.datetime.fromisoformat("%sT%s:00" % (day, hhmm))
    return naive.replace(tzinfo=zone(stadium_id)).astimezone(UTC)


def at_zone(day, hhmm, tz):
    return dt.datetime.fromisoformat("%sT%s:00" % (day, hhmm)).replace(tzinfo=zoneinfo.ZoneInfo(tz)).astimezone(UTC)


def parse_utc(text):
    return dt.datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)


def game(league, season, label, source_id, game_type, start, tbd, home, away, stadium, status, home_score, away_score, source):
    if stadium not in STADIUMS:
        PROBLEMS.append("%s %s: venue %r is not in stadiums.json" % (league, source_id, stadium))
        return None
    day = local_day(start, stadium)
    final = status == "final"
    if final and (home_score is None or away_score is None):
        PROBLEMS.append("%s %s: final without a score" % (league, source_id))
    return {
        "id": "game_%s_%d_%s" % (league, season, slug(source_id)),
        "leagueId": "league_" + league, "season": season, "seasonLabel": label, "gameType": game_type,
        "startTime": start.strftime("%Y-%m-%dT%H:%M:%SZ"), "timeTBD": tbd, "localDate": day,
        "homeTeamId": home, "awayTeamId": away, "stadiumId": stadium, "neutralSite": home_venue(home, day) != stadium,
        "status": status, "homeScore": home_score if final else None, "awayScore": away_score if final else None,
        "source": source, "sourceGameId": source_id,
    }


def tbd_game(league, season, label, source_id, game_type, day, home, away, stadium, status, hs, as_, source):
    """A game whose source has no start time: 19:00 venue-local on its local day, timeTBD."""
    if stadium not in STADIUMS:
        PROBLEMS.append("%s %s: no venue (%r)" % (league, source_id, stadium))
        return None
    return game(league, season, label, source_id, game_type, at_local(day, "19:00", stadium), True, home, away, stadium,
                status, hs, as_, source)


def to_int(x):
    x = (x or "").strip()
    return int(float(x)) if x else None


# --------------------------------------------------------------------------- MLB
def mlb(year):
    with open(os.path.join(RAW, "KurimaReiji__mlb2026", "docs", "mlb-games-%d.json" % year), encoding="utf-8") as f:
        data = json.load(f)
    by_nickname = {}
    for team in data["teams"]:
        tid = team_id("mlb", team["name"], "%d-07-01" % year)
        by_nickname[team["teamName"]] = tid
        by_nickname[team["clubName"]] = tid  # games say "Diamondbacks" where the team list says "D-backs"
    # A postponed game appears once as "Postponed" and again as its make-up under the same gamePk: keep the make-up.
    # A suspended game appears twice as "Final" (start and resumption, same officialDate): keep the start.
    rows = {}
    for g in data["games"]:
        rows.setdefault(str(g["gamePk"]), []).append(g)
    chosen = {}
    for pk, group in rows.items():
        played = [g for g in group if g["status"] != "Postponed"] or group
        chosen[pk] = min(played, key=lambda g: g["gameDate"])
    # Game 2 of a traditional doubleheader has no start time of its own ("follows game 1"): the API lists it 5 minutes
    # after game 1. Such a game (same teams, same officialDate, < 2.5 h after the other) is timeTBD.
    tbd, by_day = set(), {}
    for pk, g in chosen.items():
        if g["status"] not in ("Postponed", "Cancelled"):
            key = (frozenset((g["teams"]["home"]["team"], g["teams"]["away"]["team"])), g["officialDate"])
            by_day.setdefault(key, []).append((g["gameDate"], pk))
    for starts in by_day.values():
        starts.sort()
        for (a, _), (b, pk) in zip(starts, starts[1:]):
            if parse_utc(b) - parse_utc(a) < dt.timedelta(hours=2, minutes=30):
                tbd.add(pk)
    NOTES.append("mlb_%d: %d doubleheader second games without their own start time (timeTBD)" % (year, len(tbd)))
    games = []
    for pk, g in sorted(chosen.items()):
        home, away = by_nickname.get(g["teams"]["home"]["team"]), by_nickname.get(g["teams"]["away"]["team"])
        if home is None or away is None:
            PROBLEMS.append("MLB %d %s: unmapped team" % (year, pk))
            continue
        stadium = venue_id("mlb", g["venue"], g["officialDate"], home)
        if stadium is None:
            continue
        status = {"Final": "final", "Completed Early": "final", "Postponed": "postponed", "Cancelled": "cancelled"}.get(g["status"], "scheduled")
        scores = (g["teams"]["home"].get("score"), g["teams"]["away"].get("score"))
        if pk in tbd:
            games.append(tbd_game("mlb", year, str(year), pk, "regular", g["officialDate"], home, away, stadium, status, *scores,
                                  "KurimaReiji/mlb2026 (MLB Stats API)"))
        else:
            games.append(game("mlb", year, str(year), pk, "regular", parse_utc(g["gameDate"]), False, home, away, stadium, status,
                              *scores, "KurimaReiji/mlb2026 (MLB Stats API)"))
    return games


# --------------------------------------------------------------------------- MLB 2027 (open-sports-cal, iCalendar)
MLB_2027 = "vinnyab28__open-sports-cal/baseball/mlb/2027/all-teams.ics"


def mlb_2027():
    """The MLB 2027 calendar of 2026-10-10 (MLB Stats API schedule; CC BY 4.0, credited in DATASET.md): one VEVENT per
    game, CRLF lines, SUMMARY "Away @ Home" (+ " (Game 2)"), LOCATION the venue. MLB had set no start times: an all-day
    DTSTART;VALUE=DATE is the local date (timeTBD); one game has DTSTART in UTC. There is no gamePk, so sourceGameId
    is "<localDate>-<away>-<home>-<game of the day>" with the franchise id slugs ("2027-03-25-athletics-pirates-1"):
    slugs are never renamed (names and abbreviations are), so the id stays when a later source brings the gamePk."""
    with open(os.path.join(RAW, MLB_2027), encoding="utf-8", newline="") as f:
        events = f.read().split("BEGIN:VEVENT\r\n")[1:]
    games = []
    for event in events:
        e = dict(line.split(":", 1) for line in event.split("\r\n") if ":" in line)
        away_name, home_name = e["SUMMARY"].removesuffix(" (Game 2)").split(" @ ")
        number = 2 if e["SUMMARY"].endswith(" (Game 2)") else 1
        start = dt.datetime.strptime(e["DTSTART"], "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC) if "DTSTART" in e else None
        day = start.astimezone(ET).date().isoformat() if start else \
            dt.datetime.strptime(e["DTSTART;VALUE=DATE"], "%Y%m%d").date().isoformat()
        home, away = team_id("mlb", home_name, day), team_id("mlb", away_name, day)
        stadium = venue_id("mlb", e["LOCATION"], day, home) if home and away else None
        if stadium is None:
            continue
        day = local_day(start, stadium) if start else day
        source_id = "%s-%s-%s-%d" % (day, away[len("team_mlb_"):], home[len("team_mlb_"):], number)
        source = "vinnyab28/open-sports-cal (MLB Stats API, CC BY 4.0)"
        if start:
            games.append(game("mlb", 2027, "2027", source_id, "regular", start, False, home, away, stadium, "scheduled",
                              None, None, source))
        else:
            games.append(tbd_game("mlb", 2027, "2027", source_id, "regular", day, home, away, stadium, "scheduled", None, None,
                                  source))
    NOTES.append("mlb_2027: %d of %d games without a start time (timeTBD)" % (
        sum(g is not None and g["timeTBD"] for g in games), len(games)))
    return games


# --------------------------------------------------------------------------- NFL
NFL_CODES = {"LA": "team_nfl_rams", "LAR": "team_nfl_rams", "OAK": "team_nfl_raiders", "SD": "team_nfl_chargers", "STL": "team_nfl_rams"}
NFL_TYPES = {"REG": "regular", "WC": "playoff", "DIV": "playoff", "CON": "playoff", "SB": "playoff"}


def nfl():
    codes = dict(abbreviations("nfl"), **NFL_CODES)
    by_season = {}
    with open(os.path.join(RAW, "gmalbert__nfl-predictions", "data_files", "nfl_games_historical.csv"), encoding="utf-8", newline="") as f:
        for r in csv.DictReader(f, delimiter="\t"):  # tab-separated despite the extension
            season = int(r["season"])
            if r["game_type"] not in NFL_TYPES:
                continue
            start = at_zone(r["gameday"], r["gametime"], "America/New_York")  # US Eastern wall clock, even abroad
            home, away = team_id("nfl", r["home_team"], r["gameday"], codes), team_id("nfl", r["away_team"], r["gameday"], codes)
            if home is None or away is None:
                continue
            stadium = NFL_VENUE_FIXES.get(r["game_id"]) or venue_id("nfl", r["stadium"], r["gameday"], home)
            if stadium is None:
                continue
            hs, as_ = to_int(r["home_score"]), to_int(r["away_score"])
            status = "final" if hs is not None and as_ is not None else "scheduled"
            by_season.setdefault(season, []).append(game(
                "nfl", season, str(season), r["game_id"], NFL_TYPES[r["game_type"]], start, False, home, away, stadium,
                status, hs, as_, "gmalbert/nfl-predictions (nflverse schedules)"))
    return by_season


# --------------------------------------------------------------------------- NHL
NHL_SEASONS = {"20092010": 2009, "20162017": 2016, "20222023": 2022, "20242025": 2024, "20252026": 2025}
NHL_CODES = {"ATL": "team_nhl_jets", "PHX": "team_nhl_utah_mammoth", "ARI": "team_nhl_utah_mammoth"}


def nhl():
    codes = dict(abbreviations("nhl"), **NHL_CODES)
    by_season, skipped = {}, {}
    path = os.path.join(RAW, "sportsdataverse__fastRhockey-nhl-data", "DERIVED_nhl_schedules_2009-10_to_2025-26.csv")
    with open(path, encoding="utf-8", newline="") as f:
        for r in csv.DictReader(f):
            season = NHL_SEASONS.get(r["season_full"])
            if season is None or r["game_type"] not in ("R", "P"):
                continue  # corrupt seasons (names/scores/venues blank in the source) and preseason
            if "TBD" in (r["home_team_abbr"], r["away_team_abbr"]):
                skipped[season] = skipped.get(season, 0) + 1  # playoff placeholder without an opponent
                continue
            day = r["game_date"]
            home, away = team_id("nhl", r["home_team_abbr"], day, codes), team_id("nhl", r["away_team_abbr"], day, codes)
            if home is None or away is None:
                continue
            if r["names_scores_venue_reliable"] != "true" or not r["venue"]:
                PROBLEMS.append("NHL %s: no venue" % r["game_id"])
                continue
            stadium = venue_id("nhl", r["venue"], day, home)
            if stadium is None:
                continue
            hs, as_ = to_int(r["home_score"]), to_int(r["away_score"])
            final = r["game_state"] in ("OFF", "FINAL") and hs is not None and as_ is not None
            label = "%d-%02d" % (season, (season + 1) % 100)
            by_season.setdefault(season, []).append(game(
                "nhl", season, label, r["game_id"], "regular" if r["game_type"] == "R" else "playoff", parse_utc(r["game_time"]),
                False, home, away, stadium, "final" if final else "scheduled", hs, as_, "sportsdataverse/fastRhockey-nhl-data (NHL API)"))
    for season, n in sorted(skipped.items()):
        NOTES.append("nhl_%d: %d playoff placeholder rows without an opponent (TBD) skipped" % (season, n))
    return by_season


# NHL 2026-27: the NHL API's schedule of 2026-09-29 as [start_time_utc, nhl_game_id, away, home], without venues. Every
# game is at the home team's arena but these (raw/games/README.md, gap 10).
NHL_2026 = "jasonleetucker-code__market-edge-lab/tests/fixtures/odds_api/nhl_schedule_2026_27_nhle.json"
NHL_2026_VENUES = {
    "2026020182": "stadium_nhl_princess_auto_stadium",  # Heritage Classic, Winnipeg (outdoor)
    "2026020309": "stadium_nhl_helsinki_halli", "2026020321": "stadium_nhl_helsinki_halli",  # Veikkaus Arena, Helsinki
    "2026020560": "stadium_nhl_psd_bank_dome", "2026020577": "stadium_nhl_psd_bank_dome",  # Düsseldorf
    "2026020647": "stadium_nhl_rice_eccles_stadium",  # Salt Lake City (outdoor)
    "2026020974": "stadium_nfl_at_t_stadium",  # Arlington (outdoor)
}


def nhl_2026():
    with open(os.path.join(RAW, NHL_2026), encoding="utf-8") as f:
        rows = json.load(f)["games"]
    codes = abbreviations("nhl")
    games = []
    for start_text, gid, away_code, home_code in rows:
        start = parse_utc(start_text)
        day = start.astimezone(ET).date().isoformat()  # for the tenancy; all arenas are in North America
        home, away = team_id("nhl", home_code, day, codes), team_id("nhl", away_code, day, codes)
        if home is None or away is None:
            continue
        games.append(game("nhl", 2026, "2026-27", gid, "regular", start, False, home, away,
                          NHL_2026_VENUES.get(gid) or home_venue(home, day), "scheduled", None, None,
                          "jasonleetucker-code/market-edge-lab (NHL API)"))
    return games


# --------------------------------------------------------------------------- NBA
NBA_RESULTS = "ismayc__ismayc.github.io/nba-over-under-%d-%d/current_year.csv"
NBA_FIXTURES = {2022: "kyleskom__NBA-Machine-Learning-Sports-Betting/Data/nba-2022-UTC.csv",
                2023: "kyleskom__NBA-Machine-Learning-Sports-Betting/Data/nba-2023-UTC.csv",
                2024: "yousufosaid__Data200Final/Data/nba-2024-UTC.csv"}
NBA_SOURCES = {2022: "ismayc (nba_api) + kyleskom (fixturedownload)", 2023: "ismayc (nba_api) + kyleskom (fixturedownload)",
               2024: "ismayc (nba_api) + yousufosaid (fixturedownload)", 2025: "moizk/nba-schedule-2025-26 (NBA CDN) + ismayc (nba_api)"}
NBA_TYPES = {"002": "regular", "004": "playoff", "005": "playin", "006": "cup"}  # 001 preseason, 003 All-Star: not included
NBA_NAMES = {"LA Clippers": "team_nba_clippers"}
# NBA Cup semifinals and finals are played in Las Vegas (T-Mobile Arena); the schedule sources lack these ids.
NBA_CUP_LAS_VEGAS = "stadium_nhl_t_mobile_arena"
NBA_CUP_LAS_VEGAS_GAMES = {"0022301229", "0022301230", "0062300001", "0022501229", "0022501230", "0062500001"}


def nba_results(season):
    """GAME_ID -> {"home", "away", "day", "scores"} from ismayc (two rows per game; "vs." = home; both "@" = neutral)."""
    codes = abbreviations("nba")
    rows = {}
    with open(os.path.join(RAW, NBA_RESULTS % (season, season + 1)), encoding="utf-8", newline="") as f:
        for r in csv.DictReader(f):
            if r["GAME_ID"][:3] in NBA_TYPES:
                rows.setdefault(r["GAME_ID"], {})[r["TEAM_ABBREVIATION"]] = r  # a duplicated row collapses
    out = {}
    for gid, by_team in rows.items():
        rs = list(by_team.values())
        vs = [r for r in rs if " vs. " in r["MATCHUP"]]
        if vs:
            home_code = vs[0]["TEAM_ABBREVIATION"]
        else:  # neutral site: both rows read "AWAY @ HOME"
            home_code = rs[0]["MATCHUP"].split(" @ ")[1].strip()
        away_codes = [c for c in by_team if c != home_code] or [rs[0]["MATCHUP"].split(" @ ")[0].strip()]
        home, away = codes.get(home_code), codes.get(away_codes[0])
        if home is None or away is None:
            PROBLEMS.append("NBA %s: unmapped team %s/%s" % (gid, home_code, away_codes))
            continue
        scores = {codes.get(c): int(r["PTS"]) for c, r in by_team.items() if r["PTS"]}
        out[gid] = {"home": home, "away": away, "day": rs[0]["GAME_DATE"], "scores": scores}
    return out


def fixturedownload(path, league, table=None):
    """Rows of a fixturedownload CSV: Date dd/mm/yyyy HH:MM UTC, Result "home - away"."""
    out = []
    with open(os.path.join(RAW, path), encoding="utf-8-sig", newline="") as f:
        for r in csv.DictReader(f):
            start = dt.datetime.strptime(r["Date"], "%d/%m/%Y %H:%M").replace(tzinfo=UTC)
            day = start.date().isoformat()
            home, away = team_id(league, r["Home Team"], day, table), team_id(league, r["Away Team"], day, table)
            m = re.fullmatch(r"\s*(\d+)\s*-\s*(\d+)\s*", r["Result"] or "")
            out.append({"n": r["Match Number"], "start": start, "venue": r["Location"], "home": home, "away": away,
                        "hs": int(m.group(1)) if m else None, "as": int(m.group(2)) if m else None})
    return out


def nba_schedule(season):
    """GAME_ID -> (UTC start, venue name, home, away) where a schedule source has the game."""
    results = nba_results(season)
    if season == 2025:
        codes = abbreviations("nba")
        out = {}
        with open(os.path.join(RAW, "moizk__nba-schedule-2025-26", "nba_2025_26_schedule.csv"), encoding="utf-8") as f:
            for row in csv.DictReader(f):
                if row["season_type"] != "Preseason" and row["is_tbd"] != "true" and row["venue"]:
                    out[row["game_id"]] = (parse_utc(row["tip_utc"]), row["venue"], codes.get(row["home_team"].split(" ")[0]),
                                           codes.get(row["away_team"].split(" ")[0]))
        return results, out
    # fixturedownload has no NBA game id: join on (home, away) and a start within a day of the result's US date.
    fixtures = {}
    for fx in fixturedownload(NBA_FIXTURES[season], "nba", NBA_NAMES):
        fixtures.setdefault((fx["home"], fx["away"]), []).append(fx)
    out = {}
    for gid, res in sorted(results.items()):
        day = dt.date.fromisoformat(res["day"])
        cands = fixtures.get((res["home"], res["away"]), [])
        # GAME_DATE is the US date: the Eastern date of the tip-off (latest tips 22:30 ET); abroad, within a day.
        match = [fx for fx in cands if fx["start"].astimezone(ET).date() == day] or \
            [fx for fx in cands if abs((fx["start"].date() - day).days) <= 1]
        if len(match) > 1:
            PROBLEMS.append("NBA %s: %d fixture rows match" % (gid, len(match)))
        elif match:
            fx = match[0]
            fixtures[(res["home"], res["away"])].remove(fx)
            out[gid] = (fx["start"], fx["venue"], fx["home"], fx["away"])
            if fx["hs"] is not None and (fx["hs"], fx["as"]) != (res["scores"].get(res["home"]), res["scores"].get(res["away"])):
                NOTES.append("nba_%d %s: fixturedownload score %s-%s differs from nba_api %s-%s (nba_api kept)" % (
                    season, gid, fx["hs"], fx["as"], res["scores"].get(res["home"]), res["scores"].get(res["away"])))
    # Fixture rows left over are games postponed after the fixture snapshot: their result has no schedule row and
    # is placed like the other unscheduled games (timeTBD, home tenancy venue).
    # (Pistons-Knicks 2024-02-26 also swapped home court: the nba_api home team is kept.)
    unscheduled = {frozenset((r["home"], r["away"])) for gid, r in results.items() if gid not in out}
    for pair, rows in sorted(fixtures.items()):
        for fx in rows:
            if frozenset(pair) in unscheduled:
                NOTES.append("nba_%d: fixturedownload match %s (%s, %s) was rescheduled; the game is timeTBD" % (
                    season, fx["n"], fx["start"].strftime("%Y-%m-%d"), fx["venue"]))
            else:
                PROBLEMS.append("NBA %d: fixturedownload match %s matched no game" % (season, fx["n"]))
    return results, out


def nba(season):
    results, schedule = nba_schedule(season)
    label = "%d-%02d" % (season, (season + 1) % 100)
    games, filled = [], {"time": 0, "venue": 0}
    for gid in sorted(set(results) | set(schedule)):
        res, sched = results.get(gid), schedule.get(gid)
        if res is None:
            PROBLEMS.append("NBA %s: in the schedule but not in the results" % gid)
            continue
        home, away = (sched[2], sched[3]) if sched else (res["home"], res["away"])
        if (home, away) != (res["home"], res["away"]):
            PROBLEMS.append("NBA %s: schedule home/away %s/%s != results %s/%s" % (gid, home, away, res["home"], res["away"]))
        scores = res["scores"]
        final = home in scores and away in scores
        args = (NBA_TYPES[gid[:3]], )
        if sched:
            start = sched[0]
            stadium = venue_id("nba", sched[1], start.date().isoformat(), home)
            if stadium is None:
                continue
            games.append(game("nba", season, label, gid, args[0], start, False, home, away, stadium, "final" if final else "scheduled",
                              scores.get(home), scores.get(away), NBA_SOURCES[season]))
        else:
            stadium = NBA_CUP_LAS_VEGAS if gid in NBA_CUP_LAS_VEGAS_GAMES else home_venue(home, res["day"])
            filled["time"] += 1
            filled["venue"] += gid not in NBA_CUP_LAS_VEGAS_GAMES
            games.append(tbd_game("nba", season, label, gid, args[0], res["day"], home, away, stadium,
                                  "final" if final else "scheduled", scores.get(home), scores.get(away), NBA_SOURCES[season]))
    NOTES.append("nba_%d: %d games without a source start time (timeTBD), %d of them placed at the home team's tenancy venue"
                 % (season, filled["time"], filled["venue"]))
    return games


# --------------------------------------------------------------------------- WNBA (fixturedownload)
WNBA_CUP_FINALS = {2025: {"287"}}  # Commissioner's Cup final (Match Number 287: Fever at Lynn, 2025-07-01)


def wnba(season):
    games = []
    for fx in fixturedownload("hernandezjh235-sudo__WNBA-Offical-app/wnba-%d-UTC.csv" % season, "wnba"):
        if fx["home"] is None or fx["away"] is None:
            continue
        stadium = venue_id("wnba", fx["venue"], fx["start"].date().isoformat(), fx["home"])
        if stadium is None:
            continue
        final = fx["hs"] is not None
        games.append(game("wnba", season, str(season), fx["n"], "cup" if fx["n"] in WNBA_CUP_FINALS.get(season, ()) else "regular",
                          fx["start"], False, fx["home"], fx["away"], stadium, "final" if final else "scheduled", fx["hs"], fx["as"],
                          "hernandezjh235-sudo/WNBA-Offical-app (fixturedownload)"))
    return games


# --------------------------------------------------------------------------- ESPN site API (ismayc/*-schedule)
ESPN_SOURCES = {"nba": "ismayc/nba-schedule (ESPN)", "nfl": "ismayc/nfl-schedule (ESPN)", "wnba": "ismayc/wnba-schedule (ESPN)"}
ESPN_CODES = {  # ESPN abbreviations that are not the dataset's (teams.js of each repository)
    "nba": {"GS": "team_nba_warriors", "NO": "team_nba_pelicans", "NY": "team_nba_knicks", "SA": "team_nba_spurs",
            "UTAH": "team_nba_jazz", "WSH": "team_nba_wizards"},
    "nfl": {"WSH": "team_nfl_commanders"},
    "wnba": {"GS": "team_wnba_valkyries", "LA": "team_wnba_sparks", "LV": "team_wnba_aces", "NY": "team_wnba_liberty",
             "WSH": "team_wnba_mystics"},
}
ESPN_TYPES = {"regular": "regular", "cup": "cup", "playin": "playin", "playoffs": "playoff", "postseason": "playoff"}
NBA_2025_ESPN = "ismayc__nba-schedule@04393ec/src/data/schedule.js"  # 2025-26 complete (commit of 2026-08-09)


def ismayc_rows(path, year=None):
    """Game lines of an ismayc `schedule.js` (one JSON object per line inside `export const GAMES = [`), or of the
    `games: [` block of season `year` in a `history.js` (each season starts with `year: N,`)."""
    rows, inside, current = [], False, None
    with open(os.path.join(RAW, path), encoding="utf-8") as f:
        for line in f:
            s = line.strip()
            m = re.fullmatch(r"year: (\d+),", s)
            if m:
                current = int(m.group(1))
            elif s == "export const GAMES = [" or (s == "games: [" and current == year):
                inside = True
            elif inside and s.startswith("]"):
                inside = False
            elif inside and s.startswith("{"):
                rows.append(json.loads(s.rstrip(",")))
    return rows


def espn_games(name, league, rows):
    """ismayc rows as {"row", "type", "home", "away", "start", "tbd", "stadium", "day", "score", "postponed"}.
    All-Star games (between no franchise teams) are left out, as are games at a venue not in the dataset (NOTE)."""
    codes = dict(abbreviations(league), **ESPN_CODES[league])
    out, allstar = [], 0
    for r in rows:
        if r["seasonType"] == "allstar":
            allstar += 1
            continue
        start = dt.datetime.strptime(r["tip"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
        eastern_day = start.astimezone(ET).date().isoformat()
        home, away = team_id(league, r["home"], eastern_day, codes), team_id(league, r["away"], eastern_day, codes)
        if home is None or away is None or r["seasonType"] not in ESPN_TYPES:
            PROBLEMS.append("%s ESPN %s: teams %s/%s, seasonType %s" % (name, r["id"], r["home"], r["away"], r["seasonType"]))
            continue
        if r["venue"] in VENUES_NOT_IN_DATASET and pick(VENUE_ALIASES.get(norm(r["venue"]), []), eastern_day) is None:
            NOTES.append("%s: ESPN %s %s @ %s (%s ET) LEFT OUT: venue %r (%s) is not in stadiums.json" % (
                name, r["id"], r["away"], r["home"], eastern_day, r["venue"], VENUES_NOT_IN_DATASET[r["venue"]]))
            continue
        stadium = venue_id(league, r["venue"], eastern_day, home)
        if stadium is None:
            continue
        # ESPN's placeholder for a kick-off still to be set (NFL flex weeks 16-18): midnight US Eastern on the game's
        # Eastern day. Such a game is timeTBD (19:00 venue-local on that day), like the other games without a time.
        tbd = league == "nfl" and start.astimezone(ET).strftime("%H:%M") == "00:00"
        if tbd:
            start = at_local(eastern_day, "19:00", stadium)
        score = r.get("score")
        out.append({"row": r, "type": ESPN_TYPES[r["seasonType"]], "home": home, "away": away, "start": start, "tbd": tbd,
                    "stadium": stadium, "day": local_day(start, stadium), "score": tuple(score) if score else None,
                    "postponed": bool(r.get("postponed"))})
    if allstar:
        NOTES.append("%s: %d ESPN All-Star row(s) between non-franchise teams left out" % (name, allstar))
    return out


def espn_new_game(league, season, label, e):
    """A game only ESPN has: id and sourceGameId from the ESPN event id; final exactly when ESPN has a score."""
    hs, as_ = e["score"] or (None, None)
    return game(league, season, label, e["row"]["id"], e["type"], e["start"], e["tbd"], e["home"], e["away"], e["stadium"],
                "final" if e["score"] else "scheduled", hs, as_, ESPN_SOURCES[league])


def espn_schedule(name, league, season, label, path):
    """A league-season built from ismayc alone (NBA 2026-27, NFL 2026)."""
    games = [espn_new_game(league, season, label, e) for e in espn_games(name, league, ismayc_rows(path))
             if not e["postponed"]]
    tbd = sum(g is not None and g["timeTBD"] for g in games)
    if tbd:
        NOTES.append("%s: %d games with ESPN's kick-off placeholder (midnight ET) are timeTBD" % (name, tbd))
    return games


def espn_merge(name, league, season, label, base, rows, true_day=None, partial=False):
    """`base` (the games built so far, ids kept) completed from the ESPN rows of the same league-season.

    A row is a base game when both have the same (localDate, home, away). ESPN keeps a postponed game's original slot as a
    `postponed` row without score and lists the make-up as a row of its own: the base game on the postponed slot takes
    the make-up's tip, venue and score. `true_day(game)` (NBA: nba_api GAME_DATE) matches a base game whose schedule
    source still had the pre-reschedule slot. Rows matching no base game are added with ESPN ids. `partial`: the rows
    cover only part of the season (history.js: playoffs), so base games without a row are expected.
    From a matched row the base game takes: a score it lacks (an existing final score is kept; differences are NOTEs),
    the venue, and the tip when the base game is timeTBD, moved to another day, or when ESPN's time is on the quarter
    hour (a rescheduled tip; ESPN times like 19:07 or 01:47 are the actual start, not the schedule: kept as they were)."""
    espn = espn_games(name, league, rows)
    by_key = {}
    for g in base:
        by_key.setdefault((g["localDate"], g["homeTeamId"], g["awayTeamId"]), []).append(g)
    pairs, unmatched, stats = [], [], {"postponed": 0, "true_day": 0}
    for e in espn:
        if not e["postponed"]:
            cands = by_key.get((e["day"], e["home"], e["away"]))
            if cands:
                pairs.append((cands.pop(0), e))
            else:
                unmatched.append(e)
    for p in (e for e in espn if e["postponed"]):
        cands = by_key.get((p["day"], p["home"], p["away"]))
        makeups = [e for e in unmatched if (e["home"], e["away"]) == (p["home"], p["away"]) and e["start"] > p["start"]]
        if cands and makeups:
            makeup = min(makeups, key=lambda e: e["start"])
            unmatched.remove(makeup)
            pairs.append((cands.pop(0), makeup))
            stats["postponed"] += 1
        elif cands or makeups:
            PROBLEMS.append("%s ESPN %s: postponed row without its base game or make-up" % (name, p["row"]["id"]))
    if true_day:
        left = [g for gs in by_key.values() for g in gs]
        for e in list(unmatched):
            cands = [g for g in left if (g["homeTeamId"], g["awayTeamId"]) == (e["home"], e["away"]) and true_day(g) == e["day"]]
            if len(cands) == 1:
                left.remove(cands[0])
                by_key[(cands[0]["localDate"], e["home"], e["away"])].remove(cands[0])
                unmatched.remove(e)
                pairs.append((cands[0], e))
                stats["true_day"] += 1
    merged, counts, retimed = [], {"score": 0, "time": 0, "tbd": 0, "kept": 0}, []
    for g, e in pairs:
        start = parse_utc(g["startTime"])
        take = g["timeTBD"] or e["day"] != g["localDate"] or (e["start"] != start and e["start"].minute % 15 == 0)
        if e["start"] != start and not take:
            counts["kept"] += 1
            NOTES.append("%s %s: ESPN tip %s is no scheduled time; %s kept" % (
                name, g["sourceGameId"], e["start"].strftime("%Y-%m-%dT%H:%MZ"), g["startTime"]))
        if e["day"] != g["localDate"]:
            NOTES.append("%s %s: moved from %s to %s (%s; ESPN %s)" % (
                name, g["sourceGameId"], g["localDate"], e["day"], e["row"].get("note") or "rescheduled", e["row"]["id"]))
        elif g["timeTBD"]:
            counts["tbd"] += 1
        elif take and e["start"] != start:
            counts["time"] += 1
            retimed.append("%s %s -> %s" % (g["sourceGameId"], start.strftime("%Y-%m-%dT%H:%MZ"), e["start"].strftime("%Y-%m-%dT%H:%MZ")))
        if e["stadium"] != g["stadiumId"]:
            NOTES.append("%s %s: venue %s -> %s (ESPN %s)" % (name, g["sourceGameId"], g["stadiumId"], e["stadium"], e["row"]["id"]))
        status, hs, as_ = g["status"], g["homeScore"], g["awayScore"]
        if e["score"] and status == "final" and (hs, as_) != e["score"]:
            NOTES.append("%s %s: ESPN score %d-%d differs from %d-%d (kept)" % (name, g["sourceGameId"], e["score"][0], e["score"][1], hs, as_))
        elif e["score"] and status != "final":
            status, (hs, as_) = "final", e["score"]
            counts["score"] += 1
        elif not e["score"] and status == "final":
            NOTES.append("%s %s: final here, no score at ESPN (kept)" % (name, g["sourceGameId"]))
        new = game(league, season, label, g["sourceGameId"], g["gameType"], e["start"] if take else start,
                   e["tbd"] if take else g["timeTBD"], g["homeTeamId"], g["awayTeamId"], e["stadium"], status, hs, as_, g["source"])
        if new is not None and new["id"] != g["id"]:
            PROBLEMS.append("%s %s: id changed to %s" % (name, g["id"], new["id"]))
        merged.append(new)
    if retimed:
        NOTES.append("%s: tips set from ESPN (rescheduled after the other source's snapshot): %s" % (name, ", ".join(retimed)))
    unused = [g for gs in by_key.values() for g in gs]
    if unused and not partial:
        NOTES.append("%s: %d games not at ESPN (kept as they were): %s" % (name, len(unused), " ".join(g["sourceGameId"] for g in unused)))
    added = [espn_new_game(league, season, label, e) for e in unmatched]
    types = {}
    for e in unmatched:
        types[e["type"]] = types.get(e["type"], 0) + 1
    NOTES.append("%s: ESPN merge: %d games matched (%d via a postponed slot, %d via the results' date), %d newly final, %d "
                 "timeTBD given ESPN's tip, %d other tips updated, %d off-schedule ESPN tips ignored; %d added (%s)" % (
                     name, len(pairs), stats["postponed"], stats["true_day"], counts["score"], counts["tbd"], counts["time"],
                     counts["kept"], len(added), ", ".join("%d %s" % (n, t) for t, n in sorted(types.items())) or "none"))
    return merged + unused + added


def nfl_postseason_check(by_season):
    """Cross-check of the nflverse playoff games against ismayc/nfl-schedule history.js (2021-2025): NOTEs only; a
    difference becomes a correction (NFL_VENUE_FIXES etc.) only where the nflverse value is clearly wrong."""
    for season in range(2021, 2026):
        ours = [g for g in by_season.get(season, []) if g is not None and g["gameType"] == "playoff"]
        espn = espn_games("nfl_%d" % season, "nfl", ismayc_rows("ismayc__nfl-schedule/src/data/history.js", season))
        same = 0
        for e in espn:
            m = [g for g in ours if {g["homeTeamId"], g["awayTeamId"]} == {e["home"], e["away"]}]
            if len(m) != 1:
                NOTES.append("nfl_%d postseason: ESPN %s %s-%s has %d matching games here" % (season, e["row"]["id"], e["away"], e["home"], len(m)))
                continue
            g, diffs = m[0], []
            if (g["homeTeamId"], g["awayTeamId"]) != (e["home"], e["away"]):
                diffs.append("home/away swapped")
            if g["startTime"] != e["start"].strftime("%Y-%m-%dT%H:%M:%SZ"):
                diffs.append("kick-off %s vs ESPN %s" % (g["startTime"], e["start"].strftime("%Y-%m-%dT%H:%M:%SZ")))
            if g["localDate"] != e["day"]:
                diffs.append("date %s vs ESPN %s" % (g["localDate"], e["day"]))
            if g["stadiumId"] != e["stadium"]:
                diffs.append("venue %s vs ESPN %s" % (g["stadiumId"], e["stadium"]))
            if (g["homeScore"], g["awayScore"]) != e["score"]:
                diffs.append("score %s-%s vs ESPN %s-%s" % (g["homeScore"], g["awayScore"], *(e["score"] or ("?", "?"))))
            if diffs:
                NOTES.append("nfl_%d postseason %s (ESPN %s): %s (nflverse kept)" % (season, g["sourceGameId"], e["row"]["id"], "; ".join(diffs)))
            else:
                same += 1
        NOTES.append("nfl_%d postseason vs ismayc history.js: %d of %d ESPN games agree (teams, kick-off, venue, score), %d here"
                     % (season, same, len(espn), len(ours)))


# --------------------------------------------------------------------------- MLS (openfootball)
MLS_NAMES = {"New York RB": "team_mls_new_york_red_bulls", "Chicago Fire": "team_mls_chicago_fire",
             "Seattle Sounders": "team_mls_seattle_sounders", "Los Angeles Galaxy": "team_mls_la_galaxy",
             "Orlando City": "team_mls_orlando_city", "Houston Dynamo": "team_mls_houston_dynamo",
             "Vancouver Whitecaps": "team_mls_vancouver_whitecaps", "Los Angeles FC": "team_mls_lafc"}


def mls(season):
    with open(os.path.join(RAW, "openfootball__football.json", str(season), "mls.json"), encoding="utf-8") as f:
        matches = json.load(f)["matches"]
    games, meetings = [], {}
    for m in sorted(matches, key=lambda m: (m["date"], m["time"], m["team1"])):
        home, away = team_id("mls", m["team1"], m["date"], MLS_NAMES), team_id("mls", m["team2"], m["date"], MLS_NAMES)
        if home is None or away is None:
            continue
        # No venue in the source: the home team's tenancy venue that day (the Eastern date is the local date for all
        # kick-offs up to 22:30 ET in the Pacific zone).
        stadium = home_venue(home, m["date"])
        start = at_zone(m["date"], m["time"], "America/New_York")  # US Eastern wall clock
        k = meetings[(home, away)] = meetings.get((home, away), 0) + 1
        source_id = "%s_%s_%d" % (TEAMS[home]["id"][len("team_mls_"):], TEAMS[away]["id"][len("team_mls_"):], k)
        ft = (m.get("score") or {}).get("ft")
        games.append(game("mls", season, str(season), source_id, "regular", start, False, home, away, stadium,
                          "final" if ft else "scheduled", ft[0] if ft else None, ft[1] if ft else None,
                          "openfootball/football.json (CC0)"))
    return games


# --------------------------------------------------------------------------- NWSL (FBref exports)
NWSL_NAMES = {"Angel City": "team_nwsl_angel_city", "Bay FC": "team_nwsl_bay_fc", "Chicago Stars": "team_nwsl_chicago_stars",
              "Red Stars": "team_nwsl_chicago_stars", "Courage": "team_nwsl_nc_courage", "Current": "team_nwsl_kc_current",
              "Dash": "team_nwsl_houston_dash", "Gotham FC": "team_nwsl_gotham_fc", "Louisville": "team_nwsl_racing_louisville",
              "Pride": "team_nwsl_orlando_pride", "Reign": "team_nwsl_seattle_reign", "Royals": "team_nwsl_utah_royals",
              "Spirit": "team_nwsl_washington_spirit", "Thorns": "team_nwsl_portland_thorns", "Wave": "team_nwsl_san_diego_wave"}


def nwsl(season):
    games = []
    with open(os.path.join(RAW, "tom-mcmillan__nwsl_data", "data", "unprocessed", "%d.csv" % season), encoding="utf-8-sig", newline="") as f:
        for r in csv.DictReader(f):
            day = dt.datetime.strptime(r["Date"], "%m/%d/%y").date().isoformat()
            home, away = team_id("nwsl", r["Home"], day, NWSL_NAMES), team_id("nwsl", r["Away"], day, NWSL_NAMES)
            if home is None or away is None:
                continue
            stadium = venue_id("nwsl", r["Venue"], day, home, season)
            if stadium is None:
                continue
            local = r["Time"].split("(")[0].strip()  # venue-local; "(HH:MM)" = US Eastern when different
            m = re.fullmatch(r"(\d+)\s*[–-]\s*(\d+)", r["Score"].strip())
            # Penalty shoot-outs are written "(4) 1–1 (2)": the score is the one after extra time.
            m = m or re.fullmatch(r"\(\d+\)\s*(\d+)\s*[–-]\s*(\d+)\s*\(\d+\)", r["Score"].strip())
            hs, as_ = (int(m.group(1)), int(m.group(2))) if m else (None, None)
            gtype = "regular" if r["match type"].lower() == "regular season" else "playoff"
            if local:
                g = game("nwsl", season, str(season), r["Match ID"], gtype, at_local(day, local, stadium), False, home, away, stadium,
                         "final" if m else "scheduled", hs, as_, "tom-mcmillan/nwsl_data (FBref)")
            else:
                g = tbd_game("nwsl", season, str(season), r["Match ID"], gtype, day, home, away, stadium, "final" if m else "scheduled",
                             hs, as_, "tom-mcmillan/nwsl_data (FBref)")
            games.append(g)
    return games


# --------------------------------------------------------------------------- output
def write(name, games):
    games.sort(key=lambda g: (g["startTime"], g["id"]))
    ids = [g["id"] for g in games]
    dups = sorted({i for i in ids if ids.count(i) > 1})
    if dups:
        PROBLEMS.append("%s: duplicate ids %s" % (name, dups[:5]))
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, name + ".json"), "w", encoding="utf-8", newline="\n") as f:
        f.write("[\n" + ",\n".join(json.dumps(g, sort_keys=True, separators=(",", ":"), ensure_ascii=False) for g in games) + "\n]\n")
    print("games: %-9s %5d games, %5d final, %4d neutral site, %4d timeTBD" % (
        name, len(games), sum(g["status"] == "final" for g in games), sum(g["neutralSite"] for g in games),
        sum(g["timeTBD"] for g in games)))


def build():
    """{file name: games}."""
    out = {}
    for year in range(2018, 2027):
        out["mlb_%d" % year] = mlb(year)
    out["mlb_2027"] = mlb_2027()
    nfl_seasons = nfl()
    nfl_postseason_check(nfl_seasons)
    for season, games in nfl_seasons.items():
        out["nfl_%d" % season] = games
    out["nfl_2026"] = espn_schedule("nfl_2026", "nfl", 2026, "2026", "ismayc__nfl-schedule/src/data/schedule.js")
    for season in (2022, 2023, 2024, 2025):
        out["nba_%d" % season] = nba(season)
    nba_days = {gid: r["day"] for gid, r in nba_results(2025).items()}  # the nba_api date: the day actually played
    out["nba_2025"] = espn_merge("nba_2025", "nba", 2025, "2025-26", [g for g in out["nba_2025"] if g is not None],
                                 ismayc_rows(NBA_2025_ESPN), lambda g: nba_days.get(g["sourceGameId"]))
    out["nba_2026"] = espn_schedule("nba_2026", "nba", 2026, "2026-27", "ismayc__nba-schedule/src/data/schedule.js")
    for season, games in nhl().items():
        out["nhl_%d" % season] = games
    out["nhl_2026"] = nhl_2026()
    out["wnba_2025"] = espn_merge("wnba_2025", "wnba", 2025, "2025", [g for g in wnba(2025) if g is not None],
                                  ismayc_rows("ismayc__wnba-schedule/src/data/history.js", 2025), partial=True)
    out["wnba_2026"] = espn_merge("wnba_2026", "wnba", 2026, "2026", [g for g in wnba(2026) if g is not None],
                                  ismayc_rows("ismayc__wnba-schedule/src/data/schedule.js"))
    out["mls_2025"] = mls(2025)
    for season in (2022, 2023, 2024, 2025):
        out["nwsl_%d" % season] = nwsl(season)
    return out


def main():
    files = {name: [g for g in games if g is not None] for name, games in build().items()}
    if PROBLEMS:
        print("games.py: %d problem(s), nothing written:\n  - %s" % (len(set(PROBLEMS)), "\n  - ".join(sorted(set(PROBLEMS))[:80])),
              file=sys.stderr)
        sys.exit(1)
    for name in sorted(files):
        write(name, files[name])
    stale = sorted(set(f[:-5] for f in os.listdir(OUT) if f.endswith(".json")) - set(files))
    for name in stale:  # a league-season no longer built
        os.remove(os.path.join(OUT, name + ".json"))
    for note in NOTES:
        print("games: " + note)
    if PROBLEMS:  # duplicate ids found while writing
        print("games.py: %s" % "; ".join(PROBLEMS), file=sys.stderr)
        sys.exit(1)
    print("games: %d files, %d games" % (len(files), sum(len(g) for g in files.values())))


if __name__ == "__main__":
    main()
