"""``blendin anonymize`` and ``blendin apply``: make a release, or re-apply a saved one."""

from __future__ import annotations

import json
from pathlib import Path

import click

from blendin.cli import (
    INPUT_HELP,
    main,
    read_options,
    refuse_text_options,
    related_inputs,
    with_options,
)
from blendin.cli.database import release_database_options, table_options
from blendin.errors import BlendinError
from blendin.outputs import check_paths, together

#: a DuckDB file named as -o: the release goes into it as a table
DUCKDB_FILES = (".duckdb", ".ddb")


def _check_before_work(inputs: dict, output: str, *, force: bool,
                       output_delimiter: str | None, escape_formulas: bool = False,
                       solution: str | None = None, report: str | None = None,
                       engine: str = "embedded") -> None:
    """Every output path against every input and every other output, the folders, the
    files that exist, the output delimiter: all before any work is done."""
    # loaded when the command runs, so that blendin --help stays instant
    from blendin.engines.databases import hidden, is_database
    from blendin.io import output_delimiter as check_delimiter

    csv = _csv(output)
    for flag, given in (("--output-delimiter", output_delimiter is not None),
                        ("--escape-formulas", escape_formulas)):
        if given and not csv:  # (an .xlsx release stores text; Parquet and tables, values)
            raise BlendinError(f"{flag} writes a CSV release, and -o {hidden(output)!r} is not a "
                               "CSV file", fix=f"leave out {flag}, or give -o a .csv name")
    spark = engine == "spark"
    if is_database(output) and not output.lower().endswith(DUCKDB_FILES):
        output = None  # a table in a database: the SQL engine checks it before any work
    elif is_database(output):  # a DuckDB file: it holds the input or is an input's peer
        inputs = {k: v for k, v in inputs.items() if str(v) != output}
        output = None
    if spark and output is not None and output.lower().endswith(".xlsx"):
        raise BlendinError("--engine spark writes .parquet or .csv folders, not Excel",
                           fix="give -o a .parquet or .csv name, or use --engine embedded")
    remote = spark and output is not None and "://" in output  # Spark checks those itself
    if spark and output is not None and not remote and not output.lower().rstrip("/").endswith(
            (".parquet", ".csv")):  # (the generic message would offer .xlsx)
        raise BlendinError(f"cannot write {output!r} (-o): --engine spark writes a folder of "
                           "part files named .parquet or .csv",
                           fix="end the -o name with .parquet or .csv")
    check_paths(inputs, {"-o": (None if remote else output, "table"),
                         "--report": (report, "report"),
                         "--save-solution": (solution, "json")}, force=force, folders=spark)
    check_delimiter(output_delimiter)
    data = inputs.get("DATA", "")
    if "://" in str(data) or output is None or is_database(data):
        return
    if str(data).lower().endswith((".parquet", ".pq")) and not output.lower().endswith(
            ".parquet"):  # nested columns pass through to the release: CSV/Excel cannot
        import pyarrow as pa

        from blendin.io import Source, check_writable_types

        types = Source(data).types()
        check_writable_types(pa.schema(list(types.items())), Path(output).suffix.lower())


def _csv(output: str) -> bool:
    """Whether the release is written as CSV (its delimiter the input's by default)."""
    from blendin.engines.databases import is_database
    from blendin.io import CSV_SUFFIXES, _suffix

    return not is_database(output) and _suffix(Path(output.rstrip("/"))) in CSV_SUFFIXES


def _finish(result, output: str, *, delimiter: str | None,
            solution: str | None = None, report: str | None = None, original=None,
            escape_formulas: bool = False, report_options: dict | None = None) -> None:
    """Write the verified release (and the solution, the report); return their paths.

    The outputs of the run take their names together, once the last is written: a run
    that fails on any of them (a full disk, a file-size limit) leaves none (the release
    streamed by ``anonymize`` waits under its temporary name, see blendin.outputs)."""
    written = (result.written_table or
               result.write(output, delimiter=delimiter, escape_formulas=escape_formulas))
    saved = result.save_solution(solution) if solution else None
    reported = (result.report(report, original=original, **(report_options or {}))
                if report else None)
    return written, saved, reported


