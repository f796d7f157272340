#!/usr/bin/env python3
"""Builds Resources/canonical/games/<league>_<startYear>.json from ../shared/data/raw/games (Resources/DATASET.md,
"Games"). Standard library only; reads the already built venues, teams, aliases and tenancies. Deterministic.

Covered so far: MLB 2018-2026 (KurimaReiji/mlb2026, MLB Stats API) and NBA 2025-26 (moizk schedule + ismayc
results). Every game's teams and venue must map to canonical ids: anything unmapped fails the build.
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

# Source spellings that are no alias of the venue (yet): name -> venue id.
VENUE_NAMES = {
    "UNIQLO Field at Dodger Stadium": "stadium_mlb_dodger_stadium",  # naming rights from 2026, alias not yet in the dataset
    "Estadio de Beisbol Monterrey": "stadium_mlb_estadio_de_beisbol_monterrey",
    "Estadio Alfredo Harp Helu": "stadium_mlb_estadio_alfredo_harp_helu",
}


def norm(text):
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode().lower()
    return re.sub(r"[^a-z0-9]", "", text)


def load(name):
    with open(os.path.join(CANON, name + ".json"), encoding="utf-8") as f:
        return json.load(f)


STADIUMS = {s["id"]: s for s in load("stadiums")}
TEAMS = {t["id"]: t for t in load("teams")}
TENANCIES = load("team_venues")
VENUE_BY_NAME = {}
for alias in load("stadium_aliases"):
    VENUE_BY_NAME.setdefault(norm(alias["name"]), set()).add(alias["stadiumId"])
TEAM_BY_NAME = {}
for team in TEAMS.values():
    TEAM_BY_NAME.setdefault((team["leagueId"], norm(team["name"])), team["id"])
for alias in load("team_aliases"):
    TEAM_BY_NAME.setdefault((TEAMS[alias["teamId"]]["leagueId"], norm(alias["name"])), alias["teamId"])


def home_venue(team_id, day):
    """The team's tenancy venue on a local day (YYYY-MM-DD)."""
    for t in TENANCIES:
        if t["teamId"] == team_id and (t["validFrom"] or "") <= day < (t["validUntil"] or "9999"):
            return t["stadiumId"]
    return None


def venue_id(name, day, home):
    if name in VENUE_NAMES:
        return VENUE_NAMES[name]
    ids = VENUE_BY_NAME.get(norm(name), set())
    if len(ids) > 1 and home in ids:
        return home
    if len(ids) == 1:
        return next(iter(ids))
    PROBLEMS.append("unmapped venue %r (%s)" % (name, day))
    return None


def local_day(utc, stadium_id):
    zone = zoneinfo.ZoneInfo(STADIUMS[stadium_id]["timeZone"])
    return utc.astimezone(zone).date().isoformat()


def game(league, season, label, source_id, game_type, utc, tbd, home, away, stadium, status, home_score, away_score, source):
    day = local_day(utc, stadium)
    return {
        "id": "game_%s_%d_%s" % (league, season, re.sub(r"[^a-z0-9]+", "_", source_id.lower()).strip("_")),
        "leagueId": "league_" + league, "season": season, "seasonLabel": label, "gameType": game_type,
        "startTime": utc.strftime("%Y-%m-%dT%H:%M:%SZ"), "timeTBD": tbd, "localDate": day,
        "homeTeamId": home, "awayTeamId": away, "stadiumId": stadium, "neutralSite": home_venue(home, day) != stadium,
        "status": status, "homeScore": home_score, "awayScore": away_score, "source": source, "sourceGameId": source_id,
    }


def utc(text):
    return dt.datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.timezone.utc)


# --------------------------------------------------------------------------- MLB
def mlb(year):
    with open(os.path.join(RAW, "KurimaReiji__mlb2026", "docs", "mlb-games-%d.json" % year), encoding="utf-8") as f:
        data = json.load(f)
    by_nickname = {}
    for team in data["teams"]:
        tid = TEAM_BY_NAME.get(("league_mlb", norm(team["name"])))
        if tid is None:
            PROBLEMS.append("MLB %d: unmapped team %r" % (year, team["name"]))
        by_nickname[team["teamName"]] = tid
        by_nickname[team["clubName"]] = tid  # games say "Diamondbacks" where the team list says "D-backs"
    # A postponed game appears once as "Postponed" and again as its make-up under the same gamePk: keep the make-up.
    rows = {}
    for g in data["games"]:
        pk = str(g["gamePk"])
        if pk in rows and g["status"] == "Postponed":
            continue
        rows[pk] = g
    games = []
    for pk, g in rows.items():
        home, away = by_nickname.get(g["teams"]["home"]["team"]), by_nickname.get(g["teams"]["away"]["team"])
        if home is None or away is None:
            PROBLEMS.append("MLB %d %s: unmapped team" % (year, pk))
            continue
        stadium = venue_id(g["venue"], g["officialDate"], home_venue(home, g["officialDate"]))
        if stadium is None:
            continue
        status = {"Final": "final", "Completed Early": "final", "Postponed": "postponed", "Cancelled": "cancelled"}.get(g["status"], "scheduled")
        final = status == "final"
        games.append(game("mlb", year, str(year), pk, "regular", utc(g["gameDate"]), False, home, away, stadium, status,
                          g["teams"]["home"].get("score") if final else None, g["teams"]["away"].get("score") if final else None,
                          "KurimaReiji/mlb2026 (MLB Stats API)"))
    return games


