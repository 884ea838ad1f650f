"""Keyword extraction for the ``openclaw`` profile's keyword retrieval.

When the full AND query finds fewer than 200 chunks, OpenClaw 2026.9.6 also
searches up to six single keywords of the query. They are the query's pieces
between whitespace and punctuation, lowercased, where

* a piece with kana is cut into ASCII words, katakana runs, kanji runs (each
  kanji run also gives its two-character windows) and hiragana runs of two or
  more;
* a piece with Han characters (and no kana) gives each Han character and each
  pair of neighbouring ones;
* a Hangul piece is kept unless it, or it without its trailing particle (은, 는,
  에서, …), is a stop word, and its stem (the piece without the particle) is
  added when it is two syllables or more;
* stop words of seven languages (English, Spanish, Portuguese, Arabic, Chinese,
  Korean, Japanese), ASCII words shorter than three letters, ASCII numbers and
  pieces made only of symbols are dropped, and repeats are kept once.

The word lists are facts about 2026.9.6's behaviour, written here as data and
checked word by word against the installed package's ``isQueryStopWordToken``,
and the whole extraction against its ``extractKeywords`` (LoCoMo's 1,981
questions plus queries in those languages and scripts), by
tests/openclaw/test_keyword_parity.py.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["STOP_WORDS", "extract_keywords", "is_stop_word", "segments"]


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


#: stop words by language (ISO 639-1); a token is dropped when any list has it
STOP_WORDS_BY_LANGUAGE: dict[str, frozenset[str]] = {
    "en": _words(
        "a about above after ago an and anything are as at be because been before being "
        "below between but by can could did do does during earlier everything find for "
        "from get give had has have he help how i if in into is it just later may me "
        "might my nothing now of on or our over please recently she should show something "
        "stuff tell that the them then these they thing things this those through to "
        "today tomorrow under was we were what when where which while who why will with "
        "would yesterday you your"
    ),
    "es": _words(
        "a ahora antes ayer ayuda como con cuando cuándo cómo de del despues después "
        "donde dónde el ellas ellos en entre es esa ese esta estar este favor fue fueron "
        "haber hacer hoy la las los mañana me mi nosotras nosotros o para pero por porque "
        "porqué que qué recientemente ser si sobre son tener tu tus un una unas unos "
        "usted ustedes y yo"
    ),
    "pt": _words(
        "a agora ajuda amanhã antes as com como da de depois do e ela elas ele eles em "
        "entre essa esse esta estar este eu favor fazer foi foram hoje mas me meu minha "
        "nos nós o onde ontem os ou para por porque porquê quando que quê recentemente se "
        "ser sobre são ter um uma umas uns você vocês é"
    ),
    "ar": _words(
        "أصبح أنا أو أين إلى ال الآن الى اليوم امس ب بالأمس بعد بل بين تكون تلك ثم ذلك "
        "ساعد صار على عن غدا فضلا في قبل ك كان كانت كيف ل لكن لماذا مؤخرا ماذا متى مع "
        "ممكن من من نحن هذا هذه هل هم هنا هناك هو هي و يكون يمكن"
    ),
    "ko": _words(
        "가 가다 같이 거 거기 것 곳 과 그 그것 그녀 그들 그래서 그러나 그러면 그런데 "
        "그리고 까지 께 나 나는 나를 나중 내가 내일 너 너무 누구 는 대로 더 도 되다 등 때 "
        "또 또는 로 를 마다 만 많이 매우 무엇 뭐 밖에 보다 부탁 부터 분 수 아까 아니다 "
        "아주 어디 어떤 어떻게 어제 언제 없다 에 에게 에서 여기 오늘 오다 와 왜 우리 으로 "
        "은 을 의 이 이것 이다 있다 잘 저 저것 저기 저희 전에 정말 제발 좀 주다 중 지금 "
        "처럼 최근 하다 하지만 한테"
    ),
    "ja": _words(
        "あそこ あの ある あれ いつ いる から ここ こと この これ さっき しかし した して "
        "する そこ そして その それ ため だけ できる です でも どう どこ どれ なぜ なる "
        "の ます また まで もの より 今 今日 何 前 後 明日 昨日 最近 誰"
    ),
    "zh": _words(
        "与 东西 为什么 之前 之后 也 了 事 事情 什么 今天 他 他们 以前 以后 会 但 但是 你 "
        "你们 做 再 刚才 到 去 又 只 可以 吗 吧 呀 告诉 呢 和 哪个 哪些 啊 啦 嘛 因为 在 "
        "地 多少 她 如果 它 就 帮 帮忙 得 怎么 想 我 我们 或 所以 才 找 把 明天 昨天 是 "
        "最近 有 来 现在 用 的 看 着 给 而 能 虽然 被 要 让 说 请 过 还 这 这个 这些 那 "
        "那个 那些 都"
    ),
}
STOP_WORDS: frozenset[str] = frozenset().union(*STOP_WORDS_BY_LANGUAGE.values())

#: Korean particles stripped from the end of a Hangul piece, longest first
KOREAN_PARTICLES: tuple[str, ...] = (
    "에서",
    "으로",
    "에게",
    "한테",
    "처럼",
    "같이",
    "보다",
    "까지",
    "부터",
    "마다",
    "밖에",
    "대로",
    "은",
    "는",
    "이",
    "가",
    "을",
    "를",
    "의",
    "에",
    "로",
    "와",
    "과",
    "도",
    "만",
)

#: JavaScript's ``\s`` (what the pieces are split on, besides punctuation)
_JS_SPACE = frozenset(
    "\t\n\v\f\r \u00a0\u1680\u2028\u2029\u202f\u205f\u3000\ufeff"
    + "".join(chr(c) for c in range(0x2000, 0x200B))
)
_KANA = re.compile("[\u3040-\u30ff]")
_HAN = re.compile("[\u4e00-\u9fff]")
_HANGUL = re.compile("[\uac00-\ud7af\u3131-\u3163]")
_HANGUL_SYLLABLE = re.compile("[\uac00-\ud7af]")
_JAPANESE_PARTS = re.compile(
    "[a-z0-9_]+|[\u30a0-\u30ff\u30fc]+|[\u4e00-\u9fff]+|[\u3040-\u309f]{2,}"
)
_ASCII_WORD = re.compile("[a-z0-9_]+", re.IGNORECASE)


def utf16_units(text: str) -> int:
    """JavaScript's ``length``: characters beyond the BMP count twice."""
    return len(text) + sum(1 for c in text if ord(c) > 0xFFFF)


