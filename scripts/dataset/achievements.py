#!/usr/bin/env python3
"""Build Resources/canonical/achievements.json: the achievement definitions, derived from the league structure.

Usage (from the repo root):  python3 scripts/dataset/achievements.py   (build.py runs it after the other files)

A definition names a scope (league, conference or division, by canonical id) and a requirement:
  allVenues   every venue that is home to a team of the scope on the day the last one is visited
  venueCount  `count` distinct venues of the scope
The venue sets are not written here: the engine (Sources/Canon/AchievementEngine.swift) computes them from the
tenancies, so a relocation or a new venue needs no change to this file. Output is deterministic.
"""
import json
import os

SCRIPT_DIR = os.path.dirname(os.path.abspath(__file__))
OUT_DIR = os.path.normpath(os.path.join(SCRIPT_DIR, "..", "..", "Resources", "canonical"))

# Venue-count milestones per league, and what a league calls its venues.
MILESTONES = [5, 10, 20]
VENUE_WORD = {"baseball": "parks", "basketball": "arenas", "ice_hockey": "arenas"}


def load(name):
    with open(os.path.join(OUT_DIR, name)) as f:
        return json.load(f)


def definition(id_, name, description, requirement, count=None, league=None, conference=None, division=None):
    return {"id": id_, "name": name, "description": description, "requirement": requirement, "count": count,
            "leagueId": league, "conferenceId": conference, "divisionId": division}


def build():
    leagues = {l["id"]: l for l in load("leagues.json")}
    teams = load("teams.json")
    out = []
    for league in sorted(leagues.values(), key=lambda l: l["id"]):
        short = league["id"].removeprefix("league_")
        word = VENUE_WORD.get(league["sport"], "stadiums")
        n = len({t["homeStadiumId"] for t in teams if t["leagueId"] == league["id"]})
        out.append(definition(f"achievement_{short}_all_venues", f"Every {league['abbreviation']} venue",
                              f"Visit all {n} current {league['abbreviation']} {word}", "allVenues", league=league["id"]))
        for count in MILESTONES:
            if count < n:
                out.append(definition(f"achievement_{short}_{count}_venues", f"{count} {league['abbreviation']} {word}",
                                      f"Visit {count} different {league['abbreviation']} {word}", "venueCount", count,
                                      league=league["id"]))
    for conference in sorted(load("conferences.json"), key=lambda c: c["id"]):
        abbreviation = leagues[conference["leagueId"]]["abbreviation"]
        short = conference["id"].removeprefix("conference_")
        out.append(definition(f"achievement_{short}_all_venues", f"Every {conference['name']} venue",
                              f"Visit the home venue of every {abbreviation} {conference['name']} team", "allVenues",
                              league=conference["leagueId"], conference=conference["id"]))
    for division in sorted(load("divisions.json"), key=lambda d: d["id"]):
        abbreviation = leagues[division["leagueId"]]["abbreviation"]
        short = division["id"].removeprefix("division_")
        out.append(definition(f"achievement_{short}_all_venues", f"Every {division['name']} venue",
                              f"Visit the home venue of every {abbreviation} {division['name']} team", "allVenues",
                              league=division["leagueId"], conference=division.get("conferenceId"), division=division["id"]))
    out.append(definition("achievement_first_visit", "First visit", "Log a visit to any venue", "venueCount", 1))
    return out


def main():
    definitions = build()
    with open(os.path.join(OUT_DIR, "achievements.json"), "w") as f:
        json.dump(definitions, f, indent=2, sort_keys=True)
        f.write("\n")
    print("achievements.py: wrote %d achievement definitions" % len(definitions))


if __name__ == "__main__":
    main()
