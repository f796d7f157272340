"""The operator console in headless Chromium (scripts/console/run): each step prints a line; any failure exits 1."""
import json
import os
import sys
import urllib.error
import urllib.parse
import urllib.request

from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import WebDriverWait

base, shots = sys.argv[1], sys.argv[2]
password = os.environ["CONSOLE_PASSWORD"]
os.makedirs(shots, exist_ok=True)


def step(text):
    print(f"console browser: {text}", file=sys.stderr, flush=True)


def fail(text):
    print(f"console browser: FAILED: {text}", file=sys.stderr, flush=True)
    sys.exit(1)


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def raw(path, data=None, cookie=None):
    """One request without following redirects: (status, body)."""
    request = urllib.request.Request(base + path, data=urllib.parse.urlencode(data).encode() if data is not None else None)
    if cookie:
        request.add_header("Cookie", cookie)
    try:
        with urllib.request.build_opener(NoRedirect).open(request, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def submitted(browser, field, text):
    """Types `text` and Enter into `field`, and waits until the next page replaced this one."""
    old = browser.find_element(By.TAG_NAME, "html")
    field.send_keys(text + Keys.ENTER)
    WebDriverWait(browser, 15).until(lambda b: b.find_element(By.TAG_NAME, "html").id != old.id)


def sign_in(browser, name, secret):
    browser.get(base + "/console/signin")
    browser.find_element(By.NAME, "accountName").send_keys(name)
    submitted(browser, browser.find_element(By.NAME, "password"), secret)


def check_labels(browser, page):
    """Every visible input has a label around it or naming it."""
    for field in browser.find_elements(By.CSS_SELECTOR, "input:not([type=hidden])"):
        labelled = browser.execute_script("return arguments[0].labels.length", field)
        if not labelled:
            fail(f"an input on {page} has no label: {field.get_attribute('outerHTML')}")


options = webdriver.ChromeOptions()
for argument in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1200,900"]:
    options.add_argument(argument)
options.binary_location = "/usr/bin/chromium"
browser = webdriver.Chrome(service=webdriver.ChromeService(executable_path="/usr/bin/chromedriver"), options=options)
browser.set_page_load_timeout(30)
try:
    step("unauthenticated access goes to the sign-in page")
    status, _ = raw("/console")
    if status != 303:
        fail(f"GET /console without a session answered {status}")
    browser.get(base + "/console")
    if not browser.current_url.endswith("/console/signin"):
        fail(f"not redirected: {browser.current_url}")
    check_labels(browser, "the sign-in page")
    browser.save_screenshot(os.path.join(shots, "signin.png"))

    step("a person's account and a wrong password are refused")
    sign_in(browser, "alice", password)
    if "Wrong operator account or password" not in browser.page_source:
        fail("a person's account was let in")
    sign_in(browser, "ops", "not the password at all")
    if "Wrong operator account or password" not in browser.page_source:
        fail("a wrong password was let in")

    step("a forged sign-in form (no form cookie) is refused")
    status, body = raw("/console/signin", {"formToken": "forged", "accountName": "ops", "password": password})
    if status != 403:
        fail(f"a forged sign-in answered {status}")

    step("an operator signs in and sees the overview with the canonical data")
    sign_in(browser, "ops", password)
    if browser.find_element(By.TAG_NAME, "h1").text != "Overview":
        fail(f"no overview: {browser.page_source[:500]}")
    text = browser.find_element(By.TAG_NAME, "main").text
    for expected in ["ready", "Stadium", "Game", "public"]:
        if expected not in text:
            fail(f"the overview lacks {expected!r}")
    check_labels(browser, "the overview")
    browser.save_screenshot(os.path.join(shots, "overview.png"))

    step("the keyboard reaches the navigation and the focus is visible")
    browser.find_element(By.TAG_NAME, "body").send_keys(Keys.TAB)
    focused = browser.switch_to.active_element
    outline = browser.execute_script("return getComputedStyle(arguments[0]).outlineStyle", focused)
    if focused.tag_name not in ("a", "button") or outline == "none":
        fail(f"the first Tab focused {focused.tag_name} with outline {outline}")

    step("accounts are found by name")
    browser.find_element(By.LINK_TEXT, "Accounts").click()
    WebDriverWait(browser, 15).until(lambda b: b.current_url.endswith("/console/accounts"))
    submitted(browser, browser.find_element(By.NAME, "q"), "op")
    rows = [row.text for row in browser.find_elements(By.CSS_SELECTOR, "tbody tr")]
    if not any(row.startswith("ops") for row in rows) or any(row.startswith("alice") for row in rows):
        fail(f"the search for 'op' listed {rows}")
    browser.save_screenshot(os.path.join(shots, "accounts.png"))

    step("an API token made in the console works until it is revoked there")
    browser.find_element(By.LINK_TEXT, "Credentials").click()
    WebDriverWait(browser, 15).until(lambda b: b.current_url.endswith("/console/credentials"))
    check_labels(browser, "the credentials page")
    submitted(browser, browser.find_element(By.NAME, "label"), "browser-test")
    token = browser.find_element(By.ID, "new-token").text
    zones = f"/database/1/iCloud.com.sportstime.app/development/public/zones/list?ckAPIToken={token}"
    if raw(zones)[0] != 200:
        fail("the new API token does not work")
    old = browser.find_element(By.TAG_NAME, "html")
    browser.find_element(By.CSS_SELECTOR, "button[aria-label='Revoke API token browser-test']").click()
    WebDriverWait(browser, 15).until(lambda b: b.find_element(By.TAG_NAME, "html").id != old.id)
    if "API token revoked" not in browser.page_source:
        fail("no confirmation of the revocation")
    browser.save_screenshot(os.path.join(shots, "credentials.png"))
    if raw(zones)[0] != 401:
        fail("the revoked API token still works")

    step("a forged sign-out (the session cookie without its form token) is refused")
    cookie = browser.get_cookie("stadiumcloud_console")
    if not cookie or not cookie.get("httpOnly") or cookie.get("sameSite") != "Strict":
        fail(f"the session cookie is not HttpOnly and SameSite=Strict: {json.dumps(cookie)}")
    status, _ = raw("/console/signout", {"formToken": "forged"}, cookie=f"stadiumcloud_console={cookie['value']}")
    if status != 403:
        fail(f"a forged sign-out answered {status}")

    step("signing out ends the session")
    browser.find_element(By.CSS_SELECTOR, "nav button").click()
    WebDriverWait(browser, 15).until(lambda b: b.current_url.endswith("/console/signin"))
    if not browser.current_url.endswith("/console/signin"):
        fail(f"not back at the sign-in page: {browser.current_url}")
    status, _ = raw("/console", cookie=f"stadiumcloud_console={cookie['value']}")
    if status != 303:
        fail(f"the ended session still opened the console ({status})")
    step("passed (screenshots in docs/console/)")
finally:
    browser.quit()