def _say(result, written, saved, reported, *, as_json: bool, quiet: bool) -> None:
    """What the run did: the summary (or the figures as JSON) and the files written."""
    if as_json:
        payload = result.to_dict()
        payload["output"] = str(written)
        if saved is not None:
            payload["solution"] = str(saved)
        if reported is not None:
            payload["report"] = str(reported)
        click.echo(json.dumps(payload, indent=2))
    elif not quiet:
        for warning in result.warnings:
            click.echo(f"warning: {warning}", err=True)
        click.echo(result.summary())
        extra = "".join(f"; {what} {path}" for what, path in (
            ("solution saved to", saved), ("report written to", reported)) if path)
        click.echo(f"wrote {written}{extra}")


def _report_options(report: str | None, external: str | None, on: str | None,
                    population: float | None) -> dict:
    """What --external, --on and --population add to the report (they need --report)."""
    given = [flag for flag, value in (("--external", external), ("--on", on),
                                      ("--population", population)) if value is not None]
    if given and report is None:

        raise BlendinError(f"{' and '.join(given)} only change the report, and no report "
                           "was asked for", fix="add --report report.html")
    if on is not None and external is None:
        raise BlendinError("--on names the columns to join --external on, and no --external "
                           "was given", fix="add --external voters.csv, or leave out --on")
    return {"external": external, "on": on, "population": population}


_COMMON = [
    # a folder is refused unless --engine spark (which writes one): see blendin/outputs.py
    click.option("-o", "--output", required=True, type=click.Path(),
                 help="Where to write the release: .csv, .parquet or .xlsx."),
    click.option("--suppressed", type=click.Choice(["drop", "keep"]), default="drop",
                 show_default=True,
                 help="Remove suppressed records, or keep them with * in every QI and their "
                 "sensitive values empty (shown, they would form a group anyone can read)."),
    click.option("--json", "as_json", is_flag=True,
                 help="Print the figures as JSON (levels, suppressed, classes, utility...)."),
    click.option("--quiet", "-q", is_flag=True, help="Print nothing and show no progress."),
    click.option("--delimiter", default=None,
                 help="Input CSV delimiter, e.g. ';' or '\\t' (default: spec's, else sniffed)."),
    click.option("--encoding", default=None,
                 help="Input text encoding, e.g. latin-1 (default: the spec's, else utf-8)."),
    click.option("--output-delimiter", default=None,
                 help="Delimiter of a CSV release (default: the input's, as --delimiter or "
                 "the spec's [input] delimiter gives it, else ',')."),
    click.option("--escape-formulas", is_flag=True,
                 help="CSV release: prefix ' to values starting with = + - @, tab or CR, so "
                 "spreadsheets do not run them as formulas (.xlsx always stores text)."),
    click.option("--force", is_flag=True,
                 help="Replace output files that already exist (never an input file)."),
    click.option("--strict", is_flag=True,
                 help="Stop, before any work, when a column looks like a direct identifier "
                 "(ssn, name, email, phone...) and the spec names it nowhere (by default: a "
                 "warning, and the column is released as it is)."),
    click.option("--normalize", default=None, metavar="STEPS",
                 help="Count sensitive values spelled differently as one: case, space, "
                 "unicode, comma-separated (default: the spec's [input] normalize)."),
    click.option("--keep-order", is_flag=True,
                 help="Release the rows in the source's order. By default they are shuffled: "
                 "in the source's order, anyone who holds the source can link released row "
                 "i to source row i."),
    click.option("--shuffle-seed", default=None, type=click.IntRange(min=0), metavar="N",
                 help="Shuffle the rows reproducibly (default: a fresh order every run; "
                 "whoever knows the seed can undo the shuffle)."),
    click.option("--engine", type=click.Choice(["embedded", "spark"]), default="embedded",
                 show_default=True,
                 help="Where rows are processed: in this process, in batches (embedded), or "
                 "on Spark (pip install \"blendin[spark]\"), which writes -o as a folder."),
    click.option("--spark-master", default=None, metavar="URL",
                 help="--engine spark: the cluster, e.g. spark://host:7077 (default: "
                 "local[*], every core of this machine)."),
    click.option("--spark-conf", multiple=True, metavar="KEY=VALUE",
                 help="--engine spark: a Spark setting, e.g. --spark-conf "
                 "spark.executor.memory=4g (repeatable)."),
]


