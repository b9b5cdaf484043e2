"""Which lab (vendor) made a model, from the names each source gives it.

A lab is keyed by its name with case and punctuation dropped, so OpenRouter's author `x-ai`,
models.dev's provider `xai` and Epoch AI's organisation "xAI" are one lab without any list.
Names that differ more ("Google DeepMind" for `google`, "Alibaba" for `qwen`) are written
once in the `[labs]` table of `sources/aliases.toml`.

Whether a models.dev listing is the lab's own or a host's copy comes from models.dev's own
data: its OpenRouter mirror names the OpenRouter author of each model family, so the family
of any listing gives its lab; the listing is the lab's own when its provider is that lab.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache

from bench_pipeline.registry.text import MEMO, clean, letters_and_digits


@lru_cache(maxsize=MEMO)
def lab_key(name: str) -> str:
    """A name as a lab key: NFKC, case folded, letters and digits only (remembered: every
    listing of a provider asks for the same few names)."""
    return letters_and_digits(clean(name))


@dataclass(frozen=True)
class Labs:
    """Lab keys by the names sources use, and the labs OpenRouter or models.dev know.

    Attributes:
        names: a source's name (as a lab key) → the lab it names, from the alias file.
        known: labs that OpenRouter lists as an author (the labs a canonical id can name).
        families: models.dev family → lab, from models.dev's OpenRouter mirror.
    """

    names: Mapping[str, str] = field(default_factory=dict)
    known: frozenset[str] = frozenset()
    families: Mapping[str, str] = field(default_factory=dict)
    _labs: dict[str, str | None] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )  # `lab`'s answers, by name: the tables above never change

    @classmethod
    def from_table(cls, table: Mapping[str, Iterable[str]]) -> Labs:
        """`{"google": ["Google DeepMind", ...]}` as written in the alias file."""
        names = {}
        for lab, others in table.items():
            for other in [lab, *others]:
                names[lab_key(other)] = lab_key(lab)
        return cls(names=names)

    def with_catalogue(
        self, authors: Iterable[str], mirror: Iterable[tuple[str | None, str]]
    ) -> Labs:
        """Add the labs OpenRouter lists and the family → author pairs of models.dev's
        OpenRouter mirror (a family goes to the author most of its listings name)."""
        known = frozenset(self.lab(a) for a in authors if a) - {None}
        votes: dict[str, Counter[str]] = defaultdict(Counter)
        for family, author in mirror:
            lab = self.lab(author)
            if family and lab:
                votes[family][lab] += 1
        families = {}
        for family, counter in votes.items():
            (lab, count), *rest = counter.most_common()
            if not rest or count > rest[0][1]:
                families[family] = lab
        return Labs(names=self.names, known=known, families=families)  # type: ignore[arg-type]

    def lab(self, name: str | None) -> str | None:
        """The lab a name stands for; for a list ("Google DeepMind,Google") the first known."""
        if not name:
            return None
        try:  # one dict lookup for the names seen before (nearly every call)
            return self._labs[name]
        except KeyError:
            found = self._labs[name] = self._lab(name)
            return found

    def _lab(self, name: str) -> str | None:
        keys = [self.names.get(lab_key(p), lab_key(p)) for p in name.split(",") if lab_key(p)]
        for key in keys:
            if key in self.known:
                return key
        return keys[0] if keys else None

    def may_own(self, provider: str) -> bool:
        """Whether `listing_lab` can call one of `provider`'s listings the lab's own: it does
        only when the lab it finds, a known lab or a family's, is the provider's lab."""
        lab = self.lab(provider)
        return lab is not None and (lab in self.known or lab in self.families.values())

    def listing_lab(
        self, provider: str, model_id: str, family: str | None
    ) -> tuple[str | None, bool]:
        """(the lab of a models.dev listing, whether the provider is that lab itself).

        The model id's own prefix ("Qwen/QwQ-32B", "anthropic.claude-…") names the lab first;
        then the listing's family; then the provider, where OpenRouter knows it as a lab.
        """
        provider_lab = self.lab(provider)
        lab = None
        for joiner in ("/", "."):
            if joiner in model_id:
                prefix = self.lab(model_id.split(joiner, 1)[0])
                if prefix in self.known:
                    lab = prefix
                    break
        if lab is None and family:
            lab = self.families.get(family)
        if lab is None and provider_lab in self.known:
            lab = provider_lab
        return lab, lab is not None and lab == provider_lab
