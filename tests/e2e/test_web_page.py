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

        by_id("forget-words").send_keys("游泳")  # forget by words: what would go is shown, then confirmed
        by_id("forget-button").click()
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


def sign_in_without_key(drv, url: str, ns: str) -> None:
    from selenium.webdriver.common.by import By

    drv.get(url + "/")
    wait(drv, lambda d: d.find_element(By.ID, "noauth-hint").is_displayed())
    drv.find_element(By.ID, "ns").send_keys(ns)
    drv.find_element(By.ID, "signin-button").click()
    wait(drv, lambda d: d.find_element(By.ID, "app").is_displayed() and d.find_elements(By.CSS_SELECTOR, ".mem"))


def lines_of(drv, css: str) -> int:
    """How many lines the element's text takes (one rectangle per line of an inline element)."""
    return int(drv.execute_script("return document.querySelector(arguments[0]).getClientRects().length", css))


def test_sign_in_help_keeps_the_command_on_one_line(mem: Memory, browser, shots):
    from selenium.webdriver.common.by import By

    mem.init("alice", "en")
    with LiveServer(create_app(mem)) as srv:
        for width, lang in ((1280, "en"), (390, "en"), (390, "zh"), (1280, "zh")):
            browser.set_window_size(width, 900 if width > 400 else 844)
            browser.get(srv.url + "/")
            browser.execute_script("localStorage.setItem('mf_lang', arguments[0])", lang)
            browser.refresh()
            wait(browser, lambda d: d.find_element(By.ID, "signin-form").is_displayed())
            code = browser.find_element(By.CSS_SELECTOR, "#signin p code")
            assert code.text == "memfold keys create --user NAME"
            assert lines_of(browser, "#signin p code") == 1, f"the command breaks across lines at {width}px ({lang})"
            width_now = browser.execute_script("return document.documentElement.scrollWidth")
            assert width_now <= width, f"the sign-in page scrolls sideways at {width}px ({width_now}px)"
            shots(browser, f"sign-in-{lang}-{width}")


def test_each_message_belongs_to_its_action_and_forget_has_its_own_words(mem: Memory, root: Path, browser, shots):
    from selenium.webdriver.common.by import By

    mem.init("alice", "en")
    mem.add("I swim every Wednesday evening", "alice")
    mem.add("My sister Lena lives in Porto", "alice")
    gone = mem.add("Water the balcony flowers on Saturday", "alice", memory_type="todo").added[0]
    by_id = lambda i: browser.find_element(By.ID, i)  # noqa: E731
    shown = lambda: by_id("status").text if by_id("status").is_displayed() else ""  # noqa: E731
    under = lambda: browser.execute_script(  # noqa: E731
        "return document.getElementById('status').previousElementSibling.id")

    with LiveServer(create_app(mem, no_auth=True)) as srv:
        sign_in_without_key(browser, srv.url, "alice")
        assert shown() == ""

        by_id("new-text").send_keys("password: Tr0ub4dor&3xq9Lk")  # refused: a secret
        by_id("add-button").click()
        wait(browser, lambda d: "refused" in shown())
        assert under() == "add-form" and by_id("status").get_attribute("data-action") == "add"
        shots(browser, "add-refused")
        by_id("new-text").clear()
        by_id("add-button").click()  # an empty add: its own message, the refusal is gone
        wait(browser, lambda d: shown() == "Type what to remember first.")
        assert "refused" not in by_id("app").text
        shots(browser, "add-empty")

        browser.find_element(By.CSS_SELECTOR, f'.mem[data-id="{gone.id}"] button.del').click()
        wait(browser, lambda d: by_id("confirm").is_displayed())
        assert shown() == ""  # starting another action clears the last one's message
        by_id("confirm-ok").click()
        wait(browser, lambda d: shown() == "Deleted.")
        by_id("forget-button").click()  # an empty forget says so; "Deleted." is not left standing
        wait(browser, lambda d: shown() == "Type words of the memories to forget first.")
        assert under() == "forget-form" and not by_id("confirm").is_displayed()

        by_id("query").send_keys("Lena")  # words in the search box are not what forget uses
        by_id("forget-words").send_keys("swim")
        by_id("forget-button").click()
        wait(browser, lambda d: by_id("confirm").is_displayed() and d.find_elements(By.ID, "forget-list"))
        assert by_id("confirm-title").text == "Forget 1 memory matching “swim”?"
        assert by_id("forget-list").text == "I swim every Wednesday evening" and "Lena" not in by_id("confirm").text
        assert "swim" in (root / "alice" / "MEMORY.md").read_text(encoding="utf-8")  # the preview deleted nothing
        shots(browser, "forget-preview-en")
        by_id("confirm-cancel").click()
        wait(browser, lambda d: shown() == "Nothing was forgotten.")
        assert "swim" in (root / "alice" / "MEMORY.md").read_text(encoding="utf-8")
        by_id("forget-button").click()
        wait(browser, lambda d: by_id("confirm").is_displayed() and d.find_elements(By.ID, "forget-list"))
        by_id("confirm-ok").click()
        wait(browser, lambda d: shown() == "Forgotten: 1")
        assert "swim" not in (root / "alice" / "MEMORY.md").read_text(encoding="utf-8")
        assert by_id("forget-words").get_attribute("value") == ""
        by_id("forget-words").send_keys("zebra saxophone")
        by_id("forget-button").click()
        wait(browser, lambda d: shown() == "Nothing matches “zebra saxophone”: nothing was forgotten.")
        by_id("search-button").click()  # a search clears it
        wait(browser, lambda d: shown() == "" and "Results for" in by_id("memories").text)

        by_id("lang").click()
        by_id("forget-words").clear()
        by_id("forget-words").send_keys("Lena")
        by_id("forget-button").click()
        wait(browser, lambda d: by_id("confirm").is_displayed() and d.find_elements(By.ID, "forget-list"))
        assert by_id("confirm-title").text == "遗忘匹配“Lena”的 1 条记忆？" and by_id("confirm-ok").text == "遗忘"
        shots(browser, "forget-preview-zh")
        browser.set_window_size(390, 844)
        shots(browser, "forget-preview-zh-phone")
        by_id("confirm-cancel").click()
        wait(browser, lambda d: shown() == "什么也没有遗忘。")
        width = browser.execute_script("return document.documentElement.scrollWidth")
        assert width <= 390, f"the page scrolls sideways on a phone ({width}px)"
        shots(browser, "memories-zh-phone")


