"""Measure the harness Estimator against a real BPE tokenizer.

Run from the repository root after ``.venv/bin/pip install -r requirements-bench.txt``::

    .venv/bin/python -m scripts.bench.estimator

The corpus is generated here from a fixed seed (no downloads), plus two held-out
categories read from the running interpreter's standard library, which were not
used to tune the heuristic. The reference is ``anthropic_tokenizer.count_tokens``:
the 65,000-entry Claude BPE embedded in the ``anthropic-tokenizer`` wheel.
"""

from __future__ import annotations

import argparse
import inspect
import json
import platform
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import import_module
from importlib.metadata import version

from hango.agent.estimator import estimate_request, estimate_text
from hango.messages import Message, Request, TextBlock

ENGLISH = """\
The scheduler keeps a queue of pending jobs and wakes a worker whenever a new job arrives.
When the cache misses, the request falls through to the database, which is slower but always correct.
She opened the window, listened to the rain for a while, and then went back to her notes.
Our quarterly revenue grew by twelve percent, mostly thanks to the new enterprise customers in Europe.
Please review the attached proposal and let me know if anything needs to change before Friday.
Each tenant has its own API keys, agents and sessions, and nothing is shared between tenants.
The model reads the whole conversation on every turn, so long histories cost more than short ones.
If the build fails, check the logs first; most failures come from a missing environment variable.
Historians still argue about why the empire collapsed so quickly after the death of its founder.
A good test names the behaviour it checks, sets up only what it needs, and fails for one reason.
The library was quiet except for the occasional rustle of pages and the hum of the old radiator.
You can configure the timeout with an environment variable; the default is two minutes.
Summarization replaces the oldest messages with a short summary once the context grows too large.
Nobody expected the small startup to outlast its much larger and better funded competitors.
The migration adds a nullable column first, backfills it in batches, and only then adds the constraint.
Tokens are not words: a rare word may become several tokens while a common phrase may be one or two.
After the meeting, the team agreed to postpone the release until the security review was finished.
Rate limits are counted in the database so that every worker and every host sees the same numbers.
The river had flooded twice that spring, and the farmers were worried about their harvest.
Before you deploy, make sure the health check endpoint returns a successful status code.
Why does the assistant keep forgetting the instructions I gave it at the start of the session?
The inspector shows each part of the request with its estimated size, so you can see what is expensive.
I would like to cancel my subscription, but the settings page keeps showing an unexpected error.
Authentication happens once per request; authorization is checked for every object that is touched.
Her grandfather had been a sailor, and his stories of distant harbours filled her childhood.
Large language models predict the next token from everything that came before it in the prompt.
Consider a simple example: two users edit the same document at the same time from different devices.
The documentation explains how to install the server, create a tenant, and issue the first API key.
Unfortunately, the shipment was delayed by customs and will arrive approximately three days late.
Good error messages say what went wrong, why it matters, and what the reader can do about it.
"""

