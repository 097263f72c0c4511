// memfold web page: plain JavaScript over the /v1 HTTP API (no build step).
"use strict";

const T = {
  en: {
    signout: "Sign out", signin_title: "Sign in", signin: "Sign in", key: "API key", namespace: "Namespace (optional)",
    signin_help: "Paste an API key made with <code>memfold keys create --user NAME</code>.",
    tab_memories: "Memories", tab_sessions: "Sessions", tab_pins: "Pins", tab_stats: "Stats",
    search_placeholder: "Search memories (中文 or English)", all_types: "All types", search: "Search", show_all: "Show all",
    add_placeholder: "Remember something new…", add: "Add", forget_words: "Forget…",
    forget_placeholder: "Words of the memories to forget…", add_empty: "Type what to remember first.",
    forget_empty: "Type words of the memories to forget first.", forget_nothing: "Nothing matches “{q}”: nothing was forgotten.",
    forget_title: "Forget {n} memories matching “{q}”?", forget_title_one: "Forget 1 memory matching “{q}”?",
    forget_help: "They are removed from the memory files, their history text and backups.", forget_kept: "Nothing was forgotten.",
    more: "… and {n} more",
    cancel: "Cancel", confirm: "Confirm", edit: "Edit", save: "Save", history: "History", delete: "Delete",
    results_for: "Results for", no_results: "No memories found.", empty: "No memories yet.",
    g_memory: "MEMORY.md", g_learnings: "Learnings", g_notes: "Daily notes", g_turns: "Conversation turns",
    delete_q: "Delete this memory?", delete_help: "It is removed from MEMORY.md, its history text and backups.",
    deleted: "Deleted.", saved: "Saved: MEMORY.md updated.", added: "Added.", unchanged: "Nothing changed.",
    forgotten: "Forgotten", importance: "importance", score: "score",
    no_sessions: "No sessions yet.", summary: "Summary", recent: "Recent messages", no_summary: "No summary yet.",
    no_pins: "No agent has pinned memories yet.", signed_in_as: "signed in", loading: "Loading…",
    bad_key: "This key was refused: ",
    no_auth_hint: "This server checks no key (<code>--no-auth</code>): leave the key empty, name a namespace and sign in.",
    st_namespace: "Namespace", st_memories: "Memories", st_active: "{n} active", st_turns: "{n} of them conversation turns", st_turns_one: "1 of them a conversation turn",
    st_archived: "{n} archived", st_by_type: "By type", st_none: "none", st_importance: "Average importance",
    st_memory_md: "MEMORY.md", st_chars: "{n} characters", st_backups: "{n} backups", st_files: "Memory files",
    st_search: "Search", st_embedder: "embedder {x}", st_index: "index {x}", st_llm: "LLM", st_model: "model {x}",
    st_llm_use: "{calls} calls, {failures} failed, {tokens} tokens", st_llm_use_one: "1 call, {failures} failed, {tokens} tokens", st_llm_split: "{p} prompt, {c} completion",
    st_llm_none: "no calls yet", st_llm_last: "last call {x}",
    st_llm_op: "{op}: {calls} calls, {tokens} tokens", st_llm_op_one: "{op}: 1 call, {tokens} tokens",
    ops: { add: "adding memories", maintain: "maintenance", evolve: "policy evolution", summarize: "summaries", session: "sessions" },
    related: "Related", archived: "archived",
    rel: { supports: "supports", contradicts: "contradicts", refines: "refines", duplicates: "duplicates", summarizes: "summarizes" },
    rel_from: { supports: "supported by", contradicts: "contradicted by", refines: "refined by", duplicates: "duplicated by", summarizes: "summarized by" },
    st_searches: "Searches recorded", st_most_used: "Most used memories", st_no_results: "Queries that found nothing",
    st_times: "{n}×", st_last: "last {x}",
    types: {},
  },
  zh: {
    signout: "退出", signin_title: "登录", signin: "登录", key: "API 密钥", namespace: "命名空间（可选）",
    signin_help: "粘贴用 <code>memfold keys create --user NAME</code> 创建的 API 密钥。",
    tab_memories: "记忆", tab_sessions: "会话", tab_pins: "置顶", tab_stats: "统计",
    search_placeholder: "搜索记忆（中文或英文）", all_types: "全部类型", search: "搜索", show_all: "显示全部",
    add_placeholder: "记住新的内容…", add: "添加", forget_words: "遗忘…",
    forget_placeholder: "要遗忘的记忆中的词语…", add_empty: "请先输入要记住的内容。",
    forget_empty: "请先输入要遗忘的记忆中的词语。", forget_nothing: "没有匹配“{q}”的记忆，什么也没有遗忘。",
    forget_title: "遗忘匹配“{q}”的 {n} 条记忆？", forget_title_one: "遗忘匹配“{q}”的 1 条记忆？",
    forget_help: "它们会从记忆文件、历史文本和备份中移除。", forget_kept: "什么也没有遗忘。",
    more: "……另有 {n} 条",
    cancel: "取消", confirm: "确认", edit: "编辑", save: "保存", history: "历史", delete: "删除",
    results_for: "搜索结果：", no_results: "没有找到记忆。", empty: "还没有记忆。",
    g_memory: "MEMORY.md", g_learnings: "经验教训", g_notes: "每日笔记", g_turns: "对话原文",
    delete_q: "删除这条记忆？", delete_help: "它会从 MEMORY.md、历史文本和备份中移除。",
    deleted: "已删除。", saved: "已保存：MEMORY.md 已更新。", added: "已添加。", unchanged: "没有变化。",
    forgotten: "已遗忘", importance: "重要性", score: "得分",
    no_sessions: "还没有会话。", summary: "摘要", recent: "最近的消息", no_summary: "还没有摘要。",
    no_pins: "还没有代理置顶的记忆。", signed_in_as: "已登录", loading: "加载中…",
    bad_key: "密钥被拒绝：",
    no_auth_hint: "此服务器不检查密钥（<code>--no-auth</code>）：密钥留空，填写命名空间后登录。",
    st_namespace: "命名空间", st_memories: "记忆", st_active: "{n} 条有效", st_turns: "其中 {n} 条是对话原文", st_turns_one: "其中 1 条是对话原文",
    st_archived: "{n} 条已归档", st_by_type: "按类型", st_none: "无", st_importance: "平均重要性",
    st_memory_md: "MEMORY.md", st_chars: "{n} 个字符", st_backups: "{n} 个备份", st_files: "记忆文件",
    st_search: "检索", st_embedder: "向量模型 {x}", st_index: "索引 {x}", st_llm: "大模型", st_model: "模型 {x}",
    st_llm_use: "调用 {calls} 次，失败 {failures} 次，共 {tokens} 个 token", st_llm_use_one: "调用 1 次，失败 {failures} 次，共 {tokens} 个 token", st_llm_split: "提示 {p}，生成 {c}",
    st_llm_none: "还没有调用", st_llm_last: "最近一次调用 {x}",
    st_llm_op: "{op}：调用 {calls} 次，{tokens} 个 token", st_llm_op_one: "{op}：调用 1 次，{tokens} 个 token",
    ops: { add: "添加记忆", maintain: "维护", evolve: "策略演化", summarize: "摘要", session: "会话" },
    related: "相关记忆", archived: "已归档",
    rel: { supports: "支持", contradicts: "推翻", refines: "细化", duplicates: "重复", summarizes: "概括" },
    rel_from: { supports: "被支持", contradicts: "被推翻", refines: "被细化", duplicates: "被重复", summarizes: "被概括" },
    st_searches: "已记录的检索", st_most_used: "最常用的记忆", st_no_results: "没有找到结果的查询",
    st_times: "{n} 次", st_last: "最近 {x}",
    types: { preference: "偏好", fact: "事实", event: "事件", todo: "待办", pattern: "模式", skill: "技能", note: "笔记", turn: "对话" },
  },
};