def _engine(engine: str, spark_master: str | None, spark_conf: tuple[str, ...]):
    """The engine the options name (None: the default, embedded)."""
    if engine != "spark":
        if spark_master or spark_conf:
            raise BlendinError("--spark-master and --spark-conf need --engine spark",
                               fix="add --engine spark, or leave them out")
        return None
    conf = {}
    for item in spark_conf:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise BlendinError(f"--spark-conf {item!r} is not KEY=VALUE",
                               fix="pass e.g. --spark-conf spark.executor.memory=4g")
        conf[key.strip()] = value.strip()
    # loaded when the command runs, so that blendin --help stays instant
    from blendin.engines.spark import SparkEngine

    return SparkEngine(master=spark_master, conf=conf)




@main.command("anonymize")
@click.argument("data", type=click.Path(path_type=str), required=False)  # Spark: folders too
@click.option("--input", "inputs", multiple=True, metavar="NAME=FILE",
              help=INPUT_HELP + " Released together into the folder -o names, one file a "
              "table.")
@release_database_options
@click.option("--dry-run", is_flag=True,
              help="DATA in a database: search, release and check as usual, then roll it "
              "all back and print the SQL that ran. Nothing is written.")
@click.option("--output-table", default=None, metavar="NAME",
              help="Write the release as this table in the database -o names (the input's, "
              "say); it takes the name only after the check. An existing table is "
              "replaced only with --force.")
@click.option("--spec", "spec_path", required=True, type=click.Path(),
              help="The release spec (TOML): roles, hierarchies, privacy models, limits; or "
              "a project bundle (.zip) or its unpacked folder.")
@click.option("--algorithm", default=None,
              type=click.Choice(["auto", "optimal", "heuristic", "exhaustive", "binary",
                                 "datafly", "mondrian"]),
              help="Search algorithm (default: the spec's, else auto: optimal where the "
              "lattice is small enough, else heuristic).")
@click.option("--time-limit", default=None, type=click.FloatRange(min=0),
              help="Seconds the heuristic may search (default: the spec's, else 10).")
@click.option("--max-checks", default=None, type=click.IntRange(min=0),
              help="Node checks the heuristic may make (default: the spec's, else no limit).")
@click.option("--seed", default=None, type=click.IntRange(min=0),
              help="Seed of the heuristic's random moves (default: the spec's, else 0).")
@click.option("--recode-suppressed", is_flag=True, default=None,
              help="Release the suppressed records at a coarser node of their own where "
              "they form valid classes (the whole release still verified).")
@click.option("--metric", default=None,
              type=click.Choice(["loss", "gcp", "discernibility", "aecs", "precision",
                                 "entropy", "height", "arx-loss"]),
              help="Utility metric the search minimizes (default: the spec's, else loss).")
@click.option("--save-solution", "solution", default=None, type=click.Path(dir_okay=False),
              help="Also save the chosen levels and hierarchies as JSON, for blendin apply.")
@click.option("--report", default=None, type=click.Path(dir_okay=False),
              help="Also write an HTML report (utility, risk before and after, checks).")
@click.option("--policy", default=None,
              type=click.Choice(["absolute", "relative", "distribution", "suppression"]),
              help="How ties between equally good nodes are broken (default: the spec's).")
@click.option("--relaxed", is_flag=True, default=None,
              help="Mondrian: records equal to the median may go to either side.")
@click.option("--sets", is_flag=True, default=None,
              help="Mondrian: show category groups as sets {a,b} instead of their ancestor.")
@click.option("--group-column", is_flag=False, flag_value="group", default=None,
              metavar="[NAME]",
              help="Add a column (default name: group) with each record's equivalence class.")