def stats_rows(drv) -> dict[str, str]:
    from selenium.webdriver.common.by import By

    terms = drv.find_elements(By.CSS_SELECTOR, "#stats dt")
    values = drv.find_elements(By.CSS_SELECTOR, "#stats dd")
    return {a.text: b.text for a, b in zip(terms, values)}


def test_stats_read_as_sentences_in_the_pages_language(root: Path, embedder, llm_server, browser, shots):
    import json

    from selenium.webdriver.common.by import By

    from memfold.config import load_settings

    from ..support.openai_server import Reply

    plain = Memory(root=root, embedder=embedder)
    plain.init("alice", "en")
    for text in ("I like oolong tea", "My sister Lena lives in Porto", "I swim every Wednesday evening"):
        plain.add(text, "alice")
    plain.add("Buy a present for Anna", "alice", memory_type="todo", importance=0.83)
    by_id = lambda i: browser.find_element(By.ID, i)  # noqa: E731

    with LiveServer(create_app(plain, no_auth=True)) as srv:  # no LLM configured: no LLM line at all
        sign_in_without_key(browser, srv.url, "alice")
        browser.find_element(By.CSS_SELECTOR, '.tab[data-tab="stats"]').click()
        wait(browser, lambda d: d.find_elements(By.ID, "stats-list"))
        rows = stats_rows(browser)
        text = by_id("stats").text
        for raw in ("avg_importance", "llm_usage", "by_operation", "memory_md_chars", "operations:", "—"):
            assert raw not in text, f"{raw!r} shown on the stats tab"
        assert "LLM" not in rows
        assert rows["Memories"].startswith("4 active · 0 archived")
        assert rows["Average importance"] == f"{plain.stats('alice')['avg_importance']:.2f}"
        assert "preference" in rows["By type"] and "todo 1" in rows["By type"]
        assert rows["MEMORY.md"].endswith("characters · 0 backups") or "backups" in rows["MEMORY.md"]
        shots(browser, "stats-en")
        by_id("lang").click()
        wait(browser, lambda d: "平均重要性" in by_id("stats").text)
        rows = stats_rows(browser)
        assert rows["记忆"].startswith("4 条有效") and "待办 1" in rows["按类型"] and "LLM" not in by_id("stats").text
        shots(browser, "stats-zh")
        browser.set_window_size(390, 844)
        wait(browser, lambda d: d.find_elements(By.ID, "stats-list"))
        assert browser.execute_script("return document.documentElement.scrollWidth") <= 390
        shots(browser, "stats-zh-phone")
        browser.set_window_size(1280, 900)
    plain.close()

    llm = dict(provider="openai", base_url=llm_server.base_url, model="scripted-model", max_retries=0)
    smart = Memory(settings=load_settings(root, llm=llm), embedder=embedder)
    extracted = json.dumps({"memories": [{"memory_type": "fact", "content": "The user owns a red bicycle",
                                          "structured_data": {}, "importance_score": 0.6}]})
    llm_server.script(Reply(extracted, usage={"prompt_tokens": 1200, "completion_tokens": 34, "total_tokens": 1234}))
    smart.add([{"role": "user", "content": "I ride my red bicycle to work."}], "alice")
    with LiveServer(create_app(smart, no_auth=True)) as srv:  # an LLM: its use in words and rounded numbers
        sign_in_without_key(browser, srv.url, "alice")
        browser.find_element(By.CSS_SELECTOR, '.tab[data-tab="stats"]').click()
        wait(browser, lambda d: d.find_elements(By.ID, "stats-list"))
        llm_row = stats_rows(browser)["LLM"]
        assert llm_row.startswith("1 call, 0 failed, 1,234 tokens"), llm_row
        assert "model scripted-model" in llm_row and "1,200 prompt, 34 completion" in llm_row
        assert stats_rows(browser)["Memories"].endswith("1 of them a conversation turn")
        assert "adding memories: 1 call, 1,234 tokens" in llm_row
        shots(browser, "stats-llm-en")
        by_id("lang").click()
        wait(browser, lambda d: "大模型" in by_id("stats").text)
        assert stats_rows(browser)["大模型"].startswith("调用 1 次，失败 0 次，共 1,234 个 token")
        shots(browser, "stats-llm-zh")
        browser.set_window_size(390, 844)
        shots(browser, "stats-llm-zh-phone")
    smart.close()