const $ = (sel) => document.querySelector(sel);
const S = { key: sessionStorage.getItem("mf_key") || "", ns: sessionStorage.getItem("mf_ns") || "",
            lang: localStorage.getItem("mf_lang") || ((navigator.language || "en").startsWith("zh") ? "zh" : "en"),
            query: "" };
const t = (k, vars) => {
  let s = (T[S.lang] && T[S.lang][k]) || T.en[k] || k;
  for (const [name, v] of Object.entries(vars || {})) s = s.split("{" + name + "}").join(String(v));
  return s;
};
const num = (n) => new Intl.NumberFormat(S.lang === "zh" ? "zh-CN" : "en-US").format(Number(n) || 0);
const typeName = (x) => T[S.lang].types[x] || x;
// what a result is: "turn" for a conversation turn, else its memory type (the API sends it as "kind")
const kindOf = (r) => r.kind || (r.file === "" ? "turn" : r.memory_type);

function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else if (v !== undefined && v !== null) e.setAttribute(k, v);
  }
  for (const kid of kids) if (kid !== null && kid !== undefined) e.append(kid);
  return e;
}

function applyLang() {
  document.documentElement.lang = S.lang === "zh" ? "zh-CN" : "en";
  document.querySelectorAll("[data-i18n]").forEach((n) => { n.innerHTML = t(n.dataset.i18n); });
  document.querySelectorAll("[data-i18n-placeholder]").forEach((n) => { n.placeholder = t(n.dataset.i18nPlaceholder); });
  $("#lang").textContent = S.lang === "zh" ? "English" : "中文";
  if (S.scope && S.ns) $("#who").textContent = `${t("signed_in_as")}: ${S.ns} · ${S.scope}`;
  document.querySelectorAll("#type-filter option[value]").forEach((o) => { if (o.value) o.textContent = typeName(o.value); });
}

