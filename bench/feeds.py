#!/usr/bin/env python3
"""Score feeds benchmark (bench/feeds.sh runs it; standard library only).

Three modes:
  feeds.py replay --port P --canonical DIR
      The score providers on 127.0.0.1:P, one path prefix each (/espn, /mlb, /nhl, /nba, to be given to
      `serve --feed-url NAME=http://127.0.0.1:P/PREFIX`). Each answers in its provider's real shape, for the
      current US Eastern day (fixed when the replay starts), with the games of Resources/canonical/games:
      days before today final, today's games in progress (whatever their real start), later days scheduled.
      A path it does not know gets an empty answer of that provider's shape, and is counted. Control
      endpoints under /_bench/ change one game's score (by hand or every N seconds) and say when the answer
      carrying each new score was first served (CLOCK_MONOTONIC, shared by the processes of this machine).
  feeds.py round --replay URL --server URL --server-pid PID --out FILE
      Waits until the feed poller of the server just started has applied its first round (every league's
      schedule and recent polls, with the live or today polls between them) and writes what it took.
  feeds.py measure --replay URL --server URL --api TOKEN --accounts FILE --server-pid PID --db URL ...
      Checks what the feeds wrote against what the replay served, measures fetch-to-wake (a device waiting in
      changes/wait on the season zone of the live games) and visit saves during a live day and an idle one,
      and prints the table.
Every wait has a deadline; the replay exits by itself when the script that started it is gone.
"""
import argparse
import asyncio
import hashlib
import json
import os
import random
import re
import statistics
import subprocess
import sys
import threading
import time
from datetime import date, datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, quote, urlparse

CONTAINER = "iCloud.com.sportstime.bench"
PATH = f"/database/1/{CONTAINER}/development"
LEAGUES = ["mlb", "mls", "nba", "nfl", "nhl", "nwsl", "wnba"]  # the poller's order (league ids sorted)
ESPN_PATHS = {
    "baseball/mlb": "mlb", "football/nfl": "nfl", "basketball/nba": "nba", "hockey/nhl": "nhl",
    "basketball/wnba": "wnba", "soccer/usa.1": "mls", "soccer/usa.nwsl": "nwsl",
}
ESPN_NAMES = {
    "mlb": ("10", "Major League Baseball", "MLB"), "nfl": ("28", "National Football League", "NFL"),
    "nba": ("46", "National Basketball Association", "NBA"), "nhl": ("90", "National Hockey League", "NHL"),
    "wnba": ("59", "Women's National Basketball Association", "WNBA"), "mls": ("770", "MLS", "MLS"),
    "nwsl": ("2323", "NWSL", "NWSL"),
}
SPORT_OF = {"nba": "basketball", "wnba": "basketball", "nfl": "football", "nhl": "hockey", "mlb": "baseball",
            "mls": "soccer", "nwsl": "soccer"}
# Per sport: regulation periods, seconds per period, the live state a game starts in, points per score change,
# a ceiling under the server's impossible-score limit (a score past it goes back down: a correction), and the
# ranges of the made-up scores.
SPORTS = {
    "basketball": dict(periods=4, period_s=720, start_period=2, start_clock=366, step=2, cap=200, final=(92, 131), live=(38, 66)),
    "football": dict(periods=4, period_s=900, start_period=3, start_clock=268, step=3, cap=100, final=(10, 38), live=(3, 24)),
    "hockey": dict(periods=3, period_s=1200, start_period=2, start_clock=611, step=1, cap=20, final=(1, 6), live=(0, 3)),
    "baseball": dict(periods=9, period_s=0, start_period=5, start_clock=0, step=1, cap=40, final=(1, 10), live=(0, 5)),
    "soccer": dict(periods=2, period_s=2700, start_period=2, start_clock=3960, step=1, cap=20, final=(0, 4), live=(0, 2)),
}
# Nicknames of more than one word: the rest of a full name is the team's location as the providers write it.
LONG_NICKNAMES = ("Trail Blazers", "Red Sox", "White Sox", "Blue Jays", "Maple Leafs", "Red Wings", "Golden Knights",
                  "Blue Jackets")

try:
    from zoneinfo import ZoneInfo
    EASTERN = ZoneInfo("America/New_York")
except Exception:  # no tz database: the US rule since 2007
    EASTERN = None


def eastern_offset_hours(seconds):
    if EASTERN is not None:
        return datetime.fromtimestamp(seconds, EASTERN).utcoffset().total_seconds() / 3600
    utc = datetime.fromtimestamp(seconds, timezone.utc)
    march, november = date(utc.year, 3, 8), date(utc.year, 11, 1)
    start = datetime(utc.year, 3, (march + timedelta(days=(6 - march.weekday()) % 7)).day, 7, tzinfo=timezone.utc)
    end = datetime(utc.year, 11, (november + timedelta(days=(6 - november.weekday()) % 7)).day, 6, tzinfo=timezone.utc)
    return -4 if start <= utc < end else -5


def us_day(seconds):
    """The US Eastern calendar day at `seconds` (the day the providers and the poller list games by)."""
    return (datetime.fromtimestamp(seconds, timezone.utc) + timedelta(hours=eastern_offset_hours(seconds))).date()


def parse_time(text):
    return datetime.strptime(text.replace("Z", ""), "%Y-%m-%dT%H:%M:%S").replace(tzinfo=timezone.utc).timestamp()


def iso(seconds, with_seconds=True):
    return datetime.fromtimestamp(seconds, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ" if with_seconds else "%Y-%m-%dT%H:%MZ")


def ordinal(n):
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def number(text, low, high):
    """A made-up number in [low, high] that depends only on `text`."""
    return low + int(hashlib.sha256(text.encode()).hexdigest()[:8], 16) % (high - low + 1)


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))] if values else float("nan")


# ----------------------------------------------------------------------------------------------------------------
# The replay server
# ----------------------------------------------------------------------------------------------------------------