@click.option("--original-row", "original_row", is_flag=False, flag_value="original_row",
              default=None, metavar="[NAME]",
              help="Add a column (default name: original_row) with the source row number. "
              "WARNING: anyone who holds the source can then link every released row back "
              "to its person; for internal use only.")
@click.option("--index-base", type=click.IntRange(0, 1), default=1, show_default=True,
              help="Number classes and rows from 1 (as spreadsheets) or 0 (as pandas and "
              "Mondrian outputs in the literature).")
@click.option("--external", default=None, type=click.Path(exists=True, dir_okay=False),
              help="An identified table (e.g. a voter list): the report shows the linking "
              "attack on the input and on the release.")
@click.option("--on", "external_on", default=None,
              help="Columns to join --external on, comma-separated (default: the "
              "quasi-identifiers both tables have).")
@click.option("--population", default=None, type=float,
              help="Size of the population the data was drawn from: the report adds the "
              "population-based risk (journalist, population uniques).")
@click.option("--person", default=None, metavar="COLUMN",
              help="The column naming each record's person (a patient id; overrides the "
              "spec's [attributes] person): classes count people, a person is released "
              "whole or not at all, and the column is never released.")
@with_options(_COMMON)
def anonymize_command(data: str, spec_path: str, algorithm: str | None, metric: str | None,
                      solution: str | None, report: str | None, policy: str | None,
                      relaxed: bool | None, sets: bool | None, group_column: str | None,
                      original_row: str | None, index_base: int,
                      time_limit: float | None, max_checks: int | None, seed: int | None,
                      recode_suppressed: bool | None, external: str | None,
                      external_on: str | None, population: float | None, output: str,
                      suppressed: str, as_json: bool, quiet: bool, delimiter: str | None,
                      encoding: str | None, output_delimiter: str | None, escape_formulas: bool,
                      force: bool, strict: bool, normalize: str | None, keep_order: bool,
                      shuffle_seed: int | None, engine: str, spark_master: str | None,
                      spark_conf: tuple[str, ...], table: str | None, query: str | None,
                      schema: str | None, password_env: str | None,
                      output_table: str | None, dry_run: bool, person: str | None,
                      inputs: tuple[str, ...]) -> None:
    """Anonymize DATA (CSV, Parquet or a database table) as the spec says and write the release.

    Searches the generalization levels that meet the privacy models with the least loss,
    recodes the records, suppresses what cannot be saved (within the spec's limit), and
    writes the release only after the independent checker has verified it. Prints the
    chosen level per quasi-identifier, the records suppressed, the classes, the utility
    figures, the nodes checked and the time.

    The default, --algorithm auto, runs the optimal search where the lattice is small
    enough and otherwise the anytime heuristic, which keeps the best verified node found
    within --time-limit / --max-checks; the output says which ran, why, and whether the
    result is proven optimal. --recode-suppressed releases suppressed records at a coarser
    node of their own where they form valid classes.

    With --algorithm mondrian each group is generalized only as much as it needs (ranges,
    common ancestors, or sets with --sets). An .xlsx output shows each class in its own
    colour.

    With --engine spark the rows are read, recoded and checked on Spark (DATA may be an
    hdfs:// or s3a:// path) and -o is written as a folder of part files, renamed into place
    only after the check.

    With a person key (--person patient_id, or person = "patient_id" under [attributes])
    a table of several rows per person is protected person by person: every class counts
    people, and a person's rows are released or suppressed together.

    Survey microdata (docs/sdc.md): suppression = "cells" under [anonymization] blanks
    single quasi-identifier cells instead of whole records; a [transform] section
    microaggregates numeric columns and randomizes categorical ones (PRAM); model =
    "individual-risk" bounds the risk the [attributes] sampling_weights give.

    In a database (DATA postgresql://USER@HOST:PORT/DB, duckdb:///FILE or FILE.duckdb,
    with --table or --query) the rows never leave it: the database groups them, the search
    runs here, and the release is made there as --output-table (in the database -o names),
    or read out into -o FILE.

    Related tables that share a person key (the spec's [tables]: a person table, one
    row a person, and event tables) are given with --input NAME=FILE each and released
    together into the folder -o names: each column at one level wherever it appears, a
    person suppressed from every table, the key replaced by a random person number.

    Example: blendin anonymize patients.csv --spec release.toml -o release.csv

    Example: blendin anonymize --input patients=patients.csv --input visits=visits.csv
    --spec release.toml -o release/

    Example: blendin anonymize postgresql://me@db/hospital --table patients --spec s.toml
    -o postgresql://me@db/hospital --output-table patients_release
    """
    # loaded when the command runs, so that blendin --help stays instant
    from blendin.anonymize import anonymize
    from blendin.anonymize.run import unused_search_options
    from blendin.engines.databases import is_database
    from blendin.progress import Progress
    from blendin.spec import Spec

    delimiter, encoding = read_options(delimiter, encoding)
    settings = {"policy": policy, "relaxed": relaxed, "sets": sets, "time_limit": time_limit,
                "max_checks": max_checks, "seed": seed,
                "recode_suppressed": recode_suppressed}
    shown = dict(algorithm=algorithm, metric=metric, suppressed=suppressed,
                 shuffle_seed=shuffle_seed, output_delimiter=output_delimiter,
                 escape_formulas=escape_formulas, strict=strict)
    # what related tables do not take (those given: not None); the rest they take as one
    # table does: a flag accepted must have its effect
    index_given = click.get_current_context().get_parameter_source(
        "index_base") is not click.core.ParameterSource.DEFAULT
    refused = {"--save-solution": solution, "--report": report, "--person": person,
               "--group-column": group_column, "--original-row": original_row,
               "--index-base": index_given or None, "--keep-order": keep_order or None,
               "--external": external, "--on": external_on, "--population": population,
               "--engine spark": engine == "spark" or None, "--spark-master": spark_master,
               "--spark-conf": spark_conf or None}
    if inputs or data is None:
        _related_command(data, inputs, spec_path, output=output, force=force,
                         settings=settings, delimiter=delimiter, encoding=encoding,
                         normalize=normalize, shown=shown,
                         refused={**refused, "--table": table, "--query": query,
                                  "--schema": schema, "--password-env": password_env,
                                  "--output-table": output_table,
                                  "--dry-run": dry_run or None},
                         as_json=as_json, quiet=quiet)
        return
    spec = Spec.from_toml(spec_path)
    rows = table_options(data, table, query, schema, password_env,
                         related=bool(spec.tables))
    if spec.tables and rows and table is None and query is None:
        from blendin.related import refuse_options

        refuse_options({**refused, "--dry-run": dry_run or None})
        _settle(spec, settings, delimiter=delimiter, encoding=encoding, normalize=normalize)
        _related_in_database(data, spec, output, output_table, rows, force=force,
                             shown=shown, as_json=as_json, quiet=quiet)
        return
    _output_table(output, output_table)
    refuse_text_options(delimiter, encoding, [data], writes_csv=_csv(output))
    unused_search_options(algorithm or spec.algorithm or "auto",
                          {"algorithm": algorithm not in (None, "mondrian"), "metric": metric,
                           "policy": policy, "time_limit": time_limit,
                           "max_checks": max_checks, "seed": seed,
                           "recode_suppressed": recode_suppressed},
                          recode=bool(recode_suppressed or spec.recode_suppressed),
                          dp=spec.models, cli=True)
    if rows:  # the SQL engine: the options are its own
        chosen = _sql_engine(engine, spark_master, spark_conf, force, dry_run)
    elif dry_run:
        raise BlendinError("--dry-run prints the SQL of a release in a database, and DATA is "
                           "a file", fix="leave --dry-run out")
    else:
        chosen = _engine(engine, spark_master, spark_conf)
    if dry_run:  # nothing is written: what would only change a written file is refused
        for flag, value in (("--report", report), ("--save-solution", solution),
                            ("--group-column", group_column), ("--original-row", original_row),
                            ("--output-delimiter", output_delimiter),
                            ("--escape-formulas", escape_formulas or None)):
            if value is not None:
                raise BlendinError(f"--dry-run writes nothing, and {flag} is about what a "
                                   "run writes", fix=f"leave out {flag}, or --dry-run")
        if quiet:  # (its SQL is all a dry run gives)
            raise BlendinError("--dry-run prints the SQL that would run, and --quiet prints "
                               "nothing", fix="leave out --quiet, or --dry-run")
    report_options = _report_options(report, external, external_on, population)
    _check_before_work({"DATA": data, "--spec": spec_path, "--external": external,
                        **spec.files_read()}, output,
                       force=force, output_delimiter=output_delimiter,
                       escape_formulas=escape_formulas, solution=solution,
                       report=report, engine=engine)
    if solution and (algorithm or spec.algorithm) == "mondrian":
        raise BlendinError("--save-solution: a mondrian release has no levels to save (it "
                           "recodes each group on its own)",
                           fix="leave out --save-solution, or use a full-domain --algorithm "
                           "(auto, optimal, heuristic, exhaustive, binary, datafly)")
    if index_given and group_column is None and original_row is None:
        raise BlendinError("--index-base numbers the classes of --group-column and the rows "
                           "of --original-row, and neither was given",
                           fix="add --group-column or --original-row, or leave out "
                               "--index-base")
    if group_column is not None and not is_database(data):  # (a table: refused later)
        _check_new_column(data, spec, group_column, delimiter, encoding)
    if person is not None:
        spec.person = person
        spec.validate()
    _settle(spec, settings, delimiter=delimiter, encoding=encoding, normalize=normalize)
    if dry_run:
        with Progress(enabled=not quiet) as progress:
            result = anonymize(data, spec, algorithm=algorithm, metric=metric,
                               suppressed=suppressed, progress=progress, output=output,
                               engine=chosen, keep_order=keep_order,
                               shuffle_seed=shuffle_seed, strict=strict,
                               output_table=output_table, replace=force, **rows)
        _say_dry_run(result, as_json=as_json)
        return
    # a report on people measures the release in people: its rows keep their person
    # numbers only in memory (the report reads the whole release anyway), so the release
    # is held and written after the check rather than streamed to -o
    held = report is not None and spec.person is not None and not rows and engine == "embedded"
    with together():
        with Progress(enabled=not quiet) as progress:
            result = anonymize(data, spec, algorithm=algorithm, metric=metric,
                               suppressed=suppressed, progress=progress,
                               group_column=group_column, original_row=original_row,
                               index_base=index_base, output=None if held else output,
                               output_delimiter=output_delimiter,
                               escape_formulas=escape_formulas, engine=chosen,
                               keep_order=keep_order, shuffle_seed=shuffle_seed,
                               strict=strict, output_table=output_table, replace=force,
                               **rows)
        written = _finish(result, output, delimiter=output_delimiter, solution=solution,
                          report=report, original=result.source or data,
                          escape_formulas=escape_formulas,
                          report_options=report_options)
    _say(result, *written, as_json=as_json, quiet=quiet)