class ApiError extends Error {
  constructor(status, body) {
    const e = (body && body.error) || {};
    super(e.message || `HTTP ${status}`);
    this.status = status; this.code = e.code; this.field = e.field;
  }
}

async function api(method, path, body, key) {
  const url = new URL(path, location.origin);
  if (S.ns && !url.searchParams.has("user_id")) url.searchParams.set("user_id", S.ns);
  const opts = { method, headers: { Authorization: "Bearer " + (key || S.key) } };
  if (body !== undefined) { opts.headers["Content-Type"] = "application/json"; opts.body = JSON.stringify(body); }
  const res = await fetch(url, opts);
  const data = await res.json().catch(() => null);
  if (!res.ok) {
    if (res.status === 401 && !key) { signOut(t("bad_key") + ((data && data.error && data.error.message) || "")); }
    throw new ApiError(res.status, data);
  }
  return data;
}

// Every list the API answers is {results, next}: follow next (as ?cursor=) up to `most` rows.
async function listAll(path, params, most) {
  const q = new URLSearchParams(params || {});
  let rows = [];
  for (;;) {
    const page = await api("GET", path + "?" + q);
    rows = rows.concat(page.results);
    if (!page.next || rows.length >= most) return rows.slice(0, most);
    q.set("cursor", page.next);
  }
}

// The status line says how the last action went, under that action's row; the next action clears it.
const STATUS_PLACE = { search: "#search-form", add: "#add-form", forget: "#forget-form" };
function begin(action) {
  const s = $("#status");
  s.textContent = ""; s.className = "status"; s.dataset.action = action || "";
  const place = $(STATUS_PLACE[action] || "#forget-form");
  if (place && s.previousElementSibling !== place) place.after(s);
}
function status(text, kind) {
  const s = $("#status");
  s.textContent = text; s.className = "status " + (kind || "");
}

// ---- sign in -----------------------------------------------------------------------------
async function signIn(ev) {
  ev.preventDefault();
  const key = $("#key").value.trim();
  const err = $("#signin-error");
  err.hidden = true;
  try {
    const who = await api("GET", "/v1/whoami", undefined, key);
    const ns = $("#ns").value.trim() || (who.namespaces[0] === "*" ? "default" : who.namespaces[0]);
    S.key = key; S.ns = ns;
    sessionStorage.setItem("mf_key", key); sessionStorage.setItem("mf_ns", ns);
    showApp(who);
  } catch (e) {
    err.textContent = t("bad_key") + e.message; err.hidden = false;
  }
}

