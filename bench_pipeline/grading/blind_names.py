"""The names a blind copy removes (`grading.blinding` redacts them), from one home each.

- the setups the warehouse has loaded: each one's API id and its model part, company, model
  record and label (any run's names, not only the candidate's: an answer naming another
  model still says which models were compared);
- the model registry (`models`): each model's name and id, as `blinding.registry_names`
  keeps them;
- `sources/aliases.toml`: the names the `[labs]` table gives labs, and the reviewed
  `[blind_names]` table (labs, products and families: ChatGPT, Claude, Gemini, Copilot).
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import duckdb

from bench_pipeline.core import settings
from bench_pipeline.grading.blinding import BlindNames, registry_names

ALIAS_FILE = "aliases.toml"


def reviewed_names(path: Path) -> list[str]:
    """Every name of `[blind_names]` in `path`, and each name of `[labs]` written as a name
    (with a capital letter: "Google DeepMind", "Moonshot AI", "IBM"); the lowercase keys and
    spellings there are how sources key a lab ("cohere", "meta", "bailing"), ordinary words
    as often, and a lab that needs blinding by such a name has it in `[blind_names]`.

    Raises:
        ValueError: The file is not TOML, or a table holds something other than lists of
            names (naming the file, table and lab).
    """
    try:
        document = tomllib.loads(path.read_text("utf-8"))
    except tomllib.TOMLDecodeError as error:
        raise ValueError(f"{path}: not TOML: {error}") from None
    names = []
    for table in ("labs", "blind_names"):
        for lab, others in document.get(table, {}).items():
            if not isinstance(others, list) or not all(isinstance(o, str) for o in others):
                raise ValueError(f"{path}: [{table}] {lab} must be a list of names")
            names += [o for o in others if table == "blind_names" or o != o.lower()]
    return names


def load_blind_names(conn: duckdb.DuckDBPyConnection, sources: Path | None = None) -> BlindNames:
    """The names to redact: the warehouse's setups and registry, and the reviewed names of
    `sources/aliases.toml` (`sources`: the folder holding it; default the repository's)."""
    names = reviewed_names((sources or settings.sources_dir()) / ALIAS_FILE)
    for api_id, company, record, label in conn.execute(
        "SELECT DISTINCT api_id, company, model_record, label FROM setups"
    ).fetchall():
        names += [api_id, api_id.rsplit("/", 1)[-1], company, record, label]
    for model_id, name in conn.execute("SELECT model_id, name FROM models").fetchall():
        names += registry_names(name, model_id)
    return BlindNames.of(names)
