"""The secrets corpus: texts in English and Chinese that hold a secret (with the strings that
must never survive redaction) and harmless look-alikes that must be kept as they are.

Used by tests/unit/test_secrets_corpus.py (detection, redaction, false positives), by
tests/integration/test_secret_sinks.py (every entry point, every sink) and for the table in
docs/secrets.md: ``python -m tests.support.secrets_corpus`` prints it."""

from __future__ import annotations

from dataclasses import dataclass

PEM = ("-----BEGIN RSA PRIVATE KEY-----\n"
       "MIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM9Oi4Kc9rXWT1xKqpYvE0tH4JX2Gk\n"
       "q8wzLv1ZQd5mF2yR3nB7uTjC0aE9sD6fH1gK4lM8oP2qW5xV7yN0zA3bC6dE9fG\n"
       "-----END RSA PRIVATE KEY-----")
KEY_BODY = ("MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj\n"
            "MzEfYyjiWA4R4M2bS1GB4t7NXp98C3SC6dVMvDuictGeurT8jNbvJZHtCSuYEvuN\n"
            "MoSfm76oqFvAp8Gy0iz5sxjZmSnXyCdPEovGhLa0VzMaQ8sCLOyS56YyCFGeJZqg")
JWT = ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
       "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U")


@dataclass(frozen=True)
class Case:
    category: str
    lang: str  # en | zh
    text: str
    secrets: tuple[str, ...] = ()  # empty: a harmless look-alike that must be kept unchanged
    keep: tuple[str, ...] = ()  # words around the secret that redaction must keep

    @property
    def positive(self) -> bool:
        return bool(self.secrets)


def _s(category: str, lang: str, text: str, *secrets: str, keep: tuple[str, ...] = ()) -> Case:
    return Case(category, lang, text, secrets, keep)


def _h(category: str, lang: str, text: str) -> Case:
    return Case(category, lang, text)


