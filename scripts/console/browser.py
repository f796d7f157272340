"""The operator console in headless Chromium (scripts/console/run): each step prints a line; any failure exits 1."""
import json
import os
import sys
import urllib.error
import urllib.parse
import urllib.request

from selenium import webdriver
from selenium.common.exceptions import WebDriverException
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import Select, WebDriverWait

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


CONTRAST = """
function luminance(rgb) {
  const [r, g, b] = rgb.match(/[\\d.]+/g).slice(0, 3).map(Number).map(v => v / 255)
    .map(v => v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4));
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}
function background(element) {
  for (let e = element; e; e = e.parentElement) {
    const color = getComputedStyle(e).backgroundColor;
    if (color && !color.startsWith('rgba(0, 0, 0, 0)') && color !== 'transparent') return color;
  }
  return 'rgb(255, 255, 255)';
}
const failures = [];
for (const element of document.querySelectorAll('h1, h2, p, li, dt, dd, th, td, label, a, button, caption, code, pre')) {
  if (!element.offsetParent || !element.textContent.trim()) continue;
  const [light, dark] = [luminance(getComputedStyle(element).color), luminance(background(element))].sort((a, b) => b - a);
  const ratio = (light + 0.05) / (dark + 0.05);
  if (ratio < 4.5) failures.push(element.tagName + ' ' + ratio.toFixed(2) + ': ' + element.textContent.trim().slice(0, 40));
}
return failures;
"""


def check_contrast(browser, page):
    """Text contrast of at least 4.5:1 (WCAG AA) against the background it sits on."""
    failures = browser.execute_script(CONTRAST)
    if failures:
        fail(f"text on {page} has too little contrast: {failures[:5]}")


def next_page(browser, click):
    """Clicks `click` and waits until the next page replaced this one."""
    old = browser.find_element(By.TAG_NAME, "html")
    click.click()
    WebDriverWait(browser, 15).until(lambda b: b.find_element(By.TAG_NAME, "html").id != old.id)


def finished_import(browser, expected):
    """Waits until the import page shows a finished import whose page says `expected`; returns the page's text. The
    page reloads itself every second while an import runs, so it is read in one script, never through an element
    that a reload can leave stale."""
    def text(b):
        try:
            return b.execute_script(
                "return document.getElementById('import-result') ? document.querySelector('main').innerText : ''") or ""
        except WebDriverException:
            return ""
    WebDriverWait(browser, 120).until(lambda b: expected in text(b))
    return text(browser)


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
    check_contrast(browser, "the overview")
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

    step("an account is created in the console")
    browser.find_element(By.XPATH, "//form[input[@value='create']]//input[@name='name']").send_keys("carol")
    create = browser.find_element(By.XPATH, "//form[input[@value='create']]//input[@name='password']")
    submitted(browser, create, password)
    if "Account carol created" not in browser.page_source:
        fail("the account was not created")

    step("find Oracle Park: search the public data, open the record with its aliases")
    browser.find_element(By.LINK_TEXT, "Public data").click()
    WebDriverWait(browser, 15).until(lambda b: "/console/public" in b.current_url)
    check_labels(browser, "the public data page")
    submitted(browser, browser.find_element(By.NAME, "q"), "Oracle")
    next_page(browser, browser.find_element(By.LINK_TEXT, "stadium_mlb_oracle_park"))
    if browser.find_element(By.TAG_NAME, "h1").text != "Oracle Park":
        fail(f"Oracle Park's page is titled {browser.find_element(By.TAG_NAME, 'h1').text!r}")
    for alias in ["Pacific Bell Park", "SBC Park", "AT&T Park"]:
        if alias not in browser.find_element(By.TAG_NAME, "main").text:
            fail(f"Oracle Park's page lacks its alias {alias}")
    check_labels(browser, "a record's page")
    check_contrast(browser, "a record's page")
    browser.save_screenshot(os.path.join(shots, "public.png"))

    step("a system field is edited after a preview")
    Select(browser.find_element(By.NAME, "field")).select_by_visible_text("yearOpened")
    submitted(browser, browser.find_element(By.NAME, "value"), "2001")
    if "~ Stadium stadium_mlb_oracle_park: yearOpened" not in browser.find_element(By.ID, "preview").text:
        fail("the preview does not show the change")
    next_page(browser, browser.find_element(By.XPATH, "//button[text()='Apply the change']"))
    if "Applied:" not in browser.page_source or "2001" not in browser.find_element(By.TAG_NAME, "main").text:
        fail("the edit was not applied")

    step("an import: dry run, then apply, with a progress bar")
    browser.find_element(By.LINK_TEXT, "Import").click()
    WebDriverWait(browser, 15).until(lambda b: b.current_url.endswith("/console/import"))
    check_labels(browser, "the import page")
    path = browser.find_element(By.NAME, "path")
    path.clear()
    path.send_keys(os.environ["CONSOLE_DATASET"])
    browser.find_element(By.XPATH, "//button[text()='Dry run']").click()
    result = finished_import(browser, "wrote nothing")
    if "~ Stadium stadium_mlb_oracle_park: capacity, yearOpened" not in result:
        fail(f"the dry run shows {result[:800]}")
    check_contrast(browser, "the import page")
    browser.save_screenshot(os.path.join(shots, "import.png"))
    browser.find_element(By.XPATH, "//button[starts-with(text(), 'Apply th')]").click()
    finished_import(browser, "Applied")
    browser.get(base + "/console/public/record?zone=_defaultZone&name=stadium_mlb_oracle_park")
    if "41000" not in browser.find_element(By.TAG_NAME, "main").text:
        fail("the import did not reach Oracle Park")

    step("a dataset folder uploaded from the browser is dry-run")
    browser.find_element(By.LINK_TEXT, "Import").click()
    WebDriverWait(browser, 15).until(lambda b: b.current_url.endswith("/console/import"))
    upload = browser.find_element(By.NAME, "dataset")
    upload.send_keys(os.environ["CONSOLE_UPLOAD"])
    browser.find_element(By.XPATH, "//button[text()='Upload and dry run']").click()
    result = finished_import(browser, "wrote nothing")
    if "~ Stadium stadium_mlb_oracle_park: capacity" not in result or "stadiumcloud-console-uploads" not in result:
        fail(f"the uploaded folder's dry run shows {result[:800]}")

    step("the schema and the jobs pages")
    browser.find_element(By.LINK_TEXT, "Schema").click()
    WebDriverWait(browser, 15).until(lambda b: "/console/schema" in b.current_url)
    if "Stadium" not in browser.find_element(By.TAG_NAME, "main").text:
        fail("the schema page lacks the Stadium type")
    check_labels(browser, "the schema page")
    browser.find_element(By.LINK_TEXT, "Jobs").click()
    WebDriverWait(browser, 15).until(lambda b: b.current_url.endswith("/console/jobs"))
    if "Tombstone purge horizon" not in browser.page_source:
        fail("the jobs page lacks the purge horizon")
    check_contrast(browser, "the jobs page")

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