VIETNAMESE = """\
Hôm nay trời mưa to nên tôi ở nhà đọc sách và uống trà nóng.
Mỗi tenant có khóa API, agent và phiên làm việc riêng, không chia sẻ dữ liệu với nhau.
Khi bộ nhớ đệm không có dữ liệu, yêu cầu sẽ được chuyển xuống cơ sở dữ liệu.
Chúng tôi rất vui được thông báo rằng phiên bản mới đã sẵn sàng để thử nghiệm.
Bạn vui lòng kiểm tra lại thông tin đơn hàng và xác nhận trước thứ Sáu tuần này.
Mô hình đọc toàn bộ cuộc hội thoại ở mỗi lượt, vì vậy lịch sử dài sẽ tốn nhiều token hơn.
Nếu quá trình build thất bại, hãy xem nhật ký trước; phần lớn lỗi đến từ biến môi trường bị thiếu.
Hà Nội vào mùa thu có những buổi sáng se lạnh và mùi hoa sữa thoang thoảng trên phố.
Một bài kiểm thử tốt chỉ kiểm tra một hành vi và thất bại vì đúng một lý do.
Thư viện yên tĩnh, chỉ có tiếng lật trang sách và tiếng quạt trần quay đều đều.
Bản tóm tắt thay thế những tin nhắn cũ nhất khi ngữ cảnh trở nên quá lớn.
Không ai ngờ công ty khởi nghiệp nhỏ bé ấy lại tồn tại lâu hơn các đối thủ lớn.
Sau cuộc họp, cả nhóm đồng ý hoãn phát hành cho đến khi hoàn tất đánh giá bảo mật.
Giới hạn tốc độ được đếm trong cơ sở dữ liệu để mọi tiến trình đều thấy cùng một con số.
Dòng sông đã dâng nước hai lần trong mùa xuân năm ấy, khiến nông dân lo lắng cho vụ mùa.
Tại sao trợ lý cứ quên những hướng dẫn mà tôi đã đưa ra ở đầu phiên làm việc?
Công cụ kiểm tra ngữ cảnh cho thấy từng phần của yêu cầu cùng với số token ước lượng.
Tôi muốn hủy gói đăng ký, nhưng trang cài đặt cứ báo một lỗi không mong muốn.
Ông nội cô từng là thủy thủ, và những câu chuyện về các bến cảng xa xôi đã nuôi lớn tuổi thơ cô.
Xác thực diễn ra một lần cho mỗi yêu cầu, còn phân quyền được kiểm tra cho từng đối tượng.
Rất tiếc, lô hàng bị hải quan giữ lại và sẽ đến trễ khoảng ba ngày.
Thông báo lỗi tốt nói rõ điều gì sai, vì sao nó quan trọng và người đọc có thể làm gì.
Người dùng có thể bỏ chọn từng phần trong bảng rồi bấm Lưu để áp dụng cho lần chạy sau.
Phở bò ở quán đầu ngõ nấu bằng nước dùng ninh xương suốt đêm, thơm và ngọt tự nhiên.
Trước khi triển khai, hãy bảo đảm điểm cuối kiểm tra sức khỏe trả về mã trạng thái thành công.
Các nhà sử học vẫn tranh luận vì sao đế chế sụp đổ nhanh đến vậy sau khi người sáng lập qua đời.
"""

OTHER_SCRIPTS = """\
今天下雨了，所以我在家里看书喝茶。模型在每一轮都会读取整个对话，因此较长的历史记录会消耗更多的令牌。
今日は雨が降っているので、家で本を読んでお茶を飲んでいます。長い履歴ほど多くのトークンを消費します。
오늘은 비가 와서 집에서 책을 읽고 차를 마셨어요. 긴 기록은 더 많은 토큰을 사용합니다.
Сегодня идёт дождь, поэтому я остался дома и читаю книгу. Модель читает весь разговор на каждом шаге.
Die Größe der Änderungen überrascht niemanden, aber die Prüfung dauert länger als erwartet.
Le modèle lit toute la conversation à chaque tour, donc un historique long coûte plus cher.
“Typographic quotes,” she said — it’s fine… really – see § 4.2 → next ≥ 3 × 2 • done
"""
EMOJI = "😀 😂 🤣 😊 😍 🥰 😎 🤔 😴 😭 😡 👍 👏 🙏 💪 🔥 ✨ 🎉 🚀 💡 ✅ ❌ ⚠️ ❤️ 💔 🌧️ ☕ 🍜 🐛 📦 👍🏽 👋🏻 🇻🇳 🇺🇸 👨‍👩‍👧‍👦 🧑‍💻 🏳️‍🌈"
CHAT = """\
ok let me check that for you
thanks so much, that worked perfectly
the deploy is done, can you take a look
haha no worries, happens to everyone
good morning team, standup in five minutes
mình xong rồi nhé, mọi người xem giúp
cảm ơn bạn nhiều lắm
trời ơi lại lỗi nữa rồi
"""
IDENTIFIER_WORDS = (
    "user session agent tool message token cache request response tenant store config payload item index "
    "record key value name path file count limit offset status error result summary history window part"
)
WORDS = IDENTIFIER_WORDS.split()
PY_TYPES = ("str", "int", "bool", "float", "list[str]", "dict[str, Any]", "bytes", "None")


