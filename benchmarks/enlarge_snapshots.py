"""Enlarge the recorded snapshots (`sources/snapshots/*`) N times, each file in its own format.

Copy 0 of every record is the recorded one; copies 1..N-1 carry the same record under a new,
plausible name (`gpt-4o` → `gpt-4o-aurora-3`, `GPT-4o` → `GPT-4o Aurora 3`): the same
suffix for the same copy in every source, so the registry can still match one model across
sources. Numbers (ratings, scores, prices) are jittered a little from a fixed seed, so the
enlarged data is deterministic and not N identical columns. Files the parsers read one model
at a time (OpenRouter endpoints) are copied N times under new names.

The output folder has the layout of `sources/snapshots` and is meant for `BENCH_SNAPSHOTS`.
"""

from __future__ import annotations

import csv
import io
import json
import math
import random
import shutil
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

SEED = 20_261_201
WORDS = ("aurora", "basalt", "cedar", "delta", "ember", "fjord", "garnet", "harbor", "iris")


def suffix(copy: int) -> tuple[str, str]:
    """The id suffix and the display-name suffix of copy `copy` (copy 0 has none)."""
    if copy == 0:
        return "", ""
    word = WORDS[copy % len(WORDS)]
    number = copy // len(WORDS) + 1
    return f"-{word}-{number}", f" {word.title()} {number}"


def renamed(value: Any, copy: int) -> Any:
    """An identifier or display name of copy `copy`: ids get `-word-n`, names ` Word n`;
    text with a trailing parenthesis (`Claude 4.7 (xhigh)`) keeps it last."""
    if not isinstance(value, str) or not value or copy == 0:
        return value
    id_suffix, name_suffix = suffix(copy)
    if " " not in value.strip():
        return value + id_suffix
    head, paren, tail = value.partition(" (")
    return head + name_suffix + (paren + tail if paren else "")


def jittered(value: Any, rng: random.Random, copy: int) -> Any:
    """A positive number moved by up to ±2% (copy 0 unchanged); text numbers stay text.
    Zero and negative values (`-1` is OpenRouter's "variable pricing") keep their meaning."""
    if copy == 0 or isinstance(value, bool):
        return value
    if isinstance(value, int | float) and value > 0:
        moved = value * (1 + rng.uniform(-0.02, 0.02))
        return round(moved) if isinstance(value, int) else moved
    if isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            return value
        if number > 0 and math.isfinite(number):
            return repr(number * (1 + rng.uniform(-0.02, 0.02)))
    return value


def _csv(
    path: Path, out: Path, copies: int, rng: random.Random, names: set[str], numbers: set[str]
) -> None:
    with path.open(newline="", encoding="utf-8-sig") as handle:
        reader = csv.DictReader(handle)
        fields = list(reader.fieldnames or [])
        rows = list(reader)
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fields, lineterminator="\n")
    writer.writeheader()
    for copy in range(copies):
        for row in rows:
            writer.writerow(
                {
                    k: renamed(v, copy)
                    if k in names
                    else jittered(v, rng, copy)
                    if k in numbers and v
                    else v
                    for k, v in row.items()
                }
            )
    out.write_text(buffer.getvalue(), encoding="utf-8")


CSV_NAMES = {"Model version", "Display name", "Model name", "Name", "Model", "id", "UUID"}
CSV_NUMBERS = {"mean_score", "Accuracy", "Accuracy mean", "Global average", "Score", "ECI Score"}


def _arena_leaderboard(document: dict, copies: int, rng: random.Random) -> dict:
    return {
        category: {
            renamed(key, copy): _moved_together(entry, rng, copy)
            for copy in range(copies)
            for key, entry in models.items()
        }
        for category, models in document.items()
    }


def _moved_together(entry: dict, rng: random.Random, copy: int) -> dict:
    """Every number of one rating moved by the same factor, so the rating stays inside its
    own interval (validation quarantines a rating outside it)."""
    state = rng.getstate()
    moved = {}
    for key, value in entry.items():
        rng.setstate(state)  # the same draw for each field
        moved[key] = jittered(value, rng, copy)
    return moved


def _arena_models(document: list, copies: int, rng: random.Random) -> list:
    return [
        entry
        | {
            "name": renamed(entry.get("name"), copy),
            "model_api_name": renamed(entry.get("model_api_name"), copy),
            "input_token_price": jittered(entry.get("input_token_price"), rng, copy),
        }
        for copy in range(copies)
        for entry in document
    ]