function signOut(message) {
  S.key = ""; S.ns = "";
  sessionStorage.removeItem("mf_key"); sessionStorage.removeItem("mf_ns");
  $("#app").hidden = true; $("#signin").hidden = false; $("#signout").hidden = true; $("#who").textContent = "";
  $("#key").value = "";
  if (message) { $("#signin-error").textContent = message; $("#signin-error").hidden = false; }
}

function showApp(who) {
  $("#signin").hidden = true; $("#app").hidden = false; $("#signout").hidden = false;
  S.scope = who.scope;
  $("#who").textContent = `${t("signed_in_as")}: ${S.ns} · ${who.scope}`;
  showTab("memories");
}

// ---- memories ------------------------------------------------------------------------------
const TYPE_ORDER = ["preference", "fact", "event", "todo", "pattern", "skill", "note"];

function groupOf(r) {
  if (r.file === "MEMORY.md") return t("g_memory") + " · " + typeName(r.memory_type);
  if (r.file === "learnings.md") return t("g_learnings");
  if (r.file.startsWith("memory/")) return t("g_notes");
  if (r.file === "") return t("g_turns");
  return r.file;
}

function memItem(r, score) {
  const text = el("div", { class: "text" }, r.content);
  const meta = el("div", { class: "meta" },
    el("span", { class: "badge " + kindOf(r) }, typeName(kindOf(r))),
    el("span", {}, `${t("importance")} ${r.importance.toFixed(2)}`),
    el("span", {}, r.updated_at.slice(0, 10)),
    score !== undefined ? el("span", {}, `${t("score")} ${score.toFixed(3)}`) : null,
    el("span", { class: "id" }, r.id));
  const item = el("div", { class: "mem", "data-id": r.id }, text, meta);
  if (r.related && r.related.length) item.append(relatedList(r.related));
  const actions = el("span", { class: "actions" },
    el("button", { class: "small edit", type: "button", onclick: () => editMemory(item, r) }, t("edit")),
    el("button", { class: "small hist", type: "button", onclick: () => toggleHistory(item, r) }, t("history")),
    el("button", { class: "small danger-outline del", type: "button", onclick: () => deleteMemory(r) }, t("delete")));
  meta.append(actions);
  return item;
}

// a hit's related memories: "supports → words" (the hit is the source) or "supported by ← words"
function relatedList(rel) {
  const ul = el("ul", { class: "related" });
  for (const x of rel) {
    const name = x.direction === "to" ? (T[S.lang].rel || {})[x.relation] : (T[S.lang].rel_from || {})[x.relation];
    ul.append(el("li", { "data-id": x.id },
      el("span", { class: "rel " + x.relation }, `${name || x.relation} ${x.direction === "to" ? "→" : "←"}`), " ",
      x.content, " ", el("span", { class: "muted" }, `(${x.strength.toFixed(2)}${x.is_active ? "" : " · " + t("archived")})`)));
  }
  return el("div", { class: "related-box" }, el("div", { class: "muted" }, t("related")), ul);
}

async function loadMemories() {
  const box = $("#memories");
  box.textContent = t("loading");
  const type = $("#type-filter").value;
  try {
    let rows, heading;
    if (S.query) {
      const hits = (await api("POST", "/v1/memories/search", { query: S.query, memory_type: type || null, limit: 30, related: true })).results;
      rows = hits.map((h) => [h, h.score]);
      heading = `${t("results_for")} “${S.query}”`;
    } else {
      const q = { include_episodic: "false", limit: "500" };
      if (type) q.memory_type = type;
      rows = (await listAll("/v1/memories", q, 2000)).map((r) => [r, undefined]);
    }
    box.textContent = "";
    if (!rows.length) { box.append(el("p", { class: "muted" }, S.query ? t("no_results") : t("empty"))); return; }
    const groups = new Map();
    if (heading) groups.set(heading, rows);
    else {
      const order = (r) => r.file === "MEMORY.md" ? TYPE_ORDER.indexOf(r.memory_type)
        : r.file === "learnings.md" ? 20 : r.file.startsWith("memory/") ? 30 : 40;
      const sorted = rows.slice().sort((a, b) => order(a[0]) - order(b[0]));  // stable: newest first within a group
      for (const row of sorted) { const g = groupOf(row[0]); if (!groups.has(g)) groups.set(g, []); groups.get(g).push(row); }
    }
    for (const [name, items] of groups) {
      const g = el("div", { class: "group" }, el("h3", {}, name, el("span", { class: "count" }, `(${items.length})`)));
      for (const [r, score] of items) g.append(memItem(r, score));
      box.append(g);
    }
  } catch (e) { box.textContent = ""; status(e.message, "bad"); }
}