class Game:
    """A dataset game as the providers report it, with its live state when it is played today."""

    def __init__(self, raw, index, teams, stadiums, today):
        self.id = raw["id"]
        self.league = raw["leagueId"].removeprefix("league_")
        self.sport = SPORT_OF[self.league]
        self.season = raw["season"]
        self.zone = f"games_{self.league}_{self.season}"
        self.start = parse_time(raw["startTime"])
        self.day = us_day(self.start)
        self.home, self.away = teams[raw["homeTeamId"]], teams[raw["awayTeamId"]]
        self.stadium = raw["stadiumId"]
        self.stadium_name = stadiums.get(self.stadium, {}).get("name", "")
        self.neutral = bool(raw.get("neutralSite"))
        self.game_type = raw.get("gameType") or "regular"
        source_id = str(raw.get("sourceGameId") or "")
        synthetic = str(number(self.id, 10_000_000, 99_999_999))
        # ESPN's own ids where the dataset has them (NBA 2026-27, NFL 2026: matched by id), else made up (by key).
        self.espn_id = source_id if source_id.isdigit() and "espn" in str(raw.get("source", "")).lower() else "9" + synthetic
        self.nba_id = f"002{self.season % 100:02d}{index:05d}"  # the CDN's shape: 002 = regular season
        self.mlb_pk = int(source_id) if source_id.isdigit() else int(synthetic)
        self.nhl_id = int(source_id) if source_id.isdigit() else self.season * 1_000_000 + 20_000 + index
        self.status = "final" if self.day < today else "live" if self.day == today else "scheduled"
        rules = SPORTS[self.sport]
        if self.status == "final":
            self.home_score, self.away_score = number(self.id + "h", *rules["final"]), number(self.id + "a", *rules["final"])
            self.period, self.clock = rules["periods"], 0
        else:
            self.home_score, self.away_score = number(self.id + "h", *rules["live"]), number(self.id + "a", *rules["live"])
            self.period, self.clock = rules["start_period"], rules["start_clock"]
        self.half = 0  # baseball: 0 top, 1 bottom
        self.version = 0  # the version of the replay's last change to this game (0: none)

    # The text every provider gives for the same state, so that alternating providers (the NBA's CDN and ESPN)
    # do not flip the stored fields back and forth.
    def clock_text(self):
        if self.sport == "soccer":
            return f"{self.clock // 60}'"
        if self.sport == "baseball":
            return "0:00"
        return f"{self.clock // 60}:{self.clock % 60:02d}"

    def detail(self):
        if self.status == "final":
            return "Final"
        if self.status == "scheduled":
            return datetime.fromtimestamp(self.start + eastern_offset_hours(self.start) * 3600, timezone.utc).strftime("%-I:%M %p ET")
        if self.sport == "basketball":
            return f"Q{self.period} {self.clock // 60:02d}:{self.clock % 60:02d}"
        if self.sport == "baseball":
            return f"{'Top' if self.half == 0 else 'Bottom'} {ordinal(self.period)}"
        if self.sport == "soccer":
            return self.clock_text()
        return f"{self.clock_text()} - {ordinal(self.period)}"

    def advance(self, version):
        """One scoring play: a side scores, the clock runs."""
        rules = SPORTS[self.sport]
        if version % 2:
            self.home_score += rules["step"]
        else:
            self.away_score += rules["step"]
        if max(self.home_score, self.away_score) > rules["cap"]:
            self.home_score, self.away_score = number(self.id + "h", *rules["live"]), number(self.id + "a", *rules["live"])
        if self.sport == "baseball":
            self.half = 1 - self.half
            if self.half == 0:
                self.period = min(self.period + 1, rules["periods"])
        elif self.sport == "soccer":
            self.clock = min(self.clock + 60, 5400)
        else:
            self.clock -= 37
            if self.clock <= 0:
                self.period = min(self.period + 1, rules["periods"])
                self.clock = rules["period_s"]
        self.version = version

    def expected(self):
        return {"status": self.status, "homeScore": self.home_score if self.status != "scheduled" else None,
                "awayScore": self.away_score if self.status != "scheduled" else None, "league": self.league,
                "day": str(self.day), "zone": self.zone}


def split_name(team):
    name = team["name"]
    for nickname in LONG_NICKNAMES:
        if name.endswith(" " + nickname):
            return name[: -len(nickname) - 1], nickname
    location, _, nickname = name.rpartition(" ")
    return (location, nickname) if location else (team.get("city") or name, name)


