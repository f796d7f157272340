"""Web apps on other origins in headless Chromium (scripts/browser/run): each step prints a line; any failure exits 1.

    webapp.py SERVER ALLOWED_PAGE OTHER_PAGE   (origins, e.g. http://127.0.0.1:19180; WEBAPP_API_TOKEN and
                                                 WEBAPP_PASSWORD, alice's, in the environment)

The page on ALLOWED_PAGE is on an origin the server allows (`serve --web-origin`), the one on OTHER_PAGE is not. Each
page gets the script a web app would have (PAGE_SCRIPT: `fetch` as CloudKit JS calls, `text/plain` JSON bodies,
the web auth token taken from each answer's X-Apple-CloudKit-Web-Auth-Token, the sign-in popup's message); the
steps call it with execute_async_script. Every wait is bounded."""
import json
import os
import sys
import time
import urllib.error
import urllib.request

from selenium import webdriver
from selenium.common.exceptions import TimeoutException
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import WebDriverWait

server, allowed_page, other_page = sys.argv[1], sys.argv[2], sys.argv[3]
api_token, password = os.environ["WEBAPP_API_TOKEN"], os.environ["WEBAPP_PASSWORD"]
container = "iCloud.com.sportstime.app"
started = time.monotonic()
# A sign-in checks alice's scrypt hash (cost 10, scripts/browser/run): quick, but a busy machine can slow it, so the
# popup gets longer than the other waits.
SIGN_IN_SECONDS = 20


def step(text):
    print(f"web apps: {text} ({time.monotonic() - started:.1f} s)", file=sys.stderr, flush=True)


def fail(text):
    print(f"web apps: FAILED: {text}", file=sys.stderr, flush=True)
    sys.exit(1)


# What a web app on either page runs. `app.call` answers {status, json, text, token (the rotated one, if the answer
# had it), sent (the token it sent), error (a rejected fetch: name and message)}; a rotated token replaces the page's.
PAGE_SCRIPT = """
const [server, apiToken, container] = arguments;
window.app = {
  server, token: null, signInURL: null, popup: null, received: [],
  url(database, path, token) {
    let url = `${server}/database/1/${container}/development/${database}/${path}?ckAPIToken=${apiToken}`;
    if (token) url += '&ckWebAuthToken=' + encodeURIComponent(token);
    return url;
  },
  async call(database, path, body, options = {}) {
    const sent = options.token === undefined ? this.token : options.token;
    const init = {method: 'POST', body: JSON.stringify(body)};  // a string body: text/plain, as CloudKit JS sends
    if (options.headers) init.headers = options.headers;
    return this.read(fetch(this.url(database, path, sent), init), sent);
  },
  async read(promise, sent) {
    let response;
    try { response = await promise; } catch (e) { return {error: {name: e.name, message: e.message}, sent}; }
    const text = await response.text();
    let json = null;
    try { json = JSON.parse(text); } catch (e) {}
    const token = response.headers.get('X-Apple-CloudKit-Web-Auth-Token');
    if (token) this.token = token;
    return {status: response.status, json, text, token, sent, requestUUID: response.headers.get('X-Apple-Request-UUID')};
  },
  signIn() { this.popup = window.open(this.signInURL, 'stadiumcloud-signin', 'popup,width=480,height=640'); },
};
// CloudKit JS's way: the sign-in popup posts {ckSession} to its opener; only the server's own message is taken.
window.addEventListener('message', event => {
  app.received.push({origin: event.origin, data: event.data});
  if (event.origin === server && event.data && event.data.ckSession) app.token = event.data.ckSession;
});
const button = document.createElement('button');
button.id = 'signin';
button.textContent = 'Sign in with StadiumCloud';
button.addEventListener('click', () => app.signIn());
document.body.append(button);
"""


def run(browser, script, *arguments):
    """Runs `script` (the body of an async function with `app` in scope and its arguments as `args`) in the page and
    answers what it returns."""
    answer = browser.execute_async_script(
        "const done = arguments[arguments.length - 1], args = Array.from(arguments).slice(0, -1);"
        f"(async () => {{ {script} }})().then(done, e => done({{thrown: String(e)}}));",
        *arguments)
    if isinstance(answer, dict) and "thrown" in answer:
        fail(f"the page's script threw {answer['thrown']}")
    return answer