function editMemory(item, r) {
  const text = item.querySelector(".text");
  if (item.querySelector("textarea")) return;
  const area = el("textarea", { class: "edit-text" });
  area.value = r.content;
  const save = el("button", { class: "small primary save", type: "button" }, t("save"));
  const cancel = el("button", { class: "small cancel", type: "button" }, t("cancel"));
  const form = el("div", { class: "editing" }, area, el("div", { class: "row end" }, cancel, save));
  text.replaceWith(form);
  area.focus();
  cancel.onclick = () => form.replaceWith(text);
  save.onclick = async () => {
    begin("edit");
    try {
      const updated = await api("PATCH", `/v1/memories/${encodeURIComponent(r.id)}`, { content: area.value });
      status(updated.content === r.content ? t("unchanged") : t("saved"), "ok");
      await loadMemories();
    } catch (e) { status(e.message, "bad"); }
  };
}

async function toggleHistory(item, r) {
  begin("history");
  const old = item.querySelector(".history");
  if (old) { old.remove(); return; }
  try {
    const entries = await listAll(`/v1/memories/${encodeURIComponent(r.id)}/history`, { limit: "1000" }, 1000);
    const ul = el("ul", { class: "history" });
    for (const e of entries) {
      const change = e.old_content && e.new_content ? `${e.old_content} → ${e.new_content}` : (e.new_content || e.old_content || "");
      ul.append(el("li", {}, `${e.at.replace("T", " ").slice(0, 19)} · ${e.action} · ${change}`));
    }
    item.append(ul);
  } catch (e) { status(e.message, "bad"); }
}

function ask(title, body, okText) {
  const d = $("#confirm");
  $("#confirm-title").textContent = title;
  const b = $("#confirm-body"); b.textContent = "";
  if (body) b.append(body);
  $("#confirm-ok").textContent = okText || t("confirm");
  $("#confirm-cancel").textContent = t("cancel");
  return new Promise((resolve) => {
    d.addEventListener("close", () => resolve(d.returnValue === "ok"), { once: true });
    d.returnValue = "";
    d.showModal();
  });
}

async function deleteMemory(r) {
  begin("delete");
  const ok = await ask(t("delete_q"), el("div", {}, el("p", {}, r.content), el("p", { class: "muted" }, t("delete_help"))), t("delete"));
  if (!ok) return;
  try {
    await api("DELETE", `/v1/memories/${encodeURIComponent(r.id)}`);
    status(t("deleted"), "ok");
    await loadMemories();
  } catch (e) { status(e.message, "bad"); }
}

async function forgetByWords(ev) {
  ev.preventDefault();
  begin("forget");
  const words = $("#forget-words").value.trim();
  if (!words) { status(t("forget_empty"), "bad"); return; }
  try {
    const preview = await api("POST", "/v1/memories/forget", { query: words, dry_run: true });  // nothing deleted yet
    const n = preview.results.length;
    if (!n) { status(t("forget_nothing", { q: words }), "bad"); return; }
    const ul = el("ul", { id: "forget-list" });
    for (const r of preview.results.slice(0, 30)) ul.append(el("li", {}, r.content));
    if (n > 30) ul.append(el("li", { class: "more" }, t("more", { n: n - 30 })));
    const body = el("div", {}, ul, el("p", { class: "muted" }, t("forget_help")));
    if (!(await ask(t(n === 1 ? "forget_title_one" : "forget_title", { n, q: words }), body, t("forget_words").replace(/…$/, "")))) {
      status(t("forget_kept"));
      return;
    }
    const done = await api("POST", "/v1/memories/forget", { query: words, dry_run: false });
    $("#forget-words").value = "";
    status(`${t("forgotten")}: ${done.results.length}`, "ok");
    await loadMemories();
  } catch (e) { status(e.message, "bad"); }
}