def _models_dev(document: dict, copies: int, rng: random.Random) -> dict:
    out = {}
    for provider_id, provider in document.items():
        models = {}
        for copy in range(copies):
            for model_id, model in provider["models"].items():
                cost = model.get("cost")
                models[renamed(model_id, copy)] = model | {
                    "id": renamed(model.get("id"), copy),
                    "name": renamed(model.get("name"), copy),
                    **(
                        {"cost": {k: jittered(v, rng, copy) for k, v in cost.items()}}
                        if cost
                        else {}
                    ),
                }
        out[provider_id] = provider | {"models": models}
    return out


def _openrouter_models(document: dict, copies: int, rng: random.Random) -> dict:
    data = []
    for copy in range(copies):
        for model in document["data"]:
            pricing = model.get("pricing") or {}
            data.append(
                model
                | {
                    "id": renamed(model.get("id"), copy),
                    "canonical_slug": renamed(model.get("canonical_slug"), copy),
                    "name": renamed(model.get("name"), copy),
                    "pricing": {k: jittered(v, rng, copy) for k, v in pricing.items()},
                }
            )
    return document | {"data": data, "total_count": len(data)}


def _swebench(document: dict, copies: int, rng: random.Random) -> dict:
    boards = []
    for board in document["leaderboards"]:
        results = []
        for copy in range(copies):
            for entry in board["results"]:
                tags = entry.get("tags")
                results.append(
                    entry
                    | {
                        "name": renamed(entry.get("name"), copy),
                        "folder": renamed(entry.get("folder"), copy),
                        "resolved": jittered(entry.get("resolved"), rng, copy),
                        "tags": [
                            "Model: " + renamed(t[len("Model: ") :], copy)
                            if isinstance(t, str) and t.startswith("Model: ")
                            else t
                            for t in tags
                        ]
                        if isinstance(tags, list)
                        else tags,
                    }
                )
        boards.append(board | {"results": results})
    return document | {"leaderboards": boards}


def _endpoints(document: dict, copy: int) -> dict:
    data = document["data"]
    endpoints = [
        e | {"model_id": renamed(e.get("model_id"), copy)} for e in data.get("endpoints", [])
    ]
    return document | {"data": data | {"id": renamed(data.get("id"), copy), "endpoints": endpoints}}


def _eval_copy(path: Path, out: Path, copy: int) -> None:
    """An inspect_ai `.eval` log whose model (its one system) is copy `copy`'s; every other
    member as it is."""
    with zipfile.ZipFile(path) as source, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as sink:
        for member in source.namelist():
            content = source.read(member)
            if member == "header.json":
                header = json.loads(content)
                header["eval"]["model"] = renamed(header["eval"]["model"], copy)
                content = json.dumps(header).encode()
            sink.writestr(member, content)


JSON_ENLARGERS: dict[str, Callable[[Any, int, random.Random], Any]] = {
    "arena/scatterplot-data.json": _arena_models,
    "models_dev/api.json": _models_dev,
    "openrouter_models/models.json": _openrouter_models,
    "swebench/leaderboards.json": _swebench,
}


def enlarge(source: Path, target: Path, copies: int, seed: int = SEED) -> dict[str, int]:
    """Write `source` enlarged `copies` times into `target`; return bytes written per source."""
    rng = random.Random(seed)
    target.mkdir(parents=True, exist_ok=True)
    written: dict[str, int] = {}
    for path in sorted(source.rglob("*")):
        if not path.is_file():
            continue
        relative = path.relative_to(source).as_posix()
        out = target / relative
        out.parent.mkdir(parents=True, exist_ok=True)
        if relative.startswith("openrouter_endpoints/") and path.suffix == ".json":
            document = json.loads(path.read_bytes())
            for copy in range(copies):
                name = out if copy == 0 else out.with_stem(out.stem + suffix(copy)[0])
                name.write_text(json.dumps(_endpoints(document, copy), indent=1))
        elif relative in JSON_ENLARGERS:
            document = json.loads(path.read_bytes())
            out.write_text(json.dumps(JSON_ENLARGERS[relative](document, copies, rng), indent=1))
        elif relative.startswith("arena/leaderboard-") and path.suffix == ".json":
            document = json.loads(path.read_bytes())
            out.write_text(json.dumps(_arena_leaderboard(document, copies, rng), indent=1))
        elif path.suffix == ".csv":
            _csv(path, out, copies, rng, CSV_NAMES, CSV_NUMBERS)
        elif path.suffix == ".eval":  # an inspect_ai log: one system, renamed per copy
            for copy in range(copies):
                name = out if copy == 0 else out.with_stem(out.stem + suffix(copy)[0])
                _eval_copy(path, name, copy)
        else:
            shutil.copyfile(path, out)
    for path in target.rglob("*"):
        if path.is_file():
            top = path.relative_to(target).parts[0]
            written[top] = written.get(top, 0) + path.stat().st_size
    return written
