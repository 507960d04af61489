"""The default BM25 tokenizer (SPEC §3) and the identity a saved index records for its tokenizer."""
from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable

# A compact English stopword list (the union of the classic SMART/Lucene short lists).
STOPWORDS = frozenset(
    ["a", "about", "above", "after", "again", "against", "all", "am", "an", "and", "any", "are", "aren", "as", "at",
     "be", "because", "been", "before", "being", "below", "between", "both", "but", "by", "can", "cannot", "could",
     "couldn", "did", "didn", "do", "does", "doesn", "doing", "don", "down", "during", "each", "few", "for", "from",
     "further", "had", "hadn", "has", "hasn", "have", "haven", "having", "he", "her", "here", "hers", "herself", "him",
     "himself", "his", "how", "i", "if", "in", "into", "is", "isn", "it", "its", "itself", "just", "let", "ll", "me",
     "more", "most", "mustn", "my", "myself", "no", "nor", "not", "now", "of", "off", "on", "once", "only", "or",
     "other", "ought", "our", "ours", "ourselves", "out", "over", "own", "re", "same", "shan", "she", "should",
     "shouldn", "so", "some", "such", "than", "that", "the", "their", "theirs", "them", "themselves", "then", "there",
     "these", "they", "this", "those", "through", "to", "too", "under", "until", "up", "ve", "very", "was", "wasn",
     "we", "were", "weren", "what", "when", "where", "which", "while", "who", "whom", "why", "will", "with", "won",
     "would", "wouldn", "you", "your", "yours", "yourself", "yourselves"]
)

_TOKEN_RE = re.compile(r"[^\W_]+", re.UNICODE)  # runs of Unicode letters or digits
# Invisible format characters that split or hide words when pasted: zero-width space/non-joiner/
# joiner, word joiner, invisible operators, soft hyphen, BOM, Mongolian vowel separator.
_INVISIBLE = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\u2061\u2062\u2063\u2064\u00ad\ufeff\u180e"))
# Bump when default_tokenizer's output can change: a sidecar saved by another version is rebuilt.
TOKENIZER_VERSION = 2

Tokenizer = Callable[[str], list[str]]


def normalize_text(text: str) -> str:
    """Strip invisible characters, then NFKC + casefold (NFKC again: casefold can denormalise).

    NFC and NFD spellings, full-width forms and ligatures, and words split by a zero-width space or
    soft hyphen all become the same string.
    """
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text.translate(_INVISIBLE)).casefold())


def default_tokenizer(text: str) -> list[str]:
    """Normalise, split on anything not a letter or digit, drop 1-char tokens and stopwords.

    `"INV-8842"` → `["inv", "8842"]`. No stemming (SPEC §3).
    """
    return [t for t in _TOKEN_RE.findall(normalize_text(text)) if len(t) >= 2 and t not in STOPWORDS]


def tokenizer_id(tokenizer: Tokenizer) -> str:
    """The identity a saved index records, so one saved with another tokenizer is not loaded."""
    if tokenizer is default_tokenizer:
        return f"default-v{TOKENIZER_VERSION}"
    name = getattr(tokenizer, "name", None)
    if name:
        return str(name)
    return f"{getattr(tokenizer, '__module__', '?')}.{getattr(tokenizer, '__qualname__', repr(tokenizer))}"


# Store-level analysers: "plain" is SPEC §3's default; "english-stem" adds the Snowball English
# stemmer (PyStemmer, the Porter2 algorithm Lucene's English analyzer also uses) after it.
ANALYZERS = ("plain", "english-stem")


class StemmingTokenizer:
    """`default_tokenizer`, then Snowball English stems: "invoices" → "invoic", "studies" → "studi"."""

    name = f"english-stem-v{TOKENIZER_VERSION}"

    def __init__(self):
        import threading

        self._local = threading.local()  # a Stemmer object keeps a cache and is not thread-safe

    def _stemmer(self):
        stemmer = getattr(self._local, "stemmer", None)
        if stemmer is None:
            try:
                import Stemmer
            except ImportError:  # pragma: no cover - pinned in requirements.txt
                raise ImportError("the english-stem analyzer needs PyStemmer: pip install PyStemmer==3.1.0") from None
            stemmer = self._local.stemmer = Stemmer.Stemmer("english")
        return stemmer

    def __call__(self, text: str) -> list[str]:
        return self._stemmer().stemWords(default_tokenizer(text))

    def __repr__(self) -> str:
        return f"StemmingTokenizer({self.name})"


_STEMMING = None


def make_tokenizer(analyzer: str | None) -> Tokenizer:
    """The tokenizer of a store-level analyzer (`plain` or `english-stem`); ValueError otherwise."""
    global _STEMMING
    if analyzer in (None, "plain"):
        return default_tokenizer
    if analyzer == "english-stem":
        if _STEMMING is None:
            _STEMMING = StemmingTokenizer()
        return _STEMMING
    raise ValueError(f"analyzer {analyzer!r} is not one of {', '.join(ANALYZERS)}")


def analyzer_of(tokenizer: Tokenizer) -> str:
    return "english-stem" if isinstance(tokenizer, StemmingTokenizer) else "plain"


def reads_by_line(tokenizer: Tokenizer) -> bool:
    """Whether `tokenizer(a + "\\n" + b) == tokenizer(a) + tokenizer(b)` for all texts a, b — true of the store
    analysers: a line break is not a letter or digit (no token spans it), every step of `normalize_text` maps it
    to itself and treats the text on either side apart (translate and casefold act per character; NFKC leaves
    U+000A unchanged and composes nothing across it: it is a starter in no composition pair), and the stemmer
    reads one token at a time. A tokenizer of the caller's own is not assumed to."""
    return tokenizer is default_tokenizer or isinstance(tokenizer, StemmingTokenizer)


class LineTokens:
    """`tokenizer` over a text line by line, each line's tokens remembered (for `reads_by_line` tokenizers only,
    where this gives exactly `tokenizer(text)`). A document read in its context holds up to three of its
    neighbours' texts, and those neighbours are documents of their own, indexed in the same write or a recent
    one: each is tokenised once, not four times. Bounded: two generations of at most `max_tokens` remembered
    tokens each (the newer is kept when it fills). A cache of a pure function, so writers racing on it can only
    tokenise a line twice."""

    def __init__(self, tokenizer: Tokenizer, max_tokens: int = 250_000):
        self.tokenizer = tokenizer
        self.max_tokens = max_tokens
        self._new: dict[str, tuple[str, ...]] = {}  # tuples: the collector stops tracking them (lists it walks)
        self._old: dict[str, tuple[str, ...]] = {}
        self._held = 0  # tokens remembered in `_new`

    def __call__(self, text: str) -> list[str]:
        out: list[str] = []
        new, old = self._new, self._old
        for line in text.split("\n"):
            tokens = new.get(line)
            if tokens is None:
                tokens = old.get(line)
                if tokens is None:
                    tokens = tuple(self.tokenizer(line))
                new[line] = tokens
                self._held += len(tokens) + 1
            out += tokens
        if self._held > self.max_tokens:
            self._old, self._new, self._held = self._new, {}, 0
        return out