async function addMemory(ev) {
  ev.preventDefault();
  begin("add");
  const text = $("#new-text").value.trim();
  if (!text) { status(t("add_empty"), "bad"); return; }
  try {
    await api("POST", "/v1/memories", { text });
    $("#new-text").value = "";
    status(t("added"), "ok");
    await loadMemories();
  } catch (e) { status(e.message, "bad"); }
}

// ---- sessions, pins, stats ---------------------------------------------------------------
async function loadSessions() {
  const list = $("#session-list"), view = $("#session-view");
  list.textContent = ""; view.textContent = "";
  try {
    const sessions = await listAll("/v1/sessions", { limit: "1000" }, 1000);
    if (!sessions.length) { view.append(el("p", { class: "muted" }, t("no_sessions"))); return; }
    for (const id of sessions) {
      const b = el("button", { type: "button", "data-session": id }, id);
      b.onclick = () => showSession(id, b);
      list.append(el("li", {}, b));
    }
    showSession(sessions[0], list.querySelector("button"));
  } catch (e) { view.textContent = e.message; }
}

async function showSession(id, button) {
  document.querySelectorAll("#session-list button").forEach((b) => b.classList.toggle("active", b === button));
  const view = $("#session-view");
  const s = await api("GET", `/v1/sessions/${encodeURIComponent(id)}`);
  view.textContent = "";
  const i = s.info;
  view.append(el("h3", {}, `${id} · ${i.agent_id}`),
    el("p", { class: "muted" }, `${i.total_messages} messages · ${i.folds} folds · ${i.tokens}/${i.context_window} tokens · ${i.updated_at.slice(0, 19).replace("T", " ")}`),
    el("h3", {}, t("summary")), el("div", { class: "summary" }, s.summary || t("no_summary")),
    el("h3", {}, t("recent")));
  for (const m of s.messages) view.append(el("div", { class: "msg" }, el("div", { class: "role" }, m.role), m.content));
}

async function loadPins() {
  const box = $("#pins"); box.textContent = "";
  const agents = await listAll("/v1/pins", { limit: "1000" }, 1000);
  if (!agents.length) { box.append(el("p", { class: "muted" }, t("no_pins"))); return; }
  for (const a of agents) {
    const ul = el("ul", {});
    for (const m of a.recent_memories) ul.append(el("li", {}, m));
    box.append(el("div", { class: "card group" }, el("h3", {}, a.agent_id, el("span", { class: "count" }, `(${a.recent_memories.length})`)), ul));
  }
}

function stat(dl, label, value, ...sub) {
  dl.append(el("dt", {}, label), el("dd", {}, value, ...sub.filter(Boolean).map((x) => el("span", { class: "sub" }, x))));
}