def _js_trim(text: str) -> str:
    start, end = 0, len(text)
    while start < end and text[start] in _JS_SPACE:
        start += 1
    while end > start and text[end - 1] in _JS_SPACE:
        end -= 1
    return text[start:end]


def segments(text: str) -> list[str]:
    """The trimmed, lowercased query's pieces between whitespace and punctuation."""
    out: list[str] = []
    current: list[str] = []
    for c in _js_trim(text).lower():
        if c in _JS_SPACE or unicodedata.category(c).startswith("P"):
            if current:
                out.append("".join(current))
                current = []
        else:
            current.append(c)
    if current:
        out.append("".join(current))
    return out


def _strip_particle(token: str) -> str | None:
    for particle in KOREAN_PARTICLES:
        if utf16_units(token) > utf16_units(particle) and token.endswith(particle):
            return token[: -len(particle)]
    return None


def _useful_korean_stem(stem: str) -> bool:
    if _HANGUL_SYLLABLE.search(stem):
        return utf16_units(stem) >= 2
    return bool(_ASCII_WORD.fullmatch(stem))


def _bigrams(chars: str | list[str]) -> list[str]:
    return [chars[i] + chars[i + 1] for i in range(len(chars) - 1)]


def _tokens(query: str) -> list[str]:
    tokens: list[str] = []
    for piece in segments(query):
        if _KANA.search(piece):
            for part in _JAPANESE_PARTS.findall(piece):
                tokens.append(part)
                if all(_HAN.match(c) for c in part):
                    tokens += _bigrams(part)
        elif _HAN.search(piece):
            chars = [c for c in piece if _HAN.match(c)]
            tokens += chars
            tokens += _bigrams(chars)
        elif _HANGUL.search(piece):
            stem = _strip_particle(piece)
            korean = STOP_WORDS_BY_LANGUAGE["ko"]
            if piece not in korean and not (stem is not None and stem in korean):
                tokens.append(piece)
            if stem and stem not in korean and _useful_korean_stem(stem):
                tokens.append(stem)
        else:
            tokens.append(piece)
    return tokens


def is_stop_word(token: str) -> bool:
    return token in STOP_WORDS


def _valid(token: str) -> bool:
    if not token:
        return False
    if token.isascii() and token.isalpha() and len(token) < 3:
        return False
    if token.isascii() and token.isdigit():
        return False
    return not all(unicodedata.category(c)[0] in "PS" for c in token)


def extract_keywords(query: str) -> list[str]:
    """The query's distinct keywords, in order."""
    seen: set[str] = set()
    out: list[str] = []
    for token in _tokens(query):
        if is_stop_word(token) or not _valid(token) or token in seen:
            continue
        seen.add(token)
        out.append(token)
    return out