def _settle(spec, settings: dict, *, delimiter: str | None, encoding: str | None,
            normalize: str | None) -> None:
    """The options that stand in for the spec's keys (those given: not None)."""
    for key, value in {"delimiter": delimiter, "encoding": encoding, **settings}.items():
        if value is not None:
            setattr(spec, key, value)
    _normalize(spec, normalize)


def _related_command(data: str | None, inputs: tuple[str, ...], spec_path: str, *,
                     output: str, force: bool, settings: dict, delimiter: str | None,
                     encoding: str | None, normalize: str | None, shown: dict,
                     refused: dict, as_json: bool, quiet: bool) -> None:
    """``--input NAME=FILE ...``: related tables, released together into a folder."""
    # loaded when the command runs, so that blendin --help stays instant
    from blendin.anonymize import anonymize
    from blendin.progress import Progress
    from blendin.related import refuse_options
    from blendin.spec import Spec

    tables = related_inputs(data, inputs)
    refuse_options(refused)
    # each table is written as its input is: CSV options need a CSV table
    refuse_text_options(delimiter, encoding, list(tables.values()))
    if not any(_csv(path) for path in tables.values()):
        for flag, given in (("--output-delimiter", shown["output_delimiter"] is not None),
                            ("--escape-formulas", shown["escape_formulas"])):
            if given:
                raise BlendinError(f"{flag} writes a CSV table, and every related table is "
                                   "written as its input, Parquet", fix=f"leave out {flag}")
    spec = Spec.from_toml(spec_path)
    _settle(spec, settings, delimiter=delimiter, encoding=encoding, normalize=normalize)
    check_paths({"--spec": spec_path, **{f"--input {n}": p for n, p in tables.items()},
                 **spec.files_read()}, {}, force=force)
    _fresh_folder(output, force)
    with Progress(enabled=not quiet) as progress:
        result = anonymize(tables, spec, progress=progress, output=output, **shown)
    _say(result, output, None, None, as_json=as_json, quiet=quiet)