async function loadStats() {
  const box = $("#stats"); box.textContent = "";
  const s = await api("GET", "/v1/stats");
  const dl = el("dl", { class: "stats-grid", id: "stats-list" });
  stat(dl, t("st_namespace"), s.user_id);
  stat(dl, t("st_memories"), `${t("st_active", { n: num(s.active) })} · ${t("st_archived", { n: num(s.archived) })}`,
    s.episodic ? t(s.episodic === 1 ? "st_turns_one" : "st_turns", { n: num(s.episodic) }) : null);
  const types = Object.entries(s.by_type || {}).sort((a, b) => TYPE_ORDER.indexOf(a[0]) - TYPE_ORDER.indexOf(b[0]));
  const byType = el("span", {});  // "preference 3 · fact 4": a type and its count stay on one line
  types.forEach(([k, n], i) => byType.append(i ? " · " : "", el("span", { class: "nowrap" }, `${typeName(k)} ${num(n)}`)));
  stat(dl, t("st_by_type"), types.length ? byType : t("st_none"));
  stat(dl, t("st_importance"), typeof s.avg_importance === "number" ? s.avg_importance.toFixed(2) : "—");
  stat(dl, t("st_memory_md"), `${t("st_chars", { n: num(s.memory_md_chars) })} · ${t("st_backups", { n: num(s.backups) })}`);
  stat(dl, t("st_files"), num((s.files || []).length), (s.files || []).slice(0, 8).join(", ") + ((s.files || []).length > 8 ? " …" : ""));
  stat(dl, t("st_search"), `${t("st_embedder", { x: s.embedder })} · ${t("st_index", { x: s.index })}`);
  const llm = s.llm || {};
  const u = s.llm_usage || {};
  if (llm.configured) {  // usage means something only with an LLM: without one, nothing is shown
    const ops = Object.entries(u.by_operation || {}).map(([op, v]) =>
      t(v.calls === 1 ? "st_llm_op_one" : "st_llm_op", { op: (T[S.lang].ops || {})[op] || op, calls: num(v.calls), tokens: num(v.total_tokens) }));
    stat(dl, t("st_llm"), u.calls ? t(u.calls === 1 ? "st_llm_use_one" : "st_llm_use", { calls: num(u.calls), failures: num(u.failures), tokens: num(u.total_tokens) }) : t("st_llm_none"),
      llm.model ? t("st_model", { x: llm.model }) : null,
      u.calls ? t("st_llm_split", { p: num(u.prompt_tokens), c: num(u.completion_tokens) }) : null,
      ...ops, u.last && u.last.at ? t("st_llm_last", { x: String(u.last.at).replace("T", " ").slice(0, 16) + " UTC" }) : null);
  }
  const use = s.usage || {};
  stat(dl, t("st_searches"), num(use.searches || 0));
  const listOf = (items, line) => { const ul = el("ul", { class: "usage" }); for (const x of items) ul.append(el("li", {}, ...line(x))); return ul; };
  if ((use.most_used || []).length)
    stat(dl, t("st_most_used"), listOf(use.most_used, (x) => [el("span", { class: "count" }, t("st_times", { n: num(x.count) })), " ", x.content]));
  if ((use.no_results || []).length)
    stat(dl, t("st_no_results"), listOf(use.no_results, (x) => [el("span", { class: "count" }, t("st_times", { n: num(x.count) })), " ", x.query, " ",
      el("span", { class: "muted" }, t("st_last", { x: String(x.last).slice(0, 10) }))]));
  box.append(dl);
}

function showTab(name) {
  begin("");
  document.querySelectorAll(".tab").forEach((b) => b.classList.toggle("active", b.dataset.tab === name));
  document.querySelectorAll(".panel").forEach((p) => { p.hidden = p.id !== "tab-" + name; });
  const load = { memories: loadMemories, sessions: loadSessions, pins: loadPins, stats: loadStats }[name];
  Promise.resolve(load()).catch((e) => status(e.message, "bad"));
}

// ---- wiring --------------------------------------------------------------------------------
$("#signin-form").addEventListener("submit", signIn);
$("#signout").addEventListener("click", () => signOut());
$("#lang").addEventListener("click", () => {
  S.lang = S.lang === "zh" ? "en" : "zh"; localStorage.setItem("mf_lang", S.lang); applyLang();
  if (!$("#app").hidden) showTab(document.querySelector(".tab.active").dataset.tab);
});
document.querySelectorAll(".tab").forEach((b) => b.addEventListener("click", () => showTab(b.dataset.tab)));
$("#search-form").addEventListener("submit", (ev) => { ev.preventDefault(); begin("search"); S.query = $("#query").value.trim(); loadMemories(); });
$("#clear-search").addEventListener("click", () => { begin("search"); S.query = ""; $("#query").value = ""; loadMemories(); });
$("#type-filter").addEventListener("change", () => { begin("search"); loadMemories(); });
$("#add-form").addEventListener("submit", addMemory);
$("#forget-form").addEventListener("submit", forgetByWords);
applyLang();
if (S.key) {
  api("GET", "/v1/whoami").then(showApp).catch(() => {});
} else {  // a server started with --no-auth answers without a key: say so, and keep a signed-in page on reload
  fetch(new URL("/v1/whoami", location.origin)).then((r) => (r.ok ? r.json() : null)).then((who) => {
    if (!who || who.key_id !== "no-auth") return;
    $("#noauth-hint").hidden = false;
    if (S.ns) showApp(who);
  }).catch(() => {});
}