def pick(rng: random.Random, lines: str, n: int) -> list[str]:
    """Choose ``n`` lines (with repeats) from a block of text."""
    return rng.choices(lines.splitlines(), k=n)


def prose(rng: random.Random, pool: str) -> str:
    """One to six paragraphs of sentences from ``pool``."""
    paragraphs = [" ".join(pick(rng, pool, rng.randint(1, 6))) for _ in range(rng.randint(1, 6))]
    return "\n\n".join(paragraphs)


def ident(rng: random.Random, parts: int = 2) -> str:
    """A snake_case identifier."""
    return "_".join(rng.choice(WORDS) for _ in range(rng.randint(1, parts)))


def python_function(rng: random.Random) -> str:
    """A generated Python function with a docstring, a loop and a comment."""
    args = [ident(rng) for _ in range(rng.randint(0, 4))]
    sig = ", ".join(f"{a}: {rng.choice(PY_TYPES)}" for a in args)
    body = [
        f"def {ident(rng, 3)}({sig}) -> {rng.choice(PY_TYPES)}:",
        f'    """{pick(rng, ENGLISH, 1)[0].rstrip(".")}."""',
        f"    {ident(rng)} = {{}}",
        f"    for {ident(rng, 1)} in range({rng.randint(1, 500)}):",
        f"        # {rng.choice(WORDS)} {rng.choice(WORDS)} must stay in order",
        f"        if {ident(rng)} is None or len({ident(rng)}) > {rng.randint(2, 99)}:",
        f'            raise ValueError(f"bad {rng.choice(WORDS)}: {{{ident(rng)}!r}}")',
        f"        {ident(rng)}[{ident(rng, 1)}] = self.{ident(rng)}.get({ident(rng)}, {rng.randint(0, 9)})",
        f"    return {ident(rng)}",
    ]
    return "\n".join([*body[: rng.randint(3, len(body))], f"    return {ident(rng)}"])


def python_class(rng: random.Random) -> str:
    """A generated dataclass with a method or two."""
    name = "".join(w.capitalize() for w in ident(rng, 2).split("_"))
    fields = [
        f"    {ident(rng)}: {rng.choice(PY_TYPES)} = {rng.randint(0, 99)}" for _ in range(rng.randint(1, 5))
    ]
    methods = ["\n".join("    " + line for line in python_function(rng).splitlines()) for _ in range(2)]
    return "\n".join(["@dataclass(frozen=True)", f"class {name}:", *fields, "", *methods])


def python_code(rng: random.Random) -> str:
    """A module-like mix of imports, functions and classes."""
    head = "from __future__ import annotations\n\nimport json\nfrom typing import Any\n"
    chunks = [rng.choice((python_function, python_class))(rng) for _ in range(rng.randint(1, 4))]
    return head + "\n\n\n".join(chunks)


def json_schema_property(rng: random.Random) -> dict[str, object]:
    """One property of a tool's JSON schema."""
    kind = rng.choice(("string", "integer", "boolean", "array", "enum"))
    described = {"description": pick(rng, ENGLISH, 1)[0]}
    if kind == "array":
        return {"type": "array", "items": {"type": "string"}, **described}
    if kind == "enum":
        return {"type": "string", "enum": rng.sample(WORDS, 3), **described}
    return {"type": kind, **described}


def tool_schema(rng: random.Random) -> str:
    """A tool definition as the JSON the provider receives."""
    props = {ident(rng): json_schema_property(rng) for _ in range(rng.randint(1, 6))}
    tool = {
        "name": ident(rng, 3),
        "description": " ".join(pick(rng, ENGLISH, rng.randint(1, 4))),
        "input_schema": {"type": "object", "properties": props, "required": sorted(props)[:2]},
    }
    return json.dumps(tool)


def hexid(rng: random.Random, n: int) -> str:
    """A random lowercase hex string."""
    return "".join(rng.choice("0123456789abcdef") for _ in range(n))


def api_response(rng: random.Random) -> str:
    """A pretty-printed JSON API response with ids, dates and numbers."""
    items = [
        {
            "id": "-".join(hexid(rng, n) for n in (8, 4, 4, 4, 12)),
            "name": ident(rng),
            "created_at": f"2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T10:{rng.randint(0, 59):02d}:00Z",
            "count": rng.randint(0, 100000),
            "ratio": round(rng.random(), 4),
            "enabled": rng.random() < 0.5,
        }
        for _ in range(rng.randint(1, 8))
    ]
    return json.dumps({"items": items, "next": None, "total": len(items)}, indent=2)