def call(browser, database, path, body, **options):
    return run(browser, "return await app.call(args[0], args[1], args[2], args[3]);", database, path, body, options)


def show(answer):
    """An answer, short, for a failure message."""
    return json.dumps({k: answer.get(k) for k in ("status", "error", "text", "token")})[:700]


def open_page(browser, url):
    browser.get(url + "/")
    browser.execute_script(PAGE_SCRIPT, server, api_token, container)


def sign_in_in_popup(browser, opener):
    """Clicks the page's sign-in button, signs alice in inside the popup and waits until the popup closed itself."""
    browser.find_element(By.ID, "signin").click()
    WebDriverWait(browser, 5).until(lambda b: len(b.window_handles) == 2)
    popup = next(handle for handle in browser.window_handles if handle != opener)
    browser.switch_to.window(popup)
    WebDriverWait(browser, 5).until(lambda b: b.find_elements(By.NAME, "accountName"))
    if not browser.current_url.startswith(server + "/signin"):
        fail(f"the popup shows {browser.current_url}")
    browser.find_element(By.NAME, "accountName").send_keys("alice")
    browser.find_element(By.NAME, "password").send_keys(password + Keys.ENTER)
    try:
        WebDriverWait(browser, SIGN_IN_SECONDS).until(lambda b: len(b.window_handles) == 1)
    except TimeoutException:
        text = browser.find_element(By.TAG_NAME, "body").text[:300]
        errors = [entry["message"] for entry in browser.get_log("browser") if entry.get("source") == "javascript"]
        fail(f"the sign-in popup did not close itself within {SIGN_IN_SECONDS} s; it shows {text!r}; its console: {errors}")
    finally:
        browser.switch_to.window(opener)


def preflight(origin):
    """The preflight the browser sends for a custom header, from `origin`, straight to the server: (status, headers)."""
    request = urllib.request.Request(
        f"{server}/database/1/{container}/development/public/records/query?ckAPIToken={api_token}", method="OPTIONS",
        headers={"Origin": origin, "Access-Control-Request-Method": "POST",
                 "Access-Control-Request-Headers": "content-type,x-stadiumcloud-device-id"})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, dict(response.headers)
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers)


options = webdriver.ChromeOptions()
for argument in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1000,800"]:
    options.add_argument(argument)
