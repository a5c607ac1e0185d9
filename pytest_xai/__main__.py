"""``python -m pytest_xai``: merge the JSON reports of CI shards, render the HTML report.

Usage::

    python -m pytest_xai merge shard1.json shard2.json -o all.json [--html all.html] [--allow-mismatch]
    python -m pytest_xai html xai-report.json -o xai-report.html

An output may be ``-`` (standard output; the command's own lines then go to standard error), a
FIFO or a device, written in place (:func:`pytest_xai.reports.files.write_bytes`).  Exit status: 0
done, 1 an output could not be written, 2 a refusal (a report that is not one, reports of
different runs, a usage error).
"""

from __future__ import annotations

import argparse
import contextlib
import sys


def _read(path: str, command: str) -> dict:
    """The report at ``path``, validated (:func:`pytest_xai.reports.files.read_report`); a wrong file ends the
    command with one line naming the file and the field (exit 2)."""
    from pytest_xai.reports import files

    try:
        return files.read_report(path, f"pytest_xai {command}: {path}")
    except files.ReportError as exc:
        print(exc, file=sys.stderr)
        raise SystemExit(2) from None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pytest_xai", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    merge = sub.add_parser("merge", help="merge the JSON reports of shards of one suite run into one")
    merge.add_argument("reports", nargs="+", metavar="REPORT.json")
    merge.add_argument("-o", "--output", required=True, metavar="ALL.json")
    merge.add_argument("--html", metavar="ALL.html", help="also render the merged report as HTML")
    merge.add_argument(
        "--allow-mismatch",
        action="store_true",
        help="merge reports with different seeds, versions or thresholds (recorded in the output)",
    )
    html = sub.add_parser("html", help="render a JSON report as a self-contained HTML file")
    html.add_argument("report", metavar="REPORT.json")
    html.add_argument("-o", "--output", required=True, metavar="REPORT.html")
    args = parser.parse_args(argv)

    from pytest_xai.reports import embed, files, htmlreport, report

    outputs = [("-o", args.output)] + ([("--html", args.html)] if getattr(args, "html", None) else [])
    problem = _one_file_each(args.reports if args.command == "merge" else [args.report], outputs)
    if problem:
        print(f"pytest_xai {args.command}: {problem}", file=sys.stderr)
        return 2
    # what the command says goes to stderr when an output is standard output
    said = sys.stderr if files.STDOUT in (args.output, getattr(args, "html", None)) else sys.stdout
    if args.command == "merge":
        from pytest_xai.reports import merge as merging

        try:
            doc = merging.merge(
                [(path, _read(path, "merge")) for path in args.reports], allow_mismatch=args.allow_mismatch
            )
        except merging.MergeError as exc:
            print(f"pytest_xai merge: {exc}", file=sys.stderr)
            return 2
        if not _written(args.command, args.output, lambda: report.write_json(args.output, doc)):
            return 1
        print(f"merged {len(args.reports)} reports, {len(doc['results'])} results: {args.output}", file=said)
        for problem in doc.get("merge_mismatches", []):
            print(f"warning: {problem}", file=sys.stderr)
        target, pictures = args.html, {}
    else:
        doc, target = _read(args.report, "html"), args.output
        pictures = embed.collect(args.report, doc["results"])
    if target:
        if not _written(args.command, target, lambda: htmlreport.write(target, doc, pictures)):
            return 1
        print(f"HTML report: {target}", file=said)
    return 0


def _one_file_each(reports: list[str], outputs: list[tuple[str, str]]) -> str | None:
    """Why the outputs cannot be written (two of them one file, or one of them a report read), or None."""
    from pytest_xai.options import OptionError, check_outputs
    from pytest_xai.reports import files

    try:
        check_outputs(outputs)
    except OptionError as exc:
        return str(exc)
    written = {}
    for option, path in outputs:
        with contextlib.suppress(OSError):  # the write says what is wrong with it
            written[files.target(path).identity] = f"{option} {path}"
    for path in reports:
        with contextlib.suppress(OSError):
            if path != files.STDOUT and (output := written.get(files.target(path).identity)):
                return f"{path} and {output} are one file: the output would replace a report it is made from"
    return None


def _written(command: str, path: str, write) -> bool:
    """Run ``write``; a failure is one line naming the output (and the command exits 1)."""
    try:
        write()
    except OSError as exc:
        reason = f"[Errno {exc.errno}] {exc.strerror}" if exc.errno and exc.strerror else str(exc)
        print(f"pytest_xai {command}: could not write {path}: {reason}", file=sys.stderr)
        return False
    return True


if __name__ == "__main__":
    sys.exit(main())