def shell_output(rng: random.Random) -> str:
    """An ``ls -la``, ``grep -n`` or ``git log`` output."""
    rows = []
    for _ in range(rng.randint(2, 30)):
        path = f"src/{ident(rng)}/{ident(rng)}.py"
        kind = rng.randrange(3)
        if kind == 0:
            size, day = rng.randint(10, 99999), rng.randint(1, 28)
            rows.append(f"-rw-r--r-- 1 app app {size:>6} Mar {day:2} 12:0{rng.randint(0, 9)} {path}")
        elif kind == 1:
            rows.append(f"{path}:{rng.randint(1, 900)}:    {ident(rng)} = {ident(rng)}({ident(rng)})")
        else:
            rows.append(f"{hexid(rng, 7)} {pick(rng, ENGLISH, 1)[0][:60]}")
    return "\n".join(rows)


def traceback_output(rng: random.Random) -> str:
    """A Python traceback."""
    frames = [
        f'  File "/app/hango/{ident(rng)}.py", line {rng.randint(1, 400)}, in {ident(rng)}\n    {ident(rng)}({ident(rng)})'
        for _ in range(rng.randint(1, 8))
    ]
    return "Traceback (most recent call last):\n" + "\n".join(frames) + f"\nKeyError: '{ident(rng)}'"


def tool_result(rng: random.Random) -> str:
    """What a tool returns: shell output, a traceback, JSON or numbered file lines."""
    kind = rng.randrange(4)
    if kind == 0:
        return shell_output(rng)
    if kind == 1:
        return traceback_output(rng)
    if kind == 2:
        return api_response(rng)
    lines = python_code(rng).splitlines()
    return "\n".join(f"{i + 1:6}\t{line}" for i, line in enumerate(lines))


def emoji_text(rng: random.Random) -> str:
    """Chat lines with one to five emoji each, and some emoji-only lines."""
    emoji = EMOJI.split()
    lines = []
    for _ in range(rng.randint(1, 12)):
        marks = "".join(rng.choices(emoji, k=rng.randint(1, 5)))
        lines.append(marks if rng.random() < 0.2 else f"{pick(rng, CHAT, 1)[0]} {marks}")
    return "\n".join(lines)


def mixed(rng: random.Random) -> str:
    """Markdown mixing prose, Vietnamese, fenced code, JSON and emoji."""
    parts = [
        "## " + pick(rng, ENGLISH, 1)[0],
        prose(rng, VIETNAMESE),
        "```python\n" + python_function(rng) + "\n```",
        "- " + "\n- ".join(pick(rng, ENGLISH, 3)),
        "```json\n" + api_response(rng) + "\n```",
        emoji_text(rng),
    ]
    rng.shuffle(parts)
    return "\n\n".join(parts[: rng.randint(2, len(parts))])


def chunks(text: str, size: int = 1500) -> list[str]:
    """``text`` cut at blank lines into pieces of about ``size`` characters."""
    pieces, current = [], ""
    for paragraph in text.split("\n\n"):
        current = f"{current}\n\n{paragraph}" if current else paragraph
        if len(current) >= size:
            pieces.append(current)
            current = ""
    return [*pieces, current] if current else pieces


def docstrings(name: str) -> str:
    """The docstrings of a stdlib module and of the functions and classes it defines."""
    module = import_module(name)
    members = [m for m in vars(module).values() if getattr(m, "__module__", None) == name]
    docs = [module.__doc__, *(inspect.getdoc(m) for m in members if callable(m))]
    return "\n\n".join(d for d in docs if d)


def source(name: str) -> str:
    """The source of a stdlib module."""
    return inspect.getsource(import_module(name))


def stdlib_texts(names: Sequence[str], read: Callable[[str], str]) -> list[str]:
    """Chunks of text that ``read`` takes from each named stdlib module."""
    return [chunk for name in names for chunk in chunks(read(name))]