options.binary_location = "/usr/bin/chromium"
options.set_capability("goog:loggingPrefs", {"browser": "ALL"})  # the console of a failed popup, for the report
browser = webdriver.Chrome(service=webdriver.ChromeService(executable_path="/usr/bin/chromedriver"), options=options)
browser.set_page_load_timeout(10)
browser.set_script_timeout(20)  # the courier poll below waits up to 10 s; everything else answers at once
try:
    step(f"Chromium started; the allowed page is {allowed_page}, the other {other_page}, the server {server}")
    open_page(browser, allowed_page)
    page = browser.current_window_handle

    step("the allowed page reads the public database (records/query of League)")
    answer = call(browser, "public", "records/query", {"query": {"recordType": "League"}})
    if answer.get("status") != 200 or not answer.get("json"):
        fail(f"the public query answered {show(answer)}")
    names = [record["fields"]["name"]["value"] for record in answer["json"].get("records", [])]
    if "Major League Baseball" not in names:
        fail(f"the public query read {names}")
    if not answer.get("requestUUID"):
        fail("X-Apple-Request-UUID is not readable by the page (Access-Control-Expose-Headers)")

    step("a call with custom headers (Content-Type: application/json, X-StadiumCloud-Device-ID) passes its preflight")
    status, headers = preflight(allowed_page)
    if status != 204 or headers.get("Access-Control-Allow-Origin") != allowed_page:
        fail(f"the preflight from the allowed page answered {status} {headers}")
    answer = call(browser, "public", "records/query", {"query": {"recordType": "League"}},
                  headers={"Content-Type": "application/json", "X-StadiumCloud-Device-ID": "web-app-test"})
    if answer.get("status") != 200 or len((answer.get("json") or {}).get("records", [])) != len(names):
        fail(f"the preflighted query answered {show(answer)}")

    step("a private call without a web auth token answers 421 with the sign-in page as redirectURL")
    answer = call(browser, "private", "records/query", {"query": {"recordType": "StadiumVisit"}})
    error = answer.get("json") or {}
    if answer.get("status") != 421 or error.get("serverErrorCode") != "AUTHENTICATION_REQUIRED":
        fail(f"the private call without a token answered {show(answer)}")
    if not str(error.get("redirectURL", "")).startswith(server + "/signin"):
        fail(f"the 421 answer's redirectURL is {error.get('redirectURL')!r}, not the server's sign-in page")
    browser.execute_script("app.signInURL = arguments[0]", error["redirectURL"])

    step("the page opens the sign-in popup, alice signs in there, the popup closes itself")
    sign_in_in_popup(browser, page)
    step("the page gets the popup's message from the server's origin, with ckSession")
    try:
        WebDriverWait(browser, 3).until(lambda b: b.execute_script("return app.received.length") > 0)
    except TimeoutException:
        fail("no message reached the allowed page from the sign-in popup")
    received = browser.execute_script("return app.received")
    message = received[0]
    data = message.get("data") or {}
    if message.get("origin") != server or not str(data.get("ckSession", "")).startswith("2__"):
        fail(f"the popup's message is {json.dumps(received)[:500]}")
    if data.get("ckWebAuthToken") != data["ckSession"] or not str(data.get("userRecordName", "")).startswith("_"):
        fail(f"the popup's message lacks ckWebAuthToken or userRecordName: {json.dumps(data)[:500]}")
    if browser.execute_script("return app.token") != data["ckSession"]:
        fail("the page did not keep the session token")

    step("a private save (records/modify) with the token; the page reads the rotated token")
    visit = {"recordName": "visit-web-1", "recordType": "StadiumVisit",
             "fields": {"notes": {"value": "first visit, from a web app"}, "seatSection": {"value": "101"}}}
    answer = call(browser, "private", "records/modify", {"operations": [{"operationType": "create", "record": visit}]})
    records = (answer.get("json") or {}).get("records") or [{}]
    if answer.get("status") != 200 or records[0].get("recordName") != "visit-web-1" or "recordChangeTag" not in records[0]:
        fail(f"the private save answered {show(answer)}")
    if not answer.get("token"):
        fail("the save's answer has no X-Apple-CloudKit-Web-Auth-Token the page can read")
    if answer["token"] == answer["sent"]:
        fail("the web auth token did not rotate")
    first_tag = records[0]["recordChangeTag"]

    step("the next call with the rotated token works (records/lookup), and rotates again")
    answer = call(browser, "private", "records/lookup", {"records": [{"recordName": "visit-web-1"}]})
    records = (answer.get("json") or {}).get("records") or [{}]
    if answer.get("status") != 200 or records[0].get("fields", {}).get("notes", {}).get("value") != "first visit, from a web app":
        fail(f"the lookup with the rotated token answered {show(answer)}")
    if not answer.get("token") or answer["token"] == answer["sent"]:
        fail(f"the lookup's answer carries no new token: {show(answer)}")

    step("an update with a stale recordChangeTag answers the record's CONFLICT")
    changed = dict(visit, recordChangeTag=first_tag, fields={"notes": {"value": "edited on the web"}})
    answer = call(browser, "private", "records/modify", {"operations": [{"operationType": "update", "record": changed}]})
    records = (answer.get("json") or {}).get("records") or [{}]
    if answer.get("status") != 200 or records[0].get("recordChangeTag") in (None, first_tag):
        fail(f"the update with the current tag answered {show(answer)}")
    stale = dict(visit, recordChangeTag=first_tag, fields={"notes": {"value": "edited with a stale tag"}})
    answer = call(browser, "private", "records/modify", {"operations": [{"operationType": "update", "record": stale}]})
    records = (answer.get("json") or {}).get("records") or [{}]
    if records[0].get("serverErrorCode") != "CONFLICT" or records[0].get("recordName") != "visit-web-1":
        fail(f"the stale update answered {show(answer)}")

    step("a push token and a query subscription on StadiumVisit in the private database")
    answer = call(browser, "private", "tokens/create", {"apnsEnvironment": "development"})
    created = answer.get("json") or {}
    if answer.get("status") != 200 or not created.get("apnsToken") or not created.get("webcourierURL"):
        fail(f"tokens/create answered {show(answer)}")
    if not created["webcourierURL"].startswith(server + "/webcourier/aps?"):
        fail(f"the webcourierURL is {created['webcourierURL']!r}")
    subscription = {"subscriptionID": "web-visits", "subscriptionType": "query", "query": {"recordType": "StadiumVisit"},
                    "firesOn": ["create", "update", "delete"]}
    answer = call(browser, "private", "subscriptions/modify",
                  {"operations": [{"operationType": "create", "subscription": subscription}]})
    saved = ((answer.get("json") or {}).get("subscriptions") or [{}])[0]
    if answer.get("status") != 200 or saved.get("subscriptionID") != "web-visits" or "serverErrorCode" in saved:
        fail(f"subscriptions/modify answered {show(answer)}")

    step("a courier long poll from the page answers the frame of a save made meanwhile")
    run(browser, "app.poll = app.read(fetch(args[0] + '&timeout=10')); app.pollDone = false;"
                 "app.poll.then(() => { app.pollDone = true; });", created["webcourierURL"])
    time.sleep(0.5)
    if browser.execute_script("return app.pollDone"):
        fail(f"the courier poll answered before anything changed: {show(run(browser, 'return await app.poll;'))}")
    second = {"recordName": "visit-web-2", "recordType": "StadiumVisit", "fields": {"notes": {"value": "second visit"}}}
    answer = call(browser, "private", "records/modify", {"operations": [{"operationType": "create", "record": second}]})
    if answer.get("status") != 200 or "serverErrorCode" in ((answer.get("json") or {}).get("records") or [{}])[0]:
        fail(f"the second save answered {show(answer)}")
    poll = run(browser, "return await app.poll;")
    frame = poll.get("json") or {}
    query = frame.get("ck", {}).get("qry") or {}
    if poll.get("status") != 200 or "aps" not in frame:
        fail(f"the courier poll answered {show(poll)}")
    if query.get("sid") != "web-visits" or query.get("dbs") != 1 or query.get("rid") != "visit-web-2" or query.get("fo") != 1:
        fail(f"the courier frame is {poll.get('text')}")
    step(f"  frame: {poll.get('text')}")

    step("the page on the origin not allowed: its fetch rejects (a network error), it reads nothing")
    status, headers = preflight(other_page)
    if "Access-Control-Allow-Origin" in headers:
        fail(f"the preflight from the other page answered {status} with {headers}")
    open_page(browser, other_page)
    page = browser.current_window_handle
    for database, path in [("public", "records/query"), ("private", "records/query")]:
        answer = call(browser, database, path, {"query": {"recordType": "League"}})
        if (answer.get("error") or {}).get("name") != "TypeError" or "status" in answer:
            fail(f"a {database} fetch from the other page was not refused: {show(answer)}")

    step("a sign-in popup the other page opens (alice signs in) closes and posts it nothing")
    browser.execute_script("app.signInURL = arguments[0]", server + "/signin")
    sign_in_in_popup(browser, page)
    try:
        WebDriverWait(browser, 2).until(lambda b: b.execute_script("return app.received.length") > 0)
        fail(f"the other page received {json.dumps(browser.execute_script('return app.received'))[:500]}")
    except TimeoutException:
        pass
    if browser.execute_script("return app.token") is not None or not browser.execute_script("return app.popup.closed"):
        fail("the other page learnt a token, or its popup is still open")
    step("passed")
finally:
    browser.quit()