def test_a_hit_shows_its_related_memories_and_stats_show_usage(mem: Memory, browser, shots):
    """A search hit lists its related memories (relation, direction, strength) in the page's
    language; the stats tab lists the most used memories and the queries that found nothing."""
    from selenium.webdriver.common.by import By

    mem.init("alice", "en")
    home = mem.add("I live in Lisbon", "alice").added[0]
    office = mem.add("My office is by the Tagus river", "alice").added[0]
    old = mem.add("I used to live in Porto", "alice").added[0]
    mem.relate(office.id, home.id, "supports", "alice", strength=0.8)
    mem.relate(home.id, old.id, "refines", "alice", strength=0.6)
    by_id = lambda i: browser.find_element(By.ID, i)  # noqa: E731

    with LiveServer(create_app(mem, no_auth=True)) as srv:
        sign_in_without_key(browser, srv.url, "alice")
        by_id("query").send_keys("where do I live")
        by_id("search-button").click()
        wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, f'.mem[data-id="{home.id}"] .related li'))
        rel = browser.find_element(By.CSS_SELECTOR, f'.mem[data-id="{home.id}"] .related')
        lines = [li.text for li in rel.find_elements(By.CSS_SELECTOR, "li")]
        assert lines[0].startswith("supported by ←") and "Tagus" in lines[0] and "(0.80)" in lines[0], lines
        assert lines[1].startswith("refines →") and "Porto" in lines[1], lines
        shots(browser, "related-en")
        by_id("query").clear()
        by_id("query").send_keys("quantum chromodynamics")
        by_id("search-button").click()
        wait(browser, lambda d: "No memories found" in by_id("memories").text)
        browser.find_element(By.CSS_SELECTOR, '.tab[data-tab="stats"]').click()
        wait(browser, lambda d: "Most used memories" in by_id("stats").text)
        rows = stats_rows(browser)
        assert "I live in Lisbon" in rows["Most used memories"]
        assert "quantum chromodynamics" in rows["Queries that found nothing"]
        shots(browser, "usage-en")
        by_id("lang").click()
        wait(browser, lambda d: "最常用的记忆" in by_id("stats").text)
        assert "quantum chromodynamics" in stats_rows(browser)["没有找到结果的查询"]
        shots(browser, "usage-zh")
        browser.find_element(By.CSS_SELECTOR, '.tab[data-tab="memories"]').click()
        by_id("query").clear()
        by_id("query").send_keys("Lisbon")
        by_id("search-button").click()
        wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, f'.mem[data-id="{home.id}"] .related li'))
        text = browser.find_element(By.CSS_SELECTOR, f'.mem[data-id="{home.id}"] .related-box').text
        assert "相关记忆" in text and "被支持 ←" in text and "细化 →" in text, text
        shots(browser, "related-zh")