# --------------------------------------------------------------------------- NBA 2025-26
def nba_2025():
    abbreviations = {t["abbreviation"]: t["id"] for t in TEAMS.values() if t["leagueId"] == "league_nba"}
    schedule = {}
    with open(os.path.join(RAW, "moizk__nba-schedule-2025-26", "nba_2025_26_schedule.csv"), encoding="utf-8") as f:
        for row in csv.DictReader(f):
            if row["season_type"] != "Preseason" and row["is_tbd"] != "true":
                schedule[row["game_id"]] = row
    results = {}
    with open(os.path.join(RAW, "ismayc__ismayc.github.io", "nba-over-under-2025-2026", "current_year.csv"), encoding="utf-8") as f:
        for row in csv.DictReader(f):
            if row["GAME_ID"][:3] in ("002", "006"):
                results.setdefault(row["GAME_ID"], []).append(row)
    games = []
    for gid in sorted(set(schedule) | set(results)):
        rows, sched = results.get(gid, []), schedule.get(gid)
        if sched:
            home, away = abbreviations.get(sched["home_team"].split(" ")[0]), abbreviations.get(sched["away_team"].split(" ")[0])
        else:
            # Not in the schedule (the Cup-flex games and the Cup final): home is the "vs." row.
            vs = [r for r in rows if " vs. " in r["MATCHUP"]]
            at = [r for r in rows if " @ " in r["MATCHUP"]]
            if vs and at:
                home, away = abbreviations.get(vs[0]["TEAM_ABBREVIATION"]), abbreviations.get(at[0]["TEAM_ABBREVIATION"])
            elif len(at) == 2:
                # A neutral site: both rows say "@"; the designated home team is the one after "@" in the first row.
                first = sorted(at, key=lambda r: r["TEAM_ABBREVIATION"])[0]
                home_code = first["MATCHUP"].split(" @ ")[1]
                home = abbreviations.get(home_code)
                away = abbreviations.get(next(r["TEAM_ABBREVIATION"] for r in at if r["TEAM_ABBREVIATION"] != home_code))
            else:
                PROBLEMS.append("NBA %s: no home team" % gid)
                continue
        if home is None or away is None:
            PROBLEMS.append("NBA %s: unmapped team" % gid)
            continue
        scores = {abbreviations.get(r["TEAM_ABBREVIATION"]): int(r["PTS"]) for r in rows if r["PTS"]}
        if sched and sched["venue"]:
            start, tbd = utc(sched["tip_utc"]), False
            day = start.date().isoformat()
            stadium = venue_id(sched["venue"], day, home_venue(home, day))
        else:
            day = rows[0]["GAME_DATE"]
            stadium = NBA_CUP_LAS_VEGAS if gid in NBA_CUP_LAS_VEGAS_GAMES else home_venue(home, day)
            zone = zoneinfo.ZoneInfo(STADIUMS[stadium]["timeZone"])
            start = dt.datetime.fromisoformat(day + "T19:00:00").replace(tzinfo=zone).astimezone(dt.timezone.utc)
            tbd = True
        if stadium is None:
            continue
        final = home in scores and away in scores
        games.append(game("nba", 2025, "2025-26", gid, "cup" if gid.startswith("006") else "regular", start, tbd, home, away, stadium,
                          "final" if final else "scheduled", scores.get(home) if final else None, scores.get(away) if final else None,
                          "moizk/nba-schedule-2025-26 (NBA CDN) + ismayc (nba_api)"))
    return games


# The NBA Cup semifinals and final are played in Las Vegas; the schedule source lacks them.
NBA_CUP_LAS_VEGAS = "stadium_nhl_t_mobile_arena"
NBA_CUP_LAS_VEGAS_GAMES = {"0022501229", "0022501230", "0062500001"}


def write(name, games):
    games.sort(key=lambda g: (g["startTime"], g["id"]))
    ids = [g["id"] for g in games]
    if len(ids) != len(set(ids)):
        PROBLEMS.append("%s: duplicate ids" % name)
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, name + ".json"), "w", encoding="utf-8") as f:
        f.write("[\n" + ",\n".join(json.dumps(g, sort_keys=True, separators=(",", ":"), ensure_ascii=False) for g in games) + "\n]\n")
    print("games: %-9s %5d games, %5d final" % (name, len(games), sum(g["status"] == "final" for g in games)))


def main():
    for year in range(2018, 2027):
        write("mlb_%d" % year, mlb(year))
    write("nba_2025", nba_2025())
    if PROBLEMS:
        print("games.py: %d problem(s):\n  - %s" % (len(PROBLEMS), "\n  - ".join(sorted(set(PROBLEMS))[:60])), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