STDLIB = ("json.decoder", "textwrap", "argparse", "dataclasses", "shlex", "string", "heapq", "bisect")
STDLIB_DOCS = ("argparse", "heapq", "pickle", "subprocess", "threading", "logging", "csv", "tarfile", "shlex")
GENERATORS: dict[str, Callable[[random.Random], str]] = {
    "english prose": lambda rng: prose(rng, ENGLISH),
    "python code": python_code,
    "json tool schemas": tool_schema,
    "tool results": tool_result,
    "vietnamese": lambda rng: prose(rng, VIETNAMESE),
    "emoji-heavy": emoji_text,
    "mixed": mixed,
    "other scripts": lambda rng: prose(rng, OTHER_SCRIPTS),
}


def build_corpus(per_category: int = 150, seed: int = 20250101) -> dict[str, list[str]]:
    """Generated samples per category, plus the held-out stdlib categories."""
    rng = random.Random(seed)
    corpus = {name: [make(rng) for _ in range(per_category)] for name, make in GENERATORS.items()}
    corpus["held out: stdlib python"] = stdlib_texts(STDLIB, source)
    corpus["held out: stdlib docstrings"] = stdlib_texts(STDLIB_DOCS, docstrings)
    return corpus


@dataclass(frozen=True)
class Row:
    category: str
    samples: int
    tokens: int
    signed: float
    absolute: float
    worst: float
    under: float


def measure(category: str, texts: Sequence[str], count: Callable[[str], int]) -> Row:
    """Relative errors of ``estimate_text`` on ``texts``: mean signed, mean absolute, worst, share under -10 %."""
    truths = [count(t) for t in texts]
    errors = [(estimate_text(t) - n) / n * 100 for t, n in zip(texts, truths, strict=True) if n]
    return Row(
        category=category,
        samples=len(errors),
        tokens=sum(truths),
        signed=sum(errors) / len(errors),
        absolute=sum(abs(e) for e in errors) / len(errors),
        worst=max(errors, key=abs),
        under=sum(e < -10 for e in errors) / len(errors) * 100,
    )


def render(rows: Sequence[Row]) -> str:
    """The rows as a Markdown table."""
    lines = [
        "| category | samples | tokens | mean signed % | mean abs % | worst % | under by >10 % |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    lines += [
        f"| {r.category} | {r.samples} | {r.tokens} | {r.signed:+.1f} | {r.absolute:.1f} | {r.worst:+.1f} "
        f"| {r.under:.1f} % |"
        for r in rows
    ]
    return "\n".join(lines)


def speed(texts: Sequence[str], messages: int = 10_000) -> str:
    """Time ``estimate_request`` on one request of ``messages`` text messages cycled from ``texts``."""
    history = tuple(
        Message(role="user" if i % 2 == 0 else "assistant", content=(TextBlock(texts[i % len(texts)]),))
        for i in range(messages)
    )
    size = sum(len(m.content[0].text.encode()) for m in history)
    started = time.perf_counter()
    estimate_request(Request(model="bench", messages=history))
    elapsed = time.perf_counter() - started
    return f"estimate_request on {messages} messages ({size / 1e6:.1f} MB of UTF-8): {elapsed * 1000:.0f} ms"


def main(argv: Sequence[str] | None = None) -> int:
    """Print the error table and the speed line; ``--dump`` prints the corpus as JSON instead."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dump", action="store_true", help="print the corpus as JSON and exit")
    args = parser.parse_args(argv)
    corpus = build_corpus()
    if args.dump:
        print(json.dumps(corpus, ensure_ascii=False))
        return 0
    from anthropic_tokenizer import count_tokens

    rows = [measure(name, texts, count_tokens) for name, texts in corpus.items()]
    generated = [t for name in GENERATORS for t in corpus[name]]
    rows.append(measure("overall (generated)", generated, count_tokens))
    rows.append(measure("overall (all)", [t for texts in corpus.values() for t in texts], count_tokens))
    print(f"anthropic-tokenizer {version('anthropic-tokenizer')}, Python {platform.python_version()}\n")
    print(render(rows))
    print("\n" + speed(generated))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
