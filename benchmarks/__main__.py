"""`python -m benchmarks [--only NAME] [options]`: benchmarks (NAME below).

1. ingest: the ingest swap (`benchmarks.ingest_swap`; `--rows N`, `--parser P`).
2. indices: the index family (`benchmarks.index_family`; `--models N`, `--seed S`).
3. site: the static site build for 2,000 and 20,000 synthetic models, its heaviest pages at
   100,000 (`benchmarks.site_build`).
4. pairs: paired ranks, 4,950 exact sign-flip tests at n = 40 against scipy
   (`benchmarks.pairs`; its own options through `python -m benchmarks.pairs`).
5. exact: exact paired tests at any size (`benchmarks.exact_pairs`): one test at n = 500 on
   0/1 outcomes against a plain Python count, the SWE-bench board end to end, and
   Navigator-size real-valued tests against a plain numpy meet in the middle.
6. calls: 2,000 model calls at concurrency 32 against a 50 ms loopback server, as a ratio of
   bare httpx with the same connection split, beside raw asyncio streams and the ideal rate
   (`benchmarks.model_calls`; options through `python -m benchmarks.model_calls`).
7. writer: the warehouse row writer (`core.writer.insert_rows`) against `executemany` at 1,000
   and 100,000 rows of 30 text columns, beside DuckDB's own insert of a ready Arrow table
   (`benchmarks.row_writer`; `--repeat` applies).
8. bradley: the Bradley–Terry fit at 150 groups against a plain scipy fit
   (`benchmarks.bradley_terry`; `--repeat` applies).
9. cache: the response cache at 50,000 entries (about 1 GB): a reader process's peak memory
   against a process that only imports the provider layer (`benchmarks.response_cache`).
10. release: release rendering (CSV and JSON), rank columns and the private-text check at 50×
    (400,000 rows), each against the row loop it replaced (`benchmarks.release_checks`;
    `--repeat` applies).
11. noop: a `bench run` that changes nothing against a fresh one on the recorded snapshots,
    with the Dagster events of each (`benchmarks.noop_rerun`; `--repeat` reruns).
12. scale: `bench run` on the recorded snapshots enlarged 1×, 10× and 50× (time, peak memory
   and per-step seconds per 1× of data; `benchmarks.pipeline_scale`, its options through
   `python -m benchmarks.pipeline_scale`, e.g. `--multipliers 1,10 --profile`).
13. boards: the SWE-bench item boards enlarged 10× and 50× (31k and 780k pairs a board), every
   pair at once against the per-pair path it replaced (`benchmarks.item_boards`).
14. card: the reporting card of a 134 × 500 and a 500 × 500 pass/fail board against a plain
   numpy implementation of its bootstrap (`benchmarks.card`).
15. store: model runs through the PostgreSQL run store on 1, 2 and 4 `bench worker`
   processes against the model server's ideal rate, flush p95, the publisher's merge of
   10,000 and 100,000 runs, and an analyst reading all the while (`benchmarks.run_store`;
   its options through `python -m benchmarks.run_store`).

`--repeat K` and `--profile` apply to whichever benchmarks run; without `--repeat`, each
benchmark keeps its own default (3 for ingest, 5 for indices).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from benchmarks import (
    bradley_terry,
    card,
    exact_pairs,
    index_family,
    ingest_swap,
    item_boards,
    model_calls,
    noop_rerun,
    pairs,
    pipeline_scale,
    release_checks,
    response_cache,
    row_writer,
    run_store,
    site_build,
)

BENCHMARKS = (
    "ingest", "indices", "site", "pairs", "exact", "calls", "writer", "bradley", "cache",
    "release", "noop", "scale", "boards", "card", "store",
)  # fmt: skip


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description="Run the benchmarks in turn: " + ", then ".join(BENCHMARKS) + ".",
        add_help=False,
        allow_abbrev=False,  # leave the ingest benchmark's options whole for it to parse
        epilog="Any other option is passed to the ingest benchmark; its options follow.",
    )
    parser.add_argument("-h", "--help", action="store_true", help="show this help and exit")
    parser.add_argument("--only", choices=BENCHMARKS, help="run this benchmark alone")
    parser.add_argument(
        "--repeat",
        type=int,
        help=f"runs of each variant, best shown (default: {ingest_swap.REPEAT} for ingest, "
        f"{index_family.REPEAT} for indices)",
    )
    parser.add_argument(
        "--profile", action="store_true", help="cProfile each benchmark's measured path"
    )
    index_family.add_arguments(parser.add_argument_group("indices benchmark"))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args, ingest_argv = parser.parse_known_args(sys.argv[1:] if argv is None else argv)
    if args.help:
        parser.print_help()
        print("\ningest benchmark (benchmarks.ingest_swap):")
        try:
            ingest_swap.main(["--help"])
        except SystemExit:
            pass
        return 0
    index_options_given = (args.models, args.seed) != (index_family.MODELS, index_family.SEED)
    if args.only in ("site", "writer", "bradley", "cache", "release", "noop") and (
        ingest_argv or index_options_given
    ):
        parser.error(f"the {args.only} benchmark takes only --repeat")
    if args.only == "indices" and ingest_argv:
        parser.error(f"not options of the indices benchmark: {' '.join(ingest_argv)}")
    if args.only == "ingest" and index_options_given:
        parser.error("--models and --seed apply to the indices benchmark only")
    if args.only in ("pairs", "exact", "calls", "cache", "scale", "boards", "card", "store") and (
        ingest_argv or index_options_given or args.repeat is not None or args.profile
    ):
        parser.error(f"the {args.only} benchmark takes no options here (see its module)")

    shared = ["--repeat", str(args.repeat)] if args.repeat is not None else []
    runs = {
        "ingest": lambda: ingest_swap.main(
            [*ingest_argv, *shared, *(["--profile"] if args.profile else [])]
        ),
        "indices": lambda: index_family.run(
            args.models,
            args.seed,
            index_family.REPEAT if args.repeat is None else args.repeat,
            args.profile,
        ),
        "site": lambda: site_build.main(shared),
        "pairs": lambda: pairs.main([]),
        "exact": lambda: exact_pairs.main([]),
        "calls": lambda: model_calls.main([]),
        "writer": lambda: row_writer.main(shared),
        "bradley": lambda: bradley_terry.main(shared),
        "cache": lambda: response_cache.main([]),
        "release": lambda: release_checks.main(shared),
        "noop": lambda: noop_rerun.main(shared),
        "scale": lambda: pipeline_scale.main([]),
        "boards": lambda: item_boards.main([]),
        "card": lambda: card.main([]),
        "store": lambda: run_store.main([]),
    }
    # Every benchmark runs even when an earlier one misses its goal (the exit status still
    # says so), so one slow figure never hides the others.
    missed = []
    for name in [args.only] if args.only else BENCHMARKS:
        if runs[name]():
            missed.append(name)
        if not args.only:
            print()
    if missed:
        print("goals missed or failed: " + ", ".join(missed))
    return 1 if missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