def _related_in_database(data: str, spec, output: str, output_table: str | None,
                         rows: dict, *, force: bool, shown: dict,
                         as_json: bool, quiet: bool) -> None:
    """Related tables in one database (the spec's [tables]): released as tables there
    (--output-table with {table}) or into the folder -o names."""
    # loaded when the command runs, so that blendin --help stays instant
    from blendin.anonymize import anonymize
    from blendin.engines.databases import is_database
    from blendin.progress import Progress

    if not is_database(output):
        _fresh_folder(output, force)
    with Progress(enabled=not quiet) as progress:
        result = anonymize(data, spec, progress=progress, output=output,
                           output_table=output_table, replace=force, **rows, **shown)
    where = output if result.written is not None else (
        ", ".join(output_table.replace("{table}", name) for name in spec.tables))
    _say(result, where, None, None, as_json=as_json, quiet=quiet)


def _fresh_folder(output: str, force: bool) -> None:
    """The folder of related tables' files holds none yet, unless --force."""
    from blendin.io import is_stale_temp

    held = Path(output).iterdir() if Path(output).is_dir() else ()
    if any(not is_stale_temp(p) for p in held) and not force:  # (a killed run's: replaced)
        raise BlendinError(f"-o {output!r} is a folder that already holds files",
                           fix="pass --force to replace the tables' files in it, or give "
                               "a new folder")