CASES: list[Case] = [
    # ---- passwords ---------------------------------------------------------------------------
    _s("password", "en", "my password is hunter2xyz", "hunter2xyz"),
    _s("password", "en", "wifi pw hunter2xyz", "hunter2xyz"),
    _s("password", "en", "The router password: Tr0ub4dor&3", "Tr0ub4dor&3"),
    _s("password", "en", "pwd=Zx9!kLm2", "Zx9!kLm2"),
    _s("password", "en", "my passphrase is 'correct horse battery staple'", "correct horse battery staple"),
    _s("password", "en", "My new password will be S3cure#2026", "S3cure#2026"),
    _s("password", "en", "Remember that my dog is called Bob. My password is Tr0ub4dor&3 and I prefer green tea.",
       "Tr0ub4dor&3", keep=("my dog is called Bob", "I prefer green tea")),
    _s("password", "en", "The laptop password is tiger and the screen lock is 2580, I think.", "tiger"),
    _s("password", "en", 'settings {"user": "amy", "password": "Zx9!kLm2"}', "Zx9!kLm2"),
    _s("password", "zh", "我的密码是abc12345", "abc12345"),
    _s("password", "zh", "wifi密码：hunter2xyz", "hunter2xyz"),
    _s("password", "zh", "银行卡密码是 987654", "987654"),
    _s("password", "zh", "支付密码为135790，别告诉别人", "135790"),
    _s("password", "zh", "开机密码改成了Aa123456", "Aa123456"),
    _s("password", "zh", "门禁密码是九八七六五四", "九八七六五四"),
    _s("password", "zh", "口令：SunRise#88", "SunRise#88"),
    _s("password", "zh", "我的密码是abc12345，我喜欢绿茶", "abc12345", keep=("我喜欢绿茶",)),
    # ---- PINs, passcodes, one-time codes ------------------------------------------------------
    _s("PIN / code", "en", "the passcode for the door is 482913", "482913"),
    _s("PIN / code", "en", "My PIN is 4821", "4821"),
    _s("PIN / code", "en", "pin code: 0000", "0000"),
    _s("PIN / code", "en", "CVV 371 on the back", "371"),
    _s("PIN / code", "en", "your verification code is 660321", "660321"),
    _s("PIN / code", "zh", "验证码 482913", "482913"),
    _s("PIN / code", "zh", "验证码是：660321，五分钟内有效", "660321"),
    _s("PIN / code", "zh", "手机解锁码是2580", "2580"),
    _s("PIN / code", "zh", "信用卡安全码 371", "371"),
    # ---- login pairs ---------------------------------------------------------------------------
    _s("login pair", "en", "login: admin / admin12345", "admin12345"),
    _s("login pair", "en", "username: root, password: toor1234", "toor1234"),
    _s("login pair", "en", "user alice / Wonder1and!", "Wonder1and!"),
    _s("login pair", "zh", "账号 zhangsan 密码 Zs@2026pass", "Zs@2026pass"),
    _s("login pair", "zh", "登录名：wang 登录密码：w4ng_pwd", "w4ng_pwd"),
    _s("login pair", "zh", "路由器后台 账号admin/Admin@888", "Admin@888"),
    # ---- credentials in URLs --------------------------------------------------------------------
    _s("URL credentials", "en", "postgresql://admin:SuperSecret99@db.internal:5432/app", "SuperSecret99"),
    _s("URL credentials", "en", "mysql://root:r00tpass@10.0.0.5/shop", "r00tpass"),
    _s("URL credentials", "en", "clone https://bob:hunter2xyz@git.example.com/repo.git", "hunter2xyz"),
    _s("URL credentials", "en", "GET https://api.example.com/v1/data?api_key=abcd1234efgh5678", "abcd1234efgh5678"),
    _s("URL credentials", "zh", "数据库连接串 postgres://svc:Pa55w0rdZ@10.1.2.3/db 别改", "Pa55w0rdZ"),
    # ---- API keys --------------------------------------------------------------------------------
    _s("API key", "en", "key sk-proj-abcdefghijklmnop1234", "sk-proj-abcdefghijklmnop1234"),
    _s("API key", "en", "OPENAI_API_KEY=sk-abcdefghijklmnopqrstuvwxyz123456", "sk-abcdefghijklmnopqrstuvwxyz123456"),
    _s("API key", "en", "AWS key AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE"),
    _s("API key", "en", "stripe sk_live_4eC39HqLyjWDarjtT1zdp7dc", "sk_live_4eC39HqLyjWDarjtT1zdp7dc"),
    _s("API key", "en", "maps key AIzaSyA-1234567890abcdefghijklmnopqrstu", "AIzaSyA-1234567890abcdefghijklmnopqrstu"),
    _s("API key", "en", "api_key: 9f8e7d6c5b4a39281706f5e4", "9f8e7d6c5b4a39281706f5e4"),
    _s("API key", "zh", "我的 API key 是 sk-ant-api03-abcdefghijklmnopqrstuv", "sk-ant-api03-abcdefghijklmnopqrstuv"),
    _s("API key", "zh", "密钥：Xk29fLq0Zp7vBn4Wm8Ty", "Xk29fLq0Zp7vBn4Wm8Ty"),
    _s("API key", "en", "config = {'api_key': 'abcd1234efgh5678ijkl'}", "abcd1234efgh5678ijkl"),
    # ---- access tokens -------------------------------------------------------------------------
    _s("access token", "en", "token: ghp_abcdefghijklmnopqrstuv", "ghp_abcdefghijklmnopqrstuv"),
    _s("access token", "en", f"Authorization: Bearer {JWT}", JWT),
    _s("access token", "en", "slack token xoxb-1234567890-abcdefghijklmn", "xoxb-1234567890-abcdefghijklmn"),
    _s("access token", "en", "hf token hf_abcdefghijklmnopqrstuvwxyz123456", "hf_abcdefghijklmnopqrstuvwxyz123456"),
    _s("access token", "zh", "访问令牌：glpat-abcdefghij1234567890", "glpat-abcdefghij1234567890"),
    _s("access token", "zh", "我的GitHub令牌是 ghp_0123456789abcdefABCDEF0123", "ghp_0123456789abcdefABCDEF0123"),
    # ---- private keys ----------------------------------------------------------------------------
    _s("private key", "en", f"deploy key:\n{PEM}", "MIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM9Oi4Kc9rXWT1xKqpYvE0tH4JX2Gk",
       "q8wzLv1ZQd5mF2yR3nB7uTjC0aE9sD6fH1gK4lM8oP2qW5xV7yN0zA3bC6dE9fG"),
    _s("private key", "en", f"the key body is\n{KEY_BODY}", *KEY_BODY.split("\n")),
    _s("private key", "zh", f"服务器私钥（没有开头那行）：{KEY_BODY.replace(chr(10), '')}", KEY_BODY.replace("\n", "")),
    # ---- card numbers ----------------------------------------------------------------------------
    _s("card number", "en", "card 4111 1111 1111 1111", "4111 1111 1111 1111"),
    _s("card number", "en", "card 4111.1111.1111.1111", "4111.1111.1111.1111"),
    _s("card number", "en", "Mastercard 5500-0000-0000-0004 for travel", "5500-0000-0000-0004"),
    _s("card number", "en", "my visa 4012888888881881 expires 12/27", "4012888888881881"),
    _s("card number", "zh", "信用卡号 6222 0212 3456 7890 128", "6222 0212 3456 7890 128"),
    _s("card number", "zh", "工资卡：6217000010001234567，招商银行", "6217000010001234567"),
    # ---- ID numbers ------------------------------------------------------------------------------
    _s("ID number", "zh", "身份证 110101 19900307 4514", "110101 19900307 4514"),
    _s("ID number", "zh", "我的身份证号是110101199003074514", "110101199003074514"),
    _s("ID number", "zh", "身份证号码：44030419851212123X", "44030419851212123X"),
    _s("ID number", "zh", "证件号 320102-19800101-0011，办签证用", "320102-19800101-0011"),
    _s("ID number", "en", "SSN 123-45-6789", "123-45-6789"),
    _s("ID number", "en", "social security number: 078-05-1120", "078-05-1120"),
    # ---- spelled out -----------------------------------------------------------------------------
    _s("spelled out", "en", "p a s s w o r d is qwerty99", "qwerty99"),
    _s("spelled out", "en", "P-A-S-S-W-O-R-D: Zebra!77", "Zebra!77"),
    _s("spelled out", "en", "my p@ssw0rd = letmein123", "letmein123"),
    _s("spelled out", "zh", "密 码：778899", "778899"),
    # ==== harmless look-alikes ====================================================================
    _h("order / tracking number", "en", "Order 112-4567891-2345678 arrived today"),
    _h("order / tracking number", "en", "order 4532 0151 1283 0366 was shipped"),
    _h("order / tracking number", "en", "tracking number 1Z999AA10123456784"),
    _h("order / tracking number", "zh", "订单号 202311230001234567"),
    _h("order / tracking number", "zh", "快递单号 SF1234567890123，明天到"),
    _h("order / tracking number", "zh", "订单编号：4111111111111111，已发货"),
    _h("date / time", "en", "The meeting is at 10:30 on 2026-11-23"),
    _h("date / time", "en", "from 2023-05-08 to 2023-06-01, then 2026/11/23 14:05:33"),
    _h("date / time", "en", "born in 1987, married in 2015"),
    _h("date / time", "zh", "生日是1990年3月7日"),
    _h("date / time", "zh", "会议在2026-11-23 09:00，地点301"),
    _h("version", "en", "upgrade to version 1.2.3"),
    _h("version", "en", "Python 3.11.4 and numpy 1.26.0"),
    _h("version", "en", "v2.14.0-rc.1 released"),
    _h("version", "zh", "版本 4.2.1.1024 已经发布"),
    _h("phone / extension", "en", "call 555-1234 ext. 4821"),
    _h("phone / extension", "en", "office line +1 (415) 555-0132 x204"),
    _h("phone / extension", "en", "my number is +86 138 0013 8000"),
    _h("phone / extension", "zh", "手机 13800138000，分机 8021"),
    _h("phone / extension", "zh", "客服电话 400-820-8820 转 3"),
    _h("ISBN / numbers", "en", "ISBN 978-3-16-148410-0"),
    _h("ISBN / numbers", "en", "ISBN 9787115428028 is the Chinese edition"),
    _h("ISBN / numbers", "en", "the population is 1,411,750,000"),
    _h("ISBN / numbers", "en", "I paid $4,111.11 for 1111 units"),
    _h("ISBN / numbers", "zh", "2023年营收增长了12.5%，会议号 123 456 789"),
    _h("ISBN / numbers", "en", "request id 123e4567-e89b-12d3-a456-426614174000"),
    _h("ISBN / numbers", "en", "commit 3f2a9c1b7e5d4a6f8b0c2e1d9a7f5b3c1e0d2f4a"),
    _h("ISBN / numbers", "en", "sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
    _h("talk about secrets", "en", "I forgot my password"),
    _h("talk about secrets", "en", "my password is weak"),
    _h("talk about secrets", "en", "Don't store passwords in plain text"),
    _h("talk about secrets", "en", "the password reset link expired"),
    _h("talk about secrets", "en", "a token of appreciation for the team"),
    _h("talk about secrets", "en", "the secret to good coffee is fresh beans"),
    _h("talk about secrets", "en", "my login is slow today"),
    _h("talk about secrets", "en", "see the user guide / manual first"),
    _h("talk about secrets", "en", "the pin is in the drawer"),
    _h("talk about secrets", "zh", "密码是什么？"),
    _h("talk about secrets", "zh", "我忘了密码"),
    _h("talk about secrets", "zh", "密码太简单了，要改一下"),
    _h("talk about secrets", "zh", "我的猫叫咪咪"),
    _h("URL without credentials", "en", "docs at https://example.com/docs?page=2"),
    _h("URL without credentials", "en", "the DSN is postgresql://db.internal:5432/app"),
    _h("URL without credentials", "zh", "网址 https://www.example.cn/path/to/page.html"),
    _h("URL without credentials", "en", "https://example.com/aGVsbG8gd29ybGQgdGhpcyBpcyBhIGxvbmcgcGF0aA/index"),
    _h("URL without credentials", "en", "connect with postgresql://user:password@localhost/mydb as in the tutorial"),
    _h("code / markup", "en", "1Password is a good password manager"),
    _h("code / markup", "en", "run pwd to print the directory, e.g. pwd /home/ann/docs"),
    _h("code / markup", "en", "2. **Pin brushes**: good for long coats"),
    _h("code / markup", "en", "Best practices for User Experience: Awwwards.com has examples"),
    _h("code / markup", "en", "host key fingerprint is SHA256:Qm9vK3x8ZpL2sT7vWc1yRb4nHd6jFg0aEu5iYoXq9Ms"),
    _h("code / markup", "en", '<script integrity="sha384-Zk3Lq8Vw2Xy7Ab1Cd4Ef6Gh9Ij0Kl5Mn3Op8Qr2St7Uv1Wx4Yz6Ab9Cd0Ef3Gh5Ij">'),
    _h("code / markup", "en", "the app lives in /snap/discord/150/usr/share/discord/Discord"),
    _h("code / markup", "en", "const apiKey = 'YOUR_GOOGLE_MAPS_API_KEY';"),
    _h("code / markup", "en", "client({ accessToken: squareAccessToken })"),
    _h("code / markup", "en", "password = request.form['password']"),
    _h("code / markup", "en", "environment: DB_PASSWORD=${DB_PASSWORD} UPLOAD_MAX_FILESIZE=10M"),
    _h("code / markup", "en", "Account Number/Username: (unknown)"),
    _h("code / markup", "en", "SELECT COUNT(DISTINCT user_id)::float FROM events"),
    _h("code / markup", "zh", "用 `pwd` 命令查看当前目录，再用 `ls -la` 列出文件"),
    _h("talk about secrets", "en", "I changed my password yesterday"),
    _h("talk about secrets", "en", "Password: see the vault"),
    _h("talk about secrets", "en", "The access token expires in 3600 seconds"),
    _h("talk about secrets", "zh", "验证码发到手机了"),
    _h("talk about secrets", "en", "the password isolation policy applies to PW 2024 attendees"),
    _h("ISBN / numbers", "en", "My student number is 20231234"),
    _h("ISBN / numbers", "zh", "银行卡余额 12345 元"),
    _h("date / time", "en", "Flight CA1234 departs at 08:15"),
]


def report() -> list[tuple[str, int, int, int]]:
    """(category, cases, detected, redacted completely) per category, secrets first, then look-alikes
    as (category, cases, flagged, 0)."""
    from memfold.text.secrets import find_secret, redact

    rows: dict[str, list[int]] = {}
    for c in CASES:
        row = rows.setdefault(c.category, [0, 0, 0])
        row[0] += 1
        found = find_secret(c.text) is not None
        row[1] += found
        if c.positive:
            red = redact(c.text)
            row[2] += all(s not in red for s in c.secrets)
    return [(k, *v) for k, v in rows.items()]  # type: ignore[misc]


def markdown_table() -> str:
    lines = ["| category | kind | cases (en / zh) | detected | fully redacted |", "|---|---|---|---|---|"]
    pos = [c for c in CASES if c.positive]
    neg = [c for c in CASES if not c.positive]
    counts = {k: (n, d, r) for k, n, d, r in report()}

    def langs(cat: str) -> str:
        cs = [c for c in CASES if c.category == cat]
        return f"{len(cs)} ({sum(c.lang == 'en' for c in cs)} / {sum(c.lang == 'zh' for c in cs)})"

    for cat in dict.fromkeys(c.category for c in pos):
        n, d, r = counts[cat]
        lines.append(f"| {cat} | secret | {langs(cat)} | {d} | {r} |")
    lines.append("")
    lines.append("| category | kind | cases (en / zh) | flagged (false positives) |")
    lines.append("|---|---|---|---|")
    for cat in dict.fromkeys(c.category for c in neg):
        n, d, _ = counts[cat]
        lines.append(f"| {cat} | look-alike | {langs(cat)} | {d} |")
    tp = sum(counts[c][1] for c in dict.fromkeys(x.category for x in pos))
    fp = sum(counts[c][1] for c in dict.fromkeys(x.category for x in neg))
    lines.append("")
    lines.append(f"Total: {len(pos)} secrets, {tp} detected; {len(neg)} look-alikes, {fp} flagged.")
    return "\n".join(lines)


if __name__ == "__main__":
    print(markdown_table())