class Replay:
    def __init__(self, canonical, today=None):
        self.today = today or us_day(time.time())
        with open(os.path.join(canonical, "teams.json")) as f:
            teams = {t["id"]: t for t in json.load(f)}
        for team in teams.values():
            team["location"], team["nickname"] = split_name(team)
        with open(os.path.join(canonical, "stadiums.json")) as f:
            stadiums = {s["id"]: s for s in json.load(f)}
        self.games = []
        folder = os.path.join(canonical, "games")
        for name in sorted(os.listdir(folder)):
            if not name.endswith(".json"):
                continue
            with open(os.path.join(folder, name)) as f:
                raws = json.load(f)
            for index, raw in enumerate(raws, start=1):
                if not raw.get("startTime") or raw.get("status") in ("postponed", "cancelled"):
                    continue
                day = us_day(parse_time(raw["startTime"]))
                if abs((day - self.today).days) <= 10:
                    self.games.append(Game(raw, index, teams, stadiums, self.today))
        self.games.sort(key=lambda g: (g.start, g.id))
        self.by_id = {g.id: g for g in self.games}
        self.lock = threading.Lock()
        self.requests = []  # one entry per provider request
        self.unknown = []  # provider paths answered empty because they are not known
        self.versions = {}  # version -> {"game", "advanced", "served", "home", "away"}
        self.version = 0
        self.turn = {}  # round-robin position per league (and None: all leagues)
        self.mark_seq, self.mark_t = 0, time.monotonic()
        self.auto_stop = threading.Event()
        self.auto_thread = None
        self.auto_count = 0

    # Days and games -------------------------------------------------------------------------------------------
    def games_of(self, league, first, last):
        return [g for g in self.games if g.league == league and first <= g.day <= last]

    def live_games(self, league=None):
        return [g for g in self.games if g.status == "live" and (league is None or g.league == league)]

    def kind(self, first, last):
        """The poll a request is (docs/FEEDS.md, "When a league is polled"): one day is today's (or a live one's),
        a range from today on is the schedule, a range before today (an NHL week from 3 days ago) the recent one."""
        if first == last:
            return "today" if first == self.today else "day"
        return "schedule" if first >= self.today else "recent"

    # Provider answers ------------------------------------------------------------------------------------------
    def espn(self, league, first, last):
        lid, name, abbreviation = ESPN_NAMES[league]
        games = self.games_of(league, first, last)
        events = []
        for g in games:
            if g.status == "final":
                status = {"clock": 0.0, "displayClock": "0:00", "period": g.period,
                          "type": {"id": "3", "name": "STATUS_FINAL", "state": "post", "completed": True, "description": "Final",
                                   "detail": "Final", "shortDetail": "Final"}}
            elif g.status == "live":
                status = {"clock": float(g.clock), "displayClock": g.clock_text(), "period": g.period,
                          "type": {"id": "2", "name": "STATUS_IN_PROGRESS", "state": "in", "completed": False,
                                   "description": "In Progress", "detail": g.detail(), "shortDetail": g.detail()}}
            else:
                status = {"clock": 0.0, "displayClock": "0:00", "period": 0,
                          "type": {"id": "1", "name": "STATUS_SCHEDULED", "state": "pre", "completed": False,
                                   "description": "Scheduled", "detail": g.detail(), "shortDetail": g.detail()}}

            def side(team, home_away, score):
                return {"id": str(number(team["id"], 1, 40)), "type": "team", "order": 0 if home_away == "home" else 1,
                        "homeAway": home_away,
                        "team": {"id": str(number(team["id"], 1, 40)), "location": team["location"], "name": team["nickname"],
                                 "abbreviation": team.get("abbreviation", ""), "displayName": team["name"],
                                 "shortDisplayName": team["nickname"], "isActive": True},
                        "score": str(score if g.status != "scheduled" else 0)}

            season_year = g.season + 1 if league in ("nba", "nhl") else g.season
            competition = {
                "id": g.espn_id, "date": iso(g.start, False), "attendance": 0, "timeValid": True, "neutralSite": g.neutral,
                "venue": {"fullName": g.stadium_name, "indoor": g.sport in ("basketball", "hockey")},
                "competitors": [side(g.home, "home", g.home_score), side(g.away, "away", g.away_score)], "status": status,
                "startDate": iso(g.start, False),
            }
            events.append({
                "id": g.espn_id, "uid": f"s:0~l:{lid}~e:{g.espn_id}", "date": iso(g.start, False),
                "name": f"{g.away['name']} at {g.home['name']}",
                "shortName": f"{g.away.get('abbreviation', '')} @ {g.home.get('abbreviation', '')}",
                "season": {"year": season_year, "type": 3 if g.game_type == "playoff" else 2,
                           "slug": "post-season" if g.game_type == "playoff" else "regular-season"},
                "competitions": [competition], "status": status,
            })
        return {"leagues": [{"id": lid, "name": name, "abbreviation": abbreviation, "slug": league}],
                "season": {"type": 2, "year": self.today.year}, "day": {"date": str(first)}, "events": events}, games

    def mlb(self, first, last):
        games = self.games_of("mlb", first, last)
        dates = []
        for day in sorted({g.day for g in games}):
            listed = []
            for g in (g for g in games if g.day == day):
                coded, abstract, detailed = {"final": ("F", "Final", "Final"), "live": ("I", "Live", "In Progress"),
                                             "scheduled": ("S", "Preview", "Scheduled")}[g.status]
                scored = g.status != "scheduled"
                game = {
                    "gamePk": g.mlb_pk, "gameType": "R" if g.game_type == "regular" else "D", "season": str(g.season),
                    "gameDate": iso(g.start), "officialDate": str(day),
                    "status": {"abstractGameState": abstract, "codedGameState": coded, "detailedState": detailed,
                               "statusCode": coded, "startTimeTBD": False, "abstractGameCode": abstract[0]},
                    "teams": {"away": {"team": {"id": number(g.away["id"], 100, 160), "name": g.away["name"]}},
                              "home": {"team": {"id": number(g.home["id"], 100, 160), "name": g.home["name"]}}},
                    "venue": {"id": number(g.stadium, 1, 5000), "name": g.stadium_name},
                    "gameNumber": 1, "doubleHeader": "N", "dayNight": "night",
                }
                if scored:
                    game["teams"]["away"]["score"], game["teams"]["home"]["score"] = g.away_score, g.home_score
                    game["linescore"] = {"currentInning": g.period, "currentInningOrdinal": ordinal(g.period),
                                         "inningState": "Top" if g.half == 0 else "Bottom", "scheduledInnings": 9,
                                         "teams": {"home": {"runs": g.home_score}, "away": {"runs": g.away_score}}}
                listed.append(game)
            dates.append({"date": str(day), "totalItems": len(listed), "totalGames": len(listed), "games": listed})
        return {"copyright": "replay", "totalItems": len(games), "totalEvents": 0, "totalGames": len(games),
                "totalGamesInProgress": sum(g.status == "live" for g in games), "dates": dates}, games

    def nhl_game(self, g):
        state = {"final": "OFF", "live": "LIVE", "scheduled": "FUT"}[g.status]

        def side(team, score):
            entry = {"id": number(team["id"], 1, 60), "commonName": {"default": team["nickname"]},
                     "placeName": {"default": team["location"]}, "abbrev": team.get("abbreviation", "")}
            if g.status != "scheduled":
                entry["score"] = score
            return entry

        game = {"id": g.nhl_id, "season": g.season * 10_000 + g.season + 1, "gameType": 3 if g.game_type == "playoff" else 2,
                "gameDate": str(g.day), "venue": {"default": g.stadium_name}, "startTimeUTC": iso(g.start),
                "gameState": state, "gameScheduleState": "OK", "neutralSite": g.neutral,
                "awayTeam": side(g.away, g.away_score), "homeTeam": side(g.home, g.home_score)}
        if g.status != "scheduled":
            game["period"] = g.period
            game["periodDescriptor"] = {"number": g.period, "periodType": "REG", "maxRegulationPeriods": 3}
            clock = 0 if g.status == "final" else g.clock
            game["clock"] = {"timeRemaining": f"{clock // 60:02d}:{clock % 60:02d}", "secondsRemaining": clock,
                             "running": g.status == "live", "inIntermission": False}
        return game

    def nhl(self, first, last, week):
        games = self.games_of("nhl", first, last)
        if not week:
            return {"prevDate": str(first - timedelta(days=1)), "currentDate": str(first),
                    "nextDate": str(first + timedelta(days=1)), "gameWeek": [], "games": [self.nhl_game(g) for g in games]}, games
        days = []
        for offset in range(7):
            day = first + timedelta(days=offset)
            listed = [self.nhl_game(g) for g in games if g.day == day]
            days.append({"date": str(day), "dayAbbrev": day.strftime("%a").upper(), "numberOfGames": len(listed), "games": listed})
        return {"nextStartDate": str(first + timedelta(days=7)), "previousStartDate": str(first - timedelta(days=7)),
                "gameWeek": days}, games

    def nba(self):
        games = self.games_of("nba", self.today, self.today)
        listed = []
        for g in games:
            if g.status == "live":
                m, s = divmod(g.clock, 60)
                clock, code, text = f"PT{m:02d}M{s:02d}.00S", 2, g.detail()
            else:
                clock, code, text = "", 3 if g.status == "final" else 1, g.detail()

            def side(team, score):
                return {"teamId": 1610612700 + number(team["id"], 1, 60), "teamName": team["nickname"],
                        "teamCity": team["location"], "teamTricode": team.get("abbreviation", ""), "wins": 0, "losses": 0,
                        "score": score if g.status != "scheduled" else 0, "seed": None, "inBonus": None, "timeoutsRemaining": 0}

            offset = eastern_offset_hours(g.start)
            eastern = datetime.fromtimestamp(g.start + offset * 3600, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
            listed.append({
                "gameId": g.nba_id, "gameCode": f"{g.day:%Y%m%d}/{g.away.get('abbreviation', '')}{g.home.get('abbreviation', '')}",
                "gameStatus": code, "gameStatusText": text, "period": g.period if g.status != "scheduled" else 0,
                "gameClock": clock, "gameTimeUTC": iso(g.start), "gameEt": f"{eastern}{int(offset):+03d}:00",
                "regulationPeriods": 4, "ifNecessary": False, "seriesGameNumber": "", "seriesText": "",
                "homeTeam": side(g.home, g.home_score), "awayTeam": side(g.away, g.away_score),
            })
        return {"meta": {"version": 1, "request": "replay", "time": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S"), "code": 200},
                "scoreboard": {"gameDate": str(self.today), "leagueId": "00", "leagueName": "National Basketball Association",
                               "games": listed}}, games

    def provider(self, path):
        """(status, answer, provider, league, first day, last day, games) for a provider path."""
        url = urlparse(path)
        query = parse_qs(url.query)
        parts = url.path.strip("/").split("/")
        prefix, rest = parts[0], "/".join(parts[1:])

        def day(text, compact=False):
            return datetime.strptime(text, "%Y%m%d" if compact else "%Y-%m-%d").date()

        try:
            if prefix == "espn":
                match = re.fullmatch(r"(\w+/[\w.]+)/scoreboard", rest)
                league = ESPN_PATHS.get(match.group(1)) if match else None
                dates = query.get("dates", [""])[0].split("-")
                if league and dates[0]:
                    first, last = day(dates[0], True), day(dates[-1], True)
                    answer, games = self.espn(league, first, last)
                    return answer, "espn", league, first, last, games
                return None, "espn", league or "?", None, None, []
            if prefix == "mlb":
                if rest == "api/v1/schedule" and "startDate" in query and "endDate" in query:
                    first, last = day(query["startDate"][0]), day(query["endDate"][0])
                    answer, games = self.mlb(first, last)
                    return answer, "mlb-stats", "mlb", first, last, games
                return None, "mlb-stats", "mlb", None, None, []
            if prefix == "nhl":
                match = re.fullmatch(r"v1/(score|schedule)/(\d{4}-\d{2}-\d{2})", rest)
                if match:
                    first = day(match.group(2))
                    week = match.group(1) == "schedule"
                    last = first + timedelta(days=6) if week else first
                    answer, games = self.nhl(first, last, week)
                    return answer, "nhl-web", "nhl", first, last, games
                return None, "nhl-web", "nhl", None, None, []
            if prefix == "nba":
                if rest == "static/json/liveData/scoreboard/todaysScoreboard_00.json":
                    answer, games = self.nba()
                    return answer, "nba-cdn", "nba", self.today, self.today, games
                return None, "nba-cdn", "nba", None, None, []
        except ValueError:
            pass
        return None, prefix, "?", None, None, []

    EMPTY = {
        "espn": lambda self: {"leagues": [], "season": {"type": 2, "year": self.today.year}, "events": []},
        "mlb-stats": lambda self: {"copyright": "replay", "totalItems": 0, "totalEvents": 0, "totalGames": 0, "dates": []},
        "nhl-web": lambda self: {"games": [], "gameWeek": []},
        "nba-cdn": lambda self: {"meta": {"version": 1, "code": 200}, "scoreboard": {"gameDate": str(self.today), "games": []}},
    }

    def route(self, method, path, body):
        """(status, JSON answer, function to call with the time the answer was written, or None)."""
        if path.startswith("/_bench/"):
            return self.control(method, path, body)
        with self.lock:
            answer, provider, league, first, last, games = self.provider(path)
            seq = len(self.requests) + 1
            if answer is None:
                if provider not in self.EMPTY:
                    self.unknown.append(path)
                    self.requests.append({"seq": seq, "t": time.monotonic(), "provider": provider, "league": league,
                                          "kind": "unknown", "games": 0, "path": path})
                    return 404, {"error": "unknown provider"}, None
                self.unknown.append(path)
                answer, kind = self.EMPTY[provider](self), "unknown"
            else:
                kind = self.kind(first, last)
            entry = {"seq": seq, "t": time.monotonic(), "provider": provider, "league": league, "kind": kind,
                     "days": [str(first), str(last)] if first else None, "games": len(games), "path": path}
            self.requests.append(entry)
            carried = [g.version for g in games if g.status == "live" and g.version]

        def served(t):
            with self.lock:
                entry["served"] = t
                for version in carried:
                    record = self.versions.get(version)
                    if record and record["served"] is None:
                        record["served"] = t
                        record["served_by"] = provider

        return 200, answer, served

    # Control ---------------------------------------------------------------------------------------------------
    def advance(self, league=None):
        with self.lock:
            candidates = self.live_games(league)
            if not candidates:
                return None
            position = self.turn.get(league, 0)
            self.turn[league] = position + 1
            game = candidates[position % len(candidates)]
            self.version += 1
            game.advance(self.version)
            self.versions[self.version] = {"game": game.id, "league": game.league, "zone": game.zone, "advanced": time.monotonic(),
                                           "served": None, "homeScore": game.home_score, "awayScore": game.away_score}
            return {"version": self.version, **self.versions[self.version]}

    def auto(self, every, seconds):
        """Advances a live game (all leagues in turn) every `every` seconds for at most `seconds`; every=0 stops."""
        self.auto_stop.set()
        if self.auto_thread is not None:
            self.auto_thread.join(timeout=5)
        self.auto_thread = None
        if every <= 0:
            return
        self.auto_stop = stop = threading.Event()
        until = time.monotonic() + min(seconds, 3600)

        def run():
            while not stop.wait(every) and time.monotonic() < until:
                if self.advance(None):
                    with self.lock:
                        self.auto_count += 1

        self.auto_thread = threading.Thread(target=run, daemon=True)
        self.auto_thread.start()

    def round_state(self):
        """The first round of the poller started after the last mark: every league's schedule and recent polls."""
        with self.lock:
            since = [r for r in self.requests if r["seq"] > self.mark_seq]
            seen = {(r["league"], r["kind"]) for r in since if "served" in r}
            complete = all((league, kind) in seen for league in LEAGUES for kind in ("schedule", "recent"))
            last = 0
            per_league = {}
            for index, r in enumerate(since, start=1):
                if "served" not in r:
                    continue
                first_round = (r["league"], r["kind"]) not in {(x["league"], x["kind"]) for x in since[: index - 1]}
                if r["kind"] in ("schedule", "recent") and first_round:
                    last = index
                if first_round:
                    per_league.setdefault(r["league"], []).append(f"{r['provider']} {r['kind']} {r['games']}")
            return {"complete": complete, "requests": len(since), "last_first_round": last,
                    "first_t": since[0]["t"] if since else None, "last_t": since[-1]["t"] if since else None,
                    "mark_t": self.mark_t, "per_league": per_league,
                    "unknown": sum(r["kind"] == "unknown" for r in since),
                    "games": sum(r["games"] for r in since[:last])}

    def control(self, method, path, body):
        url = urlparse(path)
        name = url.path.removeprefix("/_bench/")
        args = json.loads(body) if body else {}
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        if name == "stats":
            with self.lock:
                by = {}
                for r in self.requests:
                    by[r["provider"]] = by.get(r["provider"], 0) + 1
                return 200, {"today": str(self.today), "requests": len(self.requests), "by_provider": by,
                             "unknown": len(self.unknown), "unknown_paths": self.unknown[:10], "advances": self.version,
                             "auto_advances": self.auto_count,
                             "changes_served": sum(v["served"] is not None for v in self.versions.values())}, None
        if name == "mark":
            with self.lock:
                self.mark_seq, self.mark_t = len(self.requests), time.monotonic()
                return 200, {"seq": self.mark_seq, "t": self.mark_t}, None
        if name == "round":
            return 200, self.round_state(), None
        if name == "today":
            with self.lock:
                return 200, {"today": str(self.today), "games": [
                    {"id": g.id, "league": g.league, "zone": g.zone, "sport": g.sport, "stadium": g.stadium,
                     "stadiumName": g.stadium_name, "home": g.home["name"], "away": g.away["name"], "start": g.start}
                    for g in self.live_games()]}, None
        if name == "expected":
            with self.lock:
                return 200, {g.id: g.expected() for g in self.games}, None
        if name == "advance" and method == "POST":
            advanced = self.advance(args.get("league"))
            return (200, advanced, None) if advanced else (409, {"error": "no live game"}, None)
        if name == "changes":
            with self.lock:
                return 200, {"served": sorted(v["served"] for v in self.versions.values() if v["served"] is not None)}, None
        if name == "served":
            with self.lock:
                record = self.versions.get(int(query.get("v", "0")))
                return (200, record, None) if record else (404, {"error": "no such version"}, None)
        if name == "auto" and method == "POST":
            self.auto(float(args.get("every", 0)), float(args.get("seconds", 60)))
            return 200, {"every": args.get("every", 0)}, None
        return 404, {"error": "unknown control path"}, None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "replay"

    def log_message(self, *args):
        pass

    def do_GET(self):
        self.answer(None)

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        self.answer(self.rfile.read(length) if length else None)

    def answer(self, body):
        try:
            status, answer, served = self.server.replay.route(self.command, self.path, body)
        except Exception as error:  # a bug here must not look like a provider's answer
            status, answer, served = 500, {"error": repr(error)}, None
        data = json.dumps(answer, separators=(",", ":")).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()
        if served:
            served(time.monotonic())


def replay_main(args):
    replay = Replay(args.canonical, date.fromisoformat(args.today) if args.today else None)
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    server.replay = replay
    parent, deadline = os.getppid(), time.monotonic() + args.max_seconds

    def watch():  # gone with the script that started it, and never older than --max-seconds
        while os.getppid() == parent and time.monotonic() < deadline:
            time.sleep(1)
        os._exit(0)

    threading.Thread(target=watch, daemon=True).start()
    live = {}
    for g in replay.live_games():
        live[g.league] = live.get(g.league, 0) + 1
    print(f"replay on 127.0.0.1:{args.port}, US Eastern day {replay.today}, {len(replay.games)} games within 10 days, "
          f"in progress today: {live or 'none'}", flush=True)
    server.serve_forever(poll_interval=0.5)


# ----------------------------------------------------------------------------------------------------------------
# The measuring client
# ----------------------------------------------------------------------------------------------------------------

class Connection:
    """One keep-alive HTTP/1.1 connection (raw, as bench/live.py), with the answer's headers."""

    def __init__(self, url):
        self.host, self.port = urlparse(url).hostname, urlparse(url).port

    async def open(self):
        self.reader, self.writer = await asyncio.wait_for(asyncio.open_connection(self.host, self.port), 10)
        return self

    async def send(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else b""
        self.writer.write(
            f"{method} {path} HTTP/1.1\r\nHost: {self.host}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(data)}\r\n\r\n".encode() + data)
        await self.writer.drain()

    async def answer(self):
        head = await self.reader.readuntil(b"\r\n\r\n")
        status = int(head.split(b" ", 2)[1])
        headers = {}
        for line in head.split(b"\r\n")[1:]:
            if b":" in line:
                key, value = line.split(b":", 1)
                headers[key.strip().lower().decode()] = value.strip().decode()
        length = int(headers.get("content-length", "0"))
        body = await self.reader.readexactly(length) if length else b""
        self.headers = headers
        try:
            return status, json.loads(body) if body else None
        except ValueError:
            return status, body.decode(errors="replace")

    async def call(self, method, path, body=None, timeout=30):
        await self.send(method, path, body)
        return await asyncio.wait_for(self.answer(), timeout)

    def close(self):
        self.writer.close()


def metric_sum(text, name):
    total = 0.0
    for line in text.splitlines():
        if line.startswith(name + "{") or line.startswith(name + " "):
            total += float(line.rsplit(" ", 1)[1])
    return total


async def metrics(server):
    connection = await Connection(server).open()
    try:
        _, text = await connection.call("GET", "/metrics", timeout=10)
    finally:
        connection.close()
    text = text if isinstance(text, str) else ""
    return {"counted_requests": metric_sum(text, "stadiumcloud_feed_requests_total"),
            "failed": sum(float(l.rsplit(" ", 1)[1]) for l in text.splitlines()
                          if l.startswith("stadiumcloud_feed_requests_total{") and 'outcome="failed"' in l),
            "changed": metric_sum(text, "stadiumcloud_feed_games_changed_total"),
            "refused": metric_sum(text, "stadiumcloud_feed_games_refused_total")}


async def first_round(replay_url, server, deadline_s, server_pid):
    """Waits until the poller has applied its first round since the replay's mark; its figures."""
    replay = await Connection(replay_url).open()
    deadline = time.monotonic() + deadline_s
    try:
        while True:
            if not os.path.exists(f"/proc/{server_pid}"):
                raise SystemExit(f"the server (pid {server_pid}) exited during the feeds' first round")
            _, state = await replay.call("GET", "/_bench/round")
            if state["complete"]:
                counted = await metrics(server)
                # Polls run one after another and count a request once its games are written: when the server
                # has counted as many requests as the replay had served up to the round's last poll, it is applied.
                # A second provider asked to confirm a game that matches none is not counted: then the round is
                # over when the poller asks for something else, or after 20 s without a request (approximate).
                exact = counted["counted_requests"] >= state["last_first_round"]
                if exact or state["requests"] > state["last_first_round"] + 1 or time.monotonic() - state["last_t"] > 20:
                    done = time.monotonic()
                    return {"since_start_s": done - state["mark_t"], "since_first_request_s": done - state["first_t"],
                            "requests": state["last_first_round"], "games_reported": state["games"],
                            "per_league": state["per_league"], "unknown": state["unknown"], "exact": exact, **counted}
            if time.monotonic() > deadline:
                raise SystemExit(f"the feeds' first round did not finish within {deadline_s:.0f} s: {state}")
            await asyncio.sleep(0.1)
    finally:
        replay.close()


def round_main(args):
    figures = asyncio.run(first_round(args.replay, args.server, args.deadline, args.server_pid))
    with open(args.out, "w") as f:
        json.dump(figures, f)
    print(f"first round applied: {figures['requests']} requests, {figures['games_reported']:.0f} games reported, "
          f"{figures['changed']:.0f} changed, {figures['refused']:.0f} refused, "
          f"{figures['since_start_s']:.1f} s after the start", flush=True)


class Measure:
    def __init__(self, args):
        self.args = args
        self.api = args.api
        self.public = f"{PATH}/public/{{}}?ckAPIToken={quote(args.api)}"
        with open(args.accounts) as f:
            self.tokens = [line.strip() for line in f if line.strip()]
        self.deadline = time.monotonic() + args.deadline

    def left(self):
        return self.deadline - time.monotonic()

    def private(self, path, token):
        return f"{PATH}/private/{path}?ckAPIToken={quote(self.api)}&ckWebAuthToken={quote(token, safe='')}"

    async def replay(self, method, path, body=None):
        connection = await Connection(self.args.replay).open()
        try:
            return await connection.call(method, path, body, timeout=10)
        finally:
            connection.close()

    # What the feeds wrote ----------------------------------------------------------------------------------------
    async def verify(self, today):
        """Every game the replay reported for the days polled so far, against canonical/games."""
        _, expected = await self.replay("GET", "/_bench/expected")
        days = [today + timedelta(days=d) for d in range(-4, 8)]
        connection = await Connection(self.args.server).open()
        stored = {}
        for day in days:
            status, answer = await connection.call("POST", self.public.format("canonical/games"), {"date": str(day)})
            if status != 200:
                raise SystemExit(f"canonical/games {day} answered {status}: {answer}")
            for game in answer.get("games", []):
                stored[game["canonicalId"]] = game
        connection.close()
        checked, wrong = 0, []
        first, last = today - timedelta(days=3), today + timedelta(days=6)
        for game_id, want in expected.items():
            day = date.fromisoformat(want["day"])
            if not first <= day <= last:
                continue
            checked += 1
            got = stored.get(game_id)
            if got is None:
                wrong.append(f"{game_id} ({want['day']}): not in canonical/games")
            elif got.get("status") != want["status"] or got.get("homeScore") != want["homeScore"] or got.get("awayScore") != want["awayScore"]:
                wrong.append(f"{game_id} ({want['day']}): replay {want['status']} {want['homeScore']}-{want['awayScore']}, "
                             f"stored {got.get('status')} {got.get('homeScore')}-{got.get('awayScore')}")
        return checked, wrong

    # Fetch to wake -----------------------------------------------------------------------------------------------
    async def zone_changes(self, connection, zone, token):
        """The zone's changes after `token` (all pages): records, new token."""
        records = []
        for _ in range(100):
            status, answer = await connection.call("POST", self.public.format("changes/zone"),
                                                   {"zones": [{"zoneID": {"zoneName": zone}, "syncToken": token}]})
            if status != 200:
                raise SystemExit(f"changes/zone answered {status}: {answer}")
            zone_answer = answer["zones"][0]
            records += zone_answer.get("records", [])
            token = zone_answer["syncToken"]
            if not zone_answer.get("moreComing"):
                break
        return records, token

    async def settle(self, version, fetcher, zone, token):
        """After a round that measured nothing: lets the change be served and written, then takes the zone's new
        token, so it cannot wake the next round's wait."""
        for _ in range(100):
            _, served = await self.replay("GET", f"/_bench/served?v={version}")
            if served.get("served") is not None:
                break
            await asyncio.sleep(0.1)
        await asyncio.sleep(0.5)
        return (await self.zone_changes(fetcher, zone, token))[1]

    async def fetch_to_wake(self, league, zone, rounds):
        waiter = await Connection(self.args.server).open()
        fetcher = await Connection(self.args.server).open()
        _, zones = await fetcher.call("GET", self.public.format("zones/list"))
        token = next((z.get("syncToken") for z in zones.get("zones", []) if z["zoneID"]["zoneName"] == zone), None)
        if token is None:
            raise SystemExit(f"zones/list has no {zone}: {zones}")
        latencies, change_to_wake, missed, early, stale = [], [], 0, 0, []
        done = 0
        while done < rounds and self.left() > 60:
            body = {"zones": [{"zoneID": {"zoneName": zone}, "syncToken": token}], "timeout": 30}
            await waiter.send("POST", self.public.format("changes/wait"), body)
            # The wait registers; the change lands at a random point of the poll cycle (a round starts just after a
            # poll, the one that woke the last round).
            await asyncio.sleep(0.05 + random.random() * self.args.live_interval)
            status, advanced = await self.replay("POST", "/_bench/advance", {"league": league})
            if status != 200:
                raise SystemExit(f"the replay could not advance a {league} game: {advanced}")
            try:
                status, answer = await asyncio.wait_for(waiter.answer(), 40)
                woken = time.monotonic()
            except asyncio.TimeoutError:
                missed += 1
                waiter.close()
                waiter = await Connection(self.args.server).open()
                continue
            if status != 200 or not answer or not answer.get("changed"):
                missed += 1  # the wait ended at its timeout without the new score
                token = await self.settle(advanced["version"], fetcher, zone, token)
                continue
            _, served = await self.replay("GET", f"/_bench/served?v={advanced['version']}")
            if served.get("served") is None or served["served"] > woken:
                early += 1  # woken by something else than this change: not a sample
                token = await self.settle(advanced["version"], fetcher, zone, token)
                continue
            records, token = await self.zone_changes(fetcher, zone, token)
            latencies.append((woken - served["served"]) * 1000)
            change_to_wake.append((woken - advanced["advanced"]) * 1000)
            record = next((r for r in records if r.get("recordName") == advanced["game"]), None)
            fields = (record or {}).get("fields", {})
            got = (fields.get("homeScore", {}).get("value"), fields.get("awayScore", {}).get("value"))
            if got != (advanced["homeScore"], advanced["awayScore"]):
                stale.append(f"{advanced['game']}: served {advanced['homeScore']}-{advanced['awayScore']}, delta has {got}")
            done += 1
        waiter.close()
        fetcher.close()
        return latencies, change_to_wake, missed, early, stale

    # Visit saves -------------------------------------------------------------------------------------------------
    async def saves(self, count, live, visits):
        """`count` single-record visit saves from one connection per account, paced to BENCH_SAVE_RATE; with
        `live`, the replay changes a score every BENCH_ADVANCE_SECONDS meanwhile. Latencies (ms) and figures."""
        rate = self.args.save_rate
        clients = [await Connection(self.args.server).open() for _ in self.tokens]
        tokens = list(self.tokens)
        per_client = max(1, count // len(clients))
        seconds = per_client * len(clients) / rate
        _, before = await self.replay("GET", "/_bench/stats")
        if live:
            await self.replay("POST", "/_bench/auto", {"every": self.args.advance_seconds, "seconds": seconds + 5})
        ticks_before = process_ticks(self.args.server_pid)
        latencies, errors, sends = [], [], []
        start = time.monotonic() + 0.1

        async def client(index):
            connection = clients[index]
            next_at = start + index / rate
            for n in range(per_client):
                delay = next_at - time.monotonic()
                if delay > 0:
                    await asyncio.sleep(delay)
                next_at += len(clients) / rate
                visit = visits[(index * per_client + n) % len(visits)]
                body = {"operations": [{"operationType": "create", "record": {
                    "recordName": f"visit-{'live' if live else 'idle'}-{os.getpid()}-{time.monotonic_ns()}-{index}-{n}",
                    "recordType": "StadiumVisit", "fields": visit}}]}
                sent = time.monotonic()
                status, answer = await connection.call("POST", self.private("records/modify", tokens[index]), body)
                latencies.append((time.monotonic() - sent) * 1000)
                sends.append((sent, latencies[-1]))
                if status != 200 or any("serverErrorCode" in r for r in (answer or {}).get("records", [])):
                    errors.append(f"{status}: {json.dumps(answer)[:300]}")
                else:
                    tokens[index] = connection.headers.get("x-apple-cloudkit-web-auth-token", tokens[index])

        began = time.monotonic()
        await asyncio.wait_for(asyncio.gather(*(client(i) for i in range(len(clients)))), max(60, seconds * 3))
        elapsed = time.monotonic() - began
        ticks_after = process_ticks(self.args.server_pid)
        if live:
            await self.replay("POST", "/_bench/auto", {"every": 0})
        _, after = await self.replay("GET", "/_bench/stats")
        self.tokens = tokens
        for connection in clients:
            connection.close()
        return latencies, {
            "seconds": elapsed, "errors": errors, "cpu": 100 * (ticks_after - ticks_before) / os.sysconf("SC_CLK_TCK") / elapsed,
            "changes": after["advances"] - before["advances"], "polls": after["requests"] - before["requests"], "sends": sends,
        }

    async def run(self):
        args = self.args
        restart = await first_round(args.replay, args.server, min(240, self.left()), args.server_pid)
        _, today_info = await self.replay("GET", "/_bench/today")
        today = date.fromisoformat(today_info["today"])
        live_games = today_info["games"]
        checked, wrong = await self.verify(today)

        # The league whose season zone a device follows: the NBA's when it plays today, else any league playing.
        leagues = sorted({g["league"] for g in live_games}, key=lambda l: (l != "nba", l))
        wake = None
        if leagues:
            league = leagues[0]
            zone = next(g["zone"] for g in live_games if g["league"] == league)
            wake = (league, zone, *(await self.fetch_to_wake(league, zone, args.rounds)))

        # Visits: a game being played today at its venue, else a venue (no game) when nothing is played today.
        visits = []
        for g in live_games or [{"stadium": "stadium_nba_td_garden", "stadiumName": "TD Garden", "sport": "basketball"}]:
            fields = {
                "stadium": {"type": "REFERENCE", "value": {"recordName": g["stadium"], "action": "NONE"}},
                "sport": {"type": "STRING", "value": {"football": "american_football", "hockey": "ice_hockey"}.get(g["sport"], g["sport"])},
                "visitDate": {"type": "TIMESTAMP", "value": int(time.time() * 1000)},
                "visitType": {"type": "STRING", "value": "game"},
                "stadiumNameAtVisit": {"type": "STRING", "value": g["stadiumName"]},
                "notes": {"type": "STRING", "value": "At the game tonight"},
            }
            if "id" in g:
                fields["game"] = {"type": "REFERENCE", "value": {"recordName": g["id"], "action": "NONE"}}
                fields["homeTeamName"] = {"type": "STRING", "value": g["home"]}
                fields["awayTeamName"] = {"type": "STRING", "value": g["away"]}
            visits.append(fields)
        await self.saves(40, False, visits)  # warm-up
        results = {True: ([], []), False: ([], [])}
        half = max(len(self.tokens), args.saves // 2)
        for live in (True, False, True, False):
            if not live:
                await asyncio.sleep(args.advance_seconds + 2.5)  # the last change is polled and written: idle from here
            latencies, figures = await self.saves(half, live and bool(live_games), visits)
            results[live][0].extend(latencies)
            results[live][1].append(figures)

        _, stats = await self.replay("GET", "/_bench/stats")
        _, changes = await self.replay("GET", "/_bench/changes")
        self.report(restart, checked, wrong, wake, results, stats, today, live_games, changes["served"])

    def report(self, restart, checked, wrong, wake, results, stats, today, live_games, served):
        args = self.args
        with open(args.ingest) as f:
            ingest = json.load(f)
        def delta(before, after, probes):
            counts = [b - a for a, b in zip((int(x) for x in before.split()), (int(x) for x in after.split()))]
            counts[0] -= probes  # the probes' own transactions are counted too
            return counts

        work = delta(args.pg_before, args.pg_after, args.pg_probes)
        base = delta(args.base_before, args.base_after, args.base_probes)
        playing = {}
        for g in live_games:
            playing[g["league"]] = playing.get(g["league"], 0) + 1
        print()
        print(f"Score feeds (release, loopback; replay of the providers for the US Eastern day {today}; "
              f"games in progress: {', '.join(f'{l} {n}' for l, n in sorted(playing.items())) or 'none'})")
        print()
        print("| measure | figure | goal |")
        print("|---|---|---|")
        print(f"| a day of 7 leagues ingested: the first round ({ingest['requests']} provider requests, "
              f"{ingest['games_reported']:.0f} games reported) | {ingest['since_start_s']:.1f} s from the process start, "
              f"{ingest['since_first_request_s']:.1f} s from its first request | - |")
        if not ingest["exact"]:
            print(f"| ... (the server counted {ingest['counted_requests']:.0f} of these requests: the end of the round is approximate) | | |")
        print(f"| ... games changed / refused | {ingest['changed']:.0f} / {ingest['refused']:.0f} | - |")
        print(f"| ... database work of the process, start to stop (pg_stat_database) | {work[0]} transactions, "
              f"{work[2]} rows inserted, {work[3]} updated, {work[4]} deleted | - |")
        print(f"| ... of which a server without feeds (start, catalog, stop) | {base[0]} transactions, "
              f"{base[2]} rows inserted, {base[3]} updated, {base[4]} deleted | - |")
        if wake:
            league, zone, latencies, change_to_wake, missed, early, stale = wake
            if latencies:
                print(f"| fetch-to-wake, {len(latencies)} rounds ({league}, a device waiting on {zone}): p50 / p99 / max | "
                      f"{statistics.median(latencies):.1f} / {percentile(latencies, 99):.1f} / {max(latencies):.1f} ms | p99 ≤ 50 ms |")
                print(f"| score change at the provider -> wake (adds the wait for the next poll, every "
                      f"{args.live_interval} s): p50 / p99 | {statistics.median(change_to_wake):.0f} / "
                      f"{percentile(change_to_wake, 99):.0f} ms | - |")
            print(f"| ... waits that ended without the new score / woken before it was served / delta without it | "
                  f"{missed} / {early} / {len(stale)} | 0 |")
        else:
            print("| fetch-to-wake | no dataset game is played today: not measured | p99 ≤ 50 ms |")
        live_ms, idle_ms = results[True][0], results[False][0]
        live_p99, idle_p99 = percentile(live_ms, 99), percentile(idle_ms, 99)
        clients = len(self.tokens)
        print(f"| visit save p99, live day ({len(live_ms)} saves) / idle day ({len(idle_ms)}), {clients} clients, "
              f"{args.save_rate:.0f}/s, interleaved | {live_p99:.2f} / {idle_p99:.2f} ms = {live_p99 / idle_p99:.2f}× | ≤ 1.10× |")
        print(f"| visit save p50, live / idle | {statistics.median(live_ms):.2f} / {statistics.median(idle_ms):.2f} ms | - |")
        live_figures, idle_figures = results[True][1], results[False][1]
        print(f"| ... score changes during the live / idle halves; provider polls | "
              f"{sum(f['changes'] for f in live_figures)} / {sum(f['changes'] for f in idle_figures)}; "
              f"{sum(f['polls'] for f in live_figures)} / {sum(f['polls'] for f in idle_figures)} | - |")
        live_cpu, idle_cpu = statistics.mean(f["cpu"] for f in live_figures), statistics.mean(f["cpu"] for f in idle_figures)
        changes = sum(f["changes"] for f in live_figures)
        per_change = (live_cpu - idle_cpu) / 100 * sum(f["seconds"] for f in live_figures) / changes * 1000 if changes else 0
        print(f"| ... server CPU, live / idle (share of one core); the difference per score change | "
              f"{live_cpu:.0f} / {idle_cpu:.0f} %; {per_change:.0f} ms | - |")
        # What one score change does to the saves sent in the second after the provider's answer carrying it.
        sends = [(sent, ms) for f in live_figures for sent, ms in f["sends"]]
        first, last = (sends[0][0], sends[-1][0]) if sends else (0, 0)
        worst = [max((ms for sent, ms in sends if t <= sent <= t + 1.0), default=None) for t in served if first <= t <= last]
        worst = [ms for ms in worst if ms is not None]
        slow = sum(ms > idle_p99 for _, ms in sends)
        if worst:
            print(f"| ... the slowest save sent within 1 s after each score change was served ({len(worst)} changes): "
                  f"median / max | {statistics.median(worst):.0f} / {max(worst):.0f} ms | - |")
        print(f"| ... live-day saves slower than the idle p99 | {slow} of {len(sends)} | ~1 % |")
        print()
        print(f"First round per league (provider, poll, games in the answer): "
              + "; ".join(f"{league}: {', '.join(polls)}" for league, polls in sorted(ingest["per_league"].items())))
        print(f"After a restart the first round took {restart['since_start_s']:.1f} s and changed {restart['changed']:.0f} games "
              f"(refused {restart['refused']:.0f}).")
        print(f"Games checked against canonical/games ({today - timedelta(days=3)} to {today + timedelta(days=6)}): {checked}, "
              f"not as the replay served them: {len(wrong)}")
        for line in wrong[:10]:
            print(f"  {line}")
        print(f"Provider requests answered: {stats['requests']} ({', '.join(f'{k} {v}' for k, v in sorted(stats['by_provider'].items()))}); "
              f"unknown paths answered empty: {stats['unknown']}" + (f" (e.g. {stats['unknown_paths'][:3]})" if stats["unknown"] else ""))
        errors = [e for f in live_figures + idle_figures for e in f["errors"]]
        if errors:
            print(f"Saves that failed: {len(errors)}, e.g. {errors[0]}")
        if wake and wake[6]:
            print(f"Deltas without the served score: {wake[6][:3]}")


def process_ticks(pid):
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def measure_main(args):
    asyncio.run(Measure(args).run())


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    modes = parser.add_subparsers(dest="mode", required=True)
    replay = modes.add_parser("replay")
    replay.add_argument("--port", type=int, required=True)
    replay.add_argument("--canonical", default="Resources/canonical")
    replay.add_argument("--today", help="the US Eastern day to replay (default: today's)")
    replay.add_argument("--max-seconds", type=float, default=3600)
    round_ = modes.add_parser("round")
    round_.add_argument("--replay", required=True)
    round_.add_argument("--server", required=True)
    round_.add_argument("--out", required=True)
    round_.add_argument("--deadline", type=float, default=240)
    round_.add_argument("--server-pid", type=int, required=True)
    measure = modes.add_parser("measure")
    for name in ("--replay", "--server", "--api", "--accounts", "--ingest", "--pg-before", "--pg-after", "--base-before", "--base-after"):
        measure.add_argument(name, required=True)
    measure.add_argument("--server-pid", type=int, required=True)
    measure.add_argument("--pg-probes", type=int, default=1)
    measure.add_argument("--base-probes", type=int, default=1)
    measure.add_argument("--rounds", type=int, default=int(os.environ.get("BENCH_ROUNDS", "50")))
    measure.add_argument("--saves", type=int, default=int(os.environ.get("BENCH_SAVES", "2000")))
    measure.add_argument("--save-rate", type=float, default=float(os.environ.get("BENCH_SAVE_RATE", "50")))
    measure.add_argument("--advance-seconds", type=float, default=float(os.environ.get("BENCH_ADVANCE_SECONDS", "2")))
    measure.add_argument("--live-interval", type=int, default=2)
    measure.add_argument("--deadline", type=float, default=1500)
    args = parser.parse_args()
    {"replay": replay_main, "round": round_main, "measure": measure_main}[args.mode](args)


if __name__ == "__main__":
    main()
