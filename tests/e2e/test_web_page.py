"""The web page in a real browser: Debian's headless Chromium driven by Selenium through
/usr/bin/chromedriver, against uvicorn on a loopback port. Screenshots of every page go to the
test's tmp dir (and to $MEMFOLD_TEST_SCREENS when set)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from memfold import Memory
from memfold.server.app import create_app
from memfold.server.keys import KeyStore

from ..support.live_server import LiveServer

CHROMEDRIVER = "/usr/bin/chromedriver"
pytestmark = pytest.mark.skipif(not (Path(CHROMEDRIVER).exists() or os.environ.get("CI")),
                                reason="chromium-driver is not installed (.ci/run installs it)")


@pytest.fixture
def browser(tmp_path: Path):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,900",
                "--lang=en-US", f"--user-data-dir={tmp_path / 'chrome-profile'}"):
        opts.add_argument(arg)
    if Path("/usr/bin/chromium").exists():
        opts.binary_location = "/usr/bin/chromium"
    drv = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    drv.implicitly_wait(0)
    yield drv
    drv.quit()


@pytest.fixture
def shots(tmp_path: Path):
    folder = tmp_path / "screens"
    folder.mkdir()
    taken: list[Path] = []

    def shot(drv, name: str) -> None:
        path = folder / f"{len(taken) + 1:02d}-{name}.png"
        drv.save_screenshot(str(path))
        taken.append(path)

    yield shot
    extra = os.environ.get("MEMFOLD_TEST_SCREENS")
    if extra:
        Path(extra).mkdir(parents=True, exist_ok=True)
        for p in taken:
            shutil.copy(p, Path(extra) / p.name)
    assert taken and all(p.stat().st_size > 5000 for p in taken)


def wait(drv, cond, timeout: float = 30):
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(drv, timeout).until(cond)


def test_sign_in_search_edit_delete_in_a_browser(mem: Memory, root: Path, browser, shots):
    from selenium.webdriver.common.by import By

    mem.init("alice", "zh")
    tea = mem.add("我喜欢喝乌龙茶，不喜欢咖啡", "alice").added[0]
    mem.add("我每周三晚上去游泳", "alice")
    mem.add("My sister Lena lives in Porto", "alice", agent_id="helper")
    gone = mem.add("周末要给阳台的花浇水", "alice", memory_type="todo").added[0]
    mem.add_note("今天和房东谈了续租的事", "alice")
    s = mem.session("trip", "alice", "helper")
    for text in ("我们下个月去成都旅行", "想吃火锅和看熊猫", "订好了周五的高铁票"):
        s.add_message("user", text)
        s.add_message("assistant", "好的，记下了。")
    s.summarize()
    key, _ = KeyStore(mem.index).create(["alice"], "write", "browser")
    by_id = lambda i: browser.find_element(By.ID, i)  # noqa: E731
    item = lambda mid: browser.find_element(By.CSS_SELECTOR, f'.mem[data-id="{mid}"]')  # noqa: E731

    with LiveServer(create_app(mem)) as srv:
        browser.get(srv.url + "/")
        wait(browser, lambda d: by_id("signin-form").is_displayed())
        shots(browser, "sign-in")

        by_id("key").send_keys("mfk_000000000000_wrong")
        by_id("signin-button").click()
        wait(browser, lambda d: by_id("signin-error").is_displayed())
        assert "refused" in by_id("signin-error").text and not by_id("app").is_displayed()
        shots(browser, "wrong-key")

        by_id("key").clear()
        by_id("key").send_keys(key)
        by_id("signin-button").click()
        wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, ".mem"))
        assert "alice" in by_id("who").text
        groups = [g.text for g in browser.find_elements(By.CSS_SELECTOR, ".group h3")]
        assert any("MEMORY.md" in g for g in groups) and any("Daily notes" in g for g in groups)
        shots(browser, "memories")

        by_id("new-text").send_keys("我的自行车是蓝色的")  # add from the page
        by_id("add-button").click()
        wait(browser, lambda d: "我的自行车是蓝色的" in by_id("memories").text)
        assert "我的自行车是蓝色的" in (root / "alice" / "MEMORY.md").read_text(encoding="utf-8")

        by_id("query").send_keys("乌龙茶")
        by_id("search-button").click()
        wait(browser, lambda d: "Results for" in d.find_element(By.CSS_SELECTOR, ".group h3").text)
        first = browser.find_element(By.CSS_SELECTOR, ".mem")
        assert first.get_attribute("data-id") == tea.id
        shots(browser, "search-chinese")

        item(tea.id).find_element(By.CSS_SELECTOR, "button.edit").click()
        area = item(tea.id).find_element(By.CSS_SELECTOR, "textarea")
        area.clear()
        area.send_keys("我喜欢喝茉莉花茶")
        shots(browser, "editing")
        item(tea.id).find_element(By.CSS_SELECTOR, "button.save").click()
        wait(browser, lambda d: "MEMORY.md" in by_id("status").text)
        on_disk = (root / "alice" / "MEMORY.md").read_text(encoding="utf-8")
        assert "茉莉花茶" in on_disk and "乌龙茶" not in on_disk
        wait(browser, lambda d: "茉莉花茶" in item(tea.id).text)
        item(tea.id).find_element(By.CSS_SELECTOR, "button.hist").click()
        wait(browser, lambda d: "update" in item(tea.id).find_element(By.CSS_SELECTOR, ".history").text)
        shots(browser, "history")

        by_id("clear-search").click()
        wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, f'.mem[data-id="{gone.id}"]'))
        item(gone.id).find_element(By.CSS_SELECTOR, "button.del").click()
        wait(browser, lambda d: by_id("confirm").is_displayed())
        shots(browser, "confirm-delete")
        by_id("confirm-ok").click()
        wait(browser, lambda d: not d.find_elements(By.CSS_SELECTOR, f'.mem[data-id="{gone.id}"]'))
        assert "阳台" not in (root / "alice" / "MEMORY.md").read_text(encoding="utf-8")
        assert not [r for r in mem.get_all("alice") if r.id == gone.id]

        by_id("forget-button").click()  # forget by words: preview, then confirm
        wait(browser, lambda d: by_id("forget-query").is_displayed())
        by_id("forget-query").send_keys("游泳")
        by_id("confirm-ok").click()
        wait(browser, lambda d: d.find_elements(By.ID, "forget-list") and by_id("forget-list").is_displayed())
        assert "我每周三晚上去游泳" in by_id("forget-list").text
        assert "游泳" in (root / "alice" / "MEMORY.md").read_text(encoding="utf-8")  # a preview deletes nothing
        shots(browser, "forget-preview")
        by_id("confirm-ok").click()
        wait(browser, lambda d: "Forgotten: 1" in by_id("status").text)
        assert "游泳" not in (root / "alice" / "MEMORY.md").read_text(encoding="utf-8")

        browser.find_element(By.CSS_SELECTOR, '.tab[data-tab="sessions"]').click()
        wait(browser, lambda d: "trip" in by_id("session-view").text)
        assert "订好了周五的高铁票" in by_id("session-view").text
        shots(browser, "sessions")
        browser.find_element(By.CSS_SELECTOR, '.tab[data-tab="pins"]').click()
        wait(browser, lambda d: "Lena" in by_id("pins").text)
        shots(browser, "pins")
        browser.find_element(By.CSS_SELECTOR, '.tab[data-tab="stats"]').click()
        wait(browser, lambda d: "embedder" in by_id("stats").text)
        shots(browser, "stats")

        by_id("lang").click()  # Chinese text
        browser.find_element(By.CSS_SELECTOR, '.tab[data-tab="memories"]').click()
        wait(browser, lambda d: "每日笔记" in by_id("memories").text)
        assert by_id("signout").text == "退出"
        shots(browser, "chinese")

        browser.set_window_size(390, 844)  # a phone
        wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, ".mem"))
        width = browser.execute_script("return document.documentElement.scrollWidth")
        assert width <= 390, f"the page scrolls sideways on a phone ({width}px)"
        shots(browser, "phone")

        KeyStore(mem.index).revoke(key)  # a revoked key signs the page out at its next request
        browser.find_element(By.CSS_SELECTOR, '.tab[data-tab="stats"]').click()
        wait(browser, lambda d: by_id("signin-error").is_displayed())
        shots(browser, "revoked")

        # the API documentation renders offline: Swagger UI's files come from this server, not a CDN
        browser.set_window_size(1280, 900)
        browser.get(srv.url + "/docs")
        wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, ".swagger-ui .opblock"))
        assert "memfold" in browser.find_element(By.CSS_SELECTOR, ".swagger-ui .info .title").text
        assert "/v1/memories/search" in browser.find_element(By.CSS_SELECTOR, ".swagger-ui").text
        shots(browser, "api-docs")


def test_a_server_without_keys_says_so_and_keeps_the_page_on_reload(mem: Memory, root: Path, browser, shots):
    """`memfold serve --no-auth`: the sign-in card says no key is needed, an empty key signs in, a reload
    keeps the page, and the language switch relabels who is signed in. A server with keys shows no hint."""
    from selenium.webdriver.common.by import By

    mem.init("alice", "en")
    mem.add("My sister Lena lives in Porto", "alice")
    by_id = lambda i: browser.find_element(By.ID, i)  # noqa: E731

    with LiveServer(create_app(mem, no_auth=True)) as srv:
        browser.get(srv.url + "/")
        wait(browser, lambda d: by_id("noauth-hint").is_displayed())
        assert "--no-auth" in by_id("noauth-hint").text
        shots(browser, "no-auth-sign-in")
        by_id("ns").send_keys("alice")
        by_id("signin-button").click()
        wait(browser, lambda d: "Lena" in by_id("memories").text)
        browser.refresh()
        wait(browser, lambda d: by_id("app").is_displayed() and "Lena" in by_id("memories").text)
        assert not by_id("signin").is_displayed() and "alice" in by_id("who").text
        by_id("lang").click()
        wait(browser, lambda d: "已登录" in by_id("who").text)
        shots(browser, "no-auth-reloaded")

    with LiveServer(create_app(mem)) as srv:  # keys checked: no hint, and no key signs nobody in
        browser.get(srv.url + "/")
        browser.execute_script("sessionStorage.clear()")
        browser.refresh()
        wait(browser, lambda d: by_id("signin-form").is_displayed())
        assert not by_id("noauth-hint").is_displayed() and not by_id("app").is_displayed()