def _sql_engine(engine: str, spark_master: str | None, spark_conf: tuple[str, ...],
                force: bool, dry_run: bool):
    """The SQL engine, for DATA in a database (where --engine and Spark's options have no
    say)."""
    # loaded when the command runs, so that blendin --help stays instant
    from blendin.engines.sql import SqlEngine

    if engine != "embedded" or spark_master or spark_conf:
        raise BlendinError("DATA in a database is processed there, by the SQL engine",
                           fix="leave out --engine, --spark-master and --spark-conf")
    return SqlEngine(replace=force, dry_run=dry_run)


def _say_dry_run(result, *, as_json: bool) -> None:
    """A dry run's figures and the statements it ran (all rolled back)."""
    statements = list(result.source.db.log)
    if as_json:
        payload = result.to_dict()
        payload.update(output=None, dry_run=True, statements=statements)
        click.echo(json.dumps(payload, indent=2))
        return
    click.echo(result.summary())
    click.echo("dry run: nothing was written (the release's transaction was rolled back). "
               "The statements that ran:")
    for statement in statements:
        click.echo(f"  {statement};")


def _output_table(output: str, output_table: str | None) -> None:
    """-o names a database exactly when --output-table names a table in it."""
    # loaded when the command runs, so that blendin --help stays instant
    from blendin.engines.databases import hidden, is_database

    if output_table is not None and not is_database(output):
        raise BlendinError(f"--output-table names a table in a database, and -o {output!r} "
                           "is a file", fix="give -o the database's URL (the input's, say), "
                           "or leave --output-table out")
    if output_table is None and is_database(output):
        raise BlendinError(f"-o {hidden(output)!r} is a database: name the release's table",
                           fix="add --output-table NAME")


def _normalize(spec, normalize: str | None) -> None:
    """--normalize in place of the spec's [input] normalize."""
    # loaded when the command runs, so that blendin --help stays instant
    from blendin.normalize import text_steps

    if normalize is not None:
        spec.normalize = text_steps(normalize, option="--normalize")


def _check_new_column(data: str, spec, name: str, delimiter: str | None,
                      encoding: str | None) -> None:
    """--group-column must not take the name of an input column (an identifier's even)."""
    # loaded when the command runs, so that blendin --help stays instant
    from blendin.io import Source

    if "://" in data or Path(data).is_dir():  # Spark's to read: anonymize() checks it
        return
    columns = Source(data, delimiter=delimiter or spec.delimiter,
                     encoding=encoding or spec.encoding).columns
    if name in columns:
        raise BlendinError(f"--group-column {name!r} is the name of an input column",
                           fix="give the added column another name, e.g. --group-column "
                           "class_id")


@main.command("apply")
@click.argument("data", type=click.Path(path_type=str))  # Spark reads folders too
@click.option("--solution", required=True, type=click.Path(dir_okay=False),
              help="A solution saved by blendin anonymize --save-solution.")
@click.option("--spec", "spec_path", default=None, type=click.Path(),
              help="Check against this spec's roles and models instead of the saved ones.")
@click.option("--unknown", type=click.Choice(["error", "suppress"]), default="error",
              show_default=True,
              help="Values a saved tree or hierarchy file does not cover (below its top "
              "level): stop and name them, or suppress their records.")
@with_options(_COMMON)
def apply_command(data: str, solution: str, spec_path: str | None, unknown: str, output: str,
                  suppressed: str, as_json: bool, quiet: bool, delimiter: str | None,
                  encoding: str | None, output_delimiter: str | None, escape_formulas: bool,
                  force: bool, strict: bool, normalize: str | None, keep_order: bool,
                  shuffle_seed: int | None, engine: str, spark_master: str | None,
                  spark_conf: tuple[str, ...]) -> None:
    """Re-apply a saved solution to DATA (new records of the same shape).

    Generalizes every quasi-identifier to its saved level with the saved hierarchy rules
    (new dates, ZIPs and numbers are generalized by the rule; values a saved tree or file
    does not cover need --unknown suppress) and suppresses the classes that violate the
    models. If that takes more suppression than
    the limit allows, the solution does not hold on this data: nothing is written and the
    exit code is 2 (anonymize the data afresh instead).

    Example: blendin apply march.csv --solution sol.json -o march_release.csv
    """
    # loaded when the command runs, so that blendin --help stays instant
    from blendin.anonymize import apply_solution
    from blendin.progress import Progress
    from blendin.spec import Spec

    delimiter, encoding = read_options(delimiter, encoding)
    refuse_text_options(delimiter, encoding, [data], writes_csv=_csv(output))
    chosen = _engine(engine, spark_master, spark_conf)
    spec = Spec.from_toml(spec_path) if spec_path else None
    if normalize is not None:
        if spec is None:
            raise BlendinError("--normalize changes a spec's counting, and apply was given "
                               "no --spec", fix="add --spec release.toml, or leave it out")
        _normalize(spec, normalize)
    _check_before_work({"DATA": data, "--solution": solution, "--spec": spec_path,
                        **(spec.files_read() if spec else {})}, output,
                       force=force, output_delimiter=output_delimiter,
                       escape_formulas=escape_formulas, engine=engine)
    with together():
        with Progress(enabled=not quiet) as bars:
            result = apply_solution(data, solution, spec, suppressed=suppressed,
                                    delimiter=delimiter, encoding=encoding, unknown=unknown,
                                    output=output, output_delimiter=output_delimiter,
                                    escape_formulas=escape_formulas, engine=chosen,
                                    progress=bars, keep_order=keep_order,
                                    shuffle_seed=shuffle_seed, strict=strict)
        written = _finish(result, output, delimiter=output_delimiter,
                          escape_formulas=escape_formulas)
    _say(result, *written, as_json=as_json, quiet=quiet)
